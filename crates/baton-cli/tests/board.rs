//! The board's API, against a real `baton serve`: a task started from a
//! workflow picked with its flags, its human wait answered through the
//! inbox, what its work changed (and only its work) as it goes, an agent
//! instance's diff with committed and uncommitted work, the teams; every
//! refusal with its code and hint, and nothing created by a refused or
//! cross-origin request.

mod common;

use baton_testkit::serve::{Server, TOKEN, http as agent};
use baton_testkit::{TestProject, on_both_backends, wait_for};
use serde_json::{Value, json};

/// Edits a file, asks a person, then edits again and removes one.
const EDIT: &str = r#"name = "edit"
description = "Edits a.txt, asks, and tidies up"
[flags]
loud = false
[[phase]]
id = "first"
run = "echo one > a.txt"
[[phase]]
id = "approve"
wait = { human = "Go on?", options = ["yes", "no"] }
[[phase]]
id = "second"
run = "echo two >> a.txt && rm gone.txt"
"#;

struct Api<'a> {
    server: &'a Server,
    token: Option<&'a str>,
}

impl Api<'_> {
    fn get(&self, path: &str) -> (u16, Value) {
        let mut req = agent().get(&format!("{}{path}", self.server.url));
        if let Some(t) = self.token {
            req = req.header("Authorization", &format!("Bearer {t}"));
        }
        let mut r = req.call().unwrap();
        let status = r.status().as_u16();
        (status, r.body_mut().read_json().unwrap_or(Value::Null))
    }

    fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.post_from(path, body, None)
    }

    fn post_from(&self, path: &str, body: Value, origin: Option<&str>) -> (u16, Value) {
        let mut req = agent().post(&format!("{}{path}", self.server.url));
        if let Some(t) = self.token {
            req = req.header("Authorization", &format!("Bearer {t}"));
        }
        if let Some(o) = origin {
            req = req.header("Origin", o);
        }
        let mut r = req.send_json(body).unwrap();
        let status = r.status().as_u16();
        (status, r.body_mut().read_json().unwrap_or(Value::Null))
    }
}

fn project() -> TestProject {
    let p = TestProject::new();
    p.workflow("edit", EDIT);
    fs_err::write(p.root().join("gone.txt"), "old\n").unwrap();
    fs_err::write(p.root().join(".git/info/exclude"), "serve-*.log\n").unwrap();
    p.git(&["add", "gone.txt"]);
    p.git(&["commit", "-qm", "a file to remove"]);
    p
}

/// `(path, change, added, removed)` of each file in a diff, by path.
fn files(diff: &Value) -> Vec<(String, String, Value, Value)> {
    let mut v: Vec<_> = diff["files"]
        .as_array()
        .unwrap_or_else(|| panic!("no files in {diff}"))
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_string(),
                f["change"].as_str().unwrap().to_string(),
                f["added"].clone(),
                f["removed"].clone(),
            )
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

fn file(path: &str, change: &str, added: u64, removed: u64) -> (String, String, Value, Value) {
    (path.into(), change.into(), json!(added), json!(removed))
}

