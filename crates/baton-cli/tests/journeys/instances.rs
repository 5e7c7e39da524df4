//! Journeys through agent instances started by workflows and by issues,
//! the progress a repository keeps, and tasks that wait for a person.
//!
//! The agents are the scripted ones of `common/instances.rs` (shell
//! scripts run as generic agents, committing with git as an agent would),
//! plus a few written here; GitHub is the fake API the testkit starts.
//! Nothing waits on a clock: each race is ordered by a file the test
//! creates when it is ready (an agent that waits for `go`) or by a kill
//! the test makes itself.

use crate::common::instances::{branch_exists, ok, project, show};
use baton_testkit::{TestProject, on_both_backends, process_gone, wait_for};
use serde_json::Value;

/// Sets `[instances] max_concurrent_instances` (the scripted agents'
/// settings already open that table).
fn limit(p: &TestProject, max: u32) {
    let cfg = p.root().join(".baton/config.toml");
    let text = fs_err::read_to_string(&cfg).unwrap();
    let text = text.replacen(
        "worktree_base = \".wt\"\n",
        &format!("worktree_base = \".wt\"\nmax_concurrent_instances = {max}\n"),
        1,
    );
    fs_err::write(&cfg, text).unwrap();
}

/// Adds an agent `[agents.NAME]` running `script` (with `$1` its prompt
/// file) to the project's settings.
fn agent(p: &TestProject, name: &str, script: &str) {
    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    text.push_str(&format!(
        "[agents.{name}]\ncommand = [\"sh\", \"-c\", '''{script}''', \"agent\", \"{{{{prompt_file}}}}\"]\n"
    ));
    fs_err::write(&cfg, text).unwrap();
}

/// A workflow whose `implement` phase runs `agent` as a coding instance,
/// then a command phase.
fn instance_flow(name: &str, agent: &str) -> String {
    format!(
        "name = \"{name}\"\n[[phase]]\nid = \"implement\"\nagent = \"{agent}\"\nprompt = \"implement {{{{task}}}}\"\ninstance = {{}}\n[[phase]]\nid = \"check\"\nrun = \"echo checked\"\n"
    )
}

/// Every instance, ended ones too.
fn instances(p: &TestProject) -> Vec<Value> {
    let v: Value = serde_json::from_str(&ok(p, &["agent", "ls", "--all", "--json"])).unwrap();
    v.as_array().unwrap().clone()
}

/// The live instances (what counts against the limit, and `pr_created`).
fn live(p: &TestProject) -> Vec<Value> {
    let v: Value = serde_json::from_str(&ok(p, &["agent", "ls", "--json"])).unwrap();
    v.as_array().unwrap().clone()
}

