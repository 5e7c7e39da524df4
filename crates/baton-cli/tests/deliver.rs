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
    baton_testkit::github_fixture(path)
}

/// Hands `file` over as a new delivery (a fresh id each time).
fn deliver(p: &TestProject, event: &str, file: &str) -> (i32, Value) {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let id = format!("d-{}", N.fetch_add(1, std::sync::atomic::Ordering::SeqCst));
    deliver_as(p, &id, event, file)
}

fn deliver_as(p: &TestProject, id: &str, event: &str, file: &str) -> (i32, Value) {
    let path = fixture(file).display().to_string();
    let (code, out, err) = p.run(&[
        "deliver",
        event,
        &path,
        "--delivery",
        id,
        "--branch-pattern",
        "{task-id}",
        "--json",
    ]);
    let v = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    (code, v)
}

/// A pull request opened while its task is still at `implementation` is
/// kept for `wait-pr` (the task untouched, the delivery saying so); when
/// the task gets there it passes with that event and runs on; the same
/// event again changes nothing.
#[test]
fn an_opened_pull_request_is_kept_for_the_stage_it_is_for() {
    let p = TestProject::new();
    p.workflow("pr-flow", FLOW);
    // The fixture's pull request comes from branch `changes`: with the
    // pattern `{task-id}`, it names task `changes`.
    let (code, _, err) = p.run(&["run", "pr-flow", "x", "--id", "changes"]);
    assert_eq!(code, 1, "implementation fails until `ready` exists: {err}");
    let (code, v) = deliver(&p, "pull_request", "pull_request/opened.payload.json");
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["event"], "github.pull_request.opened");
    assert_eq!(v["tasks"][0]["decision"], "buffered", "{v}");
    assert_eq!(
        v["tasks"][0]["why"],
        "task changes is at implementation; kept until it waits at wait-pr"
    );
    let doc = p.state("changes");
    assert_eq!(doc["status"], "FAILED", "untouched: {doc}");
    assert_eq!(doc["buffered_events"][0]["phase"], "wait-pr", "{doc}");
    assert_eq!(
        doc["buffered_events"][0]["event"],
        "github.pull_request.opened"
    );
    let (_, out, _) = p.run(&["show", "changes"]);
    assert!(
        out.contains("kept for wait-pr: github.pull_request.opened"),
        "{out}"
    );

    fs_err::write(p.root().join("ready"), "").unwrap();
    let (code, _, err) = p.run(&["resume", "changes"]);
    assert_eq!(
        code, 0,
        "it reached wait-pr and passed with the kept event: {err}"
    );
    assert!(
        err.contains("kept since it came before this stage"),
        "{err}"
    );
    assert_eq!(
        fs_err::read_to_string(p.root().join("after.txt")).unwrap(),
        "pr 2 from changes\n"
    );
    let doc = p.state("changes");
    assert_eq!(doc["status"], "COMPLETE", "{doc}");
    assert_eq!(doc["labels"]["pr-number"], "2", "{doc}");
    assert!(doc.get("buffered_events").is_none(), "used: {doc}");
    let (_, out, _) = p.run(&["deliveries", "--json"]);
    let all: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(all[0]["decision"], "resumed", "{all}");
    assert!(
        all[0]["why"]
            .as_str()
            .unwrap()
            .contains("kept since it came before that stage"),
        "{all}"
    );
    // The same event again changes nothing.
    let (code, v) = deliver(&p, "pull_request", "pull_request/opened.payload.json");
    assert_eq!(code, 0);
    assert_eq!(v["tasks"], Value::Array(vec![]), "{v}");
}

