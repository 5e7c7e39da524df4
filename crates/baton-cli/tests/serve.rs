//! `baton serve`: GitHub's real webhook payloads (octokit's examples),
//! signed and posted over loopback to a real server process. A delivery
//! resumes the task waiting for it at that stage only; bad deliveries are
//! refused and store nothing; redeliveries, 32 identical deliveries at
//! once and a server killed mid-resume each resume a task exactly once.

use baton_testkit::serve::{Server, TOKEN, WEBHOOK_SECRET as SECRET, http as agent, mcp_post};
use baton_testkit::{TestProject, on_both_backends, wait_child, wait_for};
use serde_json::Value;
use std::process::Stdio;

const FLOW: &str = baton_testkit::serve::PR_FLOW;

fn fixture(path: &str) -> Vec<u8> {
    fs_err::read(baton_testkit::github_fixture(path)).unwrap()
}

/// Webhooks posted to a test server.
trait Webhooks {
    fn post(
        &self,
        event: &str,
        delivery: &str,
        body: &[u8],
        signature: Option<&str>,
    ) -> (u16, Value);
    /// Posts `body` signed with the right secret.
    fn deliver(&self, event: &str, delivery: &str, body: &[u8]) -> (u16, Value) {
        let sig = baton_server::signature::sign(SECRET, body);
        self.post(event, delivery, body, Some(&sig))
    }
}

impl Webhooks for Server {
    fn post(
        &self,
        event: &str,
        delivery: &str,
        body: &[u8],
        signature: Option<&str>,
    ) -> (u16, Value) {
        let mut req = agent()
            .post(&format!("{}/webhooks/github", self.url))
            .header("Content-Type", "application/json")
            .header("X-GitHub-Event", event)
            .header("X-GitHub-Delivery", delivery);
        if let Some(s) = signature {
            req = req.header("X-Hub-Signature-256", s);
        }
        let mut resp = req.send(body).unwrap();
        let status = resp.status().as_u16();
        let text = resp.body_mut().read_to_string().unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }
}

/// Serves `html` to anyone on another loopback port (another origin than
/// the server's), for as long as the test runs: its URL.
fn page_on_another_origin(html: &str) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let page = format!("<!doctype html><html><body>{html}</body></html>");
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                page.len()
            );
        }
    });
    url
}

/// Waits until task `id`, started by another process, runs a phase.
fn running(p: &TestProject, id: &str) {
    wait_for("the phase to run", || {
        let (code, out, _) = p.run(&["show", id, "--json"]);
        let doc: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
        (code == 0 && doc["current_phase"]["status"] == "IN_PROGRESS").then_some(())
    });
}

/// A project whose tasks are named by their pull request's head branch
/// (the fixtures' pull request comes from branch `changes`).
fn project() -> TestProject {
    let p = TestProject::new();
    p.workflow("pr-flow", FLOW);
    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    text.push_str("\n[server]\nbranch_pattern = \"{task-id}\"\nmax_body = \"64KiB\"\n");
    fs_err::write(&cfg, text).unwrap();
    p
}

