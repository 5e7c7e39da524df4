//! Queued tasks and `baton worker`: worktrees and branches pushed at every
//! phase boundary, workers on two "machines" (separate clones with their own
//! host identity) sharing one PostgreSQL and one bare git remote, many
//! workers on one queue, a PostgreSQL restart mid-run, and bad URLs.

use baton_testkit::{Backend, PgCluster, TestProject, on_both_backends, pg, wait_for};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A bare repository to serve as the shared git remote.
fn bare_remote() -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("baton-remote-")
        .tempdir()
        .unwrap();
    let ok = Command::new("git")
        .args(["init", "-q", "--bare", "-b", "main"])
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(ok.success());
    dir
}

/// A project whose workflows and config are committed and pushed to
/// `remote` as `origin`, like a team's repository.
fn project_with_remote(remote: &Path, ttl: &str, workflow: &str) -> TestProject {
    let p = TestProject::new();
    p.workflow("w", workflow);
    let cfg = p.root().join(".baton/config.toml");
    let text = fs_err::read_to_string(&cfg)
        .unwrap()
        .replace("ttl = \"30s\"", &format!("ttl = \"{ttl}\""));
    fs_err::write(&cfg, text).unwrap();
    p.git(&["remote", "add", "origin", remote.to_str().unwrap()]);
    p.git(&["add", "-A"]);
    p.git(&["commit", "-qm", "baton workflows"]);
    p.git(&["push", "-q", "origin", "main"]);
    p
}

/// A second machine: a fresh clone of `remote`, on the same store.
fn clone_of(first: &TestProject, remote: &Path) -> TestProject {
    let mut p = TestProject::bare();
    p.database_url = first.database_url.clone();
    let dir = p.root().to_str().unwrap().to_string();
    let out = Command::new("git")
        .args(["clone", "-q", remote.to_str().unwrap(), &dir])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(p.root().join(".baton/config.toml").is_file());
    p
}

fn worker(p: &TestProject, host: &str, extra_env: &[(&str, &str)], args: &[&str]) -> Child {
    let mut c = p.baton(&[&["worker"], args].concat());
    c.env("BATON_HOST", host)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    for (k, v) in extra_env {
        c.env(k, v);
    }
    c.spawn().unwrap()
}

use std::os::unix::process::CommandExt;

fn kill_group(pid: i32) {
    let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::SIGKILL);
}

fn status(p: &TestProject, id: &str) -> String {
    p.state(id)["status"].as_str().unwrap().to_string()
}

/// Journal seqs run 1..=n without a gap or repeat.
fn assert_gapless(p: &TestProject, id: &str) {
    let seqs: Vec<u64> = p
        .journal(id)
        .iter()
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    let want: Vec<u64> = (1..=seqs.len() as u64).collect();
    assert_eq!(seqs, want, "task {id}: journal seqs");
}

fn remote_git(remote: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("--git-dir")
        .arg(remote)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const TWO_PHASES: &str = r#"name = "w"
[[phase]]
id = "a"
run = "echo from-a > a.txt"
[[phase]]
id = "b"
needs = ["a"]
run = "cat a.txt > b.txt && echo b-done"
"#;

on_both_backends! {
    /// Queued tasks run in their own worktrees, never in the project's
    /// files, and each phase's work is on the task's branch at the remote.
    fn queued_tasks_run_in_worktrees_and_push_every_phase() {
        let remote = bare_remote();
        let p = project_with_remote(remote.path(), "30s", TWO_PHASES);
        for id in ["q1", "q2"] {
            let (code, out, err) = p.run(&["run", "w", "queued", "--queue", "--id", id]);
            assert_eq!(code, 0, "{err}");
            assert_eq!(out.trim(), id);
            assert!(err.contains("QUEUED"), "{err}");
        }
        let ls: Value = serde_json::from_str(&p.run(&["ls", "--json"]).1).unwrap();
        let shown: Vec<&str> = ls.as_array().unwrap().iter().map(|t| t["status"].as_str().unwrap()).collect();
        assert_eq!(shown, ["QUEUED", "QUEUED"]);
        assert!(ls.as_array().unwrap().iter().all(|t| t["queued"] == true && t["resumable"] == false), "{ls}");
        let out = p.baton(&["worker", "--until-idle", "-n", "2"]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        assert!(err.contains("[q1] PASS") && err.contains("[q2] PASS"), "progress names its task: {err}");
        for id in ["q1", "q2"] {
            assert_eq!(status(&p, id), "COMPLETE");
            assert_eq!(p.passes(id), BTreeMap::from([("a".into(), 1), ("b".into(), 1)]));
            let log = remote_git(remote.path(), &["log", "--format=%s", &format!("baton/{id}")]);
            assert!(log.starts_with(&format!("baton: {id} b passed\nbaton: {id} a passed\n")), "{log}");
            let b = remote_git(remote.path(), &["show", &format!("baton/{id}:b.txt")]);
            assert_eq!(b, "from-a\n");
            let refs = remote_git(remote.path(), &["for-each-ref", "--format=%(refname)", &format!("refs/baton/{id}/")]);
            assert!(refs.contains("/start"), "checkpoint refs pushed: {refs}");
        }
        assert!(!p.root().join("a.txt").exists(), "the project's own files are untouched");
        // A rewind of a queued task restores and re-runs in its worktree.
        let (code, _, err) = p.run(&["resume", "q1", "--from", "b"]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(p.passes("q1")["b"], 2);
        assert!(!p.root().join("b.txt").exists(), "the project's own files are untouched");
        let b = remote_git(remote.path(), &["show", "baton/q1:b.txt"]);
        assert_eq!(b, "from-a\n", "the re-run's work is on the branch");
        assert_eq!(p.git(&["status", "--porcelain"]), "", "worktrees are not untracked files");
    }

    /// A wrong or unreachable store URL: exit 1 naming the host and the
    /// cause, and nothing written.
    fn an_unreachable_database_is_a_clear_error_and_writes_nothing() {
        let p = TestProject::new();
        p.workflow("w", TWO_PHASES);
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let before = p.run(&["ls", "--json"]).1;
        let url = format!("postgres://baton@127.0.0.1:{port}/baton");
        let out = p.baton(&["run", "w", "x", "--id", "t"]).env("BATON_DATABASE_URL", &url).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains(&format!("127.0.0.1:{port}")), "names the host: {err}");
        assert!(err.to_lowercase().contains("refused"), "names the cause: {err}");
        assert!(!p.root().join(".baton/tasks/t").exists(), "nothing half-written");
        let out = p.baton(&["ls"]).env("BATON_DATABASE_URL", "postgres://baton@no-such-host.invalid/baton").output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains("no-such-host.invalid"), "{err}");
        let out = p.baton(&["ls"]).env("BATON_DATABASE_URL", "mysql://x@y/z").output().unwrap();
        assert_eq!(out.status.code(), Some(2), "not a PostgreSQL URL is bad input");
        let out = p.baton(&["ls"]).env("BATON_DATABASE_URL", "postgres://x:secret@db:99999/z").output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "a malformed PostgreSQL URL is bad input: {err}");
        assert!(!err.contains("secret"), "passwords never reach messages: {err}");
        assert_eq!(p.run(&["ls", "--json"]).1, before, "the real store is untouched");
    }
}

