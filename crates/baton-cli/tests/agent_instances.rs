//! Coding and review agent instances (`baton agent …`) in real git
//! repositories with a local bare remote, driven by scripted agents (shell
//! scripts run as generic agents, calling `baton agent …` from inside
//! their turn as a real agent's shell tool would): the review loop with
//! feedback reaching the coding agent, every refusal with its code and
//! exit code, a merge conflict that leaves the parent untouched, timeouts
//! enforced with no baton process left alive, and cleanup that never
//! removes a worktree or branch holding work.

mod common;

use baton_testkit::{baton_bin, on_both_backends, process_gone, wait_for};
use common::instances::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

on_both_backends! {
    /// The whole loop: the coding agent works and asks for a review from
    /// its turn; the reviewer commits a fix and merges back with feedback;
    /// the feedback reaches the coding agent as its next turn, which acts
    /// on it; a second review does the same. Every commit is on the coding
    /// agent's branch, the reviews' worktrees and branches are gone, and
    /// main is untouched.
    fn the_review_loop_runs_in_real_worktrees() {
        let (p, _remote) = project();
        let main_before = p.git(&["rev-parse", "main"]);
        let out = ok(&p, &["agent", "spawn", "write the work file", "--id", "c1", "--agent", "coder", "--max-reviews", "2"]);
        assert_eq!(out.trim(), "c1");
        // Turn 1 (codes, asks), the review (merges back), turn 2 (the feedback).
        let v = wait_for("the feedback turn", || {
            let v = settled(&p, "c1");
            (v["turns"].as_array()?.len() == 2 && v["turn"]["status"] == "COMPLETE").then_some(v)
        });
        assert_eq!(v["status"], "working");
        assert_eq!(v["state"]["review_count"], 1);
        assert_eq!(v["state"]["current_review_instance_id"], Value::Null);
        let wt = worktree(&v);
        assert!(wt.starts_with(p.root().join(".wt")), "{}", wt.display());
        // The feedback reached the agent: it wrote what the reviewer asked.
        let tests = fs_err::read_to_string(wt.join("tests.txt")).unwrap();
        assert!(tests.contains("please write tests.txt"), "{tests}");
        assert!(tests.contains("Review 1 of your work"), "{tests}");
        let log = log_of(&p, "baton/c1");
        for s in ["work", "review fix", "baton: merge back review c1-r1 into c1", "wrote tests.txt"] {
            assert!(log.lines().any(|l| l == s), "{s:?} not in the branch's log:\n{log}");
        }
        assert_eq!(p.git(&["rev-parse", "main"]), main_before, "main moved");
        // The review is a child session of the turn that asked for it:
        // that turn's log links to the review's own log.
        let turn1 = v["turns"][0].as_str().unwrap().to_string();
        let review_turn = show(&p, "c1-r1")["turns"][0].as_str().unwrap().to_string();
        let log1 = fs_err::read_to_string(p.root().join(format!(".baton/sessions/{turn1}.md"))).unwrap();
        assert!(
            log1.contains(&format!("> [!subagent] @review (review 1 of c1)\n> [[{review_turn}]]")),
            "{log1}"
        );
        assert!(log1.contains(&format!("  - {{session: {review_turn}, agent: review, tokens: 0}}")), "{log1}");
        assert!(p.root().join(format!(".baton/sessions/{review_turn}.md")).exists());
        // Inline, what the review's log says is in the callout, before the link.
        let cfg = p.root().join(".baton/config.toml");
        let mut text = fs_err::read_to_string(&cfg).unwrap();
        text.push_str("\n[sessions]\nsubagents = \"inline\"\n");
        fs_err::write(&cfg, text).unwrap();
        let review_log = fs_err::read_to_string(p.root().join(format!(".baton/sessions/{review_turn}.md"))).unwrap();
        let review_said = review_log.lines().find_map(|l| l.strip_prefix("> [!summary] ")).map(|t| format!("> summary: {t}")).unwrap_or_else(|| panic!("{review_log}"));
        fs_err::remove_file(p.root().join(format!(".baton/sessions/{turn1}.md"))).unwrap();
        let (code, shown, err) = p.run(&["session", "show", &turn1]);
        assert_eq!(code, 0, "{err}");
        let callout = shown.split("> [!subagent] @review (review 1 of c1)\n").nth(1).unwrap_or_else(|| panic!("{shown}"));
        let callout: Vec<&str> = callout.lines().take_while(|l| l.starts_with('>')).collect();
        assert!(callout.contains(&review_said.as_str()), "{review_said:?} not in {callout:?}");
        assert_eq!(callout.last(), Some(&format!("> [[{review_turn}]]").as_str()), "{callout:?}");
        // The review ended, decided, and gave its worktree and branch back.
        let r = show(&p, "c1-r1");
        assert_eq!(r["status"], "terminated");
        assert_eq!(r["state"]["decision"], "merge_back");
        assert_eq!(r["state"]["feedback_delivered"], true);
        assert!(!worktree(&r).exists());
        assert!(!branch_exists(&p, "baton/c1-r1"));

        // A second review, asked by hand, ends the same way.
        let out = ok(&p, &["agent", "review", "c1", "--agent", "reviewer"]);
        assert_eq!(out.trim(), "c1-r2");
        let v = wait_for("the second feedback turn", || {
            let v = settled(&p, "c1");
            (v["turns"].as_array()?.len() == 3 && v["turn"]["status"] == "COMPLETE").then_some(v)
        });
        assert_eq!(v["state"]["review_count"], 2);
        assert!(log_of(&p, "baton/c1").contains("merge back review c1-r2"));
        // Its journal (with its reviews') tells the story, in order.
        let kinds: Vec<String> = ok(&p, &["agent", "log", "c1", "--json"])
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                v["kind"].as_str().unwrap().to_string()
            })
            .collect();
        let review = [
            "spawned", "review_requested", "allocated", "turn", "merged_back",
            "feedback_delivered", "turn",
        ];
        let mut expected = vec!["spawned", "allocated", "turn"];
        expected.extend(review);
        expected.extend(review);
        assert_eq!(kinds, expected);
        // The limit: a third review is refused.
        let err = refused(&p, &["agent", "review", "c1"], 2, "WORKFLOW_MAX_REVIEWS_EXCEEDED");
        assert!(err.contains("2 of its 2 reviews"), "{err}");
    }
}