fn deliveries(p: &TestProject) -> Vec<Value> {
    let (code, out, err) = p.run(&["deliveries", "--json", "--limit", "1000"]);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str::<Value>(&out)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// The delivery `id` once it is settled.
fn settled(p: &TestProject, id: &str) -> Value {
    wait_for(&format!("delivery {id} to be settled"), || {
        deliveries(p)
            .into_iter()
            .find(|d| d["id"] == id && !d["settled_at"].is_null())
    })
}

fn arrivals(p: &TestProject, id: &str) -> usize {
    p.journal(id)
        .iter()
        .filter(|e| e["kind"] == "event_arrived")
        .count()
}

on_both_backends! {
    /// A PR opened for a task still in `implementation` is kept for
    /// `wait-pr`, the task untouched; once the task gets there it passes
    /// with it and runs on to the end. Back at `wait-pr`, a new event
    /// resumes it there, in a process of its own that takes over the
    /// server's lease.
    fn a_signed_delivery_resumes_the_task_only_at_the_stage_it_waits_in() {
        let p = project();
        let (code, _, err) = p.run(&["run", "pr-flow", "x", "--id", "changes"]);
        assert_eq!(code, 1, "implementation fails until `ready` exists: {err}");
        let server = Server::start(&p, &[]);
        let opened = fixture("pull_request/opened.payload.json");
        let (status, v) = server.deliver("pull_request", "d-early", &opened);
        assert_eq!(status, 202, "{v}");
        assert_eq!(v["accepted"], true);
        let d = settled(&p, "d-early");
        assert_eq!(d["decision"], "buffered", "{d}");
        assert_eq!(d["why"], "task changes is at implementation; kept until it waits at wait-pr");
        assert_eq!(d["repository"], "Codertocat/Hello-World");
        assert_eq!(p.state("changes")["status"], "FAILED");
        assert_eq!(arrivals(&p, "changes"), 0);

        fs_err::write(p.root().join("ready"), "").unwrap();
        let (code, _, err) = p.run(&["resume", "changes"]);
        assert_eq!(code, 0, "it reached wait-pr and passed with the kept delivery: {err}");
        let d = settled(&p, "d-early");
        assert_eq!(d["decision"], "resumed", "{d}");
        assert_eq!(d["tasks"][0]["why"], "resumed at wait-pr, kept since it came before that stage");
        assert_eq!(p.state("changes")["stage_results"]["wait-pr"]["delivery"], "d-early");
        assert_eq!(arrivals(&p, "changes"), 1);

        // Back at wait-pr, a later event (GitHub's bodies differ: times,
        // counts; here a newline, as the same body again would be a replay)
        // resumes it there, in a process of its own.
        let (code, _, err) = p.run(&["resume", "changes", "--from", "wait-pr"]);
        assert_eq!(code, 4, "it waits for the pull request again: {err}");
        let later = [opened.as_slice(), b"\n"].concat();
        let (status, v) = server.deliver("pull_request", "d-opened", &later);
        assert_eq!(status, 202, "{v}");
        let d = settled(&p, "d-opened");
        assert_eq!(d["decision"], "resumed", "{d}");
        assert_eq!(d["tasks"][0]["why"], "resumed at wait-pr");
        let doc = wait_for("the task to complete", || {
            let s = p.state("changes");
            (s["status"] == "COMPLETE").then_some(s)
        });
        assert_eq!(fs_err::read_to_string(p.root().join("after.txt")).unwrap(), "pr 2\npr 2\n");
        assert_eq!(doc["labels"]["pr-number"], "2");
        // It ran on in a process of its own, which took the lease over from
        // the server: handed over, not a crash.
        let journal = p.journal("changes");
        assert!(
            journal.iter().all(|e| e["kind"] != "task_resumed" || e["from"] != "CRASHED"),
            "{journal:?}"
        );
        assert!(p.root().join(".baton/tasks/changes/detached.log").exists());
        let stage = &doc["stage_results"]["wait-pr"];
        assert_eq!(stage["event"], "github.pull_request.opened", "{doc}");
        assert_eq!(stage["delivery"], "d-opened");
        assert_eq!(stage["pr_number"], 2);
        assert!(stage["completed_at"].as_str().is_some(), "{stage}");
        assert_eq!(server.stop().code(), Some(0));
    }

    /// Forged, missing, oversize, malformed: refused with the right
    /// status and nothing stored. An event nobody waits for is accepted
    /// and recorded as ignored; ping is answered 200.
    fn bad_deliveries_are_refused_and_store_nothing() {
        let p = project();
        fs_err::write(p.root().join("ready"), "").unwrap();
        assert_eq!(p.run(&["run", "pr-flow", "x", "--id", "changes"]).0, 4);
        let server = Server::start(&p, &[]);
        let opened = fixture("pull_request/opened.payload.json");

        let forged = baton_server::signature::sign("not the secret", &opened);
        let (status, v) = server.post("pull_request", "d-forged", &opened, Some(&forged));
        assert_eq!(status, 401, "{v}");
        assert_eq!(v["code"], "BAD_SIGNATURE");
        assert!(v["hint"].as_str().unwrap().contains("BATON_WEBHOOK_SECRET"), "{v}");
        let (status, v) = server.post("pull_request", "d-unsigned", &opened, None);
        assert_eq!(status, 401, "{v}");
        assert!(v["message"].as_str().unwrap().contains("no X-Hub-Signature-256"), "{v}");
        // A signature of another body does not carry over.
        let mut tampered = opened.clone();
        tampered.extend_from_slice(b" ");
        let sig = baton_server::signature::sign(SECRET, &opened);
        assert_eq!(server.post("pull_request", "d-tampered", &tampered, Some(&sig)).0, 401);

        let big = vec![b' '; 100 << 10];
        let (status, v) = server.deliver("pull_request", "d-big", &big);
        assert_eq!(status, 413, "{v}");
        assert_eq!(v["code"], "PAYLOAD_TOO_LARGE");

        let (status, v) = server.deliver("pull_request", "d-bad", b"{ not json");
        assert_eq!(status, 400, "{v}");
        assert_eq!(v["code"], "BAD_JSON");
        let (status, v) = server.deliver("pull_request", "d-form", b"payload=%7B%7D");
        assert_eq!(status, 400);
        assert!(v["hint"].as_str().unwrap().contains("application/json"), "{v}");

        let (status, v) = server.deliver("ping", "d-ping", &fixture("ping/payload.json"));
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["ok"], true);

        let (status, _) = server.deliver("issues", "d-issue", &fixture("issues/opened.payload.json"));
        assert_eq!(status, 202);
        let d = settled(&p, "d-issue");
        assert_eq!(d["decision"], "ignored");
        assert_eq!(d["why"], "no task waits for github.issues.opened");

        let ids: Vec<Value> = deliveries(&p).iter().map(|d| d["id"].clone()).collect();
        assert_eq!(ids, [Value::from("d-issue")], "only the accepted delivery is stored");
        assert_eq!(p.state("changes")["status"], "WAITING");
        assert_eq!(arrivals(&p, "changes"), 0);
        drop(server);
    }

    /// GitHub redelivers with the same X-GitHub-Delivery: 32 copies at
    /// once are one resume (one 202, the rest 200), and a redelivery
    /// after a restart changes nothing either.
    fn identical_deliveries_resume_the_task_once() {
        let p = project();
        fs_err::write(p.root().join("ready"), "").unwrap();
        assert_eq!(p.run(&["run", "pr-flow", "x", "--id", "changes"]).0, 4);
        let server = Server::start(&p, &[]);
        let opened = fixture("pull_request/opened.payload.json");
        let statuses: Vec<u16> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..32)
                .map(|_| s.spawn(|| server.deliver("pull_request", "d-same", &opened).0))
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(statuses.iter().filter(|s| **s == 202).count(), 1, "{statuses:?}");
        assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 31, "{statuses:?}");
        assert_eq!(settled(&p, "d-same")["decision"], "resumed");
        wait_for("the task to complete", || (p.state("changes")["status"] == "COMPLETE").then_some(()));
        assert_eq!(server.stop().code(), Some(0));

        // Rewound to wait again: a redelivery, to a new server, is still
        // the same delivery and changes nothing.
        assert_eq!(p.run(&["resume", "changes", "--from", "wait-pr"]).0, 4);
        let server = Server::start(&p, &[]);
        let (status, v) = server.deliver("pull_request", "d-same", &opened);
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["redelivery"], true);
        assert_eq!(p.state("changes")["status"], "WAITING");
        assert_eq!(arrivals(&p, "changes"), 1);
        assert_eq!(fs_err::read_to_string(p.root().join("after.txt")).unwrap(), "pr 2\n");
        assert_eq!(deliveries(&p).len(), 1);
        drop(server);
    }

    /// `serve` SIGKILLed right after a delivery passed the task's wait
    /// phase, before it was settled: the next `serve` settles it as the
    /// resume it was (not a second one), and the task's crash is
    /// recovered by a resume with the wait still passed once.
    fn a_server_killed_mid_resume_loses_no_delivery_and_resumes_nothing_twice() {
        let p = project();
        fs_err::write(p.root().join("ready"), "").unwrap();
        assert_eq!(p.run(&["run", "pr-flow", "x", "--id", "changes"]).0, 4);
        let mut server = Server::start(&p, &[("BATON_TEST_CRASH_AT", "delivery-passed:wait-pr")]);
        let opened = fixture("pull_request/opened.payload.json");
        let (status, _) = server.deliver("pull_request", "d-crash", &opened);
        assert_eq!(status, 202, "answered once stored, before the hand-over");
        let s = wait_child(&mut server.child, "baton serve to kill itself");
        assert!(s.code().is_none(), "killed by its signal: {s}");
        assert_eq!(deliveries(&p)[0]["decision"], "pending");
        assert_eq!(arrivals(&p, "changes"), 1);

        let server = Server::start(&p, &[]);
        let d = settled(&p, "d-crash");
        assert_eq!(d["decision"], "resumed", "{d}");
        assert_eq!(arrivals(&p, "changes"), 1, "not passed a second time");
        let (status, _) = server.deliver("pull_request", "d-crash", &opened);
        assert_eq!(status, 200);
        assert_eq!(server.stop().code(), Some(0));
        let (code, _, err) = p.run(&["resume", "changes"]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(arrivals(&p, "changes"), 1);
        assert_eq!(fs_err::read_to_string(p.root().join("after.txt")).unwrap(), "pr 2\n");
    }

    /// SIGTERM while a task it resumed is running a phase: the run is
    /// interrupted and journaled, the lease released, and serve exits 0.
    fn sigterm_interrupts_the_runs_it_started_and_exits_0() {
        let p = project();
        p.workflow("pr-flow", &FLOW.replace(
            "run = \"echo pr {{labels.pr-number}} >> after.txt\"",
            "run = \"touch started && sleep 60\"",
        ));
        fs_err::write(p.root().join("ready"), "").unwrap();
        assert_eq!(p.run(&["run", "pr-flow", "x", "--id", "changes"]).0, 4);
        let server = Server::start(&p, &[]);
        let (status, _) = server.deliver("pull_request", "d-1", &fixture("pull_request/opened.payload.json"));
        assert_eq!(status, 202);
        wait_for("the next phase to start", || p.root().join("started").exists().then_some(()));
        let t = std::time::Instant::now();
        assert_eq!(server.stop().code(), Some(0));
        assert!(t.elapsed() < std::time::Duration::from_secs(30), "{:?}", t.elapsed());
        let doc = p.state("changes");
        assert!(doc["owner"].is_null(), "lease released: {doc}");
        assert!(
            p.journal("changes").iter().any(|e| e["kind"] == "phase_interrupted"),
            "the interrupted phase is journaled"
        );
    }
}