/// Two machines (separate clones, own host names) share one PostgreSQL and
/// one bare remote. The worker of the first is killed mid-phase with its
/// phase; the second claims the task after the lease expires, fetches the
/// branch and completes it. Every phase has exactly one PASS.
#[test]
fn a_worker_killed_mid_phase_is_replaced_by_one_on_another_machine() {
    baton_testkit::with_backend(Backend::Postgres, || {
        let remote = bare_remote();
        let wf = r#"name = "w"
[[phase]]
id = "a"
run = "echo from-machine-a > a.txt"
[[phase]]
id = "b"
needs = ["a"]
run = "if [ -n \"$HOLD\" ]; then sleep 60; fi; cat a.txt > b.txt; echo b-done"
[[phase]]
id = "c"
needs = ["b"]
run = "test -s b.txt && echo c-done"
"#;
        let a = project_with_remote(remote.path(), "2s", wf);
        let b = clone_of(&a, remote.path());
        let (code, _, err) = a.run(&["run", "w", "failover", "--queue", "--id", "t"]);
        assert_eq!(code, 0, "{err}");
        let mut wa = worker(&a, "machine-a", &[("HOLD", "1")], &[]);
        let pid = wait_for("phase b running on machine a", || {
            let doc = a.state("t");
            (doc["current_phase"]["id"] == "b" && doc["status"] == "RUNNING")
                .then_some(())
                .and_then(|_| {
                    a.journal("t")
                        .iter()
                        .rev()
                        .find(|e| e["kind"] == "phase_process" && e["phase"] == "b")
                        .and_then(|e| e["process"]["pid"].as_u64())
                })
        });
        // The machine dies: its worker and the phase it ran.
        kill_group(wa.id() as i32);
        kill_group(pid as i32);
        let _ = wa.wait();
        let out = worker(&b, "machine-b", &[], &["--until-idle"])
            .wait_with_output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        assert_eq!(status(&b, "t"), "COMPLETE", "{err}");
        assert_eq!(
            b.passes("t"),
            BTreeMap::from([("a".into(), 1), ("b".into(), 1), ("c".into(), 1)])
        );
        assert_gapless(&b, "t");
        let claims: Vec<String> = b
            .journal("t")
            .iter()
            .filter(|e| e["kind"] == "claimed")
            .map(|e| e["owner"].as_str().unwrap().to_string())
            .collect();
        assert!(
            claims[0].ends_with("on machine-a") && claims.last().unwrap().ends_with("on machine-b"),
            "{claims:?}"
        );
        // Machine b continued from machine a's phase a: its file is there.
        let file = remote_git(remote.path(), &["show", "baton/t:b.txt"]);
        assert_eq!(file, "from-machine-a\n");
    });
}

