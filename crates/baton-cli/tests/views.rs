//! One status, every view (issue 34): a task in each status `baton ls`
//! shows, and every view says the same of it: `ls`, `show`, the API, the
//! session log and its index (`session query --status`), `/metrics`,
//! `doctor`, the status line and the progress records. Before, a
//! cancelled task's log said `failed` (and `session learn` made a "what
//! went wrong" case of the cancel), and `doctor` called a task queued a
//! moment ago CRASHED.

use baton_testkit::serve::{Server, TOKEN, http};
use baton_testkit::{TestProject, on_both_backends, wait_child, wait_for};
use serde_json::Value;
use std::collections::BTreeMap;
use std::process::Stdio;

const WORKFLOWS: &[(&str, &str)] = &[
    (
        "held",
        "name = \"held\"\n[[phase]]\nid = \"work\"\nrun = \"touch started; while [ ! -e go ]; do sleep 0.05; done\"\n",
    ),
    (
        "ask",
        "name = \"ask\"\n[[phase]]\nid = \"q\"\nwait = { human = \"Go?\", options = [\"yes\"] }\n[[phase]]\nid = \"after\"\nrun = \"echo after\"\n",
    ),
    (
        "two",
        "name = \"two\"\n[[phase]]\nid = \"a\"\nrun = \"echo a\"\n[[phase]]\nid = \"b\"\nrun = \"echo b\"\n",
    ),
    (
        "fails",
        "name = \"fails\"\n[[phase]]\nid = \"x\"\nrun = \"exit 3\"\nmax_attempts = 1\n",
    ),
];

/// The word each view uses for a status, as their docs say.
fn log_word(status: &str) -> &'static str {
    match status {
        "RUNNING" => "active",
        "QUEUED" => "queued",
        "WAITING" => "paused",
        "CRASHED" => "crashed",
        "FAILED" => "failed",
        "COMPLETE" => "completed",
        "CANCELLED" => "cancelled",
        other => panic!("no status {other}"),
    }
}
fn progress_word(status: &str) -> &'static str {
    match status {
        "RUNNING" | "QUEUED" | "CRASHED" => "in-progress",
        "WAITING" => "suspended",
        "FAILED" => "failed",
        "COMPLETE" => "completed",
        "CANCELLED" => "cancelled",
        other => panic!("no status {other}"),
    }
}

fn run(p: &TestProject, args: &[&str], want: i32) {
    let (code, _, err) = p.run(args);
    assert_eq!(code, want, "baton {args:?}: {err}");
}