fn lines(p: &TestProject, file: &str) -> usize {
    fs_err::read_to_string(p.root().join(file))
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

fn sigkill(pid: i64) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
}

/// The pid of the task's runner, once a runner other than `not` holds it.
fn runner(p: &TestProject, id: &str, not: i64) -> i64 {
    wait_for("a runner to hold the task", || {
        p.state(id)["owner"]["pid"]
            .as_i64()
            .filter(|pid| *pid != not)
    })
}

on_both_backends! {
    /// A task whose runner is SIGKILLed is restarted by the supervisor,
    /// each restart journaled with its reason; past `max_restarts` it is
    /// left CRASHED with a blocker saying why, and not run again.
    fn the_supervisor_restarts_a_killed_runner_and_stops_at_its_limit() {
        let p = project();
        p.workflow("crashy", "name = \"crashy\"\n[[phase]]\nid = \"work\"\nrun = \"echo x >> runs.txt && sleep 60\"\n");
        let cfg = p.root().join(".baton/config.toml");
        let mut text = fs_err::read_to_string(&cfg).unwrap();
        text.push_str("\n[supervisor]\nmax_restarts = 2\nbackoff = \"1s\"\n");
        fs_err::write(&cfg, text).unwrap();
        let mut first = p.baton(&["run", "crashy", "x", "--id", "c1"]).stderr(Stdio::null()).spawn().unwrap();
        wait_for("the first run", || (lines(&p, "runs.txt") == 1).then_some(()));
        sigkill(first.id() as i64);
        first.wait().unwrap();
        let server = Server::start(&p, &[]);
        wait_for("the first restart", || (lines(&p, "runs.txt") == 2).then_some(()));
        let restarts: Vec<Value> = p
            .journal("c1")
            .into_iter()
            .filter(|e| e["kind"] == "auto_restarted")
            .collect();
        assert_eq!(restarts.len(), 1);
        let reason = restarts[0].to_string();
        assert!(reason.contains("restart 1 of at most 2 within 1h00m: its runner died"), "{reason}");

        let pid = runner(&p, "c1", first.id() as i64);
        sigkill(pid);
        wait_for("the second restart", || (lines(&p, "runs.txt") == 3).then_some(()));
        let pid = runner(&p, "c1", pid);
        sigkill(pid);
        // Given up: the blocker is committed, then the supervisor lets the
        // task go (CRASHED once nobody holds it).
        let doc = wait_for("the supervisor to give up", || {
            let d = p.state("c1");
            let blocked = d["blockers"].as_array().unwrap().iter().any(|b| b.as_str().unwrap().starts_with("supervisor: "));
            (blocked && d["status"] == "CRASHED").then_some(d)
        });
        assert_eq!(doc["status"], "CRASHED", "{doc}");
        let blocker = doc["blockers"].to_string();
        assert!(blocker.contains("restarted automatically 2 times within 1h00m"), "{blocker}");
        std::thread::sleep(std::time::Duration::from_secs(3));
        assert_eq!(lines(&p, "runs.txt"), 3, "not run again past the limit");
        assert_eq!(p.journal("c1").iter().filter(|e| e["kind"] == "auto_restarted").count(), 2);
        assert_eq!(server.stop().code(), Some(0));
    }

    /// A durable timer that fell due while no server ran is woken when one starts.
    fn a_timer_due_while_the_server_was_down_is_woken() {
        let p = project();
        p.workflow("later", "name = \"later\"\n[[phase]]\nid = \"pause\"\nwait = { duration = \"1s\" }\n[[phase]]\nid = \"then\"\nrun = \"touch woke\"\n");
        let (code, _, err) = p.run(&["run", "later", "x", "--id", "t1"]);
        assert_eq!(code, 4, "{err}");
        std::thread::sleep(std::time::Duration::from_millis(1500));
        let server = Server::start(&p, &[]);
        wait_for("the task to complete", || (p.state("t1")["status"] == "COMPLETE").then_some(()));
        assert!(p.root().join("woke").exists());
        assert_eq!(server.stop().code(), Some(0));
    }
}

