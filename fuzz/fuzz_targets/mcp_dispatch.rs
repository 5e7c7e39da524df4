//! baton's MCP server as `baton mcp` runs it: the JSON-RPC screen
//! (`baton_mcp::jsonrpc::screen`), the tool-argument judge
//! (`baton_mcp::arguments::judge`) against every real tool's schema, and
//! the real stdio dispatch (`lines.rs`) of one long-lived server per
//! process, on a real engine in a temporary project, over an in-process
//! pipe. Each input is sent as it is (a line, or several), and when it is
//! JSON also as the `arguments` of a `tools/call` to a few of the tools
//! (picked by the input); a ping closes the exchange. A line that repeats
//! a request id still in use (which MCP forbids a client; the SDK then
//! answers one of the two) is sent after the answers to those before it.
//! An input that initializes the session again (at another protocol
//! revision: from 2026-07-28 on, MCP has no ping) is followed by this
//! target's own `initialize`, so each input meets the same session.
//!
//! Properties: nothing panics and nothing hangs (every answer within
//! [`ANSWER_WITHIN`]); every line that is a request (a string or number
//! `id`) gets exactly one answer with that id, and nothing else answers;
//! every answer is JSON-RPC 2.0, every error code one of -32700, -32600,
//! -32601, -32602, -32603 (or MCP's -32022 and -32021 to a request that
//! names its protocol version or capabilities in `_meta`, as the SDK
//! answers from MCP 2026-07-28 on); a line that is not JSON gets -32700; a
//! `tools/call` whose arguments are not an object gets -32602, one whose
//! arguments are an object a result; a tool error's text starts with
//! `WORKFLOW_`. Arguments the judge takes have every required field and
//! every typed one of its type; a refusal names the tool and has a hint.
//!
//! Every tool is harmless to call here: the caller is anonymous (no
//! instance, no summary file, no team), so the review loop's, the phase
//! reports' and the team's tools are refused before they do anything;
//! `notify` and the two requests add an inbox item to the temporary store;
//! the requests' `wait_seconds` is set to 0 so they do not wait for an
//! answer nobody gives.

#![no_main]

use baton_mcp::arguments::{self, MAX_ARGUMENTS_BYTES, MAX_TEXT_BYTES};
use baton_mcp::jsonrpc::{self, Screened};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};

/// The codes JSON-RPC names for what is wrong with a message.
const CODES: [i64; 5] = [-32700, -32600, -32601, -32602, -32603];
/// MCP's own codes (its 2026-07-28 revision), for a request that names its
/// protocol version or client capabilities inline, in `_meta`: one it does
/// not support, one the request lacks.
const INLINE_CODES: [i64; 2] = [-32022, -32021];
/// Where a request names them.
const INLINE_META: &str = "io.modelcontextprotocol/";
/// The tools that wait for a person's answer (for `wait_seconds`).
const WAITS: [&str; 2] = ["request_decision", "request_approval"];
/// How many tools each JSON input is sent to.
const CALLS_PER_INPUT: usize = 4;
/// Longer than this for an input's answers is a hang.
const ANSWER_WITHIN: Duration = Duration::from_secs(10);

struct Server {
    rt: tokio::runtime::Runtime,
    read: BufReader<ReadHalf<DuplexStream>>,
    write: WriteHalf<DuplexStream>,
    tools: Vec<(String, Map<String, Value>)>,
    /// Numbers this process's own request ids.
    seq: u64,
    /// Ids whose requests an input cancelled: an answer may still come.
    cancelled: BTreeSet<String>,
    _project: tempfile::TempDir,
}

static SERVER: OnceLock<Mutex<Server>> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    let mut guard = SERVER
        .get_or_init(|| Mutex::new(start()))
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let server = &mut *guard;
    let whole = serde_json::from_slice::<Value>(data).ok();
    if let Some(Value::Object(args)) = &whole {
        for (tool, schema) in &server.tools {
            judge_holds(tool, schema, args);
        }
    }
    exchange(server, data, whole);
});