/// Every refusal the CLI can meet, with its code and exit code, and
/// nothing changed by any of them.
#[test]
fn every_refusal_has_its_code_and_changes_nothing() {
    let (p, _remote) = project();
    ok(
        &p,
        &[
            "agent",
            "spawn",
            "idle work",
            "--id",
            "c1",
            "--agent",
            "idle",
        ],
    );
    settled(&p, "c1");
    refused(
        &p,
        &["agent", "show", "nope"],
        2,
        "WORKFLOW_INSTANCE_NOT_FOUND",
    );
    refused(
        &p,
        &["agent", "review", "nope"],
        2,
        "WORKFLOW_PARENT_NOT_FOUND",
    );
    refused(
        &p,
        &["agent", "merge-back", "c1", "--feedback", "x"],
        2,
        "WORKFLOW_INVALID_STATE",
    );
    refused(
        &p,
        &[
            "agent",
            "spawn",
            "x",
            "--base",
            "no-such-branch",
            "--agent",
            "idle",
        ],
        2,
        "WORKFLOW_INVALID_CONFIGURATION",
    );
    refused(
        &p,
        &["agent", "spawn", "x", "--agent", "nobody"],
        2,
        "WORKFLOW_INVALID_CONFIGURATION",
    );
    refused(
        &p,
        &["agent", "spawn", "x", "--id", "c1", "--agent", "idle"],
        2,
        "WORKFLOW_INVALID_CONFIGURATION",
    );
    // A review in flight: a second one is refused.
    ok(
        &p,
        &[
            "agent",
            "review",
            "c1",
            "--agent",
            "idle",
            "--timeout",
            "1h",
        ],
    );
    let err = refused(
        &p,
        &["agent", "review", "c1", "--agent", "idle"],
        2,
        "WORKFLOW_REVIEW_IN_PROGRESS",
    );
    assert!(err.contains("c1-r1"), "{err}");
    // A review of a review.
    refused(
        &p,
        &["agent", "review", "c1-r1"],
        2,
        "WORKFLOW_PARENT_INVALID_STATE",
    );
    // A killed instance cannot be reviewed.
    ok(&p, &["agent", "kill", "c1"]);
    refused(
        &p,
        &["agent", "review", "c1"],
        2,
        "WORKFLOW_PARENT_INVALID_STATE",
    );
    let r = show(&p, "c1-r1");
    assert_eq!(r["status"], "terminated", "its review ended with it");
    // max_concurrent_instances.
    let cfg = p.root().join(".baton/config.toml");
    let text = fs_err::read_to_string(&cfg).unwrap().replace(
        "worktree_base = \".wt\"",
        "worktree_base = \".wt\"\nmax_concurrent_instances = 1",
    );
    fs_err::write(&cfg, text).unwrap();
    ok(
        &p,
        &["agent", "spawn", "one", "--id", "c2", "--agent", "idle"],
    );
    refused(
        &p,
        &["agent", "spawn", "two", "--id", "c3", "--agent", "idle"],
        1,
        "WORKFLOW_RESOURCE_ALLOCATION_FAILED",
    );
    let all: Value = serde_json::from_str(&ok(&p, &["agent", "ls", "--all", "--json"])).unwrap();
    let ids: Vec<&str> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["c1", "c1-r1", "c2"], "refusals created nothing");
}

/// A conflicting merge-back changes nothing on the parent's branch, names
/// the file, and leaves the review working so it can resolve and retry.
#[test]
fn a_merge_conflict_leaves_the_parent_untouched() {
    let (p, _remote) = project();
    ok(
        &p,
        &["agent", "spawn", "x", "--id", "c1", "--agent", "committer"],
    );
    let c = settled(&p, "c1");
    ok(&p, &["agent", "review", "c1", "--agent", "idle"]);
    let r = settled(&p, "c1-r1");
    // Both sides change mine.txt after the fork.
    commit_file(&worktree(&c), "mine.txt", "coder's version\n");
    commit_file(&worktree(&r), "mine.txt", "reviewer's version\n");
    let parent_head = p.git(&["rev-parse", "baton/c1"]);
    let err = refused(
        &p,
        &["agent", "merge-back", "c1-r1", "--feedback", "x"],
        1,
        "WORKFLOW_MERGE_CONFLICT",
    );
    assert!(err.contains("mine.txt"), "{err}");
    assert_eq!(p.git(&["rev-parse", "baton/c1"]), parent_head);
    let st = Command::new("git")
        .args(["status", "--porcelain"])
        .current_dir(worktree(&c))
        .output()
        .unwrap();
    assert!(st.stdout.is_empty(), "the parent's worktree is as it was");
    assert_eq!(show(&p, "c1-r1")["status"], "working");
    assert_eq!(show(&p, "c1")["status"], "review_requested");
}

/// Timeouts are enforced from the store by the next command, after the
/// process that started the instance is long gone: the review's (its
/// parent goes back to work, told why) and the instance's own (its
/// running agent is stopped).
#[test]
fn timeouts_are_enforced_with_no_baton_process_alive() {
    let (p, _remote) = project();
    ok(
        &p,
        &["agent", "spawn", "x", "--id", "c1", "--agent", "idle"],
    );
    settled(&p, "c1");
    ok(
        &p,
        &[
            "agent",
            "review",
            "c1",
            "--agent",
            "idle",
            "--timeout",
            "1s",
        ],
    );
    settled(&p, "c1-r1");
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let r = show(&p, "c1-r1");
    assert_eq!(r["status"], "failed");
    assert!(
        r["end_reason"]
            .as_str()
            .unwrap()
            .starts_with("WORKFLOW_REVIEW_TIMEOUT"),
        "{r}"
    );
    let c = show(&p, "c1");
    assert_eq!(c["status"], "working");
    assert!(
        c["state"]["last_error"]
            .as_str()
            .unwrap()
            .contains("WORKFLOW_REVIEW_TIMEOUT")
    );

    // An agent still at work when its instance times out is stopped.
    ok(
        &p,
        &[
            "agent",
            "spawn",
            "y",
            "--id",
            "c2",
            "--agent",
            "sleeper",
            "--timeout",
            "2s",
        ],
    );
    let pid_file = p.root().join(".baton/tasks/c2/agent.pid");
    let pid: u32 = wait_for("the sleeper's pid", || {
        fs_err::read_to_string(&pid_file).ok()?.trim().parse().ok()
    });
    std::thread::sleep(std::time::Duration::from_millis(2200));
    let v = show(&p, "c2");
    assert_eq!(v["status"], "failed");
    assert!(
        v["state"]["failure_reason"]
            .as_str()
            .unwrap()
            .starts_with("WORKFLOW_EXECUTION_TIMEOUT"),
        "{v}"
    );
    wait_for("the timed-out agent to be stopped", || {
        process_gone(pid).then_some(())
    });
    assert_eq!(show(&p, "c2")["turn"]["status"], "CANCELLED");
}