/// Random, truncated and mutated bodies, each validly signed, with random
/// event types: never a 5xx, never a crash, and every delivery that was
/// accepted is settled (the hand-over survived it too).
#[test]
fn random_and_truncated_signed_bodies_never_get_a_5xx() {
    let p = project();
    fs_err::write(p.root().join("ready"), "").unwrap();
    assert_eq!(p.run(&["run", "pr-flow", "x", "--id", "changes"]).0, 4);
    let server = Server::start(&p, &[]);
    let fixtures: Vec<Vec<u8>> = [
        "pull_request/opened.payload.json",
        "pull_request/closed.payload.json",
        "pull_request_review/submitted.payload.json",
        "issues/opened.payload.json",
        "push/payload.json",
    ]
    .iter()
    .map(|f| fixture(f))
    .collect();
    let events = [
        "pull_request",
        "pull_request_review",
        "issues",
        "push",
        "ping",
        "zzz",
        "",
    ];
    // xorshift: the same cases every run.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut accepted = Vec::new();
    for i in 0..300 {
        let base = &fixtures[(next() % fixtures.len() as u64) as usize];
        let body: Vec<u8> = match i % 4 {
            // Truncated anywhere.
            0 => base[..(next() % base.len() as u64) as usize].to_vec(),
            // Bytes flipped.
            1 => {
                let mut b = base.clone();
                for _ in 0..(1 + next() % 8) {
                    let at = (next() % b.len() as u64) as usize;
                    b[at] = (next() % 256) as u8;
                }
                b
            }
            // Noise.
            2 => (0..(next() % 2048)).map(|_| (next() % 256) as u8).collect(),
            // Valid JSON of the wrong shapes.
            _ => {
                let shapes = [
                    r#"{"action":"opened","pull_request":null}"#,
                    r#"{"action":7,"pull_request":{"number":"x","head":{"ref":[]},"labels":{}}}"#,
                    r#"{"repository":{"full_name":{}},"review":{"state":null,"user":3}}"#,
                    r#"{"action":"closed","pull_request":{"merged":"yes","body":12}}"#,
                    "[]",
                    "null",
                    "{}",
                ];
                shapes[(next() % shapes.len() as u64) as usize]
                    .as_bytes()
                    .to_vec()
            }
        };
        let event = events[(next() % events.len() as u64) as usize];
        let id = format!("fuzz-{i}");
        let (status, v) = server.deliver(event, &id, &body);
        assert!(
            [200, 202, 400, 413].contains(&status),
            "case {i} ({event}, {} bytes): {status} {v}",
            body.len()
        );
        if status == 202 {
            accepted.push(id);
        }
    }
    assert!(!accepted.is_empty(), "some shapes are accepted");
    for id in &accepted {
        settled(&p, id);
    }
    // A mutation that leaves a valid `opened` for the task may resume it,
    // but only once.
    assert!(arrivals(&p, "changes") <= 1);
    assert!(
        agent()
            .get(&format!("{}/healthz", server.url))
            .call()
            .is_ok()
    );
    assert_eq!(server.stop().code(), Some(0));
}

/// Queued tasks are left to workers; with `[supervisor] run_queued`, the
/// server runs them itself, in their own worktrees, as a worker would.
#[test]
fn queued_tasks_are_run_by_serve_only_with_run_queued() {
    let p = project();
    p.workflow(
        "q",
        "name = \"q\"\n[[phase]]\nid = \"work\"\nrun = \"echo done > out.txt\"\n",
    );
    let (code, _, err) = p.run(&["run", "q", "x", "--id", "q1", "--queue"]);
    assert_eq!(code, 0, "{err}");
    let server = Server::start(&p, &[]);
    // Three supervisor rounds.
    std::thread::sleep(std::time::Duration::from_millis(3200));
    assert_eq!(p.state("q1")["status"], "QUEUED", "left to workers");
    assert_eq!(server.stop().code(), Some(0));

    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    text.push_str("\n[supervisor]\nrun_queued = true\n");
    fs_err::write(&cfg, text).unwrap();
    let server = Server::start(&p, &[]);
    wait_for("the queued task to run", || {
        (p.state("q1")["status"] == "COMPLETE").then_some(())
    });
    assert!(
        p.journal("q1")
            .iter()
            .all(|e| e["kind"] != "auto_restarted"),
        "running a queued task is no restart"
    );
    assert!(
        !p.root().join("out.txt").exists(),
        "it ran in its own worktree, not the project"
    );
    assert_eq!(server.stop().code(), Some(0));
}

