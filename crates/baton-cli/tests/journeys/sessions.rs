//! Journeys through session logs: from the first phase, through a
//! crash, into codify and back into a run. Crashes are placed with
//! `BATON_TEST_CRASH_AT` or by killing the runner while its phase waits
//! for a file the test writes, so no race is left to chance; agents are
//! generic ones (`command = [...]` running `sh`), named in the logs like
//! built-in ones.

use baton_testkit::{TestProject, on_both_backends, process_gone, wait_for};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Two generic agents: each says what its prompt's first line asked,
/// then that it is done (its summary).
const AGENTS: &str = r#"
[agents.fake]
command = ["sh", "-c", "echo \"fake read: $(head -n 1 \"$1\")\"; echo 'fake: done'", "fake", "{{prompt_file}}"]

[agents.other]
command = ["sh", "-c", "echo \"other read: $(head -n 1 \"$1\")\"; echo 'other: done'", "other", "{{prompt_file}}"]
"#;

fn with_agents(p: &TestProject) {
    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    text.push_str(AGENTS);
    fs_err::write(&cfg, text).unwrap();
}

fn log_path(p: &TestProject, id: &str) -> PathBuf {
    p.root().join(format!(".baton/sessions/{id}.md"))
}

fn log_of(p: &TestProject, id: &str) -> String {
    fs_err::read_to_string(log_path(p, id)).unwrap()
}

