//! The attacks of issue 23, each driven against the real binary: `baton
//! serve` over real sockets, `baton mcp` over its stdio, the CLI as a user
//! runs it. A local process that tries to pick where the server writes, a
//! web page that tries to act on the API, slow and idle connections that
//! try to hold the server, weak tokens, replayed webhook bodies and
//! malformed protocol messages: each is refused or harmless, and where
//! state is involved, on both stores. docs/security.md is the threat
//! model these trace to.

use baton_testkit::serve::{Server, TOKEN, WEBHOOK_SECRET, http, mcp_call, mcp_post, mcp_session};
use baton_testkit::{TestProject, on_both_backends, wait_child, wait_for};
use serde_json::{Value, json};
use std::io::{BufRead, Read, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

const FLOW: &str = baton_testkit::serve::PR_FLOW;

/// A phase that runs until `go-<task>` exists: its attempt stays in
/// progress as long as a test needs.
const HOLD: &str = "name = \"hold\"\n[[phase]]\nid = \"work\"\nrun = \"while [ ! -f go-$BATON_TASK_ID ]; do sleep 0.05; done\"\n";

fn project() -> TestProject {
    let p = TestProject::new();
    p.workflow("pr-flow", FLOW);
    p.workflow("hold", HOLD);
    config(&p, "[server]\nbranch_pattern = \"{task-id}\"\n");
    p
}

fn config(p: &TestProject, more: &str) {
    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    text.push('\n');
    text.push_str(more);
    fs_err::write(&cfg, text).unwrap();
}

fn fixture(path: &str) -> Vec<u8> {
    fs_err::read(baton_testkit::github_fixture(path)).unwrap()
}

/// Task `id` of workflow `hold`, started in the background: its phase
/// runs until [`release`].
fn hold(p: &TestProject, id: &str) -> std::process::Child {
    let child = p
        .baton(&["run", "hold", "x", "--id", id])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the phase to run", || {
        let (code, out, _) = p.run(&["show", id, "--json"]);
        let doc: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
        (code == 0 && doc["current_phase"]["status"] == "IN_PROGRESS").then_some(())
    });
    child
}

fn release(p: &TestProject, id: &str, mut child: std::process::Child) {
    fs_err::write(p.root().join(format!("go-{id}")), "").unwrap();
    assert!(wait_child(&mut child, "the held task").success());
}

fn grant(p: &TestProject, task: &str, phase: &str) -> String {
    let (code, out, err) = p.run(&["mcp", "grant", "--task", task, "--phase", phase]);
    assert_eq!(code, 0, "{err}");
    out.trim().to_string()
}