#[test]
fn serve_refuses_to_listen_beyond_loopback_without_a_token() {
    let p = project();
    let (code, _, err) = p.run(&["serve", "--addr", "0.0.0.0:0"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no API token"), "{err}");
    assert!(err.contains("BATON_SERVER_TOKEN"), "{err}");
    let (code, _, err) = p.run(&["serve", "--addr", "nowhere"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not an address"), "{err}");
}

/// The JSON API: tasks filtered, one task's document and journal in pages,
/// deliveries, resume and cancel with their refusals, errors with a code
/// and a hint, the OpenAPI document, and the token rule.
#[test]
fn the_api_answers_json_with_codes_and_hints_behind_its_token() {
    let p = project();
    fs_err::write(p.root().join("ready"), "").unwrap();
    assert_eq!(p.run(&["run", "pr-flow", "x", "--id", "changes"]).0, 4);
    assert_eq!(
        p.run(&[
            "run", "pr-flow", "y", "--id", "other", "--label", "team=web"
        ])
        .0,
        4
    );
    let server = Server::start(&p, &[("BATON_SERVER_TOKEN", TOKEN)]);
    let get = |path: &str, token: Option<&str>| -> (u16, Value) {
        let mut req = agent().get(&format!("{}{path}", server.url));
        if let Some(t) = token {
            req = req.header("Authorization", &format!("Bearer {t}"));
        }
        let mut r = req.call().unwrap();
        let status = r.status().as_u16();
        (status, r.body_mut().read_json().unwrap_or(Value::Null))
    };
    let post = |path: &str| -> (u16, Value) {
        let mut r = agent()
            .post(&format!("{}{path}", server.url))
            .header("Authorization", format!("Bearer {TOKEN}"))
            .send_empty()
            .unwrap();
        let status = r.status().as_u16();
        (status, r.body_mut().read_json().unwrap_or(Value::Null))
    };
    let (status, v) = get("/api/v1/tasks", None);
    assert_eq!(status, 401, "{v}");
    assert_eq!(v["code"], "UNAUTHORIZED");
    assert!(v["hint"].as_str().unwrap().contains("Bearer"), "{v}");
    assert_eq!(get("/api/v1/tasks", Some("wrong")).0, 401);
    // The page itself holds no data; the webhook needs no token.
    assert_eq!(agent().get(&server.url).call().unwrap().status(), 200);

    let t = Some(TOKEN);
    let (status, v) = get("/api/v1/tasks", t);
    assert_eq!(status, 200, "{v}");
    let ids: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2, "{v}");
    assert!(
        v.as_array()
            .unwrap()
            .iter()
            .all(|r| r["status"] == "WAITING" && r["phase"] == "wait-pr"),
        "{v}"
    );
    let (_, v) = get("/api/v1/tasks?label=team=web", t);
    assert_eq!(v.as_array().unwrap().len(), 1);
    assert_eq!(v[0]["id"], "other");
    let (_, v) = get("/api/v1/tasks?status=complete", t);
    assert_eq!(v, Value::Array(vec![]));
    let (status, v) = get("/api/v1/tasks?label=oops", t);
    assert_eq!(
        (status, v["code"].as_str()),
        (400, Some("BAD_FILTER")),
        "{v}"
    );

    let (status, doc) = get("/api/v1/tasks/changes", t);
    assert_eq!(status, 200);
    assert_eq!(doc["task_id"], "changes");
    assert_eq!(doc["waiting"]["phase"], "wait-pr");
    let (status, v) = get("/api/v1/tasks/nope", t);
    assert_eq!(
        (status, v["code"].as_str()),
        (404, Some("TASK_NOT_FOUND")),
        "{v}"
    );
    let (_, page) = get("/api/v1/tasks/changes/journal?limit=2", t);
    assert_eq!(page["events"].as_array().unwrap().len(), 2);
    assert_eq!(page["events"][0]["kind"], "task_created");
    let next = page["next_after"].as_u64().unwrap();
    let (_, rest) = get(&format!("/api/v1/tasks/changes/journal?after={next}"), t);
    assert_eq!(rest["events"][0]["seq"].as_u64(), Some(next + 1));
    assert!(rest["next_after"].is_null());

    // Resume a task that waits for an event: it runs, and waits again.
    let (status, v) = post("/api/v1/tasks/changes/resume");
    assert_eq!(status, 202, "{v}");
    assert!(v["pid"].as_u64().is_some());
    let (status, v) = post("/api/v1/tasks/changes/cancel");
    assert_eq!(status, 200, "{v}");
    wait_for("the cancel", || {
        (p.state("changes")["status"] == "CANCELLED").then_some(())
    });
    let (status, v) = post("/api/v1/tasks/changes/resume");
    assert_eq!(status, 409, "{v}");
    assert_eq!(v["code"], "NOT_RESUMABLE");
    assert!(!v["hint"].as_str().unwrap().is_empty());
    let (status, v) = post("/api/v1/tasks/changes/cancel");
    assert_eq!(
        (status, v["code"].as_str()),
        (409, Some("NOT_CANCELLABLE")),
        "{v}"
    );

    server.deliver("issues", "d-1", &fixture("issues/opened.payload.json"));
    settled(&p, "d-1");
    let (_, v) = get("/api/v1/deliveries", t);
    assert_eq!(v[0]["id"], "d-1");
    assert_eq!(v[0]["decision"], "ignored");

    let (status, doc) = get("/api/v1/openapi.json", t);
    assert_eq!(status, 200);
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"), "{doc}");
    for path in [
        "/api/v1/tasks",
        "/api/v1/tasks/{id}",
        "/api/v1/tasks/{id}/journal",
        "/api/v1/tasks/{id}/resume",
        "/api/v1/tasks/{id}/cancel",
        "/api/v1/deliveries",
        "/api/v1/instances",
    ] {
        assert!(doc["paths"].get(path).is_some(), "{path} is not documented");
    }
    assert!(doc["components"]["schemas"]["ApiError"].is_object());
    assert!(doc["components"]["schemas"]["TaskRow"].is_object());
    assert_eq!(server.stop().code(), Some(0));
}

const ASK: &str = "name = \"ask\"\n[[phase]]\nid = \"approve\"\nwait = { human = \"Ship it?\", options = [\"yes\", \"no\"] }\n[[phase]]\nid = \"ship\"\nrun = \"echo shipped > shipped.txt\"\n";

/// A person answers the question a task waits on through the API: one of
/// its options passes the wait (the answer its summary, who gave it
/// journaled) and the task runs on; another answer, a task not waiting for
/// one, and a second answer are refused with codes and hints.
#[test]
fn a_person_answers_a_waiting_task_through_the_api() {
    let p = project();
    p.workflow("ask", ASK);
    assert_eq!(p.run(&["run", "ask", "release", "--id", "r1"]).0, 4);
    fs_err::write(p.root().join("ready"), "").unwrap();
    assert_eq!(p.run(&["run", "pr-flow", "x", "--id", "changes"]).0, 4);
    let doc = p.state("r1");
    assert_eq!(doc["waiting"]["question"], "Ship it?", "{doc}");
    assert_eq!(doc["waiting"]["options"], serde_json::json!(["yes", "no"]));
    let server = Server::start(&p, &[]);
    let answer = |id: &str, body: Value| -> (u16, Value) {
        let mut r = agent()
            .post(&format!("{}/api/v1/tasks/{id}/answer", server.url))
            .send_json(body)
            .unwrap();
        let status = r.status().as_u16();
        (status, r.body_mut().read_json().unwrap_or(Value::Null))
    };
    let (status, v) = answer("r1", serde_json::json!({"answer": "maybe"}));
    assert_eq!(
        (status, v["code"].as_str()),
        (400, Some("BAD_ANSWER")),
        "{v}"
    );
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .contains("answer one of yes, no"),
        "{v}"
    );
    let (status, v) = answer("changes", serde_json::json!({"answer": "yes"}));
    assert_eq!(
        (status, v["code"].as_str()),
        (409, Some("NOT_WAITING_FOR_AN_ANSWER")),
        "{v}"
    );
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .contains("github.pull_request.opened"),
        "{v}"
    );
    let (status, v) = answer("r1", serde_json::json!({"answer": "yes", "by": "ana"}));
    assert_eq!(status, 202, "{v}");
    assert_eq!(
        (v["phase"].as_str(), v["answer"].as_str()),
        (Some("approve"), Some("yes"))
    );
    wait_for("the task to run on", || {
        (p.state("r1")["status"] == "COMPLETE").then_some(())
    });
    assert!(p.root().join("shipped.txt").exists());
    let doc = p.state("r1");
    assert_eq!(doc["completed_phases"][0]["summary"], "yes");
    let answered: Vec<Value> = p
        .journal("r1")
        .into_iter()
        .filter(|e| e["kind"] == "answered")
        .collect();
    assert_eq!(answered.len(), 1);
    assert_eq!(answered[0]["by"], "ana");
    let (status, _) = answer("r1", serde_json::json!({"answer": "no"}));
    assert_eq!(status, 409, "answered once");
    assert_eq!(server.stop().code(), Some(0));
}

/// The dashboard, in a real headless Chromium: a waiting task appears;
/// when a webhook resumes it, its row turns COMPLETE and the delivery
/// shows, without a reload; its phases show as a timeline with the event
/// that passed the wait; a person's click on Resume brings a failed task
/// to COMPLETE; a page on another site open in the same browser cannot
/// cancel or resume anything; Cancel asks before it acts; the filter hides
/// the others; on a phone's width nothing spills sideways. It is reached
/// from the board, the front page. docs/tasks.png is taken here.
#[test]
fn the_dashboard_shows_tasks_live_in_a_real_browser() {
    let p = project();
    fs_err::write(p.root().join("ready"), "").unwrap();
    assert_eq!(
        p.run(&["run", "pr-flow", "Add the widget", "--id", "changes"])
            .0,
        4
    );
    p.workflow(
        "fixable",
        "name = \"fixable\"\n[[phase]]\nid = \"check\"\nrun = \"test -f fixed\"\nmax_attempts = 1\n[[phase]]\nid = \"ship\"\nrun = \"true\"\n",
    );
    assert_eq!(
        p.run(&["run", "fixable", "Fix the build", "--id", "broken"])
            .0,
        1
    );
    p.workflow("ask", ASK);
    assert_eq!(
        p.run(&["run", "ask", "Release 2.0", "--id", "release"]).0,
        4
    );
    assert_eq!(p.run(&["run", "pr-flow", "Later", "--id", "later"]).0, 4);
    let server = Server::start(&p, &[]);
    let b = baton_testkit::browser::Browser::start(1280, 860);
    // A page on another site, open in the same browser, sends what a
    // browser sends without asking: a text/plain POST to cancel a task,
    // and a form posted to resume one. The server refuses both.
    let evil = page_on_another_origin(&format!(
        r#"<form id="f" method="post" action="{url}/api/v1/tasks/broken/resume" target="out"><input name="x" value="1"></form>
<iframe name="out"></iframe><p id="sent"></p>
<script>
fetch("{url}/api/v1/tasks/later/cancel", {{method: "POST", mode: "no-cors", headers: {{"Content-Type": "text/plain"}}, body: "x"}})
  .finally(() => {{ document.getElementById("f").submit(); document.getElementById("sent").textContent = "sent"; }});
</script>"#,
        url = server.url
    ));
    b.goto(&evil);
    b.wait_text("#sent", "sent", 10);
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(p.state("later")["status"], "WAITING");
    assert_eq!(p.state("broken")["status"], "FAILED");
    // The front page is the board (an old link to /board leads there);
    // the task list is a click away.
    b.goto(&format!("{}/board", server.url));
    b.wait_text("[data-column=failed]", "broken", 30);
    assert_eq!(
        b.js("return location.pathname;", serde_json::json!([])),
        Value::String("/".into())
    );
    b.wait_text("[data-column=person]", "release", 30);
    b.click(r#"nav a[href="/tasks"]"#);
    let row = |id: &str, cell: &str| format!(r#"tr[data-task="{id}"] td.{cell}"#);
    b.wait_text(&row("changes", "status"), "WAITING", 30);
    assert_eq!(b.text(&row("changes", "phase")).as_deref(), Some("wait-pr"));
    b.wait_text(&row("broken", "status"), "FAILED", 10);
    b.wait_text("#live", "live", 30);
    b.js(
        "window.__sameLoad = true; return null;",
        serde_json::json!([]),
    );

    let (status, _) = server.deliver(
        "pull_request",
        "d-live",
        &fixture("pull_request/opened.payload.json"),
    );
    assert_eq!(status, 202);
    b.wait_text(&row("changes", "status"), "COMPLETE", 30);
    b.wait_text(
        r#"#deliveries tr[data-delivery="d-live"] td.decision"#,
        "resumed",
        30,
    );
    assert_eq!(
        b.js("return window.__sameLoad === true;", serde_json::json!([])),
        Value::Bool(true),
        "updated live, not by reloading"
    );

    b.click(r#"tr[data-task="changes"]"#);
    let detail = b.wait_text("#detail-body", "github.pull_request.opened · PR #2", 10);
    for phase in ["implementation", "wait-pr", "after"] {
        assert!(detail.contains(phase), "{detail}");
    }

    fs_err::write(p.root().join("fixed"), "").unwrap();
    b.click(r#"tr[data-task="broken"]"#);
    b.wait_text("#detail-body .title", "broken", 10);
    b.click("#resume");
    b.wait_text(&row("broken", "status"), "COMPLETE", 60);

    // A person answers the question the release waits on, by its option.
    b.click(r#"tr[data-task="release"]"#);
    b.wait_text("#answer", "Ship it?", 10);
    b.click(r#"#answer button[data-answer="yes"]"#);
    b.wait_text(&row("release", "status"), "COMPLETE", 60);

    // Cancel asks first: dismissed, nothing happens; confirmed, it ends.
    b.click(r#"tr[data-task="later"]"#);
    b.wait_text("#detail-body .title", "later", 10);
    b.click("#cancel");
    assert!(b.dialog_text(10).contains("Cancel task later?"));
    b.answer_dialog(false);
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(p.state("later")["status"], "WAITING");
    b.click("#cancel");
    b.dialog_text(10);
    b.answer_dialog(true);
    b.wait_text(&row("later", "status"), "CANCELLED", 30);

    b.type_into("#filter", "widget");
    wait_for("the filter", || {
        (b.js(
            r#"return document.querySelector('tr[data-task="broken"]') === null;"#,
            serde_json::json!([]),
        ) == Value::Bool(true))
        .then_some(())
    });
    assert!(b.text(&row("changes", "status")).is_some());
    b.js("document.getElementById('filter').value = ''; document.getElementById('filter').dispatchEvent(new Event('input')); return null;", serde_json::json!([]));
    b.click(r#"tr[data-task="changes"]"#);
    b.wait_text("#detail-body .title", "changes", 10);
    let shot = b.screenshot();
    assert!(shot.starts_with(b"\x89PNG"), "a PNG");
    if let Some(path) = std::env::var_os("BATON_DASHBOARD_SCREENSHOT") {
        fs_err::write(path, &shot).unwrap();
    }

    b.resize(390, 844);
    b.wait_text(&row("changes", "status"), "COMPLETE", 10);
    assert_eq!(
        b.js(
            "return document.documentElement.scrollWidth <= window.innerWidth;",
            serde_json::json!([])
        ),
        Value::Bool(true),
        "nothing spills sideways on a phone"
    );
    // Stopped while the page is still open and listening: the event
    // stream ends, and the server exits at once.
    let t = std::time::Instant::now();
    assert_eq!(server.stop().code(), Some(0));
    assert!(
        t.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        t.elapsed()
    );
    drop(b);
}

/// baton's MCP tools over Streamable HTTP at `/mcp`, for agents on other
/// machines: behind the person's token, an anonymous caller may use what
/// needs no identity; an agent is what the capability baton granted it
/// says (`baton mcp grant` for a running phase), its reports go where
/// baton names, and the capability ends with the phase.
#[test]
fn mcp_over_http_knows_the_caller_by_its_capability_behind_the_token() {
    let p = project();
    p.workflow(
        "hold",
        "name = \"hold\"\n[[phase]]\nid = \"work\"\nrun = \"while [ ! -f go ]; do sleep 0.05; done\"\n",
    );
    let mut run = p
        .baton(&["run", "hold", "x", "--id", "t1"])
        .spawn()
        .unwrap();
    running(&p, "t1");
    let server = Server::start(&p, &[("BATON_SERVER_TOKEN", TOKEN)]);
    let init = br#"{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}"#;
    let (status, _, _) = mcp_post(&server.url, None, &[], init);
    assert_eq!(status, 401, "the token guards /mcp");
    let bearer = format!("Bearer {TOKEN}");
    let admin = [("Authorization", bearer.as_str())];
    let sid = baton_testkit::serve::mcp_session(&server.url, &admin);
    let (_, anonymous) = baton_testkit::serve::mcp_call(
        &server.url,
        &sid,
        &admin,
        "merge_back",
        serde_json::json!({"feedback": "more tests"}),
    );
    assert_eq!(anonymous["result"]["isError"], true, "{anonymous}");
    let text = anonymous["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with(
            "WORKFLOW_INVALID_STATE: merge_back is for baton's coding and review agents"
        ),
        "{text}"
    );
    // A header is a claim; without a capability it is refused.
    let (status, v, _) = mcp_post(
        &server.url,
        Some(&sid),
        &[("Authorization", bearer.as_str()), ("Baton-Instance", "r9")],
        br#"{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}"#,
    );
    assert_eq!(status, 403, "{v:?}");
    assert_eq!(v.unwrap()["code"], "IDENTITY_NEEDS_CAPABILITY");

    let (code, cap, err) = p.run(&["mcp", "grant", "--task", "t1", "--phase", "work"]);
    assert_eq!(code, 0, "{err}");
    let cap = cap.trim().to_string();
    assert!(cap.starts_with("batoncap_"), "{cap}");
    let agent = format!("Bearer {cap}");
    let me = [("Authorization", agent.as_str())];
    let sid = baton_testkit::serve::mcp_session(&server.url, &me);
    let (_, done) = baton_testkit::serve::mcp_call(
        &server.url,
        &sid,
        &me,
        "phase_complete",
        serde_json::json!({"summary": "reported over HTTP"}),
    );
    assert_ne!(done["result"]["isError"], true, "{done}");
    let summary = p.root().join(".baton/tasks/t1/run/01-work.i0.a1.summary");
    assert_eq!(
        fs_err::read_to_string(&summary).unwrap(),
        "reported over HTTP"
    );
    fs_err::write(p.root().join("go"), "").unwrap();
    assert!(wait_child(&mut run, "the run").success());
    assert_eq!(
        p.state("t1")["completed_phases"][0]["summary"],
        "reported over HTTP"
    );
    // The phase ended, and its capability with it.
    let (status, v, _) = mcp_post(&server.url, Some(&sid), &me, init);
    assert_eq!(status, 401, "{v:?}");
    assert_eq!(v.unwrap()["code"], "CAPABILITY_VOID");
    assert_eq!(server.stop().code(), Some(0));
}

/// The official MCP conformance suite, both pinned versions, directly
/// against `baton serve`'s `/mcp`: every check of the scenarios that apply
/// to a tools-only server passes.
#[test]
fn the_official_conformance_suite_passes_against_serves_mcp_endpoint() {
    let p = project();
    let server = Server::start(&p, &[]);
    let url = format!("{}/mcp", server.url);
    baton_testkit::mcp::run_conformance(&["--url".as_ref(), url.as_ref()], &[]);
    assert_eq!(server.stop().code(), Some(0));
}

/// Two `baton serve` on one PostgreSQL: the same delivery sent to both at
/// once is stored once, two deliveries of the event the task waits for
/// (two bodies, two ids) resume it once, the lease deciding; and the
/// first body replayed under a third id is a redelivery on either.
#[test]
fn two_servers_on_one_postgresql_resume_a_task_once() {
    baton_testkit::with_backend(baton_testkit::Backend::Postgres, || {
        let p = project();
        fs_err::write(p.root().join("ready"), "").unwrap();
        assert_eq!(p.run(&["run", "pr-flow", "x", "--id", "changes"]).0, 4);
        let (a, b) = (Server::start(&p, &[]), Server::start(&p, &[]));
        let opened = fixture("pull_request/opened.payload.json");
        let bodies = [opened.clone(), [opened.as_slice(), b"\n"].concat()];
        let statuses: Vec<u16> = std::thread::scope(|s| {
            let hs: Vec<_> = [&a, &b, &a, &b]
                .into_iter()
                .enumerate()
                .map(|(i, server)| {
                    let body = &bodies[i % 2];
                    // Two ids, each sent to both servers at once.
                    s.spawn(move || {
                        server
                            .deliver("pull_request", &format!("d-{}", i % 2), body)
                            .0
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(
            statuses.iter().filter(|s| **s == 202).count(),
            2,
            "{statuses:?}"
        );
        assert_eq!(
            statuses.iter().filter(|s| **s == 200).count(),
            2,
            "{statuses:?}"
        );
        wait_for("the task to complete", || {
            (p.state("changes")["status"] == "COMPLETE").then_some(())
        });
        settled(&p, "d-0");
        settled(&p, "d-1");
        assert_eq!(arrivals(&p, "changes"), 1, "resumed once");
        assert_eq!(
            fs_err::read_to_string(p.root().join("after.txt")).unwrap(),
            "pr 2\n"
        );
        for server in [&a, &b] {
            let (status, v) = server.deliver("pull_request", "d-replayed", &opened);
            assert_eq!((status, &v["redelivery"]), (200, &Value::Bool(true)), "{v}");
        }
        assert!(deliveries(&p).iter().all(|d| d["id"] != "d-replayed"));
        assert_eq!(a.stop().code(), Some(0));
        assert_eq!(b.stop().code(), Some(0));
    });
}

/// Sends only the head of a POST declaring a body of `length` bytes, and
/// reads what the server answers.
fn declared_only(port: u16, path: &str, length: usize) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nX-GitHub-Event: pull_request\r\nX-GitHub-Delivery: d-declared\r\nContent-Length: {length}\r\n\r\n"
    )
    .unwrap();
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

on_both_backends! {
    /// Issue 34: every body over 2 MiB got 413 (axum's own default cap on
    /// extracted bodies), webhooks and the API alike, whether `max_body`
    /// was its documented 5 MiB or 10 MiB, and the hint to raise it
    /// changed nothing. A body up to `max_body` is read; one over it is
    /// 413, and the hint to raise it is true.
    fn bodies_up_to_max_body_are_read_webhooks_and_api_alike() {
        const MIB: usize = 1 << 20;
        for (max_body, fits, too_big) in [(None, 3 * MIB, 6 * MIB), (Some("10MiB"), 9 * MIB, 11 * MIB)] {
            let p = TestProject::new();
            p.workflow("pr-flow", FLOW);
            let cfg = p.root().join(".baton/config.toml");
            let mut text = fs_err::read_to_string(&cfg).unwrap();
            text.push_str("\n[server]\nbranch_pattern = \"{task-id}\"\n");
            if let Some(m) = max_body {
                text.push_str(&format!("max_body = \"{m}\"\n"));
            }
            fs_err::write(&cfg, text).unwrap();
            fs_err::write(p.root().join("ready"), "").unwrap();
            assert_eq!(p.run(&["run", "pr-flow", "x", "--id", "changes"]).0, 4);
            let server = Server::start(&p, &[("BATON_SERVER_TOKEN", TOKEN)]);
            // GitHub's payload, grown by a field of its own (a push with
            // thousands of commits is this big).
            let padded = |size: usize| -> Vec<u8> {
                let mut v: Value = serde_json::from_slice(&fixture("pull_request/opened.payload.json")).unwrap();
                let body = serde_json::to_vec(&v).unwrap();
                v["padding"] = "x".repeat(size - body.len()).into();
                serde_json::to_vec(&v).unwrap()
            };
            let (status, v) = server.deliver("pull_request", "d-fits", &padded(fits));
            assert_eq!(status, 202, "{max_body:?}: {v}");
            assert_eq!(settled(&p, "d-fits")["decision"], "resumed");
            // A declared length over it is answered before any of the
            // body is sent (the server closes the connection then).
            let answer = declared_only(server.port, "/webhooks/github", too_big);
            assert!(answer.starts_with("HTTP/1.1 413"), "{max_body:?}: {answer}");
            assert!(answer.contains("max_body"), "{answer}");
            // The API reads a body up to max_body too: a comment this long
            // is judged on what it says, never cut off as too large.
            let comment = serde_json::json!({"text": "y".repeat(fits - 100)}).to_string();
            let r = agent()
                .post(&format!("{}/api/v1/tasks/changes/comments", server.url))
                .header("Authorization", format!("Bearer {TOKEN}"))
                .header("Content-Type", "application/json")
                .send(comment.as_bytes())
                .unwrap();
            assert_ne!(r.status().as_u16(), 413, "{max_body:?}");
            let answer = declared_only(server.port, "/api/v1/tasks/changes/comments", too_big);
            assert!(answer.starts_with("HTTP/1.1 413"), "{max_body:?}: {answer}");
            assert_eq!(server.stop().code(), Some(0));
        }
    }

    /// Issue 34: GitHub's redelivery of a delivery that was only ignored
    /// (same signed body, a new delivery id) was refused as a replay. Its
    /// first coming changed nothing, so it is handed over; a replay of a
    /// delivery that did something is still refused.
    fn a_redelivery_of_an_ignored_delivery_is_not_a_replay() {
        let p = project();
        let server = Server::start(&p, &[]);
        let opened = fixture("pull_request/opened.payload.json");
        let (status, v) = server.deliver("pull_request", "first", &opened);
        assert_eq!(status, 202, "{v}");
        assert_eq!(settled(&p, "first")["decision"], "ignored");
        fs_err::write(p.root().join("ready"), "").unwrap();
        assert_eq!(p.run(&["run", "pr-flow", "x", "--id", "changes"]).0, 4);
        let (status, v) = server.deliver("pull_request", "again", &opened);
        assert_eq!(status, 202, "handed over, not a replay: {v}");
        assert_eq!(settled(&p, "again")["decision"], "resumed");
        wait_for("the task to complete", || (p.state("changes")["status"] == "COMPLETE").then_some(()));
        let (status, v) = server.deliver("pull_request", "replayed", &opened);
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["redelivery"], true);
        assert_eq!(arrivals(&p, "changes"), 1);
    }
}
