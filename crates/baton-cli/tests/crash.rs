//! Crash and recovery, end to end: the real `baton` binary, real phase
//! processes, real SIGKILLs (from outside, and from the engine's own
//! `BATON_TEST_CRASH_AT` hook), then `baton resume` and what a user sees.

use baton_testkit::{TestProject, on_both_backends, wait_child, wait_for};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;
use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

// ----- helpers -------------------------------------------------------------

/// Waits for a child started with piped output, with a deadline.
fn wait_output(mut child: Child, what: &str) -> Output {
    wait_child(&mut child, what);
    child.wait_with_output().unwrap()
}

fn sigkill(pid: u32) {
    kill(Pid::from_raw(pid as i32), Signal::SIGKILL).unwrap();
}

fn gone(pid: u32) -> bool {
    baton_testkit::process_gone(pid)
}

fn wait_gone(pid: u32, what: &str) {
    wait_for(&format!("{what} (pid {pid}) to be gone"), || {
        gone(pid).then_some(())
    });
}

/// The host name as baton names it in lease owners.
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string()
}

/// The rows of `baton ls --all --json`.
fn ls_rows(p: &TestProject) -> Vec<Value> {
    let (code, out, err) = p.run(&["ls", "--all", "--json"]);
    assert_eq!(code, 0, "ls failed: {err}");
    serde_json::from_str(&out).unwrap()
}

/// The `baton ls --json` row of a task.
fn ls_row(p: &TestProject, id: &str) -> Value {
    ls_rows(p)
        .into_iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("task {id} is not in `baton ls --json`"))
}

fn assert_crashed(p: &TestProject, id: &str) {
    let row = ls_row(p, id);
    assert_eq!(row["status"], "CRASHED", "ls row: {row}");
    assert_eq!(row["resumable"], true, "ls row: {row}");
}

/// Lines of a file in the project (empty if it does not exist).
fn lines(p: &TestProject, name: &str) -> Vec<String> {
    std::fs::read_to_string(p.root().join(name))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// How many lines of `runs.log` are exactly `line`.
fn runs(p: &TestProject, line: &str) -> usize {
    lines(p, "runs.log").iter().filter(|l| *l == line).count()
}

fn pid_in(p: &TestProject, name: &str) -> u32 {
    let text = std::fs::read_to_string(p.root().join(name)).unwrap();
    text.trim()
        .parse()
        .unwrap_or_else(|_| panic!("{name} holds no pid: {text:?}"))
}

fn phase<'a>(doc: &'a Value, id: &str) -> &'a Value {
    doc["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == id)
        .unwrap_or_else(|| panic!("no phase {id} in {doc}"))
}

fn completed<'a>(doc: &'a Value, id: &str) -> &'a Value {
    doc["completed_phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == id)
        .unwrap_or_else(|| panic!("phase {id} is not in completed_phases: {doc}"))
}

