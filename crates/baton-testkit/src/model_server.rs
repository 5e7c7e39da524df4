//! A scripted model server: the real agent CLIs run against it on
//! 127.0.0.1 instead of a provider, and it answers from a script.
//!
//! It speaks, with SSE streaming, the four wire protocols the CLIs use: the
//! Anthropic Messages API (`POST /v1/messages`, Claude Code), the OpenAI
//! Responses API (`POST /v1/responses`, Codex), the OpenAI Chat Completions
//! API (`POST /v1/chat/completions`, Qwen Code, OpenCode) and the Gemini
//! API (`POST /v1beta/models/M:streamGenerateContent` and
//! `:generateContent`, Gemini CLI). Every model request takes the next
//! [`Reply`] of the script (after the last one: a plain "done"), whichever
//! protocol it came in; side requests (token counts, model lists) are
//! answered without taking a turn. Every request is recorded, so a test can
//! check what a CLI sent (its prompt, the handoff brief, the memory file,
//! the tools it offered).
//!
//! A scripted tool call is fitted to the request it answers: parameters
//! the CLI's own tool schema requires and the script left out are filled
//! (droid's `Execute` wants a `summary` matching a pattern and a
//! `riskLevelReason`), and Copilot's `create`, which refuses a path that
//! exists, becomes a `bash` write when the file is already there (a
//! resumed phase writing it again). Factory's `/api/...` calls (droid
//! outside airgap mode) get a stub answer. `{{agent_id}}` in a scripted
//! tool call's arguments becomes the `agent_id` the CLI's last tool result
//! in the request gave (Codex's `spawn_agent` answers with one).
//!
//! A conversation the CLI starts itself (a subagent) can follow a script
//! of its own ([`ModelServer::start_with_branches`]): a request whose
//! latest user message (or message from another agent) holds a branch's
//! words takes the next reply of that branch, so which agent asks first
//! does not change who gets what.
//!
//! Plain `std` networking: one thread per connection, HTTP/1.1 with
//! `Connection: close`, streamed bodies delimited by the close.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use wire::{Body, Usage, Wire, anthropic, chat, error_body, gemini, reply_len, responses};

mod wire;

/// One scripted model turn: some text, and/or one tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub text: Option<String>,
    pub tool: Option<ToolCall>,
    /// Never answer: hold the request open until the server stops (a
    /// model that is still thinking when the test kills something).
    pub hang: bool,
    /// Answer with this HTTP error status instead (an API key refused, a
    /// rate limit), in the protocol's own error shape.
    pub fail: Option<u16>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub name: String,
    pub args: Value,
}

impl Reply {
    pub fn text(t: &str) -> Reply {
        Reply {
            text: Some(t.into()),
            tool: None,
            hang: false,
            fail: None,
        }
    }
    /// A turn answered with HTTP error `status` (see [`Reply::fail`]).
    pub fn fail(status: u16) -> Reply {
        Reply {
            text: None,
            tool: None,
            hang: false,
            fail: Some(status),
        }
    }
    /// A turn that is never answered (see [`Reply::hang`]).
    pub fn hang() -> Reply {
        Reply {
            text: None,
            tool: None,
            hang: true,
            fail: None,
        }
    }
    pub fn tool(name: &str, args: Value) -> Reply {
        Reply {
            text: None,
            tool: Some(ToolCall {
                name: name.into(),
                args,
            }),
            hang: false,
            fail: None,
        }
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    /// Path and query.
    pub path: String,
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`Value::Null` if it was empty or not JSON).
    pub body: Value,
    /// Which turn of the script it took (`None`: a side request).
    pub turn: Option<usize>,
}

struct Shared {
    script: Vec<Reply>,
    /// The next reply of `script`.
    cursor: AtomicUsize,
    /// (words of the conversation's latest user message, its script, its
    /// next reply).
    branches: Vec<(String, Vec<Reply>, AtomicUsize)>,
    /// Model requests so far (every script's turns).
    next: AtomicUsize,
    requests: Mutex<Vec<Recorded>>,
    stop: AtomicBool,
}

pub struct ModelServer {
    port: u16,
    shared: Arc<Shared>,
}

impl ModelServer {
    /// Starts serving `script` on a free port of 127.0.0.1.
    pub fn start(script: Vec<Reply>) -> ModelServer {
        ModelServer::start_with_branches(script, Vec::new())
    }