on_both_backends! {
    /// A person picks a workflow, starts a task from the board, answers
    /// its question in the inbox and follows what its work changed; a
    /// person's own uncommitted file in the project is never counted as
    /// the task's work.
    fn a_task_started_from_the_board_is_answered_in_the_inbox_and_its_diff_is_its_own_work() {
        let p = project();
        fs_err::write(p.root().join("mine.txt"), "a person's draft\n").unwrap();
        let server = Server::start(&p, &[("BATON_SERVER_TOKEN", TOKEN)]);
        let api = Api { server: &server, token: Some(TOKEN) };

        let (status, v) = api.get("/api/v1/workflows");
        assert_eq!(status, 200, "{v}");
        let edit = v.as_array().unwrap().iter().find(|w| w["name"] == "edit").unwrap_or_else(|| panic!("{v}"));
        assert_eq!(edit["description"], "Edits a.txt, asks, and tidies up");
        assert_eq!(edit["flags"], json!({"loud": false}));
        assert_eq!(edit["phases"], json!(["first", "approve", "second"]));

        let (status, v) = api.post("/api/v1/tasks", json!({"workflow": "edit", "description": "tidy", "id": "e1", "flags": ["loud=true"]}));
        assert_eq!(status, 201, "{v}");
        assert_eq!((v["id"].as_str(), v["status"].as_str()), (Some("e1"), Some("RUNNING")));
        wait_for("the task to wait for a person", || (p.state("e1")["status"] == "WAITING").then_some(()));
        assert_eq!(p.state("e1")["flags"]["loud"], true, "{}", p.state("e1"));

        let (status, diff) = api.get("/api/v1/tasks/e1/diff");
        assert_eq!(status, 200, "{diff}");
        assert!(diff["base"].as_str().is_some_and(|b| b.len() == 40), "{diff}");
        assert_eq!(files(&diff), [file("a.txt", "added", 1, 0)], "{diff}");
        assert!(diff["patch"].as_str().unwrap().contains("+one"), "{diff}");
        assert_eq!(diff["truncated"], false);

        let (status, items) = api.get("/api/v1/inbox");
        assert_eq!(status, 200, "{items}");
        let item = items.as_array().unwrap().iter().find(|i| i["id"] == "e1/approve").unwrap_or_else(|| panic!("{items}"));
        assert_eq!(item["text"], "Go on?");
        assert_eq!(item["options"], json!(["yes", "no"]));
        let (status, v) = api.post("/api/v1/inbox/e1%2Fapprove/answer", json!({"answer": "maybe"}));
        assert_eq!((status, v["code"].as_str()), (400, Some("BAD_ANSWER")), "{v}");
        assert!(v["message"].as_str().unwrap().contains("yes, no"), "{v}");
        let (status, v) = api.post("/api/v1/inbox/e1%2Fapprove/answer", json!({"answer": "yes", "by": "ana"}));
        assert_eq!(status, 202, "{v}");
        assert_eq!((v["task"].as_str(), v["item"]["answer"]["choice"].as_str()), (Some("e1"), Some("yes")), "{v}");
        wait_for("the task to complete", || (p.state("e1")["status"] == "COMPLETE").then_some(()));
        let (status, v) = api.post("/api/v1/inbox/e1%2Fapprove/answer", json!({"answer": "no"}));
        assert_eq!((status, v["code"].as_str()), (404, Some("ITEM_NOT_FOUND")), "{v}");

        // The person edits on after the task ended: the task's diff stays
        // what its phases did.
        fs_err::write(p.root().join("a.txt"), "a person's edit\n").unwrap();
        let (_, diff) = api.get("/api/v1/tasks/e1/diff");
        assert_eq!(
            files(&diff),
            [file("a.txt", "added", 2, 0), file("gone.txt", "deleted", 0, 1)],
            "{diff}"
        );
        assert_ne!(diff["head"], "worktree", "{diff}");
        assert!(p.root().join("mine.txt").is_file());
        assert_eq!(server.stop().code(), Some(0));
    }

    /// What cannot be started is refused with a code, what was wrong and
    /// what to do, and creates nothing: an unknown workflow, a field the
    /// API does not take, an undeclared flag, no token, another origin.
    fn a_task_the_board_cannot_start_is_refused_and_nothing_is_created() {
        let p = project();
        let server = Server::start(&p, &[("BATON_SERVER_TOKEN", TOKEN)]);
        let api = Api { server: &server, token: Some(TOKEN) };
        let (status, v) = api.post("/api/v1/tasks", json!({"workflow": "nope", "description": "x"}));
        assert_eq!((status, v["code"].as_str()), (400, Some("BAD_INPUT")), "{v}");
        assert!(v["message"].as_str().unwrap().contains("no workflow \"nope\""), "{v}");
        assert!(v["hint"].as_str().unwrap().contains("edit"), "{v}");
        let (status, v) = api.post("/api/v1/tasks", json!({"workflow": "edit", "needz": ["a"]}));
        assert_eq!((status, v["code"].as_str()), (400, Some("BAD_BODY")), "{v}");
        assert!(v["message"].as_str().unwrap().contains("needz"), "{v}");
        let (status, v) = api.post("/api/v1/tasks", json!({"workflow": "edit", "flags": ["fast=true"]}));
        assert_eq!(status, 400, "{v}");
        assert!(v["message"].as_str().unwrap().contains("fast"), "{v}");
        let anonymous = Api { server: &server, token: None };
        let (status, v) = anonymous.post("/api/v1/tasks", json!({"workflow": "edit", "id": "sneaky"}));
        assert_eq!((status, v["code"].as_str()), (401, Some("UNAUTHORIZED")), "{v}");
        let (status, v) = api.post_from("/api/v1/tasks", json!({"workflow": "edit", "id": "forged"}), Some("http://evil.example"));
        assert_eq!(status, 403, "{v}");
        let (_, tasks) = api.get("/api/v1/tasks");
        assert_eq!(tasks, json!([]), "a refused request created a task");
        let (status, v) = api.get("/api/v1/tasks/nope/diff");
        assert_eq!((status, v["code"].as_str()), (404, Some("TASK_NOT_FOUND")), "{v}");
        let (status, v) = api.post("/api/v1/inbox/d-00000000/answer", json!({"answer": "yes"}));
        assert_eq!((status, v["code"].as_str()), (404, Some("ITEM_NOT_FOUND")), "{v}");
        let (_, doc) = api.get("/api/v1/openapi.json");
        for path in ["/api/v1/workflows", "/api/v1/tasks/{id}/diff", "/api/v1/instances/{id}/diff", "/api/v1/inbox", "/api/v1/inbox/{id}/answer", "/api/v1/teams", "/api/v1/teams/{name}"] {
            assert!(doc["paths"].get(path).is_some(), "{path} is not documented");
        }
        assert!(doc["paths"]["/api/v1/tasks"]["post"].is_object(), "POST /api/v1/tasks is not documented");
        assert!(doc["components"]["schemas"]["NewTask"].is_object());
        assert_eq!(server.stop().code(), Some(0));
    }

    /// A queued task from the board waits for a worker, in a worktree of
    /// its own.
    fn a_task_queued_from_the_board_waits_for_a_worker() {
        let p = project();
        let server = Server::start(&p, &[]);
        let api = Api { server: &server, token: None };
        let (status, v) = api.post("/api/v1/tasks", json!({"workflow": "edit", "id": "q1", "queue": true}));
        assert_eq!(status, 201, "{v}");
        assert_eq!(v["status"], "QUEUED");
        let (_, rows) = api.get("/api/v1/tasks?status=queued");
        assert_eq!(rows[0]["id"], "q1", "{rows}");
        assert!(!p.git(&["branch", "--list", "baton/q1"]).trim().is_empty());
        assert_eq!(server.stop().code(), Some(0));
    }

    /// An agent instance's diff holds its work, committed on its branch
    /// or left in its worktree; a missing instance is 404.
    fn an_instance_diff_shows_committed_and_uncommitted_work() {
        let (p, _remote) = common::instances::project();
        common::instances::ok(&p, &["agent", "spawn", "commit it", "--id", "c1", "--agent", "committer"]);
        common::instances::ok(&p, &["agent", "spawn", "draft it", "--id", "c2", "--agent", "dirty"]);
        common::instances::settled(&p, "c1");
        common::instances::settled(&p, "c2");
        let server = Server::start(&p, &[]);
        let api = Api { server: &server, token: None };
        let (status, diff) = api.get("/api/v1/instances/c1/diff");
        assert_eq!(status, 200, "{diff}");
        assert_eq!(files(&diff), [file("mine.txt", "added", 1, 0)], "{diff}");
        assert!(diff["patch"].as_str().unwrap().contains("+mine of c1"), "{diff}");
        let (_, diff) = api.get("/api/v1/instances/c2/diff");
        assert_eq!(files(&diff), [file("draft.txt", "added", 1, 0)], "{diff}");
        let (status, v) = api.get("/api/v1/instances/c9/diff");
        assert_eq!(status, 404, "{v}");
        assert_eq!(server.stop().code(), Some(0));
    }

    /// The teams, and one team with its members, tasks and mailbox.
    fn the_teams_are_read_with_their_members_tasks_and_mailbox() {
        let p = project();
        baton_testkit::teams::ok(&p, 0, &["create", "crew", "--teammate", "ana:engineer", "--task", "fix the build"]);
        baton_testkit::teams::ok(&p, 1, &["msg", "send", "crew", "--to", "lead", "the build is red", "--as", "ana"]);
        let server = Server::start(&p, &[]);
        let api = Api { server: &server, token: None };
        let (status, v) = api.get("/api/v1/teams");
        assert_eq!(status, 200, "{v}");
        assert_eq!(v[0]["id"], "crew", "{v}");
        let (status, v) = api.get("/api/v1/teams/crew");
        assert_eq!(status, 200, "{v}");
        assert!(v["team"]["teammates"]["ana"].is_object(), "{v}");
        assert_eq!(v["team"]["tasks"].as_array().unwrap().len(), 1, "{v}");
        assert!(v["messages"].to_string().contains("the build is red"), "{v}");
        let (status, v) = api.get("/api/v1/teams/nope");
        assert_eq!((status, v["code"].as_str()), (404, Some("TEAM_NOT_FOUND")), "{v}");
        assert_eq!(server.stop().code(), Some(0));
    }
}

