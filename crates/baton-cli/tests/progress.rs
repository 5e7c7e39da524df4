//! The progress record of a repository: written as a task moves from
//! stage to stage, it outlives `baton rm`, and a task deleted and created
//! again (same id, repository and workflow) continues at the recorded
//! stage, its passed phases and their summaries kept, unless `--fresh`.

use baton_testkit::{TestProject, on_both_backends};
use serde_json::Value;

const FLOW: &str = r#"name = "build"
[[phase]]
id = "plan"
run = "echo planned >> plan.log && echo 'the plan: two steps'"
[[phase]]
id = "implement"
run = "test -f ready"
max_attempts = 1
[[phase]]
id = "ship"
run = "echo shipped > ship.log"
"#;

fn progress(p: &TestProject) -> Vec<Value> {
    let (code, out, err) = p.run(&["progress", "--json"]);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str::<Value>(&out)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn lines(p: &TestProject, file: &str) -> usize {
    fs_err::read_to_string(p.root().join(file)).map_or(0, |t| t.lines().count())
}

on_both_backends! {
    fn delete_and_recreate_keeps_the_stage() {
        let p = TestProject::new();
        p.workflow("build", FLOW);
        let args = ["run", "build", "widget", "--id", "t1", "--label", "repository=acme/app"];
        let (code, _, err) = p.run(&args);
        assert_eq!(code, 1, "implement fails until `ready` exists: {err}");
        let rec = progress(&p);
        assert_eq!(rec.len(), 1, "{rec:?}");
        let r = &rec[0];
        assert_eq!(r["repository"], "acme/app");
        assert_eq!(r["task_id"], "t1");
        assert_eq!(r["workflow"], "build");
        assert_eq!(r["status"], "failed");
        assert_eq!(r["stage"], "implement");
        assert_eq!(r["completed_phases"][0]["id"], "plan");
        assert_eq!(r["completed_phases"][0]["summary"], "the plan: two steps");

        // The task is deleted; the record stays.
        let (code, _, err) = p.run(&["rm", "t1"]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(progress(&p)[0]["stage"], "implement");
        let (_, text, _) = p.run(&["progress", "acme/app"]);
        assert!(text.contains("acme/app  task t1 (build)  failed at implement"), "{text}");

        // Created again: it continues at implement; plan is not run twice,
        // its summary is back.
        fs_err::write(p.root().join("ready"), "").unwrap();
        let (code, _, err) = p.run(&args);
        assert_eq!(code, 0, "{err}");
        assert!(
            err.contains("task t1 continues at implement: the progress record of acme/app says plan passed"),
            "{err}"
        );
        assert_eq!(lines(&p, "plan.log"), 1, "plan ran once");
        let doc = p.state("t1");
        assert_eq!(doc["status"], "COMPLETE");
        assert_eq!(doc["completed_phases"][0]["summary"], "the plan: two steps");
        let r = &progress(&p)[0];
        assert_eq!((r["status"].as_str(), r["stage"].as_str()), (Some("completed"), Some("ship")));

        // --fresh starts over on purpose.
        assert_eq!(p.run(&["rm", "t1"]).0, 0);
        let (code, _, err) = p.run(&["run", "build", "widget", "--id", "t1", "--label", "repository=acme/app", "--fresh"]);
        assert_eq!(code, 0, "{err}");
        assert!(!err.contains("continues at"), "{err}");
        assert_eq!(lines(&p, "plan.log"), 2, "plan ran again");

        // Another id, or another workflow, starts over too.
        assert_eq!(p.run(&["rm", "t1"]).0, 0);
        let (code, _, err) = p.run(&["run", "build", "widget", "--id", "t2", "--label", "repository=acme/app"]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(lines(&p, "plan.log"), 3);

        // --clear deletes the record.
        let (code, _, err) = p.run(&["progress", "acme/app", "--clear"]);
        assert_eq!(code, 0, "{err}");
        assert!(progress(&p).is_empty());
        let (code, _, err) = p.run(&["progress", "acme/app"]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("no progress record of acme/app"), "{err}");
    }
}
