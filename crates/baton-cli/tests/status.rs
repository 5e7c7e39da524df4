//! The registry of active sessions: `baton status --line` in a real tmux
//! status bar, and `baton status` drawn live on a real terminal.

use baton_testkit::{TestProject, Tmux, baton_bin};

/// A project with a task waiting for an answer (one inbox item) and a
/// task busy in an agent phase, held by its `baton run`.
fn busy_project() -> (TestProject, std::process::Child) {
    let p = TestProject::new();
    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    text.push_str(
        "\n[agents.slow]\ncommand = [\"sh\", \"-c\", \"echo working on it; sleep 60\"]\n",
    );
    fs_err::write(&cfg, text).unwrap();
    p.workflow(
        "long",
        "name = \"long\"\n[[phase]]\nid = \"work\"\nprompt = \"work\"\n",
    );
    p.workflow("ask", "name = \"ask\"\n[[phase]]\nid = \"q\"\nwait = { human = \"Go?\", options = [\"yes\", \"no\"] }\n");
    let (code, _, err) = p.run(&["run", "ask", "a question", "--id", "asking"]);
    assert_eq!(code, 4, "{err}");
    let child = p
        .baton(&[
            "run",
            "long",
            "Refactor the parser",
            "--id",
            "busy",
            "--agent",
            "slow",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    baton_testkit::wait_for("busy to run its agent", || {
        let (_, out, _) = p.run(&["status", "--json"]);
        let v: serde_json::Value = serde_json::from_str(&out).ok()?;
        (v["sessions"][0]["phase"] == "work").then_some(())
    });
    (p, child)
}

#[test]
fn the_status_line_shows_the_active_sessions_and_the_inbox_in_a_tmux_status_bar() {
    let (p, mut child) = busy_project();
    let (code, out, err) = p.run(&["status", "--line"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim_end(), "[1] main/slow  |  1 inbox");

    // In a tmux status bar (a tmux inside a pane, so its bar is on screen).
    let conf = p.root().join("tmux.conf");
    fs_err::write(
        &conf,
        format!(
            "set -g status-interval 1\nset -g status-right-length 120\nset -g status-right '#({} --project {} status --line)'\n",
            baton_bin().display(),
            p.root().display()
        ),
    )
    .unwrap();
    let inner = format!("baton-inner-{}", std::process::id());
    let outer = Tmux::start(&format!(
        "TMUX= tmux -L {inner} -f {} new-session 'sleep 120'",
        conf.display()
    ));
    outer.wait_for("[1] main/slow  |  1 inbox", 30);
    let _ = std::process::Command::new("tmux")
        .args(["-L", &inner, "kill-server"])
        .status();

    // A session is deregistered when it ends.
    p.run(&["cancel", "busy"]);
    baton_testkit::wait_child(&mut child, "the cancelled run");
    let (_, out, _) = p.run(&["status", "--line"]);
    assert_eq!(out.trim_end(), "no active sessions  |  1 inbox");
}

#[test]
fn baton_status_draws_the_sessions_live_and_quits_on_q() {
    let (p, mut child) = busy_project();
    let db = p
        .database_url
        .as_ref()
        .map(|u| format!("BATON_DATABASE_URL='{u}' "))
        .unwrap_or_default();
    let t = Tmux::start(&format!(
        "cd {} && {db}{} status; echo status-exited-$?; sleep 30",
        p.root().display(),
        baton_bin().display()
    ));
    let screen = t.wait_for("[1] busy  main/slow  work", 30);
    assert!(screen.contains("1 active  ·  1 inbox"), "{screen}");
    assert!(screen.contains("Refactor the parser"), "{screen}");
    assert!(screen.contains("tmux: none (runs headless)"), "{screen}");
    t.send(&["q"]);
    t.wait_for("status-exited-0", 10);
    p.run(&["cancel", "busy"]);
    baton_testkit::wait_child(&mut child, "the cancelled run");
}
