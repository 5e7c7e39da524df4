//! `baton play`: a list of tasks run one after another with a durable
//! marker. A play killed mid-way continues at the same task with
//! `--resume`, never running a finished task again; a failed task stops
//! it; `--max-tasks` and `--start-from-task` bound it; bad files are
//! refused with the line.

use baton_testkit::{TestProject, on_both_backends, wait_child, wait_for};
use std::process::Stdio;

const FLOW: &str = r#"name = "step"
[[phase]]
id = "work"
run = "echo {{labels.task-id}} >> started.log && if [ -f block-{{labels.task-id}} ]; then sleep 60; fi && test ! -f fail-{{labels.task-id}} && echo {{labels.task-id}} >> done.log"
max_attempts = 1
"#;

const TASKS: &str = r#"[[task]]
id = "t1"
description = "First"

[[task]]
id = "t2"
description = "Second"
labels = { area = "api" }

[[task]]
id = "t3"
description = "Third"
"#;

fn log(p: &TestProject, file: &str) -> Vec<String> {
    fs_err::read_to_string(p.root().join(file))
        .map(|t| t.lines().map(str::to_string).collect())
        .unwrap_or_default()
}

fn project() -> TestProject {
    let p = TestProject::new();
    p.workflow("step", FLOW);
    fs_err::write(p.root().join("sprint.toml"), TASKS).unwrap();
    p
}

on_both_backends! {
    /// Killed (SIGKILL) while task 2 runs, the play continues at task 2.
    fn a_play_killed_mid_way_continues_at_the_same_task() {
        let p = project();
        fs_err::write(p.root().join("block-t2"), "").unwrap();
        let mut play = p
            .baton(&["play", "sprint.toml", "--workflow", "step"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_for("task 2 to start", || (log(&p, "started.log").len() == 2).then_some(()));
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(play.id() as i32),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
        wait_child(&mut play, "the killed play");
        assert_eq!(log(&p, "done.log"), ["t1"]);

        fs_err::remove_file(p.root().join("block-t2")).unwrap();
        let (code, _, err) = p.run(&["play", "--resume"]);
        assert_eq!(code, 0, "{err}");
        assert!(err.contains("play sprint continues at task 2 of 3 (t2), 1 finished before"), "{err}");
        assert!(err.contains("play sprint: all 3 tasks complete"), "{err}");
        assert_eq!(log(&p, "done.log"), ["t1", "t2", "t3"], "each task finished once");
        assert_eq!(log(&p, "started.log"), ["t1", "t2", "t2", "t3"], "only the interrupted one ran again");
        assert_eq!(p.state("t2")["labels"]["area"], "api");
        assert_eq!(p.state("t2")["task_description"], "Second");

        let (code, _, err) = p.run(&["play", "--resume"]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("no play is unfinished"), "{err}");
    }

    /// A failed task stops the play there; once fixed, --resume goes on.
    fn a_failed_task_stops_the_play_until_resumed() {
        let p = project();
        fs_err::write(p.root().join("fail-t2"), "").unwrap();
        let (code, _, err) = p.run(&["play", "sprint.toml", "--workflow", "step"]);
        assert_eq!(code, 1, "{err}");
        assert!(
            err.contains("play sprint stopped: task 2 of 3 (t2) failed: phase work failed 1 time(s): exit status 1"),
            "{err}"
        );
        assert!(!err.contains("Failed(\""), "no Rust debug text: {err}");
        assert!(err.contains("baton play --resume"), "{err}");
        // Started again by mistake: refused, with the way on.
        let (code, _, err) = p.run(&["play", "sprint.toml", "--workflow", "step"]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("play sprint is unfinished at task 2 of 3"), "{err}");
        fs_err::remove_file(p.root().join("fail-t2")).unwrap();
        let (code, _, err) = p.run(&["play", "--resume"]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(log(&p, "done.log"), ["t1", "t2", "t3"]);
    }
}

#[test]
fn max_tasks_and_start_from_task_bound_a_play() {
    let p = project();
    let (code, _, err) = p.run(&[
        "play",
        "sprint.toml",
        "--workflow",
        "step",
        "--start-from-task",
        "2",
        "--max-tasks",
        "1",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("play sprint: 1 of 3 tasks complete (--max-tasks)"),
        "{err}"
    );
    assert_eq!(log(&p, "done.log"), ["t2"], "task 1 skipped, one task run");
    let (code, _, err) = p.run(&["play", "--resume"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(log(&p, "done.log"), ["t2", "t3"]);
}

#[test]
fn bad_tasks_files_are_refused_with_the_line() {
    let p = project();
    fs_err::write(p.root().join("bad.jsonl"), "{\"id\": \"a\"}\n{\"id\": 5}\n").unwrap();
    let (code, _, err) = p.run(&["play", "bad.jsonl", "--workflow", "step"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("bad.jsonl:2:"), "{err}");
    let (code, _, err) = p.run(&["play", "sprint.toml", "--workflow", "nope"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = p.run(&[
        "play",
        "sprint.toml",
        "--workflow",
        "step",
        "--start-from-task",
        "9",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("lists 3 tasks"), "{err}");
    let (code, _, err) = p.run(&["play", "missing.toml", "--workflow", "step"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cannot read the tasks file"), "{err}");
    assert!(log(&p, "started.log").is_empty(), "nothing ran");
}