/// 8 workers, 200 tasks of short command phases: every task completes
/// exactly once, no phase ever runs twice at the same time, and every
/// journal is gapless.
#[test]
fn eight_workers_run_two_hundred_tasks_exactly_once() {
    baton_testkit::with_backend(Backend::Postgres, || {
        let p = TestProject::new();
        let trace = p
            .root()
            .join("../trace-".to_string() + &std::process::id().to_string());
        let trace = trace.to_str().unwrap().to_string();
        p.workflow(
            "w",
            r#"name = "w"
[[phase]]
id = "a"
run = "echo \"start $BATON_TASK_ID a\" >> \"$TRACE\"; echo ok > a.txt; echo \"end $BATON_TASK_ID a\" >> \"$TRACE\""
[[phase]]
id = "b"
needs = ["a"]
run = "echo \"start $BATON_TASK_ID b\" >> \"$TRACE\"; cat a.txt; echo \"end $BATON_TASK_ID b\" >> \"$TRACE\""
"#,
        );
        p.git(&["add", "-A"]);
        p.git(&["commit", "-qm", "workflow"]);
        let n = 200;
        for i in 0..n {
            let (code, _, err) = p.run(&["run", "w", "t", "--queue", "--id", &format!("t{i:03}")]);
            assert_eq!(code, 0, "{err}");
        }
        let workers: Vec<Child> = (0..8)
            .map(|i| worker(&p, "one-machine", &[("TRACE", &trace)], &["--until-idle"]).tap(i))
            .collect();
        for w in workers {
            let out = w.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let ls: Value = serde_json::from_str(&p.run(&["ls", "--all", "--json"]).1).unwrap();
        let rows = ls.as_array().unwrap();
        assert_eq!(rows.len(), n);
        assert!(rows.iter().all(|t| t["status"] == "COMPLETE"), "{rows:?}");
        // The trace: each (task, phase) started and ended exactly once, and
        // never started again before it ended.
        let text = fs_err::read_to_string(&trace).unwrap();
        let mut open: BTreeSet<String> = BTreeSet::new();
        let mut done: BTreeMap<String, usize> = BTreeMap::new();
        for line in text.lines() {
            let (what, key) = line.split_once(' ').unwrap();
            match what {
                "start" => assert!(open.insert(key.to_string()), "{key} started twice at once"),
                "end" => {
                    assert!(open.remove(key), "{key} ended without start");
                    *done.entry(key.to_string()).or_default() += 1;
                }
                _ => panic!("{line}"),
            }
        }
        assert_eq!(done.len(), 2 * n);
        assert!(done.values().all(|&c| c == 1), "a phase ran twice");
        for i in (0..n).step_by(37) {
            let id = format!("t{i:03}");
            assert_eq!(
                p.passes(&id),
                BTreeMap::from([("a".into(), 1), ("b".into(), 1)])
            );
            assert_gapless(&p, &id);
        }
        let _ = std::fs::remove_file(&trace);
    });
}

trait Tap {
    fn tap(self, i: usize) -> Self;
}
impl Tap for Child {
    /// Staggers worker start-up a little, as on real machines.
    fn tap(self, i: usize) -> Self {
        std::thread::sleep(Duration::from_millis(10 * i as u64));
        self
    }
}

/// PostgreSQL restarted in the middle of a run: workers reconnect, nothing
/// completed is lost, the phases in flight finish (or run again), and every
/// task completes with exactly one PASS per phase.
#[test]
fn workers_ride_out_a_postgresql_restart() {
    let cluster = PgCluster::start();
    let mut p = TestProject::new();
    p.database_url = Some(cluster.create_database());
    p.workflow(
        "w",
        r#"name = "w"
[[phase]]
id = "a"
run = "sleep 0.3; echo a"
[[phase]]
id = "b"
needs = ["a"]
run = "sleep 0.3; echo b"
"#,
    );
    p.git(&["add", "-A"]);
    p.git(&["commit", "-qm", "workflow"]);
    let n = 16;
    for i in 0..n {
        let (code, _, err) = p.run(&["run", "w", "t", "--queue", "--id", &format!("r{i:02}")]);
        assert_eq!(code, 0, "{err}");
    }
    let workers: Vec<Child> = (0..2)
        .map(|_| worker(&p, "one-machine", &[], &["--until-idle", "-n", "2"]))
        .collect();
    wait_for("a few tasks complete", || {
        let ls: Value = serde_json::from_str(&p.run(&["ls", "--all", "--json"]).1).ok()?;
        (ls.as_array()?
            .iter()
            .filter(|t| t["status"] == "COMPLETE")
            .count()
            >= 2)
            .then_some(())
    });
    cluster.restart_after(Duration::from_secs(3));
    for w in workers {
        let out = w.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for i in 0..n {
        let id = format!("r{i:02}");
        assert_eq!(status(&p, &id), "COMPLETE");
        assert_eq!(
            p.passes(&id),
            BTreeMap::from([("a".into(), 1), ("b".into(), 1)]),
            "{id}"
        );
        assert_gapless(&p, &id);
    }
    drop(cluster);
}

/// `baton store copy` moves a project's whole history from SQLite to
/// PostgreSQL and back; every view (ls, show, log) is identical, a second
/// copy is a no-op, and a target holding a different task is refused.
#[test]
fn store_copy_moves_history_to_postgresql_and_back() {
    let p = TestProject::new();
    p.workflow("w", TWO_PHASES);
    p.workflow(
        "f",
        "name = \"f\"\n[[phase]]\nid = \"x\"\nrun = \"echo nope >&2; exit 3\"\n",
    );
    // With a repository label: a progress record too.
    assert_eq!(
        p.run(&[
            "run",
            "w",
            "one",
            "--id",
            "one",
            "--label",
            "repository=acme/app"
        ])
        .0,
        0
    );
    assert_eq!(p.run(&["run", "w", "two", "--id", "two"]).0, 0);
    // A team, with a message acknowledged.
    for args in [
        vec!["team", "create", "crew", "--teammate", "ana:engineer"],
        vec![
            "team", "msg", "send", "crew", "--to", "ana", "--id", "m1", "hello",
        ],
        vec!["team", "msg", "ack", "crew", "1", "--as", "ana"],
    ] {
        let (code, _, err) = p.run(&args);
        assert_eq!(code, 0, "{err}");
    }
    // A webhook delivery, so a redelivery is still known after the move.
    let payload = baton_testkit::github_fixture("pull_request/opened.payload.json");
    let (code, _, err) = p.run(&[
        "deliver",
        "pull_request",
        payload.to_str().unwrap(),
        "--delivery",
        "d-1",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(p.run(&["run", "f", "bad", "--id", "bad"]).0, 1);
    // An agent instance, its first turn done, and a second ended.
    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    text.push_str("\n[instances]\nworktree_base = \".wt\"\n\n[agents.idle]\ncommand = [\"sh\", \"-c\", \"echo idle\"]\n");
    fs_err::write(&cfg, text).unwrap();
    fs_err::write(p.root().join(".git/info/exclude"), ".wt/\n").unwrap();
    for id in ["a1", "a2"] {
        let (code, _, err) = p.run(&["agent", "spawn", "x", "--id", id, "--agent", "idle"]);
        assert_eq!(code, 0, "{err}");
        wait_for("the agent's turn", || {
            let (_, out, _) = p.run(&["agent", "show", id, "--json"]);
            let v: Value = serde_json::from_str(&out).ok()?;
            (v["turn"]["status"] == "COMPLETE").then_some(())
        });
    }
    assert_eq!(p.run(&["agent", "kill", "a2"]).0, 0);
    // What people and agents add: an agent's note and its question,
    // answered, in the inbox; a person's comment on a task's work; a
    // linked task waiting and another cancelled.
    let root = p.root().display().to_string();
    let report = baton_testkit::mcp::run(
        baton_testkit::mcp::McpClient::PythonLegacy,
        &baton_testkit::baton_bin(),
        p.root(),
        &[("BATON_PROJECT", &root)],
        &serde_json::json!([
            {"tool": "notify", "args": {"message": "moving house"}},
            {"tool": "request_decision", "args": {"question": "Which store?", "options": ["sqlite", "postgres"], "wait_seconds": 1}},
        ]),
    );
    let (_, out, _) = p.run(&["inbox", "--json"]);
    let asked: Value = serde_json::from_str(&out).unwrap();
    let decision = asked
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["kind"] == "decision")
        .unwrap_or_else(|| panic!("{asked} {report}"))["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        p.run(&["inbox", "answer", &decision, "postgres", "--by", "ana"])
            .0,
        0
    );
    {
        let server = baton_testkit::serve::Server::start(&p, &[]);
        let post = |path: &str, body: Value| {
            let mut r = baton_testkit::serve::http()
                .post(&format!("{}{path}", server.url))
                .send_json(body)
                .unwrap();
            assert!(
                r.status().is_success(),
                "{path}: {}",
                r.body_mut().read_to_string().unwrap()
            );
        };
        post(
            "/api/v1/tasks/one/comments",
            serde_json::json!({"path": "a.txt", "line": 2, "body": "keep it short", "by": "ana"}),
        );
        post(
            "/api/v1/tasks",
            serde_json::json!({"workflow": "w", "id": "later", "needs": ["bad"]}),
        );
        post(
            "/api/v1/tasks",
            serde_json::json!({"workflow": "w", "id": "never", "needs": ["bad"]}),
        );
        post(
            "/api/v1/links/never/cancel",
            serde_json::json!({"by": "ana"}),
        );
        assert_eq!(server.stop().code(), Some(0));
    }
    let views = |url: Option<&str>| -> Vec<String> {
        let mut out = Vec::new();
        for args in [
            vec!["ls", "--all", "--json"],
            vec!["show", "one", "--json"],
            vec!["show", "bad", "--json"],
            vec!["log", "two", "--json"],
            vec!["agent", "ls", "--all", "--json"],
            vec!["agent", "log", "a1", "--json"],
            vec!["progress", "--json"],
            vec!["deliveries", "--json"],
            vec!["team", "msg", "ls", "crew", "--after", "0", "--json"],
            vec!["inbox", "--all", "--json"],
        ] {
            let mut c = p.baton(&args);
            if let Some(u) = url {
                c.env("BATON_DATABASE_URL", u);
            }
            let o = c.output().unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            out.push(String::from_utf8_lossy(&o.stdout).into_owned());
        }
        out
    };
    let before = views(None);
    let url = pg::shared().create_database();
    let (code, out, err) = p.run(&["store", "copy", "--to", &url, "--json"]);
    assert_eq!(code, 0, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["tasks"], 5, "three tasks and the agents' two turns");
    assert_eq!(report["instances"], 2);
    assert_eq!(report["instance_events"], 7);
    assert_eq!(report["already_there"], 0);
    assert_eq!(report["deliveries"], 1, "{report}");
    assert_eq!(report["teams"], 1, "{report}");
    assert!(report["progress"].as_u64() >= Some(1), "{report}");
    assert_eq!(
        (
            &report["inbox_items"],
            &report["comments"],
            &report["links"]
        ),
        (
            &serde_json::json!(2),
            &serde_json::json!(1),
            &serde_json::json!(2)
        ),
        "{report}"
    );
    assert_eq!(
        views(Some(&url)),
        before,
        "PostgreSQL shows the same history"
    );
    // Again: nothing to do, nothing doubled.
    let (code, out, _) = p.run(&["store", "copy", "--to", &url, "--json"]);
    assert_eq!(code, 0);
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap()["already_there"],
        5
    );
    assert_eq!(views(Some(&url)), before);
    // And back, from PostgreSQL into a new SQLite file.
    let back = p.root().join("back.db");
    let out = p
        .baton(&["store", "copy", "--to", back.to_str().unwrap(), "--json"])
        .env("BATON_DATABASE_URL", &url)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    fs_err::rename(&back, p.root().join(".baton/baton.db")).unwrap();
    for ext in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(p.root().join(format!(".baton/baton.db{ext}")));
    }
    assert_eq!(views(None), before, "the round trip lost nothing");
    // The comment, where it is, and the links, as they stood.
    let server = baton_testkit::serve::Server::start(&p, &[]);
    let get = |path: &str| -> Value {
        baton_testkit::serve::http()
            .get(&format!("{}{path}", server.url))
            .call()
            .unwrap()
            .body_mut()
            .read_json()
            .unwrap()
    };
    let comments = get("/api/v1/tasks/one/comments");
    assert_eq!(
        (
            comments[0]["body"].as_str(),
            comments[0]["line"].as_u64(),
            comments.as_array().unwrap().len()
        ),
        (Some("keep it short"), Some(2), 1),
        "{comments}"
    );
    let links = get("/api/v1/links");
    let outcome = |id: &str| {
        links
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["id"] == id)
            .unwrap_or_else(|| panic!("{links}"))["started"]["outcome"]
            .clone()
    };
    assert_eq!(outcome("later"), Value::Null, "{links}");
    assert_eq!(outcome("never"), "cancelled by ana", "{links}");
    assert_eq!(server.stop().code(), Some(0));
    // A target that holds a different task of the same id is refused.
    let other = TestProject::new();
    other.workflow("w", TWO_PHASES);
    let clash = pg::shared().create_database();
    let o = other
        .baton(&["run", "w", "other", "--id", "two"])
        .env("BATON_DATABASE_URL", &clash)
        .output()
        .unwrap();
    assert!(o.status.success());
    let (code, _, err) = p.run(&["store", "copy", "--to", &clash]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("different task two"), "{err}");
}

