//! Workspaces by agent role: implementation agents of a service share one
//! workspace (a worktree on the task's branch, committed as phases pass),
//! every other role works in its own, seeded from the shared one's commit,
//! with its own memory file; the project folder is left alone; workspaces
//! outlive `baton rm`; `baton workspace rm` refuses one holding work unless
//! forced; a workspace another live task works in is not taken from it.

use baton_testkit::{TestProject, on_both_backends};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// An agent that records where it ran and what it saw, then does `then`.
fn agent(role: &str, then: &str) -> String {
    format!(
        "command = [\"sh\", \"-c\", \"pwd -P > \\\"$BATON_STATE_DIR/$BATON_PHASE.cwd\\\"; {then}\"]\nrole = \"{role}\"\n"
    )
}

const FLOW: &str = r#"name = "feature"
[[phase]]
id = "implement"
prompt = "Implement {{task}}"
agent = "coder"
[[phase]]
id = "extend"
prompt = "Extend it"
agent = "helper"
[[phase]]
id = "test"
prompt = "Test it"
agent = "tester"
[[phase]]
id = "review"
prompt = "Review it"
agent = "reviewer"
[[phase]]
id = "ship"
run = "ls > shipped.txt"
"#;

fn setup() -> TestProject {
    let p = TestProject::new();
    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    text.push_str("\n[workspaces]\nservice = \"api\"\n\n[agents.coder]\n");
    text.push_str(&agent("implementation", "echo one >> feature.txt"));
    text.push_str("\n[agents.helper]\n");
    text.push_str(&agent("implementation", "echo two >> feature.txt"));
    // The tester sees the implementers' work and reads its own memory
    // file; what it writes stays in its workspace.
    text.push_str("\n[agents.tester]\n");
    text.push_str(&agent(
        "testing",
        "test $(wc -l < feature.txt) = 2 || exit 1; cat CLAUDE.md 2>/dev/null; echo ok > test-report.txt",
    ));
    text.push_str("\n[agents.reviewer]\n");
    text.push_str(&agent("quality", "grep -q two feature.txt"));
    fs_err::write(&cfg, text).unwrap();
    p.workflow("feature", FLOW);
    p
}

fn ws(p: &TestProject, name: &str) -> PathBuf {
    p.root().join(".baton/workspaces").join(name)
}

fn ran_in(p: &TestProject, id: &str, phase: &str) -> PathBuf {
    let file = p.root().join(format!(".baton/tasks/{id}/{phase}.cwd"));
    PathBuf::from(fs_err::read_to_string(file).unwrap().trim())
}

fn real(path: &Path) -> PathBuf {
    fs_err::canonicalize(path).unwrap()
}

