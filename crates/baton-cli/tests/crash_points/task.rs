//! The task engine's points, at each key a three-phase run passes: the
//! run dies there, the user's recovery completes the task, and every phase
//! has passed once, the journal is whole, the rendered files match the
//! store, and `doctor` finds nothing.

use super::{Tally, campaign, gapless};
use baton_testkit::{TestProject, on_both_backends};
use serde_json::Value;
use std::collections::BTreeMap;

/// Three phases, each leaving a line in runs.txt.
pub const W: &str = r#"name = "w"
[[phase]]
id = "a"
run = "echo a >> runs.txt"
[[phase]]
id = "b"
run = "echo b >> runs.txt"
[[phase]]
id = "c"
run = "echo c >> runs.txt"
"#;

/// How a user recovers after a crash at each point of a task's run.
#[derive(Clone, Copy)]
pub enum Recover {
    /// `baton resume ID`.
    Resume,
    /// `baton doctor --fix`: the task had completed in the store.
    Doctor,
}

/// The sample the test script runs: every task point at least once.
const SAMPLE: &[&str] = &[
    "journal-committed:claimed",
    "journal-committed:phase_started",
    "journal-committed:phase_passed",
    "state-rendered:phase_passed",
    "snapshot-taken:b",
    "before-spawn:a",
    "before-spawn:b",
    "after-spawn:b",
    "after-pass:b",
    "after-pass:c",
    "journal-committed:task_completed",
    "state-rendered:task_completed",
];

/// Every point of a task's run at every key a three-phase run passes.
fn every_case() -> Vec<String> {
    let mut all = Vec::new();
    for point in ["journal-committed", "state-rendered"] {
        for kind in [
            "claimed",
            "phase_started",
            "phase_process",
            "phase_passed",
            "task_completed",
        ] {
            // A process record renders nothing: it has no state-rendered.
            if !(point == "state-rendered" && kind == "phase_process") {
                all.push(format!("{point}:{kind}"));
            }
        }
    }
    for point in [
        "snapshot-taken",
        "before-spawn",
        "after-spawn",
        "after-pass",
    ] {
        for phase in ["a", "b", "c"] {
            all.push(format!("{point}:{phase}"));
        }
    }
    all
}

/// The cases this run enumerates.
pub fn cases() -> Vec<String> {
    if campaign() {
        every_case()
    } else {
        SAMPLE.iter().map(|s| s.to_string()).collect()
    }
}

/// A crash at a completed task's last commit is recovered by `doctor`.
pub fn recovery_of(point: &str) -> Recover {
    if point.ends_with(":task_completed") {
        Recover::Doctor
    } else {
        Recover::Resume
    }
}

fn state_file(p: &TestProject, id: &str) -> Value {
    let text = fs_err::read_to_string(p.root().join(format!(".baton/tasks/{id}/state.json")))
        .unwrap_or_default();
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// Runs task `id` to its end after a crash at `point` (recovered with
/// `recover`) and checks what must hold.
pub fn recover_and_check(p: &TestProject, id: &str, point: &str, recover: Recover, t: &mut Tally) {
    let (what, (code, _, err)) = match recover {
        Recover::Resume => ("resume", p.run(&["resume", id])),
        Recover::Doctor => ("doctor --fix", p.run(&["doctor", "--fix"])),
    };
    t.recovered(point, what, code, 0, &err);
    check_complete(p, id, point, t);
}

/// What holds of a three-phase task once it completed.
pub fn check_complete(p: &TestProject, id: &str, point: &str, t: &mut Tally) {
    let doc = p.state(id);
    t.check(doc["status"] == "COMPLETE", || {
        format!("{point}: {} after the recovery", doc["status"])
    });
    let want: BTreeMap<String, usize> =
        ["a", "b", "c"].iter().map(|s| (s.to_string(), 1)).collect();
    let got = p.passes(id);
    t.check(got == want, || {
        format!("{point}: each phase passes once, got {got:?}")
    });
    t.check(gapless(p, id), || {
        format!("{point}: the journal of {id} has a gap or a repeat")
    });
    let file = state_file(p, id);
    t.check(
        file["status"] == doc["status"] && file["phases"] == doc["phases"],
        || format!("{point}: state.json differs from the store: {file} against {doc}"),
    );
    let (code, out, _) = p.run(&["doctor"]);
    t.check(code == 0, || {
        format!("{point}: doctor finds a problem after the recovery: {out}")
    });
    for phase in ["a", "b", "c"] {
        let any = std::fs::read_dir(p.root().join(format!(".baton/tasks/{id}")))
            .map(|d| {
                d.flatten().any(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    name.ends_with(&format!("-{phase}.md"))
                })
            })
            .unwrap_or(false);
        t.check(any, || format!("{point}: no output file for phase {phase}"));
    }
    let log = fs_err::read_to_string(p.root().join(format!(".baton/sessions/{id}.md")))
        .unwrap_or_default();
    t.check(log.contains("the task is complete"), || {
        format!("{point}: the session log of {id} does not show the task complete")
    });
}

on_both_backends! {
    /// Each of the task engine's crash points, at each key a run passes.
    fn every_crash_point_of_a_task_is_recovered_with_its_invariants() {
        let p = TestProject::new();
        p.workflow("w", W);
        let mut t = Tally::default();
        for (n, point) in cases().iter().enumerate() {
            let id = format!("k{n}");
            t.crash(p.baton(&["run", "w", "crash", "--id", &id]), point);
            recover_and_check(&p, &id, point, recovery_of(point), &mut t);
        }
        t.report("task");
    }
}
