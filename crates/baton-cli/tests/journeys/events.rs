//! Journeys through webhooks and the stages that wait for them: an
//! event that comes before its stage is kept for it, never lost, never
//! resuming a task at a stage it is not at.

use baton_testkit::serve::{PR_FLOW, Server, WEBHOOK_SECRET, http};
use baton_testkit::{TestProject, on_both_backends, wait_child, wait_for};
use serde_json::Value;
use std::process::Stdio;
use std::time::Duration;

/// The pull request flow of docs/server.md, its `implementation` phase
/// held until the file `go` exists: the agent opens the pull request
/// while it still works.
const HELD_FLOW: &str = r#"name = "pr-flow"
[[phase]]
id = "implementation"
run = "while [ ! -f go ]; do sleep 0.05; done"
[[phase]]
id = "wait-pr"
wait = { event = "github.pull_request.opened", match = { "task-id" = "{{labels.task-id}}" } }
[[phase]]
id = "wait-merge"
wait = { event = "github.pull_request.closed", match = { "task-id" = "{{labels.task-id}}" }, payload = { "pull_request.merged" = true } }
[[phase]]
id = "after"
run = "echo merged {{labels.pr-number}} >> after.txt"
"#;

fn project(flow: &str, more: &str) -> TestProject {
    let p = TestProject::new();
    p.workflow("pr-flow", flow);
    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    text.push_str("\n[server]\nbranch_pattern = \"{task-id}\"\n");
    text.push_str(more);
    fs_err::write(&cfg, text).unwrap();
    p
}

fn fixture(path: &str) -> Vec<u8> {
    fs_err::read(baton_testkit::github_fixture(path)).unwrap()
}

/// GitHub's merged-PR delivery: the fixture's closed PR, merged.
fn merged() -> Vec<u8> {
    let mut v: Value =
        serde_json::from_slice(&fixture("pull_request/closed.payload.json")).unwrap();
    v["pull_request"]["merged"] = true.into();
    serde_json::to_vec(&v).unwrap()
}

fn deliver(server: &Server, event: &str, id: &str, body: &[u8]) -> (u16, Value) {
    let sig = baton_server::signature::sign(WEBHOOK_SECRET, body);
    let mut r = http()
        .post(&format!("{}/webhooks/github", server.url))
        .header("Content-Type", "application/json")
        .header("X-GitHub-Event", event)
        .header("X-GitHub-Delivery", id)
        .header("X-Hub-Signature-256", &sig)
        .send(body)
        .unwrap();
    let status = r.status().as_u16();
    (status, r.body_mut().read_json().unwrap_or(Value::Null))
}

fn delivery(p: &TestProject, id: &str) -> Value {
    wait_for(&format!("delivery {id} to be settled"), || {
        let (_, out, _) = p.run(&["deliveries", "--json"]);
        serde_json::from_str::<Vec<Value>>(&out)
            .unwrap_or_default()
            .into_iter()
            .find(|d| d["id"] == id && !d["settled_at"].is_null())
    })
}

