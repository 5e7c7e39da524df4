//! What a person sees on a real terminal (tmux): the "Resume this task?"
//! prompt of `baton run` and the per-phase progress lines.

use baton_testkit::{TestProject, Tmux, baton_bin};

const WF: &str = r#"
name = "w"
[[phase]]
id = "a"
run = "echo a-done"
[[phase]]
id = "b"
run = "sleep 0.3; echo b-done"
[[phase]]
id = "c"
run = "echo c-done"
"#;

/// A task that crashed in phase b (baton SIGKILLed itself there).
fn crashed_project() -> TestProject {
    let p = TestProject::new();
    p.workflow("w", WF);
    let out = p
        .baton(&["run", "w", "first", "--id", "t1"])
        .env("BATON_TEST_CRASH_AT", "after-spawn:b")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        None,
        "baton should have been killed by SIGKILL"
    );
    let (_, ls, _) = p.run(&["ls"]);
    assert!(ls.contains("CRASHED"), "{ls}");
    p
}

fn shell_line(p: &TestProject, args: &str) -> String {
    format!(
        "cd '{}' && env {} '{}' {args}; echo EXIT=$?; sleep 60",
        p.root().display(),
        p.env_words().join(" "),
        baton_bin().display()
    )
}

#[test]
fn run_on_a_terminal_offers_to_resume_the_crashed_task() {
    let p = crashed_project();
    let t = Tmux::start(&shell_line(&p, "run w second"));
    let screen = t.wait_for("Resume this task? (Y/n)", 30);
    assert!(screen.contains("t1 is CRASHED at b"), "{screen}");
    t.send(&["y", "Enter"]);
    let screen = t.wait_for("EXIT=", 60);
    assert!(screen.contains("EXIT=0"), "{screen}");
    assert!(
        screen.contains("PASS    b"),
        "a finished phase gets its line: {screen}"
    );
    assert!(screen.contains("task t1 is COMPLETE"), "{screen}");
    // It resumed t1 rather than starting a second task.
    let (_, out, _) = p.run(&["ls", "--all", "--json"]);
    let tasks: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
    assert_eq!(tasks.len(), 1, "{out}");
    assert_eq!(tasks[0]["status"], "COMPLETE");
}

#[test]
fn answering_no_starts_a_new_task() {
    let p = crashed_project();
    let t = Tmux::start(&shell_line(&p, "run w second"));
    t.wait_for("Resume this task? (Y/n)", 30);
    t.send(&["n", "Enter"]);
    let screen = t.wait_for("EXIT=", 60);
    assert!(screen.contains("EXIT=0"), "{screen}");
    let (_, out, _) = p.run(&["ls", "--all", "--json"]);
    let tasks: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
    assert_eq!(tasks.len(), 2, "{out}");
    assert_eq!(tasks[0]["status"], "CRASHED", "t1 is left as it was");
}

#[test]
fn without_a_terminal_run_never_prompts() {
    let p = crashed_project();
    // stdin is /dev/null here: no question, a new task, exit 0.
    let (code, _, err) = p.run(&["run", "w", "second"]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("Resume this task?"), "{err}");
    assert!(
        err.contains("start a (command)"),
        "plain progress lines without a terminal: {err}"
    );
    let (_, out, _) = p.run(&["ls", "--all", "--json"]);
    assert_eq!(
        serde_json::from_str::<Vec<serde_json::Value>>(&out)
            .unwrap()
            .len(),
        2
    );
}

#[test]
fn a_phase_that_reads_the_terminal_fails_instead_of_hanging() {
    let p = TestProject::new();
    p.workflow(
        "tty",
        "name = \"tty\"\n[[phase]]\nid = \"ask\"\nrun = \"head -c1 /dev/tty\"\n",
    );
    let t = Tmux::start(&shell_line(&p, "run tty x --id q1"));
    // Phases get no controlling terminal: the read fails at once rather
    // than stopping the phase for ever (SIGTTIN) with baton waiting on it.
    let screen = t.wait_for("EXIT=", 30);
    assert!(screen.contains("EXIT=1"), "{screen}");
    assert!(screen.contains("FAILED  ask"), "{screen}");
}
