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
    // The same event again changes nothing, and says why.
    let (code, v) = deliver(&p, "pull_request", "pull_request/opened.payload.json");
    assert_eq!(code, 0);
    assert_eq!(v["decision"], "skipped", "{v}");
    assert_eq!(
        v["tasks"][0]["why"],
        "task changes has ended (COMPLETE), this event is for wait-pr"
    );
    assert_eq!(p.state("changes")["status"], "COMPLETE");
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

/// A flow whose wait names its task and its repository, as the issue's.
const PR: &str = r#"name = "pr"
[[phase]]
id = "wait-pr"
wait = { event = "github.pull_request.opened", match = { "task-id" = "{{labels.task-id}}", "repository" = "{{labels.repository}}" } }
[[phase]]
id = "after"
run = "echo pr {{labels.pr-number}} >> after.txt"
"#;

/// A project whose remote was typed `CODERTOCAT/hello-world` (GitHub's
/// fixtures say `Codertocat/Hello-World`), with task t0 waiting.
fn pr_project() -> TestProject {
    let p = TestProject::new();
    p.workflow("pr", PR);
    p.git(&[
        "remote",
        "add",
        "origin",
        "https://github.com/CODERTOCAT/hello-world.git",
    ]);
    assert_eq!(p.run(&["run", "pr", "x", "--id", "t0"]).0, 4);
    p
}

fn decision_of(p: &TestProject, delivery: &str) -> Value {
    let (code, out, err) = p.run(&["deliveries", "--json"]);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str::<Vec<Value>>(&out)
        .unwrap()
        .into_iter()
        .find(|d| d["id"] == delivery)
        .unwrap_or_else(|| panic!("no delivery {delivery}: {out}"))
}

baton_testkit::on_both_backends! {
    /// Issue 34: an event that comes before its task exists (the task is
    /// started after GitHub told of its pull request) was "ignored: no
    /// task waits", and the task waited forever. It is kept for the task,
    /// and passes its wait when the task gets there; so after `baton rm`
    /// and the task made again. And a remote typed in another case than
    /// GitHub's names one repository.
    fn an_event_before_its_task_is_kept_until_the_task_waits_for_it() {
        let p = pr_project();
        assert_eq!(p.state("t0")["labels"]["repository"], "CODERTOCAT/hello-world");
        let (code, v) = deliver_as(&p, "early-1", "pull_request", "pull_request/opened.payload.json");
        assert_eq!(code, 0, "{v}");
        assert_eq!(v["decision"], "buffered", "{v}");
        assert_eq!(v["tasks"][0]["task"], "changes", "{v}");
        assert!(v["tasks"][0]["why"].as_str().unwrap().contains("no task changes exists yet"), "{v}");
        let (code, _, err) = p.run(&["run", "pr", "x", "--id", "changes"]);
        assert_eq!(code, 0, "the kept event passed its wait: {err}");
        assert!(err.contains("kept since it came before this stage"), "{err}");
        assert_eq!(fs_err::read_to_string(p.root().join("after.txt")).unwrap(), "pr 2\n");
        let d = decision_of(&p, "early-1");
        assert_eq!(d["decision"], "resumed", "{d}");
        // It was used once: nothing is kept for the task any more.
        assert!(p.state("changes").get("buffered_events").is_none());

        // An ended task the event names is skipped, saying where it is.
        let (code, v) = deliver_as(&p, "late-1", "pull_request", "pull_request/opened.payload.json");
        assert_eq!(code, 0, "{v}");
        assert_eq!(v["decision"], "skipped", "{v}");
        let why = v["tasks"][0]["why"].as_str().unwrap();
        assert!(why.contains("task changes has ended (COMPLETE)"), "{v}");

        // The repository's progress record is found under any spelling.
        let (code, out, err) = p.run(&["progress", "Codertocat/Hello-World", "--json"]);
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("changes"), "{out}");
    }

    /// The delete-and-recreate of the stage model: a task removed while it
    /// waits, the event for it arriving in between, the task made again
    /// (at its stage): the event passes its wait.
    fn an_event_between_rm_and_the_task_made_again_passes_its_wait() {
        let p = pr_project();
        assert_eq!(p.run(&["run", "pr", "x", "--id", "changes"]).0, 4);
        assert_eq!(p.run(&["rm", "changes"]).0, 0);
        let (_, v) = deliver_as(&p, "between", "pull_request", "pull_request/opened.payload.json");
        assert_eq!(v["decision"], "buffered", "{v}");
        let (code, _, err) = p.run(&["run", "pr", "x", "--id", "changes"]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(fs_err::read_to_string(p.root().join("after.txt")).unwrap(), "pr 2\n");
        assert_eq!(decision_of(&p, "between")["decision"], "resumed");
    }

    /// Issue 34: a delivery that was only ignored (nothing awaited it)
    /// changed nothing; its redelivery, once a task waits for it, is
    /// handed over instead of refused as handled already.
    fn the_redelivery_of_an_ignored_delivery_is_handed_over() {
        let p = TestProject::new();
        let (code, v) = deliver_as(&p, "d-early", "pull_request", "pull_request/opened.payload.json");
        assert_eq!(code, 0, "{v}");
        assert_eq!(v["decision"], "ignored", "{v}");
        p.workflow("pr-flow", FLOW);
        fs_err::write(p.root().join("ready"), "").unwrap();
        assert_eq!(p.run(&["run", "pr-flow", "x", "--id", "changes"]).0, 4);
        let (code, v) = deliver_as(&p, "d-early", "pull_request", "pull_request/opened.payload.json");
        assert_eq!(code, 0, "{v}");
        assert_ne!(v["redelivery"], true, "{v}");
        assert_eq!(v["tasks"][0]["decision"], "resumed", "{v}");
        assert_eq!(p.state("changes")["status"], "COMPLETE");
        // Handed over now: a further redelivery changes nothing.
        let (_, v) = deliver_as(&p, "d-early", "pull_request", "pull_request/opened.payload.json");
        assert_eq!(v["redelivery"], true, "{v}");
    }
}