/// A worker that was paused past its lease (SIGSTOP) and wakes up after
/// another machine completed its task never publishes over it: its push is
/// refused by the lease check, the remote keeps the new runner's work, and
/// the journal keeps one PASS per phase.
#[test]
fn a_runner_that_lost_its_lease_never_overwrites_the_branch() {
    baton_testkit::with_backend(Backend::Postgres, || {
        let remote = bare_remote();
        let wf = r#"name = "w"
[[phase]]
id = "a"
run = "if [ -n \"$HOLD\" ]; then sleep 4; fi; echo \"by-$BATON_HOST\" > a.txt"
"#;
        let a = project_with_remote(remote.path(), "2s", wf);
        let b = clone_of(&a, remote.path());
        assert_eq!(a.run(&["run", "w", "z", "--queue", "--id", "z"]).0, 0);
        let wa = worker(&a, "machine-a", &[("HOLD", "1")], &["--until-idle"]);
        wait_for("phase a running on machine a", || {
            (a.state("z")["current_phase"]["status"] == "IN_PROGRESS").then_some(())
        });
        let stopped = nix::unistd::Pid::from_raw(wa.id() as i32);
        nix::sys::signal::kill(stopped, nix::sys::signal::SIGSTOP).unwrap();
        let out = worker(&b, "machine-b", &[], &["--until-idle"])
            .wait_with_output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(status(&b, "z"), "COMPLETE");
        nix::sys::signal::kill(stopped, nix::sys::signal::SIGCONT).unwrap();
        let out = wa.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        // Its heartbeat or its next journal write finds out first.
        assert!(
            err.contains("lost the lease")
                || err.contains("was released while this process ran it"),
            "{err}"
        );
        assert_eq!(
            remote_git(remote.path(), &["show", "baton/z:a.txt"]),
            "by-machine-b\n"
        );
        assert_eq!(b.passes("z"), BTreeMap::from([("a".into(), 1)]));
        assert_gapless(&b, "z");
    });
}