/// A project as `baton init` makes it (a git repository with `.baton/`),
/// an engine on it, and its MCP server, initialized, on one end of a pipe.
fn start() -> Server {
    let project = tempfile::Builder::new()
        .prefix("baton-fuzz-mcp-")
        .tempdir()
        .expect("a temporary folder");
    let root = project.path();
    let git = std::process::Command::new("git")
        .args(["init", "-q", "-b", "main"])
        .current_dir(root)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .status()
        .expect("git runs");
    assert!(git.success(), "git init");
    let baton = root.join(".baton");
    std::fs::create_dir_all(baton.join("workflows")).expect(".baton/workflows");
    std::fs::write(baton.join("config.toml"), baton_engine::config::INIT_CONFIG).expect("config");
    std::fs::write(
        baton.join("workflows/example.toml"),
        include_str!("../../crates/baton-cli/assets/example.toml"),
    )
    .expect("workflow");
    let project_ = baton_engine::Project::open(root).expect("the project opens");
    let engine = baton_engine::Engine::open(project_, Arc::new(baton_engine::engine::Silent))
        .expect("the engine opens");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let (client, server) = tokio::io::duplex(1 << 16);
    let (input, output) = tokio::io::split(server);
    rt.spawn(async move {
        let ended = baton_mcp::serve_lines(
            Arc::new(engine),
            baton_mcp::Caller::default(),
            input,
            output,
        )
        .await;
        // The client never closes its end: the server must not stop.
        panic!("the MCP server stopped: {ended:?}");
    });
    let (read, write) = tokio::io::split(client);
    let mut s = Server {
        rt,
        read: BufReader::new(read),
        write,
        tools: baton_mcp::tool_schemas(),
        seq: 0,
        cancelled: BTreeSet::new(),
        _project: project,
    };
    assert!(s.tools.len() >= 10, "every tool is listed: {:?}", s.tools);
    let Server {
        rt, read, write, ..
    } = &mut s;
    initialize(rt, read, write, "fz-init");
    s
}

/// The session initialized at MCP 2025-06-18, as the agent CLIs baton
/// runs do.
fn initialize(
    rt: &tokio::runtime::Runtime,
    read: &mut BufReader<ReadHalf<DuplexStream>>,
    write: &mut WriteHalf<DuplexStream>,
    id: &str,
) {
    let init = json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "baton-fuzz", "version": "1"}}});
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    rt.block_on(async {
        let text = format!("{init}\n{initialized}\n");
        write.write_all(text.as_bytes()).await.expect("write");
        let mut line = String::new();
        tokio::time::timeout(ANSWER_WITHIN, read.read_line(&mut line))
            .await
            .expect("initialize is answered")
            .expect("read");
        let v: Value = serde_json::from_str(&line).expect("JSON");
        assert_eq!(v["id"], id, "{v}");
        assert_eq!(v["result"]["protocolVersion"], "2025-06-18", "{v}");
    });
}

/// What one input's exchange expects.
#[derive(Default)]
struct Expect {
    /// Answers by id (see [`key`]): how many.
    by_id: BTreeMap<String, usize>,
    /// The error code each answer without an id has, in order.
    null_codes: Vec<i64>,
    /// Ids whose answer must be a JSON-RPC error with this code.
    code_of: BTreeMap<String, i64>,
    /// Ids whose answer must be a result (a tool call's, maybe `isError`).
    result: BTreeSet<String>,
    /// Ids an input line cancels.
    cancelled: BTreeSet<String>,
    /// Ids of requests with MCP's lifecycle keys in their `_meta`.
    inline: BTreeSet<String>,
    /// Whether a line initializes the session again (the next input gets
    /// it as this target set it up).
    initializes: bool,
}

impl Expect {
    fn add(&mut self, other: Expect) {
        for (id, n) in other.by_id {
            *self.by_id.entry(id).or_default() += n;
        }
        self.null_codes.extend(other.null_codes);
        self.code_of.extend(other.code_of);
        self.result.extend(other.result);
        self.cancelled.extend(other.cancelled);
        self.inline.extend(other.inline);
        self.initializes |= other.initializes;
    }
}

