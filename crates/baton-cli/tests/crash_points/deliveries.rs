//! Deliveries: `baton deliver` (what a server does with each webhook)
//! killed after the delivery is stored, after it passed the task's wait,
//! and after it is settled; then GitHub's redelivery of the same id and a
//! resume. The task's wait passes once, its next phase runs once, the
//! delivery is listed once and settled, and a further redelivery changes
//! nothing. A delivery that comes before its stage (kept for it) crashed
//! the same way is kept once and used once.

use super::{Tally, gapless, lines};
use baton_testkit::serve::PR_FLOW;
use baton_testkit::{TestProject, on_both_backends};
use serde_json::Value;

fn deliver(p: &TestProject, id: &str) -> std::process::Command {
    let path = baton_testkit::github_fixture("pull_request/opened.payload.json");
    p.baton(&[
        "deliver",
        "pull_request",
        path.to_str().unwrap(),
        "--delivery",
        id,
        "--branch-pattern",
        "{task-id}",
        "--json",
    ])
}

fn rows(p: &TestProject) -> Vec<Value> {
    let (_, out, _) = p.run(&["deliveries", "--json"]);
    serde_json::from_str::<Value>(&out)
        .ok()
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
}

/// What holds once the task ran on from its wait.
fn check(p: &TestProject, point: &str, t: &mut Tally) {
    let doc = p.state("changes");
    t.check(doc["status"] == "COMPLETE", || {
        format!("{point}: the task is {} after the recovery", doc["status"])
    });
    let passes = p.passes("changes");
    for phase in ["wait-pr", "after"] {
        t.check(passes.get(phase) == Some(&1), || {
            format!("{point}: {phase} passed {:?} times", passes.get(phase))
        });
    }
    t.check(lines(p, "after.txt") == 1, || {
        format!(
            "{point}: the phase after the wait ran {} times",
            lines(p, "after.txt")
        )
    });
    t.check(gapless(p, "changes"), || {
        format!("{point}: the journal has a gap")
    });
    let all = rows(p);
    t.check(all.len() == 1, || {
        format!("{point}: {} deliveries listed", all.len())
    });
    t.check(
        all.first().is_some_and(|r| r["decision"] == "resumed"),
        || format!("{point}: the delivery is not settled as the resume it was: {all:?}"),
    );
    // GitHub's redelivery, once more: changes nothing.
    let out = deliver(p, "d-1").output().unwrap();
    t.runs += 1;
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    t.check(
        out.status.code() == Some(0) && v["redelivery"] == true,
        || {
            format!(
                "{point}: a further redelivery is not one: {v} {}",
                String::from_utf8_lossy(&out.stderr)
            )
        },
    );
    t.check(lines(p, "after.txt") == 1, || {
        format!("{point}: a further redelivery ran the task again")
    });
}

on_both_backends! {
    /// Killed at each point of a delivery's hand-over; redelivered and
    /// resumed as a user (and GitHub) would.
    fn a_delivery_crashed_at_each_point_resumes_its_task_once() {
        let mut t = Tally::default();
        for point in [
            "delivery-recorded:pull_request",
            "delivery-passed:wait-pr",
            "delivery-settled:pull_request",
        ] {
            let p = TestProject::new();
            p.workflow("pr-flow", PR_FLOW);
            fs_err::write(p.root().join("ready"), "").unwrap();
            let (code, _, err) = p.run(&["run", "pr-flow", "x", "--id", "changes"]);
            assert_eq!(code, 4, "waits at wait-pr: {err}");
            t.crash(deliver(&p, "d-1"), point);
            // GitHub redelivers what got no answer.
            let out = deliver(&p, "d-1").output().unwrap();
            t.recovered(point, "deliver (redelivery)", out.status.code().unwrap_or(-1), 0, &String::from_utf8_lossy(&out.stderr));
            if p.state("changes")["status"] != "COMPLETE" {
                let (code, _, err) = p.run(&["resume", "changes"]);
                t.recovered(point, "resume", code, 0, &err);
            }
            check(&p, point, &mut t);
        }

        // A delivery before its stage: kept for it, crashed right after it
        // was stored; redelivered, it is kept once and used once.
        let p = TestProject::new();
        p.workflow("pr-flow", PR_FLOW);
        let (code, _, _) = p.run(&["run", "pr-flow", "x", "--id", "changes"]);
        assert_eq!(code, 1, "implementation fails until `ready` exists");
        let point = "delivery-recorded:pull_request (early)";
        t.crash(deliver(&p, "d-1"), "delivery-recorded:pull_request");
        let out = deliver(&p, "d-1").output().unwrap();
        t.recovered(point, "deliver (redelivery)", out.status.code().unwrap_or(-1), 0, &String::from_utf8_lossy(&out.stderr));
        let kept = p.state("changes")["buffered_events"].as_array().map_or(0, Vec::len);
        t.check(kept == 1, || format!("{point}: kept {kept} times"));
        fs_err::write(p.root().join("ready"), "").unwrap();
        let (code, _, err) = p.run(&["resume", "changes"]);
        t.recovered(point, "resume", code, 0, &err);
        check(&p, point, &mut t);
        t.report("deliveries");
    }
}