/// The state document straight from `state.json` (no repair), if readable.
fn state_file(p: &TestProject, id: &str) -> Option<Value> {
    let bytes = std::fs::read(p.root().join(format!(".baton/tasks/{id}/state.json"))).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Waits until the task's state document says `phase` is IN_PROGRESS.
fn wait_in_progress(p: &TestProject, id: &str, phase: &str) {
    wait_for(&format!("phase {phase} of {id} to be IN_PROGRESS"), || {
        let doc = state_file(p, id)?;
        (doc["current_phase"]["id"] == phase && doc["current_phase"]["status"] == "IN_PROGRESS")
            .then_some(())
    });
}

/// Checks a COMPLETE task: one PASS per phase, every summary recorded and
/// rendered into its output file. The files are read before anything runs
/// `baton show` (which would re-render missing files itself).
fn assert_complete(p: &TestProject, id: &str, phases: &[&str], summary: impl Fn(&str) -> String) {
    for (i, ph) in phases.iter().enumerate() {
        let want = summary(ph);
        let rel = format!(".baton/tasks/{id}/{:02}-{ph}.md", i + 1);
        let md =
            std::fs::read_to_string(p.root().join(&rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
        assert!(
            md.contains(&want),
            "{rel} lacks the summary {want:?}:\n{md}"
        );
    }
    let rendered = state_file(p, id).expect("state.json is readable");
    assert_eq!(rendered["status"], "COMPLETE", "state.json: {rendered}");
    let doc = p.state(id);
    assert_eq!(doc["status"], "COMPLETE", "{doc}");
    let expected: BTreeMap<String, usize> = phases.iter().map(|ph| (ph.to_string(), 1)).collect();
    assert_eq!(p.passes(id), expected, "exactly one phase_passed per phase");
    assert_eq!(
        doc["completed_phases"].as_array().unwrap().len(),
        phases.len(),
        "{doc}"
    );
    for (i, ph) in phases.iter().enumerate() {
        let c = completed(&doc, ph);
        assert_eq!(c["status"], "PASS", "{c}");
        assert_eq!(c["summary"], summary(ph).as_str(), "summary of {ph}");
        assert_eq!(
            c["output_file"],
            format!(".baton/tasks/{id}/{:02}-{ph}.md", i + 1).as_str()
        );
    }
}

// ----- 1. the engine's own crash points ------------------------------------

const FOUR: &str = r#"name = "four"

[[phase]]
id = "a"
run = '''echo "$BATON_PHASE" >> runs.log; echo "summary of $BATON_PHASE" > "$BATON_SUMMARY_FILE"'''

[[phase]]
id = "b"
run = '''echo "$BATON_PHASE" >> runs.log; echo "summary of $BATON_PHASE" > "$BATON_SUMMARY_FILE"'''

[[phase]]
id = "c"
run = '''echo "$BATON_PHASE" >> runs.log; echo "summary of $BATON_PHASE" > "$BATON_SUMMARY_FILE"'''

[[phase]]
id = "d"
run = '''echo "$BATON_PHASE" >> runs.log; echo "summary of $BATON_PHASE" > "$BATON_SUMMARY_FILE"'''
"#;

fn crash_in_middle_phase(point: &str) {
    let p = TestProject::new();
    p.workflow("four", FOUR);
    let id = "t1";
    let out = p
        .baton(&["run", "four", "crash test", "--id", id])
        .env("BATON_TEST_CRASH_AT", format!("{point}:c"))
        .output()
        .unwrap();
    assert_eq!(
        out.status.signal(),
        Some(9),
        "baton run should have SIGKILLed itself at {point}:c; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out_c = p.root().join(format!(".baton/tasks/{id}/03-c.md"));
    match point {
        "before-spawn" => assert_eq!(runs(&p, "c"), 0, "c must not have started"),
        "after-pass" => {
            assert_eq!(runs(&p, "c"), 1);
            // The PASS is committed but the output file was never rendered.
            assert_eq!(
                p.passes(id).get("c"),
                Some(&1),
                "the PASS of c is in the journal"
            );
            assert!(!out_c.exists(), "03-c.md exists before resume");
        }
        _ => {}
    }
    assert!(p.root().join(format!(".baton/tasks/{id}/02-b.md")).exists());
    assert_crashed(&p, id);

    let (code, _, err) = p.run(&["resume", id]);
    assert_eq!(code, 0, "resume failed: {err}");
    assert_complete(&p, id, &["a", "b", "c", "d"], |ph| {
        format!("summary of {ph}")
    });

    // What had passed before the crash did not run again.
    assert_eq!(runs(&p, "a"), 1);
    assert_eq!(runs(&p, "b"), 1);
    assert_eq!(runs(&p, "d"), 1);
    let doc = p.state(id);
    match point {
        "before-spawn" => {
            assert_eq!(runs(&p, "c"), 1);
            assert_eq!(
                completed(&doc, "c")["attempt"],
                2,
                "the interrupted attempt counts"
            );
        }
        "after-spawn" => {
            // The process was started and journaled, but baton died before
            // opening its gate: the command itself never ran the first time.
            assert_eq!(runs(&p, "c"), 1, "an unwatched attempt ran");
            assert_eq!(completed(&doc, "c")["attempt"], 2);
        }
        _ => {
            assert_eq!(runs(&p, "c"), 1, "a passed phase must not run again");
            assert_eq!(completed(&doc, "c")["attempt"], 1);
        }
    }
    let started_c = p
        .journal(id)
        .iter()
        .filter(|e| e["kind"] == "phase_started" && e["phase"] == "c")
        .count();
    assert_eq!(started_c, if point == "after-pass" { 1 } else { 2 });
}

on_both_backends! {
fn crash_before_spawn_resumes() {
    crash_in_middle_phase("before-spawn");
}
}

on_both_backends! {
fn crash_after_spawn_resumes() {
    crash_in_middle_phase("after-spawn");
}
}

on_both_backends! {
fn crash_after_pass_resumes_and_renders_the_missing_output() {
    crash_in_middle_phase("after-pass");
}
}

on_both_backends! {
/// SIGKILL right after the LAST phase's PASS is committed, before its
/// output is rendered and before the task is marked complete.
fn crash_after_the_last_pass_completes_on_resume() {
    let p = TestProject::new();
    p.workflow("four", FOUR);
    let id = "t1l";
    let out = p
        .baton(&["run", "four", "crash test", "--id", id])
        .env("BATON_TEST_CRASH_AT", "after-pass:d")
        .output()
        .unwrap();
    assert_eq!(
        out.status.signal(),
        Some(9),
        "baton run should have SIGKILLed itself at after-pass:d; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out_d = p.root().join(format!(".baton/tasks/{id}/04-d.md"));
    assert_eq!(p.passes(id).get("d"), Some(&1), "the PASS of d is stored");
    assert!(!out_d.exists(), "04-d.md exists before resume");
    assert!(
        p.journal(id).iter().all(|e| e["kind"] != "task_completed"),
        "the task completed before the crash point"
    );
    assert_crashed(&p, id);

    let (code, _, err) = p.run(&["resume", id]);
    assert_eq!(code, 0, "resume failed: {err}");
    // Read before anything runs `show`, which would render it itself.
    assert!(out_d.exists(), "resume did not render 04-d.md");
    assert_complete(&p, id, &["a", "b", "c", "d"], |ph| {
        format!("summary of {ph}")
    });
    assert_eq!(p.passes(id).get("d"), Some(&1), "exactly one PASS of d");
    assert_eq!(
        lines(&p, "runs.log"),
        ["a", "b", "c", "d"],
        "nothing re-ran"
    );
    let doc = p.state(id);
    assert_eq!(completed(&doc, "d")["attempt"], 1);
    let completions = p
        .journal(id)
        .iter()
        .filter(|e| e["kind"] == "task_completed")
        .count();
    assert_eq!(completions, 1);
}
}

on_both_backends! {
/// Issue 34, the accounting window: baton killed after the phase's process
/// exited and before its PASS (an OOM kill while reading a huge output, a
/// SIGKILL). The exit was journaled the moment it was known, so `resume`
/// judges the end from the journal and the files the phase left: its
/// summary is kept and the phase never runs a second time.
fn a_runner_killed_between_the_exit_and_the_pass_never_reruns_the_phase() {
    let p = TestProject::new();
    p.workflow("four", FOUR);
    let id = "acc";
    let out = p
        .baton(&["run", "four", "crash test", "--id", id])
        .env("BATON_TEST_CRASH_AT", "journal-committed:phase_exited")
        .output()
        .unwrap();
    assert_eq!(out.status.signal(), Some(9), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(lines(&p, "runs.log"), ["a"], "a ran, and baton died accounting for it");
    assert!(p.passes(id).is_empty(), "no PASS was journaled yet");
    assert_crashed(&p, id);
    let (code, _, err) = p.run(&["resume", id]);
    assert_eq!(code, 0, "resume failed: {err}");
    assert!(err.contains("judging its end from what it left"), "{err}");
    assert_complete(&p, id, &["a", "b", "c", "d"], |ph| format!("summary of {ph}"));
    assert_eq!(lines(&p, "runs.log"), ["a", "b", "c", "d"], "a did not run again");
    let doc = p.state(id);
    assert_eq!(completed(&doc, "a")["attempt"], 1);
    let journal = p.journal(id);
    let kinds = |k: &str| journal.iter().filter(|e| e["kind"] == k && e["phase"] == "a").count();
    assert_eq!((kinds("phase_started"), kinds("phase_exited"), kinds("phase_passed")), (1, 1, 1));
    assert_eq!(kinds("phase_interrupted"), 0);
    let resumed = journal.iter().find(|e| e["kind"] == "task_resumed").unwrap();
    assert!(resumed["note"].as_str().unwrap().contains("does not run again"), "{resumed}");
}
}

on_both_backends! {
/// The same window for a phase that failed: its exit code is judged on
/// resume (a retry), not a second run of the failed attempt.
fn a_failed_exit_is_judged_on_resume_not_run_again() {
    let p = TestProject::new();
    p.workflow(
        "f",
        "name = \"f\"\n[[phase]]\nid = \"x\"\nrun = \"echo x >> runs.log; echo broken >&2; exit 7\"\nmax_attempts = 1\n",
    );
    let out = p
        .baton(&["run", "f", "t", "--id", "fx"])
        .env("BATON_TEST_CRASH_AT", "journal-committed:phase_exited")
        .output()
        .unwrap();
    assert_eq!(out.status.signal(), Some(9));
    let (code, _, err) = p.run(&["resume", "fx"]);
    assert_eq!(code, 1, "the phase failed: {err}");
    assert_eq!(runs(&p, "x"), 1, "the failed attempt did not run again");
    let doc = p.state("fx");
    assert_eq!(doc["status"], "FAILED");
    let failed = p.journal("fx").into_iter().find(|e| e["kind"] == "phase_failed").unwrap();
    assert_eq!(failed["exit_code"], 7, "{failed}");
    assert!(failed["stderr_tail"].as_str().unwrap().contains("broken"), "{failed}");
}
}

// ----- 2. SIGKILL of `baton run` while a phase runs -------------------------

const SLOW: &str = r#"name = "slow"

[[phase]]
id = "first"
run = '''echo first >> runs.log; echo "first done" > "$BATON_SUMMARY_FILE"'''

[[phase]]
id = "slow"
run = '''echo $$ > slow.pid; echo slow >> runs.log; if [ ! -f marker ]; then touch marker; sleep 30 & echo $! > sleep.pid; wait; fi; echo "slow done" > "$BATON_SUMMARY_FILE"'''

[[phase]]
id = "last"
run = '''echo last >> runs.log; echo "last done" > "$BATON_SUMMARY_FILE"'''
"#;

on_both_backends! {
fn sigkill_of_the_runner_mid_phase_kills_the_orphans_on_resume() {
    let p = TestProject::new();
    p.workflow("slow", SLOW);
    let id = "t2";
    let mut run = p
        .baton(&["run", "slow", "--id", id])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_in_progress(&p, id, "slow");
    wait_for("the slow phase to start its sleep", || {
        p.root().join("sleep.pid").exists().then_some(())
    });
    let leader = pid_in(&p, "slow.pid");
    let sleeper = wait_for("sleep.pid to be written", || {
        std::fs::read_to_string(p.root().join("sleep.pid"))
            .ok()?
            .trim()
            .parse::<u32>()
            .ok()
    });

    sigkill(run.id());
    let status = wait_child(&mut run, "the killed baton run");
    assert!(!status.success());
    // The phase's processes outlive their runner ...
    assert!(
        !gone(leader) && !gone(sleeper),
        "the orphaned phase should still be running"
    );
    assert_crashed(&p, id);
    assert_eq!(p.state(id)["current_phase"]["status"], "IN_PROGRESS");

    let (code, _, err) = p.run(&["resume", id]);
    assert_eq!(code, 0, "resume failed: {err}");
    // ... until resume kills their whole group.
    wait_gone(leader, "the orphaned phase shell");
    wait_gone(sleeper, "the orphaned sleep");

    assert_complete(&p, id, &["first", "slow", "last"], |ph| {
        format!("{ph} done")
    });
    let doc = p.state(id);
    assert_eq!(
        completed(&doc, "slow")["attempt"],
        2,
        "the slow phase re-ran as attempt 2"
    );
    assert_eq!(phase(&doc, "slow")["attempt"], 2);
    assert_eq!(runs(&p, "first"), 1);
    assert_eq!(runs(&p, "slow"), 2);
    assert_eq!(runs(&p, "last"), 1);
    let kinds: Vec<Value> = p
        .journal(id)
        .iter()
        .filter(|e| e["phase"] == "slow")
        .map(|e| e["kind"].clone())
        .collect();
    assert!(
        kinds.contains(&Value::from("phase_interrupted")),
        "journal of slow: {kinds:?}"
    );
}
}

// ----- 2b. people and shells racing -----------------------------------------

/// Runs each of `commands` at once (all started, then all waited for):
/// (exit code, stderr) of each, in order.
fn at_once(p: &TestProject, commands: &[Vec<&str>]) -> Vec<(i32, String)> {
    let children: Vec<Child> = commands
        .iter()
        .map(|args| {
            p.baton(args)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    children
        .into_iter()
        .map(|c| {
            let out = wait_output(c, "a racing baton");
            (
                out.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            )
        })
        .collect()
}

on_both_backends! {
/// Issue 34: shells and people racing. Six `baton run` with no `--id`
/// at once all ran (five were refused "a task 01-… already exists", with
/// a hint to resume a task that was not theirs); of two cancels and of
/// two answers at once the loser gets the refusal the docs promise,
/// naming what won, never "busy" with a hint to cancel the task.
fn names_baton_chooses_never_collide_and_the_loser_of_a_race_is_told_what_won() {
    let p = TestProject::new();
    p.workflow("ask", "name = \"ask\"\n[[phase]]\nid = \"q\"\nwait = { human = \"Go?\", options = [\"yes\", \"no\"] }\n[[phase]]\nid = \"after\"\nrun = \"echo after\"\n");
    let runs: Vec<Vec<&str>> = (0..6).map(|_| vec!["run", "example", "same words"]).collect();
    for (code, err) in at_once(&p, &runs) {
        assert_eq!(code, 0, "{err}");
    }
    let ids: Vec<String> = ls_rows(&p).iter().map(|r| r["id"].as_str().unwrap().to_string()).collect();
    assert_eq!(ids.iter().filter(|i| i.ends_with("same-words")).count(), 6, "{ids:?}");

    for round in 0..3 {
        let id = format!("c{round}");
        assert_eq!(p.run(&["run", "ask", "x", "--id", &id]).0, 4);
        let mut res = at_once(&p, &[vec!["cancel", &id], vec!["cancel", &id]]);
        res.sort();
        assert_eq!(res[0].0, 0, "{res:?}");
        assert_eq!(res[1].0, 2, "the loser is refused as a second cancel is: {res:?}");
        assert!(res[1].1.contains("already CANCELLED"), "{res:?}");
        assert!(!res[1].1.contains("baton cancel {id}`"), "no hint to cancel it: {res:?}");
        assert_eq!(p.state(&id)["status"], "CANCELLED");

        let id = format!("q{round}");
        assert_eq!(p.run(&["run", "ask", "x", "--id", &id]).0, 4);
        let item = format!("{id}/q");
        let mut res = at_once(&p, &[vec!["inbox", "answer", &item, "yes"], vec!["inbox", "answer", &item, "no"]]);
        res.sort();
        assert_eq!(res[0].0, 0, "{res:?}");
        assert_eq!(res[1].0, 2, "{res:?}");
        assert!(
            res[1].1.contains("was answered a moment ago") || res[1].1.contains("not waiting in q for an answer"),
            "{res:?}"
        );
        assert!(!res[1].1.contains("baton cancel"), "no hint to cancel it: {res:?}");
        let answers = p.journal(&id).iter().filter(|e| e["kind"] == "answered").count();
        assert_eq!(answers, 1);
        assert_eq!(p.state(&id)["status"], "COMPLETE");
    }
}
}

// ----- 3. two resumes at once ----------------------------------------------

const ONCE: &str = r#"name = "once"

[[phase]]
id = "prep"
run = '''echo prep >> runs.log; echo "prep done"'''

[[phase]]
id = "work"
run = '''echo work >> runs.log; sleep 3; echo "work done" > "$BATON_SUMMARY_FILE"'''
"#;

on_both_backends! {
fn two_simultaneous_resumes_one_wins_the_other_is_busy() {
    let p = TestProject::new();
    p.workflow("once", ONCE);
    let id = "t3";
    let out = p
        .baton(&["run", "once", "--id", id])
        .env("BATON_TEST_CRASH_AT", "before-spawn:work")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert_crashed(&p, id);
    assert_eq!(runs(&p, "work"), 0);

    let start = |p: &TestProject| {
        p.baton(&["resume", id])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (start(&p), start(&p));
    let (pid_a, pid_b) = (a.id(), b.id());
    let (out_a, out_b) = (wait_output(a, "resume a"), wait_output(b, "resume b"));
    let codes = (out_a.status.code(), out_b.status.code());
    let (winner, loser, loser_out) = match codes {
        (Some(0), Some(3)) => (pid_a, pid_b, &out_b),
        (Some(3), Some(0)) => (pid_b, pid_a, &out_a),
        other => panic!(
            "expected one resume to exit 0 and the other 3, got {other:?}\nA: {}\nB: {}",
            String::from_utf8_lossy(&out_a.stderr),
            String::from_utf8_lossy(&out_b.stderr)
        ),
    };
    let err = String::from_utf8_lossy(&loser_out.stderr);
    let owner = format!("pid {winner} on {}", hostname());
    assert!(
        err.contains(&owner),
        "the busy resume (pid {loser}) should name {owner:?}: {err}"
    );

    assert_eq!(runs(&p, "work"), 1, "the phase ran exactly once more");
    assert_eq!(runs(&p, "prep"), 1);
    assert_complete(&p, id, &["prep", "work"], |ph| format!("{ph} done"));
}
}

// ----- 4. a live runner: resume is busy, cancel stops it --------------------

const LIVE: &str = r#"name = "live"

[[phase]]
id = "hold"
run = '''echo $$ > hold.pid; sleep 30 & echo $! > sleep.pid; wait'''
"#;

on_both_backends! {
fn resume_of_a_live_task_is_busy_and_cancel_stops_it() {
    let p = TestProject::new();
    p.workflow("live", LIVE);
    let id = "t4";
    let mut run = p
        .baton(&["run", "live", "--id", id])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_in_progress(&p, id, "hold");
    let sleeper = wait_for("sleep.pid", || {
        std::fs::read_to_string(p.root().join("sleep.pid"))
            .ok()?
            .trim()
            .parse::<u32>()
            .ok()
    });
    let leader = pid_in(&p, "hold.pid");

    let row = ls_row(&p, id);
    assert_eq!(row["status"], "RUNNING", "{row}");
    assert_eq!(row["resumable"], false, "{row}");

    let journal_before = p.journal(id).len();
    let (code, _, err) = p.run(&["resume", id]);
    assert_eq!(code, 3, "resume of a running task: {err}");
    let owner = format!("pid {} on {}", run.id(), hostname());
    assert!(
        err.contains(&owner),
        "the message should name {owner:?}: {err}"
    );
    assert_eq!(
        p.journal(id).len(),
        journal_before,
        "a refused resume writes nothing"
    );
    assert!(
        !gone(leader),
        "a refused resume must not touch the running phase"
    );

    let (code, _, err) = p.run(&["cancel", id]);
    assert_eq!(code, 0, "cancel failed: {err}");
    let status = wait_child(&mut run, "the cancelled baton run");
    assert_eq!(
        status.code(),
        Some(1),
        "baton run of a cancelled task exits 1"
    );
    assert_eq!(p.state(id)["status"], "CANCELLED");
    assert_eq!(ls_row(&p, id)["status"], "CANCELLED");
    wait_gone(leader, "the cancelled phase shell");
    wait_gone(sleeper, "the cancelled phase's sleep");
}
}

// ----- 5. timeouts kill the whole group, and retries run --------------------

const TIMEOUT: &str = r#"name = "slowpoke"

[[phase]]
id = "hang"
timeout = "1s"
max_attempts = 2
run = '''echo $$ >> leaders.pids; echo hang >> runs.log; sh -c 'sleep 30 & echo $! >> sleepers.pids; wait' '''
"#;

on_both_backends! {
fn timeout_kills_the_process_group_and_retries() {
    let p = TestProject::new();
    p.workflow("slowpoke", TIMEOUT);
    let id = "t5";
    let started = Instant::now();
    let mut run = p
        .baton(&["run", "slowpoke", "--id", id])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let status = wait_child(&mut run, "baton run with a timing-out phase");
    assert_eq!(
        status.code(),
        Some(1),
        "a task whose phase keeps timing out fails"
    );
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "the timeouts did not stop the 30 s sleeps"
    );

    let doc = p.state(id);
    assert_eq!(doc["status"], "FAILED", "{doc}");
    let hang = phase(&doc, "hang");
    assert_eq!(hang["status"], "FAILED");
    assert_eq!(hang["attempt"], 2, "max_attempts = 2 runs a second attempt");
    let err = hang["last_error"].as_str().unwrap_or_default();
    assert!(err.contains("timed out"), "last_error: {err:?}");
    assert_eq!(runs(&p, "hang"), 2);

    let failed: Vec<Value> = p
        .journal(id)
        .into_iter()
        .filter(|e| e["kind"] == "phase_failed")
        .collect();
    assert_eq!(failed.len(), 2, "{failed:?}");
    for (i, f) in failed.iter().enumerate() {
        assert_eq!(f["attempt"], i as u64 + 1);
        assert_eq!(f["timed_out"], true, "{f}");
        assert!(f["error"].as_str().unwrap().contains("timed out"), "{f}");
    }
    assert_eq!(failed[0]["retry"], true);
    assert_eq!(failed[1]["retry"], false);

    let leaders: Vec<u32> = lines(&p, "leaders.pids")
        .iter()
        .map(|l| l.parse().unwrap())
        .collect();
    let sleepers: Vec<u32> = lines(&p, "sleepers.pids")
        .iter()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(leaders.len(), 2);
    assert_eq!(sleepers.len(), 2, "each attempt started its grandchild");
    for pid in leaders {
        wait_gone(pid, "a timed-out phase shell");
    }
    for pid in sleepers {
        wait_gone(pid, "a timed-out phase's grandchild");
    }
}
}

// ----- 6. resume of complete and of failed tasks ----------------------------

const FLAKY: &str = r#"name = "flaky"

[[phase]]
id = "setup"
run = '''echo setup >> runs.log; echo "setup done" > "$BATON_SUMMARY_FILE"'''

[[phase]]
id = "check"
run = '''echo check >> runs.log; test -f ok || { echo "ok is missing" >&2; exit 1; }; echo "check done" > "$BATON_SUMMARY_FILE"'''
"#;

on_both_backends! {
fn resume_of_a_complete_task_changes_nothing() {
    let p = TestProject::new();
    p.workflow("four", FOUR);
    let id = "t6a";
    let (code, _, err) = p.run(&["run", "four", "--id", id]);
    assert_eq!(code, 0, "run failed: {err}");
    let before = p.journal(id);
    let doc_before = p.state(id);
    let (code, _, err) = p.run(&["resume", id]);
    assert_eq!(code, 0, "resume of a complete task: {err}");
    assert_eq!(p.journal(id), before, "the journal is unchanged");
    let doc = p.state(id);
    assert_eq!(doc["status"], "COMPLETE");
    assert_eq!(doc["last_seq"], doc_before["last_seq"]);
    assert_eq!(doc["updated_at"], doc_before["updated_at"]);
    assert_eq!(
        lines(&p, "runs.log"),
        ["a", "b", "c", "d"],
        "nothing ran again"
    );
}
}

on_both_backends! {
fn resume_of_a_failed_task_reruns_the_failed_phase() {
    let p = TestProject::new();
    p.workflow("flaky", FLAKY);
    let id = "t6b";
    let (code, _, err) = p.run(&["run", "flaky", "--id", id]);
    assert_eq!(code, 1, "the check phase should fail: {err}");
    let doc = p.state(id);
    assert_eq!(doc["status"], "FAILED");
    assert_eq!(doc["resumable"], true);
    assert_eq!(phase(&doc, "check")["status"], "FAILED");
    assert_eq!(ls_row(&p, id)["status"], "FAILED");

    std::fs::write(p.root().join("ok"), "").unwrap();
    let (code, _, err) = p.run(&["resume", id]);
    assert_eq!(code, 0, "resume failed: {err}");
    assert_complete(&p, id, &["setup", "check"], |ph| format!("{ph} done"));
    assert_eq!(runs(&p, "setup"), 1, "the passed phase did not run again");
    assert_eq!(runs(&p, "check"), 2, "the failed phase ran again");
    assert_eq!(completed(&p.state(id), "check")["attempt"], 2);
}
}

// ----- 7. SIGKILL at random-ish points --------------------------------------

const SIX: &str = r#"name = "six"
"#;

/// Six phases; each records that it started, then waits for its own marker
/// file `go-TASK-PHASE` before passing, so the test decides which phase is
/// running when it kills baton. The wait also ends when the project folder
/// is gone, so a failed test leaves no phase polling for ever.
fn six_workflow() -> String {
    let mut s = SIX.to_string();
    for i in 1..=6 {
        s.push_str(&format!(
            "\n[[phase]]\nid = \"p{i}\"\nrun = '''echo \"$BATON_TASK_ID $BATON_PHASE\" >> runs.log; while [ ! -f \"go-$BATON_TASK_ID-$BATON_PHASE\" ] && [ -d .baton ]; do sleep 0.02; done; echo \"$BATON_PHASE of $BATON_TASK_ID\" > \"$BATON_SUMMARY_FILE\"'''\n"
        ));
    }
    s
}

/// Lets phase `ph` of task `id` (in `six_workflow`) pass.
fn open_gate(p: &TestProject, id: &str, ph: &str) {
    std::fs::write(p.root().join(format!("go-{id}-{ph}")), "").unwrap();
}

/// A small pseudo-random number from the clock and the process id.
fn jitter(i: u64, max: u64) -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as u64;
    let mut x =
        nanos ^ (u64::from(std::process::id()) << 16) ^ (i.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x % max
}

on_both_backends! {
/// Every iteration SIGKILLs `baton run` while a chosen phase is running,
/// whatever the machine's load: the phases before it may pass, the chosen
/// one cannot (its marker file is missing). Iterations cover every phase,
/// in an order that varies from run to run, and alternate between killing
/// as soon as `state.json` says the phase is IN_PROGRESS (anywhere between
/// its start being journalled and its process being let through the gate)
/// and killing once the phase's own process is running.
fn sigkill_at_random_points_never_loses_work() {
    let p = TestProject::new();
    p.workflow("six", &six_workflow());
    let phases = ["p1", "p2", "p3", "p4", "p5", "p6"];
    let rotate = jitter(0, phases.len() as u64) as usize;
    eprintln!("first target: {}", phases[rotate]);
    for i in 0..phases.len() {
        let id = format!("r{i}");
        let k = (i + rotate) % phases.len();
        let target = phases[k];
        let process_running = i % 2 == 1;
        let point = if process_running {
            format!("{target} with its process running")
        } else {
            format!("{target} IN_PROGRESS")
        };
        for ph in &phases[..k] {
            open_gate(&p, &id, ph);
        }
        let mut run = p
            .baton(&["run", "six", "--id", &id])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_in_progress(&p, &id, target);
        if process_running {
            let line = format!("{id} {target}");
            wait_for(&format!("phase {target} of {id} to run"), || {
                (runs(&p, &line) == 1).then_some(())
            });
        }
        assert!(
            run.try_wait().unwrap().is_none(),
            "{id}: baton run ended while {target} was waiting for its marker"
        );
        sigkill(run.id());
        let status = wait_child(&mut run, "the killed baton run");
        assert_eq!(status.signal(), Some(9), "{id}: killed at {point}");

        // `ls` and `log` only read (`show` would repair rendered files).
        assert_crashed(&p, &id);
        let before = p.passes(&id);
        let want: BTreeMap<String, usize> =
            phases[..k].iter().map(|ph| (ph.to_string(), 1)).collect();
        assert_eq!(before, want, "{id}: passes before the kill at {point}");
        eprintln!("{id}: killed at {point}");

        for ph in phases {
            open_gate(&p, &id, ph);
        }
        let (code, _, err) = p.run(&["resume", &id]);
        assert_eq!(code, 0, "{id}: resume after a kill at {point}: {err}");
        for (j, ph) in phases.iter().enumerate() {
            let n = runs(&p, &format!("{id} {ph}"));
            if j != k {
                assert_eq!(n, 1, "{id}: {ph} ran {n} times (kill at {point})");
            } else if process_running {
                assert_eq!(n, 2, "{id}: {ph} ran {n} times (kill at {point})");
            } else {
                // Killed before or after its gate opened.
                assert!(
                    (1..=2).contains(&n),
                    "{id}: {ph} ran {n} times (kill at {point})"
                );
            }
        }
        assert_complete(&p, &id, &phases, |ph| format!("{ph} of {id}"));
        let doc = p.state(&id);
        assert_eq!(doc["pending_phases"], serde_json::json!([]));
        assert_eq!(
            completed(&doc, target)["attempt"],
            2,
            "{id}: the killed attempt of {target} counts"
        );
    }
}
}