    /// Starts serving `script`, except to the conversations whose latest
    /// user message holds the words of one of `branches`: those take the
    /// replies of that branch's script, in order.
    pub fn start_with_branches(
        script: Vec<Reply>,
        branches: Vec<(&str, Vec<Reply>)>,
    ) -> ModelServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().expect("addr").port();
        let shared = Arc::new(Shared {
            script,
            cursor: AtomicUsize::new(0),
            branches: branches
                .into_iter()
                .map(|(words, replies)| (words.to_string(), replies, AtomicUsize::new(0)))
                .collect(),
            next: AtomicUsize::new(0),
            requests: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
        });
        let s = shared.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.stop.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(conn) = conn else { continue };
                let s = s.clone();
                std::thread::spawn(move || {
                    let _ = serve(conn, &s);
                });
            }
        });
        ModelServer { port, shared }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared
            .requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The model requests (those that took a turn).
    pub fn model_requests(&self) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.turn.is_some())
            .collect()
    }

    /// How many turns of the script were taken.
    pub fn turns_taken(&self) -> usize {
        self.shared.next.load(Ordering::SeqCst)
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn serve(conn: TcpStream, s: &Shared) -> std::io::Result<()> {
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let path = parts.next().unwrap_or("").to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h == "\r\n" || h == "\n" {
            break;
        }
        if let Some((k, v)) = h.trim_end().split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let header = |k: &str| {
        headers
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    };
    let mut raw = Vec::new();
    if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size)?;
            let n = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16)
                .unwrap_or(0);
            if n == 0 {
                let mut end = String::new();
                let _ = reader.read_line(&mut end);
                break;
            }
            let mut chunk = vec![0; n];
            reader.read_exact(&mut chunk)?;
            raw.extend(chunk);
            let mut crlf = String::new();
            reader.read_line(&mut crlf)?;
        }
    } else if let Some(n) = header("content-length").and_then(|v| v.parse::<usize>().ok()) {
        raw = vec![0; n];
        reader.read_exact(&mut raw)?;
    }
    let body: Value = serde_json::from_slice(&raw).unwrap_or(Value::Null);
    let bare = path.split('?').next().unwrap_or("");
    let wire = if method != "POST" {
        None
    } else if bare.ends_with("/messages") {
        Some(Wire::Anthropic)
    } else if bare.ends_with("/responses") {
        Some(Wire::Responses)
    } else if bare.ends_with("/chat/completions") {
        Some(Wire::Chat)
    } else if bare.ends_with(":streamGenerateContent") {
        Some(Wire::Gemini { stream: true })
    } else if bare.ends_with(":generateContent") {
        Some(Wire::Gemini { stream: false })
    } else {
        None
    };
    // A CLI's own housekeeping (a title for the session) is answered
    // without taking a turn of the script.
    let chore = wire.filter(|_| is_housekeeping(&body));
    let turn = wire
        .filter(|_| chore.is_none())
        .map(|_| s.next.fetch_add(1, Ordering::SeqCst));
    s.requests
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(Recorded {
            method: method.clone(),
            path: path.clone(),
            headers: headers.clone(),
            body: body.clone(),
            turn,
        });
    let mut out = conn;
    let (wire, reply, turn) = match (wire, turn, chore) {
        (Some(wire), Some(turn), _) => {
            let latest = latest_ask(&body);
            let (script, cursor) = s
                .branches
                .iter()
                .find(|(words, _, _)| latest.contains(words.as_str()))
                .map_or((&s.script, &s.cursor), |(_, script, cursor)| {
                    (script, cursor)
                });
            let reply = script
                .get(cursor.fetch_add(1, Ordering::SeqCst))
                .cloned()
                .unwrap_or_else(|| Reply::text("done"));
            (wire, fitted(reply, &body), turn)
        }
        (Some(wire), None, Some(_)) => (wire, Reply::text("Scripted task"), usize::MAX),
        _ => return side_request(&mut out, &method, bare, &body),
    };
    if reply.hang {
        while !s.stop.load(Ordering::SeqCst) {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        return Ok(());
    }
    if let Some(status) = reply.fail {
        return respond_json(&mut out, status, &error_body(wire, status));
    }
    let usage = Usage {
        input: (raw.len() / 4).max(1) as u64,
        output: reply_len(&reply).div_ceil(4).max(1) as u64,
    };
    let model = body["model"].as_str().unwrap_or("scripted").to_string();
    let streaming = match wire {
        Wire::Gemini { stream } => stream,
        _ => body["stream"].as_bool().unwrap_or(false),
    };
    let id = format!("{}-{turn}", std::process::id());
    let events = match wire {
        Wire::Anthropic => anthropic(&reply, &usage, &model, &id, streaming),
        Wire::Responses => responses(&reply, &usage, &model, &id),
        Wire::Chat => chat(&reply, &usage, &model, &id, streaming),
        Wire::Gemini { .. } => gemini(&reply, &usage, &model, &id, streaming),
    };
    match events {
        Body::Json(v) => respond_json(&mut out, 200, &v),
        Body::Sse(events) => {
            write!(
                out,
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n"
            )?;
            for (event, data) in events {
                if let Some(e) = event {
                    write!(out, "event: {e}\r\n")?;
                }
                write!(out, "data: {data}\r\n\r\n")?;
                out.flush()?;
            }
            Ok(())
        }
    }
}

