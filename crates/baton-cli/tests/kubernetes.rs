//! What a platform runs baton with: a worker's `/healthz`, `/readyz` and
//! `/metrics` (read by Prometheus' own Python parser and checked against
//! `baton ls`), `/readyz` while PostgreSQL is down and back, `baton
//! serve`'s `/metrics` behind its token, and `--log-format json`.

use baton_testkit::serve::{Server, TOKEN, http};
use baton_testkit::{PgCluster, TestProject, free_port, on_both_backends, wait_for};
use serde_json::Value;
use std::collections::BTreeMap;
use std::process::{Child, Stdio};

/// `GET url`: the status and the body (status 0: nothing answers yet).
fn get(url: &str, token: Option<&str>) -> (u16, String) {
    let agent = http();
    let mut req = agent.get(url);
    if let Some(t) = token {
        req = req.header("Authorization", &format!("Bearer {t}"));
    }
    match req.call() {
        Ok(mut r) => (
            r.status().as_u16(),
            r.body_mut().read_to_string().unwrap_or_default(),
        ),
        Err(e) => (0, e.to_string()),
    }
}

/// `/metrics` read by Prometheus' own parser (the Python client's
/// OpenMetrics parser, `OPS_PY`): each sample as `name{labels}` → value.
fn parse_metrics(text: &str) -> BTreeMap<String, f64> {
    let py = std::env::var("OPS_PY").expect(
        "OPS_PY is not set: run the tests with ./scripts/test, which installs prometheus-client",
    );
    let script = r#"
import json, sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
out = {}
for family in text_string_to_metric_families(sys.stdin.read()):
    for s in family.samples:
        labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
        out[s.name + ("{" + labels + "}" if labels else "")] = s.value
print(json.dumps(out))
"#;
    let mut child = std::process::Command::new(py)
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "Prometheus' parser refused /metrics: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The count `baton ls --all --json` gives each status.
fn ls_counts(p: &TestProject) -> BTreeMap<String, f64> {
    let ls: Value = serde_json::from_str(&p.run(&["ls", "--all", "--json"]).1).unwrap();
    let mut counts = BTreeMap::new();
    for t in ls.as_array().unwrap() {
        *counts
            .entry(t["status"].as_str().unwrap().to_string())
            .or_insert(0.0) += 1.0;
    }
    counts
}

fn listening_worker(p: &TestProject, port: u16, args: &[&str]) -> Child {
    let addr = format!("127.0.0.1:{port}");
    p.baton(&[&["worker", "--listen", addr.as_str()], args].concat())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

const TWO: &str = "name = \"w\"\n[[phase]]\nid = \"a\"\nrun = \"echo a\"\n[[phase]]\nid = \"b\"\nrun = \"echo b\"\n";

on_both_backends! {
    /// A worker with `--listen` says it is alive and ready, and its
    /// `/metrics` parse with Prometheus' own parser: the tasks by status
    /// are what `baton ls` says, and the phases it ran, its claims and
    /// the queue's depth are counted.
    fn a_workers_metrics_parse_and_match_baton_ls() {
        let p = TestProject::new();
        p.workflow("w", TWO);
        p.workflow("f", "name = \"f\"\n[[phase]]\nid = \"x\"\nrun = \"exit 3\"\nmax_attempts = 1\n");
        p.workflow("h", "name = \"h\"\n[[phase]]\nid = \"ask\"\nwait = { human = \"Go?\", options = [\"yes\"] }\n");
        p.git(&["add", "-A"]);
        p.git(&["commit", "-qm", "workflows"]);
        for (wf, id) in [("w", "m1"), ("w", "m2"), ("f", "m3")] {
            assert_eq!(p.run(&["run", wf, "x", "--queue", "--id", id]).0, 0);
        }
        assert_eq!(p.run(&["run", "h", "x", "--id", "m4"]).0, 4);
        let port = free_port();
        let base = format!("http://127.0.0.1:{port}");
        let mut w = listening_worker(&p, port, &[]);
        wait_for("the worker to run the queue", || {
            let c = ls_counts(&p);
            (c.get("COMPLETE") == Some(&2.0) && c.get("FAILED") == Some(&1.0)).then_some(())
        });
        assert_eq!(get(&format!("{base}/healthz"), None), (200, "ok\n".into()));
        let (status, body) = get(&format!("{base}/readyz"), None);
        assert_eq!(status, 200, "{body}");
        assert!(body.starts_with("ready"), "{body}");
        let (status, text) = get(&format!("{base}/metrics"), None);
        assert_eq!(status, 200);
        let m = parse_metrics(&text);
        let ls = ls_counts(&p);
        for s in ["RUNNING", "QUEUED", "WAITING", "CRASHED", "FAILED", "COMPLETE", "CANCELLED"] {
            assert_eq!(
                m.get(&format!("baton_tasks{{status=\"{s}\"}}")).copied(),
                Some(ls.get(s).copied().unwrap_or(0.0)),
                "{s}: {m:?} against baton ls {ls:?}"
            );
        }
        assert_eq!(m["baton_queue_depth"], 0.0, "{m:?}");
        assert_eq!(m["baton_claims_total"], 3.0, "{m:?}");
        assert!(m["baton_claim_duration_seconds_count"] >= 3.0, "{m:?}");
        assert_eq!(
            m[r#"baton_phase_duration_seconds_count{outcome="pass",phase="a",workflow="w"}"#],
            2.0,
            "{m:?}"
        );
        assert_eq!(
            m[r#"baton_phase_duration_seconds_count{outcome="failed",phase="x",workflow="f"}"#],
            1.0,
            "{m:?}"
        );
        assert_eq!(m["baton_phases_running"], 0.0);
        assert_eq!(m["baton_lease_renewals_failed_total"], 0.0);
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(w.id() as i32), nix::sys::signal::SIGTERM).unwrap();
        assert_eq!(w.wait().unwrap().code(), Some(0));
    }
}

/// `/readyz` fails while PostgreSQL is stopped, and recovers when it is
/// back; `/healthz` says the process lives throughout; a phase running
/// meanwhile passes once, its task completed once the server is back
/// (the store waits out a restart: its renewals were late, not failed).
#[test]
fn readyz_fails_while_postgresql_is_down_and_recovers() {
    let cluster = PgCluster::start();
    let mut p = TestProject::new();
    p.database_url = Some(cluster.create_database());
    p.workflow("w", TWO);
    let marker = p.root().join("slow-started");
    p.workflow(
        "slow",
        &format!(
            "name = \"slow\"\n[[phase]]\nid = \"a\"\nrun = \"touch {}; sleep 8\"\n",
            marker.display()
        ),
    );
    p.git(&["add", "-A"]);
    p.git(&["commit", "-qm", "workflows"]);
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let mut w = listening_worker(&p, port, &[]);
    wait_for("the worker to be ready", || {
        (get(&format!("{base}/readyz"), None).0 == 200).then_some(())
    });
    assert_eq!(
        p.run(&["run", "slow", "x", "--queue", "--id", "during"]).0,
        0
    );
    wait_for("the slow phase to run", || marker.exists().then_some(()));
    cluster.stop();
    let (status, _) = wait_for("/readyz to fail", || {
        let r = get(&format!("{base}/readyz"), None);
        (r.0 == 503).then_some(r)
    });
    assert_eq!(status, 503);
    assert_eq!(
        get(&format!("{base}/healthz"), None).0,
        200,
        "alive all the same"
    );
    assert_eq!(
        get(&format!("{base}/metrics"), None).0,
        503,
        "the store's figures cannot be read"
    );
    // The heartbeat renews every second: a few renewals wait.
    std::thread::sleep(std::time::Duration::from_secs(3));
    cluster.start_again();
    wait_for("/readyz to recover", || {
        (get(&format!("{base}/readyz"), None).0 == 200).then_some(())
    });
    let (_, text) = get(&format!("{base}/metrics"), None);
    let failed = parse_metrics(&text)["baton_lease_renewals_failed_total"];
    assert_eq!(
        failed, 0.0,
        "the store reconnects within its window: {text}"
    );
    wait_for("the slow task to complete", || {
        (p.state("during")["status"] == "COMPLETE").then_some(())
    });
    assert_eq!(
        p.journal("during")
            .iter()
            .filter(|e| e["kind"] == "phase_passed")
            .count(),
        1
    );
    // And the worker works again.
    assert_eq!(p.run(&["run", "w", "x", "--queue", "--id", "after"]).0, 0);
    wait_for("the task to run", || {
        (p.state("after")["status"] == "COMPLETE").then_some(())
    });
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(w.id() as i32),
        nix::sys::signal::SIGTERM,
    )
    .unwrap();
    assert_eq!(w.wait().unwrap().code(), Some(0));
}

/// Workers work through PgBouncer (Debian's, run for real) in session
/// mode, woken by LISTEN/NOTIFY through it; in transaction mode baton
/// refuses at start, saying why and what to do, and writes nothing.
#[test]
fn workers_work_through_pgbouncer_in_session_mode_and_refuse_transaction_mode() {
    use baton_testkit::pgbouncer::PgBouncer;
    let cluster = PgCluster::start();
    let direct = cluster.create_database();
    let db = direct.rsplit('/').next().unwrap().to_string();
    let session = PgBouncer::start(&cluster, "session");
    let mut p = TestProject::new();
    p.database_url = Some(session.url(&db));
    p.workflow("w", TWO);
    p.git(&["add", "-A"]);
    p.git(&["commit", "-qm", "workflows"]);
    for id in ["b1", "b2", "b3"] {
        let (code, _, err) = p.run(&["run", "w", "x", "--queue", "--id", id]);
        assert_eq!(code, 0, "{err}");
    }
    let (code, _, err) = p.run(&["worker", "--until-idle", "-n", "2"]);
    assert_eq!(code, 0, "{err}");
    // A waiting worker is woken through the pooler when work comes.
    let port = free_port();
    let mut w = listening_worker(&p, port, &[]);
    wait_for("the worker to be ready", || {
        (get(&format!("http://127.0.0.1:{port}/readyz"), None).0 == 200).then_some(())
    });
    let queued = std::time::Instant::now();
    assert_eq!(p.run(&["run", "w", "x", "--queue", "--id", "b4"]).0, 0);
    wait_for("the new task to run", || {
        (p.state("b4")["status"] == "COMPLETE").then_some(())
    });
    assert!(
        queued.elapsed() < std::time::Duration::from_secs(10),
        "woken by its NOTIFY, not its timeout: {:?}",
        queued.elapsed()
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(w.id() as i32),
        nix::sys::signal::SIGTERM,
    )
    .unwrap();
    assert_eq!(w.wait().unwrap().code(), Some(0));
    for id in ["b1", "b2", "b3", "b4"] {
        assert_eq!(p.state(id)["status"], "COMPLETE");
        assert_eq!(
            p.journal(id)
                .iter()
                .filter(|e| e["kind"] == "phase_passed")
                .count(),
            2,
            "{id}"
        );
    }

    let transaction = PgBouncer::start(&cluster, "transaction");
    p.database_url = Some(transaction.url(&db));
    for args in [
        vec!["worker", "--until-idle"],
        vec!["ls"],
        vec!["run", "w", "x", "--queue", "--id", "b5"],
    ] {
        let (code, _, err) = p.run(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains("pool_mode = transaction"), "{err}");
        assert!(
            err.contains("hint: give baton's database pool_mode = session"),
            "{err}"
        );
    }
    p.database_url = Some(direct);
    assert!(
        p.run(&["show", "b5", "--json"]).0 != 0,
        "nothing was written"
    );
}

/// A draining worker is not ready: Kubernetes stops sending it work while
/// its phase passes.
#[test]
fn a_draining_worker_is_not_ready() {
    let p = TestProject::new();
    let marker = p.root().join("started");
    p.workflow(
        "w",
        &format!(
            "name = \"w\"\n[[phase]]\nid = \"a\"\nrun = \"touch {}; sleep 3\"\n",
            marker.display()
        ),
    );
    p.git(&["add", "-A"]);
    p.git(&["commit", "-qm", "workflows"]);
    assert_eq!(p.run(&["run", "w", "x", "--queue", "--id", "d"]).0, 0);
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let mut w = listening_worker(&p, port, &[]);
    wait_for("the phase to start", || marker.exists().then_some(()));
    let (_, text) = get(&format!("{base}/metrics"), None);
    assert_eq!(parse_metrics(&text)["baton_phases_running"], 1.0, "{text}");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(w.id() as i32),
        nix::sys::signal::SIGTERM,
    )
    .unwrap();
    let (status, body) = wait_for("/readyz to say it drains", || {
        let r = get(&format!("{base}/readyz"), None);
        (r.0 == 503).then_some(r)
    });
    assert!(body.contains("draining"), "{status} {body}");
    assert_eq!(w.wait().unwrap().code(), Some(0));
    assert_eq!(p.state("d")["phases"][0]["status"], "PASS");
}

/// `baton serve` answers `/metrics` too, behind its token; the queue's
/// depth is the queued tasks nobody runs.
#[test]
fn serves_metrics_are_behind_its_token() {
    let p = TestProject::new();
    p.workflow("w", TWO);
    p.git(&["add", "-A"]);
    p.git(&["commit", "-qm", "workflows"]);
    assert_eq!(p.run(&["run", "w", "x", "--id", "s1"]).0, 0);
    for id in ["q1", "q2"] {
        assert_eq!(p.run(&["run", "w", "x", "--queue", "--id", id]).0, 0);
    }
    // A delivery no task waits for.
    let payload = baton_testkit::github_fixture("issues/opened.payload.json");
    let (code, _, err) = p.run(&[
        "deliver",
        "issues",
        payload.to_str().unwrap(),
        "--delivery",
        "d-1",
    ]);
    assert_eq!(code, 0, "{err}");
    let server = Server::start(&p, &[("BATON_SERVER_TOKEN", TOKEN)]);
    let url = format!("{}/metrics", server.url);
    assert_eq!(get(&url, None).0, 401);
    let (status, text) = get(&url, Some(TOKEN));
    assert_eq!(status, 200);
    let m = parse_metrics(&text);
    assert_eq!(m[r#"baton_tasks{status="COMPLETE"}"#], 1.0, "{m:?}");
    assert_eq!(m[r#"baton_tasks{status="QUEUED"}"#], 2.0, "{m:?}");
    assert_eq!(m["baton_queue_depth"], 2.0, "{m:?}");
    assert_eq!(m[r#"baton_deliveries{decision="ignored"}"#], 1.0, "{m:?}");
    assert_eq!(server.stop().code(), Some(0));
}

/// A worker's `/metrics` count the tokens its agents used, by CLI: a
/// queued task whose phase runs Claude Code for real (against the
/// scripted model server) adds what the task's state says it used.
#[test]
fn a_workers_metrics_count_its_agents_tokens_by_cli() {
    use baton_testkit::agents::Agent;
    use baton_testkit::model_server::{ModelServer, Reply};
    let p = TestProject::new();
    let home = tempfile::tempdir().unwrap();
    let model = ModelServer::start(vec![Reply::text("all written")]);
    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    text.push_str(&Agent::Claude.baton_config("cc", &model, home.path()));
    fs_err::write(&cfg, text).unwrap();
    p.workflow(
        "w",
        "name = \"w\"\n[[phase]]\nid = \"write\"\nagent = \"cc\"\nmax_attempts = 1\nprompt = \"Say hello\"\n",
    );
    p.git(&["add", "-A"]);
    p.git(&["commit", "-qm", "workflows"]);
    assert_eq!(p.run(&["run", "w", "x", "--queue", "--id", "a1"]).0, 0);
    let port = free_port();
    let mut w = listening_worker(&p, port, &[]);
    wait_for("the agent's task to complete", || {
        (p.state("a1")["status"] == "COMPLETE").then_some(())
    });
    let tokens = &p.state("a1")["tokens"];
    let (input, output) = (
        tokens["input"].as_f64().unwrap(),
        tokens["output"].as_f64().unwrap(),
    );
    assert!(input > 0.0 && output > 0.0, "{tokens}");
    let (_, text) = get(&format!("http://127.0.0.1:{port}/metrics"), None);
    let m = parse_metrics(&text);
    assert_eq!(
        m[r#"baton_agent_tokens_total{cli="claude",kind="input"}"#], input,
        "{m:?}"
    );
    assert_eq!(
        m[r#"baton_agent_tokens_total{cli="claude",kind="output"}"#], output,
        "{m:?}"
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(w.id() as i32),
        nix::sys::signal::SIGTERM,
    )
    .unwrap();
    assert_eq!(w.wait().unwrap().code(), Some(0));
}

/// `--log-format json`: every line on stderr is one JSON object, the
/// phases' events name their task, phase, attempt and worker, and a
/// control character from a task is escaped, never sent raw.
#[test]
fn json_logs_are_one_object_per_line_with_task_phase_attempt_and_worker() {
    let p = TestProject::new();
    p.workflow("w", TWO);
    p.git(&["add", "-A"]);
    p.git(&["commit", "-qm", "workflows"]);
    assert_eq!(
        p.run(&["run", "w", "evil \x1b[2J here", "--queue", "--id", "j1"])
            .0,
        0
    );
    let out = p
        .baton(&["worker", "--once", "--log-format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        !err.contains('\x1b'),
        "a raw escape reached the terminal: {err:?}"
    );
    let lines: Vec<Value> = err
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect();
    let phases: Vec<&Value> = lines
        .iter()
        .filter(|l| l["event"] == "phase_finished")
        .collect();
    assert_eq!(phases.len(), 2, "{err}");
    for (l, phase) in phases.iter().zip(["a", "b"]) {
        assert_eq!(l["task"], "j1", "{l}");
        assert_eq!(l["phase"], phase, "{l}");
        assert_eq!(l["attempt"], 1, "{l}");
        assert_eq!(l["status"], "PASS", "{l}");
        assert_eq!(l["level"], "INFO", "{l}");
        let w = l["worker"].as_str().unwrap();
        assert!(
            w.rsplit_once(':')
                .is_some_and(|(_, pid)| pid.parse::<u32>().is_ok()),
            "{l}"
        );
        assert!(l["timestamp"].is_string(), "{l}");
    }
    assert!(
        lines
            .iter()
            .any(|l| l["event"] == "phase_started" && l["task"] == "j1"),
        "{err}"
    );
    // A bad command's error is JSON too.
    let out = p
        .baton(&["show", "nope", "--log-format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let line: Value = serde_json::from_slice(out.stderr.trim_ascii()).unwrap();
    assert_eq!(
        (line["level"].as_str(), line["event"].as_str()),
        (Some("ERROR"), Some("error")),
        "{line}"
    );
    assert!(line["message"].as_str().unwrap().contains("nope"), "{line}");
}