fn list(p: &TestProject) -> Vec<Value> {
    let (code, out, err) = p.run(&["workspace", "ls", "--json"]);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str::<Value>(&out)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

on_both_backends! {
    /// A run killed right after each kind of workspace is checked out for
    /// it (the shared one of the task's first phase; a tester's own, which
    /// holds the tester's memory file from the task before): `resume`
    /// checks it out again and completes the task with each phase passed
    /// once, the shared work whole, the memory file kept, the project
    /// folder untouched and `doctor` clean.
    fn a_run_killed_as_a_workspace_is_prepared_resumes_in_it() {
        let mut t = baton_testkit::crash::Tally::default();
        let p = setup();
        assert_eq!(p.run(&["run", "feature", "login", "--id", "t1"]).0, 0);
        let notes = "# Tester's notes\nRun the slow suite too.\n";
        fs_err::write(ws(&p, "workspace-api-tester").join("CLAUDE.md"), notes).unwrap();
        for (id, point) in [("t2", "workspace-prepared:workspace-api"), ("t3", "workspace-prepared:workspace-api-tester")] {
            t.crash(p.baton(&["run", "feature", "more", "--id", id]), point);
            let (code, _, err) = p.run(&["resume", id]);
            t.recovered(point, "resume", code, 0, &err);
            t.check(p.state(id)["status"] == "COMPLETE", || format!("{point}: not complete"));
            let passes = p.passes(id);
            t.check(passes.values().all(|n| *n == 1) && passes.len() == 5, || format!("{point}: passes {passes:?}"));
            let work = p.git(&["show", &format!("baton/{id}:feature.txt")]);
            t.check(work == "one\ntwo\n", || format!("{point}: the shared work is {work:?}"));
            let kept = fs_err::read_to_string(ws(&p, "workspace-api-tester").join("CLAUDE.md")).unwrap_or_default();
            t.check(kept == notes, || format!("{point}: the tester's memory is {kept:?}"));
            t.check(!p.root().join("feature.txt").exists() && p.git(&["branch", "--show-current"]).trim() == "main", || {
                format!("{point}: the project folder was touched")
            });
            let (code, out, _) = p.run(&["doctor"]);
            t.recovered(point, "doctor", code, 0, &out);
        }
        t.report("workspaces");
    }
}

on_both_backends! {
    fn agents_work_in_the_workspaces_of_their_roles() {
        let p = setup();
        let (code, _, err) = p.run(&["run", "feature", "login", "--id", "t1"]);
        assert_eq!(code, 0, "{err}");
        assert!(err.contains("task t1 works in workspace workspace-api"), "{err}");

        // The implementers shared one workspace; the tester and the
        // reviewer each had their own; the command phase ran where the
        // task works.
        let shared = real(&ws(&p, "workspace-api"));
        assert_eq!(ran_in(&p, "t1", "implement"), shared);
        assert_eq!(ran_in(&p, "t1", "extend"), shared);
        assert_eq!(ran_in(&p, "t1", "test"), real(&ws(&p, "workspace-api-tester")));
        assert_eq!(ran_in(&p, "t1", "review"), real(&ws(&p, "workspace-api-reviewer")));
        assert_eq!(fs_err::read_to_string(shared.join("feature.txt")).unwrap(), "one\ntwo\n");
        assert!(shared.join("shipped.txt").is_file());

        // The project folder is untouched: its branch, its files.
        assert!(!p.root().join("feature.txt").exists());
        assert_eq!(p.git(&["branch", "--show-current"]).trim(), "main");
        assert_eq!(p.git(&["status", "--porcelain", "--", ".", ":!.baton"]).trim(), "");

        // The work is committed on the task's branch, phase by phase; the
        // tester's report is on its own branch, never on the task's.
        let log = p.git(&["log", "--format=%s", "baton/t1"]);
        for phase in ["implement", "extend", "ship"] {
            assert!(log.contains(&format!("baton: t1 {phase} passed")), "{log}");
        }
        assert_eq!(p.git(&["show", "baton/t1:feature.txt"]), "one\ntwo\n");
        assert!(!shared.join("test-report.txt").exists());
        assert_eq!(p.git(&["show", "baton/t1-tester:test-report.txt"]), "ok\n");

        // Recorded: who works where, and the task that was there last.
        let all = list(&p);
        let names: Vec<&str> = all.iter().map(|w| w["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["workspace-api", "workspace-api-reviewer", "workspace-api-tester"]);
        let tester = &all[2];
        assert_eq!(tester["role"], "testing");
        assert_eq!(tester["agent"], "tester");
        assert_eq!(tester["branch"], "baton/t1-tester");
        assert_eq!(tester["task_id"], "t1");
        assert_eq!(tester["phase"], "test");
        assert_eq!(all[0]["role"], "implementation");
        assert_eq!(all[0]["agent"], Value::Null);
        assert_eq!(all[0]["branch"], "baton/t1");

        // Never deleted with the task.
        let (code, _, err) = p.run(&["rm", "t1"]);
        assert_eq!(code, 0, "{err}");
        assert!(shared.join("feature.txt").is_file());
        assert_eq!(list(&p).len(), 3);
    }

    fn an_agent_keeps_its_own_memory_file_from_task_to_task() {
        let p = setup();
        assert_eq!(p.run(&["run", "feature", "login", "--id", "t1"]).0, 0);
        // The tester's notes, in its workspace only.
        let tester = ws(&p, "workspace-api-tester");
        fs_err::write(tester.join("CLAUDE.md"), "# Tester's notes\nRun the slow suite too.\n").unwrap();

        let (code, _, err) = p.run(&["run", "feature", "logout", "--id", "t2"]);
        assert_eq!(code, 0, "{err}");
        // The second task's tester ran on t2's work, with its notes.
        assert_eq!(ran_in(&p, "t2", "test"), real(&tester));
        let out = fs_err::read_dir(p.root().join(".baton/tasks/t2/logs"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|f| f.to_string_lossy().contains("-test.") && f.extension().is_some_and(|x| x == "out"))
            .expect("the test phase's output");
        assert!(fs_err::read_to_string(out).unwrap().contains("Run the slow suite too."));
        assert_eq!(p.git(&["show", "baton/t2-tester:CLAUDE.md"]), "# Tester's notes\nRun the slow suite too.\n");
        // The shared workspace is on t2's branch now, and its memory is not
        // the tester's.
        let shared = ws(&p, "workspace-api");
        assert!(!shared.join("CLAUDE.md").exists());
        assert_eq!(p.git(&["-C", &shared.display().to_string(), "branch", "--show-current"]).trim(), "baton/t2");
        // t1's work is still on its branch.
        assert_eq!(p.git(&["show", "baton/t1:feature.txt"]), "one\ntwo\n");
    }

    fn workspace_rm_refuses_to_lose_work_unless_forced() {
        let p = setup();
        assert_eq!(p.run(&["run", "feature", "login", "--id", "t1"]).0, 0);

        // Uncommitted work in the reviewer's workspace.
        let reviewer = ws(&p, "workspace-api-reviewer");
        fs_err::write(reviewer.join("notes.txt"), "look at the retry loop\n").unwrap();
        let (code, _, err) = p.run(&["workspace", "rm", "workspace-api-reviewer"]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("it holds changes not committed: notes.txt"), "{err}");
        assert!(err.contains("--force"), "{err}");
        assert!(reviewer.join("notes.txt").is_file(), "nothing removed");

        // Commits on no other branch: the tester's report.
        let (code, _, err) = p.run(&["workspace", "rm", "workspace-api-tester"]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("commit"), "{err}");
        let (_, text, _) = p.run(&["workspace", "ls"]);
        assert!(text.contains("workspace-api-tester  testing (tester)  branch baton/t1-tester  task t1 at test"), "{text}");
        assert!(text.contains("keeps work"), "{text}");

        // Forced: gone, what it held saved.
        let (code, _, err) = p.run(&["workspace", "rm", "workspace-api-tester", "--force"]);
        assert_eq!(code, 0, "{err}");
        assert!(err.contains("removed workspace workspace-api-tester"), "{err}");
        assert!(!ws(&p, "workspace-api-tester").exists());
        let saved = p.git(&["for-each-ref", "--format=%(refname)", "refs/baton-saved/workspace-api-tester/"]);
        let saved = saved.trim();
        assert!(!saved.is_empty(), "saved");
        assert_eq!(p.git(&["show", &format!("{saved}:test-report.txt")]), "ok\n");
        assert!(p.git(&["branch", "--list", "baton/t1-tester"]).trim().is_empty());
        assert_eq!(list(&p).len(), 2);

        // A workspace whose work is elsewhere goes without --force.
        p.git(&["branch", "keep-t1", "baton/t1"]);
        let (code, _, err) = p.run(&["workspace", "rm", "workspace-api"]);
        assert_eq!(code, 0, "{err}");
        assert!(!ws(&p, "workspace-api").exists());
        assert_eq!(p.git(&["show", "keep-t1:feature.txt"]), "one\ntwo\n");

        // Bad input says what there is.
        let (code, _, err) = p.run(&["workspace", "rm", "nope"]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("no workspace \"nope\""), "{err}");
        assert!(err.contains("workspace-api-reviewer"), "{err}");
    }

    fn a_failed_phase_resumes_in_its_workspace_and_a_rewind_goes_back_there() {
        let p = setup();
        // The reviewer fails the first time.
        let cfg = p.root().join(".baton/config.toml");
        let text = fs_err::read_to_string(&cfg).unwrap().replace(
            "grep -q two feature.txt",
            "grep -q two feature.txt && test -f $BATON_PROJECT/go",
        );
        fs_err::write(&cfg, text).unwrap();
        let (code, _, err) = p.run(&["run", "feature", "login", "--id", "t1"]);
        assert_eq!(code, 1, "review fails: {err}");
        fs_err::write(p.root().join("go"), "").unwrap();
        let (code, _, err) = p.run(&["resume", "t1"]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(ran_in(&p, "t1", "review"), real(&ws(&p, "workspace-api-reviewer")));

        // Back to extend: the shared workspace goes back to where extend
        // started (one line), and extend and everything after run again.
        let (code, _, err) = p.run(&["resume", "t1", "--from", "extend"]);
        assert_eq!(code, 0, "{err}");
        let shared = ws(&p, "workspace-api");
        assert_eq!(fs_err::read_to_string(shared.join("feature.txt")).unwrap(), "one\ntwo\n");
        assert_eq!(p.git(&["show", "baton/t1:feature.txt"]), "one\ntwo\n");
        assert_eq!(p.passes("t1")["extend"], 2);
        assert_eq!(p.passes("t1")["implement"], 1);
        assert!(!p.root().join("feature.txt").exists());
    }

    fn a_runner_killed_mid_phase_resumes_in_a_fresh_own_workspace_keeping_what_it_left() {
        let p = setup();
        let cfg = p.root().join(".baton/config.toml");
        let text = fs_err::read_to_string(&cfg).unwrap().replace(
            "grep -q two feature.txt",
            "echo draft >> review-notes.txt; while [ ! -f $BATON_PROJECT/go ]; do sleep 0.1; done; grep -q two feature.txt",
        );
        fs_err::write(&cfg, text).unwrap();
        let reviewer = ws(&p, "workspace-api-reviewer");
        let mut run = p.baton(&["run", "feature", "login", "--id", "t1"]).spawn().unwrap();
        baton_testkit::wait_for("the reviewer at work", || {
            reviewer.join("review-notes.txt").is_file().then_some(())
        });
        run.kill().unwrap();
        run.wait().unwrap();

        fs_err::write(p.root().join("go"), "").unwrap();
        let (code, _, err) = p.run(&["resume", "t1"]);
        assert_eq!(code, 0, "{err}");
        // The review ran again from the implementers' commit, not on top of
        // what the killed run left; that is saved, not lost.
        assert_eq!(fs_err::read_to_string(reviewer.join("review-notes.txt")).unwrap(), "draft\n");
        let saved = p.git(&["for-each-ref", "--format=%(refname)", "refs/baton-saved/t1/"]);
        let saved: Vec<&str> = saved.lines().collect();
        assert_eq!(saved.len(), 1, "{saved:?}");
        assert_eq!(p.git(&["show", &format!("{}:review-notes.txt", saved[0])]), "draft\n");
        let passes = p.passes("t1");
        assert_eq!((passes["implement"], passes["review"], passes["ship"]), (1, 1, 1));
        assert_eq!(p.git(&["show", "baton/t1:feature.txt"]), "one\ntwo\n");
    }

    fn a_workspace_is_not_taken_from_a_task_that_runs_in_it() {
        let p = setup();
        // t1's coder takes its time.
        let cfg = p.root().join(".baton/config.toml");
        let text = fs_err::read_to_string(&cfg).unwrap().replace(
            "echo one >> feature.txt",
            "echo one >> feature.txt; while [ ! -f $BATON_PROJECT/go ]; do sleep 0.1; done",
        );
        fs_err::write(&cfg, text).unwrap();
        let mut t1 = p.baton(&["run", "feature", "login", "--id", "t1"]).spawn().unwrap();
        baton_testkit::wait_for("t1 in its workspace", || {
            ws(&p, "workspace-api").join("feature.txt").is_file().then_some(())
        });
        let (code, _, err) = p.run(&["run", "feature", "logout", "--id", "t2"]);
        assert_eq!(code, 3, "{err}");
        assert!(err.contains("workspace workspace-api is in use by task t1"), "{err}");
        fs_err::write(p.root().join("go"), "").unwrap();
        assert!(baton_testkit::wait_child(&mut t1, "t1").success());
        let (code, _, err) = p.run(&["resume", "t2"]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(p.git(&["show", "baton/t2:feature.txt"]), "one\ntwo\n");
    }
}

#[test]
fn a_role_that_is_not_a_word_is_refused() {
    let p = TestProject::new();
    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    text.push_str("\n[agents.x]\ncommand = [\"true\"]\nrole = \"Quality Team\"\n");
    fs_err::write(&cfg, text).unwrap();
    let (code, _, err) = p.run(&["workspace", "ls"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("[agents.x] role = \"Quality Team\" is not a role name"),
        "{err}"
    );
}

/// With the real CLIs: Claude Code implements in the shared workspace,
/// Codex reviews in its own, where its `AGENTS.md` (its memory file) is
/// its own from one task to the next; each CLI's session is journaled with
/// the workspace it ran in, so it is continued there after a crash.
#[test]
fn real_clis_work_in_the_workspaces_of_their_roles() {
    use baton_testkit::agents::Agent;
    use baton_testkit::model_server::{ModelServer, Reply};
    let p = TestProject::new();
    let homes: Vec<tempfile::TempDir> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let shared = p.root().join(".baton/workspaces/workspace-api");
    let reviewer = p.root().join(".baton/workspaces/workspace-api-reviewer");
    let write = |file: &str| {
        let (tool, args) = Agent::Claude.write_tool(&shared.join(file), "hi");
        [
            Reply::tool(tool, args),
            Reply::text(&format!("wrote {file}")),
        ]
    };
    let coder = ModelServer::start(
        write("hello.txt")
            .into_iter()
            .chain(write("bye.txt"))
            .collect(),
    );
    let review = ModelServer::start(vec![Reply::text("approved"), Reply::text("approved again")]);
    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    text.push_str("\n[workspaces]\nservice = \"api\"\n");
    let with_role = |t: String, name: &str, role: &str| {
        t.replace(
            &format!("[agents.{name}.env]"),
            &format!("role = \"{role}\"\n[agents.{name}.env]"),
        )
    };
    text.push_str(&with_role(
        Agent::Claude.baton_config("coder", &coder, homes[0].path()),
        "coder",
        "implementation",
    ));
    text.push_str(&with_role(
        Agent::Codex.baton_config("reviewer", &review, homes[1].path()),
        "reviewer",
        "quality",
    ));
    fs_err::write(&cfg, text).unwrap();
    p.workflow(
        "w",
        "name = \"w\"\n[[phase]]\nid = \"implement\"\nagent = \"coder\"\nmax_attempts = 1\nprompt = \"Implement {{task}}\"\n[[phase]]\nid = \"review\"\nagent = \"reviewer\"\nmax_attempts = 1\nprompt = \"Review {{task}}\"\n",
    );
    let (code, _, err) = p.run(&["run", "w", "the greeting", "--id", "t1"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(p.git(&["show", "baton/t1:hello.txt"]), "hi");
    assert!(!p.root().join("hello.txt").exists());
    let doc = p.state("t1");
    let cwd = |i: usize| doc["completed_phases"][i]["agent_session"]["cwd"].clone();
    assert_eq!(cwd(0), shared.display().to_string());
    assert_eq!(cwd(1), reviewer.display().to_string());
    assert_eq!(doc["completed_phases"][1]["summary"], "approved");
    // Codex ran in its own folder, checked out at the implementer's commit.
    let first = review.model_requests()[0].body.to_string();
    assert!(first.contains(&reviewer.display().to_string()), "{first}");
    assert_eq!(p.git(&["show", "baton/t1-reviewer:hello.txt"]), "hi");

    // The reviewer's house rules, in its own workspace only.
    fs_err::write(
        reviewer.join("AGENTS.md"),
        "# Reviewer rules\nBlock on missing tests.\n",
    )
    .unwrap();
    let (code, _, err) = p.run(&["run", "w", "the farewell", "--id", "t2"]);
    assert_eq!(code, 0, "{err}");
    let second = review.model_requests().last().unwrap().body.to_string();
    assert!(
        second.contains("Block on missing tests."),
        "codex read its own memory file: {second}"
    );
    let coder_saw = coder.model_requests().last().unwrap().body.to_string();
    assert!(
        !coder_saw.contains("Block on missing tests."),
        "the implementer's workspace has none"
    );
    assert_eq!(p.git(&["show", "baton/t2:bye.txt"]), "hi");
}