/// A request a CLI makes for itself rather than for the user's task: the
/// terminal UIs of Codex, OpenCode and droid ask for a title for each new
/// session.
fn is_housekeeping(body: &Value) -> bool {
    let system = body["messages"][0]["content"].as_str().unwrap_or("");
    last_user_text(body).starts_with("Generate a concise, single-line task title")
        || system.starts_with("You are a title generator")
        || system.contains("a helper that generates concise session titles")
}

/// The text of a Responses API request's latest user message ("" for the
/// other protocols).
fn last_user_text(body: &Value) -> &str {
    body["input"]
        .as_array()
        .and_then(|items| items.iter().rev().find(|i| i["role"] == "user"))
        .and_then(|m| m["content"].as_array())
        .and_then(|c| c.iter().find_map(|p| p["text"].as_str()))
        .unwrap_or("")
}

/// The latest thing a Responses API request's conversation was asked, as
/// JSON text: a user message, or a message from another agent (Codex's
/// `agent_message`, which is how its `multi_agent_v2` hands a spawned
/// agent its task).
fn latest_ask(body: &Value) -> String {
    body["input"]
        .as_array()
        .and_then(|items| {
            items
                .iter()
                .rev()
                .find(|i| i["role"] == "user" || i["type"] == "agent_message")
        })
        .map(Value::to_string)
        .unwrap_or_default()
}

/// The `agent_id` in the latest tool result of a Responses API request.
fn last_agent_id(body: &Value) -> Option<String> {
    body["input"]
        .as_array()?
        .iter()
        .rev()
        .filter(|i| i["type"] == "function_call_output")
        .find_map(|i| {
            let out: Value = serde_json::from_str(i["output"].as_str()?).ok()?;
            out["agent_id"].as_str().map(str::to_string)
        })
}

/// The folder the CLI works in, as it tells the model: droid's `% pwd`
/// line, Copilot's `Current working directory:`, the generic `Working
/// directory:`. droid's line is looked for first: its `Execute` tool's
/// description also holds the words "working directory:".
pub fn working_directory(body: &Value) -> Option<String> {
    let text = body.to_string();
    // In the JSON text a newline is the two characters `\n`.
    let after = |marker: &str| {
        let at = text.find(marker)? + marker.len();
        let rest = text[at..].trim_start_matches(' ');
        let end = rest.find(['\\', '"', '<']).unwrap_or(rest.len());
        let dir = rest[..end].trim_end();
        dir.starts_with('/').then(|| dir.to_string())
    };
    after("% pwd\\n")
        .or_else(|| after("Current working directory:"))
        .or_else(|| after("Working directory:"))
}

/// The names a request's tools are offered under, with their JSON schemas
/// (Chat Completions, Responses, Anthropic and Gemini shapes).
fn offered_tools(body: &Value) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for t in body["tools"].as_array().into_iter().flatten() {
        if let Some(decls) = t["functionDeclarations"].as_array() {
            for d in decls {
                out.push((
                    d["name"].as_str().unwrap_or("").to_string(),
                    d["parameters"].clone(),
                ));
            }
            continue;
        }
        let f = if t["function"].is_object() {
            &t["function"]
        } else {
            t
        };
        let schema = [&f["parameters"], &f["input_schema"]]
            .into_iter()
            .find(|v| v.is_object())
            .cloned()
            .unwrap_or(Value::Null);
        out.push((f["name"].as_str().unwrap_or("").to_string(), schema));
    }
    out
}