/// A pull request whose body names many tasks that do not exist: one
/// delivery is kept for at most 10 of them, so it never takes the room of
/// the deliveries that come after it (anyone opening a pull request
/// writes its body). A delivery id must be 1 to 200 characters.
#[test]
fn one_delivery_never_fills_the_room_kept_for_tasks_not_made_yet() {
    let p = pr_project();
    let mut payload: Value = serde_json::from_str(
        &fs_err::read_to_string(fixture("pull_request/opened.payload.json")).unwrap(),
    )
    .unwrap();
    let body: String = (0..40)
        .map(|i| format!("baton-task: ghost-{i}\n"))
        .collect();
    payload["pull_request"]["body"] = body.into();
    let file = p.root().join("many.json");
    fs_err::write(&file, payload.to_string()).unwrap();
    let (code, out, err) = p.run(&[
        "deliver",
        "pull_request",
        file.to_str().unwrap(),
        "--delivery",
        "many",
        "--branch-pattern",
        "{task-id}",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    let tasks = v["tasks"].as_array().unwrap();
    let buffered = tasks.iter().filter(|t| t["decision"] == "buffered").count();
    assert_eq!(buffered, 10, "{v}");
    assert!(
        tasks.iter().any(|t| t["why"]
            .as_str()
            .unwrap()
            .contains("more tasks that do not exist")),
        "{v}"
    );
    // A genuine early event still finds room.
    let (_, v) = deliver_as(
        &p,
        "genuine",
        "pull_request",
        "pull_request/opened.payload.json",
    );
    assert_eq!(v["decision"], "buffered", "{v}");
    for bad in [String::new(), "x".repeat(201)] {
        let (code, _, err) = p.run(&[
            "deliver",
            "pull_request",
            file.to_str().unwrap(),
            "--delivery",
            &bad,
        ]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("1 to 200 characters"), "{err}");
    }
}
