//! `baton doctor --fix` rebuilding a lost store from the rendered files,
//! salvaging from a damaged one the records kept beside the tasks (and
//! naming each one the damage took), and living with `clean`.

use baton_testkit::TestProject;

const WF: &str = r#"
name = "m"
[[phase]]
id = "a"
run = "echo one > a.txt; echo a-summary > \"$BATON_SUMMARY_FILE\""
[[phase]]
id = "b"
run = "echo two >> a.txt; echo b-summary > \"$BATON_SUMMARY_FILE\""
[[phase]]
id = "gate"
wait = { human = "Ship it?" }
"#;

fn lose_the_store(p: &TestProject) {
    for f in ["baton.db", "baton.db-wal", "baton.db-shm"] {
        let _ = std::fs::remove_file(p.root().join(".baton").join(f));
    }
}

fn ids(p: &TestProject) -> Vec<String> {
    let (_, out, _) = p.run(&["ls", "--all", "--json"]);
    serde_json::from_str::<Vec<serde_json::Value>>(&out)
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_deleted_store_is_noticed_and_rebuilt_with_waits_and_checkpoints() {
    let p = TestProject::new();
    p.workflow("m", WF);
    assert_eq!(p.run(&["run", "m", "x", "--id", "w1"]).0, 4);
    lose_the_store(&p);
    // A fresh, empty store opens; doctor sees the rendered task it lacks.
    let (code, out, _) = p.run(&["doctor"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("task w1 is rendered in .baton/tasks/ but missing from the store"),
        "{out}"
    );
    let (code, out, err) = p.run(&["doctor", "--fix"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("rebuilt task w1"), "{out}");
    // Still waiting for the same thing, with its summaries.
    let st = p.state("w1");
    assert_eq!(st["status"], "WAITING", "{st:#}");
    assert_eq!(st["waiting"]["for"], "a human answer to \"Ship it?\"");
    assert_eq!(st["completed_phases"][1]["summary"], "b-summary");
    // The checkpoints came back from their refs: --from restores files.
    std::fs::write(p.root().join("a.txt"), "edited\n").unwrap();
    let (code, _, err) = p.run(&["resume", "w1", "--from", "b"]);
    assert_eq!(code, 4, "{err}");
    assert!(
        err.contains("restored the work tree to the start of b"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(p.root().join("a.txt")).unwrap(),
        "one\ntwo\n"
    );
    // A second doctor finds nothing left to do.
    let (code, out, _) = p.run(&["doctor"]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn cleaned_tasks_stay_cleaned_and_keep_their_checkpoints() {
    let p = TestProject::new();
    p.workflow(
        "q",
        "name = \"q\"\n[[phase]]\nid = \"a\"\nrun = \"echo a\"\n",
    );
    assert_eq!(p.run(&["run", "q", "x", "--id", "done1"]).0, 0);
    assert_eq!(p.run(&["clean", "--yes"]).0, 0);
    assert!(ids(&p).is_empty());
    assert!(
        p.root().join(".baton/tasks/done1/01-a.md").exists(),
        "clean keeps outputs"
    );
    // doctor neither complains about the refs nor resurrects the task.
    let refs = p.git(&["for-each-ref", "refs/baton/done1/"]);
    assert!(!refs.is_empty());
    let (code, out, _) = p.run(&["doctor", "--fix"]);
    assert_eq!(code, 0, "{out}");
    assert!(ids(&p).is_empty(), "a cleaned task came back");
    assert_eq!(
        p.git(&["for-each-ref", "refs/baton/done1/"]),
        refs,
        "checkpoints deleted"
    );
    let (code, out, _) = p.run(&["doctor"]);
    assert_eq!(code, 0, "{out}");
    // Reusing the id makes it a live record again, rebuilt if the store is lost.
    assert_eq!(p.run(&["run", "q", "x", "--id", "done1"]).0, 0);
    lose_the_store(&p);
    assert_eq!(p.run(&["doctor", "--fix"]).0, 0);
    assert_eq!(ids(&p), vec!["done1"]);
}

/// Hands GitHub's `issues.opened` example over as delivery `id`.
fn deliver(p: &TestProject, id: &str) -> serde_json::Value {
    let payload = baton_testkit::github_fixture("issues/opened.payload.json");
    let (code, out, err) = p.run(&[
        "deliver",
        "issues",
        &payload.display().to_string(),
        "--delivery",
        id,
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// An agent asks for an approval through `baton mcp` on stdio (the wire
/// Codex speaks) without waiting for the answer; the item's id.
fn ask_through_mcp(p: &TestProject, action: &str) -> String {
    use std::io::{BufRead, BufReader, Write};
    let mut child = p
        .baton(&["mcp"])
        .env("BATON_TASK_ID", "mig")
        .env("BATON_PHASE", "migrate")
        .env_remove("BATON_INSTANCE")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut call = |msg: serde_json::Value, answer: bool| {
        writeln!(stdin, "{msg}").unwrap();
        let mut line = String::new();
        if answer {
            out.read_line(&mut line).unwrap();
        }
        line
    };
    call(
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "codex-like", "version": "1"}}}),
        true,
    );
    call(
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        false,
    );
    let line = call(
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "request_approval", "arguments": {"action": action, "wait_seconds": 0}}}),
        true,
    );
    drop(stdin);
    baton_testkit::wait_child(&mut child, "baton mcp after stdin closed");
    let reply: serde_json::Value = serde_json::from_str(&line).unwrap();
    let item = &reply["result"]["structuredContent"];
    assert_eq!(item["answered"], false, "{reply}");
    item["id"].as_str().unwrap().to_string()
}

/// `baton team … --json`, expected to succeed.
fn team(p: &TestProject, args: &[&str]) -> serde_json::Value {
    let mut full = vec!["team"];
    full.extend_from_slice(args);
    full.push("--json");
    let (code, out, err) = p.run(&full);
    assert_eq!(code, 0, "team {args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// The seqs of team `name`'s messages.
fn message_seqs(p: &TestProject, name: &str) -> std::collections::BTreeSet<i64> {
    let all = team(p, &["msg", "ls", name, "--limit", "1000"]);
    all.as_array()
        .unwrap_or_else(|| panic!("{all}"))
        .iter()
        .map(|m| m["seq"].as_i64().unwrap())
        .collect()
}

/// Damages the store for real: after a checkpoint (so the file holds
/// everything), the pages `pick` chooses among those of table or index
/// `name` are overwritten with garbage.
fn damage(p: &TestProject, name: &str, pick: impl Fn(&[i64]) -> Vec<i64>) {
    use std::io::{Seek, SeekFrom, Write};
    let db = p.root().join(".baton/baton.db");
    let (size, pages) = {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
        let size: i64 = conn
            .query_row("PRAGMA page_size", [], |r| r.get(0))
            .unwrap();
        let mut stmt = conn
            .prepare(
                "SELECT pageno FROM dbstat WHERE name = ?1 AND pagetype = 'leaf' ORDER BY pageno",
            )
            .unwrap();
        let pages: Vec<i64> = stmt
            .query_map([name], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        (size, pick(&pages))
    };
    assert!(!pages.is_empty(), "no pages of {name} to damage");
    let mut f = std::fs::OpenOptions::new().write(true).open(&db).unwrap();
    for page in pages {
        f.seek(SeekFrom::Start(((page - 1) * size) as u64)).unwrap();
        f.write_all(&vec![0xA5; size as usize]).unwrap();
    }
}

#[test]
fn a_damaged_store_keeps_its_deliveries_inbox_items_and_teams() {
    let p = TestProject::new();
    p.workflow("m", WF);
    assert_eq!(p.run(&["run", "m", "x", "--id", "w1"]).0, 4);
    assert_eq!(deliver(&p, "d-1")["tasks"], serde_json::json!([]));
    let item = ask_through_mcp(&p, "drop the old users table");
    let (code, _, err) = p.run(&[
        "inbox",
        "deny",
        &item,
        "--reason",
        "not this week",
        "--by",
        "ana",
    ]);
    assert_eq!(code, 0, "{err}");
    team(
        &p,
        &[
            "create",
            "crew",
            "--teammate",
            "ana:engineer",
            "--task",
            "Schema",
        ],
    );
    for i in 1..=3 {
        let body = format!("message {i}");
        team(&p, &["msg", "send", "crew", "--to", "ana", &body]);
    }
    // The tasks' journal is what the damage hits: integrity fails.
    damage(&p, "events", |pages| pages.to_vec());
    let (code, out, _) = p.run(&["doctor"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("the store cannot be used"), "{out}");

    let (code, out, err) = p.run(&["doctor", "--fix"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("rebuilt task w1"), "{out}");
    let summary = out
        .lines()
        .find(|l| l.contains("salvaged "))
        .unwrap_or_else(|| panic!("no salvage reported: {out}"));
    assert!(
        summary.contains("salvaged 1 delivery, 1 inbox item, 1 team (")
            && summary.contains("3 messages")
            && summary.contains("from baton.db.damaged-"),
        "{summary}"
    );
    assert!(!out.contains("could not salvage"), "{out}");

    // The tasks are back.
    assert_eq!(ids(&p), vec!["w1"]);
    assert_eq!(p.state("w1")["status"], "WAITING");
    // The delivery is listed; it was only ignored, so its id given again
    // is judged again (still ignored: nothing waits for it), never lost.
    let (code, listed, _) = p.run(&["deliveries", "--json"]);
    assert_eq!(code, 0);
    let listed: serde_json::Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed[0]["id"], "d-1", "{listed}");
    assert_eq!(listed[0]["decision"], "ignored", "{listed}");
    let again = deliver(&p, "d-1");
    assert_eq!(again["decision"], "ignored", "{again}");
    let (_, listed, _) = p.run(&["deliveries", "--json"]);
    let listed: serde_json::Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(
        listed.as_array().unwrap().len(),
        1,
        "one record of d-1: {listed}"
    );
    // The agent's question, with its answer.
    let (code, all, _) = p.run(&["inbox", "--all", "--json"]);
    assert_eq!(code, 0);
    let all: serde_json::Value = serde_json::from_str(&all).unwrap();
    let asked = all
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == item.as_str())
        .unwrap_or_else(|| panic!("{all}"));
    assert_eq!(asked["text"], "drop the old users table", "{asked}");
    assert_eq!(asked["answer"]["choice"], "denied", "{asked}");
    assert_eq!(asked["answer"]["by"], "ana", "{asked}");
    assert_eq!(asked["answer"]["reason"], "not this week", "{asked}");
    // The team and its messages.
    let shown = team(&p, &["show", "crew"]);
    assert_eq!(shown["team"]["tasks"][0]["title"], "Schema", "{shown}");
    assert_eq!(shown["teammates"][0]["name"], "ana", "{shown}");
    assert_eq!(shown["messages"], 3, "{shown}");
    assert_eq!(shown["last_messages"][2]["body"], "message 3", "{shown}");
    assert_eq!(message_seqs(&p, "crew"), (1..=3).collect());
    // A new message follows on.
    let sent = team(&p, &["msg", "send", "crew", "--to", "ana", "after"]);
    assert_eq!(sent["message"]["seq"], 4, "{sent}");

    let (code, out, _) = p.run(&["doctor"]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn each_record_the_damage_took_is_named() {
    let p = TestProject::new();
    p.workflow("m", WF);
    assert_eq!(p.run(&["run", "m", "x", "--id", "w1"]).0, 4);
    for id in ["d-1", "d-2", "d-3"] {
        deliver(&p, id);
    }
    team(&p, &["create", "crew", "--teammate", "ana:engineer"]);
    // Long messages, a few to a page.
    for i in 1..=12 {
        let body = format!("message {i}: {}", "words ".repeat(250));
        team(&p, &["msg", "send", "crew", "--to", "ana", &body]);
    }
    // Every page of the deliveries, and one page among the messages'.
    damage(&p, "deliveries", |pages| pages.to_vec());
    damage(&p, "team_messages", |pages| {
        assert!(pages.len() >= 3, "{pages:?}");
        vec![pages[pages.len() / 2]]
    });

    let (code, out, err) = p.run(&["doctor", "--fix"]);
    assert_eq!(code, 1, "records were lost: {out}{err}");
    assert!(out.contains("rebuilt task w1"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.contains("salvaged ") && l.contains("1 team (") && l.contains("messages")),
        "{out}"
    );
    // Each delivery lost, by its id, with what to do.
    for id in ["d-1", "d-2", "d-3"] {
        let line = out
            .lines()
            .position(|l| {
                l.starts_with("problem")
                    && l.contains(&format!(
                        "could not salvage delivery id = '{id}' (table deliveries) from baton.db.damaged-"
                    ))
            })
            .unwrap_or_else(|| panic!("{id} not named: {out}"));
        let hint = out.lines().nth(line + 1).unwrap();
        assert!(
            hint.contains("hint:") && hint.contains("Recent Deliveries"),
            "{hint}"
        );
    }
    // The messages on the damaged page are named; the others are back.
    let named: std::collections::BTreeSet<i64> = out
        .lines()
        .filter_map(|l| {
            let rest = l
                .split("could not salvage message team_id = 'crew', seq = ")
                .nth(1)?;
            rest.split(' ').next()?.parse().ok()
        })
        .collect();
    let kept = message_seqs(&p, "crew");
    assert!(!named.is_empty(), "{out}");
    assert!(kept.is_disjoint(&named), "{kept:?} {named:?}");
    assert_eq!(
        kept.union(&named).copied().collect::<Vec<_>>(),
        (1..=12).collect::<Vec<_>>(),
        "{out}"
    );
    // The tasks are back all the same; the next doctor has nothing to say.
    assert_eq!(ids(&p), vec!["w1"]);
    let (code, out, _) = p.run(&["doctor"]);
    assert_eq!(code, 0, "{out}");
}

/// Issue 34: on a read-only project even `ls` and `show` failed, their
/// hint sent the person to `doctor --fix`, and that tried to set the
/// healthy store aside as damaged. Reading never writes; a write says the
/// store is read-only; and doctor leaves a store that passes its check.
#[test]
fn a_read_only_project_is_read_and_its_healthy_store_never_set_aside() {
    let p = TestProject::new();
    // A new project is clean (its session index is not missing).
    assert_eq!(p.run(&["doctor"]).0, 0);
    p.workflow("m", WF);
    assert_eq!(p.run(&["run", "m", "x", "--id", "ro"]).0, 4);
    // A runner killed mid-phase: its files are out of date.
    let out = p
        .baton(&["run", "m", "x", "--id", "stale"])
        .env("BATON_TEST_CRASH_AT", "after-spawn:b")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), None);
    let ro = |args: &[&str]| {
        let out = p.baton_read_only(args).output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out, err) = ro(&["ls", "--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"ro\""), "{out}");
    let (code, out, err) = ro(&["show", "ro", "--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"WAITING\""), "{out}");
    let (code, out, err) = ro(&["log", "ro"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("phase_passed"), "{out}");
    for args in [
        &["show", "stale"][..],
        &["show", "stale", "--json"],
        &["session", "show", "stale"],
    ] {
        let (code, out, err) = ro(args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(out.contains("stale"), "{args:?}: {out}");
    }
    // A write says why it cannot, and sends nobody to doctor --fix.
    let (code, _, err) = ro(&["cancel", "ro"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("read-only"), "{err}");
    assert!(!err.contains("doctor --fix"), "{err}");
    let (code, out, err) = ro(&["doctor", "--fix"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        err.contains("cannot be written here"),
        "no hint to repair here: {err}"
    );
    assert!(
        out.contains("passes its integrity check") && out.contains("is read-only"),
        "{out}"
    );
    assert!(!out.contains("set the damaged store aside"), "{out}");
    let moved = std::fs::read_dir(p.root().join(".baton"))
        .unwrap()
        .filter_map(|e| e.ok())
        .any(|e| e.file_name().to_string_lossy().contains("damaged"));
    assert!(!moved, "the healthy store was set aside");
    // Back on a writable folder, all is as it was.
    assert_eq!(p.state("ro")["status"], "WAITING");
    assert_eq!(p.run(&["resume", "stale"]).0, 4);
    assert_eq!(p.run(&["doctor"]).0, 0);
}

/// The same reads on PostgreSQL, the project folder read-only: the store
/// answers, and what baton would render there is left for later.
#[test]
fn a_read_only_project_folder_on_postgresql_is_read() {
    baton_testkit::with_backend(baton_testkit::Backend::Postgres, || {
        let p = TestProject::new();
        p.workflow("m", WF);
        assert_eq!(p.run(&["run", "m", "x", "--id", "ro"]).0, 4);
        for args in [
            &["ls", "--json"][..],
            &["show", "ro", "--json"],
            &["log", "ro"],
            &["doctor"],
        ] {
            let out = p.baton_read_only(args).output().unwrap();
            assert_eq!(
                out.status.code(),
                Some(0),
                "{args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    });
}

/// Issue 34, minor: a branch named `baton` in the repository made git
/// answer "cannot lock ref … 'refs/heads/baton' exists" with no hint; a
/// failed spawn's hint said it removed a worktree and branch it never
/// made; temporary files a write cut short left stayed for good.
#[test]
fn a_branch_in_the_way_is_named_and_leftovers_of_cut_writes_are_removed() {
    let p = TestProject::new();
    p.git(&["add", "-A"]);
    p.git(&["commit", "-qm", "baton"]);
    p.git(&["branch", "baton"]);
    let (code, _, err) = p.run(&["run", "example", "x", "--queue", "--id", "q1"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("a branch named baton is in the way of branch baton/q1"),
        "{err}"
    );
    assert!(err.contains("git branch -m baton baton-old"), "{err}");
    assert!(!err.contains("cannot lock ref"), "{err}");
    assert!(
        p.run(&["ls", "--all", "--json"]).1.trim() == "[]",
        "nothing was made"
    );
    let (code, _, err) = p.run(&["agent", "spawn", "work", "--id", "i1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is in the way"), "{err}");
    assert!(!err.contains("removed worktree"), "it made none: {err}");
    // Following the hint works.
    p.git(&["branch", "-m", "baton", "baton-old"]);
    assert_eq!(
        p.run(&["run", "example", "x", "--queue", "--id", "q1"]).0,
        0
    );
    // A branch below the one baton makes is in the way as well.
    p.git(&["branch", "baton/q2/deeper"]);
    let (code, _, err) = p.run(&["run", "example", "x", "--queue", "--id", "q2"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("a branch named baton/q2/deeper is in the way"),
        "{err}"
    );

    let tmp = p.root().join(".baton/tasks/q1/.state.json.tmp-4194303-1");
    std::fs::write(&tmp, "").unwrap();
    let (code, out, _) = p.run(&["doctor"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("temporary file(s) a write cut short left"),
        "{out}"
    );
    let (code, out, err) = p.run(&["doctor", "--fix"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!tmp.exists());
}
