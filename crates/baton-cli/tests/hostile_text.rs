//! Text from outside baton, planted with terminal escape sequences in every
//! field a real command lets in: a phase's summary, blocker and checkpoint
//! note, a task's description and label, a GitHub payload's repository,
//! action, labels and pull request fields, an agent's `notify` and
//! `request_decision` through `baton mcp`, a team's task and message, an
//! agent instance's end reason, a folder name. Every human-readable command then prints it with no raw
//! control character (no ESC, no C1, no bidi control) on stdout or stderr,
//! and with the visible escape (`\x1b]52`), so the person sees what was
//! sent; a 3 MB text is clipped to a preview, and `--json` still has it
//! all. (The tests run without a terminal, so baton paints no colour.)

mod common;

use baton_testkit::TestProject;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

/// An OSC 52 clipboard write, a screen clear and cursor move (CSI), a C1
/// CSI, a bidi override, DEL, a carriage return and a second line.
const HOSTILE: &str = "clip\x1b]52;c;aGFja2Vk\x07 cls\x1b[2J\x1b[1;1H c1\u{9b}31m rlo\u{202e}txt.exe\u{202c} del\x7f cr\rline\nsecond";

/// The escape a person sees for the clipboard write.
const SEEN: &str = "\\x1b]52;c;aGFja2Vk\\x07";