on_both_backends! {
    fn every_view_says_the_same_status() {
        let p = TestProject::new();
        // The server below leaves the crashed task CRASHED (no restarts).
        let cfg = p.root().join(".baton/config.toml");
        let text = fs_err::read_to_string(&cfg).unwrap();
        fs_err::write(&cfg, format!("{text}\n[supervisor]\nmax_restarts = 0\n")).unwrap();
        for (name, toml) in WORKFLOWS {
            p.workflow(name, toml);
        }
        p.git(&["add", "-A"]);
        p.git(&["commit", "-qm", "workflows"]);
        let repo = ["--label", "repository=acme/app"];
        // One task in each status.
        let mut running = p
            .baton(&[&["run", "held", "x", "--id", "t-running"][..], &repo].concat())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_for("the held phase to start", || p.root().join("started").exists().then_some(()));
        run(&p, &[&["run", "two", "x", "--id", "t-queued", "--queue"][..], &repo].concat(), 0);
        run(&p, &[&["run", "ask", "x", "--id", "t-waiting"][..], &repo].concat(), 4);
        let out = p
            .baton(&[&["run", "two", "x", "--id", "t-crashed"][..], &repo].concat())
            .env("BATON_TEST_CRASH_AT", "after-spawn:b")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), None, "killed at after-spawn:b");
        run(&p, &[&["run", "fails", "x", "--id", "t-failed"][..], &repo].concat(), 1);
        run(&p, &[&["run", "two", "x", "--id", "t-complete"][..], &repo].concat(), 0);
        run(&p, &[&["run", "ask", "x", "--id", "t-cancelled"][..], &repo].concat(), 4);
        run(&p, &["cancel", "t-cancelled"], 0);
        let want: BTreeMap<&str, &str> = [
            ("t-running", "RUNNING"),
            ("t-queued", "QUEUED"),
            ("t-waiting", "WAITING"),
            ("t-crashed", "CRASHED"),
            ("t-failed", "FAILED"),
            ("t-complete", "COMPLETE"),
            ("t-cancelled", "CANCELLED"),
        ]
        .into();

        // ls and show.
        let (_, out, _) = p.run(&["ls", "--all", "--json"]);
        let rows: Vec<Value> = serde_json::from_str(&out).unwrap();
        let listed: BTreeMap<String, String> = rows
            .iter()
            .map(|r| (r["id"].as_str().unwrap().into(), r["status"].as_str().unwrap().into()))
            .collect();
        for (id, status) in &want {
            assert_eq!(listed[*id], *status, "ls: {id}");
            assert_eq!(p.state(id)["status"], *status, "show: {id}");
        }

        // The session logs (rendered where stale by `session ls`), their
        // index, and `session query --status`.
        run(&p, &["session", "ls"], 0);
        for (id, status) in &want {
            let log = std::fs::read_to_string(p.root().join(format!(".baton/sessions/{id}.md")))
                .unwrap_or_else(|e| panic!("{id}: {e}"));
            let front = log.split("---").nth(1).unwrap();
            assert!(
                front.lines().any(|l| l.trim() == format!("status: {}", log_word(status))),
                "{id} is {status}: {front}"
            );
            let (code, out, err) = p.run(&["session", "query", "--status", log_word(status), "--json"]);
            assert_eq!(code, 0, "{err}");
            assert!(out.contains(&format!("\"{id}\"")), "query --status {}: {out}", log_word(status));
            for (other, other_status) in &want {
                if log_word(other_status) != log_word(status) {
                    assert!(!out.contains(&format!("\"{other}\"")), "{other} listed as {}: {out}", log_word(status));
                }
            }
        }
        // A cancel is not something that went wrong.
        let (code, out, err) = p.run(&["session", "learn", "t-cancelled", "--format", "chat", "-o", "-"]);
        assert!(code == 0 || code == 1, "{err}");
        assert!(!out.contains("cancelled"), "the cancel became a case: {out}");

        // The progress records: each task's stage record (written as a
        // task moves from stage to stage: a queued one has none yet).
        for (id, status) in want.iter().filter(|(_, s)| **s != "QUEUED") {
            let (code, out, err) = p.run(&["progress", "acme/app", "--task", id, "--json"]);
            assert_eq!(code, 0, "{id}: {err}");
            let rec: Value = serde_json::from_str(&out).unwrap();
            let rec = if rec.is_array() { rec[0].clone() } else { rec };
            assert_eq!(rec["status"], progress_word(status), "progress of {id}: {rec}");
        }

        // doctor: the crashed task alone is a problem; a queued one is not.
        let (code, out, err) = p.run(&["doctor"]);
        assert_eq!(code, 1, "{out}{err}");
        assert!(out.contains("task t-crashed is CRASHED"), "{out}");
        for id in want.keys().filter(|id| **id != "t-crashed") {
            assert!(!out.contains(&format!("task {id} is CRASHED")), "{out}");
        }

        // The status line and the registry list the running task alone.
        let (_, out, _) = p.run(&["status", "--json"]);
        let active: Value = serde_json::from_str(&out).unwrap();
        let ids: Vec<&str> = active["sessions"].as_array().unwrap().iter().map(|s| s["session_id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["t-running"], "{active}");
        assert_eq!(active["sessions"][0]["status"], "RUNNING");

        // The API and /metrics.
        let server = Server::start(&p, &[("BATON_SERVER_TOKEN", TOKEN)]);
        // Its supervisor looks at the crashed task once, gives up on it
        // (max_restarts = 0), journals that and lets it go: CRASHED again.
        wait_for("the supervisor to leave the crashed task", || {
            let seen = p.journal("t-crashed").iter().any(|e| e["kind"] == "restarts_exhausted");
            (seen && p.state("t-crashed")["status"] == "CRASHED").then_some(())
        });
        let get = |path: &str| -> String {
            http()
                .get(&format!("{}{path}", server.url))
                .header("Authorization", format!("Bearer {TOKEN}"))
                .call()
                .unwrap()
                .body_mut()
                .read_to_string()
                .unwrap()
        };
        let tasks: Value = serde_json::from_str(&get("/api/v1/tasks")).unwrap();
        for t in tasks.as_array().unwrap() {
            let id = t["id"].as_str().unwrap();
            assert_eq!(t["status"], want[id], "the API: {id}");
        }
        let metrics = get("/metrics");
        for status in ["RUNNING", "QUEUED", "WAITING", "CRASHED", "FAILED", "COMPLETE", "CANCELLED"] {
            let line = format!("baton_tasks{{status=\"{status}\"}} 1");
            assert!(metrics.lines().any(|l| l == line), "{line} in:\n{metrics}");
        }
        drop(server);
        std::fs::write(p.root().join("go"), "").unwrap();
        assert!(wait_child(&mut running, "the held run").success());
    }
}