on_both_backends! {
    /// A worker dies mid-phase on this machine, its phase process still
    /// writing into the worktree. The next worker here takes the task at
    /// once (its runner is provably dead: no waiting for the 10-minute
    /// lease), kills that orphan before it sets the worktree up, saves what
    /// the worktree held under refs/baton-saved/ (never deletes it), and
    /// re-runs the phase clean.
    fn orphans_die_and_worktree_leftovers_are_saved_before_a_rerun() {
        let remote = bare_remote();
        let wf = r#"name = "w"
[[phase]]
id = "a"
run = "if [ -n \"$HOLD\" ]; then while true; do date >> orphan.txt; sleep 0.1; done; fi; echo clean > a.txt"
"#;
        let p = project_with_remote(remote.path(), "10m", wf);
        assert_eq!(p.run(&["run", "w", "o", "--queue", "--id", "o"]).0, 0);
        // Its watchdog is gone too (as after `kill -9` of the whole session).
        let mut w1 = worker(&p, "this-machine", &[("HOLD", "1"), ("BATON_TEST_NO_WATCHDOG", "1")], &[]);
        let wt = p.root().join(".baton/worktrees/o");
        wait_for("the phase writes", || wt.join("orphan.txt").exists().then_some(()));
        let orphan = p
            .journal("o")
            .iter()
            .find(|e| e["kind"] == "phase_process")
            .and_then(|e| e["process"]["pid"].as_u64())
            .unwrap() as u32;
        // Only the worker dies; its phase goes on writing.
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(w1.id() as i32), nix::sys::signal::SIGKILL).unwrap();
        let _ = w1.wait();
        fs_err::write(wt.join("user-notes.txt"), "mine\n").unwrap();
        let mut w2 = worker(&p, "this-machine", &[], &["--until-idle"]);
        let exit = baton_testkit::wait_child(&mut w2, "the second worker");
        let mut err = String::new();
        std::io::Read::read_to_string(&mut w2.stderr.take().unwrap(), &mut err).unwrap();
        assert!(exit.success(), "{err}");
        assert!(err.contains("killed the orphaned process group"), "{err}");
        assert!(baton_testkit::process_gone(orphan), "the orphan was killed");
        assert_eq!(status(&p, "o"), "COMPLETE");
        assert_eq!(p.passes("o"), BTreeMap::from([("a".into(), 1)]));
        let files = remote_git(remote.path(), &["ls-tree", "--name-only", "baton/o"]);
        assert!(files.contains("a.txt") && !files.contains("orphan.txt") && !files.contains("user-notes.txt"), "{files}");
        let saved = p.git(&["for-each-ref", "--format=%(refname)", "refs/baton-saved/o/"]);
        let saved = saved.lines().next().unwrap_or_else(|| panic!("nothing saved: {err}"));
        assert_eq!(p.git(&["show", &format!("{saved}:user-notes.txt")]), "mine\n");
        assert!(!wt.exists(), "the worktree of a complete task is removed");
    }

    /// A queued task that failed goes back to the workers with
    /// `resume --queue`, continuing at the failed phase; tasks that were not
    /// queued, or are complete, are refused.
    fn a_failed_queued_task_is_handed_back_to_the_workers() {
        let p = TestProject::new();
        p.workflow(
            "w",
            r#"name = "w"
[[phase]]
id = "a"
run = "echo a"
[[phase]]
id = "b"
needs = ["a"]
run = "test -n \"$FIXED\" || { echo 'not fixed yet' >&2; exit 3; }"
"#,
        );
        p.git(&["add", "-A"]);
        p.git(&["commit", "-qm", "workflow"]);
        assert_eq!(p.run(&["run", "w", "x", "--queue", "--id", "f"]).0, 0);
        let out = p.baton(&["worker", "--until-idle"]).output().unwrap();
        assert!(out.status.success());
        assert_eq!(status(&p, "f"), "FAILED");
        assert!(p.run(&["ls"]).1.contains("yes: baton resume --queue"), "ls says how to hand it back");
        let (code, _, err) = p.run(&["resume", "f", "--queue"]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(status(&p, "f"), "QUEUED");
        let out = p.baton(&["worker", "--until-idle"]).env("FIXED", "1").output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(status(&p, "f"), "COMPLETE");
        assert_eq!(p.passes("f"), BTreeMap::from([("a".into(), 1), ("b".into(), 1)]));
        let resumed: Vec<String> = p
            .journal("f")
            .iter()
            .filter(|e| e["kind"] == "task_resumed")
            .map(|e| e["from"].as_str().unwrap_or("?").to_string())
            .collect();
        assert_eq!(resumed, ["FAILED"], "handed back after a failure, never called a crash");
        let (code, _, err) = p.run(&["resume", "f", "--queue"]);
        assert_eq!(code, 2, "a complete task: {err}");
        assert_eq!(p.run(&["run", "w", "y", "--id", "fg"]).0, 1);
        let (code, _, err) = p.run(&["resume", "fg", "--queue"]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("was not queued"), "{err}");
    }

    /// Issue 34, queued tasks finished by hand: `resume` of a queued task
    /// leaves no worktree (it kept `.baton/worktrees/<id>` and nothing
    /// said so); `doctor` says and `--fix` removes one an ended task left;
    /// `resume --queue --upgrade` hands it back on the edited workflow (it
    /// was refused); and `fork` of it is queued at its checkpoint (it was
    /// refused with a hint to check its branch out in the project folder).
    fn queued_tasks_finished_by_hand_leave_nothing_and_fork_and_upgrade() {
        let p = TestProject::new();
        p.workflow("w", TWO_PHASES);
        p.git(&["add", "-A"]);
        p.git(&["commit", "-qm", "workflow"]);
        let wt = |id: &str| p.root().join(format!(".baton/worktrees/{id}"));
        // Finished by hand: COMPLETE, its work on its branch, no worktree.
        assert_eq!(p.run(&["run", "w", "x", "--queue", "--id", "byhand"]).0, 0);
        let (code, _, err) = p.run(&["resume", "byhand"]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(status(&p, "byhand"), "COMPLETE");
        assert!(!wt("byhand").exists(), "the worktree of a complete task is removed");
        assert!(p.git(&["show", "baton/byhand:b.txt"]).contains("from-a"));
        // A worktree an ended task left is said, and removed with --fix.
        assert_eq!(p.run(&["run", "w", "x", "--queue", "--id", "left"]).0, 0);
        let out = p.baton(&["resume", "left"]).env("BATON_TEST_CRASH_AT", "after-pass:b").output().unwrap();
        assert_eq!(out.status.code(), None, "killed after its last pass");
        assert!(wt("left").exists());
        assert_eq!(p.run(&["cancel", "left"]).0, 0);
        let (code, out, _) = p.run(&["doctor"]);
        assert_eq!(code, 1, "{out}");
        assert!(out.contains("worktrees/left is left over: task left is CANCELLED"), "{out}");
        let (code, out, err) = p.run(&["doctor", "--fix"]);
        assert_eq!(code, 0, "{out}{err}");
        assert!(out.contains("removed the worktree"), "{out}");
        assert!(!wt("left").exists());

        // resume --queue --upgrade: the edited workflow, run by a worker.
        assert_eq!(p.run(&["run", "w", "x", "--queue", "--id", "up"]).0, 0);
        p.workflow("w", &format!("{TWO_PHASES}[[phase]]\nid = \"c\"\nneeds = [\"b\"]\nrun = \"echo c-added > c.txt\"\n"));
        let (code, _, err) = p.run(&["resume", "up", "--queue", "--upgrade"]);
        assert_eq!(code, 0, "{err}");
        assert!(err.contains("adopted the edited workflow: added c"), "{err}");
        assert_eq!(status(&p, "up"), "QUEUED");
        let (code, _, err) = p.run(&["worker", "--until-idle"]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(status(&p, "up"), "COMPLETE");
        assert_eq!(p.passes("up").get("c"), Some(&1));

        // fork of a task that ran queued: queued at b's checkpoint.
        let (code, out, err) = p.run(&["fork", "byhand", "--from", "b", "--id", "byhand-2"]);
        assert_eq!(code, 0, "{out}{err}");
        assert_eq!(status(&p, "byhand-2"), "QUEUED");
        let (code, _, err) = p.run(&["worker", "--until-idle"]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(status(&p, "byhand-2"), "COMPLETE");
        // a is carried over from byhand (not run again), b runs once.
        assert_eq!(p.passes("byhand-2"), BTreeMap::from([("b".into(), 1)]));
        let done: Vec<String> = p.state("byhand-2")["completed_phases"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap().to_string()).collect();
        assert_eq!(done, ["a", "b"]);
        assert!(p.git(&["show", "baton/byhand-2:b.txt"]).contains("from-a"));
    }

    /// A queued task that reaches a durable timer is released; when the
    /// timer is due, a worker picks it up and goes on.
    fn workers_go_on_when_a_queued_task_timer_is_due() {
        let p = TestProject::new();
        p.workflow(
            "w",
            r#"name = "w"
[[phase]]
id = "a"
run = "echo a"
[[phase]]
id = "t"
needs = ["a"]
wait = { duration = "2s" }
[[phase]]
id = "b"
needs = ["t"]
run = "echo b"
"#,
        );
        p.git(&["add", "-A"]);
        p.git(&["commit", "-qm", "workflow"]);
        assert_eq!(p.run(&["run", "w", "x", "--queue", "--id", "timer"]).0, 0);
        let mut w = worker(&p, "this-machine", &[], &["-n", "2"]);
        wait_for("the timer to pass and the task to complete", || {
            (status(&p, "timer") == "COMPLETE").then_some(())
        });
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(w.id() as i32), nix::sys::signal::SIGTERM).unwrap();
        assert!(baton_testkit::wait_child(&mut w, "the worker").success());
        assert_eq!(p.passes("timer"), BTreeMap::from([("a".into(), 1), ("b".into(), 1), ("t".into(), 1)]));
        let kinds: Vec<String> = p.journal("timer").iter().map(|e| e["kind"].as_str().unwrap().to_string()).collect();
        assert!(kinds.contains(&"phase_waiting".to_string()), "{kinds:?}");
    }

    /// `rm` of a queued task keeps its branch (never deletes commits), and
    /// a new task never reuses that name.
    fn removed_queued_tasks_keep_their_branch_and_name() {
        let p = TestProject::new();
        p.workflow("w", TWO_PHASES);
        p.git(&["add", "-A"]);
        p.git(&["commit", "-qm", "workflow"]);
        let (code, first, err) = p.run(&["run", "w", "same words", "--queue"]);
        assert_eq!(code, 0, "{err}");
        let first = first.trim().to_string();
        assert_eq!(p.run(&["rm", &first]).0, 0);
        assert!(p.git(&["branch", "--list", &format!("baton/{first}")]).contains(&first), "the branch stays");
        let (code, second, err) = p.run(&["run", "w", "same words", "--queue"]);
        assert_eq!(code, 0, "{err}");
        assert_ne!(second.trim(), first, "a new name, not the removed task's");
    }

    /// A worker killed with SIGKILL takes its running phases with it (its
    /// watchdog kills their process groups), so no phase of a dead worker
    /// runs on next to its re-run on another machine.
    fn a_killed_worker_takes_its_phases_with_it() {
        let p = TestProject::new();
        p.workflow(
            "w",
            "name = \"w\"\n[[phase]]\nid = \"a\"\nrun = \"while true; do sleep 0.1; done\"\n",
        );
        p.git(&["add", "-A"]);
        p.git(&["commit", "-qm", "workflow"]);
        assert_eq!(p.run(&["run", "w", "x", "--queue", "--id", "k"]).0, 0);
        let mut w = worker(&p, "this-machine", &[], &[]);
        let pid = wait_for("the phase process", || {
            p.journal("k")
                .iter()
                .find(|e| e["kind"] == "phase_process")
                .and_then(|e| e["process"]["pid"].as_u64())
        }) as u32;
        assert!(!baton_testkit::process_gone(pid));
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(w.id() as i32), nix::sys::signal::SIGKILL).unwrap();
        let _ = w.wait();
        wait_for("the watchdog to kill the phase", || baton_testkit::process_gone(pid).then_some(()));
    }

    /// SIGTERM (a pod's eviction) while a phase runs: the worker claims
    /// nothing more, lets the phase pass, releases the task before its
    /// next phase, and exits 0; the next worker runs the rest, once.
    fn sigterm_lets_the_running_phase_pass_and_the_worker_exits_0() {
        let p = TestProject::new();
        let marker = p.root().join("phase-a-ran");
        p.workflow(
            "w",
            &format!("name = \"w\"\n[[phase]]\nid = \"a\"\nrun = \"echo run >> {m}; sleep 2; echo a-done\"\n[[phase]]\nid = \"b\"\nrun = \"echo b-done\"\n", m = marker.display()),
        );
        p.git(&["add", "-A"]);
        p.git(&["commit", "-qm", "workflow"]);
        for id in ["d1", "d2"] {
            assert_eq!(p.run(&["run", "w", "x", "--queue", "--id", id]).0, 0);
        }
        let w = worker(&p, "this-machine", &[], &["--drain-timeout", "60s"]);
        wait_for("phase a to run", || marker.exists().then_some(()));
        let t = std::time::Instant::now();
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(w.id() as i32), nix::sys::signal::SIGTERM).unwrap();
        let out = w.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
        assert!(err.contains("draining"), "{err}");
        let running = if p.journal("d1").iter().any(|e| e["kind"] == "phase_started") { "d1" } else { "d2" };
        let other = if running == "d1" { "d2" } else { "d1" };
        let kinds: Vec<String> = p.journal(running).iter().map(|e| e["kind"].as_str().unwrap().to_string()).collect();
        assert!(kinds.contains(&"phase_passed".to_string()), "phase a passed: {kinds:?}");
        assert!(!kinds.contains(&"phase_interrupted".to_string()), "{kinds:?}");
        assert_eq!(kinds.iter().filter(|k| *k == "phase_started").count(), 1, "b was not started: {kinds:?}");
        assert!(p.journal(other).iter().all(|e| e["kind"] != "phase_started"), "nothing more was claimed");
        assert_eq!(status(&p, running), "QUEUED", "released for another worker");
        // Its log says QUEUED as well (it said `active`), and doctor agrees.
        let (code, out, err) = p.run(&["doctor"]);
        assert_eq!(code, 0, "{out}{err}");
        // The next worker runs the rest, each phase once.
        let (code, _, err) = p.run(&["worker", "--until-idle"]);
        assert_eq!(code, 0, "{err}");
        for id in ["d1", "d2"] {
            assert_eq!(status(&p, id), "COMPLETE");
            let passed = p.journal(id).iter().filter(|e| e["kind"] == "phase_passed").count();
            assert_eq!(passed, 2, "{id}: each phase passed once");
            assert_gapless(&p, id);
        }
        assert_eq!(fs_err::read_to_string(&marker).unwrap().lines().count(), 2, "phase a ran once per task");
    }

    /// Issue 34: SIGTERM while the LAST phase runs. The phase passes and
    /// the task completes: before, it was "released between phases" and
    /// left QUEUED with nothing to run (a pod had to start only to mark it
    /// complete).
    fn a_drain_during_the_last_phase_completes_the_task() {
        let p = TestProject::new();
        let marker = p.root().join("ran");
        let go = p.root().join("go");
        p.workflow(
            "w",
            &format!("name = \"w\"\n[[phase]]\nid = \"only\"\nrun = \"echo run >> {m}; while [ ! -e {g} ]; do sleep 0.05; done; echo only-done\"\n", m = marker.display(), g = go.display()),
        );
        p.git(&["add", "-A"]);
        p.git(&["commit", "-qm", "workflow"]);
        assert_eq!(p.run(&["run", "w", "x", "--queue", "--id", "last1"]).0, 0);
        let w = worker(&p, "this-machine", &[], &["--drain-timeout", "30s"]);
        wait_for("the phase to run", || marker.exists().then_some(()));
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(w.id() as i32), nix::sys::signal::SIGTERM).unwrap();
        // The phase ends only once the worker was told to drain.
        fs_err::write(&go, "").unwrap();
        let out = w.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert_eq!(status(&p, "last1"), "COMPLETE", "{err}");
        let kinds: Vec<String> = p.journal("last1").iter().map(|e| e["kind"].as_str().unwrap().to_string()).collect();
        assert!(!kinds.iter().any(|k| k == "note"), "not released: {kinds:?}");
        assert_eq!(fs_err::read_to_string(&marker).unwrap().lines().count(), 1);
        let (code, out, _) = p.run(&["ls", "--json"]);
        assert_eq!(code, 0);
        assert!(!out.contains("QUEUED"), "{out}");
    }

    /// A phase that outlasts the drain timeout is interrupted and its task
    /// released; the worker still exits 0, and another worker finishes
    /// the task, its phase passing once.
    fn past_the_drain_timeout_the_phase_is_interrupted_and_another_worker_finishes() {
        let p = TestProject::new();
        let marker = p.root().join("slow-once");
        p.workflow(
            "w",
            &format!("name = \"w\"\n[[phase]]\nid = \"a\"\nrun = \"if [ -f {m} ]; then echo quick; else touch {m}; sleep 60; fi\"\n", m = marker.display()),
        );
        p.git(&["add", "-A"]);
        p.git(&["commit", "-qm", "workflow"]);
        assert_eq!(p.run(&["run", "w", "x", "--queue", "--id", "s1"]).0, 0);
        let w = worker(&p, "this-machine", &[], &["--drain-timeout", "1s"]);
        wait_for("the slow phase to run", || marker.exists().then_some(()));
        let t = std::time::Instant::now();
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(w.id() as i32), nix::sys::signal::SIGTERM).unwrap();
        let out = w.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert!(t.elapsed() < Duration::from_secs(20), "interrupted at the timeout: {:?}", t.elapsed());
        assert!(err.contains("drain timeout"), "{err}");
        assert!(p.journal("s1").iter().any(|e| e["kind"] == "phase_interrupted"));
        assert_eq!(status(&p, "s1"), "QUEUED");
        let (code, _, err) = p.run(&["worker", "--until-idle"]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(status(&p, "s1"), "COMPLETE");
        let passed = p.journal("s1").iter().filter(|e| e["kind"] == "phase_passed").count();
        assert_eq!(passed, 1);
        assert_gapless(&p, "s1");
    }

    /// `worker --once` claims one task, drives it to its end and exits as
    /// a Job understands it; with nothing to claim it exits 0 at once.
    fn worker_once_runs_one_task_and_exits_with_its_code() {
        let p = TestProject::new();
        p.workflow("w", TWO_PHASES);
        p.workflow("f", "name = \"f\"\n[[phase]]\nid = \"x\"\nrun = \"exit 3\"\nmax_attempts = 1\n");
        p.workflow("h", "name = \"h\"\n[[phase]]\nid = \"ask\"\nwait = { human = \"Go?\", options = [\"yes\"] }\n");
        p.git(&["add", "-A"]);
        p.git(&["commit", "-qm", "workflows"]);
        let t = std::time::Instant::now();
        let (code, _, err) = p.run(&["worker", "--once"]);
        assert_eq!(code, 0, "nothing to claim: {err}");
        assert!(err.contains("no queued task"), "{err}");
        assert!(t.elapsed() < Duration::from_secs(10), "at once: {:?}", t.elapsed());
        for (wf, id) in [("w", "o1"), ("w", "o2"), ("f", "o3"), ("h", "o4")] {
            assert_eq!(p.run(&["run", wf, "x", "--queue", "--id", id]).0, 0);
        }
        let (code, _, err) = p.run(&["worker", "--once"]);
        assert_eq!(code, 0, "{err}");
        let done: Vec<String> = ["o1", "o2", "o3", "o4"].iter().filter(|id| status(&p, id) != "QUEUED").map(|s| s.to_string()).collect();
        assert_eq!(done.len(), 1, "one task: {done:?}");
        assert_eq!(status(&p, &done[0]), "COMPLETE");
        let mut codes = Vec::new();
        for _ in 0..3 {
            let (code, _, err) = p.run(&["worker", "--once"]);
            codes.push((code, err));
        }
        let mut seen: Vec<i32> = codes.iter().map(|(c, _)| *c).collect();
        seen.sort();
        assert_eq!(seen, vec![0, 0, 1], "complete and waiting are a Job's success, failed is not: {codes:?}");
        for id in ["o1", "o2", "o3", "o4"] {
            assert_ne!(status(&p, id), "QUEUED");
        }
        let (code, _, _) = p.run(&["worker", "--once", "--until-idle"]);
        assert_eq!(code, 2, "--once runs one task; --until-idle many");
    }

    /// A queued task that cannot run here (its branch was deleted) does not
    /// block the others: the worker warns, rests it, and runs the rest.
    fn one_unrunnable_task_never_blocks_the_queue() {
        let p = TestProject::new();
        p.workflow("w", TWO_PHASES);
        p.git(&["add", "-A"]);
        p.git(&["commit", "-qm", "workflow"]);
        assert_eq!(p.run(&["run", "w", "x", "--queue", "--id", "broken"]).0, 0);
        assert_eq!(p.run(&["run", "w", "x", "--queue", "--id", "fine"]).0, 0);
        p.git(&["branch", "-D", "baton/broken"]);
        let out = p.baton(&["worker", "--until-idle"]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        assert!(err.contains("task broken cannot run here") && err.contains("left queued"), "{err}");
        assert_eq!(status(&p, "fine"), "COMPLETE");
        assert_eq!(status(&p, "broken"), "QUEUED");
    }
}
