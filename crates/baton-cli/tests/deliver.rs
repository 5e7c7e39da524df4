//! `baton deliver`: GitHub's real webhook payloads (octokit's examples)
//! handed to tasks. The task waiting in the stage that expects the event is
//! resumed there and runs on with the event's facts as labels; a task the
//! event names that is at another stage is untouched, and says where it is.

use baton_testkit::TestProject;
use serde_json::Value;

const FLOW: &str = r#"name = "pr-flow"
[[phase]]
id = "implementation"
run = "test -f ready"
max_attempts = 1
[[phase]]
id = "wait-pr"
wait = { event = "github.pull_request.opened", match = { "task-id" = "{{labels.task-id}}" } }
[[phase]]
id = "after"
run = "echo pr {{labels.pr-number}} from {{labels.pr-branch}} > after.txt"
"#;

fn fixture(path: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../baton-testkit/fixtures/github-webhooks")
        .join(path)
}

fn deliver(p: &TestProject, event: &str, file: &str) -> (i32, Value) {
    let path = fixture(file).display().to_string();
    let (code, out, err) = p.run(&[
        "deliver",
        event,
        &path,
        "--delivery",
        "d-1",
        "--branch-pattern",
        "{task-id}",
        "--json",
    ]);
    let v = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    (code, v)
}

#[test]
fn an_opened_pull_request_resumes_only_the_task_waiting_for_it() {
    let p = TestProject::new();
    p.workflow("pr-flow", FLOW);
    // The fixture's pull request comes from branch `changes`: with the
    // pattern `{task-id}`, it names task `changes`.
    let (code, _, err) = p.run(&["run", "pr-flow", "x", "--id", "changes"]);
    assert_eq!(code, 1, "implementation fails until `ready` exists: {err}");
    let (code, v) = deliver(&p, "pull_request", "pull_request/opened.payload.json");
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["event"], "github.pull_request.opened");
    assert_eq!(v["tasks"][0]["decision"], "skipped", "{v}");
    assert_eq!(
        v["tasks"][0]["why"],
        "skipped: task changes is at implementation, this event is for wait-pr"
    );

    fs_err::write(p.root().join("ready"), "").unwrap();
    let (code, _, err) = p.run(&["resume", "changes"]);
    assert_eq!(code, 4, "now it waits for the pull request: {err}");
    let (code, v) = deliver(&p, "pull_request", "pull_request/opened.payload.json");
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["tasks"][0]["decision"], "resumed", "{v}");
    assert_eq!(
        fs_err::read_to_string(p.root().join("after.txt")).unwrap(),
        "pr 2 from changes\n"
    );
    let (_, out, _) = p.run(&["show", "changes", "--json"]);
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["status"], "COMPLETE", "{doc}");
    assert_eq!(doc["labels"]["pr-number"], "2", "{doc}");
    // The same event again changes nothing.
    let (code, v) = deliver(&p, "pull_request", "pull_request/opened.payload.json");
    assert_eq!(code, 0);
    assert_eq!(v["tasks"], Value::Array(vec![]), "{v}");
}

#[test]
fn an_event_nobody_waits_for_and_a_payload_that_is_not_json_change_nothing() {
    let p = TestProject::new();
    p.workflow("pr-flow", FLOW);
    fs_err::write(p.root().join("ready"), "").unwrap();
    let (code, _, _) = p.run(&["run", "pr-flow", "x", "--id", "changes"]);
    assert_eq!(code, 4);
    let (code, v) = deliver(&p, "issues", "issues/opened.payload.json");
    assert_eq!(code, 0);
    assert_eq!(v["tasks"], Value::Array(vec![]), "{v}");
    let bad = p.root().join("bad.json");
    fs_err::write(&bad, "{ not json").unwrap();
    let (code, _, err) = p.run(&["deliver", "pull_request", &bad.display().to_string()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is not JSON"), "{err}");
    let (_, out, _) = p.run(&["show", "changes", "--json"]);
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["status"], "WAITING", "{doc}");
}