/// Ending instances never loses work: a worktree holding unpushed commits
/// and one holding uncommitted changes are kept (and the user told why);
/// one holding nothing and one whose branch was squash-merged into main
/// are removed with their branches.
#[test]
fn cleanup_keeps_every_worktree_that_holds_work() {
    let (p, _remote) = project();
    for (id, agent) in [
        ("keeps-commits", "committer"),
        ("keeps-changes", "dirty"),
        ("holds-nothing", "idle"),
        ("squashed", "committer"),
    ] {
        ok(&p, &["agent", "spawn", "x", "--id", id, "--agent", agent]);
    }
    for id in [
        "keeps-commits",
        "keeps-changes",
        "holds-nothing",
        "squashed",
    ] {
        settled(&p, id);
    }
    // The squashed one's work reaches main by a squash merge.
    p.git(&["merge", "--squash", "baton/squashed"]);
    p.git(&["commit", "-qm", "squash of squashed"]);

    let kill = |id: &str| -> Value {
        serde_json::from_str(&ok(&p, &["agent", "kill", id, "--json"])).unwrap()
    };
    let k = kill("keeps-commits");
    assert_eq!(k["removed"], Value::Array(vec![]));
    assert!(
        k["kept"][0]["detail"].as_str().unwrap().contains("commit"),
        "{k}"
    );
    assert!(branch_exists(&p, "baton/keeps-commits"));
    assert!(p.root().join(".wt/keeps-commits/mine.txt").is_file());

    let k = kill("keeps-changes");
    assert!(
        k["kept"][0]["detail"]
            .as_str()
            .unwrap()
            .contains("draft.txt"),
        "{k}"
    );
    assert!(p.root().join(".wt/keeps-changes/draft.txt").is_file());

    for id in ["holds-nothing", "squashed"] {
        let k = kill(id);
        assert_eq!(k["kept"], Value::Array(vec![]), "{id}: {k}");
        assert!(!p.root().join(".wt").join(id).exists(), "{id}");
        assert!(!branch_exists(&p, &format!("baton/{id}")), "{id}");
    }
    // Later commands leave the kept ones as they are.
    ok(&p, &["agent", "ls", "--all"]);
    assert!(branch_exists(&p, "baton/keeps-commits"));
    assert!(p.root().join(".wt/keeps-changes/draft.txt").is_file());
}