/// `baton session ls --json`: (id, status) of each log.
fn listed(p: &TestProject) -> Vec<(String, String)> {
    let (code, out, err) = p.run(&["session", "ls", "--json"]);
    assert_eq!(code, 0, "{err}");
    let rows: Vec<Value> = serde_json::from_str(&out).unwrap();
    rows.iter()
        .map(|r| {
            (
                r["session_id"].as_str().unwrap().to_string(),
                r["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// `baton session query ARGS… --json`: the ids found.
fn query(p: &TestProject, args: &[&str]) -> Vec<String> {
    let mut all = vec!["session", "query", "--json"];
    all.extend_from_slice(args);
    let (code, out, err) = p.run(&all);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str::<Vec<Value>>(&out)
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

/// Each phase's id and status, from `show --json`.
fn statuses(p: &TestProject, id: &str) -> Vec<(String, String)> {
    p.state(id)["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|ph| {
            (
                ph["id"].as_str().unwrap().to_string(),
                ph["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The hand-written log docs/cli.md shows (*baton session*), as a user
/// copies it from there.
fn documented_example() -> String {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/cli.md");
    let text = fs_err::read_to_string(docs).unwrap();
    let from = text
        .find("A log can be written by hand")
        .expect("docs/cli.md shows a log written by hand");
    let rest = &text[from..];
    let start = rest.find("```markdown\n").expect("its example") + "```markdown\n".len();
    let end = rest[start..].find("\n```").expect("the example's end");
    format!("{}\n", &rest[start..start + end])
}

/// The pid `run --detach` says its runner has.
fn runner_pid(stderr: &str) -> u32 {
    let at = stderr.find("(pid ").expect("run --detach names its runner") + 5;
    stderr[at..]
        .split(')')
        .next()
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

const SLOW: &str = r#"name = "slow"

[[phase]]
id = "prepare"
run = "echo prepared"

[[phase]]
id = "hold"
run = "while [ ! -f \"$BATON_PROJECT/go\" ]; do sleep 0.05; done; echo held"

[[phase]]
id = "after"
run = "echo after"
"#;

const STEPS: &str = r#"name = "steps"

[[phase]]
id = "plan"
run = "echo 'the plan: two screens'"

[[phase]]
id = "build"
run = "echo built"

[[phase]]
id = "ship"
run = "echo shipped"
"#;

on_both_backends! {
    /// A user watches the log of a task that is still running, kills the runner, and the log says CRASHED at the phase that ran; `resume` brings it back to the end.
    fn a_running_tasks_log_is_there_and_says_crashed_when_its_runner_dies() {
        let p = TestProject::new();
        p.workflow("slow", SLOW);
        let (code, _, err) = p.run(&["run", "slow", "Watch the log", "--id", "w", "--detach"]);
        assert_eq!(code, 0, "{err}");
        let pid = runner_pid(&err);
        // While `hold` waits for the file, the log is there and shows it.
        let log = wait_for("the log at hold", || {
            let log = std::fs::read_to_string(log_path(&p, "w")).ok()?;
            log.contains("\n## hold\n").then_some(log)
        });
        assert!(log.contains("status: active\n") && log.contains("resume_point: hold\n"), "{log}");
        assert!(log.contains("\n## prepare\n\n> [!command]\n> echo prepared\n\n> [!summary] passed\n> prepared\n"), "{log}");
        assert_eq!(listed(&p), [("w".to_string(), "active".to_string())]);
        assert_eq!(query(&p, &["--status", "active"]), ["w"]);

        // The runner dies; its phase's process is left waiting.
        let killed = std::process::Command::new("kill").args(["-9", &pid.to_string()]).status().unwrap();
        assert!(killed.success());
        wait_for("the runner gone", || process_gone(pid).then_some(()));
        assert_eq!(p.state("w")["status"], "CRASHED");
        // The session commands find it so, and say it as `baton ls` does.
        assert_eq!(listed(&p), [("w".to_string(), "crashed".to_string())]);
        assert_eq!(query(&p, &["--status", "crashed"]), ["w"]);
        let log = log_of(&p, "w");
        assert!(log.contains("status: crashed\n") && log.contains("resume_point: hold\n"), "{log}");
        assert!(
            log.contains("\n## hold\n\n> [!command]\n") && log.contains("> [!error] the runner died while attempt 1 ran\n"),
            "{log}"
        );
        assert!(log.contains("> The task is CRASHED: `baton resume w` runs hold again from its start.\n"), "{log}");
        let (code, out, _) = p.run(&["session", "show", "w", "--json"]);
        assert_eq!(code, 0);
        let shown: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(shown["front"]["status"], "crashed");

        // Resumed, it runs hold again and ends; the log carries on.
        fs_err::write(p.root().join("go"), "").unwrap();
        let (code, _, err) = p.run(&["resume", "w"]);
        assert_eq!(code, 0, "{err}");
        let log = log_of(&p, "w");
        assert!(log.contains("status: completed\n"), "{log}");
        assert!(log.contains("> [!error] attempt 1 was interrupted\n"), "{log}");
        assert!(!log.contains("the runner died"), "the crash is history now: {log}");
        assert_eq!(query(&p, &["--status", "completed"]), ["w"]);
    }

    /// A user whose runner is killed as a later phase's process spawns finds the log behind; `doctor` says so, `--fix` renders it CRASHED at that phase, and `session resume` finishes the task.
    fn doctor_and_session_resume_mend_the_log_of_a_task_killed_at_a_crash_point() {
        let p = TestProject::new();
        p.workflow("steps", STEPS);
        let out = p
            .baton(&["run", "steps", "Crash me", "--id", "c"])
            .env("BATON_TEST_CRASH_AT", "after-spawn:build")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), None, "killed: {}", String::from_utf8_lossy(&out.stderr));
        // The runner wrote the log when the first phase started.
        let log = log_of(&p, "c");
        assert!(log.contains("status: active\n") && log.contains("\n## plan\n"), "{log}");

        let (code, out, err) = p.run(&["doctor"]);
        assert_eq!(code, 1, "{out}{err}");
        let said = format!("{out}{err}");
        assert!(said.contains("task c: its session log says active but the task is CRASHED"), "{said}");
        let (code, out, err) = p.run(&["doctor", "--fix"]);
        assert_eq!(code, 1, "the task is still CRASHED: {out}{err}");
        assert!(format!("{out}{err}").contains("task c: rendered its session log again"), "{out}{err}");
        let log = log_of(&p, "c");
        assert!(log.contains("status: crashed\n") && log.contains("resume_point: build\n"), "{log}");
        assert!(log.contains("\n## build\n\n> [!command]\n> echo built\n\n> [!error] the runner died while attempt 1 ran\n"), "{log}");
        let (_, out, err) = p.run(&["doctor"]);
        assert!(!format!("{out}{err}").contains("its session log says"), "{out}{err}");

        // Continued by its log's id: the store's journal decides.
        let (code, _, err) = p.run(&["session", "resume", "c"]);
        assert_eq!(code, 0, "{err}");
        assert!(err.contains("task c is in this store"), "{err}");
        assert_eq!(p.passes("c").len(), 3);
        let log = log_of(&p, "c");
        assert!(log.contains("status: completed\n") && log.contains("> [!error] attempt 1 was interrupted\n"), "{log}");
        assert_eq!(query(&p, &["--status", "completed"]), ["c"]);
    }

    /// A user writes a session log by hand the way docs/cli.md shows it (block lists, `---` between phases, `resume_point: phase-2`) and resumes it in a fresh project: it goes on at the second phase with the first one's summary in the brief.
    fn the_documented_hand_written_log_resumes_as_documented() {
        let p = TestProject::new();
        with_agents(&p);
        let file = p.root().join("notes/login.md");
        fs_err::create_dir_all(file.parent().unwrap()).unwrap();
        fs_err::write(&file, documented_example()).unwrap();
        let file = file.to_str().unwrap();

        let (code, out, err) = p.run(&["session", "show", file, "--json"]);
        assert_eq!(code, 0, "{err}");
        let shown: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(shown["front"]["participants"], serde_json::json!(["orchestrator@1.0", "researcher@1.2"]));
        assert_eq!(shown["front"]["subagents"][0]["tokens"], 3200);
        assert_eq!(shown["front"]["resume_point"], "phase-2");
        assert_eq!(shown["phases"][0]["summary"], "The form lives in src/login.rs; it posts to /session.", "the separator is no summary");
        assert_eq!(shown["phases"][1]["summary"], Value::Null);

        let (code, _, err) = p.run(&["session", "resume", file, "--agent", "fake"]);
        assert_eq!(code, 0, "{err}");
        assert!(err.contains("at write-the-form (research-the-code passed, with the log's summaries)"), "{err}");
        let s = p.state("feature-impl");
        assert_eq!(s["status"], "COMPLETE");
        assert_eq!(s["completed_phases"][0]["summary"], "The form lives in src/login.rs; it posts to /session.");
        assert_eq!(s["completed_phases"][1]["summary"], "fake: done");
        // The agent was told what the first phase found.
        let prompts = p.root().join(".baton/tasks/feature-impl/prompts");
        let prompt: String = fs_err::read_dir(&prompts)
            .unwrap()
            .map(|e| fs_err::read_to_string(e.unwrap().path()).unwrap())
            .collect();
        assert!(prompt.contains("The form lives in src/login.rs"), "{prompt}");
        let log = log_of(&p, "feature-impl");
        assert!(log.contains("\n## write-the-form @fake\n\nfake read: Phase \"Write the form\" of: Add the login form\n"), "{log}");
    }

    /// A user's hand-written log names a resume point no phase has: `session resume` refuses it and leaves no workflow and no task behind; named by its heading instead, the log resumes there.
    fn a_log_that_cannot_resume_leaves_nothing_behind() {
        let p = TestProject::new();
        with_agents(&p);
        let workflows = || -> Vec<String> {
            let mut v: Vec<String> = fs_err::read_dir(p.root().join(".baton/workflows"))
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            v.sort();
            v
        };
        let before = workflows();
        let file = p.root().join("by-hand.md");
        fs_err::write(&file, documented_example().replace("resume_point: phase-2", "resume_point: phase-7")).unwrap();
        let file = file.to_str().unwrap();
        let (code, _, err) = p.run(&["session", "resume", file, "--agent", "fake"]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("the log's resume_point \"phase-7\" is no phase of workflow session-feature-impl (research-the-code, write-the-form)"), "{err}");
        assert!(err.contains("its place: phase-2"), "{err}");
        assert_eq!(workflows(), before, "no workflow file is left behind");
        let (code, _, _) = p.run(&["show", "feature-impl"]);
        assert_eq!(code, 2, "no task either");
        assert!(!p.root().join(".baton/tasks/feature-impl").exists());

        // By its heading, as a person writes it.
        fs_err::write(file, documented_example().replace("resume_point: phase-2", "resume_point: Write the form")).unwrap();
        let (code, _, err) = p.run(&["session", "resume", file, "--agent", "fake"]);
        assert_eq!(code, 0, "{err}");
        assert!(err.contains("wrote") && err.contains("session-feature-impl.toml"), "{err}");
        assert_eq!(
            statuses(&p, "feature-impl"),
            [("research-the-code".to_string(), "PASS".to_string()), ("write-the-form".to_string(), "PASS".to_string())]
        );
        assert_eq!(p.passes("feature-impl").get("research-the-code"), None, "carried over, not run");
    }

    /// A user codifies a run with flags, command phases and a phase its condition skipped, and runs the draft: commands stay commands (and run again), the skipped phase keeps its `when` and is skipped again.
    fn a_codified_run_keeps_its_commands_and_conditions() {
        let p = TestProject::new();
        with_agents(&p);
        p.workflow("ship", r#"name = "ship"

[defaults]
agent = "fake"

[flags]
docs = false
fast = false

[[phase]]
id = "build"
run = """echo built >> "$BATON_PROJECT/built.txt"
echo built"""

[[phase]]
id = "write"
prompt = "Write it: {{task}}"

[[phase]]
id = "docs"
when = "flags.docs"
prompt = "Document it: {{task}}"

[[phase]]
id = "check"
when = "!flags.fast"
run = "echo checked"

[[phase]]
id = "notify"
when = "flags.fast"
run = "echo notified >> \"$BATON_PROJECT/notified.txt\""
"#);
        let (code, _, err) = p.run(&["run", "ship", "Ship the form", "--id", "first", "--flag", "docs=true"]);
        assert_eq!(code, 0, "{err}");
        let log = log_of(&p, "first");
        assert!(log.contains("flags: {docs: true, fast: false}\n"), "{log}");
        assert!(log.contains("\n## notify\n\n> [!when] flags.fast\n\n> [!command]\n> echo notified >> \"$BATON_PROJECT/notified.txt\"\n\n_Skipped: its `when` condition is false._\n"), "{log}");

        let (code, _, err) = p.run(&["session", "codify", "first", "--output", ".baton/workflows/ship-again.toml"]);
        assert_eq!(code, 0, "{err}");
        assert!(err.contains("with 5 phases: build, write, docs, check, notify"), "{err}");
        assert!(err.contains("run it with `baton run ship-again"), "{err}");
        let wf = fs_err::read_to_string(p.root().join(".baton/workflows/ship-again.toml")).unwrap();
        for want in [
            "[flags]\ndocs = true\nfast = false\n",
            "id = \"build\"\nrun = '''\necho built >> \"$BATON_PROJECT/built.txt\"\necho built'''\n",
            "id = \"write\"\nagent = \"fake\"\nprompt = ",
            "id = \"docs\"\nwhen = \"flags.docs\"\nagent = \"fake\"\nprompt = ",
            "id = \"check\"\nwhen = \"!flags.fast\"\nrun = \"echo checked\"\n",
            "id = \"notify\"\nwhen = \"flags.fast\"\nrun = ",
        ] {
            assert!(wf.contains(want), "missing {want:?} in\n{wf}");
        }
        assert!(!wf.contains("_Skipped"), "{wf}");

        let (code, _, err) = p.run(&["run", "ship-again", "Ship the form again", "--id", "again"]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(statuses(&p, "again"), statuses(&p, "first"));
        assert_eq!(fs_err::read_to_string(p.root().join("built.txt")).unwrap(), "built\nbuilt\n", "the command ran both times");
        assert!(!p.root().join("notified.txt").exists(), "skipped both times");
    }

    /// A user codifies an APEX run to a file outside the workflows folder, follows the hint to run it, and the draft runs APEX's 13 phases the way the run did: its commands as commands, its conditions and flags kept.
    fn an_apex_run_codified_elsewhere_runs_again_as_it_ran() {
        let p = TestProject::new();
        with_agents(&p);
        let (code, _, err) = p.run(&["run", "apex", "Add rate limiting", "--id", "apex-1", "--agent", "fake", "--flag", "mvp=true"]);
        assert_eq!(code, 0, "{err}");
        let ran = statuses(&p, "apex-1");
        assert_eq!(ran.len(), 13);
        let skipped: Vec<&str> = ran.iter().filter(|(_, s)| s == "SKIPPED").map(|(id, _)| id.as_str()).collect();
        assert_eq!(skipped, ["security", "review", "e2e", "docs", "cicd"]);

        // A workflow of the same name is there already: the draft is not it.
        p.workflow("apex-again", "name = \"apex-again\"\n[[phase]]\nid = \"other\"\nrun = \"true\"\n");
        let out = p.root().join("drafts/apex-again.toml");
        fs_err::create_dir_all(out.parent().unwrap()).unwrap();
        let (code, _, err) = p.run(&["session", "codify", "apex-1", "--output", out.to_str().unwrap()]);
        assert_eq!(code, 0, "{err}");
        assert!(err.contains("with 13 phases: init, analyze, plan, execute, validate, security, review, tests, run-tests, e2e, docs, cicd, finish"), "{err}");
        let home = p.root().join(".baton/workflows/apex-again.toml");
        assert!(
            err.contains(&format!("`baton run` finds workflows in {}", p.root().join(".baton/workflows").display()))
                && err.contains(&format!("`cp {} {}`", out.display(), home.display()))
                && err.contains("which this would replace"),
            "{err}"
        );
        let wf = fs_err::read_to_string(&out).unwrap();
        assert_eq!(wf.matches("\nrun = ").count(), 3, "init, validate and run-tests: {wf}");
        assert_eq!(wf.matches("\nwhen = ").count(), 7, "{wf}");
        assert!(wf.contains("id = \"review\"\nwhen = \"!flags.mvp\"\n"), "{wf}");
        assert!(wf.contains("[flags]\n") && wf.contains("\nmvp = true\n") && wf.contains("\nsecurity = false\n"), "{wf}");

        // As the hint says: copied there, it runs.
        fs_err::copy(&out, &home).unwrap();
        let (code, _, err) = p.run(&["run", "apex-again", "Add rate limiting again", "--id", "apex-2"]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(statuses(&p, "apex-2"), ran);
        let log = log_of(&p, "apex-2");
        assert!(log.contains("\n## init\n\n> [!command]\n> git status --short --branch"), "{log}");
        assert!(log.contains("\n## execute @fake\n"), "{log}");
    }

    /// A user runs a task on a generic agent (`command = [...]`) whose runner is killed as the agent starts, resumes it, and finds the agent named in the log at every attempt, its output there, and the task found by `session query --agent`.
    fn a_generic_agent_is_named_in_its_log_through_a_crash() {
        let p = TestProject::new();
        with_agents(&p);
        p.workflow("two", "name = \"two\"\n[defaults]\nagent = \"fake\"\n[[phase]]\nid = \"plan\"\nprompt = \"Plan: {{task}}\"\n[[phase]]\nid = \"build\"\nprompt = \"Build: {{task}}\"\n");
        let out = p
            .baton(&["run", "two", "Add the form", "--id", "g"])
            .env("BATON_TEST_CRASH_AT", "after-spawn:plan")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), None, "killed: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(listed(&p), [("g".to_string(), "crashed".to_string())]);
        let log = log_of(&p, "g");
        assert!(log.contains("participants: [fake]\n"), "{log}");
        assert!(log.contains("\n## plan @fake\n\n> [!error] the runner died while attempt 1 ran\n"), "{log}");
        assert_eq!(query(&p, &["--agent", "fake"]), ["g"]);

        let (code, _, err) = p.run(&["resume", "g"]);
        assert_eq!(code, 0, "{err}");
        let log = log_of(&p, "g");
        assert!(log.contains("status: completed\n") && log.contains("participants: [fake]\n"), "{log}");
        assert!(log.contains("\n## plan @fake\n\n_Attempt 2._\n\nfake read: Plan: Add the form\nfake: done\n\n> [!summary] passed\n> fake: done\n"), "{log}");
        assert!(log.contains("\n## build @fake\n\nfake read: Build: Add the form\n"), "{log}");
        assert_eq!(query(&p, &["--agent", "fake", "--status", "completed"]), ["g"]);
        assert!(query(&p, &["--agent", "other"]).is_empty());
        let s = p.state("g");
        assert_eq!(s["last_agent"], "fake");
        assert_eq!(s["completed_phases"][0]["agent"], "fake");
        assert_eq!(s["completed_phases"][0]["native_session_id"], Value::Null, "it has no session of its own");
    }

    /// A user hands a task over from one generic agent to another while it waits for an answer: the log names both where they ran, and `show` says who ran what (`cli_history`, `last_agent`).
    fn a_handoff_between_generic_agents_is_recorded() {
        let p = TestProject::new();
        with_agents(&p);
        p.workflow("two", "name = \"two\"\n[defaults]\nagent = \"fake\"\n[[phase]]\nid = \"plan\"\nprompt = \"Plan: {{task}}\"\n[[phase]]\nid = \"ask\"\nwait = { human = \"Go on?\", options = [\"yes\", \"no\"] }\n[[phase]]\nid = \"build\"\nprompt = \"Build: {{task}}\"\n");
        let (code, _, err) = p.run(&["run", "two", "Add the form", "--id", "h"]);
        assert_eq!(code, 4, "{err}");
        assert_eq!(query(&p, &["--status", "paused", "--agent", "fake"]), ["h"]);
        let (code, _, err) = p.run(&["handoff", "h", "--to", "other"]);
        assert_eq!(code, 4, "still waiting for the answer: {err}");
        let (code, _, err) = p.run(&["inbox", "answer", "h/ask", "yes", "--by", "ana"]);
        assert_eq!(code, 0, "{err}");

        let s = p.state("h");
        assert_eq!(s["status"], "COMPLETE");
        assert_eq!(s["last_agent"], "other");
        let history: Vec<(String, String, Vec<String>)> = s["cli_history"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                (
                    h["agent"].as_str().unwrap().to_string(),
                    h["cli"].as_str().unwrap().to_string(),
                    h["phases"].as_array().unwrap().iter().map(|x| x.as_str().unwrap().to_string()).collect(),
                )
            })
            .collect();
        assert_eq!(
            history,
            [
                ("fake".to_string(), "command".to_string(), vec!["plan".to_string()]),
                ("other".to_string(), "command".to_string(), vec!["build".to_string()]),
            ]
        );
        let log = log_of(&p, "h");
        assert!(log.contains("participants: [fake, other]\n"), "{log}");
        assert!(log.contains("\n## plan @fake\n") && log.contains("\n## build @other\n\nother read: Build: Add the form\n"), "{log}");
        assert!(log.contains("> [!decision] runs on other\n"), "{log}");
        assert_eq!(query(&p, &["--agent", "other"]), ["h"]);
        let (_, out, _) = p.run(&["show", "h"]);
        assert!(out.contains("agents    fake (command) → other (command)"), "{out}");
    }

    /// A user is sent a colleague's session log whose phases still to run give shell commands: `session resume` lists the commands and runs nothing until the user, having read them, says `--run-commands`.
    fn a_foreign_logs_commands_run_only_when_the_user_says_so() {
        let p = TestProject::new();
        with_agents(&p);
        let file = p.root().join("from-a-colleague.md");
        fs_err::write(
            &file,
            "---\ntype: session\nsession_id: deploy-it\nstatus: paused\nresume_point: phase-2\n---\n# Deploy it\n\n## Check\nAll green.\n\n## Deploy\n\n> [!command]\n> touch deployed && echo \"\x1b]52;c;ZXZpbA==\x07gone\"\n",
        )
        .unwrap();
        let file = file.to_str().unwrap();
        let (code, _, err) = p.run(&["session", "resume", file]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("gives shell commands for phases still to run"), "{err}");
        assert!(err.contains("deploy: touch deployed && echo"), "the command is shown: {err}");
        assert!(!err.contains('\x1b'), "its escapes are shown, not sent to the terminal: {err:?}");
        assert!(err.contains("--run-commands"), "{err}");
        assert!(!p.root().join("deployed").exists(), "nothing ran");
        assert!(!p.root().join(".baton/workflows/session-deploy-it.toml").exists(), "no workflow is left behind");
        assert_eq!(p.run(&["show", "deploy-it"]).0, 2, "no task either");

        let (code, _, err) = p.run(&["session", "resume", file, "--run-commands"]);
        assert_eq!(code, 0, "{err}");
        assert!(err.contains("phase deploy: touch deployed"), "{err}");
        assert!(p.root().join("deployed").exists());
        assert_eq!(statuses(&p, "deploy-it"), [("check".to_string(), "PASS".to_string()), ("deploy".to_string(), "PASS".to_string())]);
    }
}