/// axe-core finds no serious or critical violation in the page as it is.
fn accessible(b: &baton_testkit::browser::Browser, view: &str) {
    let found = b.serious_accessibility_violations();
    assert!(found.is_empty(), "{view}: {found:#?}");
}

/// A first phase that writes a file whose name and text are markup.
const HOSTILE: &str = r#"name = "hostile"
description = "Writes markup into a file"
[[phase]]
id = "write"
run = "printf '%s\n' '<img src=x id=injected>' > 'evil<b>.txt'"
[[phase]]
id = "approve"
wait = { human = "Ship <i>it</i>?", options = ["yes", "no"] }
"#;

/// In headless Chromium: a person starts a task from the board's form
/// (workflow, its flag, what to do), sees its card move to "waiting on a
/// person", the question in the inbox, the card's page with its phases
/// and the diff of its work (markup in a file's name and text shown as
/// text, never obeyed), answers on the card, and sees it done.
#[test]
fn a_person_starts_answers_and_reviews_a_task_on_the_board() {
    let p = project();
    p.workflow("hostile", HOSTILE);
    let server = Server::start(&p, &[]);
    let b = baton_testkit::browser::Browser::start(1400, 900);
    b.goto(&format!("{}/board", server.url));
    b.wait_text("#live", "live", 30);
    b.wait_text("[data-column=person] .count", "0", 10);

    b.click("#new-task-open");
    b.wait_text("#nt-workflow", "edit", 10);
    b.click("#nt-workflow option[value=edit]");
    b.wait_text("#nt-workflow-about", "phases: first, approve, second", 10);
    accessible(&b, "the new-task form");
    b.click("#nt-flag-loud");
    b.type_into("#nt-description", "tidy the docs");
    b.click("#new-task-start");
    b.wait_text("#card-question", "Go on?", 30);
    b.wait_text("[data-column=person]", "tidy the docs", 30);
    b.wait_text("#inbox", "Go on?", 10);
    b.wait_text("#card-diff", "a.txt", 30);
    accessible(&b, "a card's page with its diff");
    let shot = b.screenshot();
    assert!(shot.starts_with(b"\x89PNG"), "a PNG");
    if let Some(path) = std::env::var_os("BATON_BOARD_SCREENSHOT") {
        fs_err::write(path, &shot).unwrap();
    }
    let id = b.text("[data-column=person] [data-task]").unwrap();
    assert!(id.contains("tidy the docs"), "{id}");
    let task = b
        .js(
            "return document.querySelector('[data-column=person] [data-task]').dataset.task;",
            json!([]),
        )
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(p.state(&task)["flags"]["loud"], true);
    b.click("#card-question button[data-answer=yes]");
    b.wait_text("[data-column=done]", "tidy the docs", 30);
    assert_eq!(p.state(&task)["status"], "COMPLETE");
    b.click("#card-close");
    accessible(&b, "the board");
    b.goto(&server.url);
    b.wait_text(
        &format!(r#"tr[data-task="{task}"] td.status"#),
        "COMPLETE",
        30,
    );
    b.click(&format!(r#"tr[data-task="{task}"]"#));
    b.wait_text("#detail-body .title", &task, 10);
    accessible(&b, "the task list with a task's phases");
    b.goto(&format!("{}/board", server.url));
    b.wait_text("#live", "live", 30);

    // Markup a task wrote is text on the board, in its card and its diff.
    let (status, v) = Api {
        server: &server,
        token: None,
    }
    .post(
        "/api/v1/tasks",
        json!({"workflow": "hostile", "id": "h1", "description": "<img src=y id=injected2>"}),
    );
    assert_eq!(status, 201, "{v}");
    b.wait_text("[data-column=person]", "<img src=y id=injected2>", 30);
    b.click(r#"[data-task="h1"]"#);
    b.wait_text("#card-question", "Ship <i>it</i>?", 30);
    b.wait_text("#card-diff", "evil<b>.txt", 30);
    b.wait_text("#card-diff", "<img src=x id=injected>", 10);
    assert_eq!(
        b.js("return document.querySelectorAll('#injected, #injected2, #card-diff b, #card-question i').length;", json!([])),
        json!(0),
        "markup from a task was obeyed"
    );
    assert_eq!(server.stop().code(), Some(0));
}
