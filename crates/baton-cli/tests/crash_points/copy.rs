//! `baton store copy` killed after each task it copied: the same copy run
//! again skips what is there and finishes, and the target then holds what
//! a copy that never crashed holds (a third run finds every task there,
//! identical: projection, journal and flags).

use super::{Tally, campaign};
use baton_testkit::{TestProject, on_both_backends};
use serde_json::Value;

fn copy(p: &TestProject, to: &std::path::Path) -> (i32, Value, String) {
    let (code, out, err) = p.run(&["store", "copy", "--to", to.to_str().unwrap(), "--json"]);
    (code, serde_json::from_str(&out).unwrap_or(Value::Null), err)
}

on_both_backends! {
    fn a_store_copy_crashed_after_each_task_finishes_when_run_again() {
        let mut t = Tally::default();
        let p = TestProject::new();
        p.workflow("w", crate::task::W);
        let ids = ["c1", "c2", "c3"];
        for id in ids {
            assert_eq!(p.run(&["run", "w", "x", "--id", id]).0, 0);
        }
        let reference = p.root().join("reference.db");
        let (code, full, err) = copy(&p, &reference);
        assert_eq!(code, 0, "{err}");
        assert_eq!(full["tasks"], 3, "{full}");
        let keys: Vec<&str> = if campaign() { ids.to_vec() } else { vec!["c1", "c3"] };
        for (n, id) in keys.iter().enumerate() {
            let point = format!("task-copied:{id}");
            let target = p.root().join(format!("target-{n}.db"));
            let to = target.to_str().unwrap().to_string();
            t.crash(p.baton(&["store", "copy", "--to", &to]), &point);
            let (code, again, err) = copy(&p, &target);
            t.recovered(&point, "store copy (again)", code, 0, &err);
            t.check(again["tasks"] == 3 && again["already_there"].as_u64().unwrap_or(0) >= 1, || {
                format!("{point}: the second copy did not skip what was there: {again}")
            });
            let (code, third, err) = copy(&p, &target);
            t.recovered(&point, "store copy (a third time)", code, 0, &err);
            t.check(third["already_there"] == 3, || format!("{point}: not every task is there, identical: {third}"));
            for k in ["definitions", "instances", "deliveries", "teams", "inbox_items", "comments", "links", "plays", "workspaces"] {
                t.check(third[k] == full[k], || format!("{point}: {k}: {} against {} without a crash", third[k], full[k]));
            }
        }
        t.report("copy");
    }
}