fn exchange(server: &mut Server, data: &[u8], whole: Option<Value>) {
    server.seq += 1;
    let seq = server.seq;
    // MCP forbids a request id already in use: a line that repeats one
    // starts a new batch, sent once the last one is answered.
    let mut batches: Vec<(Vec<u8>, Expect)> = vec![Default::default()];
    for raw in data.split(|b| *b == b'\n') {
        // As lines.rs reads them: a blank line is no message.
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let line = without_waits(raw);
        let mut e = Expect::default();
        expect_line(&line, &mut e);
        if e.by_id
            .keys()
            .any(|id| batches.last().expect("one").1.by_id.contains_key(id))
        {
            batches.push(Default::default());
        }
        let (out, expect) = batches.last_mut().expect("one");
        expect.add(e);
        out.extend_from_slice(&line);
        out.push(b'\n');
    }
    if let Some(args) = whole {
        // The input as a tool call's arguments, to a few tools (picked
        // by the input, so a failure replays).
        let (out, expect) = batches.last_mut().expect("one");
        let n = server.tools.len();
        let first = fnv(data) as usize % n;
        for k in 0..CALLS_PER_INPUT.min(n) {
            let tool = &server.tools[(first + k) % n].0;
            let mut args = args.clone();
            if let (true, Value::Object(a)) = (WAITS.contains(&tool.as_str()), &mut args) {
                a.insert("wait_seconds".into(), json!(0));
            }
            let id = format!("fz-{seq}-{k}");
            let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": tool, "arguments": args}});
            let id = key(&json!(id));
            *expect.by_id.entry(id.clone()).or_default() += 1;
            match &args {
                Value::Object(_) | Value::Null => {
                    expect.result.insert(id);
                }
                _ => {
                    expect.code_of.insert(id, jsonrpc::INVALID_PARAMS);
                }
            }
            out.extend_from_slice(call.to_string().as_bytes());
            out.push(b'\n');
        }
    }
    for (i, (out, expect)) in batches.into_iter().enumerate() {
        batch(server, out, expect, format!("fz-{seq}-end-{i}"));
    }
}

/// Sends one batch of lines, closed by a ping (whose answer comes after
/// the screen's answers to every line before it), and checks the answers.
fn batch(server: &mut Server, mut out: Vec<u8>, mut expect: Expect, end: String) {
    out.extend_from_slice(
        json!({"jsonrpc": "2.0", "id": end, "method": "ping"})
            .to_string()
            .as_bytes(),
    );
    out.push(b'\n');
    let end = key(&json!(end));
    // Answered with a result, or -32601 in a session an input initialized
    // at MCP 2026-07-28, which has no ping.
    *expect.by_id.entry(end.clone()).or_default() += 1;

    if show() {
        eprint!("-> {}", String::from_utf8_lossy(&out));
    }
    let Server {
        rt,
        read,
        write,
        cancelled,
        ..
    } = server;
    let (got_by_id, got_null) = rt.block_on(async {
        let send = async {
            write.write_all(&out).await.expect("the server reads");
            write.flush().await.expect("flush");
        };
        let receive = receive(read, &expect, cancelled, &end);
        tokio::join!(send, receive).1
    });
    for (id, want) in &expect.by_id {
        let got = got_by_id.get(id).copied().unwrap_or(0);
        if expect.cancelled.contains(id) {
            assert!(got <= 1, "{got} answers to the cancelled request {id}");
        } else {
            assert_eq!(got, *want, "answers to request {id}");
        }
    }
    for (id, n) in &got_by_id {
        assert!(
            expect.by_id.contains_key(id),
            "{n} answers to {id}, which no request of this input has"
        );
    }
    assert_eq!(got_null, expect.null_codes, "the answers without an id");
    cancelled.extend(expect.cancelled);
    if expect.initializes {
        initialize(rt, read, write, &format!("fz-init-{}", end));
    }
}