/// `reply` fitted to the request it answers (see the module docs).
fn fitted(mut reply: Reply, body: &Value) -> Reply {
    let Some(tool) = reply.tool.as_mut() else {
        return reply;
    };
    if tool.args.to_string().contains("{{agent_id}}")
        && let Some(id) = last_agent_id(body)
    {
        let text = tool.args.to_string().replace("{{agent_id}}", &id);
        tool.args = serde_json::from_str(&text).expect("still JSON");
    }
    let tools = offered_tools(body);
    // Copilot's `create` refuses an existing file: write it through the shell.
    if tool.name == "create" && tools.iter().any(|(n, _)| n == "bash") {
        let path = tool.args["path"].as_str().unwrap_or("").to_string();
        let full = match working_directory(body) {
            Some(cwd) if !path.starts_with('/') => format!("{cwd}/{path}"),
            _ => path,
        };
        if std::path::Path::new(&full).exists() {
            let content = tool.args["file_text"]
                .as_str()
                .unwrap_or("")
                .replace('\'', "'\\''");
            tool.name = "bash".into();
            tool.args = json!({
                "command": format!("printf '%s' '{content}' > '{full}'"),
                "description": "Write the file again",
            });
        }
    }
    if let Some((_, schema)) = tools.iter().find(|(n, _)| *n == tool.name)
        && let Some(args) = tool.args.as_object_mut()
    {
        for name in schema["required"].as_array().into_iter().flatten() {
            let Some(name) = name.as_str() else { continue };
            if args.contains_key(name) {
                continue;
            }
            let prop = &schema["properties"][name];
            let value = if let Some(first) = prop["enum"].as_array().and_then(|e| e.first()) {
                first.clone()
            } else if prop["type"] != "string" {
                continue;
            } else if name.to_ascii_lowercase().ends_with("reason") {
                json!("The scripted model asked for this step.")
            } else {
                // droid's `summary` must match ^[A-Z]\S*(?:\s+\S+){2,7}$.
                json!("Run the scripted step")
            };
            args.insert(name.to_string(), value);
        }
    }
    reply
}

fn side_request(
    out: &mut TcpStream,
    method: &str,
    path: &str,
    body: &Value,
) -> std::io::Result<()> {
    if path.ends_with("/count_tokens") {
        let n = body.to_string().len() / 4;
        return respond_json(out, 200, &json!({ "input_tokens": n }));
    }
    if path.ends_with(":countTokens") {
        let n = body.to_string().len() / 4;
        return respond_json(out, 200, &json!({ "totalTokens": n }));
    }
    // Factory's own API (droid outside airgap mode): nothing found to a
    // GET, an empty success to a POST.
    if path.starts_with("/api/") {
        return match method {
            "POST" => respond_json(out, 200, &json!({})),
            _ => respond_json(
                out,
                404,
                &json!({ "error": { "type": "not_found", "message": "stub" } }),
            ),
        };
    }
    if method == "GET" && path.ends_with("/models") {
        return respond_json(
            out,
            200,
            &json!({ "object": "list", "data": [{ "id": "scripted", "object": "model", "owned_by": "baton" }],
                     "models": [{ "name": "models/scripted" }] }),
        );
    }
    respond_json(
        out,
        404,
        &json!({ "error": { "type": "not_found", "message": format!("the scripted model server does not serve {method} {path}") } }),
    )
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        _ => "Error",
    }
}