/// A request of any shape, its status and JSON answer.
fn request(method: &str, url: &str, headers: &[(&str, &str)], body: Option<&[u8]>) -> (u16, Value) {
    let agent = http();
    let mut resp = match method {
        "GET" => {
            let mut r = agent.get(url);
            for (k, v) in headers {
                r = r.header(*k, *v);
            }
            r.call()
        }
        _ => {
            let mut r = agent.post(url);
            for (k, v) in headers {
                r = r.header(*k, *v);
            }
            match body {
                Some(b) => r.send(b),
                None => r.send_empty(),
            }
        }
    }
    .unwrap();
    let status = resp.status().as_u16();
    let text = resp.body_mut().read_to_string().unwrap_or_default();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn signed(body: &[u8]) -> String {
    baton_server::signature::sign(WEBHOOK_SECRET, body)
}

fn deliver(server: &Server, event: &str, id: &str, body: &[u8]) -> (u16, Value) {
    let sig = signed(body);
    request(
        "POST",
        &format!("{}/webhooks/github", server.url),
        &[
            ("Content-Type", "application/json"),
            ("X-GitHub-Event", event),
            ("X-GitHub-Delivery", id),
            ("X-Hub-Signature-256", &sig),
        ],
        Some(body),
    )
}

on_both_backends! {
    /// Attack 1: a local process names `.baton/config.toml` as where a
    /// phase's report goes, hoping the next run executes its command.
    /// Refused over HTTP (no header names a path) with and without the
    /// person's token, and over stdio (the environment's path must lie in
    /// the task's run folder); the config is untouched and the next run
    /// runs nothing it did not say. A real capability writes only its own
    /// attempt's report, cannot claim another task, and ends with its phase.
    fn no_caller_picks_where_a_report_is_written() {
        let p = project();
        let cfg = p.root().join(".baton/config.toml");
        let before = fs_err::read_to_string(&cfg).unwrap();
        let evil = "[agents.claude]\ncommand = [\"sh\", \"-c\", \"touch pwned\"]\n";
        let t1 = hold(&p, "t1");
        let t2 = hold(&p, "t2");
        for token in [None, Some(TOKEN)] {
            let env: Vec<(&str, &str)> = token.map(|t| ("BATON_SERVER_TOKEN", t)).into_iter().collect();
            let server = Server::start(&p, &env);
            let bearer = token.map(|t| format!("Bearer {t}"));
            let mut headers = vec![("Baton-Summary-File", cfg.to_str().unwrap())];
            if let Some(b) = &bearer {
                headers.push(("Authorization", b.as_str()));
            }
            let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "phase_complete", "arguments": {"summary": evil}}});
            let (status, v, _) = mcp_post(&server.url, None, &headers, call.to_string().as_bytes());
            assert_eq!(status, 400, "{v:?}");
            assert_eq!(v.unwrap()["code"], "PATH_FROM_CALLER");
            // An identity claimed by a header alone is refused too.
            let mut headers = vec![("Baton-Task", "t1"), ("Baton-Phase", "work")];
            if let Some(b) = &bearer {
                headers.push(("Authorization", b.as_str()));
            }
            let (status, v, _) = mcp_post(&server.url, None, &headers, call.to_string().as_bytes());
            assert_eq!(status, 403, "{v:?}");
            assert_eq!(v.unwrap()["code"], "IDENTITY_NEEDS_CAPABILITY");
            assert_eq!(server.stop().code(), Some(0));
        }
        // Over stdio, from the environment: refused, said why.
        let out = stdio_mcp(
            &p,
            &[
                ("BATON_TASK_ID", "t1"),
                ("BATON_PHASE", "work"),
                ("BATON_SUMMARY_FILE", cfg.to_str().unwrap()),
            ],
            &[json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "phase_complete", "arguments": {"summary": evil}}})],
        );
        let text = out[1]["result"]["content"][0]["text"].as_str().unwrap_or_default();
        assert_eq!(out[1]["result"]["isError"], true, "{out:?}");
        assert!(text.contains("lies outside"), "{text}");
        // A symlink planted in the run folder leads nowhere either.
        let run = p.root().join(".baton/tasks/t1/run");
        std::os::unix::fs::symlink(&cfg, run.join("01-work.i0.a9.summary")).unwrap();
        let out = stdio_mcp(
            &p,
            &[
                ("BATON_TASK_ID", "t1"),
                ("BATON_SUMMARY_FILE", run.join("01-work.i0.a9.summary").to_str().unwrap()),
            ],
            &[json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "phase_complete", "arguments": {"summary": evil}}})],
        );
        assert!(
            out[1]["result"]["content"][0]["text"].as_str().unwrap_or_default().contains("symlink"),
            "{out:?}"
        );
        assert_eq!(fs_err::read_to_string(&cfg).unwrap(), before, "the config is untouched");

        // A capability: its own attempt's report only.
        let server = Server::start(&p, &[("BATON_SERVER_TOKEN", TOKEN)]);
        let cap = format!("Bearer {}", grant(&p, "t1", "work"));
        let me = [("Authorization", cap.as_str())];
        let sid = mcp_session(&server.url, &me);
        let (_, v) = mcp_call(&server.url, &sid, &me, "phase_complete", json!({"summary": "t1's own"}));
        assert_ne!(v["result"]["isError"], true, "{v}");
        let claims = [("Authorization", cap.as_str()), ("Baton-Task", "t2")];
        let (status, v, _) = mcp_post(&server.url, Some(&sid), &claims,
            br#"{"jsonrpc": "2.0", "id": 3, "method": "tools/list"}"#);
        assert_eq!(status, 403, "{v:?}");
        assert_eq!(v.unwrap()["code"], "IDENTITY_MISMATCH");
        release(&p, "t1", t1);
        release(&p, "t2", t2);
        assert_eq!(p.state("t1")["completed_phases"][0]["summary"], "t1's own");
        assert_ne!(p.state("t2")["completed_phases"][0]["summary"], "t1's own");
        let (status, v, _) = mcp_post(&server.url, Some(&sid), &me,
            br#"{"jsonrpc": "2.0", "id": 4, "method": "tools/list"}"#);
        assert_eq!((status, v.unwrap()["code"].clone()), (401, json!("CAPABILITY_VOID")));
        assert_eq!(server.stop().code(), Some(0));
        // The next run runs what the config says, nothing else.
        p.workflow("plain", "name = \"plain\"\n[[phase]]\nid = \"a\"\nrun = \"true\"\n");
        assert_eq!(p.run(&["run", "plain", "x", "--id", "t3"]).0, 0);
        assert!(!p.root().join("pwned").exists());
    }

    /// Attack 2: a web page in the user's browser sends the requests a
    /// browser sends without asking (a body-less POST, `text/plain`, a
    /// foreign Origin), or reaches the server by a rebound name. Nothing
    /// changes and nothing is read; the dashboard's own requests work.
    fn a_web_page_cannot_act_on_the_api_or_read_it() {
        let p = project();
        fs_err::write(p.root().join("ready"), "").unwrap();
        assert_eq!(p.run(&["run", "pr-flow", "x", "--id", "waiting"]).0, 4);
        p.workflow("fails", "name = \"fails\"\n[[phase]]\nid = \"deploy\"\nrun = \"echo deployed >> deploys.txt; exit 1\"\nmax_attempts = 1\n");
        assert_eq!(p.run(&["run", "fails", "x", "--id", "failed"]).0, 1);
        let server = Server::start(&p, &[]);
        let url = |path: &str| format!("{}{path}", server.url);
        for (what, headers) in [
            ("a foreign Origin", vec![("Origin", "https://evil.example"), ("Content-Type", "text/plain")]),
            ("no JSON", vec![("Content-Type", "text/plain")]),
            ("a form", vec![("Content-Type", "application/x-www-form-urlencoded")]),
            ("a null Origin", vec![("Origin", "null"), ("Content-Type", "application/json")]),
            ("another port", vec![("Origin", "http://127.0.0.1:1"), ("Content-Type", "application/json")]),
        ] {
            let (status, v) = request("POST", &url("/api/v1/tasks/waiting/cancel"), &headers, Some(b"x"));
            assert!(status == 403 || status == 415, "{what}: {status} {v}");
            assert!(v["hint"].as_str().is_some_and(|h| !h.is_empty()), "{what}: {v}");
            let (status, _) = request("POST", &url("/api/v1/tasks/failed/resume"), &headers, None);
            assert!(status == 403 || status == 415, "{what}: {status}");
        }
        // DNS rebinding: the page's own name, resolved to this machine.
        let (status, v) = request("GET", &url("/api/v1/tasks/waiting/journal"), &[("Host", "attacker.example:7777")], None);
        assert_eq!((status, v["code"].as_str()), (403, Some("FORBIDDEN_HOST")), "{v}");
        let (status, _) = request("GET", &url("/"), &[("Host", "attacker.example")], None);
        assert_eq!(status, 403);
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(p.state("waiting")["status"], "WAITING");
        assert_eq!(p.state("failed")["status"], "FAILED");
        assert_eq!(fs_err::read_to_string(p.root().join("deploys.txt")).unwrap(), "deployed\n", "not re-run");
        // What the dashboard sends: its own origin, as JSON.
        let origin = server.url.clone();
        let (status, v) = request(
            "POST",
            &url("/api/v1/tasks/waiting/cancel"),
            &[("Origin", origin.as_str()), ("Content-Type", "application/json")],
            None,
        );
        assert_eq!(status, 200, "{v}");
        wait_for("the cancel", || (p.state("waiting")["status"] == "CANCELLED").then_some(()));
        // The page and every answer keep out of frames and sniffing.
        let resp = http().get(&url("/")).call().unwrap();
        let h = |k: &str| resp.headers().get(k).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
        assert!(h("content-security-policy").contains("frame-ancestors 'none'"), "{}", h("content-security-policy"));
        assert!(h("content-security-policy").contains("script-src 'self'"));
        assert_eq!(h("x-frame-options"), "DENY");
        assert_eq!(h("x-content-type-options"), "nosniff");
        assert_eq!(h("referrer-policy"), "no-referrer");
        assert_eq!(server.stop().code(), Some(0));
    }

    /// Attack 7's last part, as a journey: a delivery resumes the task at
    /// `wait-pr`; rewound to wait there again, the same signed body
    /// captured and sent under a new delivery id is a redelivery and
    /// resumes nothing; GitHub's next event does.
    fn a_replayed_signed_body_resumes_nothing() {
        let p = project();
        fs_err::write(p.root().join("ready"), "").unwrap();
        assert_eq!(p.run(&["run", "pr-flow", "x", "--id", "changes"]).0, 4);
        let server = Server::start(&p, &[]);
        let opened = fixture("pull_request/opened.payload.json");
        assert_eq!(deliver(&server, "pull_request", "d-first", &opened).0, 202);
        wait_for("the task to complete", || (p.state("changes")["status"] == "COMPLETE").then_some(()));
        let (code, _, err) = p.run(&["resume", "changes", "--from", "wait-pr"]);
        assert_eq!(code, 4, "{err}");
        let (status, v) = deliver(&server, "pull_request", "d-replayed", &opened);
        assert_eq!((status, &v["redelivery"]), (200, &Value::Bool(true)), "{v}");
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(p.state("changes")["status"], "WAITING");
        let (_, out, _) = p.run(&["deliveries", "--json"]);
        assert!(!out.contains("d-replayed"), "{out}");
        let next = [opened.as_slice(), b"\n"].concat();
        assert_eq!(deliver(&server, "pull_request", "d-next", &next).0, 202);
        wait_for("the task to complete", || (p.state("changes")["status"] == "COMPLETE").then_some(()));
        assert_eq!(p.state("changes")["stage_results"]["wait-pr"]["delivery"], "d-next");
        assert_eq!(server.stop().code(), Some(0));
    }
}

