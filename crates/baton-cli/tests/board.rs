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
        let (status, v) = anonymous.get("/api/v1/activity");
        assert_eq!((status, v["code"].as_str()), (401, Some("UNAUTHORIZED")), "what runs is not told to anyone: {v}");
        let (status, v) = anonymous.post("/api/v1/links/x/cancel", json!({}));
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
        for path in ["/api/v1/workflows", "/api/v1/tasks/{id}/diff", "/api/v1/instances/{id}/diff", "/api/v1/inbox", "/api/v1/inbox/{id}/answer", "/api/v1/teams", "/api/v1/teams/{name}", "/api/v1/activity", "/api/v1/links", "/api/v1/links/{id}/cancel"] {
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
        let members = v["members"].as_array().unwrap();
        assert_eq!(members[0]["role"], "lead", "{v}");
        let ana = members.iter().find(|m| m["name"] == "ana").unwrap_or_else(|| panic!("{v}"));
        assert!(ana["liveness"].is_string(), "{v}");
        assert!(!ana["last_seen"].is_null(), "ana sent a message: {v}");
        let (status, v) = api.get("/api/v1/teams/nope");
        assert_eq!((status, v["code"].as_str()), (404, Some("TEAM_NOT_FOUND")), "{v}");
        assert_eq!(server.stop().code(), Some(0));
    }
}

