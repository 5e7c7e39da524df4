//! Session logs: every task leaves a readable markdown log, which resumes
//! on a fresh clone with an empty store, codifies into a workflow that
//! runs, and is refused with its line when broken.

use baton_testkit::{TestProject, on_both_backends};

fn log_of(p: &TestProject, id: &str) -> String {
    fs_err::read_to_string(p.root().join(format!(".baton/sessions/{id}.md"))).unwrap()
}

const STEPS: &str = r#"name = "steps"

[[phase]]
id = "plan"
run = "touch $BATON_STATE_DIR/plan-ran; echo 'the plan: two screens' > $BATON_SUMMARY_FILE"

[[phase]]
id = "build"
max_attempts = 2
run = "test -n \"$GO\" || test -f $BATON_STATE_DIR/tried || { touch $BATON_STATE_DIR/tried; echo 'the build broke' >&2; exit 3; }; echo built"

[[phase]]
id = "check"
run = "grep -q 'the plan: two screens' \"$BATON_BRIEF_FILE\" && echo 'brief has the plan'"

"#;

const ASK: &str = r#"
[[phase]]
id = "ask"
wait = { human = "Ship it?", options = ["yes", "no"] }
"#;

on_both_backends! {
    fn every_task_leaves_a_readable_log() {
        let p = TestProject::new();
        p.workflow("steps", &format!("{STEPS}{ASK}"));
        let (code, _, err) = p.run(&["run", "steps", "Add the login form\nwith a remember-me box", "--id", "login"]);
        assert_eq!(code, 4, "{err}");
        let log = log_of(&p, "login");
        for want in [
            "type: session\nsession_id: login\nworkflow: steps\n",
            "status: paused\n",
            "resume_point: ask\n",
            "\n# Add the login form\n\nwith a remember-me box\n",
            // A command phase's first section says the command it runs.
            "\n## plan\n\n> [!command]\n> touch $BATON_STATE_DIR/plan-ran; echo 'the plan: two screens' > $BATON_SUMMARY_FILE\n\n> [!summary] passed\n> the plan: two screens\n",
            "\n> [!error] attempt 1 failed; it is tried again\n> exit status 3\n>\n> the build broke\n",
            "\n## build\n\n_Attempt 2._\n\n> [!summary] passed\n> built\n",
            "\n> [!command]\n> grep -q 'the plan: two screens' \"$BATON_BRIEF_FILE\" && echo 'brief has the plan'\n\n> [!summary] passed\n> brief has the plan\n",
            "\n## ask\n\n> [!decision_needed] Ship it?\n> - yes\n> - no\n",
        ] {
            assert!(log.contains(want), "missing {want:?} in\n{log}");
        }
        // The list and the parsed view agree with the file.
        let (code, out, _) = p.run(&["session", "ls", "--json"]);
        assert_eq!(code, 0);
        let rows: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(rows[0]["session_id"], "login");
        assert_eq!(rows[0]["status"], "paused");
        assert_eq!(rows[0]["phases"], serde_json::json!(["plan", "build", "check", "ask"]));
        let (code, out, _) = p.run(&["session", "show", "login", "--json"]);
        assert_eq!(code, 0);
        let shown: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(shown["phases"][1]["sections"], serde_json::json!([1, 2]));
        assert_eq!(shown["phases"][0]["summary"], "the plan: two screens");
        // A cancelled task's log says so, and that it ended (issue 34: it
        // said `failed`).
        p.run(&["cancel", "login"]);
        let log = log_of(&p, "login");
        assert!(log.contains("status: cancelled\n") && log.contains("\nended: "), "{log}");
        assert!(log.contains("> [!note] cancelled"), "{log}");
    }

    fn a_log_copied_to_a_fresh_clone_resumes_there_to_complete() {
        let first = TestProject::new();
        first.workflow("steps", &STEPS.replace("max_attempts = 2", "max_attempts = 1"));
        let (code, _, err) = first.run(&["run", "steps", "Add the login form", "--id", "login"]);
        assert_eq!(code, 1, "{err}");
        let log = log_of(&first, "login");
        assert!(log.contains("status: failed\n") && log.contains("resume_point: build\n"), "{log}");

        // Another clone: the workflows come with the repository, the store
        // is empty, the log is copied by hand.
        let clone = TestProject::new();
        clone.workflow("steps", STEPS);
        let copied = clone.root().join("from-elsewhere.md");
        fs_err::write(&copied, &log).unwrap();
        let out = clone
            .baton(&["session", "resume", copied.to_str().unwrap()])
            .env("GO", "1")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert!(err.contains("continuing the session log") && err.contains("at build (plan passed, with the log's summaries)"), "{err}");
        // plan was not run again; check read its summary from the brief.
        assert!(!clone.root().join(".baton/tasks/login/plan-ran").exists());
        assert!(first.root().join(".baton/tasks/login/plan-ran").exists());
        let s = clone.state("login");
        assert_eq!(s["status"], "COMPLETE");
        let done: Vec<(String, String)> = s["completed_phases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p["id"].as_str().unwrap().into(), p["summary"].as_str().unwrap().into()))
            .collect();
        assert_eq!(done[0], ("plan".into(), "the plan: two screens".into()));
        assert_eq!(done[2], ("check".into(), "brief has the plan".into()));
        // The new task's own log carries the story on.
        let log2 = log_of(&clone, "login");
        assert!(log2.contains("_Carried over from session log"), "{log2}");

        assert!(log2.contains("status: completed\n"), "{log2}");

        // Resumed again by id: the task is in this store now, so its
        // journal decides, and it has nothing left to do.
        let (code, _, err) = clone.run(&["session", "resume", "login"]);
        assert!(err.contains("task login is in this store"), "{err}");
        assert_eq!(code, 0, "{err}");
        assert_eq!(clone.state("login")["status"], "COMPLETE");
    }

    /// Issue 34: a clone whose workflow gained a phase before the one the
    /// log stopped at. The log tells nothing of it: it runs (it was PASS
    /// "(the session log tells nothing of this phase)" without running,
    /// and the task ended COMPLETE never scanned).
    fn a_phase_the_log_does_not_show_passing_runs_in_a_changed_clone() {
        let first = TestProject::new();
        first.workflow("steps", &STEPS.replace("max_attempts = 2", "max_attempts = 1"));
        let (code, _, err) = first.run(&["run", "steps", "Add the login form", "--id", "login"]);
        assert_eq!(code, 1, "{err}");
        let log = log_of(&first, "login");
        let clone = TestProject::new();
        let scan = "[[phase]]\nid = \"security-scan\"\nrun = \"touch $BATON_STATE_DIR/scan-ran; echo 'scanned: clean'\"\n\n[[phase]]\nid = \"build\"";
        clone.workflow("steps", &STEPS.replacen("[[phase]]\nid = \"build\"", scan, 1));
        let copied = clone.root().join("login.md");
        fs_err::write(&copied, &log).unwrap();
        let out = clone
            .baton(&["session", "resume", copied.to_str().unwrap()])
            .env("GO", "1")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert!(err.contains("at security-scan (plan passed"), "{err}");
        assert!(clone.root().join(".baton/tasks/login/scan-ran").exists(), "security-scan ran");
        assert!(!clone.root().join(".baton/tasks/login/plan-ran").exists(), "plan did not");
        let s = clone.state("login");
        assert_eq!(s["status"], "COMPLETE");
        let scan = s["completed_phases"].as_array().unwrap().iter().find(|p| p["id"] == "security-scan").unwrap().clone();
        assert_eq!(scan["summary"], "scanned: clean", "{scan}");
    }

    fn a_log_written_by_hand_resumes_in_a_workflow_codified_from_it() {
        let p = TestProject::new();
        let hand = p.root().join("notes.md");
        fs_err::write(&hand, "---\ntype: session\nsession_id: by-hand\nresume_point: approve\n---\n# Ship the fix\n\n## Research the bug\nIt is in the parser.\n\n## approve\n> [!decision_needed] Merge the fix?\n> - merge\n> - wait\n").unwrap();
        let (code, _, err) = p.run(&["session", "resume", hand.to_str().unwrap()]);
        assert_eq!(code, 4, "{err}");
        assert!(err.contains("the log names no workflow: wrote"), "{err}");
        let wf = fs_err::read_to_string(p.root().join(".baton/workflows/session-by-hand.toml")).unwrap();
        assert!(wf.contains("id = \"research-the-bug\""), "{wf}");
        assert!(wf.contains("wait = { human = \"Merge the fix?\", options = [\"merge\", \"wait\"] }"), "{wf}");
        let s = p.state("by-hand");
        assert_eq!(s["current_phase"]["id"], "approve");
        assert_eq!(s["completed_phases"][0]["summary"], "It is in the parser.");
    }

    fn the_toon_index_answers_queries_and_is_rebuilt_by_doctor() {
        let p = TestProject::new();
        p.workflow("steps", &format!("{STEPS}{ASK}"));
        p.workflow("quick", "name = \"quick\"\n[[phase]]\nid = \"only\"\nrun = \"echo done\"\n");
        assert_eq!(p.run(&["run", "steps", "Add the login form", "--id", "login"]).0, 4);
        assert_eq!(p.run(&["run", "quick", "Tidy the README", "--id", "tidy"]).0, 0);
        let index = p.root().join(".baton/index.toon");
        let text = fs_err::read_to_string(&index).unwrap();
        assert!(
            text.contains("sessions[2]{id,status,started,ended,workflow,phases,agents,tokens,open_items,title}:"),
            "{text}"
        );
        let query = |args: &[&str]| -> Vec<(String, u64)> {
            let mut all = vec!["session", "query", "--json"];
            all.extend_from_slice(args);
            let (code, out, err) = p.run(&all);
            assert_eq!(code, 0, "{err}");
            serde_json::from_str::<Vec<serde_json::Value>>(&out)
                .unwrap()
                .iter()
                .map(|r| (r["id"].as_str().unwrap().to_string(), r["open_items"].as_u64().unwrap()))
                .collect()
        };
        assert_eq!(query(&["--status", "paused"]), [("login".to_string(), 1)]);
        assert_eq!(query(&["--text", "readme"]), [("tidy".to_string(), 0)]);
        assert_eq!(query(&["--text", "build"]).len(), 1, "phase names are searched");
        assert_eq!(query(&["--since", "2000-01-01", "--until", "2999-01-01"]).len(), 2);
        assert!(query(&["--since", "2999-01-01"]).is_empty());
        let (code, _, err) = p.run(&["session", "query", "--status", "done"]);
        assert_eq!(code, 2);
        assert!(err.contains("use active, completed, failed or paused"), "{err}");

        // Gone: doctor says so, --fix rebuilds it from the logs.
        fs_err::remove_file(&index).unwrap();
        let (_, out, err) = p.run(&["doctor"]);
        assert!(format!("{out}{err}").contains("index.toon is missing or out of date"), "{out}{err}");
        let (code, out, err) = p.run(&["doctor", "--fix"]);
        assert_eq!(code, 0, "{out}{err}");
        assert!(format!("{out}{err}").contains("from 2 session log(s)"), "{out}{err}");
        assert_eq!(query(&["--status", "completed"]), [("tidy".to_string(), 0)]);
        assert_eq!(query(&["--status", "paused"]), [("login".to_string(), 1)], "read off the log's callouts");
        // Damaged: a query rebuilds it first.
        fs_err::write(&index, "sessions[9]{id}:\n  broken").unwrap();
        assert_eq!(query(&["--text", "login"]).len(), 1);
        assert!(fs_err::read_to_string(&index).unwrap().contains("sessions[2]"));
    }

    fn a_broken_log_is_refused_with_its_file_and_line() {
        let p = TestProject::new();
        let bad = p.root().join("bad.md");
        fs_err::write(&bad, "---\ntype: session\nsession_id: x\nstatus: finished\n---\n# t\n").unwrap();
        for args in [
            vec!["session", "show", bad.to_str().unwrap()],
            vec!["session", "resume", bad.to_str().unwrap()],
            vec!["session", "codify", bad.to_str().unwrap(), "--output", ".baton/workflows/x.toml"],
        ] {
            let (code, _, err) = p.run(&args);
            assert_eq!(code, 2, "{args:?}: {err}");
            assert!(err.contains("bad.md:4: status \"finished\" is none of active, queued, paused, crashed, failed, completed, cancelled"), "{err}");
        }
        assert!(!p.root().join(".baton/workflows/x.toml").exists());
        let (code, _, err) = p.run(&["session", "show", "nobody"]);
        assert_eq!(code, 2);
        assert!(err.contains("no session log nobody"), "{err}");
    }
}

/// A real agent (Claude Code on the scripted model server): its messages
/// and tool calls land in the log as prose and `Tool calls:` lines; the
/// log codifies into a workflow that runs to the end.
#[test]
fn an_agent_sessions_log_codifies_into_a_workflow_that_runs() {
    use baton_testkit::agents::Agent;
    use baton_testkit::model_server::{ModelServer, Reply};
    let p = TestProject::new();
    let (tool, args) = Agent::Claude.write_tool(&p.root().join("notes.txt"), "two screens");
    let server = ModelServer::start(vec![
        Reply::tool(tool, args),
        Reply::text("Planned: two screens, written to notes.txt."),
        Reply::text("Built both screens."),
        Reply::text("Planned again."),
        Reply::text("Built again."),
        // --refine: a cleaned-up workflow, then an answer that is no workflow.
        Reply::text(
            "Here it is:\n```toml\nname = \"polished\"\n[defaults]\nagent = \"cc\"\n[[phase]]\nid = \"make\"\nprompt = \"Make: {{task}}\"\n```\n",
        ),
        Reply::text("I would rather not."),
        Reply::text("Made it."),
    ]);
    let home = tempfile::tempdir().unwrap();
    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    text.push_str(&Agent::Claude.baton_config("cc", &server, home.path()));
    fs_err::write(&cfg, text).unwrap();
    p.workflow(
        "dev",
        "name = \"dev\"\n[defaults]\nagent = \"cc\"\n[[phase]]\nid = \"plan\"\nprompt = \"Plan: {{task}}\"\n[[phase]]\nid = \"build\"\nprompt = \"Build it.\"\n",
    );
    let (code, _, err) = p.run(&["run", "dev", "Two screens", "--id", "screens"]);
    assert_eq!(code, 0, "{err}");
    let log = log_of(&p, "screens");
    assert!(log.contains("status: completed\n"), "{log}");
    assert!(log.contains("participants: [cc@"), "{log}");
    assert!(log.contains("\n## plan @cc\n"), "{log}");
    assert!(
        log.contains("**Tool calls:**\n- `Write ") && log.contains("notes.txt` → "),
        "{log}"
    );
    assert!(log.contains("> [!summary] passed, changed notes.txt\n> Planned: two screens, written to notes.txt.\n"), "{log}");
    assert!(
        log.contains("> [!task_complete] the task is complete"),
        "{log}"
    );
    let tokens: u64 = log
        .lines()
        .find_map(|l| l.strip_prefix("tokens_used: "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(tokens > 0, "{log}");

    let (code, _, err) = p.run(&[
        "session",
        "codify",
        "screens",
        "--output",
        ".baton/workflows/again.toml",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("with 2 phases: plan, build"), "{err}");
    let wf = fs_err::read_to_string(p.root().join(".baton/workflows/again.toml")).unwrap();
    assert!(
        wf.contains("agent = \"cc\"") && wf.contains("Tools that helped there: Write."),
        "{wf}"
    );
    let (code, _, err) = p.run(&["run", "again", "Two screens once more", "--id", "again"]);
    assert_eq!(code, 0, "{err}");
    assert!(log_of(&p, "again").contains("Built again."));
    // --interactive: rename the first phase, drop the second.
    let mut child = p
        .baton(&[
            "session",
            "codify",
            "screens",
            "--output",
            ".baton/workflows/trim.toml",
            "--interactive",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), b"r Design It\nr design\nd\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("\"Design It\" is not a phase id ([a-z0-9-]); say r design-it"),
        "{err}"
    );
    assert!(err.contains("with 1 phase: design"), "{err}");
    // --refine: the agent's workflow when it loads, else the draft.
    let (code, _, err) = p.run(&[
        "session",
        "codify",
        "screens",
        "--output",
        ".baton/workflows/polished.toml",
        "--refine",
        "cc",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("cc refined it") && err.contains("with 1 phase: make"),
        "{err}"
    );
    let (code, _, err) = p.run(&[
        "session",
        "codify",
        "screens",
        "--output",
        ".baton/workflows/plain.toml",
        "--refine",
        "cc",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("kept the draft: the agent's answer holds no ```toml block"),
        "{err}"
    );
    assert!(err.contains("with 2 phases: plan, build"), "{err}");
    let (code, _, err) = p.run(&[
        "run",
        "polished",
        "Two screens, polished",
        "--id",
        "polished",
    ]);
    assert_eq!(code, 0, "{err}");
    // Codify never overwrites a workflow that says something else.
    fs_err::write(
        p.root().join(".baton/workflows/again.toml"),
        "name = \"again\"\n[[phase]]\nid = \"x\"\nrun = \"true\"\n",
    )
    .unwrap();
    let (code, _, err) = p.run(&[
        "session",
        "codify",
        "screens",
        "--output",
        ".baton/workflows/again.toml",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("exists already"), "{err}");
}

/// `learn` turns a log's failures and a person's answers into JSON Lines
/// cases, as records or chats; `plan` counts its tokens per phase with
/// a real tokenizer, splits it and routes each phase.
#[test]
fn a_log_yields_learning_cases_and_a_token_plan() {
    let p = TestProject::new();
    p.workflow("steps", &format!("{STEPS}{ASK}"));
    assert_eq!(
        p.run(&["run", "steps", "Add the login form", "--id", "login"])
            .0,
        4
    );
    assert_eq!(
        p.run(&["inbox", "answer", "login/ask", "no", "--by", "ana"])
            .0,
        0
    );

    let (code, out, err) = p.run(&["session", "learn", "login", "--type", "puzzle"]);
    assert_eq!(code, 0, "{err}");
    let cases: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(cases.len(), 2, "{out}");
    assert_eq!(cases[0]["type"], "puzzle");
    assert_eq!(cases[0]["phase"], "build");
    assert!(
        cases[0]["what_went_wrong"]
            .as_str()
            .unwrap()
            .contains("the build broke")
    );
    assert_eq!(
        cases[0]["outcome"], "built",
        "the phase passed on its second attempt"
    );
    assert_eq!(cases[1]["phase"], "ask");
    assert_eq!(cases[1]["correction"], "ana answered\nno");

    let file = p.root().join("cases.jsonl");
    for _ in 0..2 {
        let (code, _, err) = p.run(&[
            "session",
            "learn",
            "login",
            "--format",
            "chat",
            "--output",
            file.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
    }
    let chats: Vec<serde_json::Value> = fs_err::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(chats.len(), 4, "appended");
    let roles: Vec<&str> = chats[0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant"]);
    assert!(
        chats[0]["messages"][1]["content"]
            .as_str()
            .unwrap()
            .contains("What went wrong:")
    );
    let (code, _, err) = p.run(&["session", "learn", "login", "--type", "essay"]);
    assert_eq!(code, 2);
    assert!(err.contains("use --type puzzle"), "{err}");

    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    text.push_str("\n[sessions]\nsplit_tokens = 60\nfast = \"quick\"\nstrong = \"deep\"\ndecision_phases = [\"check\"]\n");
    fs_err::write(&cfg, text).unwrap();
    let (code, out, err) = p.run(&["session", "plan", "login", "--json"]);
    assert_eq!(code, 0, "{err}");
    let plan: serde_json::Value = serde_json::from_str(&out).unwrap();
    let parts = plan["parts"].as_array().unwrap();
    assert!(parts.len() > 1, "{plan}");
    let all: Vec<&serde_json::Value> = parts.iter().flat_map(|p| p.as_array().unwrap()).collect();
    let route = |phase: &str| {
        let x = all.iter().find(|x| x["phase"] == phase).unwrap();
        (
            x["route"].as_str().unwrap().to_string(),
            x["to"].as_str().unwrap().to_string(),
        )
    };
    assert_eq!(route("plan"), ("fast".into(), "quick".into()));
    assert_eq!(route("check"), ("strong".into(), "deep".into()));
    assert_eq!(
        route("ask"),
        ("strong".into(), "deep".into()),
        "a person decided there"
    );
    // A real tokenizer, not bytes divided by four.
    let tokens: u64 = all.iter().map(|x| x["tokens"].as_u64().unwrap()).sum();
    assert!(
        tokens > 0 && plan["total"].as_u64().unwrap() >= tokens,
        "{plan}"
    );
    for part in parts {
        let sum: u64 = part
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["tokens"].as_u64().unwrap())
            .sum();
        assert!(sum <= 60 || part.as_array().unwrap().len() == 1, "{plan}");
    }
    // A mistake in [sessions] is refused when the config is read, by any
    // command, with what to write instead; the file is left as it was.
    let good = fs_err::read_to_string(&cfg).unwrap();
    fs_err::write(&cfg, format!("{good}subagents = \"sideways\"\n")).unwrap();
    let (code, _, err) = p.run(&["ls"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("subagents = \"sideways\": not a way to show subagents"),
        "{err}"
    );
    assert!(err.contains("\"inline\", \"link\" or \"embed\""), "{err}");
}

/// The log a real agent run renders, held against golden files: Claude
/// Code (on the scripted model server) starts a subagent with its Agent
/// tool; the subagent's messages (tied to that call by the stream's
/// `parent_tool_use_id`) go to its own log, linked from a `[!subagent]`
/// callout, or into the callout itself in `inline` mode. Times, tokens
/// and the CLI's version are masked. `BATON_BLESS=1` rewrites the files.
#[test]
fn a_real_agent_run_with_a_subagent_renders_as_the_golden_logs() {
    use baton_testkit::agents::Agent;
    use baton_testkit::model_server::{ModelServer, Reply};
    for mode in ["link", "inline"] {
        let p = TestProject::new();
        // Claude Code runs the subagent in the background: it and the main
        // agent ask the model at once, and the main agent may take another
        // turn when the subagent is done. Every answer is the same, so the
        // log is the same whoever gets which.
        let mut script = vec![Reply::tool(
            "Agent",
            serde_json::json!({"description": "look around", "prompt": "List the files and say what you see.", "subagent_type": "general-purpose"}),
        )];
        script.extend((0..6).map(|_| Reply::text("Seen: a README.")));
        let server = ModelServer::start(script);
        let home = tempfile::tempdir().unwrap();
        let cfg = p.root().join(".baton/config.toml");
        let mut text = fs_err::read_to_string(&cfg).unwrap();
        text.push_str(&Agent::Claude.baton_config("cc", &server, home.path()));
        text.push_str(&format!("\n[sessions]\nsubagents = \"{mode}\"\n"));
        fs_err::write(&cfg, text).unwrap();
        p.workflow(
            "look",
            "name = \"look\"\n[defaults]\nagent = \"cc\"\n[[phase]]\nid = \"survey\"\nprompt = \"Survey the project with a subagent.\"\n",
        );
        let (code, _, err) = p.run(&["run", "look", "Survey the project", "--id", "survey"]);
        assert_eq!(code, 0, "{err}");
        let mut files = vec![("survey", format!("subagent-{mode}.md"))];
        if mode == "link" {
            files.push(("survey--1", "subagent-link-child.md".into()));
        } else {
            assert!(
                !p.root().join(".baton/sessions/survey--1.md").exists(),
                "inline: no file of its own"
            );
        }
        for (id, golden) in files {
            assert_golden(&p, id, &golden, masked(&log_of(&p, id)));
        }
    }
}

/// Codex's own agents: the model spawns one (`spawn_agent`, on by default
/// in Codex 0.169) and waits for it; the spawned agent, a conversation of
/// its own, runs a command and answers. Codex's stream says only that it
/// started, in which session: what it did is read from its own rollout
/// while it runs, into its own log linked from a `[!subagent]` callout,
/// with the tokens Codex counted for it. Times, tokens, thread ids and the
/// CLI's version are masked. `BATON_BLESS=1` rewrites the files.
#[test]
fn a_real_codex_run_with_a_spawned_agent_renders_as_the_golden_logs() {
    use baton_testkit::model_server::Reply;
    const TASK: &str = "Say what the folder holds.";
    // Codex 0.169's default agents (v1), whose stream says one started,
    // and `multi_agent_v2`, whose stream does not (its rollout does; the
    // agent gets the main agent's history first, which its log leaves out).
    for v2 in [false, true] {
        let (spawn, wait) = match v2 {
            false => (
                Reply::tool(
                    "multi_agent_v1__spawn_agent",
                    serde_json::json!({"message": TASK}),
                ),
                Reply::tool(
                    "multi_agent_v1__wait_agent",
                    serde_json::json!({"targets": ["{{agent_id}}"], "timeout_ms": 60000}),
                ),
            ),
            true => (
                Reply::tool(
                    "collaboration__spawn_agent",
                    serde_json::json!({"task_name": "look_around", "message": TASK}),
                ),
                Reply::tool(
                    "collaboration__wait_agent",
                    serde_json::json!({"timeout_ms": 60000}),
                ),
            ),
        };
        spawned_agent_run(v2, spawn, wait, TASK);
    }
}

fn spawned_agent_run(
    v2: bool,
    spawn: baton_testkit::model_server::Reply,
    wait: baton_testkit::model_server::Reply,
    task: &str,
) {
    use baton_testkit::agents::Agent;
    use baton_testkit::model_server::{ModelServer, Reply};
    let p = TestProject::new();
    let server = ModelServer::start_with_branches(
        vec![spawn, wait, Reply::text("The spawned agent looked.")],
        vec![(
            task,
            vec![
                Reply::tool("exec_command", serde_json::json!({"cmd": "echo looked"})),
                Reply::text("It holds a project."),
            ],
        )],
    );
    let home = tempfile::tempdir().unwrap();
    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    let agent = Agent::Codex.baton_config("cx", &server, home.path());
    let agent = match v2 {
        true => agent.replacen("'plugins']", "'plugins', '--enable', 'multi_agent_v2']", 1),
        false => agent,
    };
    assert!(!v2 || agent.contains("multi_agent_v2"), "{agent}");
    text.push_str(&agent);
    fs_err::write(&cfg, text).unwrap();
    p.workflow(
        "look",
        "name = \"look\"\n[defaults]\nagent = \"cx\"\n[[phase]]\nid = \"survey\"\nprompt = \"Survey the project with a spawned agent.\"\n",
    );
    let (code, _, err) = p.run(&["run", "look", "Survey the project", "--id", "survey"]);
    assert_eq!(code, 0, "{err}");
    let parent = log_of(&p, "survey");
    let tokens = parent
        .lines()
        .find(|l| l.contains("{session: survey--1"))
        .and_then(|l| l.split("tokens: ").nth(1))
        .and_then(|t| t.trim_end_matches('}').parse::<u64>().ok());
    assert!(
        tokens.is_some_and(|t| t > 1000),
        "the tokens Codex counted for its agent (its requests hold Codex's instructions): {parent}"
    );
    // The task's tokens are its main agent's (Codex's `turn.completed`,
    // in the stream it wrote) and its spawned agent's.
    let stream: String = walk(&p.root().join(".baton/tasks/survey"))
        .into_iter()
        .filter_map(|f| fs_err::read_to_string(f).ok())
        .collect();
    let own: u64 = stream
        .lines()
        .filter(|l| l.starts_with("{\"type\":\"turn.completed\""))
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["usage"]["input_tokens"].as_u64().unwrap()
                + v["usage"]["output_tokens"].as_u64().unwrap()
        })
        .sum();
    assert!(own > 0, "no turn.completed in the stream");
    let front = baton_core::session_log::parse(&parent).unwrap().front;
    assert_eq!(front.tokens_used, own + tokens.unwrap(), "{parent}");
    let v = if v2 { "-v2" } else { "" };
    for (id, golden) in [
        ("survey", format!("codex-spawned{v}.md")),
        ("survey--1", format!("codex-spawned{v}-child.md")),
    ] {
        // The tokens Codex counts vary with the request (its dates, paths).
        let got: String = masked(&log_of(&p, id))
            .lines()
            .map(|l| match l.split_once("tokens: ") {
                Some((head, _)) if head.contains("{session: ") => format!("{head}tokens: …}}\n"),
                _ => format!("{l}\n"),
            })
            .collect();
        assert_golden(&p, id, &golden, got);
    }
}

/// Log `id`, masked as `got`, is `tests/golden/<golden>` (`BATON_BLESS=1`
/// writes it), and what baton wrote reads back to itself.
fn assert_golden(p: &TestProject, id: &str, golden: &str, got: String) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(golden);
    if std::env::var_os("BATON_BLESS").is_some() {
        fs_err::create_dir_all(path.parent().unwrap()).unwrap();
        fs_err::write(&path, &got).unwrap();
    }
    let want = fs_err::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{golden}: {e}; run with BATON_BLESS=1 to write it"));
    assert_eq!(got, want, "{golden} differs; the log was:\n{got}");
    let raw = log_of(p, id);
    let parsed = baton_core::session_log::parse(&raw).unwrap();
    assert_eq!(baton_core::session_log::render(&parsed), raw);
}

/// `line` with every UUID-shaped id (Codex's thread ids) as `<id>`.
fn without_thread_ids(line: &str) -> String {
    let b = line.as_bytes();
    let shape = |at: usize| {
        b.len() >= at + 36
            && b[at..at + 36].iter().enumerate().all(|(i, c)| match i {
                8 | 13 | 18 | 23 => *c == b'-',
                _ => c.is_ascii_hexdigit(),
            })
    };
    let mut out = String::new();
    let mut i = 0;
    while i < line.len() {
        if line.is_char_boundary(i) && shape(i) {
            out.push_str("<id>");
            i += 36;
        } else {
            let c = line[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// A log with what changes from run to run masked: times, tokens, the
/// CLI's version, the project's folder name.
fn masked(log: &str) -> String {
    log.lines()
        .map(|l| {
            for key in ["started: ", "ended: ", "tokens_used: "] {
                if l.starts_with(key) {
                    return format!("{key}…");
                }
            }
            for agent in ["cc", "cx"] {
                if let Some(rest) = l.strip_prefix(&format!("participants: [{agent}@")) {
                    return format!(
                        "participants: [{agent}@…{}",
                        &rest[rest.find(']').unwrap_or(rest.len())..]
                    );
                }
            }
            if l.starts_with("labels: ") {
                return "labels: …".to_string();
            }
            without_thread_ids(l)
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in fs_err::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}