fn status(p: &TestProject, id: &str) -> String {
    let (_, out, _) = p.run(&["show", id, "--json"]);
    serde_json::from_str::<Value>(&out).unwrap_or(Value::Null)["status"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

/// `baton run` in the background; returns when `id` runs `implementation`.
fn run_held(p: &TestProject, id: &str) -> std::process::Child {
    let child = p
        .baton(&["run", "pr-flow", "x", "--id", id])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("implementation to run", || {
        (status(p, id) == "RUNNING").then_some(())
    });
    child
}

on_both_backends! {
    /// A user's agent opens its pull request while `implementation` still runs; the webhook is kept for `wait-pr` and the task passes it on its own when it gets there.
    fn an_early_pull_request_is_kept_and_used_when_its_task_reaches_the_wait() {
        let p = project(HELD_FLOW, "");
        let mut run = run_held(&p, "changes");
        let server = Server::start(&p, &[]);
        let (code, _) = deliver(&server, "pull_request", "d-opened", &fixture("pull_request/opened.payload.json"));
        assert_eq!(code, 202);
        let d = delivery(&p, "d-opened");
        assert_eq!(d["decision"], "buffered", "{d}");
        assert_eq!(d["why"], "task changes is at implementation; kept until it waits at wait-pr");
        let doc = p.state("changes");
        assert_eq!(doc["current_phase"]["id"], "implementation", "never resumed early: {doc}");
        assert_eq!(doc["buffered_events"][0]["delivery"], "d-opened", "{doc}");
        // The dashboard's API says it too.
        let api: Value = http()
            .get(&format!("{}/api/v1/tasks/changes", server.url))
            .call()
            .unwrap()
            .body_mut()
            .read_json()
            .unwrap();
        assert_eq!(api["buffered_events"][0]["phase"], "wait-pr", "{api}");

        fs_err::write(p.root().join("go"), "").unwrap();
        // No second delivery: the runner passes wait-pr with the kept one
        // and goes on to wait for the merge.
        assert_eq!(wait_child(&mut run, "the run").code(), Some(4), "waits for the merge");
        let doc = p.state("changes");
        assert_eq!(doc["stage_results"]["wait-pr"]["delivery"], "d-opened", "{doc}");
        assert_eq!(doc["waiting"]["phase"], "wait-merge", "{doc}");
        assert!(doc.get("buffered_events").is_none(), "used up: {doc}");
        let d = delivery(&p, "d-opened");
        assert_eq!(d["decision"], "resumed", "{d}");
        assert_eq!(server.stop().code(), Some(0));
    }

    /// A user's PR is merged before its task even saw it opened; each event waits its turn: `wait-pr` passes with the opened one, then `wait-merge` with the kept merge, in order.
    fn an_event_for_a_later_wait_waits_its_turn_behind_an_earlier_one() {
        let p = project(HELD_FLOW, "");
        fs_err::write(p.root().join("go"), "").unwrap();
        assert_eq!(p.run(&["run", "pr-flow", "x", "--id", "changes"]).0, 4);
        let server = Server::start(&p, &[]);
        assert_eq!(deliver(&server, "pull_request", "d-merged", &merged()).0, 202);
        let d = delivery(&p, "d-merged");
        assert_eq!(d["decision"], "buffered", "{d}");
        assert_eq!(d["why"], "task changes is at wait-pr; kept until it waits at wait-merge");
        assert_eq!(p.state("changes")["waiting"]["phase"], "wait-pr");
        assert_eq!(deliver(&server, "pull_request", "d-opened", &fixture("pull_request/opened.payload.json")).0, 202);
        wait_for("the task to complete", || (status(&p, "changes") == "COMPLETE").then_some(()));
        let doc = p.state("changes");
        assert_eq!(doc["stage_results"]["wait-pr"]["delivery"], "d-opened", "{doc}");
        assert_eq!(doc["stage_results"]["wait-merge"]["delivery"], "d-merged", "{doc}");
        assert_eq!(fs_err::read_to_string(p.root().join("after.txt")).unwrap(), "merged 2\n");
        assert_eq!(server.stop().code(), Some(0));
    }

    /// A user's runner has just reached `wait-pr` and still holds the task when the webhook lands; the event is kept, and taken up as the runner lets go, not lost between them.
    fn a_webhook_landing_while_the_runner_lets_go_is_not_lost() {
        let p = project(HELD_FLOW, "");
        fs_err::write(p.root().join("go"), "").unwrap();
        let server = Server::start(&p, &[]);
        // The runner pauses at wait-pr, after it looked for kept events and
        // before it lets the task go: the race, played in its worst order.
        let mut run = p
            .baton(&["run", "pr-flow", "x", "--id", "changes"])
            .env("BATON_TEST_PAUSE_AT", "waited:wait-pr")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let paused = p.root().join(".baton/tasks/changes/paused-waited");
        wait_for("the runner to reach wait-pr", || paused.exists().then_some(()));
        assert_eq!(deliver(&server, "pull_request", "d-opened", &fixture("pull_request/opened.payload.json")).0, 202);
        let d = delivery(&p, "d-opened");
        assert_eq!(d["decision"], "buffered", "{d}");
        assert_eq!(d["why"], "task changes waits at wait-pr, held by its runner; kept until it lets go");
        fs_err::remove_file(&paused).unwrap();
        assert_eq!(wait_child(&mut run, "the run").code(), Some(4), "waits for the merge now");
        assert_eq!(p.state("changes")["waiting"]["phase"], "wait-merge");
        assert_eq!(delivery(&p, "d-opened")["decision"], "resumed");
        assert_eq!(server.stop().code(), Some(0));
    }

    /// A user's runner is SIGKILLed in `implementation`, the PR's webhook comes while the task is CRASHED, and `baton resume` runs `implementation` again and then passes `wait-pr` with the kept event.
    fn an_event_kept_for_a_crashed_task_is_used_by_its_resume() {
        let p = project(PR_FLOW, "");
        fs_err::write(p.root().join("ready"), "").unwrap();
        let out = p
            .baton(&["run", "pr-flow", "x", "--id", "changes"])
            .env("BATON_TEST_CRASH_AT", "before-spawn:implementation")
            .output()
            .unwrap();
        assert!(out.status.code().is_none(), "killed by its own SIGKILL");
        assert_eq!(status(&p, "changes"), "CRASHED");
        let (code, v) = deliver_cli(&p, "d-crashed", "pull_request/opened.payload.json");
        assert_eq!(code, 0, "{v}");
        assert_eq!(v["tasks"][0]["decision"], "buffered", "{v}");
        let (code, _, err) = p.run(&["resume", "changes"]);
        assert_eq!(code, 0, "{err}");
        let doc = p.state("changes");
        assert_eq!(doc["stage_results"]["wait-pr"]["delivery"], "d-crashed", "{doc}");
        assert_eq!(fs_err::read_to_string(p.root().join("after.txt")).unwrap(), "pr 2\n");
    }

    /// A user keeps early events only so long: one kept past `buffer_ttl` is gone, and the task that reaches its wait later waits for a new one.
    fn a_kept_event_expires() {
        let p = project(PR_FLOW, "buffer_ttl = \"1s\"\n");
        assert_eq!(p.run(&["run", "pr-flow", "x", "--id", "changes"]).0, 1);
        let (_, v) = deliver_cli(&p, "d-old", "pull_request/opened.payload.json");
        assert_eq!(v["tasks"][0]["decision"], "buffered", "{v}");
        assert!(p.state("changes")["buffered_events"].is_array());
        std::thread::sleep(Duration::from_millis(1200));
        assert!(p.state("changes").get("buffered_events").is_none(), "expired");
        fs_err::write(p.root().join("ready"), "").unwrap();
        let (code, _, err) = p.run(&["resume", "changes"]);
        assert_eq!(code, 4, "it waits for a new event: {err}");
        assert_eq!(p.state("changes")["waiting"]["phase"], "wait-pr");
    }

    /// A user cancels a task that had an event kept for it; the event goes with the task, and the same PR's later event changes nothing, saying why.
    fn a_cancelled_task_takes_its_kept_events_with_it() {
        let p = project(PR_FLOW, "");
        assert_eq!(p.run(&["run", "pr-flow", "x", "--id", "changes"]).0, 1);
        let (_, v) = deliver_cli(&p, "d-1", "pull_request/opened.payload.json");
        assert_eq!(v["tasks"][0]["decision"], "buffered", "{v}");
        assert_eq!(p.run(&["cancel", "changes"]).0, 0);
        assert!(p.state("changes").get("buffered_events").is_none());
        let (code, v) = deliver_cli_body(&p, "d-2", &[fixture("pull_request/opened.payload.json").as_slice(), b"\n"].concat());
        assert_eq!(code, 0);
        // Skipped, saying which task and where it is (issue 34: it was
        // "ignored: no task waits").
        assert_eq!(v["decision"], "skipped", "{v}");
        assert_eq!(v["tasks"][0]["why"], "task changes has ended (CANCELLED), this event is for wait-pr", "{v}");
        assert_eq!(p.state("changes")["status"], "CANCELLED");
    }
}

/// A user's bot approval comes from the wrong reviewer; `baton deliveries` says which condition was not met, not that no task waits.
#[test]
fn an_approval_by_the_wrong_reviewer_says_why_it_was_skipped() {
    let p = project(
        r#"name = "pr-flow"
[[phase]]
id = "wait-approval"
wait = { event = "github.pull_request_review.submitted", match = { "task-id" = "{{labels.task-id}}" }, payload = { "review.state" = "approved", "review.user.login" = "cleo[bot]" } }
"#,
        "",
    );
    assert_eq!(p.run(&["run", "pr-flow", "x", "--id", "changes"]).0, 4);
    let mut review: Value =
        serde_json::from_slice(&fixture("pull_request_review/submitted.payload.json")).unwrap();
    review["review"]["state"] = "approved".into();
    let file = p.root().join("review.json");
    fs_err::write(&file, serde_json::to_vec(&review).unwrap()).unwrap();
    let (code, out, err) = p.run(&[
        "deliver",
        "pull_request_review",
        file.to_str().unwrap(),
        "--delivery",
        "d-review",
        "--branch-pattern",
        "{task-id}",
    ]);
    assert_eq!(code, 0, "{err}");
    let want = "task changes waits at wait-approval for github.pull_request_review.submitted, but review.user.login is \"Codertocat\", not \"cleo[bot]\"";
    assert!(out.contains(want), "{out}");
    let (_, out, _) = p.run(&["deliveries"]);
    assert!(out.contains(&format!("skipped: {want}")), "{out}");
    assert!(!out.contains("skipped: skipped"), "{out}");
    assert!(!out.contains("no task waits"), "{out}");
    assert_eq!(p.state("changes")["status"], "WAITING");
}

fn deliver_cli(p: &TestProject, id: &str, fixture_path: &str) -> (i32, Value) {
    deliver_cli_body(p, id, &fixture(fixture_path))
}

fn deliver_cli_body(p: &TestProject, id: &str, body: &[u8]) -> (i32, Value) {
    let file = p.root().join(format!("{id}.json"));
    fs_err::write(&file, body).unwrap();
    let (code, out, err) = p.run(&[
        "deliver",
        "pull_request",
        file.to_str().unwrap(),
        "--delivery",
        id,
        "--branch-pattern",
        "{task-id}",
        "--json",
    ]);
    (
        code,
        serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}\n{err}")),
    )
}