/// The picture of a view for the docs, when `BATON_BOARD_SCREENSHOTS`
/// names a folder (docs/ is made this way); a PNG either way.
fn picture(b: &baton_testkit::browser::Browser, name: &str) {
    let shot = b.screenshot();
    assert!(shot.starts_with(b"\x89PNG"), "a PNG");
    if let Some(dir) = std::env::var_os("BATON_BOARD_SCREENSHOTS") {
        fs_err::write(std::path::Path::new(&dir).join(name), &shot).unwrap();
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
    p.workflow("after", AFTER);
    baton_testkit::teams::ok(
        &p,
        0,
        &[
            "create",
            "crew",
            "--teammate",
            "ana:engineer",
            "--task",
            "fix the build",
        ],
    );
    p.workflow("hostile", HOSTILE);
    let server = Server::start(&p, &[]);
    let b = baton_testkit::browser::Browser::start(1400, 900);
    b.goto(&server.url);
    b.wait_text("#live", "live", 30);
    b.wait_text("[data-column=person] .count", "0", 10);

    b.click("#new-task-open");
    b.wait_text("#nt-workflow", "edit", 10);
    b.click("#nt-workflow option[value=edit]");
    b.wait_text("#nt-workflow-about", "phases: first, approve, second", 10);
    accessible(&b, "the new-task form");
    picture(&b, "board-new-task.png");
    b.click("#nt-flag-loud");
    b.type_into("#nt-description", "tidy the docs");
    b.click("#new-task-start");
    b.wait_text("#card-question", "Go on?", 30);
    b.wait_text("[data-column=person]", "tidy the docs", 30);
    b.wait_text("#inbox", "Go on?", 10);
    b.wait_text("#card-diff", "a.txt", 30);
    // A comment on the diff's line, for the next phase.
    b.click("#card-diff td.d2h-code-linenumber.d2h-ins");
    assert_eq!(
        b.js("return [document.getElementById('cm-path').value, document.getElementById('cm-line').value];", json!([])),
        json!(["a.txt", "1"])
    );
    b.type_into("#cm-body", "say two, not one");
    b.click("#cm-send");
    b.wait_text("#card-comments", "say two, not one", 10);
    b.wait_text("#card-comments", "waiting for the agent's next step", 10);
    accessible(&b, "a card's page with its diff");
    picture(&b, "board-card.png");
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
    // A second task linked to it: it waits, then starts by itself.
    b.click("#card-close");
    b.click("#new-task-open");
    b.wait_text("#nt-workflow", "after", 10);
    b.click("#nt-workflow option[value=after]");
    b.type_into("#nt-description", "after the docs");
    b.type_into("#nt-needs", &task);
    b.click("#new-task-start");
    b.wait_text("[data-column=queued]", "after the docs", 30);
    b.wait_text("[data-column=queued]", &format!("after {task}"), 10);
    picture(&b, "dashboard.png");
    // Another linked to it, cancelled from its card (asked first): it
    // never starts, and says who cancelled it.
    b.click("#new-task-open");
    b.wait_text("#nt-workflow", "after", 10);
    b.click("#nt-workflow option[value=after]");
    b.type_into("#nt-description", "not needed after all");
    b.type_into("#nt-needs", &task);
    b.click("#new-task-start");
    b.wait_text("[data-column=queued]", "not needed after all", 30);
    let second = b
        .js(
            "return [...document.querySelectorAll('[data-column=queued] [data-link]')].find((c) => c.textContent.includes('not needed')).dataset.link;",
            json!([]),
        )
        .as_str()
        .unwrap()
        .to_string();
    b.click(&format!(r#"[data-cancel-link="{second}"]"#));
    assert!(
        b.dialog_text(10)
            .contains(&format!("Cancel linked task {second}?"))
    );
    b.answer_dialog(true);
    b.wait_text(
        &format!(r#"[data-column=done] [data-link="{second}"]"#),
        "cancelled by board",
        30,
    );
    b.click(&format!(r#"[data-task="{task}"]"#));
    b.wait_text("#card-question", "Go on?", 30);
    b.click("#card-question button[data-answer=yes]");
    b.wait_text("[data-column=done]", "tidy the docs", 30);
    b.wait_text("[data-column=done]", "after the docs", 30);
    assert_eq!(p.state(&task)["status"], "COMPLETE");
    assert_eq!(
        fs_err::read_to_string(p.root().join("after.txt")).unwrap(),
        "after\n",
        "the cancelled link never ran"
    );
    assert!(
        p.run(&["show", &second, "--json"]).0 != 0,
        "{second} was started"
    );
    let brief =
        fs_err::read_to_string(p.root().join(format!(".baton/tasks/{task}/brief.md"))).unwrap();
    assert!(
        brief.contains("- `a.txt` line 1 (board): say two, not one"),
        "{brief}"
    );
    b.wait_text("#card-comments", "reached the agent in", 30);
    b.wait_text("#card-log", "[!user] board commented on a.txt:1", 30);
    b.click("#card-close");
    accessible(&b, "the board");
    b.click(r#"nav a[href="/tasks"]"#);
    b.wait_text(
        &format!(r#"tr[data-task="{task}"] td.status"#),
        "COMPLETE",
        30,
    );
    b.click(&format!(r#"tr[data-task="{task}"]"#));
    b.wait_text("#detail-body .title", &task, 10);
    accessible(&b, "the task list with a task's phases");
    b.goto(&server.url);
    b.wait_text("#live", "live", 30);
    // The team's own page: members with their liveness, tasks, mailbox.
    b.wait_text("#teams", "crew", 10);
    b.click("[data-team=crew] button");
    b.wait_text("#team-members", "ana", 10);
    b.wait_text("#team-tasks", "fix the build", 10);
    accessible(&b, "a team's page");
    picture(&b, "board-team.png");
    b.click("#team-close");

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

    // Answered from the inbox beside the board.
    b.click("#card-close");
    b.click(r#"#inbox li[data-item="h1/approve"] button[data-answer="no"]"#);
    wait_for("the answer to pass the wait", || {
        (p.state("h1")["status"] == "COMPLETE").then_some(())
    });
    let (_, journal, _) = p.run(&["log", "h1", "--json"]);
    assert!(
        journal.contains("\"board\""),
        "who answered is journaled: {journal}"
    );
    b.wait_text("#inbox", "Nothing waits for you.", 30);
    assert_eq!(server.stop().code(), Some(0));
}

/// An agent that works (commits `work.txt`), and on a feedback turn
/// writes the file the feedback names ("please write tests.txt").
fn worker_agent() -> String {
    let commit = "git add -A && git -c user.email=a@a -c user.name=agent commit --allow-empty -qm";
    format!(
        "[agents.worker]\ncommand = [\"sh\", \"-c\", '''prompt=$(cat \"$1\"); case \"$prompt\" in *\"reviewer's feedback\"*) f=$(printf '%s' \"$prompt\" | sed -n 's/.*please write \\([a-z.]*\\).*/\\1/p' | head -n1); echo \"$prompt\" > \"$f\"; {commit} \"wrote $f\";; *) echo work > work.txt; {commit} work;; esac''', \"agent\", \"{{{{prompt_file}}}}\"]\n"
    )
}

/// A project with the scripted agents and `worker`.
fn instances_project() -> (TestProject, tempfile::TempDir) {
    let (p, remote) = common::instances::project();
    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    text.push_str(&worker_agent());
    fs_err::write(&cfg, text).unwrap();
    (p, remote)
}

/// In headless Chromium: a person starts an agent from the board, sees
/// its work in its card's diff, asks for a review, and merges the review
/// back with feedback that reaches the coding agent as its next turn.
#[test]
fn a_person_starts_an_agent_and_sends_review_feedback_from_the_board() {
    use common::instances::{settled, show, worktree};
    let github = baton_testkit::github::FakeGitHub::start(0, &[]);
    let (p, _remote) = instances_project();
    let cfg = p.root().join(".baton/config.toml");
    let text = fs_err::read_to_string(&cfg).unwrap();
    fs_err::write(
        &cfg,
        format!(
            "{text}\n[github]\napi_url = \"{}\"\nrepository = \"acme/widgets\"\n",
            github.url
        ),
    )
    .unwrap();
    let server = Server::start(&p, &[("GITHUB_TOKEN", "test-token")]);
    let b = baton_testkit::browser::Browser::start(1400, 900);
    b.goto(&server.url);
    b.wait_text("#live", "live", 30);
    b.click("#new-agent-open");
    b.wait_text("#na-agent", "worker", 10);
    b.click("#na-agent option[value=worker]");
    b.type_into("#na-instructions", "Add the widget");
    accessible(&b, "the new-agent form");
    b.click("#new-agent-start");
    b.wait_text("#card-title", "Agent instance", 30);
    let id = b
        .js("return document.getElementById('card-title').textContent.replace('Agent instance ', '');", json!([]))
        .as_str()
        .unwrap()
        .to_string();
    settled(&p, &id);
    b.wait_text("#card-diff", "work.txt", 30);
    b.wait_text("#card-actions", "Request review", 30);
    accessible(&b, "an agent's card");
    b.click("#card-review");
    b.wait_text("#card-title", &format!("{id}-r"), 30);
    let review = b
        .js("return document.getElementById('card-title').textContent.replace('Agent instance ', '');", json!([]))
        .as_str()
        .unwrap()
        .to_string();
    settled(&p, &review);
    b.type_into("#card-feedback", "please write tests.txt");
    b.click("#card-merge-back");
    let c = wait_for("the feedback turn", || {
        let v = settled(&p, &id);
        (v["turns"].as_array()?.len() == 2).then_some(v)
    });
    assert_eq!(c["turn"]["status"], "COMPLETE", "{c}");
    let wt = worktree(&show(&p, &id));
    let log = std::process::Command::new("git")
        .args(["log", "--format=%s"])
        .current_dir(&wt)
        .output()
        .unwrap();
    let tests = fs_err::read_to_string(wt.join("tests.txt"))
        .unwrap_or_else(|e| panic!("{e}: {c} {}", String::from_utf8_lossy(&log.stdout)));
    assert!(tests.contains("please write tests.txt"), "{tests}");
    b.wait_text(&format!(r#"[data-instance="{id}"]"#), "2 turn(s)", 30);

    // Its pull request, opened from its card against a GitHub API that
    // checks each request against GitHub's OpenAPI description.
    b.click("#card-close");
    b.click(&format!(r#"[data-instance="{id}"]"#));
    b.wait_text("#card-actions", "Push and open pull request", 30);
    b.click("#card-push");
    b.wait_text("#card-body", "pull request #1", 30);
    let creates: Vec<Value> = github
        .requests()
        .into_iter()
        .filter(|r| r["method"] == "POST")
        .collect();
    assert_eq!(creates.len(), 1, "{creates:?}");
    assert_eq!(creates[0]["body"]["head"], format!("baton/{id}"));
    assert!(
        creates[0]["problems"].as_array().unwrap().is_empty(),
        "{creates:?}"
    );
    assert_eq!(show(&p, &id)["status"], "pr_created");
    assert_eq!(server.stop().code(), Some(0));
}

/// In headless Chromium: an agent instance's card shows what its running
/// turn printed last, as it prints it; its page lists its turns and
/// streams the running turn's output, with its session log.
#[test]
fn an_agents_card_shows_what_its_running_turn_prints() {
    let (p, _remote) = instances_project();
    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    text.push_str("[agents.talker]\ncommand = [\"sh\", \"-c\", \"for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo step-$i; sleep 0.5; done\"]\n");
    fs_err::write(&cfg, text).unwrap();
    let server = Server::start(&p, &[]);
    let api = Api {
        server: &server,
        token: None,
    };
    let b = baton_testkit::browser::Browser::start(1400, 900);
    b.goto(&server.url);
    b.wait_text("#live", "live", 30);
    let (status, v) = api.post(
        "/api/v1/instances",
        json!({"instructions": "Talk", "id": "k1", "agent": "talker", "require_review": false}),
    );
    assert_eq!(status, 201, "{v}");
    b.wait_text(r#"[data-instance="k1"] .latest"#, "step-", 30);
    let first = b.text(r#"[data-instance="k1"] .latest"#).unwrap();
    // And it moves on as the turn prints.
    wait_for("the card's line to move on", || {
        let now = b.text(r#"[data-instance="k1"] .latest"#)?;
        (now.starts_with("step-") && now != first).then_some(())
    });
    assert!(
        b.text(r#"[data-column=running]"#).unwrap().contains("k1"),
        "it is among the running cards"
    );
    b.click(r#"[data-instance="k1"]"#);
    b.wait_text(r#"#card-turns [data-turn="k1"]"#, "RUNNING", 10);
    b.wait_text("#card-output", "step-", 10);
    let early = b.text("#card-output").unwrap();
    assert!(!early.contains("step-12"), "streamed as printed: {early}");
    b.wait_text("#card-log", "session_id: k1", 10);
    accessible(&b, "an agent's page while its turn runs");
    common::instances::settled(&p, "k1");
    b.wait_text("#card-output", "step-12", 30);
    b.wait_text(r#"#card-turns [data-turn="k1"]"#, "COMPLETE", 30);
    b.wait_text("#card-log", "status: completed", 30);
    assert_eq!(server.stop().code(), Some(0));
}

/// The board drives an agent instance as `baton agent …` does: started,
/// its work reviewed, the review merged back with feedback that reaches
/// the agent as its next turn, its pull request opened against a GitHub
/// API that checks every request against GitHub's OpenAPI description;
/// another ended while its worktree holds work, which is kept.
#[test]
fn the_board_drives_an_instance_from_its_start_to_its_pull_request() {
    use common::instances::settled;
    let github = baton_testkit::github::FakeGitHub::start(0, &[]);
    let (p, _remote) = instances_project();
    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    text.push_str(&format!(
        "\n[github]\napi_url = \"{}\"\nrepository = \"acme/widgets\"\n",
        github.url
    ));
    fs_err::write(&cfg, text).unwrap();
    let server = Server::start(&p, &[("GITHUB_TOKEN", "test-token")]);
    let api = Api {
        server: &server,
        token: None,
    };

    let (status, v) = api.post("/api/v1/instances", json!({"instructions": " "}));
    assert_eq!(
        (status, v["code"].as_str()),
        (400, Some("WORKFLOW_INVALID_CONFIGURATION")),
        "{v}"
    );
    let (status, v) = api.post("/api/v1/instances", json!({"instructions": "Add the widget", "id": "c1", "agent": "worker", "require_review": false}));
    assert_eq!(status, 201, "{v}");
    assert_eq!(
        (v["id"].as_str(), v["kind"].as_str()),
        (Some("c1"), Some("coding")),
        "{v}"
    );
    settled(&p, "c1");
    let (_, diff) = api.get("/api/v1/instances/c1/diff");
    assert_eq!(files(&diff), [file("work.txt", "added", 1, 0)], "{diff}");

    let (status, r) = api.post("/api/v1/instances/c1/review", json!({"agent": "idle"}));
    assert_eq!(status, 201, "{r}");
    let review = r["id"].as_str().unwrap().to_string();
    assert_eq!(r["kind"], "review");
    settled(&p, &review);
    let (status, v) = api.post(
        &format!("/api/v1/instances/{review}/merge-back"),
        json!({"feedback": "please write tests.txt"}),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["id"], "c1");
    let c1 = wait_for("the feedback turn", || {
        let v = settled(&p, "c1");
        (v["turns"].as_array()?.len() == 2).then_some(v)
    });
    assert_eq!(c1["turn"]["status"], "COMPLETE", "{c1}");
    let tests = fs_err::read_to_string(common::instances::worktree(&c1).join("tests.txt")).unwrap();
    assert!(
        tests.contains("please write tests.txt"),
        "the feedback did not reach the agent: {tests}"
    );

    let (status, v) = api.post(
        "/api/v1/instances/c1/push",
        json!({"title": "Add the widget"}),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["status"], "pr_created", "{v}");
    assert_eq!(v["state"]["pull_request"]["number"], 1, "{v}");
    let reqs = github.requests();
    let creates: Vec<&Value> = reqs.iter().filter(|r| r["method"] == "POST").collect();
    assert_eq!(creates.len(), 1, "{reqs:?}");
    assert_eq!(creates[0]["body"]["title"], "Add the widget");
    assert_eq!(creates[0]["headers"]["authorization"], "Bearer test-token");
    assert!(
        creates[0]["problems"].as_array().unwrap().is_empty(),
        "{reqs:?}"
    );

    let (status, v) = api.post(
        "/api/v1/instances",
        json!({"instructions": "draft it", "id": "c2", "agent": "dirty"}),
    );
    assert_eq!(status, 201, "{v}");
    settled(&p, "c2");
    let (status, v) = api.post("/api/v1/instances/c2/kill", json!({}));
    assert_eq!(status, 200, "{v}");
    assert_eq!(
        v["kept"][0]["instance"], "c2",
        "a worktree holding work was not kept: {v}"
    );
    assert!(
        common::instances::worktree(&common::instances::show(&p, "c2"))
            .join("draft.txt")
            .is_file()
    );
    let (status, v) = api.post("/api/v1/instances/c9/review", json!({}));
    assert_eq!(
        (status, v["code"].as_str()),
        (404, Some("WORKFLOW_PARENT_NOT_FOUND")),
        "{v}"
    );
    let (status, v) = api.post("/api/v1/instances/c9/kill", json!({}));
    assert_eq!(
        (status, v["code"].as_str()),
        (404, Some("WORKFLOW_INSTANCE_NOT_FOUND")),
        "{v}"
    );
    assert_eq!(server.stop().code(), Some(0));
}

/// Asks a person, then an agent (which keeps the prompt it was given)
/// polishes the work.
const POLISH: &str = r#"name = "polish"
[[phase]]
id = "first"
run = "echo one > a.txt"
[[phase]]
id = "approve"
wait = { human = "Go on?", options = ["yes", "no"] }
[[phase]]
id = "polish"
agent = "recorder"
prompt = "Polish the work."
"#;

on_both_backends! {
    /// A person comments on a line of a task's diff while it waits: the
    /// comment is kept, shows in the session log as a `[!user]` callout,
    /// and reaches the agent of the next phase in its prompt and brief,
    /// once; a comment that says nothing, or on no task, is refused.
    fn a_comment_on_a_task_diff_reaches_the_next_phase_prompt() {
        let p = project();
        let cfg = p.root().join(".baton/config.toml");
        let mut text = fs_err::read_to_string(&cfg).unwrap();
        text.push_str("\n[agents.recorder]\ncommand = [\"sh\", \"-c\", \"cat \\\"$1\\\" >> prompts-seen.txt\", \"agent\", \"{{prompt_file}}\"]\n");
        fs_err::write(&cfg, text).unwrap();
        p.workflow("polish", POLISH);
        assert_eq!(p.run(&["run", "polish", "x", "--id", "k1"]).0, 4);
        let server = Server::start(&p, &[]);
        let api = Api { server: &server, token: None };
        let (status, v) = api.post("/api/v1/tasks/k1/comments", json!({"path": "a.txt", "line": 1, "body": "say two, not one", "by": "ana"}));
        assert_eq!(status, 201, "{v}");
        assert!(v["delivered"].is_null(), "{v}");
        let (status, v) = api.post("/api/v1/tasks/k1/comments", json!({"path": "a.txt", "line": 1, "body": "  "}));
        assert_eq!((status, v["code"].as_str()), (400, Some("BAD_COMMENT")), "{v}");
        assert!(v["message"].as_str().unwrap().contains("empty"), "{v}");
        let (status, v) = api.post("/api/v1/tasks/nope/comments", json!({"path": "a.txt", "body": "x"}));
        assert_eq!((status, v["code"].as_str()), (404, Some("TASK_NOT_FOUND")), "{v}");
        let log = fs_err::read_to_string(p.root().join(".baton/sessions/k1.md")).unwrap();
        assert!(log.contains("> [!user] ana commented on a.txt:1\n> say two, not one"), "{log}");
        let (status, v) = api.get("/api/v1/tasks/k1/log");
        assert_eq!(status, 200, "{v}");
        assert!(v["markdown"].as_str().unwrap().contains("> [!user] ana commented on a.txt:1"), "{v}");

        let (status, v) = api.post("/api/v1/inbox/k1%2Fapprove/answer", json!({"answer": "yes"}));
        assert_eq!(status, 202, "{v}");
        wait_for("the task to complete", || (p.state("k1")["status"] == "COMPLETE").then_some(()));
        let seen = fs_err::read_to_string(p.root().join("prompts-seen.txt")).unwrap();
        assert!(seen.contains("Polish the work."), "{seen}");
        assert!(seen.contains("- `a.txt` line 1 (ana): say two, not one"), "the comment did not reach the agent: {seen}");
        let (_, all) = api.get("/api/v1/tasks/k1/comments");
        assert_eq!(all.as_array().unwrap().len(), 1, "{all}");
        assert!(all[0]["delivered"]["to"].as_str().unwrap().starts_with("k1/"), "{all}");
        let log = fs_err::read_to_string(p.root().join(".baton/sessions/k1.md")).unwrap();
        assert!(log.contains("reached the agent in k1/"), "{log}");
        assert_eq!(server.stop().code(), Some(0));
    }
}

/// A person comments on a coding instance's diff: its agent gets the
/// comment as its next turn, in its own session; a review, an ended
/// instance and a missing one are refused.
#[test]
fn a_comment_on_an_instance_diff_becomes_its_agents_next_turn() {
    use common::instances::{settled, show, worktree};
    let (p, _remote) = instances_project();
    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    text.push_str("[agents.listener]\ncommand = [\"sh\", \"-c\", \"cat \\\"$1\\\" >> prompts.txt; git add -A && git -c user.email=a@a -c user.name=agent commit -qm turn\", \"agent\", \"{{prompt_file}}\"]\n");
    fs_err::write(&cfg, text).unwrap();
    let server = Server::start(&p, &[]);
    let api = Api {
        server: &server,
        token: None,
    };
    let (status, v) = api.post(
        "/api/v1/instances",
        json!({"instructions": "write the parser", "id": "l1", "agent": "listener"}),
    );
    assert_eq!(status, 201, "{v}");
    settled(&p, "l1");
    let (status, v) = api.post("/api/v1/instances/l1/comments", json!({"path": "prompts.txt", "line": 1, "body": "add a test for empty input", "by": "ana"}));
    assert_eq!(status, 201, "{v}");
    let l1 = wait_for("the comments' turn", || {
        let v = settled(&p, "l1");
        (v["turns"].as_array()?.len() == 2).then_some(v)
    });
    assert_eq!(l1["turn"]["status"], "COMPLETE", "{l1}");
    let prompts = fs_err::read_to_string(worktree(&l1).join("prompts.txt")).unwrap();
    assert!(
        prompts.contains("- `prompts.txt` line 1 (ana): add a test for empty input"),
        "{prompts}"
    );
    let (_, all) = api.get("/api/v1/instances/l1/comments");
    assert_eq!(all[0]["delivered"]["to"], "l1-t2", "{all}");
    // It is a callout in the session log of the turn it reached, and not
    // in the turn before.
    let (status, v) = api.get("/api/v1/tasks/l1-t2/log");
    assert_eq!(status, 200, "{v}");
    let log = v["markdown"].as_str().unwrap();
    assert!(
        log.contains("> [!user] ana commented on prompts.txt:1\n> add a test for empty input"),
        "{log}"
    );
    assert!(log.contains("reached the agent in l1-t2"), "{log}");
    let written = fs_err::read_to_string(p.root().join(".baton/sessions/l1-t2.md")).unwrap();
    assert!(
        written.contains("> [!user] ana commented on prompts.txt:1"),
        "{written}"
    );
    let (_, v) = api.get("/api/v1/tasks/l1/log");
    assert!(!v["markdown"].as_str().unwrap().contains("[!user]"), "{v}");

    let (status, r) = api.post("/api/v1/instances/l1/review", json!({"agent": "idle"}));
    assert_eq!(status, 201, "{r}");
    let review = r["id"].as_str().unwrap().to_string();
    let (status, v) = api.post(
        &format!("/api/v1/instances/{review}/comments"),
        json!({"path": "a", "body": "x"}),
    );
    assert_eq!(
        (status, v["code"].as_str()),
        (409, Some("WORKFLOW_INVALID_STATE")),
        "{v}"
    );
    let (status, v) = api.post(
        "/api/v1/instances/c9/comments",
        json!({"path": "a", "body": "x"}),
    );
    assert_eq!(
        (status, v["code"].as_str()),
        (404, Some("WORKFLOW_INSTANCE_NOT_FOUND")),
        "{v}"
    );
    assert_eq!(show(&p, "l1")["turns"].as_array().unwrap().len(), 2);
    assert_eq!(server.stop().code(), Some(0));
}

const AFTER: &str =
    "name = \"after\"\n[[phase]]\nid = \"note\"\nrun = \"echo after >> after.txt\"\n";

on_both_backends! {
    /// A task linked to another waits in the store, through a restart of
    /// the server, and starts by itself once that one is complete, once;
    /// a link to no task or with an undeclared flag is refused.
    fn a_linked_task_starts_by_itself_when_the_one_it_needs_completes() {
        let p = project();
        p.workflow("after", AFTER);
        assert_eq!(p.run(&["run", "edit", "x", "--id", "a1"]).0, 4);
        let server = Server::start(&p, &[]);
        let api = Api { server: &server, token: None };
        let (status, v) = api.post("/api/v1/tasks", json!({"workflow": "after", "id": "b1", "needs": ["a1"]}));
        assert_eq!(status, 201, "{v}");
        assert_eq!((v["status"].as_str(), v["needs"].clone()), (Some("LINKED"), json!(["a1"])), "{v}");
        let (status, v) = api.post("/api/v1/tasks", json!({"workflow": "after", "needs": ["nope"]}));
        assert_eq!((status, v["code"].as_str()), (400, Some("BAD_INPUT")), "{v}");
        assert!(v["message"].as_str().unwrap().contains("no task nope"), "{v}");
        let (status, v) = api.post("/api/v1/tasks", json!({"workflow": "after", "needs": ["a1"], "flags": ["fast=true"]}));
        assert_eq!(status, 400, "{v}");
        assert!(v["message"].as_str().unwrap().contains("fast"), "{v}");
        let (status, v) = api.post("/api/v1/tasks", json!({"workflow": "after", "id": "b1", "needs": ["a1"]}));
        assert_eq!(status, 400, "a second link of one id: {v}");
        let (_, links) = api.get("/api/v1/links");
        assert_eq!(links.as_array().unwrap().len(), 1, "{links}");
        assert!(links[0]["started"].is_null(), "{links}");
        assert_eq!(server.stop().code(), Some(0));

        // Another server: the link is still there.
        let server = Server::start(&p, &[]);
        let api = Api { server: &server, token: None };
        std::thread::sleep(std::time::Duration::from_millis(1500));
        assert!(p.run(&["show", "b1", "--json"]).0 != 0, "b1 started before a1 completed");
        let (status, v) = api.post("/api/v1/inbox/a1%2Fapprove/answer", json!({"answer": "yes"}));
        assert_eq!(status, 202, "{v}");
        wait_for("the linked task to run", || {
            let (code, out, _) = p.run(&["show", "b1", "--json"]);
            (code == 0 && serde_json::from_str::<Value>(&out).ok()?["status"] == "COMPLETE").then_some(())
        });
        assert_eq!(p.state("a1")["status"], "COMPLETE");
        let (_, links) = api.get("/api/v1/links");
        assert_eq!(links[0]["started"]["outcome"], "RUNNING", "{links}");
        std::thread::sleep(std::time::Duration::from_millis(1500));
        assert_eq!(fs_err::read_to_string(p.root().join("after.txt")).unwrap(), "after\n", "started once");
        assert_eq!(server.stop().code(), Some(0));
    }
}

on_both_backends! {
    /// A linked task is cancelled before it starts, and never starts; one
    /// whose needed task was cancelled is ended by itself, saying why; one
    /// whose needed task failed waits (the task may be resumed) and the
    /// links say how each needed task stands.
    fn a_linked_task_is_cancelled_or_ended_when_it_can_never_start() {
        let p = project();
        p.workflow("after", AFTER);
        p.workflow("fails", "name = \"fails\"\n[[phase]]\nid = \"x\"\nrun = \"exit 3\"\nmax_attempts = 1\n");
        assert_eq!(p.run(&["run", "edit", "x", "--id", "a1"]).0, 4);
        assert_eq!(p.run(&["run", "edit", "x", "--id", "a2"]).0, 4);
        assert_eq!(p.run(&["run", "fails", "x", "--id", "f1"]).0, 1);
        let server = Server::start(&p, &[]);
        let api = Api { server: &server, token: None };
        for (id, need) in [("c1", "a1"), ("c2", "a2"), ("c3", "f1")] {
            let (status, v) = api.post("/api/v1/tasks", json!({"workflow": "after", "id": id, "needs": [need]}));
            assert_eq!(status, 201, "{v}");
        }
        let (status, v) = api.post("/api/v1/links/c1/cancel", json!({"by": "ana"}));
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["started"]["outcome"], "cancelled by ana", "{v}");
        let (status, v) = api.post("/api/v1/links/c1/cancel", json!({}));
        assert_eq!((status, v["code"].as_str()), (409, Some("LINK_ENDED")), "{v}");
        assert!(v["hint"].as_str().unwrap().contains("/cancel"), "{v}");
        let (status, v) = api.post("/api/v1/links/nope/cancel", json!({}));
        assert_eq!((status, v["code"].as_str()), (404, Some("LINK_NOT_FOUND")), "{v}");
        let (status, v) = api.post_from("/api/v1/links/c2/cancel", json!({}), Some("http://evil.example"));
        assert_eq!(status, 403, "another origin cancels nothing: {v}");

        // a1 completes: the cancelled c1 does not start.
        let (status, v) = api.post("/api/v1/inbox/a1%2Fapprove/answer", json!({"answer": "yes"}));
        assert_eq!(status, 202, "{v}");
        wait_for("a1 to complete", || (p.state("a1")["status"] == "COMPLETE").then_some(()));
        // a2 is cancelled: c2 can never start, and is ended.
        let (status, v) = api.post("/api/v1/tasks/a2/cancel", json!({}));
        assert_eq!(status, 200, "{v}");
        let links = wait_for("c2 to be ended", || {
            let (_, links) = api.get("/api/v1/links");
            let c2 = links.as_array()?.iter().find(|l| l["id"] == "c2")?.clone();
            (!c2["started"].is_null()).then_some(links)
        });
        let by_id = |id: &str| links.as_array().unwrap().iter().find(|l| l["id"] == id).unwrap().clone();
        assert_eq!(by_id("c2")["started"]["outcome"], "not started: task a2 was cancelled", "{links}");
        assert_eq!(by_id("c2")["needs_status"], json!({"a2": "CANCELLED"}), "{links}");
        // f1 failed: c3 waits for it to be resumed.
        assert!(by_id("c3")["started"].is_null(), "{links}");
        assert_eq!(by_id("c3")["needs_status"], json!({"f1": "FAILED"}), "{links}");
        assert_eq!(by_id("c1")["started"]["outcome"], "cancelled by ana", "{links}");
        std::thread::sleep(std::time::Duration::from_millis(1500));
        for id in ["c1", "c2", "c3"] {
            assert!(p.run(&["show", id, "--json"]).0 != 0, "{id} was started");
        }
        assert!(!p.root().join("after.txt").exists());
        assert_eq!(server.stop().code(), Some(0));
    }

    /// A link queued for the workers is queued and run by `baton worker`
    /// once the task it needs completes, with no server running.
    fn a_worker_queues_and_runs_a_linked_task_once_its_need_completes() {
        let p = project();
        p.workflow("after", AFTER);
        p.git(&["add", "-A"]);
        p.git(&["commit", "-qm", "workflows"]);
        assert_eq!(p.run(&["run", "edit", "x", "--id", "a1"]).0, 4);
        let server = Server::start(&p, &[]);
        let api = Api { server: &server, token: None };
        let (status, v) = api.post("/api/v1/tasks", json!({"workflow": "after", "id": "w1", "needs": ["a1"], "queue": true}));
        assert_eq!(status, 201, "{v}");
        assert_eq!(server.stop().code(), Some(0));
        let (code, out, err) = p.run(&["worker", "--until-idle"]);
        assert_eq!(code, 0, "{out}{err}");
        assert!(p.run(&["show", "w1", "--json"]).0 != 0, "w1 queued before a1 completed: {err}");
        let (code, out, err) = p.run(&["inbox", "answer", "a1/approve", "yes"]);
        assert_eq!(code, 0, "{out}{err}");
        wait_for("a1 to complete", || (p.state("a1")["status"] == "COMPLETE").then_some(()));
        let (code, out, err) = p.run(&["worker", "--until-idle"]);
        assert_eq!(code, 0, "{out}{err}");
        assert!(err.contains("task w1 queued: the tasks it needs are complete"), "{err}");
        assert_eq!(p.state("w1")["status"], "COMPLETE", "{err}");
        let (code, out, _) = p.run(&["worker", "--until-idle"]);
        assert_eq!(code, 0, "{out}");
        let runs = p.journal("w1").iter().filter(|e| e["kind"] == "phase_started").count();
        assert_eq!(runs, 1, "run once");
    }
}

/// Prints slowly, with an escape sequence among its lines.
const TALK: &str = r#"name = "talk"
[[phase]]
id = "speak"
run = "printf 'esc \\033[2J here\\n'; for i in 1 2 3 4 5 6 7 8 9 10; do echo line-$i; sleep 0.5; done"
"#;

/// In headless Chromium: a running task's card page shows what its phase
/// prints as it prints it (the output stream), escape codes shown as
/// escapes, never obeyed.
#[test]
fn a_cards_page_streams_what_its_phase_prints() {
    let p = project();
    p.workflow("talk", TALK);
    agents_that_fail_and_record(&p);
    p.workflow("handed", HANDED);
    assert_eq!(p.run(&["run", "handed", "x", "--id", "h1"]).0, 1);
    let server = Server::start(&p, &[]);
    let api = Api {
        server: &server,
        token: None,
    };
    let b = baton_testkit::browser::Browser::start(1400, 900);
    b.goto(&server.url);
    b.wait_text("#live", "live", 30);
    let (status, v) = api.post(
        "/api/v1/tasks",
        json!({"workflow": "talk", "id": "t1", "description": "talk"}),
    );
    assert_eq!(status, 201, "{v}");
    b.wait_text("[data-column=running]", "talk", 30);
    // Its card shows the last line it printed, as it runs.
    b.wait_text(r#"[data-task="t1"] .latest"#, "line-", 10);
    b.click(r#"[data-task="t1"]"#);
    b.wait_text("#card-output", "line-2", 30);
    let early = b.text("#card-output").unwrap();
    assert!(
        !early.contains("line-10"),
        "the output came at the end, not as it was printed: {early}"
    );
    b.wait_text("#card-output", "line-10", 30);
    b.wait_text("#card-output", "esc \\x1b[2J here", 5);
    accessible(&b, "a running task's card page");
    wait_for("the task to complete", || {
        (p.state("t1")["status"] == "COMPLETE").then_some(())
    });

    // A failed task handed to another agent from its card.
    b.click("#card-close");
    b.wait_text("[data-column=failed]", "h1", 30);
    b.click(r#"[data-task="h1"]"#);
    b.wait_text("#card-handoff-to", "recorder", 10);
    accessible(&b, "a failed task's card page");
    b.click("#card-handoff-to option[value=recorder]");
    b.click("#card-handoff");
    b.wait_text("[data-column=done]", "h1", 30);
    assert_eq!(p.state("h1")["status"], "COMPLETE");
    assert_eq!(server.stop().code(), Some(0));
}

/// In headless Chromium: a task whose phase runs on a built-in agent CLI
/// (Claude Code, run for real against the scripted model server) shows
/// on its card what the agent did last (its tool call on hello.txt, read
/// from the journal, as its JSON output is no line to show) and its
/// agent, while the phase runs; `/api/v1/activity` says the same.
#[test]
fn a_cards_live_line_shows_what_a_built_in_cli_agent_does() {
    use baton_testkit::agents::Agent;
    use baton_testkit::model_server::{ModelServer, Reply};
    let p = project();
    let home = tempfile::tempdir().unwrap();
    let (tool, args) = Agent::Claude.write_tool(&p.root().join("hello.txt"), "hi");
    // The write, then a model that is still thinking.
    let model = ModelServer::start(vec![Reply::tool(tool, args), Reply::hang()]);
    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    text.push_str(&Agent::Claude.baton_config("cc", &model, home.path()));
    fs_err::write(&cfg, text).unwrap();
    p.workflow(
        "w",
        "name = \"w\"\n[[phase]]\nid = \"write\"\nagent = \"cc\"\nprompt = \"Write the greeting\"\n",
    );
    let server = Server::start(&p, &[]);
    let api = Api {
        server: &server,
        token: None,
    };
    let b = baton_testkit::browser::Browser::start(1400, 900);
    b.goto(&server.url);
    b.wait_text("#live", "live", 30);
    let (status, v) = api.post(
        "/api/v1/tasks",
        json!({"workflow": "w", "id": "c1", "description": "greet"}),
    );
    assert_eq!(status, 201, "{v}");
    b.wait_text(r#"[data-task="c1"] .latest"#, "hello.txt", 90);
    let card = b.text(r#"[data-task="c1"]"#).unwrap();
    assert!(card.contains("cc"), "the card names its agent: {card}");
    assert_eq!(p.state("c1")["status"], "RUNNING", "shown while it runs");
    let (status, rows) = api.get("/api/v1/activity");
    assert_eq!(status, 200, "{rows}");
    let row = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "c1")
        .unwrap_or_else(|| panic!("{rows}"));
    assert_eq!(
        (row["phase"].as_str(), row["agent"].as_str()),
        (Some("write"), Some("cc")),
        "{row}"
    );
    let line = row["line"].as_str().unwrap_or_default();
    assert!(line.contains("hello.txt"), "{row}");
    assert!(!line.contains('{'), "a step, not the CLI's JSON: {row}");
    accessible(&b, "a card with a live line");
    let (status, v) = api.post("/api/v1/tasks/c1/cancel", json!({}));
    assert_eq!(status, 200, "{v}");
    wait_for("the task to be cancelled", || {
        (p.state("c1")["status"] == "CANCELLED").then_some(())
    });
    let (_, rows) = api.get("/api/v1/activity");
    assert_eq!(rows, json!([]), "nothing runs now");
    assert_eq!(server.stop().code(), Some(0));
}

/// In headless Chromium: a person works the board from the keyboard, as
/// on a Kanban board: `?` shows the keys, j/k and h/l move between cards
/// and columns (the focus kept when the board redraws), Enter opens a
/// card, Escape closes it, n starts a new task, i goes to the inbox.
#[test]
fn a_person_works_the_board_from_the_keyboard() {
    use baton_testkit::browser::Browser;
    let p = project();
    p.workflow(
        "fails",
        "name = \"fails\"\n[[phase]]\nid = \"x\"\nrun = \"exit 3\"\nmax_attempts = 1\n",
    );
    assert_eq!(p.run(&["run", "edit", "first", "--id", "e1"]).0, 4);
    assert_eq!(p.run(&["run", "edit", "second", "--id", "e2"]).0, 4);
    assert_eq!(p.run(&["run", "fails", "broken", "--id", "f1"]).0, 1);
    let server = Server::start(&p, &[]);
    let b = Browser::start(1400, 900);
    b.goto(&server.url);
    b.wait_text("#live", "live", 30);
    b.wait_text("[data-column=failed]", "broken", 30);
    let focused = || {
        b.js(
            "const c = document.activeElement.closest('.card'); return c ? c.dataset.task : document.activeElement.id || document.activeElement.tagName;",
            json!([]),
        )
        .as_str()
        .unwrap_or_default()
        .to_string()
    };
    let open = |id: &str| {
        b.js(
            &format!("return document.getElementById('{id}').open;"),
            json!([]),
        ) == Value::Bool(true)
    };

    b.press("?");
    b.wait_text("#keys", "Next or previous card", 10);
    assert!(open("keys"));
    accessible(&b, "the keyboard's help");
    b.press(Browser::ESCAPE);
    assert!(!open("keys"));

    b.press("j");
    let first = focused();
    assert!(
        ["e1", "e2"].contains(&first.as_str()),
        "the first card of the first column: {first}"
    );
    b.press("j");
    let second = focused();
    assert!(
        ["e1", "e2"].contains(&second.as_str()) && second != first,
        "{first} then {second}"
    );
    b.press("k");
    assert_eq!(focused(), first);
    b.press("l");
    assert_eq!(focused(), "f1", "the next column's first card");
    // The board redraws as the store changes: the focus stays.
    assert_eq!(p.run(&["run", "edit", "third", "--id", "e3"]).0, 4);
    b.wait_text("[data-column=person]", "third", 30);
    assert_eq!(focused(), "f1", "kept through the redraw");
    b.press("h");
    assert!(["e1", "e2", "e3"].contains(&focused().as_str()));
    b.press("l");
    b.press(Browser::ENTER);
    b.wait_text("#card-title", "Task f1", 10);
    b.press(Browser::ESCAPE);
    assert!(!open("card"));

    b.press("n");
    b.wait_text("#nt-workflow", "edit", 10);
    assert!(open("new-task"));
    // Keys typed into a field are the field's.
    b.click("#nt-description");
    b.press("nja");
    assert_eq!(
        b.js(
            "return document.getElementById('nt-description').value;",
            json!([])
        ),
        json!("nja")
    );
    assert!(!open("new-agent"));
    b.press(Browser::ESCAPE);
    assert!(!open("new-task"));

    b.press("i");
    assert_eq!(
        b.js("return document.activeElement.closest('#inbox') !== null && document.activeElement.tagName;", json!([])),
        json!("BUTTON"),
        "the inbox's first answer"
    );
    assert_eq!(server.stop().code(), Some(0));
}

/// Agents: `broken` fails; `recorder` keeps the prompts it is given.
fn agents_that_fail_and_record(p: &TestProject) {
    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    text.push_str(RECORDING_AGENTS);
    fs_err::write(&cfg, text).unwrap();
}

const RECORDING_AGENTS: &str = r#"
[agents.broken]
command = ["sh", "-c", "exit 3"]
[agents.recorder]
command = ["sh", "-c", "cat \"$1\" >> prompts-seen.txt", "agent", "{{prompt_file}}"]
"#;

/// An agent phase whose agent fails.
const HANDED: &str = r#"name = "handed"
[[phase]]
id = "write"
agent = "broken"
prompt = "Write the notes."
max_attempts = 1
"#;

on_both_backends! {
    /// A task whose agent failed is handed to another agent from the
    /// board's API, as `baton handoff` does: the phase goes on with it and
    /// the task completes; an unknown agent, a task that runs on and one
    /// that ended are refused.
    fn a_failed_task_is_handed_to_another_agent() {
        let p = project();
        agents_that_fail_and_record(&p);
        p.workflow("handed", HANDED);
        assert_eq!(p.run(&["run", "handed", "x", "--id", "h1"]).0, 1);
        assert_eq!(p.state("h1")["status"], "FAILED");
        let server = Server::start(&p, &[]);
        let api = Api { server: &server, token: None };
        let (status, v) = api.post("/api/v1/tasks/h1/handoff", json!({"to": "nobody"}));
        assert_eq!((status, v["code"].as_str()), (400, Some("UNKNOWN_AGENT")), "{v}");
        assert!(v["hint"].as_str().unwrap().contains("recorder"), "{v}");
        let (status, v) = api.post("/api/v1/tasks/h1/handoff", json!({"to": "recorder"}));
        assert_eq!(status, 202, "{v}");
        wait_for("the handed-off task to complete", || (p.state("h1")["status"] == "COMPLETE").then_some(()));
        let seen = fs_err::read_to_string(p.root().join("prompts-seen.txt")).unwrap();
        assert!(seen.contains("Write the notes."), "{seen}");
        let (status, v) = api.post("/api/v1/tasks/h1/handoff", json!({"to": "recorder"}));
        assert_eq!((status, v["code"].as_str()), (409, Some("NOT_RESUMABLE")), "{v}");
        assert_eq!(server.stop().code(), Some(0));
    }
}
