//! `baton serve` benchmark: signed webhook deliveries next to a trivial
//! endpoint of the same server, duplicate resumes under identical
//! deliveries, and the supervisor's restart time.
//!
//! `cargo bench -p baton-cli --bench serve`
//!
//! 1. **Deliveries.** One `baton serve` (SQLite store, `synchronous=FULL`)
//!    under `wrk` (Debian's package, installed by this bench when missing)
//!    with 64 connections on loopback for 10 s each, every request a new
//!    signed body (GitHub never sends one body twice; the server answers
//!    a body it has seen as a redelivery), with the server's limits on
//!    (header read and request timeouts, connection cap, body limit, the
//!    Host/Origin guard and the replay check):
//!    - baseline: the signed 28 KB body posted as a `ping`, which the
//!      same handler reads, checks (signature, JSON) and answers 200
//!      without storing anything: the trivial endpoint under the same
//!      load, so the ratio is what durable dedupe and journaling cost;
//!    - `GET /healthz`, which answers 200 and reads nothing, for scale
//!      (what the server does with no body at all);
//!    - awaited deliveries: `POST /webhooks/github` with GitHub's real
//!      `pull_request.opened` payload, which a task's workflow waits for,
//!      signed, a new `X-GitHub-Delivery` per request: each is checked
//!      (signature, JSON), stored durably with its body (deduplicated by
//!      its id and its body's digest, group-committed with the others
//!      that arrived together)
//!      and answered 202, then handed to the tasks off the request path;
//!    - ignored deliveries: GitHub's real `push` payload, which no
//!      workflow waits for: checked the same way and recorded durably
//!      (group-committed) as ignored, without its body or a hand-over.
//!
//!    Requests per second, p50 and p99 of each, and the ratio of the
//!    rates; then how long after the load every delivery was handed over.
//! 2. **Duplicates.** 32 identical deliveries at once to a task waiting for
//!    them: how many times the task was resumed (must be 1).
//! 3. **Supervisor.** A task's runner SIGKILLed while `serve` runs: the
//!    time until the task runs again (its phase started anew), next to the
//!    lease TTL.

use baton_testkit::{TestProject, wait_for};
use serde_json::Value;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SECRET: &str = "bench-secret";
const CONNECTIONS: usize = 64;
const SECONDS: u64 = 10;

fn fixture(path: &str) -> Vec<u8> {
    fs_err::read(baton_testkit::github_fixture(path)).unwrap()
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into()
}

fn serve(p: &TestProject) -> (Child, String) {
    let port = baton_testkit::free_port();
    let child = p
        .baton(&["serve", "--addr", &format!("127.0.0.1:{port}")])
        .env("BATON_WEBHOOK_SECRET", SECRET)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}");
    wait_for("baton serve", || {
        agent()
            .get(&format!("{url}/healthz"))
            .call()
            .ok()
            .filter(|r| r.status() == 200)
    });
    (child, url)
}

fn stop(mut child: Child) {
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    );
    let _ = child.wait();
}

/// `wrk`, installed from Debian's packages when missing.
fn wrk() -> String {
    if Command::new("wrk").arg("--version").output().is_ok() {
        return "wrk".into();
    }
    eprintln!("installing wrk (Debian package)");
    let sudo = if libc_root() { vec![] } else { vec!["sudo"] };
    let ok = Command::new(sudo.first().copied().unwrap_or("apt-get"))
        .args(if sudo.is_empty() {
            vec!["install", "-y", "-q", "wrk"]
        } else {
            vec!["apt-get", "install", "-y", "-q", "wrk"]
        })
        .env("DEBIAN_FRONTEND", "noninteractive")
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "wrk is needed: apt-get install wrk");
    "wrk".into()
}

struct Load {
    rps: f64,
    p50_ms: f64,
    p99_ms: f64,
    requests: u64,
    bad: u64,
}

fn ms(text: &str) -> f64 {
    let t = text.trim();
    let (n, mult) = if let Some(n) = t.strip_suffix("us") {
        (n, 0.001)
    } else if let Some(n) = t.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1000.0)
    } else {
        (t, 1.0)
    };
    n.parse::<f64>().unwrap() * mult
}

fn run_wrk(wrk: &str, url: &str, script: Option<&std::path::Path>) -> Load {
    let mut cmd = Command::new(wrk);
    cmd.args([
        "-t2",
        &format!("-c{CONNECTIONS}"),
        &format!("-d{SECONDS}s"),
        "--latency",
        "--timeout",
        "10s",
    ]);
    if let Some(s) = script {
        cmd.arg("-s").arg(s);
    }
    let out = cmd.arg(url).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "wrk: {text}");
    let field = |prefix: &str| -> Option<String> {
        text.lines()
            .map(str::trim)
            .find(|l| l.starts_with(prefix))
            .map(|l| l[prefix.len()..].trim().to_string())
    };
    let requests = text
        .lines()
        .find(|l| l.contains("requests in"))
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .parse()
        .unwrap();
    Load {
        rps: field("Requests/sec:").unwrap().parse().unwrap(),
        p50_ms: ms(&field("50%").unwrap()),
        p99_ms: ms(&field("99%").unwrap()),
        requests,
        bad: field("Non-2xx or 3xx responses:").map_or(0, |n| n.parse().unwrap()),
    }
}