/// Runs `baton mcp` with `env`, sends initialize and then `messages`
/// (raw lines when strings), and returns every answer line.
fn stdio_lines(p: &TestProject, env: &[(&str, &str)], lines: &[String]) -> Vec<Value> {
    let mut cmd = p.baton(&["mcp"]);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    writeln!(stdin, "{init}").unwrap();
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .unwrap();
    for l in lines {
        stdin.write_all(l.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
    }
    stdin.flush().unwrap();
    // One answer for the initialize and one for each line; then stdin
    // closes and the server ends.
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut answers = Vec::new();
    while answers.len() < 1 + lines.len() {
        let mut line = String::new();
        if out.read_line(&mut line).unwrap() == 0 {
            break;
        }
        answers.push(serde_json::from_str::<Value>(&line).unwrap());
    }
    drop(stdin);
    let _ = child.wait();
    answers
}

fn stdio_mcp(p: &TestProject, env: &[(&str, &str)], messages: &[Value]) -> Vec<Value> {
    let lines: Vec<String> = messages.iter().map(|m| m.to_string()).collect();
    stdio_lines(p, env, &lines)
}

/// Attack 7, MCP: a line that is not JSON, arguments that are not an
/// object, an argument of the wrong type, a 3 MB note: each gets the
/// answer the protocol names (-32700, -32602) or a tool error the agent
/// can correct (`WORKFLOW_INVALID_ARGUMENTS` with a hint), over stdio and
/// over HTTP alike, and nothing is stored.
#[test]
fn malformed_mcp_messages_get_the_errors_the_protocol_names() {
    let p = project();
    let big = "x".repeat(3 << 20);
    let lines = vec![
        "this is not json".to_string(),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "checkpoint", "arguments": "x"}}).to_string(),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "notify", "arguments": {"message": 3}}}).to_string(),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "notify", "arguments": {"message": big}}}).to_string(),
        json!({"jsonrpc": "2.0", "id": 5, "method": "no/such"}).to_string(),
    ];
    let out = stdio_lines(&p, &[], &lines);
    let by_id = |id: Value| {
        out.iter()
            .find(|a| a["id"] == id)
            .unwrap_or_else(|| panic!("no answer {id}: {out:?}"))
            .clone()
    };
    assert_eq!(by_id(Value::Null)["error"]["code"], -32700, "{out:?}");
    assert_eq!(by_id(json!(2))["error"]["code"], -32602);
    let typed = by_id(json!(3));
    assert_eq!(typed["result"]["isError"], true, "{typed}");
    let text = typed["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("WORKFLOW_INVALID_ARGUMENTS: `message` of notify must be a string"),
        "{text}"
    );
    assert!(text.contains("\nhint: "), "{text}");
    let huge = by_id(json!(4));
    let text = huge["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("more than 65536 bytes"), "{text}");
    assert_eq!(by_id(json!(5))["error"]["code"], -32601);
    let (code, out, _) = p.run(&["inbox", "--all", "--json"]);
    assert_eq!((code, out.trim()), (0, "[]"), "nothing was stored");

    // The same over HTTP.
    let server = Server::start(&p, &[]);
    let (status, v, _) = mcp_post(&server.url, None, &[], b"this is not json");
    assert_eq!(status, 400);
    assert_eq!(v.unwrap()["error"]["code"], -32700);
    let sid = mcp_session(&server.url, &[]);
    let (_, v, _) = mcp_post(&server.url, Some(&sid), &[], lines[1].as_bytes());
    assert_eq!(v.unwrap()["error"]["code"], -32602);
    let (_, v) = mcp_call(&server.url, &sid, &[], "notify", json!({"message": 3}));
    assert!(
        v["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("WORKFLOW_INVALID_ARGUMENTS"),
        "{v}"
    );
    assert_eq!(server.stop().code(), Some(0));
}

/// Attack 7, the API: every error in the documented shape, the
/// framework's own included; an unknown filter value is refused; the
/// auth scheme is read in any case.
#[test]
fn every_api_error_keeps_the_documented_shape() {
    let p = project();
    let server = Server::start(&p, &[("BATON_SERVER_TOKEN", TOKEN)]);
    let auth = format!("Bearer {TOKEN}");
    let url = |path: &str| format!("{}{path}", server.url);
    let a = [("Authorization", auth.as_str())];
    for (method, path, body, status, code) in [
        ("GET", "/api/v1/tasks?status=BOGUS", None, 400, "BAD_FILTER"),
        ("GET", "/api/v1/tasks?label=oops", None, 400, "BAD_FILTER"),
        (
            "GET",
            "/api/v1/tasks/x/journal?limit=lots",
            None,
            400,
            "BAD_QUERY",
        ),
        ("GET", "/api/v1/tasks?sort=age", None, 400, "BAD_QUERY"),
        (
            "POST",
            "/api/v1/tasks/x/answer",
            Some(&b"{not json"[..]),
            400,
            "BAD_BODY",
        ),
        (
            "POST",
            "/api/v1/tasks/x/answer",
            Some(&b"{\"answer\": 3}"[..]),
            400,
            "BAD_BODY",
        ),
        ("GET", "/api/v1/nothing-here", None, 404, "NOT_FOUND"),
        ("GET", "/webhooks/github", None, 405, "METHOD_NOT_ALLOWED"),
        ("GET", "/api/v1/tasks/nope", None, 404, "TASK_NOT_FOUND"),
    ] {
        let mut headers = a.to_vec();
        headers.push(("Content-Type", "application/json"));
        let (got, v) = request(method, &url(path), &headers, body);
        assert_eq!(
            (got, v["code"].as_str()),
            (status, Some(code)),
            "{method} {path}: {v}"
        );
        assert!(v["message"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
        assert!(v["hint"].as_str().is_some_and(|h| !h.is_empty()), "{v}");
    }
    for scheme in ["bearer", "BEARER", "Bearer"] {
        let h = format!("{scheme} {TOKEN}");
        assert_eq!(
            request("GET", &url("/api/v1/tasks"), &[("Authorization", &h)], None).0,
            200,
            "{scheme}"
        );
    }
    // ?access_token only where a browser cannot send a header.
    let (status, v) = request(
        "GET",
        &url(&format!("/api/v1/tasks?access_token={TOKEN}")),
        &[],
        None,
    );
    assert_eq!(
        (status, v["code"].as_str()),
        (401, Some("UNAUTHORIZED")),
        "{v}"
    );
    let resp = http()
        .get(&url(&format!("/api/v1/stream?access_token={TOKEN}")))
        .config()
        .timeout_global(Some(Duration::from_secs(2)))
        .build()
        .call();
    assert_eq!(resp.map(|r| r.status().as_u16()).unwrap_or(0), 200);
    assert_eq!(server.stop().code(), Some(0));
}

/// Attack 4: weak tokens are refused with how to make one; `--new-token`
/// makes one that only its owner can read and serves with it; a token
/// file others can read is refused.
#[test]
fn tokens_must_be_worth_the_name() {
    use std::os::unix::fs::PermissionsExt;
    let p = project();
    for weak in [
        " ",
        "s3cret",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    ] {
        for addr in ["0.0.0.0:0", "127.0.0.1:0"] {
            let out = p
                .baton(&["serve", "--addr", addr])
                .env("BATON_SERVER_TOKEN", weak)
                .output()
                .unwrap();
            let (code, err) = (
                out.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&out.stderr),
            );
            assert_eq!(code, 2, "{weak:?} on {addr}: {err}");
            assert!(err.contains("too weak"), "{err}");
            assert!(err.contains("--new-token"), "{err}");
        }
    }
    let port = baton_testkit::free_port();
    let mut child = p
        .baton(&[
            "serve",
            "--new-token",
            "--addr",
            &format!("127.0.0.1:{port}"),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    err.read_line(&mut first).unwrap();
    let file = p.root().join(".baton/server.token");
    let token = fs_err::read_to_string(&file).unwrap().trim().to_string();
    assert_eq!(token.len(), 64, "{token}");
    assert!(first.contains(".baton/server.token"), "{first}");
    assert_eq!(
        fs_err::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert!(
        fs_err::read_to_string(p.root().join(".baton/.gitignore"))
            .unwrap()
            .contains("server.token")
    );
    let url = format!("http://127.0.0.1:{port}/api/v1/tasks");
    let ok = wait_for("the server", || {
        http()
            .get(&url)
            .header("Authorization", &format!("Bearer {token}"))
            .call()
            .ok()
    });
    assert_eq!(ok.status(), 200);
    assert_eq!(http().get(&url).call().unwrap().status(), 401);
    let _ = child.kill();
    let _ = child.wait();
    // Readable by others: refused, said how to fix it.
    fs_err::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (code, _, err) = p.run(&["serve", "--addr", "127.0.0.1:0"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("chmod 600"), "{err}");
}

/// Attack 3: twenty thousand connections that send part of a request head
/// and then nothing, and a `Content-Length` of 10 GB. The server keeps
/// its descriptors bounded, answers `/healthz` and a signed webhook while
/// the flood holds, and refuses the huge body at once with 413.
#[test]
fn slow_and_idle_connections_do_not_hold_the_server() {
    let p = project();
    config(&p, "header_timeout = \"5s\"\nmax_connections = 256\n");
    let server = Server::start(&p, &[]);
    let port = server.port.to_string();
    // The flood, held by a process of its own (its descriptors are its
    // own): it says how many it holds, then waits for its stdin to close.
    let script = r#"
import socket, sys, resource
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
port = int(sys.argv[1]); held = []
for i in range(min(20000, hard - 64)):
    s = socket.socket(); s.setblocking(False)
    try: s.connect(("127.0.0.1", port))
    except BlockingIOError: pass
    except OSError: break
    held.append(s)
sent = 0
for s in held:
    try: s.send(b"POST /webhooks/github HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "); sent += 1
    except OSError: pass
print(len(held), sent, flush=True)
sys.stdin.read()
"#;
    let mut flood = std::process::Command::new("python3")
        .args(["-c", script, &port])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 (./scripts/test installs it)");
    let mut said = String::new();
    std::io::BufReader::new(flood.stdout.take().unwrap())
        .read_line(&mut said)
        .unwrap();
    let held: usize = said.split_whitespace().next().unwrap().parse().unwrap();
    assert!(
        held >= 19_000,
        "the flood held only {held} connections: raise the hard descriptor limit (ulimit -Hn) to 20,064 or more"
    );
    let fds = || {
        fs_err::read_dir(format!("/proc/{}/fd", server.child.id()))
            .unwrap()
            .count()
    };
    let t = Instant::now();
    let health = http()
        .get(&format!("{}/healthz", server.url))
        .call()
        .unwrap();
    assert_eq!(health.status(), 200);
    let ping = fixture("ping/payload.json");
    let (status, v) = deliver(&server, "ping", "d-ping", &ping);
    assert_eq!(status, 200, "{v}");
    assert!(
        t.elapsed() < Duration::from_secs(15),
        "answered after {:?}",
        t.elapsed()
    );
    assert!(fds() < 256 + 64, "the server holds {} descriptors", fds());
    // A declared body of 10 GB: 413 before a byte of it is sent.
    let mut s = std::net::TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "POST /webhooks/github HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 10000000000\r\n\r\n").unwrap();
    let mut head = [0u8; 12];
    s.read_exact(&mut head).unwrap();
    assert_eq!(&head, b"HTTP/1.1 413");
    drop(flood.stdin.take());
    let _ = flood.wait();
    assert_eq!(server.stop().code(), Some(0));
}

/// Agents authenticate as what they claim: a teammate baton started
/// (its team and name in its environment) that names another member in a
/// team tool's `as` or `team` is refused, and nothing is sent.
#[test]
fn a_teammate_cannot_act_as_another() {
    let p = project();
    let env = [("BATON_TEAM", "crew"), ("BATON_TEAMMATE", "alice")];
    let out = stdio_mcp(
        &p,
        &env,
        &[
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "team_send",
                "arguments": {"as": "bob", "to": "lead", "body": "bob says ship it"}}}),
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "team_inbox",
                "arguments": {"team": "other-team"}}}),
        ],
    );
    for id in [2, 3] {
        let a = out
            .iter()
            .find(|a| a["id"] == id)
            .unwrap_or_else(|| panic!("{out:?}"));
        assert_eq!(a["result"]["isError"], true, "{a}");
        let text = a["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("you are alice of team crew"), "{text}");
    }
}