/// The first character of `s` that must never reach a terminal raw.
fn raw_control(s: &str) -> Option<(usize, char)> {
    s.char_indices().find(|(_, c)| {
        matches!(
            *c,
            '\0'..='\x08' | '\x0b'..='\x1f' | '\x7f' | '\u{80}'..='\u{9f}'
                | '\u{61c}' | '\u{200e}' | '\u{200f}'
                | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
    })
}

/// Runs `baton ARGS` and checks that neither stream holds a raw control
/// character; returns (exit code, stdout, stderr).
fn clean(p: &TestProject, args: &[&str]) -> (i32, String, String) {
    let out = p.baton(args).output().unwrap();
    check(args, &out)
}

fn check(args: &[&str], out: &std::process::Output) -> (i32, String, String) {
    let stdout = String::from_utf8(out.stdout.clone()).expect("stdout is UTF-8");
    let stderr = String::from_utf8(out.stderr.clone()).expect("stderr is UTF-8");
    for (name, s) in [("stdout", &stdout), ("stderr", &stderr)] {
        if let Some((at, c)) = raw_control(s) {
            let from = s[..at].char_indices().rev().nth(60).map_or(0, |(i, _)| i);
            panic!(
                "baton {args:?}: a raw {c:?} on {name} after {:?}",
                &s[from..at]
            );
        }
    }
    (out.status.code().unwrap_or(-1), stdout, stderr)
}

/// Where `HOSTILE` is kept for the phases to read.
fn hostile_file(p: &TestProject) -> String {
    let path = p.root().join(".baton/hostile.txt");
    fs_err::write(&path, HOSTILE).unwrap();
    path.display().to_string()
}

#[test]
fn agents_summaries_blockers_and_notes_and_task_descriptions_are_shown_escaped() {
    let p = TestProject::new();
    let file = hostile_file(&p);
    p.workflow(
        "h",
        &format!(
            r#"name = "h"
[[phase]]
id = "said"
run = "cat '{file}' > \"$BATON_SUMMARY_FILE\""
[[phase]]
id = "blocked"
run = "printf '\"%s\"\n' note > \"$BATON_SUMMARY_FILE.checkpoints\"; cat '{file}' > \"$BATON_SUMMARY_FILE.blocker\""
max_attempts = 1
"#
        ),
    );
    let description = format!("describe {HOSTILE}");
    let label = format!("why={HOSTILE}");
    let (code, _, err) = clean(
        &p,
        &["run", "h", &description, "--id", "t1", "--label", &label],
    );
    assert_eq!(code, 1, "the second phase is blocked: {err}");
    // The progress lines: the summary's first line, and the blocker.
    assert!(err.contains(SEEN), "{err}");
    assert!(err.contains("FAILED"), "{err}");

    let (code, out, _) = clean(&p, &["show", "t1"]);
    assert_eq!(code, 0);
    assert!(
        out.contains(&format!("about     describe clip{SEEN}")),
        "{out}"
    );
    assert!(
        out.contains("\\u{202e}txt.exe"),
        "the bidi override is named: {out}"
    );
    assert!(out.contains("\\r"), "{out}");
    let (_, out, _) = clean(&p, &["log", "t1"]);
    assert!(out.contains(SEEN), "{out}");
    assert!(
        out.contains("line\\nsecond"),
        "a text stays on its line: {out}"
    );
    let (_, out, _) = clean(&p, &["ls"]);
    assert_eq!(out.lines().count(), 2, "a header and one row: {out}");
    clean(&p, &["session", "ls"]);
    let (_, out, _) = clean(&p, &["session", "show", "t1"]);
    assert!(out.contains(SEEN), "{out}");
    clean(&p, &["session", "query", "--text", "clip"]);
    clean(&p, &["resume", "t1"]);

    // `--json` keeps the text as it was (JSON escapes it).
    let doc = p.state("t1");
    assert_eq!(doc["task_description"], description.as_str());
    assert_eq!(doc["completed_phases"][0]["summary"], HOSTILE.trim());

    // A folder name is untrusted too: doctor and ls name it escaped.
    let odd = p.root().join(".baton/tasks/odd\x1b]52;c;eA==\x07\u{202e}");
    fs_err::create_dir_all(&odd).unwrap();
    fs_err::write(odd.join("state.json"), "{}").unwrap();
    let (code, out, _) = clean(&p, &["doctor"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("odd\\x1b]52;c;eA==\\x07\\u{202e}"), "{out}");
    let (_, _, err) = clean(&p, &["ls"]);
    assert!(err.contains("odd\\x1b]52"), "{err}");
}

const FLOW: &str = r#"name = "pr-flow"
[[phase]]
id = "wait-pr"
wait = { event = "github.pull_request.opened", match = { "task-id" = "{{labels.task-id}}" } }
[[phase]]
id = "after"
run = "echo after"
"#;

#[test]
fn webhook_payloads_and_delivery_ids_are_shown_escaped() {
    let p = TestProject::new();
    p.workflow("pr-flow", FLOW);
    let (code, _, err) = clean(&p, &["run", "pr-flow", "x", "--id", "changes"]);
    assert_eq!(code, 4, "{err}");
    let mut payload: Value = serde_json::from_str(
        &fs_err::read_to_string(baton_testkit::github_fixture(
            "pull_request/opened.payload.json",
        ))
        .unwrap(),
    )
    .unwrap();
    payload["repository"]["full_name"] = json!(HOSTILE);
    payload["pull_request"]["html_url"] = json!(HOSTILE);
    payload["pull_request"]["title"] = json!(HOSTILE);
    payload["pull_request"]["labels"] = json!([{"name": "task-changes"}, {"name": HOSTILE}]);
    payload["pull_request"]["head"]["ref"] = json!(HOSTILE);
    let opened = p.root().join(".baton/opened.json");
    fs_err::write(&opened, payload.to_string()).unwrap();
    payload["action"] = json!(HOSTILE);
    let odd = p.root().join(".baton/odd.json");
    fs_err::write(&odd, payload.to_string()).unwrap();

    let id = format!("d1{HOSTILE}");
    let deliver = |file: &std::path::Path, id: &str| {
        clean(
            &p,
            &[
                "deliver",
                "pull_request",
                &file.display().to_string(),
                "--delivery",
                id,
                "--branch-pattern",
                "{task-id}",
            ],
        )
    };
    // An action nobody waits for, named in the answer.
    let (code, out, err) = deliver(&odd, "d2");
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(SEEN), "{out}");
    // The task waiting for it runs on with the payload's facts as labels;
    // the head branch names a task that does not exist (kept for it, the
    // branch's name escaped where it is said).
    let (code, out, err) = deliver(&opened, &id);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(p.state("changes")["status"], "COMPLETE");
    assert_eq!(p.state("changes")["labels"]["pr-url"], HOSTILE);
    // The same delivery again: its id and what it did, escaped.
    let (code, out, _) = deliver(&opened, &id);
    assert_eq!(code, 0);
    assert!(out.contains(&format!("delivery d1clip{SEEN}")), "{out}");
    let (_, out, _) = clean(&p, &["deliveries"]);
    assert!(out.contains(SEEN), "{out}");
    assert_eq!(out.lines().count(), 2, "one line per delivery: {out}");
    let (_, out, _) = clean(&p, &["log", "changes"]);
    assert!(out.contains(&format!("pr-url=clip{SEEN}")), "{out}");
    clean(&p, &["show", "changes"]);
    clean(&p, &["session", "show", "changes"]);
}

/// `baton mcp` over stdin and stdout, as an agent's CLI drives it: the
/// tools called in order, their results.
fn mcp(p: &TestProject, calls: &[Value]) -> Vec<Value> {
    let mut child = p
        .baton(&["mcp"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut send = |msg: Value| writeln!(stdin, "{msg}").unwrap();
    let mut read = || {
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        serde_json::from_str::<Value>(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    };
    send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "hostile", "version": "1"}}}),
    );
    read();
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let mut results = Vec::new();
    for (n, (name, args)) in calls
        .iter()
        .map(|c| (c["name"].clone(), c["arguments"].clone()))
        .enumerate()
    {
        send(
            json!({"jsonrpc": "2.0", "id": n + 1, "method": "tools/call",
            "params": {"name": name, "arguments": args}}),
        );
        let r = read();
        assert!(r["result"].is_object(), "{name}: {r}");
        results.push(r["result"].clone());
    }
    drop(stdin);
    baton_testkit::wait_child(&mut child, "baton mcp after stdin closed");
    results
}