fn respond_json(out: &mut TcpStream, status: u16, v: &Value) -> std::io::Result<()> {
    let text = v.to_string();
    let reason = reason(status);
    write!(
        out,
        "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
        text.len()
    )?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal HTTP client: POSTs `body` and returns the whole response.
    fn post(port: u16, path: &str, body: &Value) -> String {
        let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let text = body.to_string();
        write!(
            c,
            "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{text}",
            text.len()
        )
        .unwrap();
        let mut out = String::new();
        c.read_to_string(&mut out).unwrap();
        out
    }

    /// The `data:` payloads of an SSE response, parsed (`[DONE]` left out).
    fn data(resp: &str) -> Vec<Value> {
        resp.lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter(|d| *d != "[DONE]")
            .map(|d| serde_json::from_str(d).unwrap())
            .collect()
    }

    #[test]
    fn each_protocol_streams_the_next_turn_of_the_script() {
        let s = ModelServer::start(vec![
            Reply::tool("Write", json!({ "file_path": "a.txt", "content": "hi" })),
            Reply::text("from responses"),
            Reply::tool("write_file", json!({ "path": "b" })),
            Reply::text("from gemini"),
        ]);
        let a = data(&post(
            s.port(),
            "/v1/messages",
            &json!({ "model": "m", "stream": true }),
        ));
        let start = a
            .iter()
            .find(|e| e["type"] == "content_block_start")
            .unwrap();
        assert_eq!(start["content_block"]["name"], "Write");
        let args = a
            .iter()
            .find(|e| e["delta"]["type"] == "input_json_delta")
            .unwrap();
        let parsed: Value =
            serde_json::from_str(args["delta"]["partial_json"].as_str().unwrap()).unwrap();
        assert_eq!(parsed["content"], "hi");
        assert_eq!(a.last().unwrap()["type"], "message_stop");

        let r = data(&post(s.port(), "/v1/responses", &json!({ "stream": true })));
        assert_eq!(r.last().unwrap()["type"], "response.completed");
        assert_eq!(
            r.last().unwrap()["response"]["output"][0]["content"][0]["text"],
            "from responses"
        );

        let c = post(s.port(), "/v1/chat/completions", &json!({ "stream": true }));
        assert!(c.trim_end().ends_with("data: [DONE]"), "{c}");
        let c = data(&c);
        assert!(c.iter().any(
            |e| e["choices"][0]["delta"]["tool_calls"][0]["function"]["name"] == "write_file"
        ));
        assert!(
            c.iter()
                .any(|e| e["usage"]["total_tokens"].as_u64().is_some())
        );

        let g = data(&post(
            s.port(),
            "/v1beta/models/m:streamGenerateContent?alt=sse",
            &json!({}),
        ));
        assert_eq!(
            g[0]["candidates"][0]["content"]["parts"][0]["text"],
            "from gemini"
        );

        // Past the end of the script: "done".
        let after = data(&post(s.port(), "/v1/messages", &json!({ "stream": true })));
        assert!(after.iter().any(|e| e["delta"]["text"] == "done"));
        assert_eq!(s.turns_taken(), 5);
    }

    #[test]
    fn side_requests_take_no_turn_and_everything_is_recorded() {
        let s = ModelServer::start(vec![Reply::text("only")]);
        let n = post(
            s.port(),
            "/v1/messages/count_tokens",
            &json!({ "messages": [] }),
        );
        assert!(n.contains("input_tokens"), "{n}");
        let missing = post(s.port(), "/v1/unknown", &json!({}));
        assert!(missing.starts_with("HTTP/1.1 404"), "{missing}");
        let v: Value = serde_json::from_str(
            post(
                s.port(),
                "/v1/chat/completions",
                &json!({ "messages": [{ "role": "user", "content": "brief here" }] }),
            )
            .split("\r\n\r\n")
            .nth(1)
            .unwrap(),
        )
        .unwrap();
        assert_eq!(v["choices"][0]["message"]["content"], "only");
        let reqs = s.requests();
        assert_eq!(reqs.len(), 3);
        assert_eq!(s.model_requests().len(), 1);
        assert_eq!(
            s.model_requests()[0].body["messages"][0]["content"],
            "brief here"
        );
    }

    /// The tool call of a streamed Chat Completions answer.
    fn chat_tool(resp: &str) -> (String, Value) {
        let f = data(resp)
            .into_iter()
            .find_map(|e| {
                let f = e["choices"][0]["delta"]["tool_calls"][0]["function"].clone();
                f.is_object().then_some(f)
            })
            .unwrap();
        (
            f["name"].as_str().unwrap().to_string(),
            serde_json::from_str(f["arguments"].as_str().unwrap()).unwrap(),
        )
    }

    #[test]
    fn a_tool_call_gets_the_parameters_its_schema_requires() {
        let s = ModelServer::start(vec![Reply::tool(
            "Execute",
            json!({ "command": "ls", "riskLevel": "low" }),
        )]);
        let tools = json!([{ "type": "function", "function": { "name": "Execute", "parameters": {
            "type": "object", "required": ["command", "summary", "riskLevel", "riskLevelReason", "timeout"],
            "properties": { "command": { "type": "string" }, "summary": { "type": "string" },
                "riskLevel": { "type": "string", "enum": ["low", "medium", "high"] },
                "riskLevelReason": { "type": "string" }, "timeout": { "type": "number" } } } } }]);
        let resp = post(
            s.port(),
            "/v1/chat/completions",
            &json!({ "stream": true, "tools": tools }),
        );
        let (name, args) = chat_tool(&resp);
        assert_eq!(name, "Execute");
        assert_eq!(args["command"], "ls");
        assert_eq!(args["riskLevel"], "low", "what the script said stays");
        assert_eq!(args["summary"], "Run the scripted step");
        assert!(args["riskLevelReason"].as_str().unwrap().ends_with('.'));
        assert!(args.get("timeout").is_none(), "only strings are made up");
    }

    #[test]
    fn copilots_create_of_an_existing_file_becomes_a_shell_write() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("there.txt"), "old").unwrap();
        let s = ModelServer::start(vec![
            Reply::tool(
                "create",
                json!({ "path": "there.txt", "file_text": "it's new" }),
            ),
            Reply::tool("create", json!({ "path": "fresh.txt", "file_text": "x" })),
        ]);
        let body = json!({ "stream": true,
            "messages": [{ "role": "system", "content": format!("* Current working directory: {}\n* Git", dir.path().display()) }],
            "tools": [{ "type": "function", "function": { "name": "bash", "parameters": { "type": "object" } } },
                      { "type": "function", "function": { "name": "create", "parameters": { "type": "object" } } }] });
        assert_eq!(
            working_directory(&body).as_deref(),
            Some(dir.path().to_str().unwrap())
        );
        let (name, args) = chat_tool(&post(s.port(), "/v1/chat/completions", &body));
        assert_eq!(name, "bash");
        let cmd = args["command"].as_str().unwrap();
        let out = std::process::Command::new("sh")
            .args(["-c", cmd])
            .status()
            .unwrap();
        assert!(out.success(), "{cmd}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("there.txt")).unwrap(),
            "it's new"
        );
        let (name, _) = chat_tool(&post(s.port(), "/v1/chat/completions", &body));
        assert_eq!(name, "create", "a new file is created as scripted");
    }

    #[test]
    fn droids_pwd_line_names_the_folder_before_any_other_mention() {
        let body = json!({ "messages": [
            { "role": "system", "content": "Execute runs in the session's working directory: working-directory changes persist" },
            { "role": "user", "content": "<system-reminder>\n% pwd\n/w/repo\n\n% ls" }] });
        assert_eq!(working_directory(&body).as_deref(), Some("/w/repo"));
    }

    #[test]
    fn a_failing_turn_answers_with_its_http_status() {
        let s = ModelServer::start(vec![Reply::fail(401), Reply::text("after")]);
        let r = post(s.port(), "/v1/chat/completions", &json!({ "stream": true }));
        assert!(r.starts_with("HTTP/1.1 401 Unauthorized"), "{r}");
        assert!(r.contains("scripted failure: HTTP 401"), "{r}");
        let r = post(s.port(), "/v1/chat/completions", &json!({ "stream": true }));
        assert!(r.starts_with("HTTP/1.1 200"), "{r}");
        assert_eq!(s.turns_taken(), 2);
    }

    #[test]
    fn factory_api_calls_get_a_stub_and_take_no_turn() {
        let s = ModelServer::start(vec![Reply::text("only")]);
        let r = post(s.port(), "/api/sessions/x/message/create", &json!({}));
        assert!(r.starts_with("HTTP/1.1 200"), "{r}");
        assert!(r.ends_with("{}"), "{r}");
        let mut c = TcpStream::connect(("127.0.0.1", s.port())).unwrap();
        write!(c, "GET /api/feature-flags HTTP/1.1\r\nhost: x\r\n\r\n").unwrap();
        let mut out = String::new();
        c.read_to_string(&mut out).unwrap();
        assert!(out.starts_with("HTTP/1.1 404"), "{out}");
        assert_eq!(s.turns_taken(), 0);
        assert_eq!(s.requests().len(), 2);
    }
}
