//! A real `baton serve` for the tests: started on a free loopback port
//! against a [`TestProject`], waited for until `/healthz` answers, stopped
//! with SIGTERM (or killed when dropped); and the HTTP clients the tests
//! talk to it with (plain requests, and MCP's Streamable HTTP).

use crate::{TestProject, wait_child, wait_for};
use serde_json::Value;
use std::process::{Child, Stdio};

/// A workflow that waits for a pull request: `implementation` passes once
/// the file `ready` exists, `wait-pr` waits for `pull_request.opened`
/// naming the task, `after` appends the PR's number to `after.txt`.
pub const PR_FLOW: &str = r#"name = "pr-flow"
[[phase]]
id = "implementation"
run = "test -f ready"
max_attempts = 1
[[phase]]
id = "wait-pr"
wait = { event = "github.pull_request.opened", match = { "task-id" = "{{labels.task-id}}" } }
[[phase]]
id = "after"
run = "echo pr {{labels.pr-number}} >> after.txt"
"#;

/// The webhook secret the servers here are started with.
pub const WEBHOOK_SECRET: &str = "It's a Secret to Everybody";

/// An API token strong enough for `baton serve` (32 random bytes, hex).
pub const TOKEN: &str = "3f9c2a7d41e85b06c9d2f17a8e4b3c50d6a19f2e7b84c03d5e6f1a2b9c8d7e60";

/// A running `baton serve`, stopped (SIGTERM) by [`Server::stop`] or
/// killed when dropped.
pub struct Server {
    pub child: Child,
    pub url: String,
    pub port: u16,
    log: std::path::PathBuf,
}

impl Server {
    /// Starts `baton serve` on `127.0.0.1:<free port>` with the webhook
    /// secret and `env`, and waits until it answers.
    pub fn start(p: &TestProject, env: &[(&str, &str)]) -> Server {
        let port = crate::free_port();
        let addr = format!("127.0.0.1:{port}");
        let log = p.root().join(format!("serve-{port}.log"));
        let file = fs_err::File::create(&log).unwrap();
        let mut cmd = p.baton(&["serve", "--addr", &addr]);
        cmd.env("BATON_WEBHOOK_SECRET", WEBHOOK_SECRET)
            .stdout(Stdio::null())
            .stderr(file.into_parts().0);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        let url = format!("http://{addr}");
        let server_log = log.clone();
        wait_for("baton serve to listen", || {
            if let Some(s) = child.try_wait().unwrap() {
                panic!(
                    "baton serve exited at once ({s}): {}",
                    fs_err::read_to_string(&server_log).unwrap_or_default()
                );
            }
            http()
                .get(&format!("{url}/healthz"))
                .call()
                .ok()
                .filter(|r| r.status() == 200)
        });
        Server {
            child,
            url,
            port,
            log,
        }
    }

    /// What the server printed so far.
    pub fn log(&self) -> String {
        fs_err::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGTERM, and the exit status.
    pub fn stop(mut self) -> std::process::ExitStatus {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let s = wait_child(&mut self.child, "baton serve after SIGTERM");
        std::mem::forget(self);
        s
    }
}

impl Drop for Server {
    /// A test that ends early (a panic) stops the server as [`Server::stop`]
    /// does, SIGTERM first, so the task runs it started stop with it
    /// instead of being left running; SIGKILL after 10 s.
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::time::Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP client that hands back every status instead of failing on 4xx.
pub fn http() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into()
}

/// One JSON-RPC message to `/mcp`, as a Streamable HTTP client sends it;
/// the status, the answer (from a JSON body or the SSE stream's data
/// line) and the session id.
pub fn mcp_post(
    url: &str,
    session: Option<&str>,
    headers: &[(&str, &str)],
    msg: &[u8],
) -> (u16, Option<Value>, Option<String>) {
    let mut req = http()
        .post(&format!("{url}/mcp"))
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream");
    if let Some(s) = session {
        req = req
            .header("Mcp-Session-Id", s)
            .header("Mcp-Protocol-Version", "2025-06-18");
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let mut resp = req.send(msg).unwrap();
    let status = resp.status().as_u16();
    let sid = resp
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let text = resp.body_mut().read_to_string().unwrap_or_default();
    let answer = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .find_map(|l| serde_json::from_str::<Value>(l).ok())
        .or_else(|| serde_json::from_str(&text).ok());
    (status, answer, sid)
}

/// An initialised MCP session on `url`'s `/mcp` with `headers` on every
/// message: its id.
pub fn mcp_session(url: &str, headers: &[(&str, &str)]) -> String {
    let init = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}});
    let (status, answer, sid) = mcp_post(url, None, headers, init.to_string().as_bytes());
    assert_eq!(status, 200, "initialize: {answer:?}");
    let sid = sid.expect("a session id");
    let (status, _, _) = mcp_post(
        url,
        Some(&sid),
        headers,
        br#"{"jsonrpc": "2.0", "method": "notifications/initialized"}"#,
    );
    assert_eq!(status, 202);
    sid
}

/// Calls tool `name` with `arguments` in session `sid`: the JSON-RPC
/// answer.
pub fn mcp_call(
    url: &str,
    sid: &str,
    headers: &[(&str, &str)],
    name: &str,
    arguments: Value,
) -> (u16, Value) {
    let msg = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": name, "arguments": arguments}});
    let (status, answer, _) = mcp_post(url, Some(sid), headers, msg.to_string().as_bytes());
    (status, answer.unwrap_or(Value::Null))
}