#[test]
fn an_agents_inbox_items_are_escaped_and_a_huge_one_is_clipped() {
    let p = TestProject::new();
    // 3 MB, where the tool takes it; a text just under the MCP tools' own
    // size limit (64 KiB) in any case.
    let huge = format!("{HOSTILE} {}", "x".repeat(3 << 20));
    let large = format!("{HOSTILE} {}", "y".repeat(60_000));
    let results = mcp(
        &p,
        &[
            json!({"name": "notify", "arguments": {"message": HOSTILE}}),
            json!({"name": "notify", "arguments": {"message": huge}}),
            json!({"name": "notify", "arguments": {"message": large}}),
            json!({"name": "request_decision", "arguments": {
                "question": HOSTILE, "options": [HOSTILE, "no"], "wait_seconds": 0}}),
        ],
    );
    for (n, r) in results.iter().enumerate() {
        if n != 1 {
            assert_eq!(r["isError"], false, "call {n}: {r}");
        }
    }
    let huge_taken = results[1]["isError"] == false;
    let (code, out, _) = clean(&p, &["inbox"]);
    assert_eq!(code, 0);
    let items = if huge_taken { 4 } else { 3 };
    assert_eq!(out.lines().count(), items, "one line per item: {out:.3000}");
    assert!(out.contains(SEEN), "{out:.3000}");
    for line in out.lines() {
        assert!(line.len() < 8_000, "clipped: {} bytes", line.len());
    }
    assert!(out.contains("more bytes; `--json` has all)"), "{out:.3000}");
    // `--json` has all of it.
    let (_, json_out, _) = p.run(&["inbox", "--json"]);
    let all: Vec<Value> = serde_json::from_str(&json_out).unwrap();
    assert!(all.iter().any(|i| i["text"] == large.as_str()));
    assert_eq!(all.iter().any(|i| i["text"] == huge.as_str()), huge_taken);
    clean(&p, &["status", "--line"]);
}