fn deliveries(p: &TestProject) -> Vec<Value> {
    let out = p
        .baton(&["deliveries", "--json", "--limit", "100000000"])
        .output()
        .unwrap();
    serde_json::from_slice::<Value>(&out.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn project() -> TestProject {
    let p = TestProject::new();
    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    text.push_str("\n[server]\nbranch_pattern = \"{task-id}\"\n");
    fs_err::write(&cfg, text).unwrap();
    p.workflow(
        "pr-flow",
        "name = \"pr-flow\"\n[[phase]]\nid = \"wait-pr\"\nwait = { event = \"github.pull_request.opened\", match = { \"task-id\" = \"{{labels.task-id}}\" } }\n[[phase]]\nid = \"after\"\nrun = \"true\"\n",
    );
    p
}

fn main() {
    let wrk = wrk();
    let p = project();
    // A task the load's deliveries name, at another stage: each delivery
    // is judged against it and skipped.
    let (code, _, err) = p.run(&["run", "pr-flow", "x", "--id", "other"]);
    assert_eq!(code, 4, "{err}");
    let (server, url) = serve(&p);

    let body = fixture("pull_request/opened.payload.json");
    let sig = baton_server::signature::sign(SECRET, &body);
    let push = fixture("push/payload.json");
    let opened_script = script(&p, "opened", "pull_request", &body);
    let push_script = script(&p, "push", "push", &push);
    let ping_script = script(&p, "ping", "ping", &body);

    let healthz = run_wrk(&wrk, &format!("{url}/healthz"), None);
    let base = run_wrk(&wrk, &format!("{url}/webhooks/github"), Some(&ping_script));
    let hooks = run_wrk(
        &wrk,
        &format!("{url}/webhooks/github"),
        Some(&opened_script),
    );
    let load_ended = Instant::now();
    let handed_over = wait_for_all(&p, hooks.requests);
    let after = load_ended.elapsed();
    let ignored = run_wrk(&wrk, &format!("{url}/webhooks/github"), Some(&push_script));
    assert_eq!(base.bad, 0, "the baseline answered errors");
    assert_eq!(healthz.bad, 0, "/healthz answered errors");
    assert_eq!(hooks.bad, 0, "deliveries were refused");
    assert_eq!(ignored.bad, 0, "deliveries were refused");
    println!(
        "serve: {CONNECTIONS} connections, {SECONDS} s each, SQLite synchronous=FULL, GitHub's real payloads, a new signed body per request; the limits on (header read and request timeouts, connection cap, body limit, Host/Origin guard, replay check of each body)"
    );
    println!(
        "  GET /healthz (no body, for scale):                        {:>8.0} req/s   p50 {:>6.2} ms   p99 {:>6.2} ms",
        healthz.rps, healthz.p50_ms, healthz.p99_ms
    );
    println!(
        "  baseline: signed ping, same {} B body, checked, not stored: {:>8.0} req/s   p50 {:>6.2} ms   p99 {:>6.2} ms",
        body.len(),
        base.rps,
        base.p50_ms,
        base.p99_ms
    );
    println!(
        "  awaited pull_request.opened ({} B, stored, handed over): {:>8.0} req/s   p50 {:>6.2} ms   p99 {:>6.2} ms   ratio {:.3} (to /healthz {:.3})",
        body.len(),
        hooks.rps,
        hooks.p50_ms,
        hooks.p99_ms,
        hooks.rps / base.rps,
        hooks.rps / healthz.rps
    );
    println!(
        "  push no workflow waits for ({} B, recorded ignored):    {:>8.0} req/s   p50 {:>6.2} ms   p99 {:>6.2} ms   (to /healthz {:.3})",
        push.len(),
        ignored.rps,
        ignored.p50_ms,
        ignored.p99_ms,
        ignored.rps / healthz.rps
    );
    println!("  goals: intake ratio >= 0.6 (to the baseline), p99 < 50 ms");
    println!(
        "  {} awaited deliveries stored; all {} handed over to the tasks {:.1} s after their load ended",
        hooks.requests,
        handed_over,
        after.as_secs_f64()
    );
    stop(server);

    // 32 identical deliveries at once to a task waiting for them.
    let p = project();
    let (code, _, err) = p.run(&["run", "pr-flow", "x", "--id", "changes"]);
    assert_eq!(code, 4, "{err}");
    let (server, url) = serve(&p);
    let statuses: Vec<u16> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..32)
            .map(|_| {
                s.spawn(|| {
                    agent()
                        .post(&format!("{url}/webhooks/github"))
                        .header("Content-Type", "application/json")
                        .header("X-GitHub-Event", "pull_request")
                        .header("X-GitHub-Delivery", "same")
                        .header("X-Hub-Signature-256", &sig)
                        .send(&body[..])
                        .unwrap()
                        .status()
                        .as_u16()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    wait_for("the task to complete", || {
        (p.state("changes")["status"] == "COMPLETE").then_some(())
    });
    let arrivals = p
        .journal("changes")
        .iter()
        .filter(|e| e["kind"] == "event_arrived")
        .count();
    println!(
        "duplicates: 32 identical deliveries at once: {} answered 202, {} answered 200; task resumed {} time(s): {} duplicate resumes",
        statuses.iter().filter(|s| **s == 202).count(),
        statuses.iter().filter(|s| **s == 200).count(),
        arrivals,
        arrivals.saturating_sub(1)
    );
    stop(server);

    // The supervisor: SIGKILL a runner, time until the phase starts again.
    let p = project();
    p.workflow(
        "long",
        "name = \"long\"\n[[phase]]\nid = \"work\"\nrun = \"date +%s%N >> starts.txt && sleep 600\"\n",
    );
    let (server, _) = serve(&p);
    let mut runner = p
        .baton(&["run", "long", "x", "--id", "l1"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let starts = |p: &TestProject| {
        fs_err::read_to_string(p.root().join("starts.txt"))
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    wait_for("the first run", || (starts(&p) == 1).then_some(()));
    let killed = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(runner.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    runner.wait().unwrap();
    wait_for("the restart", || (starts(&p) == 2).then_some(()));
    let back = killed.elapsed();
    println!(
        "supervisor: runner SIGKILLed -> phase running again in {:.0} ms (lease TTL 30 s; on this host a dead runner is seen at once, then within one 1 s supervisor round)",
        back.as_secs_f64() * 1000.0
    );
    let _ = p.baton(&["cancel", "l1"]).output();
    stop(server);
}

/// Bodies each thread of wrk may send: more than a run of 10 s takes.
const PER_THREAD: usize = 250_000;

/// A wrk script posting GitHub's `body` as event `event`, a new delivery
/// id and a new body per request (a field `baton_bench` with the request's
/// number added at its end), each signed: a body sent twice would be a
/// replay, which the server answers as a redelivery without storing it.
/// The signatures are made here, the body's common part hashed once.
fn script(p: &TestProject, prefix: &str, event: &str, body: &[u8]) -> std::path::PathBuf {
    let text = std::str::from_utf8(body).unwrap().trim_end();
    let open = text.strip_suffix('}').expect("a JSON object");
    let head = format!("{open},\"baton_bench\":");
    let sigs = baton_server::signature::sign_each(
        SECRET,
        head.as_bytes(),
        (0..2 * PER_THREAD).map(|k| format!("{k}}}").into_bytes()),
    );
    let head_file = p.root().join(format!("bench-{prefix}.head"));
    fs_err::write(&head_file, &head).unwrap();
    let sig_file = p.root().join(format!("bench-{prefix}.sigs"));
    fs_err::write(&sig_file, sigs.join("\n")).unwrap();
    let path = p.root().join(format!("bench-{prefix}.lua"));
    fs_err::write(
        &path,
        format!(
            r#"
local threads = 0
function setup(thread)
  thread:set("tid", threads)
  threads = threads + 1
end
local f = io.open("{head}", "rb")
local head = f:read("*a")
f:close()
local sigs = {{}}
for line in io.lines("{sigs}") do sigs[#sigs + 1] = line end
local n = 0
request = function()
  local k = tid * {PER_THREAD} + n
  n = n + 1
  return wrk.format("POST", "/webhooks/github", {{
    ["Content-Type"] = "application/json",
    ["X-GitHub-Event"] = "{event}",
    ["X-GitHub-Delivery"] = "{prefix}-" .. k,
    ["X-Hub-Signature-256"] = sigs[k + 1],
  }}, head .. k .. "}}")
end
"#,
            head = head_file.display(),
            sigs = sig_file.display(),
        ),
    )
    .unwrap();
    path
}

/// Waits until `n` deliveries are settled; returns how many are.
fn wait_for_all(p: &TestProject, n: u64) -> usize {
    let until = Instant::now() + Duration::from_secs(600);
    loop {
        let all = deliveries(p);
        let settled = all.iter().filter(|d| !d["settled_at"].is_null()).count();
        if settled as u64 >= n || Instant::now() > until {
            return settled;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn libc_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0")
}
