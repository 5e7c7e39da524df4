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

/// `ls --all --json`, parsed.
fn tasks(p: &TestProject) -> Vec<serde_json::Value> {
    let (_, out, _) = p.run(&["ls", "--all", "--json"]);
    serde_json::from_str(&out).unwrap()
}

#[test]
fn a_waiting_current_task_is_not_offered_for_resume() {
    let p = TestProject::new();
    p.workflow("w", WF);
    p.workflow(
        "gate",
        "name = \"gate\"\n[[phase]]\nid = \"approve\"\nwait = { human = \"Ship it?\" }\n",
    );
    let (code, _, err) = p.run(&["run", "gate", "first", "--id", "g1"]);
    assert_eq!(code, 4, "{err}");
    // g1 is the current task and WAITING: resuming it would only say that
    // it still waits, so `run` starts the new task without asking.
    let t = Tmux::start(&shell_line(&p, "run w second"));
    let screen = t.wait_for("EXIT=", 60);
    assert!(!screen.contains("Resume this task?"), "{screen}");
    assert!(screen.contains("EXIT=0"), "{screen}");
    let all = tasks(&p);
    assert_eq!(all.len(), 2, "{all:?}");
    assert!(
        all.iter()
            .any(|t| t["id"] == "g1" && t["status"] == "WAITING"),
        "{all:?}"
    );
    assert!(
        all.iter()
            .any(|t| t["id"] != "g1" && t["status"] == "COMPLETE"),
        "{all:?}"
    );
}

#[test]
fn run_detach_never_prompts() {
    let p = crashed_project();
    // No --id: the case where `run` would otherwise offer the crashed t1.
    let t = Tmux::start(&shell_line(&p, "run w second --detach"));
    let screen = t.wait_for("EXIT=", 60);
    assert!(!screen.contains("Resume this task?"), "{screen}");
    assert!(screen.contains("EXIT=0"), "{screen}");
    // The new task runs in the background; t1 is left CRASHED.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let all = tasks(&p);
        if all
            .iter()
            .any(|t| t["id"] != "t1" && t["status"] == "COMPLETE")
        {
            assert!(
                all.iter()
                    .any(|t| t["id"] == "t1" && t["status"] == "CRASHED"),
                "{all:?}"
            );
            break;
        }
        assert!(
            std::time::Instant::now() < until,
            "the new task never completed: {all:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// A shell line that runs `baton ARGS` twice in the project: on the
/// terminal, then piped through `cat`, with NO_COLOR as given (None: unset).
fn colour_line(p: &TestProject, args: &str, no_color: Option<&str>) -> String {
    let words: Vec<String> = p
        .env_words()
        .into_iter()
        .filter(|w| !w.starts_with("NO_COLOR="))
        .chain(no_color.map(|v| format!("NO_COLOR={v}")))
        .collect();
    let baton = format!(
        "env -u NO_COLOR {} '{}' {args}",
        words.join(" "),
        baton_bin().display()
    );
    format!(
        "cd '{}' && {baton}; echo PIPED-BELOW; {baton} | cat; echo EXIT=$?; sleep 60",
        p.root().display()
    )
}

#[test]
fn show_is_coloured_on_a_terminal_and_plain_through_a_pipe() {
    let p = TestProject::new();
    let (code, _, err) = p.run(&["run", "example", "x", "--id", "c1"]);
    assert_eq!(code, 0, "{err}");

    let t = Tmux::start(&colour_line(&p, "show c1", None));
    t.wait_for("EXIT=", 30);
    let screen = t.screen_with_escapes();
    let (term, piped) = screen
        .split_once("PIPED-BELOW")
        .unwrap_or_else(|| panic!("{screen}"));
    assert!(
        term.contains("\x1b[32mCOMPLETE"),
        "`baton show` on a terminal colours the status: {term:?}"
    );
    assert!(piped.contains("COMPLETE"), "{piped:?}");
    assert!(
        !piped.contains('\x1b'),
        "`baton show | cat` must print no escape codes, even with stderr on a terminal: {piped:?}"
    );

    let t = Tmux::start(&colour_line(&p, "show c1", Some("1")));
    t.wait_for("EXIT=", 30);
    let screen = t.screen_with_escapes();
    assert!(screen.contains("COMPLETE"), "{screen:?}");
    assert!(
        !screen.contains('\x1b'),
        "NO_COLOR=1: no escape codes at all: {screen:?}"
    );
}