#[test]
fn team_tasks_and_messages_are_escaped() {
    let p = TestProject::new();
    let team = |args: &[&str]| {
        let mut full = vec!["team"];
        full.extend_from_slice(args);
        let out = p
            .baton(&full)
            .env("BATON_LEAD_SESSION", "lead-1")
            .output()
            .unwrap();
        check(&full, &out)
    };
    let title = HOSTILE.replace(':', ";");
    let (code, _, err) = team(&[
        "create",
        "crew",
        "--teammate",
        "ana:engineer",
        "--task",
        &title,
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = team(&[
        "msg",
        "send",
        "crew",
        HOSTILE,
        "--to",
        "ana",
        "--subject",
        HOSTILE,
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = team(&["task", "start", "crew", "t1", "--as", "ana"]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = team(&[
        "task", "block", "crew", "t1", "--reason", HOSTILE, "--as", "ana",
    ]);
    assert_eq!(code, 0, "{err}");
    for args in [
        &["show", "crew"][..],
        &["ls"],
        &["msg", "ls", "crew"],
        &["msg", "ls", "crew", "--inbox", "ana"],
        &["review", "crew"],
    ] {
        let (code, out, err) = team(args);
        assert_eq!(code, 0, "{args:?}: {err}");
        if args[0] != "ls" {
            assert!(out.contains(SEEN), "{args:?}: {out}");
        }
    }
    let (_, out, _) = team(&["msg", "ls", "crew"]);
    assert_eq!(out.lines().count(), 1, "a message on one line: {out}");
}

/// On a terminal (a pty, through `script`) baton paints its status words:
/// those SGR sequences are all that reaches it raw.
#[test]
fn on_a_terminal_only_batons_own_colour_is_raw() {
    let p = TestProject::new();
    let file = hostile_file(&p);
    p.workflow(
        "h",
        &format!(
            "name = \"h\"\n[[phase]]\nid = \"said\"\nrun = \"cat '{file}' > \\\"$BATON_SUMMARY_FILE\\\"\"\n"
        ),
    );
    let description = format!("describe {HOSTILE}");
    assert_eq!(p.run(&["run", "h", &description, "--id", "t1"]).0, 0);
    let typescript = p.root().join(".baton/typescript");
    let bin = baton_testkit::baton_bin().display().to_string();
    let mut script = std::process::Command::new("script");
    script
        .args(["-qec", &format!("'{bin}' show t1; '{bin}' log t1")])
        .arg(&typescript)
        .current_dir(p.root())
        .stdin(Stdio::null());
    // The project's hermetic environment, with colour.
    for (k, v) in p.baton(&[]).get_envs() {
        match v {
            Some(v) => script.env(k, v),
            None => script.env_remove(k),
        };
    }
    let out = script
        .env_remove("NO_COLOR")
        .env("TERM", "xterm-256color")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let raw = String::from_utf8(fs_err::read(&typescript).unwrap()).unwrap();
    assert!(
        raw.contains("\x1b[32mCOMPLETE\x1b[0m"),
        "baton's colour: {raw:?}"
    );
    assert!(raw.contains(SEEN), "{raw:?}");
    // What is left once baton's own colour is taken out: no control.
    let sgr = without_sgr(&raw.replace("\r\n", "\n"));
    if let Some((at, c)) = raw_control(&sgr) {
        panic!("a raw {c:?} at {at}: {sgr:?}");
    }
}

/// `s` without the SGR sequences baton paints with (`ESC [ 1;31 m`).
fn without_sgr(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(at) = rest.find("\x1b[") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let n = after
            .bytes()
            .take_while(|b| b.is_ascii_digit() || *b == b';')
            .count();
        if after.as_bytes().get(n) == Some(&b'm') {
            rest = &after[n + 1..];
        } else {
            out.push_str("\x1b[");
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// An agent instance ended with a reason that holds escape sequences:
/// `agent show`, `ls` and `log` print it escaped.
#[test]
fn an_agent_instances_texts_are_escaped() {
    let (p, _remote) = common::instances::project();
    let (code, _, err) = clean(
        &p,
        &[
            "agent",
            "spawn",
            "idle work",
            "--id",
            "c1",
            "--agent",
            "idle",
        ],
    );
    assert_eq!(code, 0, "{err}");
    common::instances::settled(&p, "c1");
    let (code, _, err) = clean(&p, &["agent", "kill", "c1", "--reason", HOSTILE]);
    assert_eq!(code, 0, "{err}");
    let (_, out, _) = clean(&p, &["agent", "show", "c1"]);
    assert!(out.contains(&format!("ended:      clip{SEEN}")), "{out}");
    let (_, out, _) = clean(&p, &["agent", "log", "c1"]);
    assert!(out.contains(SEEN), "{out}");
    clean(&p, &["agent", "ls", "--all"]);
}
