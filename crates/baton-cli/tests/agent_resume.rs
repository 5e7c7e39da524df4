//! A crashed agent phase continues its own CLI session; a session the CLI
//! no longer has falls back to a new one given baton's brief; a task hands
//! off from one CLI to another with the brief in the new CLI's memory file
//! and prompt. All with the real CLIs against the scripted model server,
//! which records what each CLI sent.

use baton_testkit::TestProject;
use baton_testkit::agents::Agent;
use baton_testkit::model_server::{ModelServer, Reply};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::path::Path;
use std::time::{Duration, Instant};

/// Adds `[agents.NAME]` for `agent` on `server`, its config home in `home`.
fn add_agent(p: &TestProject, name: &str, agent: Agent, server: &ModelServer, home: &Path) {
    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    text.push_str(&agent.baton_config(name, server, home));
    fs_err::write(&cfg, text).unwrap();
}

fn home() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("baton-agent-home-")
        .tempdir()
        .unwrap()
}

fn wait_until(what: &str, limit: Duration, mut ok: impl FnMut() -> bool) {
    let until = Instant::now() + limit;
    while !ok() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The text of every model request's body, for searching.
fn bodies(server: &ModelServer) -> Vec<String> {
    server
        .model_requests()
        .iter()
        .map(|r| r.body.to_string())
        .collect()
}

/// Where each CLI keeps its sessions under its config home.
fn delete_native_sessions(agent: Agent, home: &Path) {
    let dirs: &[&str] = match agent {
        Agent::Claude => &[".claude/projects"],
        Agent::Codex => &[".codex/sessions"],
        Agent::Gemini => &[".gemini/tmp"],
        Agent::Qwen => &[".qwen/tmp", ".qwen/projects"],
        Agent::Opencode => &[".local/share/opencode"],
        Agent::Copilot => &[".copilot/session-state"],
        Agent::Droid => &[".factory/sessions"],
    };
    let mut gone = 0;
    for d in dirs {
        if home.join(d).exists() {
            fs_err::remove_dir_all(home.join(d)).unwrap();
            gone += 1;
        }
    }
    assert!(gone > 0, "{} kept no sessions in {dirs:?}", agent.program());
}

const WORKFLOW: &str = "name = \"w\"\n[[phase]]\nid = \"write\"\nagent = \"cc\"\nmax_attempts = 1\nprompt = \"Write the greeting for {{task}}\"\n";

/// `baton run` of a one-phase agent task, SIGKILLed while the CLI waits
/// for its second model turn (after it wrote a file through a tool).
/// Returns the native session id journaled before the kill.
fn crash_mid_phase(p: &TestProject, server: &ModelServer) -> String {
    p.workflow("w", WORKFLOW);
    let mut run = p
        .baton(&["run", "w", "the team", "--id", "t"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_until(
        "the CLI to ask for its second turn",
        Duration::from_secs(120),
        || server.turns_taken() >= 2,
    );
    // What baton journaled of the first turn is what a later brief can say.
    wait_until(
        "the tool's result in the journal",
        Duration::from_secs(30),
        || {
            p.journal("t").iter().any(|e| {
                e["kind"] == "agent_activity"
                    && e["events"]
                        .as_array()
                        .is_some_and(|a| a.iter().any(|x| x["kind"] == "tool_result"))
            })
        },
    );
    // The session id is in the journal before anything is lost.
    let session = p
        .journal("t")
        .iter()
        .find(|e| e["kind"] == "agent_session")
        .map(|e| e["session"]["native_id"].as_str().unwrap().to_string())
        .expect("the native session is journaled while the CLI runs");
    kill(Pid::from_raw(run.id() as i32), Signal::SIGKILL).unwrap();
    run.wait().unwrap();
    assert_eq!(p.state("t")["status"], "CRASHED");
    session
}

/// The CLI's write tool, a turn that never comes (the crash), then the end.
fn script(agent: Agent, p: &TestProject) -> Vec<Reply> {
    let (tool, args) = agent.write_tool(&p.root().join("hello.txt"), "hi");
    vec![
        Reply::tool(tool, args),
        Reply::hang(),
        Reply::text("finished after the crash"),
    ]
}

fn a_crashed_phase_continues_its_native_session(agent: Agent) {
    let p = TestProject::new();
    let h = home();
    let server = ModelServer::start(script(agent, &p));
    add_agent(&p, "cc", agent, &server, h.path());
    let native = crash_mid_phase(&p, &server);

    let (code, _, err) = p.run(&["resume", "t"]);
    assert_eq!(code, 0, "{}: {err}", agent.program());
    let doc = p.state("t");
    assert_eq!(doc["status"], "COMPLETE");
    assert_eq!(
        doc["completed_phases"][0]["summary"],
        "finished after the crash"
    );
    let sessions: Vec<(String, String)> = p
        .journal("t")
        .iter()
        .filter(|e| e["kind"] == "agent_session")
        .map(|e| {
            (
                e["session"]["native_id"].as_str().unwrap().to_string(),
                e["session"]["start"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    // droid continues a session offline by forking it: the conversation
    // goes on under a new id, journaled as a resume, and the log says so.
    let continued = if agent == Agent::Droid {
        let forked = sessions.last().map(|s| s.0.clone()).unwrap_or_default();
        assert_ne!(forked, native, "a fork has its own id");
        let (_, log, _) = p.run(&["log", "t"]);
        assert!(
            log.contains(&format!(
                "the droid session {native} was forked into {forked}"
            )),
            "{log}"
        );
        forked
    } else {
        native.clone()
    };
    assert_eq!(
        doc["completed_phases"][0]["native_session_id"],
        continued.as_str()
    );
    // The second attempt continued the same native session...
    assert_eq!(
        sessions,
        vec![(native, "new".into()), (continued, "resumed".into())],
        "{}",
        agent.program()
    );
    // ...so the CLI itself sent the earlier conversation (the task's
    // prompt, the tool call's result) with baton's note to go on.
    let last = bodies(&server).pop().unwrap();
    assert!(last.contains("Write the greeting for the team"), "{last}");
    assert!(last.contains("this session was interrupted"), "{last}");
    assert!(
        !last.contains("Work in progress (interrupted)"),
        "a native resume needs no brief: {last}"
    );
    assert_eq!(
        fs_err::read_to_string(p.root().join("hello.txt"))
            .unwrap()
            .trim(),
        "hi"
    );
}

fn a_lost_native_session_falls_back_to_the_brief(agent: Agent) {
    let p = TestProject::new();
    let h = home();
    let server = ModelServer::start(script(agent, &p));
    add_agent(&p, "cc", agent, &server, h.path());
    let native = crash_mid_phase(&p, &server);
    // The orphaned CLI first (it could write its session again as it
    // exits), then its sessions.
    let pgid = p
        .journal("t")
        .iter()
        .rfind(|e| e["kind"] == "phase_process")
        .unwrap()["process"]["pid"]
        .as_i64()
        .unwrap();
    let _ = kill(Pid::from_raw(-(pgid as i32)), Signal::SIGKILL);
    wait_until("the orphaned CLI to die", Duration::from_secs(10), || {
        kill(Pid::from_raw(-(pgid as i32)), None).is_err()
    });
    delete_native_sessions(agent, h.path());

    let (code, _, err) = p.run(&["resume", "t"]);
    assert_eq!(code, 0, "{}: {err}", agent.program());
    assert!(
        err.contains("could not continue the"),
        "{}: says why it starts over: {err}",
        agent.program()
    );
    match agent {
        // droid would start an empty session (or fail without a word): its
        // transcript is checked before it is asked to continue one.
        Agent::Droid => assert!(
            err.contains(".factory/sessions/") && err.contains("is gone"),
            "{err}"
        ),
        Agent::Copilot => assert!(err.contains("has no such session"), "{err}"),
        _ => {}
    }
    let doc = p.state("t");
    assert_eq!(doc["status"], "COMPLETE");
    assert_eq!(
        doc["completed_phases"][0]["summary"],
        "finished after the crash"
    );
    let journal = p.journal("t");
    let starts: Vec<&str> = journal
        .iter()
        .filter(|e| e["kind"] == "agent_session")
        .map(|e| e["session"]["start"].as_str().unwrap())
        .collect();
    assert_eq!(starts.first(), Some(&"new"));
    assert_eq!(
        starts.last(),
        Some(&"brief"),
        "{}: {starts:?}",
        agent.program()
    );
    let fresh = journal
        .iter()
        .rfind(|e| e["kind"] == "agent_session")
        .unwrap()["session"]["native_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(fresh, native, "a new session");
    // The new session was told what the lost one did: the file it wrote
    // through its tool, with the result.
    let last = bodies(&server).pop().unwrap();
    assert!(last.contains("Work in progress (interrupted)"), "{last}");
    assert!(last.contains("hello.txt"), "{last}");
    assert!(last.contains("Write the greeting for the team"), "{last}");
}

macro_rules! per_cli {
    ($($name:ident: $agent:expr;)*) => {
        mod continues_natively {
            use super::*;
            $(#[test] fn $name() { a_crashed_phase_continues_its_native_session($agent) })*
        }
        mod falls_back_to_the_brief {
            use super::*;
            $(#[test] fn $name() { a_lost_native_session_falls_back_to_the_brief($agent) })*
        }
    };
}

per_cli! {
    claude: Agent::Claude;
    codex: Agent::Codex;
    gemini: Agent::Gemini;
    qwen: Agent::Qwen;
    opencode: Agent::Opencode;
    copilot: Agent::Copilot;
    droid: Agent::Droid;
}

/// Two agent phases with a gate between that fails the first time: the
/// task fails on `from`, is handed off to `to`, and finishes there.
fn handoff(from: Agent, to: Agent) {
    let p = TestProject::new();
    let (h1, h2) = (home(), home());
    let s1 = ModelServer::start(vec![Reply::text(
        "analysis: the greeting goes in hello.txt",
    )]);
    let (tool, args) = to.write_tool(&p.root().join("hello.txt"), "hi");
    let s2 = ModelServer::start(vec![
        Reply::tool(tool, args),
        Reply::text("written by the new agent"),
    ]);
    add_agent(&p, "first", from, &s1, h1.path());
    add_agent(&p, "second", to, &s2, h2.path());
    // The user's own memory file, which baton must leave as it is.
    let memory = baton_agents::by_name(to.program())
        .expect("a built-in adapter of that name")
        .memory_file();
    fs_err::write(p.root().join(memory), "# House rules\n\nUse tabs.\n").unwrap();
    p.workflow(
        "w",
        "name = \"w\"\n[[phase]]\nid = \"analyze\"\nprompt = \"Analyze {{task}}\"\n[[phase]]\nid = \"gate\"\nrun = \"test -f go\"\nmax_attempts = 1\n[[phase]]\nid = \"write\"\nprompt = \"Write the greeting\"\n",
    );
    let (code, _, err) = p.run(&["run", "w", "the team", "--id", "t", "--agent", "first"]);
    assert_eq!(code, 1, "the gate fails: {err}");
    fs_err::write(p.root().join("go"), "").unwrap();

    let (code, _, err) = p.run(&["handoff", "t", "--to", "second"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("handed off to second"), "{err}");
    // The memory file is the user's own again once the phase is over:
    // baton's fenced brief was there only while the new CLI ran.
    let text = fs_err::read_to_string(p.root().join(memory)).unwrap();
    assert_eq!(text, "# House rules\n\nUse tabs.\n");
    // The new CLI got the brief from its memory file (the fence is only
    // there), after the user's text, and in its prompt (which names the
    // task's phases).
    let first = s2.model_requests()[0].body.to_string();
    assert!(
        first.contains("baton:handoff-brief begin"),
        "memory file not read: {first}"
    );
    assert!(first.contains("House rules"), "{first}");
    assert!(
        first.find("House rules") < first.find("baton:handoff-brief begin"),
        "{first}"
    );
    assert!(
        first.contains("analysis: the greeting goes in hello.txt"),
        "{first}"
    );
    assert!(first.contains("Handoff brief: t"), "{first}");
    assert_eq!(
        fs_err::read_to_string(p.root().join("hello.txt"))
            .unwrap()
            .trim(),
        "hi"
    );
    let doc = p.state("t");
    assert_eq!(doc["status"], "COMPLETE");
    assert_eq!(doc["last_agent"], "second");
    let history: Vec<(String, Vec<String>)> = doc["cli_history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["agent"].as_str().unwrap().to_string(),
                h["phases"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_str().unwrap().to_string())
                    .collect(),
            )
        })
        .collect();
    assert_eq!(
        history,
        vec![
            ("first".to_string(), vec!["analyze".to_string()]),
            ("second".to_string(), vec!["write".to_string()]),
        ]
    );
    for h in doc["cli_history"].as_array().unwrap() {
        assert!(h["duration_s"].as_f64().is_some(), "{h}");
    }
    let write = &doc["completed_phases"][2];
    assert_eq!(write["agent"], "second");
    assert_eq!(write["exit_code"], 0);
    assert!(write["tokens"]["output"].as_u64().unwrap() > 0, "{write}");
    // The journal says who took over, and why.
    let switched: Vec<_> = p
        .journal("t")
        .into_iter()
        .filter(|e| e["kind"] == "agent_switched")
        .collect();
    assert_eq!(switched.len(), 2, "run --agent, then the handoff");
    assert_eq!(switched[1]["from"], "first");
    assert_eq!(switched[1]["to"], "second");
    assert_eq!(switched[1]["reason"], "baton handoff --to");
    // Handing off again replaces baton's section; it never piles up.
    let (code, _, err) = p.run(&["handoff", "t", "--to", "first"]);
    assert_eq!(code, 2, "a complete task has nothing to hand off: {err}");
    assert!(err.contains("no phases left"), "{err}");
}

/// A queued task handed off to another CLI: the brief reaches the new CLI
/// through its memory file, but never the task's branch.
#[test]
fn a_queued_tasks_branch_never_carries_the_handoff_brief() {
    let p = TestProject::new();
    let (h1, h2) = (home(), home());
    let s1 = ModelServer::start(vec![Reply::text("analysis: greet in hello.txt")]);
    let (tool, args) =
        Agent::Codex.write_tool(&p.root().join(".baton/worktrees/t/hello.txt"), "hi");
    let s2 = ModelServer::start(vec![Reply::tool(tool, args), Reply::text("written")]);
    add_agent(&p, "first", Agent::Claude, &s1, h1.path());
    add_agent(&p, "second", Agent::Codex, &s2, h2.path());
    // The user's AGENTS.md is in the repository; CLAUDE.md is not.
    fs_err::write(p.root().join("AGENTS.md"), "# House rules\n").unwrap();
    p.workflow(
        "w",
        "name = \"w\"\n[[phase]]\nid = \"analyze\"\nprompt = \"Analyze {{task}}\"\n[[phase]]\nid = \"gate\"\nrun = \"test -f \\\"$BATON_PROJECT/go\\\"\"\nmax_attempts = 1\n[[phase]]\nid = \"write\"\nprompt = \"Write the greeting\"\n",
    );
    p.git(&["add", "-A"]);
    p.git(&["commit", "-qm", "house rules and workflow"]);
    let (code, _, err) = p.run(&[
        "run", "w", "greet", "--id", "t", "--agent", "first", "--queue",
    ]);
    assert_eq!(code, 0, "{err}");
    let out = p.baton(&["worker", "--until-idle"]).output().unwrap();
    assert_eq!(p.state("t")["status"], "FAILED", "the gate fails: {out:?}");
    fs_err::write(p.root().join("go"), "").unwrap();

    let (code, _, err) = p.run(&["handoff", "t", "--to", "second"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(p.state("t")["status"], "COMPLETE");
    let first = s2.model_requests()[0].body.to_string();
    assert!(first.contains("baton:handoff-brief begin"), "{first}");
    assert!(first.contains("analysis: greet in hello.txt"), "{first}");
    // Every commit on the branch, and its tip: the user's AGENTS.md only.
    let history = p.git(&["log", "-p", "baton/t"]);
    assert!(
        history.contains("hello.txt"),
        "the write phase's commit: {history}"
    );
    assert!(!history.contains("baton:handoff-brief"), "{history}");
    assert_eq!(p.git(&["show", "baton/t:AGENTS.md"]), "# House rules\n");
    let files = p.git(&["ls-tree", "-r", "--name-only", "baton/t"]);
    assert!(!files.contains("CLAUDE.md"), "{files}");
    // Complete, its work published: its worktree is gone, as a worker's
    // is (issue 34), so no brief is left anywhere on disk either.
    let wt = p.root().join(".baton/worktrees/t");
    assert!(!wt.exists(), "the worktree of a complete task is removed");
}

#[test]
fn a_task_hands_off_from_claude_code_to_codex() {
    handoff(Agent::Claude, Agent::Codex);
}

#[test]
fn a_task_hands_off_from_codex_to_gemini_cli() {
    handoff(Agent::Codex, Agent::Gemini);
}

#[test]
fn a_task_hands_off_from_claude_code_to_copilot() {
    handoff(Agent::Claude, Agent::Copilot);
}

#[test]
fn a_task_hands_off_from_codex_to_droid() {
    handoff(Agent::Codex, Agent::Droid);
}

/// A Claude Code session the user ran by hand (outside baton) in the
/// project, which wrote hello.txt: returns its session id.
fn a_session_outside_baton(p: &TestProject, server: &ModelServer, home: &Path) -> String {
    a_session_of(Agent::Claude, p, server, home)
}

/// A session of `agent` the user ran by hand (outside baton) in the
/// project: returns its session id (chosen up front where the CLI takes
/// one, else read from its stream).
fn a_session_of(agent: Agent, p: &TestProject, server: &ModelServer, home: &Path) -> String {
    let chosen = "6f1e2d3c-4b5a-4987-8c6d-5e4f3a2b1c0d";
    let run = baton_testkit::agents::Run {
        agent,
        server,
        workdir: p.root(),
        home,
    };
    let out = run
        .command(
            "Write the greeting for the team",
            agent.takes_session_id().then_some(chosen),
            None,
        )
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    if agent.takes_session_id() {
        return chosen.to_string();
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).ok()?;
            v["session_id"].as_str().map(str::to_string)
        })
        .expect("a session id in the stream")
}

/// `baton import` of a session of `agent` run by hand, found by its id
/// in the CLI's own folder, continued natively on that CLI (droid: forked,
/// a new id).
fn an_imported_session_continues_natively(agent: Agent) {
    let p = TestProject::new();
    let h = home();
    let (tool, args) = agent.write_tool(&p.root().join("hello.txt"), "hi");
    let server = ModelServer::start(vec![
        Reply::tool(tool, args),
        Reply::text("written by hand"),
        Reply::text("continued under baton"),
    ]);
    add_agent(&p, "cc", agent, &server, h.path());
    let session = a_session_of(agent, &p, &server, h.path());

    let cli = agent.program();
    let (code, _, err) = p.run(&["import", cli, &session, "--id", "t", "--agent", "cc"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains(&format!("importing {cli} session {session}")),
        "{err}"
    );
    let doc = p.state("t");
    assert_eq!(doc["status"], "COMPLETE");
    assert_eq!(doc["task_description"], "Write the greeting for the team");
    assert_eq!(
        doc["completed_phases"][0]["summary"],
        "continued under baton"
    );
    // The CLI itself sent the session's history: the prompt typed by hand,
    // its answer.
    let last = bodies(&server).pop().unwrap();
    assert!(last.contains("Write the greeting for the team"), "{last}");
    assert!(last.contains("written by hand"), "{last}");
    let journal = p.journal("t");
    let imported = journal.iter().find(|e| e["kind"] == "imported").unwrap();
    assert_eq!(imported["session"]["native_id"], session.as_str());
    let started = journal
        .iter()
        .find(|e| e["kind"] == "agent_session")
        .unwrap();
    assert_eq!(started["session"]["start"], "resumed");
    let continued = started["session"]["native_id"].as_str().unwrap();
    if agent == Agent::Droid {
        assert_ne!(continued, session, "droid forks the session");
        let (_, log, _) = p.run(&["log", "t"]);
        assert!(
            log.contains(&format!(
                "the droid session {session} was forked into {continued}"
            )),
            "{log}"
        );
    } else {
        assert_eq!(continued, session);
    }
    assert_eq!(doc["completed_phases"][0]["native_session_id"], continued);
}

#[test]
fn an_imported_copilot_session_continues_natively_on_copilot() {
    an_imported_session_continues_natively(Agent::Copilot);
}

#[test]
fn an_imported_droid_session_continues_natively_on_droid() {
    an_imported_session_continues_natively(Agent::Droid);
}

#[test]
fn an_imported_claude_session_continues_natively_on_claude() {
    let p = TestProject::new();
    let h = home();
    let (tool, args) = Agent::Claude.write_tool(&p.root().join("hello.txt"), "hi");
    let server = ModelServer::start(vec![
        Reply::tool(tool, args),
        Reply::text("written by hand"),
        Reply::text("continued under baton"),
    ]);
    add_agent(&p, "cc", Agent::Claude, &server, h.path());
    let session = a_session_outside_baton(&p, &server, h.path());

    let (code, _, err) = p.run(&["import", "claude", &session, "--id", "t", "--agent", "cc"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains(&format!("importing claude session {session}")),
        "{err}"
    );
    let doc = p.state("t");
    assert_eq!(doc["status"], "COMPLETE");
    assert_eq!(doc["task_description"], "Write the greeting for the team");
    assert_eq!(
        doc["completed_phases"][0]["summary"],
        "continued under baton"
    );
    assert_eq!(
        doc["completed_phases"][0]["native_session_id"],
        session.as_str()
    );
    // Claude itself sent the session's history: the prompt typed by hand.
    let last = bodies(&server).pop().unwrap();
    assert!(last.contains("Write the greeting for the team"), "{last}");
    assert!(last.contains("written by hand"), "{last}");
    let journal = p.journal("t");
    let imported = journal.iter().find(|e| e["kind"] == "imported").unwrap();
    assert_eq!(imported["session"]["native_id"], session.as_str());
    let started = journal
        .iter()
        .find(|e| e["kind"] == "agent_session")
        .unwrap();
    assert_eq!(started["session"]["start"], "resumed");
}

#[test]
fn an_imported_claude_session_continues_on_codex_with_its_history_in_the_brief() {
    let p = TestProject::new();
    let (h1, h2) = (home(), home());
    let (tool, args) = Agent::Claude.write_tool(&p.root().join("hello.txt"), "hi");
    let by_hand = ModelServer::start(vec![
        Reply::tool(tool, args),
        Reply::text("written by hand"),
    ]);
    let codex = ModelServer::start(vec![Reply::text("taken over by codex")]);
    add_agent(&p, "cc", Agent::Claude, &by_hand, h1.path());
    add_agent(&p, "cx", Agent::Codex, &codex, h2.path());
    let session = a_session_outside_baton(&p, &by_hand, h1.path());

    let (code, _, err) = p.run(&["import", "claude", &session, "--id", "t", "--agent", "cx"]);
    assert_eq!(code, 0, "{err}");
    let doc = p.state("t");
    assert_eq!(doc["completed_phases"][0]["summary"], "taken over by codex");
    assert_eq!(doc["last_agent"], "cx");
    // Codex was told what the Claude session did: the file it wrote, the
    // result, what it said.
    let sent = bodies(&codex).pop().unwrap();
    assert!(sent.contains("Imported session"), "{sent}");
    assert!(
        sent.contains(&format!("claude session ({session})")),
        "{sent}"
    );
    assert!(sent.contains("called Write"), "{sent}");
    assert!(sent.contains("hello.txt"), "{sent}");
    assert!(sent.contains("written by hand"), "{sent}");
}

#[test]
fn import_mistakes_are_refused_with_a_hint() {
    let p = TestProject::new();
    let h = home();
    let server = ModelServer::start(vec![]);
    add_agent(&p, "cc", Agent::Claude, &server, h.path());
    let (code, _, err) = p.run(&["import", "crush", "x"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("baton cannot import sessions of \"crush\""),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "name the CLI that wrote the session: {}",
            baton_agents::clis::listed()
        )),
        "{err}"
    );
    for cli in baton_agents::clis::NAMES {
        assert!(err.contains(cli), "{err}");
    }
    // An id Claude has no session for: the folder searched is named.
    let (code, _, err) = p.run(&["import", "claude", "6f1e2d3c-0000-4987-8c6d-5e4f3a2b1c0d"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(".claude/projects"), "{err}");
    // A file of another kind.
    fs_err::write(p.root().join("notes.jsonl"), "{\"hello\": 1}\n").unwrap();
    let (code, _, err) = p.run(&["import", "codex", "notes.jsonl"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a Codex session file"), "{err}");
    let (code, out, _) = p.run(&["ls", "--json"]);
    assert_eq!(code, 0);
    assert_eq!(out.trim(), "[]", "nothing was created");
}