/// The pid `run --detach` says its background process has.
fn detached_pid(stderr: &str) -> u32 {
    stderr
        .split("runs in the background (pid ")
        .nth(1)
        .and_then(|r| r.split(')').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no background pid in: {stderr}"))
}

/// The pid an agent that records it (`sleeper`, `waiter`) wrote for turn
/// `turn`, once it runs.
fn agent_pid(p: &TestProject, turn: &str) -> u32 {
    let file = p.root().join(format!(".baton/tasks/{turn}/agent.pid"));
    wait_for(&format!("the agent of {turn} to start"), || {
        fs_err::read_to_string(&file).ok()?.trim().parse().ok()
    })
}

fn kill9(pid: u32) {
    let s = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(s.success());
    wait_for(&format!("pid {pid} to die"), || {
        process_gone(pid).then_some(())
    });
}

fn read(p: &TestProject, file: &str) -> String {
    fs_err::read_to_string(p.root().join(file)).unwrap_or_default()
}

on_both_backends! {
    /// A team runs task after task whose phase is an agent instance, then spawns one by hand, and nothing is refused for want of room.
    ///
    /// Item 2 of issue 24: an instance whose phase's work is done ends
    /// with its phase (`finished`), so `max_concurrent_instances` counts
    /// only what is live. Its work is kept under the cleanup rules (a
    /// branch with commits no other branch has keeps its worktree and
    /// branch), and the phase's summary says so.
    fn instance_phases_end_with_their_work_so_the_next_task_has_room() {
        let (p, _remote) = project();
        limit(&p, 2);
        p.workflow("build", &instance_flow("build", "committer"));
        for n in 1..=4 {
            let id = format!("t{n}");
            let (code, _, err) = p.run(&["run", "build", "widget", "--id", &id]);
            assert_eq!(code, 0, "task {n} of 4, under a limit of 2: {err}");
            assert_eq!(p.state(&id)["status"], "COMPLETE");
        }
        assert!(live(&p).is_empty(), "{:?}", live(&p));
        let all = instances(&p);
        assert_eq!(all.len(), 4, "{all:?}");
        for i in &all {
            let task = i["config"]["for_phase"]["task"].as_str().unwrap();
            assert_eq!(i["id"], format!("{task}-implement"));
            assert_eq!(i["status"], "finished", "{i}");
            assert_eq!(i["config"]["for_phase"]["phase"], "implement");
            assert_eq!(
                i["end_reason"],
                format!("its work for phase implement of task {task} is done")
            );
            // Its commit is on no other branch: kept, with its worktree.
            let branch = format!("baton/{task}-implement");
            assert!(branch_exists(&p, &branch), "{branch}");
            assert_eq!(
                p.git(&["log", "-1", "--format=%s", &branch]).trim(),
                "mine",
                "the agent's commit"
            );
            let summary = p.state(task)["completed_phases"][0]["summary"]
                .as_str()
                .unwrap()
                .to_string();
            assert!(
                summary.starts_with(&format!(
                    "agent instance {task}-implement finished its work and ended; its worktree and branch {branch} are kept: "
                )),
                "{summary}"
            );
        }
        // By hand, under the same limit: there is room.
        let id = ok(&p, &["agent", "spawn", "tidy up", "--agent", "idle"]);
        assert_eq!(show(&p, id.trim())["status"], "working");
        assert_eq!(live(&p).len(), 1);
        // And a fifth task beside it.
        let (code, _, err) = p.run(&["run", "build", "widget", "--id", "t5"]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(live(&p).len(), 1, "only the one spawned by hand");
    }

    /// Someone cancels a task whose agent instance is at work, and later removes a crashed one: each instance ends with its task and its agent stops.
    ///
    /// Item 2 of issue 24, the other ends: `baton cancel` and `baton rm`
    /// of the task end the instances its phases started (`terminated`,
    /// saying why), stop their agents and give back their worktrees. The
    /// crash is a SIGKILL of the background runner once the agent runs.
    fn cancelling_or_removing_a_task_ends_the_instance_its_phase_started() {
        let (p, _remote) = project();
        limit(&p, 1);
        p.workflow("slow", &instance_flow("slow", "sleeper"));
        let (code, _, err) = p.run(&["run", "slow", "x", "--id", "s1", "--detach"]);
        assert_eq!(code, 0, "{err}");
        let agent = agent_pid(&p, "s1-implement");
        assert_eq!(show(&p, "s1-implement")["status"], "working");
        let (code, _, err) = p.run(&["cancel", "s1"]);
        assert_eq!(code, 0, "{err}");
        let i = show(&p, "s1-implement");
        assert_eq!(i["status"], "terminated", "{i}");
        assert_eq!(i["end_reason"], "its task s1 was cancelled");
        wait_for("the agent to stop", || process_gone(agent).then_some(()));
        assert!(
            !branch_exists(&p, "baton/s1-implement"),
            "nothing held: given back"
        );
        assert!(!p.root().join(".wt/s1-implement").exists());

        // The limit of one has room again; this runner dies mid-phase.
        let (code, _, err) = p.run(&["run", "slow", "y", "--id", "s2", "--detach"]);
        assert_eq!(code, 0, "{err}");
        let agent = agent_pid(&p, "s2-implement");
        kill9(detached_pid(&err));
        wait_for("the task to show CRASHED", || {
            (p.state("s2")["status"] == "CRASHED").then_some(())
        });
        let (code, _, err) = p.run(&["rm", "s2"]);
        assert_eq!(code, 0, "{err}");
        let i = show(&p, "s2-implement");
        assert_eq!(i["status"], "terminated", "{i}");
        assert_eq!(i["end_reason"], "its task s2 was removed");
        wait_for("the agent to stop", || process_gone(agent).then_some(()));
        assert!(live(&p).is_empty());
        let id = ok(&p, &["agent", "spawn", "next", "--agent", "idle"]);
        assert_eq!(show(&p, id.trim())["status"], "working");
    }

    /// A task loops back over its instance phase until a check passes: each iteration gets its own agent, and a limit of one live instance is never in the way.
    ///
    /// Item 2 of issue 24 through `loop_to`: the first iteration's
    /// instance ends when its phase passes, so the second can start.
    fn each_iteration_of_a_loop_gets_its_own_instance_within_the_limit() {
        let (p, _remote) = project();
        limit(&p, 1);
        p.workflow(
            "iterate",
            "name = \"iterate\"\n[[phase]]\nid = \"implement\"\nagent = \"committer\"\nprompt = \"implement {{task}}\"\ninstance = {}\n[[phase]]\nid = \"check\"\nneeds = [\"implement\"]\nrun = \"echo x >> tries.log; test $(wc -l < tries.log) -ge 2\"\nloop_to = \"implement\"\nmax_iterations = 3\n",
        );
        let (code, _, err) = p.run(&["run", "iterate", "x", "--id", "it"]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(read(&p, "tries.log").lines().count(), 2);
        let mut ids: Vec<String> = instances(&p)
            .iter()
            .map(|i| {
                assert_eq!(i["status"], "finished", "{i}");
                i["id"].as_str().unwrap().to_string()
            })
            .collect();
        ids.sort();
        assert_eq!(ids, ["it-implement", "it-implement-2"]);
        assert_eq!(p.passes("it")["implement"], 2);
    }

    /// A runner is SIGKILLed while its phase's agent instance works; `baton resume` finds that same instance, starts no second agent, and the instance ends when its work is done.
    ///
    /// Item 2 of issue 24 across a crash: the agent waits for a file the
    /// test creates only after the resume has begun.
    fn a_crashed_instance_phase_resumes_with_the_same_agent_and_then_ends() {
        let (p, _remote) = project();
        agent(
            &p,
            "waiter",
            "echo $$ > \"$BATON_STATE_DIR/agent.pid\"; while [ ! -f \"$BATON_PROJECT/go\" ]; do sleep 0.05; done; echo done > done.txt; git add -A && git -c user.email=a@a -c user.name=agent commit -qm done",
        );
        p.workflow("wait", &instance_flow("wait", "waiter"));
        let (code, _, err) = p.run(&["run", "wait", "x", "--id", "w1", "--detach"]);
        assert_eq!(code, 0, "{err}");
        let first = agent_pid(&p, "w1-implement");
        kill9(detached_pid(&err));
        wait_for("the task to show CRASHED", || {
            (p.state("w1")["status"] == "CRASHED").then_some(())
        });
        assert!(
            !process_gone(first),
            "the agent's turn is a task of its own"
        );
        let mut resume = p.baton(&["resume", "w1"]).spawn().unwrap();
        wait_for("the resumed phase to wait on the instance", || {
            let j = p.journal("w1");
            (j.iter().filter(|e| e["kind"] == "phase_started").count() == 2).then_some(())
        });
        fs_err::write(p.root().join("go"), "").unwrap();
        let st = baton_testkit::wait_child(&mut resume, "baton resume w1");
        assert!(st.success(), "{st}");
        assert_eq!(p.state("w1")["status"], "COMPLETE");
        let all = instances(&p);
        assert_eq!(all.len(), 1, "no second instance: {all:?}");
        assert_eq!(all[0]["status"], "finished");
        assert_eq!(
            all[0]["turns"].as_array().unwrap().len(),
            1,
            "no second agent"
        );
        assert_eq!(
            p.git(&["log", "-1", "--format=%s", "baton/w1-implement"])
                .trim(),
            "done"
        );
    }

    /// A developer hands GitHub issue 42 to an agent with `baton agent spawn --issue 42 --agent coder` and nothing more, right after a workflow's instance used the only slot, and its pull request closes the issue.
    ///
    /// Item 3 of issue 24 (with item 2): the issue's title and body are
    /// the instructions; against the fake GitHub API, read without a
    /// token as from a public repository.
    fn an_issue_alone_is_work_enough_for_an_agent() {
        let github = baton_testkit::github::FakeGitHub::start(0, &[42]);
        let (p, _remote) = project();
        limit(&p, 1);
        let cfg = p.root().join(".baton/config.toml");
        let mut text = fs_err::read_to_string(&cfg).unwrap();
        text.push_str(&format!(
            "\n[github]\napi_url = \"{}\"\nrepository = \"acme/widgets\"\n",
            github.url
        ));
        fs_err::write(&cfg, text).unwrap();
        p.workflow("build", &instance_flow("build", "committer"));
        let (code, _, err) = p.run(&["run", "build", "widget", "--id", "b1"]);
        assert_eq!(code, 0, "{err}");

        let out = p
            .baton(&["agent", "spawn", "--issue", "42", "--agent", "committer"])
            .env_remove("GITHUB_TOKEN")
            .env_remove("GH_TOKEN")
            .env("PATH", "/usr/bin:/bin")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert_eq!(id, "issue-42-found-a-bug");
        let v = crate::common::instances::settled(&p, &id);
        assert_eq!(v["config"]["instructions"], "", "nothing was added: {v}");
        assert_eq!(v["config"]["issue"]["number"], 42);
        let prompts = p.root().join(format!(".baton/tasks/{id}/prompts"));
        let prompt: String = fs_err::read_dir(&prompts)
            .unwrap()
            .map(|e| fs_err::read_to_string(e.unwrap().path()).unwrap())
            .collect();
        assert!(prompt.contains("GitHub issue #42: Found a bug"), "{prompt}");
        assert!(
            prompt.contains("I'm having a problem with this."),
            "{prompt}"
        );

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
        assert!(body.starts_with("Closes #42\n"), "{body}");
        assert!(body.contains("I'm having a problem with this."), "{body}");
        assert_eq!(create["problems"], serde_json::json!([]), "{create}");
        assert_eq!(show(&p, &id)["status"], "pr_created");
        assert!(live(&p).iter().all(|i| i["status"] == "pr_created"));
    }

    /// Someone deletes the older of two tasks in a repository and creates it again: it continues at its own stage, not the newer task's, and not from the start.
    ///
    /// Item 9 of issue 24: each task has its stage record, keyed by
    /// repository and task id, beside the repository's; `baton progress`
    /// shows both, `--task` one, and clearing one task's makes only that
    /// task start over.
    fn recreating_the_older_of_two_tasks_continues_at_its_own_stage() {
        let p = TestProject::new();
        p.workflow(
            "build",
            "name = \"build\"\n[[phase]]\nid = \"plan\"\nrun = \"echo $BATON_TASK_ID >> plan.log && echo 'the plan: two steps'\"\n[[phase]]\nid = \"implement\"\nrun = \"test -f ready\"\nmax_attempts = 1\n[[phase]]\nid = \"ship\"\nrun = \"echo $BATON_TASK_ID >> ship.log\"\n",
        );
        let label = ["--label", "repository=acme/app"];
        let run = |id: &str, extra: &[&str]| {
            let mut args = vec!["run", "build", "widget", "--id", id];
            args.extend_from_slice(&label);
            args.extend_from_slice(extra);
            p.run(&args)
        };
        assert_eq!(run("t1", &[]).0, 1, "implement fails until `ready` exists");
        fs_err::write(p.root().join("ready"), "").unwrap();
        assert_eq!(run("t2", &[]).0, 0, "the newer task completes");
        fs_err::remove_file(p.root().join("ready")).unwrap();
        let (_, text, _) = p.run(&["progress", "acme/app"]);
        assert!(
            text.contains("acme/app  task t2 (build)  completed at ship"),
            "{text}"
        );
        assert!(
            text.contains("\n  task t1 (build)  failed at implement"),
            "{text}"
        );

        let (code, _, err) = p.run(&["rm", "t1"]);
        assert_eq!(code, 0, "{err}");
        fs_err::write(p.root().join("ready"), "").unwrap();
        let (code, _, err) = run("t1", &[]);
        assert_eq!(code, 0, "{err}");
        assert!(
            err.contains("task t1 continues at implement: the progress record of acme/app says plan passed before it was deleted"),
            "{err}"
        );
        assert_eq!(read(&p, "plan.log"), "t1\nt2\n", "t1 did not plan again");
        assert_eq!(read(&p, "ship.log"), "t2\nt1\n");
        let doc = p.state("t1");
        assert_eq!(doc["completed_phases"][0]["summary"], "the plan: two steps");

        let (code, out, err) = p.run(&["progress", "acme/app", "--task", "t1", "--json"]);
        assert_eq!(code, 0, "{err}");
        let rec: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(rec[0]["status"], "completed");
        assert_eq!(rec[0]["labels"]["repository"], "acme/app");
        let (code, out, _) = p.run(&["progress", "--json"]);
        assert_eq!(code, 0);
        let all: Value = serde_json::from_str(&out).unwrap();
        let tasks: Vec<&str> = all[0]["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["task_id"].as_str().unwrap())
            .collect();
        assert_eq!(tasks, ["t1", "t2"]);

        // Clearing t2's record alone: t2 created again starts over, t1's
        // record stays.
        assert_eq!(p.run(&["rm", "t2"]).0, 0);
        let (code, _, err) = p.run(&["progress", "acme/app", "--task", "t2", "--clear"]);
        assert_eq!(code, 0, "{err}");
        let (code, _, err) = run("t2", &[]);
        assert_eq!(code, 0, "{err}");
        assert!(!err.contains("continues at"), "{err}");
        assert_eq!(read(&p, "plan.log"), "t1\nt2\nt2\n");
        let (code, _, _) = p.run(&["progress", "acme/app", "--task", "t1"]);
        assert_eq!(code, 0);
    }

    /// A task whose pull request came in through a webhook fails after it, is deleted and created again: its next phase still knows the pull request's number.
    ///
    /// Item 9 of issue 24 with `baton deliver`: the labels an event set
    /// (`pr-number`, `pr-branch`) are kept in the task's stage record and
    /// come back with it, so `{{labels.pr-number}}` renders as before.
    fn a_recreated_task_keeps_the_labels_its_events_set() {
        let p = TestProject::new();
        p.workflow(
            "pr-flow",
            "name = \"pr-flow\"\n[[phase]]\nid = \"wait-pr\"\nwait = { event = \"github.pull_request.opened\", match = { \"task-id\" = \"{{labels.task-id}}\" } }\n[[phase]]\nid = \"after\"\nrun = \"echo pr {{labels.pr-number}} from {{labels.pr-branch}} >> after.txt && test -f ready\"\nmax_attempts = 1\n",
        );
        // The fixture's pull request comes from branch `changes`.
        let (code, _, err) = p.run(&["run", "pr-flow", "x", "--id", "changes"]);
        assert_eq!(code, 4, "{err}");
        let payload = baton_testkit::github_fixture("pull_request/opened.payload.json");
        let (_, out, err) = p.run(&[
            "deliver",
            "pull_request",
            payload.to_str().unwrap(),
            "--delivery",
            "d-1",
            "--branch-pattern",
            "{task-id}",
            "--json",
        ]);
        assert!(out.contains("resumed"), "{out}\n{err}");
        assert_eq!(p.state("changes")["status"], "FAILED");
        assert_eq!(read(&p, "after.txt"), "pr 2 from changes\n");
        // Another task of the repository moves on meanwhile.
        p.workflow(
            "other",
            "name = \"other\"\n[[phase]]\nid = \"a\"\nrun = \"true\"\n",
        );
        assert_eq!(p.run(&["run", "other", "y", "--id", "later"]).0, 0);

        assert_eq!(p.run(&["rm", "changes"]).0, 0);
        fs_err::write(p.root().join("ready"), "").unwrap();
        let (code, _, err) = p.run(&["run", "pr-flow", "x", "--id", "changes"]);
        assert_eq!(code, 0, "{err}");
        assert!(err.contains("task changes continues at after"), "{err}");
        assert!(err.contains("pr-number=2"), "{err}");
        assert_eq!(
            read(&p, "after.txt"),
            "pr 2 from changes\npr 2 from changes\n",
            "the label renders as before"
        );
        let doc = p.state("changes");
        assert_eq!(doc["status"], "COMPLETE");
        assert_eq!(doc["labels"]["pr-number"], "2", "{doc}");
    }

    /// A person is asked whether to ship and answers from the terminal, as `baton run` told them; the session log then tells what happened in the order it happened.
    ///
    /// Item 10 of issue 24: `run` and `resume` name `baton inbox answer`
    /// (which runs the task on), and an item an agent raised in the last
    /// phase (its `notify` that the work is done, through baton's MCP
    /// server and the official Python SDK, as an agent CLI calls it) lands
    /// in that phase, before `[!task_complete]`.
    fn a_person_answers_from_the_terminal_and_the_log_tells_it_in_order() {
        let p = TestProject::new();
        let py = std::env::var("MCP_PY").expect(
            "MCP_PY is not set: run the tests with ./scripts/test, which installs the Python MCP SDK",
        );
        let client = baton_testkit::testkit_dir().join("mcp-clients/client.py");
        fs_err::write(
            p.root().join("notify.sh"),
            format!(
                "exec '{py}' '{}' auto '[{{\"tool\": \"notify\", \"args\": {{\"message\": \"shipped to staging\", \"level\": \"task_complete\"}}}}]' -- env BATON_PROJECT=\"$BATON_PROJECT\" BATON_TASK_ID=\"$BATON_TASK_ID\" BATON_PHASE=\"$BATON_PHASE\" ${{BATON_DATABASE_URL:+\"BATON_DATABASE_URL=$BATON_DATABASE_URL\"}} '{}' mcp > notify.out\n",
                client.display(),
                baton_testkit::baton_bin().display()
            ),
        )
        .unwrap();
        p.workflow(
            "release",
            "name = \"release\"\n[[phase]]\nid = \"build\"\nrun = \"echo built\"\n[[phase]]\nid = \"approve\"\nwait = { human = \"Ship it?\", options = [\"yes\", \"no\"] }\n[[phase]]\nid = \"ship\"\nrun = \"sh notify.sh\"\n",
        );
        let how = "answer it with `baton inbox answer rel/approve CHOICE` (one of: yes, no), which runs the task on";
        let (code, _, err) = p.run(&["run", "release", "2.0", "--id", "rel"]);
        assert_eq!(code, 4, "{err}");
        assert!(err.contains(&format!("hint: {how}")), "{err}");
        let (code, _, err) = p.run(&["resume", "rel"]);
        assert_eq!(code, 4, "a resume does not answer it: {err}");
        assert!(err.contains(&format!("hint: {how}")), "{err}");

        let (code, _, err) = p.run(&["inbox", "answer", "rel/approve", "yes", "--by", "ana"]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(p.state("rel")["status"], "COMPLETE");
        assert!(
            read(&p, "notify.out").contains(r#""tool": "notify", "isError": false"#),
            "the agent's notify was answered"
        );
        let (_, out, _) = p.run(&["inbox", "--all", "--json"]);
        let items: Value = serde_json::from_str(&out).unwrap();
        assert!(
            items
                .as_array()
                .unwrap()
                .iter()
                .any(|i| i["text"] == "shipped to staging" && i["phase"] == "ship"),
            "{items}"
        );

        let log = read(&p, ".baton/sessions/rel.md");
        let at = |s: &str| {
            log.find(s)
                .unwrap_or_else(|| panic!("{s:?} is not in the log:\n{log}"))
        };
        let order = [
            "## approve",
            "> [!decision_needed] Ship it?",
            "> [!user] ana answered",
            "## ship",
            "> [!task_complete] shipped to staging",
            "> [!task_complete] the task is complete",
        ];
        for w in order.windows(2) {
            assert!(at(w[0]) < at(w[1]), "{:?} before {:?}:\n{log}", w[0], w[1]);
        }
    }

    /// Someone clicks Resume on a task that waits for a person's answer, through the API or the dashboard: it is refused with how to answer, the page offers the answer instead, and the answer given there lets the task run on.
    ///
    /// Item 10 of issue 24: `POST …/resume` answers 409
    /// `WAITING_FOR_AN_ANSWER` (a resume would change nothing), the
    /// dashboard shows no Resume button for such a task (it does for a
    /// failed one), in a real headless Chromium.
    fn resuming_a_task_that_waits_for_a_person_is_refused_and_the_page_offers_the_answer() {
        let p = TestProject::new();
        p.workflow(
            "ask",
            "name = \"ask\"\n[[phase]]\nid = \"approve\"\nwait = { human = \"Ship it?\", options = [\"yes\", \"no\"] }\n[[phase]]\nid = \"ship\"\nrun = \"echo shipped > shipped.txt\"\n",
        );
        p.workflow(
            "fixable",
            "name = \"fixable\"\n[[phase]]\nid = \"check\"\nrun = \"test -f fixed\"\nmax_attempts = 1\n",
        );
        assert_eq!(
            p.run(&["run", "ask", "Release 2.0", "--id", "release"]).0,
            4
        );
        assert_eq!(p.run(&["run", "fixable", "Fix it", "--id", "broken"]).0, 1);
        let server = baton_testkit::serve::Server::start(&p, &[]);
        let mut r = baton_testkit::serve::http()
            .post(&format!("{}/api/v1/tasks/release/resume", server.url))
            .send_json(serde_json::json!({}))
            .unwrap();
        let status = r.status().as_u16();
        let v: Value = r.body_mut().read_json().unwrap();
        assert_eq!(
            (status, v["code"].as_str()),
            (409, Some("WAITING_FOR_AN_ANSWER")),
            "{v}"
        );
        assert!(
            v["message"].as_str().unwrap().contains("\"Ship it?\""),
            "{v}"
        );
        let hint = v["hint"].as_str().unwrap();
        assert!(hint.contains("POST /api/v1/tasks/release/answer"), "{hint}");
        assert!(
            hint.contains("`baton inbox answer release/approve CHOICE (one of: yes, no)`"),
            "{hint}"
        );
        assert_eq!(p.state("release")["status"], "WAITING");
        assert!(
            p.journal("release")
                .iter()
                .all(|e| e["kind"] != "task_resumed"),
            "nothing ran"
        );

        let b = baton_testkit::browser::Browser::start(1280, 860);
        b.goto(&format!("{}/tasks", server.url));
        let row = |id: &str| format!(r#"tr[data-task="{id}"]"#);
        b.wait_text(&format!("{} td.status", row("broken")), "FAILED", 30);
        b.click(&row("broken"));
        b.wait_text("#detail-body .title", "broken", 10);
        assert!(b.text("#resume").is_some(), "a failed task offers Resume");
        b.click(&row("release"));
        b.wait_text("#answer", "Ship it?", 10);
        assert_eq!(
            b.js(
                "return document.getElementById('resume') === null;",
                serde_json::json!([])
            ),
            Value::Bool(true),
            "no Resume for a task waiting for a person"
        );
        b.click(r#"#answer button[data-answer="yes"]"#);
        b.wait_text(&format!("{} td.status", row("release")), "COMPLETE", 60);
        assert_eq!(read(&p, "shipped.txt"), "shipped\n");
        assert_eq!(p.state("release")["completed_phases"][0]["summary"], "yes");
        assert_eq!(server.stop().code(), Some(0));
    }
}