/// Reads answers until every expected id has its answers and the closing
/// ping its own; checks each as it comes. Returns the count by id and the
/// codes of the answers without one.
async fn receive(
    read: &mut BufReader<ReadHalf<DuplexStream>>,
    expect: &Expect,
    late: &BTreeSet<String>,
    end: &str,
) -> (BTreeMap<String, usize>, Vec<i64>) {
    let deadline = tokio::time::Instant::now() + ANSWER_WITHIN;
    let mut by_id: BTreeMap<String, usize> = BTreeMap::new();
    let mut null_codes = Vec::new();
    let done = |by_id: &BTreeMap<String, usize>| {
        by_id.contains_key(end)
            && expect.by_id.iter().all(|(id, n)| {
                expect.cancelled.contains(id) || by_id.get(id).copied().unwrap_or(0) >= *n
            })
    };
    while !done(&by_id) {
        let mut line = String::new();
        let n = tokio::time::timeout_at(deadline, read.read_line(&mut line))
            .await
            .unwrap_or_else(|_| {
                let missing: Vec<&String> = expect
                    .by_id
                    .keys()
                    .filter(|id| !by_id.contains_key(*id) && !expect.cancelled.contains(*id))
                    .collect();
                panic!("no answer within {ANSWER_WITHIN:?} to {missing:?}")
            })
            .expect("read");
        assert!(n > 0, "the server closed its output");
        if show() {
            eprint!("<- {line}");
        }
        let v: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("an answer that is not JSON ({e}): {line:?}"));
        assert_eq!(v["jsonrpc"], "2.0", "{v}");
        let Some(id) = v.get("id") else {
            // A notification of the server's (logging, list changes).
            assert!(
                v["method"].is_string(),
                "neither answer nor notification: {v}"
            );
            continue;
        };
        assert!(
            v.get("method").is_none(),
            "the server asks the client something: {v}"
        );
        assert!(
            v.get("result").is_some() != v.get("error").is_some(),
            "an answer has a result or an error: {v}"
        );
        if let Some(e) = v.get("error") {
            let code = e["code"].as_i64().unwrap_or_else(|| panic!("no code: {v}"));
            assert!(
                CODES.contains(&code)
                    || (INLINE_CODES.contains(&code) && expect.inline.contains(&key(id))),
                "error code {code}: {v}"
            );
            assert!(e["message"].is_string(), "{v}");
        }
        if let Some(r) = v.get("result")
            && r["isError"] == true
        {
            let text = r["content"][0]["text"].as_str().unwrap_or("");
            assert!(text.starts_with("WORKFLOW_"), "a tool error: {v}");
        }
        if id.is_null() {
            null_codes.push(v["error"]["code"].as_i64().unwrap_or_else(|| panic!("{v}")));
            continue;
        }
        let k = key(id);
        if !expect.by_id.contains_key(&k) && late.contains(&k) {
            continue;
        }
        if let Some(code) = expect.code_of.get(&k) {
            assert_eq!(v["error"]["code"], *code, "{v}");
        }
        if expect.result.contains(&k) {
            assert!(v.get("result").is_some(), "a result is due: {v}");
        }
        *by_id.entry(k).or_default() += 1;
    }
    (by_id, null_codes)
}

/// What answers one line gets, read independently of the screen where
/// the protocol says so, and from the screen's verdict otherwise.
fn expect_line(line: &[u8], expect: &mut Expect) {
    let parsed = serde_json::from_slice::<Value>(line);
    let screened = jsonrpc::screen(line);
    if parsed.is_err() {
        assert!(
            matches!(&screened, Screened::Reply(v) if v["error"]["code"] == jsonrpc::PARSE_ERROR && v["id"].is_null()),
            "a line that is not JSON gets -32700: {screened:?}"
        );
    }
    let id = parsed
        .as_ref()
        .ok()
        .and_then(|v| v.get("id"))
        .filter(|i| i.is_string() || i.is_number());
    if let Ok(v) = &parsed
        && let Some(id) = id
        && v["jsonrpc"] == "2.0"
        && v["method"] == "tools/call"
        && v["params"]["name"].is_string()
        && v["params"]
            .get("arguments")
            .is_some_and(|a| !a.is_object() && !a.is_null())
    {
        assert!(
            matches!(&screened, Screened::Reply(r) if r["error"]["code"] == jsonrpc::INVALID_PARAMS && r["id"] == *id),
            "arguments that are not an object get -32602: {screened:?}"
        );
        expect.code_of.insert(key(id), jsonrpc::INVALID_PARAMS);
    }
    if let Ok(v) = &parsed
        && let Some(id) = id
        && v["params"]["_meta"]
            .as_object()
            .is_some_and(|m| m.keys().any(|k| k.starts_with(INLINE_META)))
    {
        expect.inline.insert(key(id));
    }
    if let Ok(v) = &parsed
        && v["method"] == "initialize"
    {
        expect.initializes = true;
    }
    if let Ok(v) = &parsed
        && v["method"] == "notifications/cancelled"
        && let Some(r) = v["params"].get("requestId")
    {
        expect.cancelled.insert(key(r));
    }
    match screened {
        Screened::Reply(r) => {
            let code = r["error"]["code"].as_i64().expect("a code");
            assert!(CODES.contains(&code), "the screen's code: {r}");
            if r["id"].is_null() {
                expect.null_codes.push(code);
            } else {
                assert_eq!(Some(&r["id"]), id, "the reply carries the line's id");
                *expect.by_id.entry(key(&r["id"])).or_default() += 1;
            }
        }
        Screened::Drop => assert!(id.is_none(), "a request dropped: {line:?}"),
        Screened::Forward => {
            let v = parsed.as_ref().expect("forwarded JSON");
            if v.get("method").is_some()
                && let Some(id) = id
            {
                *expect.by_id.entry(key(id)).or_default() += 1;
            }
        }
    }
}