#[test]
fn a_delivery_id_handed_over_before_changes_nothing_and_every_delivery_is_listed() {
    let p = TestProject::new();
    p.workflow("pr-flow", FLOW);
    fs_err::write(p.root().join("ready"), "").unwrap();
    let (code, _, _) = p.run(&["run", "pr-flow", "x", "--id", "changes"]);
    assert_eq!(code, 4);
    let (code, v) = deliver_as(&p, "skipped-1", "issues", "issues/opened.payload.json");
    assert_eq!((code, &v["tasks"]), (0, &Value::Array(vec![])), "{v}");
    let (code, v) = deliver_as(
        &p,
        "d-77",
        "pull_request",
        "pull_request/opened.payload.json",
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["tasks"][0]["decision"], "resumed", "{v}");
    // Rewound to wait again, the same delivery id still changes nothing.
    let (code, _, err) = p.run(&["resume", "changes", "--from", "wait-pr"]);
    assert_eq!(code, 4, "{err}");
    let (code, v) = deliver_as(
        &p,
        "d-77",
        "pull_request",
        "pull_request/opened.payload.json",
    );
    assert_eq!(code, 0);
    assert_eq!(v["redelivery"], true, "{v}");
    assert_eq!(p.state("changes")["status"], "WAITING");

    let (code, out, _) = p.run(&["deliveries", "--json"]);
    assert_eq!(code, 0);
    let all: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(all.as_array().unwrap().len(), 2, "{all}");
    assert_eq!(all[0]["id"], "d-77");
    assert_eq!(all[0]["event"], "pull_request");
    assert_eq!(all[0]["action"], "opened");
    assert_eq!(all[0]["repository"], "Codertocat/Hello-World");
    assert_eq!(all[0]["decision"], "resumed");
    assert_eq!(all[0]["tasks"][0]["task"], "changes");
    assert_eq!(all[1]["decision"], "ignored");
    assert_eq!(all[1]["why"], "no task waits for github.issues.opened");
    let (_, text, _) = p.run(&["deliveries"]);
    assert!(
        text.contains("d-77  pull_request.opened  Codertocat/Hello-World  resumed: task changes resumed at wait-pr"),
        "{text}"
    );
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

#[test]
fn the_repository_label_comes_from_the_git_remote_and_must_match_the_delivery() {
    let flow = FLOW.replace(
        r#"match = { "task-id" = "{{labels.task-id}}" }"#,
        r#"match = { "task-id" = "{{labels.task-id}}", "repository" = "{{labels.repository}}" }"#,
    );
    // Without a remote the label is the project folder's name, which no
    // delivery's repository matches.
    let p = TestProject::new();
    p.workflow("pr-flow", &flow);
    fs_err::write(p.root().join("ready"), "").unwrap();
    assert_eq!(p.run(&["run", "pr-flow", "x", "--id", "changes"]).0, 4);
    let folder = p.root().file_name().unwrap().to_str().unwrap().to_string();
    assert_eq!(p.state("changes")["labels"]["repository"], folder.as_str());
    let (_, v) = deliver(&p, "pull_request", "pull_request/opened.payload.json");
    assert_eq!(
        v["tasks"],
        Value::Array(vec![]),
        "another repository's event: {v}"
    );
    assert_eq!(p.state("changes")["status"], "WAITING");

    // With the fixture's repository as origin, it is `owner/name`, and
    // the delivery resumes the task.
    let p = TestProject::new();
    p.workflow("pr-flow", &flow);
    p.git(&[
        "remote",
        "add",
        "origin",
        "git@github.com:Codertocat/Hello-World.git",
    ]);
    fs_err::write(p.root().join("ready"), "").unwrap();
    assert_eq!(p.run(&["run", "pr-flow", "x", "--id", "changes"]).0, 4);
    assert_eq!(
        p.state("changes")["labels"]["repository"],
        "Codertocat/Hello-World"
    );
    let (code, v) = deliver(&p, "pull_request", "pull_request/opened.payload.json");
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["tasks"][0]["decision"], "resumed", "{v}");
    // `--label repository=…` wins over the remote.
    let (code, _, err) = p.run(&[
        "run",
        "pr-flow",
        "y",
        "--id",
        "other",
        "--label",
        "repository=acme/app",
    ]);
    assert_eq!(code, 4, "{err}");
    assert_eq!(p.state("other")["labels"]["repository"], "acme/app");
}
