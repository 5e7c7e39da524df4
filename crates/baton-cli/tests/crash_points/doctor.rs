//! `baton doctor --fix` killed after each repair it makes, in turn: a
//! project with a task killed mid-phase, a completed one whose state.json
//! is gone, one whose session log is gone and one killed before its last
//! commit was rendered. `doctor --fix` run again makes the rest, `doctor`
//! then finds nothing, every task ends as it does after a fix that never
//! crashed, and the interrupted task resumes with each phase passed once.

use super::{Tally, campaign};
use baton_testkit::{TestProject, on_both_backends};
use serde_json::Value;

/// The project with its damage.
fn damaged() -> TestProject {
    let p = TestProject::new();
    p.workflow("w", crate::task::W);
    let out = p
        .baton(&["run", "w", "x", "--id", "d1"])
        .env("BATON_TEST_CRASH_AT", "after-spawn:b")
        .output()
        .unwrap();
    assert!(out.status.code().is_none(), "killed mid-phase");
    for id in ["d2", "d3"] {
        assert_eq!(p.run(&["run", "w", "x", "--id", id]).0, 0);
    }
    fs_err::remove_file(p.root().join(".baton/tasks/d2/state.json")).unwrap();
    fs_err::remove_file(p.root().join(".baton/sessions/d3.md")).unwrap();
    let out = p
        .baton(&["run", "w", "x", "--id", "d4"])
        .env("BATON_TEST_CRASH_AT", "journal-committed:task_completed")
        .output()
        .unwrap();
    assert!(out.status.code().is_none(), "killed before rendering");
    p
}

fn fixes(p: &TestProject) -> (i32, Vec<Value>) {
    let (code, out, _) = p.run(&["doctor", "--fix", "--json"]);
    let rows: Vec<Value> = serde_json::from_str(&out).unwrap_or_default();
    (
        code,
        rows.into_iter().filter(|r| r["level"] == "fixed").collect(),
    )
}

fn statuses(p: &TestProject) -> Vec<(String, Value)> {
    ["d1", "d2", "d3", "d4"]
        .iter()
        .map(|id| (id.to_string(), p.state(id)["status"].clone()))
        .collect()
}

on_both_backends! {
    fn doctor_crashed_after_each_repair_finishes_when_run_again() {
        let mut t = Tally::default();
        let reference = damaged();
        // The task killed mid-phase stays a problem (exit 1) until resumed.
        let (want_code, made) = fixes(&reference);
        assert_eq!(want_code, 1, "{made:?}");
        let n = made.len();
        assert!(n >= 3, "a repair for each damage: {made:?}");
        let want = statuses(&reference);
        let ks: Vec<usize> = if campaign() { (1..=n).collect() } else { vec![1, n] };
        for k in ks {
            let point = format!("doctor-repaired:{k}");
            let p = damaged();
            t.crash(p.baton(&["doctor", "--fix"]), &point);
            let (code, _) = fixes(&p);
            t.recovered(&point, "doctor --fix (again)", code, want_code, "");
            let got = statuses(&p);
            t.check(got == want, || format!("{point}: tasks end as {got:?}, not {want:?}"));
            for id in ["d2", "d3", "d4"] {
                let file = p.root().join(format!(".baton/tasks/{id}/state.json"));
                let log = p.root().join(format!(".baton/sessions/{id}.md"));
                t.check(file.is_file() && log.is_file(), || format!("{point}: {id}'s state.json or session log is still missing"));
            }
            let (code, _, err) = p.run(&["resume", "d1"]);
            t.recovered(&point, "resume d1", code, 0, &err);
            // check_complete ends with `doctor`, clean.
            crate::task::check_complete(&p, "d1", &point, &mut t);
        }
        t.report("doctor");
    }
}