/// The line with a waiting tool's `wait_seconds` set to 0 (else it waits
/// for a person for up to an hour).
fn without_waits(line: &[u8]) -> Vec<u8> {
    if let Ok(mut v) = serde_json::from_slice::<Value>(line)
        && v["method"] == "tools/call"
        && v["params"]["name"]
            .as_str()
            .is_some_and(|n| WAITS.contains(&n))
        && let Some(args) = v["params"]
            .get_mut("arguments")
            .and_then(Value::as_object_mut)
    {
        args.insert("wait_seconds".into(), json!(0));
        return serde_json::to_vec(&v).expect("JSON");
    }
    line.to_vec()
}

/// An id as the protocol compares them: a number by its value (`1.0` is
/// `1`), a string as it is.
fn key(id: &Value) -> String {
    match id {
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => format!("n:{i}"),
            (_, Some(u), _) => format!("n:{u}"),
            (_, _, Some(f)) if f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15 => {
                format!("n:{}", f as i64)
            }
            (_, _, f) => format!("f:{f:?}"),
        },
        Value::String(s) => format!("s:{s}"),
        other => format!("?:{other}"),
    }
}

/// The judge's verdict on `args` for `tool` holds up: a refusal names
/// the tool and says what to do; what it takes has every required field,
/// every typed one of its type, and no text over the limits.
fn judge_holds(tool: &str, schema: &Map<String, Value>, args: &Map<String, Value>) {
    match arguments::judge(tool, schema, args) {
        Some((message, hint)) => {
            assert!(message.contains(tool), "{message}");
            assert!(!hint.trim().is_empty(), "{message}: no hint");
        }
        None => {
            for name in schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let name = name.as_str().expect("a name");
                assert!(
                    args.get(name).is_some_and(|v| !v.is_null()),
                    "{tool} took arguments without `{name}`"
                );
            }
            for (name, v) in args {
                if let Some(want) = schema.get("properties").and_then(|p| p.get(name)) {
                    assert!(fits(want, v), "{tool} took `{name}` = {v} for {want}");
                }
            }
            assert!(
                !too_long(&Value::Object(args.clone())),
                "{tool} took a text too long"
            );
            assert!(serde_json::to_string(args).expect("JSON").len() <= MAX_ARGUMENTS_BYTES);
        }
    }
}

fn fits(want: &Value, v: &Value) -> bool {
    let types: Vec<&str> = match want.get("type") {
        Some(Value::String(t)) => vec![t],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => return true,
    };
    let one = |t: &str| match t {
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        "null" => v.is_null(),
        _ => true,
    };
    types.into_iter().any(one)
        && match (v, want.get("items")) {
            (Value::Array(xs), Some(item)) => xs.iter().all(|x| fits(item, x)),
            _ => true,
        }
}

fn too_long(v: &Value) -> bool {
    match v {
        Value::String(s) => s.len() > MAX_TEXT_BYTES,
        Value::Array(a) => a.iter().any(too_long),
        Value::Object(o) => o.values().any(too_long),
        _ => false,
    }
}

/// `BATON_FUZZ_SHOW=1`: print what is sent and answered (to replay an
/// input and see why it fails).
fn show() -> bool {
    static SHOW: OnceLock<bool> = OnceLock::new();
    *SHOW.get_or_init(|| std::env::var_os("BATON_FUZZ_SHOW").is_some())
}

/// FNV-1a: picks the tools an input is sent to.
fn fnv(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}