/// baton SIGKILLed in the middle of `request_review` (the review's
/// worktree made, not yet recorded), then its review's runner SIGKILLed
/// while the reviewer works: `doctor` says what is wrong, `doctor --fix`
/// and `agent kill` bring every instance to a true state, and no
/// worktree, branch or process is left over.
#[test]
fn a_crash_during_a_review_leaves_nothing_unaccounted() {
    let (p, _remote) = project();
    p.set_ttl("1s");
    ok(
        &p,
        &["agent", "spawn", "x", "--id", "c1", "--agent", "idle"],
    );
    settled(&p, "c1");
    let out = p
        .baton(&["agent", "review", "c1", "--agent", "idle"])
        .env("BATON_TEST_CRASH_AT", "review-forked:c1-r1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), None, "baton was to die by SIGKILL");
    assert_eq!(show(&p, "c1")["status"], "review_requested");
    assert_eq!(show(&p, "c1-r1")["status"], "started");
    assert!(p.root().join(".wt/c1-r1").is_dir());
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let (code, out, _) = p.run(&["doctor"]);
    assert_ne!(code, 0, "{out}");
    assert!(
        out.contains("c1-r1 is started but its start was cut short"),
        "{out}"
    );
    let (_, out, _) = p.run(&["doctor", "--fix"]);
    assert!(out.contains("c1-r1: its start was cut short"), "{out}");
    assert!(out.contains("removed its worktree"), "{out}");
    let r = show(&p, "c1-r1");
    assert_eq!(r["status"], "failed");
    assert!(!p.root().join(".wt/c1-r1").exists());
    assert!(!branch_exists(&p, "baton/c1-r1"));
    let c = show(&p, "c1");
    assert_eq!(c["status"], "working", "the coding agent can go on");
    assert!(
        c["state"]["last_error"]
            .as_str()
            .unwrap()
            .contains("WORKFLOW_RESOURCE_ALLOCATION_FAILED")
    );

    // A review whose runner dies while its agent works.
    let rid = ok(&p, &["agent", "review", "c1", "--agent", "sleeper"]);
    let rid = rid.trim();
    assert_eq!(rid, "c1-r2");
    let pid_file = p.root().join(".baton/tasks/c1-r2/agent.pid");
    let agent_pid: u32 = wait_for("the reviewer's pid", || {
        fs_err::read_to_string(&pid_file).ok()?.trim().parse().ok()
    });
    let ls: Value = serde_json::from_str(&ok(&p, &["ls", "--json"])).unwrap();
    let runner = ls
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == "c1-r2")
        .unwrap()["owner"]["pid"]
        .as_u64()
        .unwrap() as u32;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(runner as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    wait_for("the runner to die", || process_gone(runner).then_some(()));
    assert_eq!(show(&p, "c1-r2")["turn"]["status"], "CRASHED");
    let k: Value = serde_json::from_str(&ok(&p, &["agent", "kill", "c1-r2", "--json"])).unwrap();
    assert_eq!(k["kept"], Value::Array(vec![]), "{k}");
    wait_for("the orphaned reviewer to be stopped", || {
        process_gone(agent_pid).then_some(())
    });
    assert!(!p.root().join(".wt/c1-r2").exists());
    assert_eq!(show(&p, "c1")["status"], "working");
    let (code, out, err) = p.run(&["doctor"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("3 agent instance(s) accounted for"), "{out}");
    let wt = p.git(&["worktree", "list", "--porcelain"]);
    assert_eq!(
        wt.lines().filter(|l| l.starts_with("worktree ")).count(),
        2,
        "only the project and c1's worktree remain:\n{wt}"
    );
}

/// An interactive instance runs its agent's terminal program in tmux on
/// baton's own socket: `baton agent attach` (run here inside a real
/// terminal) puts a person in front of it, who types and reads; a
/// review's feedback is typed into its pane; ending it saves the pane to
/// the instance's log and ends its processes.
#[test]
fn attach_puts_a_person_inside_an_interactive_agent() {
    let (p, _remote) = project();
    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    text.push_str(
        "[agents.tui]\ncommand = [\"sh\", \"-c\", '''echo \"task: $1\" | head -n1; echo $$ > \"$BATON_PROJECT/.baton/tui.pid\"; while printf 'say> '; read -r line; do echo \"you said: $line\"; done''', \"tui\", \"{{prompt}}\"]\n",
    );
    fs_err::write(&cfg, text).unwrap();
    ok(
        &p,
        &[
            "agent",
            "spawn",
            "talk to me",
            "--id",
            "c1",
            "--agent",
            "tui",
            "--interactive",
        ],
    );
    let v = show(&p, "c1");
    assert_eq!(v["tmux"]["state"], "running", "{v}");
    let pid: u32 = wait_for("the agent's pid", || {
        fs_err::read_to_string(p.root().join(".baton/tui.pid"))
            .ok()?
            .trim()
            .parse()
            .ok()
    });
    let term = baton_testkit::Tmux::start(&format!(
        "cd {} && {} agent attach c1",
        p.root().display(),
        baton_bin().display()
    ));
    term.wait_for("task: talk to me", 20);
    term.wait_for("say>", 20);
    term.send(&["hello there", "Enter"]);
    term.wait_for("you said: hello there", 20);

    // A review's feedback is typed into the pane.
    ok(&p, &["agent", "review", "c1", "--agent", "reviewer"]);
    term.wait_for("you said: Review 1 of your work is done", 30);
    assert_eq!(show(&p, "c1-r1")["state"]["feedback_delivered"], true);

    let k: Value = serde_json::from_str(&ok(&p, &["agent", "kill", "c1", "--json"])).unwrap();
    assert_eq!(k["failed"], Value::Array(vec![]), "{k}");
    wait_for("the agent to be ended", || process_gone(pid).then_some(()));
    let pane = fs_err::read_to_string(p.root().join(".baton/agents/c1/pane.log")).unwrap();
    assert!(pane.contains("you said: hello there"), "{pane}");
    let v = show(&p, "c1");
    assert_eq!(v["tmux"]["state"], "gone");
    let (code, _, err) = p.run(&["agent", "attach", "c1"]);
    assert_eq!(code, 2);
    assert!(err.contains("WORKFLOW_INVALID_STATE"), "{err}");
}

/// An agent phase of a workflow run as a coding instance: the phase waits
/// through the review loop and passes when the instance's work is done,
/// ending the instance (its work kept on its branch); an instance that
/// times out fails its phase with the instance's code.
#[test]
fn a_workflow_phase_runs_as_a_coding_instance() {
    let (p, _remote) = project();
    p.workflow(
        "loop",
        "name = \"loop\"\n\n[[phase]]\nid = \"build\"\nagent = \"coder\"\nprompt = \"Build {{task}}\"\ninstance = { max_reviews = 1 }\n\n[[phase]]\nid = \"after\"\nrun = \"true\"\n",
    );
    let (code, out, err) = p.run(&["run", "loop", "the thing", "--id", "t1"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let st = p.state("t1");
    assert_eq!(st["status"], "COMPLETE");
    let build = &st["completed_phases"][0];
    let summary = build["summary"].as_str().unwrap();
    assert!(
        summary.starts_with(
            "agent instance t1-build finished its work and ended; its worktree and branch baton/t1-build are kept: "
        ),
        "the work is done, and where it is: {st}"
    );
    let c = show(&p, "t1-build");
    assert_eq!(c["status"], "finished", "it ended with its phase");
    assert_eq!(c["config"]["instructions"], "Build the thing");
    assert_eq!(
        c["state"]["review_count"], 1,
        "the loop ran inside the phase"
    );
    assert!(log_of(&p, "baton/t1-build").contains("wrote tests.txt"));

    p.workflow(
        "slow",
        "name = \"slow\"\n\n[[phase]]\nid = \"build\"\nagent = \"sleeper\"\nprompt = \"Build {{task}}\"\ninstance = { timeout = \"1s\" }\n",
    );
    let (code, out, err) = p.run(&["run", "slow", "it", "--id", "t2"]);
    assert_eq!(code, 1, "{out}\n{err}");
    let st = p.state("t2");
    assert_eq!(st["status"], "FAILED");
    let failure = st.to_string();
    assert!(failure.contains("WORKFLOW_EXECUTION_TIMEOUT"), "{failure}");
    assert_eq!(show(&p, "t2-build")["status"], "failed");

    // A phase key that makes no sense elsewhere is refused.
    p.workflow(
        "bad",
        "name = \"bad\"\n\n[[phase]]\nid = \"x\"\nrun = \"true\"\ninstance = { max_reviews = 1 }\n",
    );
    let (code, _, err) = p.run(&["run", "bad"]);
    assert_eq!(code, 2);
    assert!(err.contains("`instance` has no effect"), "{err}");
}

/// The whole loop to its end: coding → request_review → merge_back with
/// feedback → request_review → push_to_github, against a local GitHub API
/// that checks every request against GitHub's OpenAPI description (and
/// answers the first create with a 502). The coding instance ends
/// `pr_created` with the number and URL; its branch is on the remote.
#[test]
fn the_loop_ends_with_a_pull_request() {
    let github = baton_testkit::github::FakeGitHub::start(1, &[]);
    let (p, remote) = project();
    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    let b = baton_bin();
    text.push_str(&format!(
        "[agents.pusher]\ncommand = [\"sh\", \"-c\", '''echo \"ok by $BATON_INSTANCE\" >> REVIEW.md; git add -A && git -c user.email=a@a -c user.name=agent commit -qm 'last touch'; {} agent push''']\nenv = {{ GITHUB_TOKEN = \"test-token\" }}\n\n[github]\napi_url = \"{}\"\nrepository = \"acme/widgets\"\n",
        b.display(),
        github.url
    ));
    fs_err::write(&cfg, text).unwrap();
    ok(
        &p,
        &[
            "agent",
            "spawn",
            "Add the widget\n\nIt must spin.",
            "--id",
            "c1",
            "--agent",
            "coder",
            "--require-review",
        ],
    );
    wait_for("the feedback turn", || {
        let v = settled(&p, "c1");
        (v["turns"].as_array()?.len() == 2 && v["turn"]["status"] == "COMPLETE").then_some(())
    });
    ok(&p, &["agent", "review", "c1", "--agent", "pusher"]);
    let v = wait_for("the pull request", || {
        let v = show(&p, "c1");
        (v["status"] == "pr_created").then_some(v)
    });
    let pr = &v["state"]["pull_request"];
    assert_eq!(pr["number"], 1);
    assert_eq!(pr["url"], "https://github.com/acme/widgets/pull/1");
    assert_eq!(v["state"]["review_count"], 2);
    let r = show(&p, "c1-r2");
    assert_eq!(r["state"]["decision"], "push_to_github");
    // The branch on the remote has everything: work, both reviews, the feedback's tests.
    let remote_log = String::from_utf8(
        Command::new("git")
            .args(["log", "--format=%s", "baton/c1"])
            .current_dir(remote.path())
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    for s in ["work", "review fix", "wrote tests.txt", "last touch"] {
        assert!(
            remote_log.lines().any(|l| l == s),
            "{s:?} not on the remote:\n{remote_log}"
        );
    }
    // What GitHub was asked, and that every request was valid.
    let reqs = github.requests();
    let creates: Vec<&Value> = reqs.iter().filter(|r| r["method"] == "POST").collect();
    assert_eq!(creates.len(), 2, "one 502, then the retry: {reqs:?}");
    assert_eq!(creates[0]["status"], 502);
    assert_eq!(creates[1]["status"], 201);
    let body = &creates[1]["body"];
    assert_eq!(body["head"], "baton/c1");
    assert_eq!(body["base"], "main");
    assert_eq!(body["title"], "Add the widget");
    assert_eq!(creates[1]["headers"]["authorization"], "Bearer test-token");
    for r in &reqs {
        let problems: Vec<&str> = r["problems"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_str().unwrap())
            .filter(|p| !p.starts_with("warning:"))
            .collect();
        assert!(problems.is_empty(), "{r}");
    }
    // The journal says who opened it.
    let kinds: Vec<String> = ok(&p, &["agent", "log", "c1", "--json"])
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["kind"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        kinds.last().map(String::as_str),
        Some("pr_created"),
        "{kinds:?}"
    );
    // Once open, nothing more is asked of it.
    refused(
        &p,
        &["agent", "review", "c1"],
        2,
        "WORKFLOW_PARENT_INVALID_STATE",
    );
    // GitHub says it was merged (its real `closed` payload, naming the
    // pull request baton opened): the instance is pr_merged.
    let mut closed: Value = serde_json::from_str(
        &fs_err::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../baton-testkit/fixtures/github-webhooks/pull_request/closed.payload.json"),
        )
        .unwrap(),
    )
    .unwrap();
    closed["pull_request"]["html_url"] = "https://github.com/acme/widgets/pull/1".into();
    closed["pull_request"]["merged"] = true.into();
    let file = p.root().join("closed.json");
    fs_err::write(&file, closed.to_string()).unwrap();
    let out = ok(
        &p,
        &["deliver", "pull_request", &file.display().to_string()],
    );
    // No task waits for it, but it did something, and says so.
    assert!(out.contains("instance c1 is pr_merged"), "{out}");
    assert!(!out.contains("nothing changed"), "{out}");
    assert_eq!(show(&p, "c1")["status"], "pr_merged");
    let (_, listed, _) = p.run(&["deliveries", "--json"]);
    let d: Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(d[0]["decision"], "applied", "{d}");
    assert_eq!(d[0]["why"], "instance c1 is pr_merged");
}

/// Without a token nothing is pushed and the refusal says how to give one;
/// a coding instance that requires a review cannot open its pull request
/// before one.
#[test]
fn a_pull_request_needs_a_token_and_the_required_review() {
    let github = baton_testkit::github::FakeGitHub::start(0, &[]);
    let (p, remote) = project();
    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    text.push_str(&format!(
        "\n[github]\napi_url = \"{}\"\nrepository = \"acme/widgets\"\n",
        github.url
    ));
    fs_err::write(&cfg, text).unwrap();
    ok(
        &p,
        &["agent", "spawn", "x", "--id", "c1", "--agent", "committer"],
    );
    settled(&p, "c1");
    let out = p
        .baton(&["agent", "push", "c1"])
        .env_remove("GITHUB_TOKEN")
        .env_remove("GH_TOKEN")
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("WORKFLOW_PR_CREATION_FAILED: no GitHub token"),
        "{err}"
    );
    assert!(err.contains("hint: export GITHUB_TOKEN"), "{err}");
    let heads = Command::new("git")
        .args(["branch", "--list", "baton/c1"])
        .current_dir(remote.path())
        .output()
        .unwrap();
    assert!(heads.stdout.is_empty(), "nothing was pushed");
    assert!(github.requests().is_empty());

    ok(
        &p,
        &[
            "agent",
            "spawn",
            "y",
            "--id",
            "c2",
            "--agent",
            "committer",
            "--require-review",
        ],
    );
    settled(&p, "c2");
    let err = refused(&p, &["agent", "push", "c2"], 2, "WORKFLOW_INVALID_STATE");
    assert!(err.contains("requires a review"), "{err}");
    // With a token, c1's pull request opens.
    let out = p
        .baton(&["agent", "push", "c1", "--title", "Mine"])
        .env("GITHUB_TOKEN", "t")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "https://github.com/acme/widgets/pull/1"
    );
}

/// `--issue N`: the GitHub issue's title and body (read without a token,
/// as from a public repository) are the agent's instructions, after its
/// system prompt and before what the user added; the pull request closes
/// the issue. An issue that does not exist starts nothing.
#[test]
fn a_github_issue_and_a_system_prompt_make_the_instructions() {
    let github = baton_testkit::github::FakeGitHub::start(0, &[7]);
    let (p, _remote) = project();
    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    text.push_str(&format!(
        "\n[github]\napi_url = \"{}\"\nrepository = \"acme/widgets\"\n",
        github.url
    ));
    fs_err::write(&cfg, text).unwrap();
    let anonymous = |args: &[&str]| {
        p.baton(args)
            .env_remove("GITHUB_TOKEN")
            .env_remove("GH_TOKEN")
            .env("PATH", "/usr/bin:/bin")
            .output()
            .unwrap()
    };
    let out = anonymous(&[
        "agent",
        "spawn",
        "--issue",
        "7",
        "--system-prompt",
        "You are a careful engineer.",
        "Keep the change small.",
        "--agent",
        "committer",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert_eq!(id, "issue-7-found-a-bug", "named after the issue");
    let v = settled(&p, &id);
    assert_eq!(v["config"]["issue"]["number"], 7, "{v}");
    assert_eq!(v["config"]["issue"]["title"], "Found a bug");
    let prompts = p.root().join(format!(".baton/tasks/{id}/prompts"));
    let prompt: String = fs_err::read_dir(&prompts)
        .unwrap()
        .map(|e| fs_err::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    let at = |s: &str| {
        prompt
            .find(s)
            .unwrap_or_else(|| panic!("{s:?} not in the prompt:\n{prompt}"))
    };
    assert!(at("You are a careful engineer.") < at("GitHub issue #7: Found a bug"));
    assert!(at("GitHub issue #7: Found a bug") < at("I'm having a problem with this."));
    assert!(at("I'm having a problem with this.") < at("Keep the change small."));
    assert!(prompt.contains("https://github.com/acme/widgets/issues/7"));
    let reads = github.requests();
    assert_eq!(reads.len(), 1, "{reads:?}");
    assert_eq!(reads[0]["path"], "/repos/acme/widgets/issues/7");
    assert_eq!(reads[0]["status"], 200);
    assert!(reads[0]["headers"]["authorization"].is_null(), "no token");
    assert_eq!(reads[0]["problems"], serde_json::json!([]), "{reads:?}");

    // No such issue: nothing starts.
    let out = anonymous(&["agent", "spawn", "--issue", "8", "--agent", "committer"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("error: WORKFLOW_INVALID_CONFIGURATION: acme/widgets has no issue #8"),
        "{err}"
    );
    assert!(
        err.contains("GITHUB_TOKEN"),
        "a private repository needs one: {err}"
    );
    let all: Value = serde_json::from_str(&ok(&p, &["agent", "ls", "--all", "--json"])).unwrap();
    assert_eq!(all.as_array().unwrap().len(), 1, "{all}");

    // The pull request is named after the issue and closes it.
    let out = p
        .baton(&["agent", "push", &id])
        .env("GITHUB_TOKEN", "t")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reqs = github.requests();
    let create = reqs.iter().find(|r| r["method"] == "POST").unwrap();
    assert_eq!(create["body"]["title"], "Found a bug");
    let body = create["body"]["body"].as_str().unwrap();
    assert!(body.starts_with("Closes #7\n"), "{body}");
    assert!(
        !body.contains("careful engineer"),
        "the system prompt stays out: {body}"
    );
}

/// The rarer failures, each with its code: a fork onto a branch that
/// exists (`WORKFLOW_FORK_FAILED`, nothing started, that branch left
/// alone), a merge-back
/// git refuses because of the parent's uncommitted changes
/// (`WORKFLOW_PARENT_UPDATE_FAILED`, nothing merged), and a worktree git
/// will not remove (`WORKFLOW_CLEANUP_FAILED`, recorded, the instance
/// ended all the same).
#[test]
fn the_rarer_failures_have_their_codes() {
    let (p, _remote) = project();
    ok(
        &p,
        &["agent", "spawn", "x", "--id", "c1", "--agent", "committer"],
    );
    let c = settled(&p, "c1");
    p.git(&["branch", "baton/rx", "main"]);
    let err = refused(
        &p,
        &[
            "agent",
            "review",
            "c1",
            "--review-id",
            "rx",
            "--agent",
            "idle",
        ],
        1,
        "WORKFLOW_FORK_FAILED",
    );
    assert!(err.contains("baton/rx"), "{err}");
    assert!(err.contains("nothing was started"), "{err}");
    assert_eq!(show(&p, "c1")["status"], "working");
    let (code, _, _) = p.run(&["agent", "show", "rx"]);
    assert_eq!(code, 2, "no review was recorded");
    // The branch baton did not make is never taken for the review's.
    ok(&p, &["agent", "ls", "--all"]);
    assert!(branch_exists(&p, "baton/rx"));

    let rid = ok(&p, &["agent", "review", "c1", "--agent", "idle"]);
    let rid = rid.trim();
    assert_eq!(rid, "c1-r1");
    let r = settled(&p, rid);
    let git_in = |dir: &Path, args: &[&str]| {
        let s = Command::new("git")
            .args(["-c", "user.email=t@t", "-c", "user.name=t"])
            .args(args)
            .current_dir(dir)
            .status()
            .unwrap();
        assert!(s.success());
    };
    fs_err::write(worktree(&r).join("mine.txt"), "the reviewer's\n").unwrap();
    git_in(&worktree(&r), &["commit", "-qam", "review"]);
    fs_err::write(worktree(&c).join("mine.txt"), "not committed\n").unwrap();
    let head = p.git(&["rev-parse", "baton/c1"]);
    refused(
        &p,
        &["agent", "merge-back", rid, "--feedback", "x"],
        1,
        "WORKFLOW_PARENT_UPDATE_FAILED",
    );
    assert_eq!(p.git(&["rev-parse", "baton/c1"]), head, "nothing merged");
    assert_eq!(
        fs_err::read_to_string(worktree(&c).join("mine.txt")).unwrap(),
        "not committed\n",
        "the parent's change is as it was"
    );

    // A locked worktree cannot be removed: the failure is recorded.
    git_in(
        p.root(),
        &["worktree", "lock", worktree(&r).to_str().unwrap()],
    );
    git_in(&worktree(&r), &["reset", "-q", "--hard", "HEAD~1"]);
    let k: Value = serde_json::from_str(&ok(&p, &["agent", "kill", rid, "--json"])).unwrap();
    assert_eq!(k["failed"][0]["instance"], rid, "{k}");
    assert_eq!(show(&p, rid)["status"], "terminated");
    let log = ok(&p, &["agent", "log", rid, "--json"]);
    assert!(log.contains("\"kind\":\"cleanup_failed\""), "{log}");
    assert!(worktree(&r).exists(), "kept");
}

/// A new instance's worktree starts with the checkout's heavy ignored
/// folders: symlinked by default (never taken for work: not in its
/// status, its diff nor its commits), a copy-on-write clone with `share =
/// "reflink"` where the filesystem clones (nothing where it cannot), and
/// nothing with `share = "none"`.
#[test]
fn a_new_worktree_gets_the_heavy_ignored_folders() {
    let (p, _remote) = project();
    fs_err::write(p.root().join(".gitignore"), "node_modules/\ntarget/\n").unwrap();
    p.git(&["add", ".gitignore"]);
    p.git(&["commit", "-qm", "ignore builds"]);
    fs_err::create_dir_all(p.root().join("node_modules/left-pad")).unwrap();
    fs_err::write(
        p.root().join("node_modules/left-pad/index.js"),
        "module.exports = 1;\n",
    )
    .unwrap();
    fs_err::create_dir_all(p.root().join("web/node_modules/react")).unwrap();
    fs_err::write(p.root().join("web/node_modules/react/index.js"), "react\n").unwrap();
    fs_err::create_dir_all(p.root().join("target/debug")).unwrap();
    fs_err::write(p.root().join("target/debug/app"), "binary\n").unwrap();

    ok(
        &p,
        &["agent", "spawn", "share", "--id", "s1", "--agent", "idle"],
    );
    let wt = worktree(&settled(&p, "s1"));
    for rel in ["node_modules", "web/node_modules", "target"] {
        let meta = fs_err::symlink_metadata(wt.join(rel)).unwrap();
        assert!(meta.file_type().is_symlink(), "{rel} is not a symlink");
    }
    assert_eq!(
        fs_err::read_to_string(wt.join("node_modules/left-pad/index.js")).unwrap(),
        "module.exports = 1;\n"
    );
    let status = Command::new("git")
        .args(["status", "--porcelain"])
        .current_dir(&wt)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&status.stdout),
        "",
        "a shared folder shows as work"
    );
    let main_status = p.git(&["status", "--porcelain"]);
    assert!(!main_status.contains("node_modules"), "{main_status}");

    let cfg = p.root().join(".baton/config.toml");
    let text = fs_err::read_to_string(&cfg).unwrap();
    fs_err::write(&cfg, format!("{text}\n[worktrees]\nshare = \"none\"\n")).unwrap();
    ok(
        &p,
        &["agent", "spawn", "none", "--id", "s2", "--agent", "idle"],
    );
    let wt2 = worktree(&settled(&p, "s2"));
    assert!(
        fs_err::symlink_metadata(wt2.join("node_modules")).is_err(),
        "shared with share = none"
    );

    fs_err::write(
        &cfg,
        format!("{text}\n[worktrees]\nshare = \"reflink\"\nshared = [\"node_modules\"]\n"),
    )
    .unwrap();
    ok(
        &p,
        &["agent", "spawn", "clone", "--id", "s3", "--agent", "idle"],
    );
    let wt3 = worktree(&settled(&p, "s3"));
    // A filesystem that clones: the worktree's own copy; one that cannot
    // (ext4 here): nothing, not even half a copy.
    if let Ok(meta) = fs_err::symlink_metadata(wt3.join("node_modules")) {
        assert!(meta.is_dir() && !meta.file_type().is_symlink());
        assert!(wt3.join("node_modules/left-pad/index.js").is_file());
    }
    assert!(
        fs_err::symlink_metadata(wt3.join("target")).is_err(),
        "target is not in shared"
    );

    fs_err::write(
        &cfg,
        format!("{text}\n[worktrees]\nshare = \"sometimes\"\n"),
    )
    .unwrap();
    let (code, _, err) = p.run(&["agent", "spawn", "bad", "--id", "s4", "--agent", "idle"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("sometimes"), "{err}");
}

/// A review that merges back from its agent's own turn lets that turn
/// end by itself: the coding agent's feedback turn, which starts at once
/// and tidies the ended review, does not stop it while its agent says its
/// last words (they are the turn's summary).
#[test]
fn a_review_that_decides_in_its_turn_ends_that_turn_itself() {
    let (p, _remote) = project();
    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    text.push_str(&format!(
        "[agents.lingering]\ncommand = [\"sh\", \"-c\", '''echo checked >> REVIEW.md; git add -A && git -c user.email=a@a -c user.name=agent commit -qm 'review fix'; {} agent merge-back --feedback \"add tests\"; sleep 2; echo reviewed-late''']\n",
        baton_bin().display()
    ));
    fs_err::write(&cfg, text).unwrap();
    ok(
        &p,
        &["agent", "spawn", "x", "--id", "c1", "--agent", "idle"],
    );
    settled(&p, "c1");
    ok(&p, &["agent", "review", "c1", "--agent", "lingering"]);
    let r = settled(&p, "c1-r1");
    let turn = r["turns"][0].as_str().unwrap().to_string();
    let doc = p.state(&turn);
    assert_eq!(
        doc["status"], "COMPLETE",
        "the review's turn was stopped: {doc}"
    );
    assert_eq!(
        doc["completed_phases"][0]["summary"], "reviewed-late",
        "{doc}"
    );
    // The coding agent got the feedback, and the review gave back its
    // worktree once its turn had ended.
    let c = wait_for("the feedback turn", || {
        let v = settled(&p, "c1");
        (v["turns"].as_array()?.len() == 2).then_some(v)
    });
    assert_eq!(c["turn"]["status"], "COMPLETE", "{c}");
    ok(&p, &["agent", "ls"]);
    wait_for("the review's worktree to be removed", || {
        ok(&p, &["agent", "ls"]);
        (!p.root().join(".wt/c1-r1").exists()).then_some(())
    });
}

/// `baton agent spawn` killed right after each transition it commits (the
/// instance recorded; its worktree allocated; its first turn started),
/// one at a time: `doctor --fix` settles what each left, `doctor`
/// is then clean, the instance is in a true state (ended with its
/// worktree and branch gone, or working with them there), and the next
/// spawn works. And `agent review` killed once the review's worktree is
/// made, before it is journaled: `doctor --fix` fails the review, removes
/// its worktree and branch, and the coding agent goes on. Each is a crash
/// point of the enumeration (`crash_points/main.rs` checks that every
/// point has a test).
#[test]
fn an_instance_killed_after_each_transition_is_settled_by_doctor() {
    let mut t = baton_testkit::crash::Tally::default();
    for point in [
        "instance-committed:spawned",
        "instance-committed:allocated",
        "instance-committed:turn",
    ] {
        let (p, _remote) = project();
        p.set_ttl("1s");
        t.crash(
            p.baton(&["agent", "spawn", "x", "--id", "c1", "--agent", "idle"]),
            point,
        );
        std::thread::sleep(std::time::Duration::from_millis(1100));
        let (code, fixed, _) = p.run(&["doctor", "--fix"]);
        t.runs += 1;
        if fixed.contains("task c1 is CRASHED") {
            // The turn's own task crashed: resumed as doctor says.
            t.check(fixed.contains("baton resume c1"), || {
                format!("{point}: doctor does not say to resume c1: {fixed}")
            });
            let (code, _, err) = p.run(&["resume", "c1"]);
            t.recovered(point, "resume c1", code, 0, &err);
        } else {
            t.check(code == 0, || {
                format!("{point}: doctor --fix exited {code}: {fixed}")
            });
        }
        let (code, out, _) = p.run(&["doctor"]);
        t.recovered(point, "doctor", code, 0, &out);
        let c = show(&p, "c1");
        let status = c["status"].as_str().unwrap_or_default().to_string();
        let wt = p.root().join(".wt/c1");
        if ["failed", "terminated", "finished"].contains(&status.as_str()) {
            t.check(!wt.exists(), || {
                format!("{point}: ended, its worktree is still there: {c}")
            });
        } else {
            // Working: in its worktree, with its agent's turn started.
            let turns = c["turns"].as_array().map_or(0, Vec::len);
            t.check(status == "working" && wt.is_dir() && turns > 0, || {
                format!("{point}: neither ended nor working in its worktree with a turn: {c}")
            });
        }
        ok(
            &p,
            &["agent", "spawn", "y", "--id", "c2", "--agent", "idle"],
        );
        t.runs += 1;
        let c2 = settled(&p, "c2");
        t.check(c2["status"] == "working", || {
            format!("{point}: the next spawn: {c2}")
        });
    }
    // A review's start cut short: its worktree and branch made, its
    // allocation not journaled.
    let point = "review-forked:c1-r1";
    let (p, _remote) = project();
    p.set_ttl("1s");
    ok(
        &p,
        &["agent", "spawn", "x", "--id", "c1", "--agent", "idle"],
    );
    settled(&p, "c1");
    t.crash(
        p.baton(&["agent", "review", "c1", "--agent", "idle"]),
        point,
    );
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let (_, fixed, _) = p.run(&["doctor", "--fix"]);
    t.runs += 1;
    let (code, out, _) = p.run(&["doctor"]);
    t.recovered(
        point,
        "doctor",
        code,
        0,
        &format!("{out}\n(--fix said:\n{fixed})"),
    );
    let r = show(&p, "c1-r1");
    t.check(r["status"] == "failed", || {
        format!("{point}: the review is {}", r["status"])
    });
    t.check(
        !p.root().join(".wt/c1-r1").exists() && !branch_exists(&p, "baton/c1-r1"),
        || format!("{point}: the review's worktree or branch is left over"),
    );
    let c = show(&p, "c1");
    t.check(c["status"] == "working", || {
        format!("{point}: the coding agent cannot go on: {c}")
    });
    t.report("instances");
}

/// Two reviews merged back while their coding agent's turn still runs:
/// when that turn ends, their feedback comes in two turns, one after the
/// other, never two turns of one agent at once (each review's delivery is
/// journaled with its turn in one commit, decided on a read that saw the
/// agent idle). The simulator (`baton-sim`) found the engine starting both
/// at once; this is that race, through the binary.
#[test]
fn two_reviews_feedback_comes_in_turns_one_after_the_other() {
    let (p, _remote) = project();
    let b = baton_testkit::baton_bin();
    let b = b.display();
    let log = p.root().join("turns.log");
    let log = log.display();
    let commit = "git add -A && git -c user.email=a@a -c user.name=agent commit -qm";
    let wait_working = format!(
        "i=0; until {b} agent show $BATON_INSTANCE --json | grep -q '\"working\"'; do sleep 0.2; i=$((i+1)); [ $i -gt 300 ] && break; done"
    );
    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    text.push_str(&format!(
        "\n[agents.twice]\ncommand = [\"sh\", \"-c\", '''prompt=$(cat \"$1\"); case \"$prompt\" in *\"reviewer's feedback\"*) echo start >> {log}; sleep 2; echo end >> {log}; echo handled;; *) echo work > work.txt; {commit} work; for n in 1 2; do {b} agent review --agent reviewer; sleep 0.5; {wait_working}; done; echo coded;; esac''', \"agent\", \"{{{{prompt_file}}}}\"]\n"
    ));
    fs_err::write(&cfg, text).unwrap();
    ok(
        &p,
        &[
            "agent",
            "spawn",
            "work twice reviewed",
            "--id",
            "c1",
            "--agent",
            "twice",
            "--max-reviews",
            "3",
        ],
    );
    let v = wait_for("both feedback turns", || {
        let v = settled(&p, "c1");
        (v["turns"].as_array()?.len() == 3 && v["turn"]["status"] == "COMPLETE").then_some(v)
    });
    assert_eq!(v["state"]["review_count"], 2, "{v}");
    for r in ["c1-r1", "c1-r2"] {
        assert_eq!(show(&p, r)["state"]["feedback_delivered"], true, "{r}");
    }
    let turns = fs_err::read_to_string(p.root().join("turns.log")).unwrap();
    assert_eq!(
        turns, "start\nend\nstart\nend\n",
        "one feedback turn at a time"
    );
}