/// Every file under `root` (skipping git's own folder), as bytes.
fn every_file(root: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let path = e.path();
            let kind = e.file_type().unwrap();
            if kind.is_dir() && e.file_name() != ".git" {
                dirs.push(path);
            } else if kind.is_file() {
                out.push((path.clone(), std::fs::read(&path).unwrap_or_default()));
            }
        }
    }
    out
}

/// Issue 35, its secrets part: a secret baton knows of (the store URL's
/// password, the way docs/config.md recommends giving it, tokens, API
/// keys, the webhook secret) landed in `state.json`, the phase's output,
/// the logs and the session log when a phase printed it. Each is planted,
/// printed by a phase and written as its summary, and every file baton
/// wrote is searched.
#[test]
fn secrets_baton_knows_of_never_reach_a_file_it_writes() {
    baton_testkit::with_backend(baton_testkit::Backend::Postgres, || {
        let mut p = TestProject::new();
        let url = p.database_url.clone().unwrap();
        // The test cluster trusts its superuser: any password connects.
        p.database_url = Some(url.replacen("postgres@", "postgres:Db-Pa55word-7@", 1));
        let planted = [
            ("GITHUB_TOKEN", "ghp_PlantedToken0123456789abcdefghijklmn"),
            ("ANTHROPIC_API_KEY", "sk-ant-planted-0123456789abcdefghij"),
            ("BATON_WEBHOOK_SECRET", "planted-webhook-secret-42"),
            ("MY_SERVICE_PASSWORD", "planted-service-pw-17"),
        ];
        p.workflow(
            "leak",
            "name = \"leak\"\n[[phase]]\nid = \"a\"\nrun = '''echo \"db=$BATON_DATABASE_URL gh=$GITHUB_TOKEN key=$ANTHROPIC_API_KEY hook=$BATON_WEBHOOK_SECRET pw=$MY_SERVICE_PASSWORD\"; echo \"$BATON_DATABASE_URL $MY_SERVICE_PASSWORD\" > \"$BATON_SUMMARY_FILE\"; echo \"$GITHUB_TOKEN\" >&2'''\n[[phase]]\nid = \"b\"\nrun = '''echo \"done with $MY_SERVICE_PASSWORD\"'''\n",
        );
        let mut c = p.baton(&["run", "leak", "x", "--id", "s1"]);
        for (k, v) in planted {
            c.env(k, v);
        }
        let out = c.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let (code, _, err) = p.run(&["session", "ls"]);
        assert_eq!(code, 0, "{err}");
        let files = every_file(&p.root().join(".baton"));
        assert!(files.len() > 5, "{} files", files.len());
        for secret in planted.iter().map(|(_, v)| *v).chain(["Db-Pa55word-7"]) {
            for (path, bytes) in &files {
                assert!(
                    !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                    "{secret} is in {}",
                    path.display()
                );
            }
        }
        // What was said around them is kept.
        let doc = p.state("s1");
        assert!(
            doc["completed_phases"][0]["summary"]
                .as_str()
                .unwrap()
                .contains("[REDACTED:"),
            "{doc}"
        );
    });
}
