//! The inbox: a task waiting in `wait = { human }` and an agent's MCP
//! requests are items of one list; an answer from the command line lets
//! the task run on, or comes back to the real agent CLI that is blocked
//! in its `request_decision` / `request_approval` call; an item is
//! answered once; each is a callout in its session log.

use baton_testkit::{TestProject, on_both_backends};
use serde_json::Value;

fn inbox(p: &TestProject) -> Vec<Value> {
    let (code, out, err) = p.run(&["inbox", "--json"]);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str::<Value>(&out)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

on_both_backends! {
    fn an_answer_from_the_inbox_lets_a_waiting_task_run_on() {
        let p = TestProject::new();
        p.workflow(
            "ship",
            "name = \"ship\"\n[[phase]]\nid = \"build\"\nrun = \"echo built\"\n[[phase]]\nid = \"ask\"\nwait = { human = \"Ship it?\", options = [\"yes\", \"no\"] }\n[[phase]]\nid = \"ship\"\nrun = \"echo shipped with {{labels.task-id}}\"\n",
        );
        let (code, _, err) = p.run(&["run", "ship", "x", "--id", "rel"]);
        assert_eq!(code, 4, "{err}");
        let items = inbox(&p);
        assert_eq!(items.len(), 1, "{items:?}");
        assert_eq!(items[0]["id"], "rel/ask");
        assert_eq!(items[0]["kind"], "decision");
        assert_eq!(items[0]["options"], serde_json::json!(["yes", "no"]));
        let (_, listing, _) = p.run(&["inbox"]);
        assert!(listing.contains("rel/ask") && listing.contains("Ship it? [yes/no]"), "{listing}");
        assert!(
            fs_err::read_to_string(p.root().join(".baton/sessions/rel.md"))
                .unwrap()
                .contains("answer: `baton inbox answer rel/ask <choice>`")
        );

        // Not an option: refused, nothing changes.
        let (code, _, err) = p.run(&["inbox", "answer", "rel/ask", "maybe"]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("\"maybe\" is not an option of item rel/ask: yes, no"), "{err}");
        assert_eq!(p.state("rel")["status"], "WAITING");

        let (code, _, err) = p.run(&["inbox", "answer", "rel/ask", "YES", "--by", "ana"]);
        assert_eq!(code, 0, "{err}");
        let s = p.state("rel");
        assert_eq!(s["status"], "COMPLETE");
        let ask = s["completed_phases"].as_array().unwrap().iter().find(|x| x["id"] == "ask").unwrap().clone();
        assert_eq!(ask["summary"], "yes");
        assert!(p.journal("rel").iter().any(|e| e["kind"] == "answered" && e["by"] == "ana"));
        let log = fs_err::read_to_string(p.root().join(".baton/sessions/rel.md")).unwrap();
        assert!(log.contains("> [!user] ana answered\n> yes\n"), "{log}");
        assert!(inbox(&p).is_empty());
        // Answered once.
        let (code, _, err) = p.run(&["inbox", "answer", "rel/ask", "no"]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("no open inbox item rel/ask"), "{err}");
    }
}

/// A real agent CLI (Claude Code on the scripted model server) asks
/// through baton's MCP tools: a notification, an approval (denied, with a
/// reason) and a decision; each blocks it until answered from the inbox,
/// and the answers reach the model as the tools' results.
#[test]
fn inbox_answers_unblock_a_real_agents_requests() {
    use baton_testkit::agents::Agent;
    use baton_testkit::model_server::{ModelServer, Reply};
    use serde_json::json;
    let server = ModelServer::start(vec![
        Reply::tool(
            "mcp__baton__notify",
            json!({"message": "starting the migration"}),
        ),
        Reply::tool(
            "mcp__baton__request_approval",
            json!({"action": "drop the old users table"}),
        ),
        Reply::tool(
            "mcp__baton__request_decision",
            json!({"question": "Which branch do I merge into?", "options": ["main", "release"]}),
        ),
        Reply::text("Merged into release, old table kept."),
    ]);
    let home = tempfile::tempdir().unwrap();
    let p = TestProject::new();
    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    text.push_str(&Agent::Claude.baton_config("cc", &server, home.path()));
    fs_err::write(&cfg, text).unwrap();
    p.workflow(
        "mig",
        "name = \"mig\"\n[defaults]\nagent = \"cc\"\n[[phase]]\nid = \"migrate\"\nprompt = \"Migrate the users.\"\n",
    );
    let mut run = p
        .baton(&["run", "mig", "migrate", "--id", "mig"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let item = |kind: &'static str| {
        baton_testkit::wait_for(kind, || {
            inbox(&p)
                .into_iter()
                .find(|i| i["kind"] == kind && i["answer"].is_null())
        })
    };
    let approval = item("approval");
    assert_eq!(approval["text"], "drop the old users table");
    assert_eq!(approval["session"], "mig");
    assert_eq!(approval["phase"], "migrate");
    let id = approval["id"].as_str().unwrap().to_string();
    // The callout is in the log while the agent waits.
    let log = fs_err::read_to_string(p.root().join(".baton/sessions/mig.md")).unwrap();
    assert!(
        log.contains("> [!approval_required] drop the old users table"),
        "{log}"
    );
    assert!(log.contains("> [!note] starting the migration"), "{log}");
    let (code, _, err) = p.run(&[
        "inbox",
        "deny",
        &id,
        "--reason",
        "keep it a week",
        "--by",
        "ana",
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = p.run(&["inbox", "approve", &id]);
    assert_eq!(code, 2, "answered once: {err}");
    assert!(err.contains("answered already: denied by ana"), "{err}");

    let decision = item("decision");
    assert_eq!(decision["options"], json!(["main", "release"]));
    let id = decision["id"].as_str().unwrap().to_string();
    let (code, _, err) = p.run(&["inbox", "answer", &id, "release", "--by", "ana"]);
    assert_eq!(code, 0, "{err}");
    let status = baton_testkit::wait_child(&mut run, "the run");
    let mut err = String::new();
    std::io::Read::read_to_string(run.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{err}");

    // The model saw the answers as the tools' results.
    let bodies: Vec<String> = server
        .model_requests()
        .iter()
        .map(|r| r.body.to_string())
        .collect();
    assert!(
        bodies
            .iter()
            .any(|b| b.contains("denied") && b.contains("keep it a week")),
        "{bodies:?}"
    );
    assert!(
        bodies
            .iter()
            .any(|b| b.contains("release") && b.contains("\\\"answered\\\":true")),
        "{bodies:?}"
    );
    let log = fs_err::read_to_string(p.root().join(".baton/sessions/mig.md")).unwrap();
    assert!(
        log.contains(&format!("> [!user] ana answered {id}: release")),
        "{log}"
    );
    assert!(
        log.contains("> [!decision_needed] Which branch do I merge into?\n> from "),
        "{log}"
    );
    // The notification stays until someone acknowledges it.
    let left = inbox(&p);
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0]["kind"], "notify");
    let (code, _, err) = p.run(&["inbox", "ack", left[0]["id"].as_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(inbox(&p).is_empty());
}

/// An agent that stopped waiting (its call timed out, or it crashed) and
/// asks again later gets the answer given meanwhile: the same question is
/// the same item. Through the official Python MCP SDK, as the agent of a
/// task's phase.
#[test]
fn an_answer_given_while_the_agent_was_gone_reaches_it_when_it_asks_again() {
    use baton_testkit::mcp::{self, McpClient};
    use serde_json::json;
    let p = TestProject::new();
    let root = p.root().display().to_string();
    let env = [
        ("BATON_PROJECT", root.as_str()),
        ("BATON_TASK_ID", "mig"),
        ("BATON_PHASE", "migrate"),
    ];
    let ask = json!([{"tool": "request_approval", "args": {"action": "drop the old users table", "wait_seconds": 1}}]);
    let first = mcp::run(
        McpClient::PythonAuto,
        &baton_testkit::baton_bin(),
        p.root(),
        &env,
        &ask,
    );
    let r = &first["results"][0]["structured"];
    assert_eq!(r["answered"], false, "{first}");
    let id = r["id"].as_str().unwrap().to_string();
    // The agent is gone; a person answers.
    let (code, _, err) = p.run(&[
        "inbox",
        "deny",
        &id,
        "--reason",
        "not this week",
        "--by",
        "ana",
    ]);
    assert_eq!(code, 0, "{err}");
    // It comes back (a new process, a new MCP session) and asks again.
    let again = mcp::run(
        McpClient::PythonAuto,
        &baton_testkit::baton_bin(),
        p.root(),
        &env,
        &ask,
    );
    let r = &again["results"][0]["structured"];
    assert_eq!(r["id"], id.as_str(), "the same item");
    assert_eq!(r["answered"], true);
    assert_eq!(r["answer"], "denied");
    assert_eq!(r["reason"], "not this week");
    assert_eq!(r["by"], "ana");
}
