//! `run --detach`, `log --follow`, and Ctrl-C (SIGINT) of a running task.

use baton_testkit::{TestProject, on_both_backends, wait_child, wait_for};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

/// Both phases wait for the file `go` (created by the test), so the task is
/// certainly still running when the test looks at it. The loop also ends
/// when the project folder is gone, so a failed test leaves no phase
/// polling for ever.
const WF: &str = r#"
name = "bg"
[[phase]]
id = "a"
run = "while [ ! -f go ] && [ -d .baton ]; do sleep 0.05; done; echo a-done"
[[phase]]
id = "b"
run = "while [ ! -f go ] && [ -d .baton ]; do sleep 0.05; done; echo b-done"
"#;

/// Runs a command with piped output and a deadline.
fn output_within(mut cmd: std::process::Command, what: &str) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read while waiting, so a chatty child cannot block on a full pipe.
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut b = Vec::new();
        std::io::Read::read_to_end(&mut stdout, &mut b).map(|_| b)
    });
    let err = std::thread::spawn(move || {
        let mut b = Vec::new();
        std::io::Read::read_to_end(&mut stderr, &mut b).map(|_| b)
    });
    let status = wait_child(&mut child, what);
    Output {
        status,
        stdout: out.join().unwrap().unwrap(),
        stderr: err.join().unwrap().unwrap(),
    }
}

fn gone(pid: i32) -> bool {
    baton_testkit::process_gone(pid as u32)
}

/// The pid written to a file in the project, once the file holds one.
fn pid_file(p: &TestProject, name: &str) -> i32 {
    let path = p.root().join(name);
    wait_for(&format!("{name} to hold a pid"), || {
        std::fs::read_to_string(&path).ok()?.trim().parse().ok()
    })
}

fn ls(p: &TestProject) -> Vec<serde_json::Value> {
    let (code, out, err) = p.run(&["ls", "--all", "--json"]);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

on_both_backends! {
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
    // Handed over, never CRASHED in between; no phase can finish before
    // `go` exists, so this cannot race with the task completing.
    let rows = ls(&p);
    assert_eq!(rows[0]["status"], "RUNNING", "{rows:?}");
    assert_eq!(rows[0]["resumable"], false);
    assert!(
        p.journal("d1").iter().all(|e| e["kind"] != "phase_passed"),
        "a phase passed before the test let it"
    );
    // `log --follow` streams until the task stops, then exits by itself.
    std::fs::write(p.root().join("go"), "").unwrap();
    let out = output_within(p.baton(&["log", "d1", "--follow"]), "baton log --follow");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (out, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.contains("task_completed"), "{out}\n{err}");
    assert_eq!(ls(&p)[0]["status"], "COMPLETE");
    assert_eq!(
        p.passes("d1").values().copied().collect::<Vec<_>>(),
        vec![1, 1]
    );
}
}

on_both_backends! {
fn sigint_stops_the_phase_and_leaves_the_task_resumable() {
    let p = TestProject::new();
    p.workflow(
        "slow",
        r#"name = "slow"
[[phase]]
id = "a"
run = '''echo $$ > a.pid; test -f fast || sh -c 'sleep 30 & echo $! > child.pid; wait'; echo a-done'''
"#,
    );
    let mut child = p
        .baton(&["run", "slow", "x", "--id", "s1"])
        .spawn()
        .unwrap();
    let phase_pid = pid_file(&p, "a.pid");
    // The grandchild: a `sleep` that a nested shell started in the background.
    let sleep_pid = pid_file(&p, "child.pid");
    assert!(
        !gone(phase_pid) && !gone(sleep_pid),
        "the phase should be running"
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let status = wait_child(&mut child, "baton run after Ctrl-C");
    assert_eq!(status.code(), Some(1), "Ctrl-C ends baton run with exit 1");
    // baton returns once the group is dead; the short deadline only allows
    // for a SIGKILL the kernel has not finished delivering.
    let until = Instant::now() + Duration::from_secs(5);
    while !(gone(phase_pid) && gone(sleep_pid)) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(gone(phase_pid), "the phase process outlived Ctrl-C");
    assert!(
        gone(sleep_pid),
        "the phase's grandchild sleep outlived Ctrl-C"
    );
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
}

on_both_backends! {
/// `-v` (and `BATON_LOG`) turn on debug logs on stderr: each git
/// checkpoint, each store commit, each phase process. They never reach
/// stdout, and without either nothing of them shows.
fn verbose_prints_debug_logs_on_stderr_only() {
    let p = TestProject::new();
    p.workflow(
        "quick",
        "name = \"quick\"\n[[phase]]\nid = \"a\"\nrun = \"echo a-done\"\n",
    );
    let debug_lines = |err: &str| -> Vec<String> {
        err.lines()
            .filter(|l| l.contains("DEBUG"))
            .map(str::to_string)
            .collect()
    };

    let (code, out, err) = p.run(&["-v", "run", "quick", "x", "--id", "v1"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "", "debug logs must not reach stdout");
    let lines = debug_lines(&err);
    let has = |what: &str| lines.iter().any(|l| l.contains(what));
    assert!(
        has("git checkpoint") && has("refs/baton/v1/01-a.i0.a1/start"),
        "no debug line for the git checkpoint:\n{err}"
    );
    assert!(has("rev-parse"), "no debug line per git command:\n{err}");
    assert!(
        has("store commit") && has("task=v1") && has("phase_passed"),
        "no debug line for the store commits:\n{err}"
    );
    assert!(
        has("phase process spawned"),
        "no debug line for the phase process:\n{err}"
    );

    let (code, out, err) = p.run(&["run", "quick", "x", "--id", "v2"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "");
    assert!(
        debug_lines(&err).is_empty() && !err.contains("git checkpoint"),
        "debug logs without -v:\n{err}"
    );
    assert!(!err.contains("store commit"), "{err}");

    let out = p
        .baton(&["run", "quick", "x", "--id", "v3"])
        .env("BATON_LOG", "baton_engine=debug,baton_sys=debug")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(out.stdout.is_empty(), "debug logs must not reach stdout");
    assert!(
        err.contains("git checkpoint") && err.contains("store commit"),
        "BATON_LOG=baton_engine=debug,baton_sys=debug shows no debug lines:\n{err}"
    );
}
}

on_both_backends! {
fn the_demo_shows_a_real_crash_and_resume() {
    let p = TestProject::bare();
    let out = p.baton(&["demo"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("killed baton") && stderr.contains("SIGKILL"),
        "{stderr}"
    );
    let crashed = stdout.find("CRASHED").expect("ls shows the task CRASHED");
    let complete = stdout.find("COMPLETE").expect("ls --all shows it COMPLETE");
    assert!(crashed < complete, "{stdout}");
    assert!(
        stderr.contains("analyze 1, execute 1, plan 1, review 1, validate 1"),
        "{stderr}"
    );
}
}
