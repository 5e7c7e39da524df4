//! `run --detach`, `log --follow`, and Ctrl-C (SIGINT) of a running task.

use baton_testkit::TestProject;
use std::time::{Duration, Instant};

const WF: &str = r#"
name = "bg"
[[phase]]
id = "a"
run = "sleep 0.5; echo a-done"
[[phase]]
id = "b"
run = "sleep 0.5; echo b-done"
"#;

fn ls(p: &TestProject) -> Vec<serde_json::Value> {
    let (code, out, err) = p.run(&["ls", "--all", "--json"]);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

#[test]
fn detach_returns_at_once_and_the_task_runs_to_completion() {
    let p = TestProject::new();
    p.workflow("bg", WF);
    let started = Instant::now();
    let (code, out, err) = p.run(&["run", "bg", "in the background", "--id", "d1", "--detach"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), "d1", "stdout is the task id, for scripts");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "detach waited for the task"
    );
    // Handed over, never CRASHED in between.
    let rows = ls(&p);
    assert_eq!(rows[0]["status"], "RUNNING", "{rows:?}");
    assert_eq!(rows[0]["resumable"], false);
    // `log --follow` streams until the task stops, then exits by itself.
    let (code, out, err) = p.run(&["log", "d1", "--follow"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("task_completed"), "{out}");
    assert_eq!(ls(&p)[0]["status"], "COMPLETE");
    assert_eq!(
        p.passes("d1").values().copied().collect::<Vec<_>>(),
        vec![1, 1]
    );
}

#[test]
fn sigint_stops_the_phase_and_leaves_the_task_resumable() {
    let p = TestProject::new();
    p.workflow(
        "slow",
        "name = \"slow\"\n[[phase]]\nid = \"a\"\nrun = \"echo $$ > a.pid; test -f fast || sleep 30; echo a-done\"\n",
    );
    let mut child = p
        .baton(&["run", "slow", "x", "--id", "s1"])
        .spawn()
        .unwrap();
    let pidfile = p.root().join("a.pid");
    let until = Instant::now() + Duration::from_secs(30);
    while !pidfile.exists() {
        assert!(Instant::now() < until, "the phase never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let phase_pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1), "Ctrl-C ends baton run with exit 1");
    let gone = |pid: i32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| {
                s.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            })
            .unwrap_or(true)
    };
    assert!(gone(phase_pid), "the phase process outlived Ctrl-C");
    let rows = ls(&p);
    assert_eq!(rows[0]["status"], "CRASHED", "{rows:?}");
    assert_eq!(rows[0]["resumable"], true);
    assert_eq!(rows[0]["last_phase"], "a");
    let journal = p.journal("s1");
    assert!(
        journal.iter().any(|e| e["kind"] == "phase_interrupted"),
        "{journal:?}"
    );
    std::fs::write(p.root().join("fast"), "").unwrap();
    let (code, _, err) = p.run(&["resume", "s1"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(p.state("s1")["completed_phases"][0]["attempt"], 2);
}
