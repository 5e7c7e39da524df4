//! End-to-end tests of the `baton` command line: the real binary in a
//! hermetic git repository, asserting what a user would notice (exit codes,
//! messages, files, JSON fields).

use baton_testkit::{TestProject, on_both_backends};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

/// Runs baton, asserts the exit code, returns (stdout, stderr).
fn expect(p: &TestProject, args: &[&str], code: i32) -> (String, String) {
    let (c, out, err) = p.run(args);
    assert_eq!(
        c, code,
        "baton {args:?} exited {c}, expected {code}\n--- stdout\n{out}\n--- stderr\n{err}"
    );
    (out, err)
}

/// `baton ls [--all] --json`, parsed.
fn ls(p: &TestProject, all: bool) -> Vec<Value> {
    let args: &[&str] = if all {
        &["ls", "--all", "--json"]
    } else {
        &["ls", "--json"]
    };
    let (out, _) = expect(p, args, 0);
    serde_json::from_str::<Value>(&out)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// The entry of `phases` (show --json) for one phase.
fn phase<'a>(state: &'a Value, id: &str) -> &'a Value {
    state["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == id)
        .unwrap_or_else(|| panic!("no phase {id} in {state:#}"))
}

/// The ids of `completed_phases`.
fn completed(state: &Value) -> Vec<String> {
    state["completed_phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap().to_string())
        .collect()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

fn read(p: &TestProject, rel: &str) -> String {
    fs_err::read_to_string(p.root().join(rel)).unwrap()
}

fn write(p: &TestProject, rel: &str, text: &str) {
    let path = p.root().join(rel);
    fs_err::create_dir_all(path.parent().unwrap()).unwrap();
    fs_err::write(path, text).unwrap();
}

/// Every file under `dir`, relative, `.git` left out.
fn files_under(dir: &Path) -> BTreeSet<String> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeSet<String>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let path = e.path();
            if e.file_name() == ".git" {
                continue;
            }
            if path.is_dir() {
                walk(base, &path, out);
            } else {
                out.insert(
                    path.strip_prefix(base)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned(),
                );
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(dir, dir, &mut out);
    out
}

/// How many `phase_started` events each phase has.
fn starts(p: &TestProject, id: &str) -> std::collections::BTreeMap<String, usize> {
    let mut m = std::collections::BTreeMap::new();
    for e in p.journal(id) {
        if e["kind"] == "phase_started" {
            *m.entry(e["phase"].as_str().unwrap().to_string())
                .or_insert(0) += 1;
        }
    }
    m
}

// ----- 1. init ------------------------------------------------------------

#[test]
fn init_writes_files_example_runs_apex_parses_and_reinit_keeps_files() {
    let p = TestProject::new();
    for f in [
        "config.toml",
        ".gitignore",
        "workflows/example.toml",
        "workflows/apex.toml",
    ] {
        assert!(
            p.root().join(".baton").join(f).is_file(),
            ".baton/{f} missing"
        );
    }
    assert!(read(&p, ".baton/.gitignore").contains("baton.db"));

    let (_, err) = expect(&p, &["run", "example", "x"], 0);
    assert!(err.contains("COMPLETE"), "{err}");

    // apex.toml parses: the only complaint is the unknown flag.
    let (_, err) = expect(&p, &["run", "apex", "x", "--flag", "nope=1"], 2);
    assert!(err.contains("nope"), "{err}");
    for flag in ["tests", "security", "docs", "cicd", "pr", "e2e", "mvp"] {
        assert!(err.contains(flag), "apex flag {flag} not listed: {err}");
    }
    assert_eq!(ls(&p, true).len(), 1, "the refused apex run created a task");

    // Re-running init keeps (edited) files.
    let edited = format!("{}\n# my edit\n", read(&p, ".baton/workflows/example.toml"));
    write(&p, ".baton/workflows/example.toml", &edited);
    let config = read(&p, ".baton/config.toml");
    expect(&p, &["init"], 0);
    assert_eq!(read(&p, ".baton/workflows/example.toml"), edited);
    assert_eq!(read(&p, ".baton/config.toml"), config);
    assert!(p.root().join(".baton/workflows/apex.toml").is_file());
}

// ----- 2. invalid workflows ------------------------------------------------

#[test]
fn invalid_workflows_exit_2_with_location_and_hint() {
    let p = TestProject::new();
    // (what, file, line of the error, a word the message must have)
    let cases: &[(&str, &str, usize, &str)] = &[
        (
            "unknown key",
            "name = \"bad\"\n\n[[phase]]\nid = \"a\"\nrun = \"true\"\ntypo = 1\n",
            6,
            "typo",
        ),
        (
            "cycle in needs",
            "name = \"bad\"\n\n[[phase]]\nid = \"a\"\nneeds = [\"b\"]\nrun = \"true\"\n\n[[phase]]\nid = \"b\"\nneeds = [\"a\"]\nrun = \"true\"\n",
            10,
            "cycle",
        ),
        (
            "unknown needs",
            "name = \"bad\"\n\n[[phase]]\nid = \"a\"\nrun = \"true\"\n\n[[phase]]\nid = \"b\"\nneeds = [\"zzz\"]\nrun = \"true\"\n",
            9,
            "zzz",
        ),
        (
            "unknown loop_to",
            "name = \"bad\"\n\n[[phase]]\nid = \"a\"\nrun = \"true\"\nloop_to = \"nowhere\"\n",
            6,
            "nowhere",
        ),
        (
            "unknown template variable",
            "name = \"bad\"\n\n[[phase]]\nid = \"a\"\nrun = \"echo {{nope}}\"\n",
            5,
            "{{nope}}",
        ),
        (
            "duplicate phase ids",
            "name = \"bad\"\n\n[[phase]]\nid = \"a\"\nrun = \"true\"\n\n[[phase]]\nid = \"a\"\nrun = \"true\"\n",
            8,
            "duplicate",
        ),
    ];
    for (what, toml, line, word) in cases {
        p.workflow("bad", toml);
        let (_, err) = expect(&p, &["run", "bad", "x"], 2);
        let at = err
            .find(".baton/workflows/bad.toml:")
            .unwrap_or_else(|| panic!("{what}: no file location in stderr:\n{err}"));
        let rest = &err[at + ".baton/workflows/bad.toml:".len()..];
        let mut parts = rest.splitn(3, ':');
        let l: usize = parts
            .next()
            .unwrap()
            .parse()
            .unwrap_or_else(|_| panic!("{what}: no line number:\n{err}"));
        let c: usize = parts
            .next()
            .unwrap()
            .parse()
            .unwrap_or_else(|_| panic!("{what}: no column number:\n{err}"));
        assert!(l >= 1 && c >= 1, "{what}: {err}");
        assert_eq!(l, *line, "{what}: wrong line:\n{err}");
        assert!(
            err.contains(word),
            "{what}: the message lacks {word:?}:\n{err}"
        );
        assert!(
            !err.contains("PhaseId("),
            "{what}: a debug form leaks into the message:\n{err}"
        );
        assert!(
            err.lines().any(|l| l.starts_with("hint:")),
            "{what}: no hint line:\n{err}"
        );
    }
    assert!(
        ls(&p, true).is_empty(),
        "an invalid workflow created a task"
    );
    assert!(
        !p.root().join(".baton/tasks").exists()
            || files_under(&p.root().join(".baton/tasks")).is_empty()
    );
}

// ----- 3. path traversal ---------------------------------------------------

#[test]
fn path_traversal_is_refused() {
    let p = TestProject::new();
    expect(&p, &["ls"], 0); // creates the store
    let before = files_under(p.root());
    let outside = std::env::temp_dir().join("baton-traversal-probe");
    let outside_s = outside.display().to_string();
    for id in ["../x", &outside_s, "a/b", "..", ".hidden"] {
        let (_, err) = expect(&p, &["run", "example", "x", "--id", id], 2);
        assert!(err.contains("error:"), "{err}");
    }
    for args in [
        &["show", "../x"][..],
        &["show", "../../etc/passwd", "--json"],
        &["log", "../x"],
        &["resume", "../x"],
        &["rm", "../x"],
        &["cancel", "../x"],
        &["fork", "../x", "--from", "analyze", "--id", "y"],
    ] {
        expect(&p, args, 2);
    }
    // A NUL cannot travel through argv; the `current` pointer
    // (`.baton/tasks/current`) is the way in. Each refusal names what the
    // pointer holds, so it is not mistaken for "no current task".
    for bad in ["../x\n", "a\0b\n", "/abs\n", "a/b\n", "..\n"] {
        write(&p, ".baton/tasks/current", bad);
        let shown = format!("{:?}", bad.trim());
        for args in [&["show"][..], &["show", "--json"], &["log"], &["resume"]] {
            let (_, err) = expect(&p, args, 2);
            assert!(err.contains("error:"), "{args:?} with {bad:?}: {err}");
            assert!(
                err.contains(&shown),
                "{args:?} with {bad:?} should name {shown}: {err}"
            );
            assert!(
                !err.contains("no current task"),
                "{args:?} with {bad:?}: {err}"
            );
        }
    }
    std::fs::remove_file(p.root().join(".baton/tasks/current")).unwrap();
    let (_, err) = expect(&p, &["show"], 2);
    assert!(err.contains("no current task"), "{err}");

    p.workflow(
        "trav",
        "name = \"trav\"\n\n[[phase]]\nid = \"../x\"\nrun = \"true\"\n",
    );
    let (_, err) = expect(&p, &["run", "trav", "x", "--id", "t1"], 2);
    assert!(err.contains(".baton/workflows/trav.toml:4:"), "{err}");
    std::fs::remove_file(p.root().join(".baton/workflows/trav.toml")).unwrap();

    let after: BTreeSet<String> = files_under(p.root())
        .into_iter()
        .filter(|f| !f.starts_with(".baton/baton.db"))
        .collect();
    let before: BTreeSet<String> = before
        .into_iter()
        .filter(|f| !f.starts_with(".baton/baton.db"))
        .collect();
    assert_eq!(after, before, "files appeared or vanished");
    assert!(!outside.exists());
    assert!(!p.root().join(".baton/x").exists() && !p.root().join("x").exists());
    assert!(ls(&p, true).is_empty());
}

// ----- 4. failing phase commands ---------------------------------------------

on_both_backends! {
fn failing_commands_fail_the_phase_with_their_exit_status() {
    let p = TestProject::new();
    write(&p, "noexec.sh", "#!/bin/sh\necho hi\n");
    let cases: &[(&str, &str, &str, &str)] = &[
        (
            "missing",
            "no-such-cmd-xyz",
            "exit status 127",
            "no-such-cmd-xyz",
        ),
        ("noexec", "./noexec.sh", "exit status 126", "noexec.sh"),
        (
            "exit3",
            "echo 'something broke badly' >&2; exit 3",
            "exit status 3",
            "something broke badly",
        ),
    ];
    for (name, cmd, status, stderr_line) in cases {
        p.workflow(name, &format!("name = \"{name}\"\n\n[[phase]]\nid = \"first\"\nrun = \"echo ok\"\n\n[[phase]]\nid = \"bad\"\nrun = {cmd:?}\n"));
        let (_, err) = expect(&p, &["run", name, "x", "--id", name], 1);
        assert!(err.contains("FAILED"), "{err}");
        let st = p.state(name);
        assert_eq!(st["status"], "FAILED");
        assert_eq!(phase(&st, "bad")["status"], "FAILED");
        assert_eq!(phase(&st, "first")["status"], "PASS");
        assert!(
            phase(&st, "bad")["last_error"]
                .as_str()
                .unwrap()
                .contains(status),
            "{name}: {st:#}"
        );
        let code: i64 = status.rsplit(' ').next().unwrap().parse().unwrap();
        let failed: Vec<Value> = p
            .journal(name)
            .into_iter()
            .filter(|e| e["kind"] == "phase_failed")
            .collect();
        assert_eq!(failed.len(), 1, "{name}");
        assert_eq!(failed[0]["phase"], "bad");
        assert_eq!(failed[0]["exit_code"], code, "{name}: {:#}", failed[0]);
        assert!(
            failed[0]["stderr_tail"]
                .as_str()
                .unwrap()
                .contains(stderr_line),
            "{name}: {:#}",
            failed[0]
        );
    }

    // on_failure = "skip": SKIPPED, and the task completes.
    p.workflow(
        "skip",
        "name = \"skip\"\n\n[[phase]]\nid = \"bad\"\nrun = \"exit 3\"\non_failure = \"skip\"\n\n[[phase]]\nid = \"after\"\nrun = \"echo after\"\n",
    );
    expect(&p, &["run", "skip", "x", "--id", "skip"], 0);
    let st = p.state("skip");
    assert_eq!(st["status"], "COMPLETE");
    assert_eq!(phase(&st, "bad")["status"], "SKIPPED");
    assert_eq!(phase(&st, "after")["status"], "PASS");

    // max_attempts = 3: three tries, then the task fails.
    p.workflow("thrice", "name = \"thrice\"\n\n[[phase]]\nid = \"bad\"\nrun = \"echo try >> tries.txt; exit 3\"\nmax_attempts = 3\n");
    expect(&p, &["run", "thrice", "x", "--id", "thrice"], 1);
    assert_eq!(starts(&p, "thrice")["bad"], 3);
    assert_eq!(read(&p, "tries.txt").lines().count(), 3);
    let st = p.state("thrice");
    assert_eq!(phase(&st, "bad")["attempt"], 3);
    assert_eq!(st["status"], "FAILED");

    // An agent whose program is not installed: refused up front, exit 2,
    // nothing created.
    let config = format!(
        "{}\n[agents.ghost]\ncommand = [\"no-such-agent-xyz\", \"{{{{prompt}}}}\"]\n[agents.local]\ncommand = [\"./agent.sh\", \"{{{{prompt_file}}}}\"]\n",
        read(&p, ".baton/config.toml")
    );
    write(&p, ".baton/config.toml", &config);
    p.workflow("agent", "name = \"agent\"\n\n[[phase]]\nid = \"think\"\nagent = \"ghost\"\nprompt = \"think about {{task}}\"\n");
    let (_, err) = expect(&p, &["run", "agent", "x", "--id", "agent"], 2);
    assert!(
        err.contains("no-such-agent-xyz") && err.contains("cannot be run"),
        "{err}"
    );
    assert!(err.contains("hint:"), "{err}");
    let (_, out, _) = p.run(&["ls", "--all", "--json"]);
    assert!(!out.contains("\"agent\""), "a task was created: {out}");

    // An agent program that disappears while the task runs: the attempt
    // fails with "cannot start".
    write(&p, "agent.sh", "#!/bin/sh\necho thought\n");
    let mut perm = std::fs::metadata(p.root().join("agent.sh"))
        .unwrap()
        .permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(p.root().join("agent.sh"), perm).unwrap();
    p.workflow("gone", "name = \"gone\"\n\n[[phase]]\nid = \"remove\"\nrun = \"rm agent.sh\"\n\n[[phase]]\nid = \"think\"\nagent = \"local\"\nprompt = \"think about {{task}}\"\n");
    let (_, err) = expect(&p, &["run", "gone", "x", "--id", "gone"], 1);
    assert!(err.contains("cannot start"), "{err}");
    let st = p.state("gone");
    assert!(
        phase(&st, "think")["last_error"]
            .as_str()
            .unwrap()
            .contains("cannot start"),
        "{st:#}"
    );
}
}

// ----- 5. loop_to ----------------------------------------------------------

on_both_backends! {
fn loop_to_goes_back_and_gives_up_after_max_iterations() {
    let p = TestProject::new();
    p.workflow(
        "loop",
        r#"name = "loop"

[[phase]]
id = "execute"
run = "echo run >> executions.txt; echo executed"

[[phase]]
id = "validate"
run = "if [ -f .validated-once ]; then echo valid; else touch .validated-once; echo 'not valid yet' >&2; exit 1; fi"
loop_to = "execute"
max_iterations = 3

[[phase]]
id = "done"
run = "echo done"
"#,
    );
    expect(&p, &["run", "loop", "x", "--id", "l1"], 0);
    let st = p.state("l1");
    assert_eq!(st["status"], "COMPLETE");
    assert_eq!(st["iteration_counts"]["validate"], 1, "{st:#}");
    assert_eq!(
        p.passes("l1"),
        [
            ("done".to_string(), 1),
            ("execute".to_string(), 2),
            ("validate".to_string(), 1)
        ]
        .into()
    );
    assert_eq!(read(&p, "executions.txt").lines().count(), 2);

    p.workflow(
        "never",
        r#"name = "never"

[[phase]]
id = "execute"
run = "echo executed"

[[phase]]
id = "validate"
run = "echo 'still broken' >&2; exit 1"
loop_to = "execute"
max_iterations = 2
"#,
    );
    let (_, err) = expect(&p, &["run", "never", "x", "--id", "l2"], 1);
    assert!(err.contains("FAILED"), "{err}");
    let st = p.state("l2");
    assert_eq!(st["status"], "FAILED");
    assert_eq!(st["iteration_counts"]["validate"], 2, "{st:#}");
    assert_eq!(p.passes("l2")["execute"], 3);
}
}

// ----- 6. waits --------------------------------------------------------------

on_both_backends! {
fn human_and_timer_waits_exit_4_and_resume_when_due() {
    let p = TestProject::new();
    p.workflow(
        "ship",
        "name = \"ship\"\n\n[[phase]]\nid = \"build\"\nrun = \"echo built\"\n\n[[phase]]\nid = \"approve\"\nwait = { human = \"Ship it?\", options = [\"yes\", \"no\"] }\n",
    );
    let (_, err) = expect(&p, &["run", "ship", "x", "--id", "h1"], 4);
    assert!(err.contains("WAITING"), "{err}");
    let rows = ls(&p, false);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["status"], "WAITING");
    assert_eq!(rows[0]["last_phase"], "approve");
    let (out, _) = expect(&p, &["ls"], 0);
    assert!(out.contains("WAITING"), "{out}");
    let (_, err) = expect(&p, &["resume", "h1"], 4);
    assert!(err.contains("Ship it?"), "{err}");
    assert_eq!(p.state("h1")["status"], "WAITING");

    // A durable timer that is far from due: resume says when and waits on.
    p.workflow(
        "later",
        "name = \"later\"\n\n[[phase]]\nid = \"a\"\nrun = \"echo a\"\n\n[[phase]]\nid = \"cool\"\nwait = { duration = \"1h\" }\n",
    );
    expect(&p, &["run", "later", "x", "--id", "l1"], 4);
    let (_, err) = expect(&p, &["resume", "l1"], 4);
    assert!(err.contains("due at"), "{err}");
    assert_eq!(p.state("l1")["status"], "WAITING");
    assert_eq!(p.state("l1")["waiting"]["phase"], "cool");

    // A short timer: once due, resume passes it and the task goes on.
    p.workflow(
        "timer",
        "name = \"timer\"\n\n[[phase]]\nid = \"a\"\nrun = \"echo a\"\n\n[[phase]]\nid = \"cool\"\nwait = { duration = \"1s\" }\n\n[[phase]]\nid = \"b\"\nrun = \"echo b\"\n",
    );
    let (_, err) = expect(&p, &["run", "timer", "x", "--id", "t1"], 4);
    assert!(err.contains("due at"), "{err}");
    let st = p.state("t1");
    assert_eq!(st["status"], "WAITING");
    assert_eq!(st["pending_phases"], serde_json::json!(["cool", "b"]));
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let (_, err) = expect(&p, &["resume", "t1"], 0);
    assert!(err.contains("COMPLETE"), "{err}");
    let st = p.state("t1");
    assert_eq!(st["status"], "COMPLETE");
    assert_eq!(completed(&st), ["a", "cool", "b"]);
}
}

// ----- 7. definition pinning --------------------------------------------------

on_both_backends! {
fn edited_workflow_is_pinned_until_upgrade() {
    let p = TestProject::new();
    let v1 = r#"name = "pin"

[[phase]]
id = "a"
run = "echo a >> a-runs.txt; echo a-v1"

[[phase]]
id = "b"
run = "test -f go || { echo 'no go file' >&2; exit 1; }; echo b-v1"

[[phase]]
id = "c"
run = "echo c-v1"
"#;
    p.workflow("pin", v1);
    expect(&p, &["run", "pin", "x", "--id", "pin1"], 1);

    // Edited: c's command changes and a phase d is added.
    let v2 =
        v1.replace("echo c-v1", "echo c-v2") + "\n[[phase]]\nid = \"d\"\nrun = \"echo d-v2\"\n";
    p.workflow("pin", &v2);
    write(&p, "go", "");
    let (_, err) = expect(&p, &["resume", "pin1"], 0);
    assert!(
        err.contains("changed"),
        "no note about the edited file: {err}"
    );
    assert!(err.contains("--upgrade"), "{err}");
    let st = p.state("pin1");
    assert_eq!(completed(&st), ["a", "b", "c"]);
    assert!(
        st["pending_phases"].as_array().unwrap().is_empty(),
        "{st:#}"
    );
    assert!(
        !st["phases"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["id"] == "d")
    );
    assert_eq!(st["completed_phases"][2]["summary"], "c-v1");

    // --upgrade, with c removed: d runs; a and b are not re-run.
    let v3 = v2.replace("[[phase]]\nid = \"c\"\nrun = \"echo c-v2\"\n\n", "");
    assert!(!v3.contains("id = \"c\""));
    p.workflow("pin", &v3);
    let (_, err) = expect(&p, &["resume", "pin1", "--upgrade"], 0);
    assert!(
        err.contains("removed c"),
        "the removed phase is not reported: {err}"
    );
    assert!(err.contains("added d"), "{err}");
    let st = p.state("pin1");
    assert_eq!(st["status"], "COMPLETE");
    assert_eq!(completed(&st), ["a", "b", "d"]);
    for c in st["completed_phases"].as_array().unwrap() {
        assert_eq!(c["status"], "PASS");
    }
    assert_eq!(st["completed_phases"][2]["summary"], "d-v2");
    let passes = p.passes("pin1");
    assert_eq!(passes["a"], 1);
    assert_eq!(passes["b"], 1);
    assert_eq!(passes["d"], 1);
    assert_eq!(read(&p, "a-runs.txt").lines().count(), 1);
}
}

// ----- 8. resume --from and fork ------------------------------------------------

const AB: &str = r#"name = "ab"

[[phase]]
id = "a"
run = "echo one > a.txt; echo a-done"

[[phase]]
id = "b"
run = "cp a.txt seen-by-b.txt; echo two >> a.txt; echo bee > b.txt; echo b-done"

[[phase]]
id = "c"
run = "echo c-done"
"#;

on_both_backends! {
fn resume_from_rewinds_state_and_worktree() {
    let p = TestProject::new();
    p.workflow("ab", AB);
    expect(&p, &["run", "ab", "x", "--id", "ab1"], 0);
    assert_eq!(read(&p, "a.txt"), "one\ntwo\n");
    write(&p, "a.txt", "edited by hand\n");

    expect(&p, &["resume", "ab1", "--from", "b"], 0);
    // b saw a.txt as it was when b first started, then changed it again.
    assert_eq!(read(&p, "seen-by-b.txt"), "one\n");
    assert_eq!(read(&p, "a.txt"), "one\ntwo\n");
    assert_eq!(read(&p, "b.txt"), "bee\n");
    assert_eq!(
        p.passes("ab1"),
        [
            ("a".to_string(), 1),
            ("b".to_string(), 2),
            ("c".to_string(), 2)
        ]
        .into()
    );
    let st = p.state("ab1");
    assert_eq!(st["status"], "COMPLETE");
    assert_eq!(completed(&st), ["a", "b", "c"]);

    expect(&p, &["resume", "ab1", "--from", "nope"], 2);
}
}

on_both_backends! {
fn fork_starts_a_new_task_and_leaves_the_original_alone() {
    let p = TestProject::new();
    p.workflow("ab", AB);
    expect(&p, &["run", "ab", "x", "--id", "ab1"], 0);
    let journal = p.journal("ab1");
    let state = p.state("ab1");

    expect(&p, &["fork", "ab1", "--from", "b", "--id", "ab2"], 0);
    let st = p.state("ab2");
    assert_eq!(st["status"], "COMPLETE");
    assert_eq!(completed(&st), ["a", "b", "c"]);
    assert_eq!(st["completed_phases"][0]["summary"], "a-done");
    assert_eq!(st["completed_phases"][0]["status"], "PASS");
    let passes = p.passes("ab2");
    assert_eq!(passes.get("a"), None, "fork re-ran a: {passes:?}");
    assert_eq!(passes["b"], 1);
    assert_eq!(passes["c"], 1);
    assert_eq!(read(&p, "seen-by-b.txt"), "one\n");

    assert_eq!(
        p.journal("ab1"),
        journal,
        "fork changed the original's journal"
    );
    assert_eq!(
        p.state("ab1")["completed_phases"],
        state["completed_phases"]
    );

    let (_, err) = expect(&p, &["fork", "ab1", "--from", "b", "--id", "ab2"], 2);
    assert!(err.contains("ab2"), "{err}");
    let (_, err) = expect(&p, &["fork", "ab1", "--from", "nope", "--id", "ab3"], 2);
    assert!(err.contains("nope"), "{err}");
    assert_eq!(ls(&p, true).len(), 2);
}
}

// ----- 9. damage -----------------------------------------------------------

on_both_backends! {
fn damaged_rendered_files_are_repaired() {
    let p = TestProject::new();
    expect(&p, &["run", "example", "x", "--id", "ex"], 0);
    let state_file = p.root().join(".baton/tasks/ex/state.json");
    let good = fs_err::read_to_string(&state_file).unwrap();
    fs_err::write(&state_file, &good[..good.len() / 2]).unwrap();
    let st = p.state("ex");
    assert_eq!(st["task_id"], "ex");
    assert_eq!(st["status"], "COMPLETE");
    let v: Value = serde_json::from_str(&fs_err::read_to_string(&state_file).unwrap())
        .expect("state.json re-rendered");
    assert_eq!(v["task_id"], "ex");

    let md = p.root().join(".baton/tasks/ex/02-plan.md");
    assert!(md.is_file(), "no phase output {}", md.display());
    let text = fs_err::read_to_string(&md).unwrap();
    fs_err::remove_file(&md).unwrap();
    let (out, _) = expect(&p, &["doctor"], 1);
    assert!(out.contains("problem"), "{out}");
    assert!(out.contains("ex"), "{out}");
    expect(&p, &["doctor", "--fix"], 0);
    assert_eq!(fs_err::read_to_string(&md).unwrap(), text);
    expect(&p, &["doctor"], 0);
}
}

#[test]
fn garbage_store_is_rebuilt_by_doctor_fix() {
    let p = TestProject::new();
    expect(&p, &["run", "example", "x", "--id", "ex"], 0);
    let before = p.state("ex");
    let db = p.root().join(".baton/baton.db");
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
    fs_err::write(
        &db,
        b"this is not a sqlite database at all\x00\x01\x02garbage garbage garbage".repeat(64),
    )
    .unwrap();

    let (_, err) = expect(&p, &["ls"], 1);
    assert!(err.contains("error:") && err.contains("baton.db"), "{err}");
    assert!(
        err.lines()
            .any(|l| l.starts_with("hint:") && l.contains("baton doctor --fix")),
        "{err}"
    );

    // Not a database at all: nothing beside the tasks can be salvaged
    // from it, which is said (exit 1), not kept quiet.
    let (out, _) = expect(&p, &["doctor", "--fix"], 1);
    assert!(out.contains("rebuilt task ex"), "{out}");
    assert!(
        out.contains("problem could not salvage anything from baton.db.damaged-"),
        "{out}"
    );
    let aside: Vec<_> = std::fs::read_dir(p.root().join(".baton"))
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("baton.db.damaged-")
        })
        .collect();
    assert!(!aside.is_empty(), "the damaged store was not set aside");

    let st = p.state("ex");
    assert_eq!(st["status"], "COMPLETE");
    assert_eq!(completed(&st), completed(&before));
    for (a, b) in st["completed_phases"]
        .as_array()
        .unwrap()
        .iter()
        .zip(before["completed_phases"].as_array().unwrap())
    {
        assert_eq!(a["summary"], b["summary"], "{}", a["id"]);
        assert_eq!(a["status"], b["status"], "{}", a["id"]);
    }
    let rows = ls(&p, true);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["id"], "ex");
    expect(&p, &["doctor"], 0);
}

// ----- 10. listing and shapes -------------------------------------------------

fn is_rfc3339_utc(v: &Value) -> bool {
    v.as_str()
        .is_some_and(|s| s.ends_with('Z') && s.parse::<jiff::Timestamp>().is_ok())
}

on_both_backends! {
fn json_shapes_brief_files_changed_and_tech_stack() {
    let p = TestProject::new();
    write(
        &p,
        "Cargo.toml",
        "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    p.workflow(
        "shapes",
        r#"name = "shapes"

[flags]
fast = true

[[phase]]
id = "setup"
run = "mkdir -p src && echo 'fn x() {}' > src/x.rs && echo 'wrote src/x.rs'"

[[phase]]
id = "plan"
run = "printf 'Plan is ready\n\nAcceptance criteria:\n- works\n' > \"$BATON_SUMMARY_FILE\""

[[phase]]
id = "handoff"
run = "cat \"$BATON_BRIEF_FILE\" > brief-copy.md; echo copied"
"#,
    );
    expect(
        &p,
        &[
            "run", "shapes", "make it", "--id", "s1", "--label", "issue=42",
        ],
        0,
    );

    let rows = ls(&p, true);
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    for k in [
        "id",
        "workflow",
        "status",
        "last_phase",
        "updated_at",
        "resumable",
    ] {
        assert!(row.get(k).is_some(), "ls --json lacks {k}: {row:#}");
    }
    assert_eq!(row["id"], "s1");
    assert_eq!(row["workflow"], "shapes");
    assert_eq!(row["status"], "COMPLETE");
    assert_eq!(row["resumable"], false);
    assert!(is_rfc3339_utc(&row["updated_at"]), "{row:#}");

    let st = p.state("s1");
    for k in [
        "version",
        "workflow",
        "task_id",
        "project_name",
        "created_at",
        "updated_at",
        "status",
        "flags",
        "labels",
        "task_description",
        "tech_stack",
        "current_phase",
        "completed_phases",
        "pending_phases",
        "iteration_counts",
        "blockers",
        "files_changed_total",
        "recovery_info",
    ] {
        assert!(st.get(k).is_some(), "show --json lacks {k}");
    }
    assert_eq!(st["workflow"], "shapes");
    assert_eq!(st["task_id"], "s1");
    assert_eq!(st["status"], "COMPLETE");
    assert_eq!(st["task_description"], "make it");
    assert_eq!(st["flags"]["fast"], true);
    assert_eq!(st["labels"]["issue"], "42");
    assert!(
        is_rfc3339_utc(&st["created_at"]) && is_rfc3339_utc(&st["updated_at"]),
        "{st:#}"
    );
    assert!(st["pending_phases"].as_array().unwrap().is_empty());
    assert!(st["iteration_counts"].is_object());
    assert!(st["blockers"].is_array());
    let ri = &st["recovery_info"];
    for k in [
        "last_clean_state",
        "git_branch",
        "git_last_commit",
        "can_resume_from",
    ] {
        assert!(ri.get(k).is_some(), "recovery_info lacks {k}: {ri:#}");
    }
    assert_eq!(ri["last_clean_state"], "handoff");
    assert_eq!(ri["git_branch"], "main");
    assert_eq!(ri["git_last_commit"], p.git(&["rev-parse", "HEAD"]).trim());
    assert!(ri["can_resume_from"].is_array());
    assert_eq!(completed(&st), ["setup", "plan", "handoff"]);
    for c in st["completed_phases"].as_array().unwrap() {
        for k in [
            "id",
            "status",
            "started_at",
            "completed_at",
            "attempt",
            "summary",
            "output_file",
            "files_changed",
        ] {
            assert!(c.get(k).is_some(), "completed phase lacks {k}: {c:#}");
        }
        assert_eq!(c["status"], "PASS");
        assert_eq!(c["attempt"], 1);
        assert!(
            is_rfc3339_utc(&c["started_at"]) && is_rfc3339_utc(&c["completed_at"]),
            "{c:#}"
        );
        let out = c["output_file"].as_str().unwrap();
        assert!(p.root().join(out).is_file(), "{out} missing");
    }
    let setup = &st["completed_phases"][0];
    assert_eq!(setup["summary"], "wrote src/x.rs");
    assert!(
        strings(&setup["files_changed"]).contains(&"src/x.rs".to_string()),
        "{setup:#}"
    );
    assert!(
        strings(&st["files_changed_total"]).contains(&"src/x.rs".to_string()),
        "{st:#}"
    );
    assert!(
        strings(&st["tech_stack"]["languages"]).contains(&"rust".to_string()),
        "{:#}",
        st["tech_stack"]
    );

    let journal = p.journal("s1");
    assert!(journal.len() >= 8, "{journal:?}");
    let mut last = 0;
    for e in &journal {
        let seq = e["seq"].as_u64().unwrap();
        assert!(seq > last, "seq not strictly increasing: {journal:?}");
        last = seq;
        assert!(is_rfc3339_utc(&e["ts"]), "{e}");
        assert!(e["kind"].is_string(), "{e}");
    }
    let started: Vec<&Value> = journal
        .iter()
        .filter(|e| e["kind"] == "phase_started")
        .collect();
    assert_eq!(started.len(), 3);
    assert!(
        started
            .iter()
            .all(|e| e["phase"].is_string() && e["attempt"] == 1)
    );

    let brief = read(&p, "brief-copy.md");
    assert!(brief.contains("wrote src/x.rs"), "{brief}");
    assert!(brief.contains("Plan is ready"), "{brief}");
    assert!(brief.contains("Acceptance criteria"), "{brief}");
    assert!(brief.contains("- works"), "{brief}");
}
}

on_both_backends! {
fn ls_rm_and_clean() {
    let p = TestProject::new();
    p.workflow(
        "fail",
        "name = \"fail\"\n\n[[phase]]\nid = \"a\"\nrun = \"exit 1\"\n",
    );
    expect(&p, &["run", "example", "one", "--id", "done1"], 0);
    expect(&p, &["run", "example", "two", "--id", "done2"], 0);
    expect(&p, &["run", "fail", "three", "--id", "failed1"], 1);

    let ids = |rows: Vec<Value>| -> BTreeSet<String> {
        rows.iter()
            .map(|r| r["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids(ls(&p, false)), ["failed1".to_string()].into());
    assert_eq!(
        ids(ls(&p, true)),
        ["done1", "done2", "failed1"].map(String::from).into()
    );
    let failed = ls(&p, false).remove(0);
    assert_eq!(failed["status"], "FAILED");
    assert_eq!(failed["resumable"], true);
    assert_eq!(failed["last_phase"], "a");
    let (out, _) = expect(&p, &["ls"], 0);
    assert!(out.contains("failed1") && !out.contains("done1"), "{out}");

    // rm: the record and its folder.
    assert!(p.root().join(".baton/tasks/done2").is_dir());
    expect(&p, &["rm", "done2"], 0);
    assert!(!p.root().join(".baton/tasks/done2").exists());
    expect(&p, &["show", "done2"], 2);
    expect(&p, &["rm", "done2"], 2);

    // clean without --yes deletes nothing.
    expect(&p, &["clean"], 0);
    assert_eq!(
        ids(ls(&p, true)),
        ["done1", "failed1"].map(String::from).into()
    );
    // clean --yes: records of complete tasks go, their files stay.
    expect(&p, &["clean", "--yes"], 0);
    assert_eq!(ids(ls(&p, true)), ["failed1".to_string()].into());
    assert!(p.root().join(".baton/tasks/done1/state.json").is_file());
    assert!(p.root().join(".baton/tasks/done1/01-analyze.md").is_file());
    expect(&p, &["show", "done1"], 2);
}
}

// ----- 11. manners ---------------------------------------------------------

#[test]
fn manners() {
    let p = TestProject::new();
    expect(&p, &["run", "example", "x", "--id", "once"], 0);
    let (_, err) = expect(&p, &["run", "example", "y", "--id", "once"], 2);
    assert!(
        err.lines()
            .any(|l| l.starts_with("hint:") && l.contains("baton resume")),
        "{err}"
    );
    assert_eq!(
        p.passes("once")["analyze"],
        1,
        "the refused run touched the task"
    );

    let bare = TestProject::bare();
    let (_, err) = expect(&bare, &["show"], 2);
    assert!(
        err.lines()
            .any(|l| l.starts_with("hint:") && l.contains("baton init")),
        "{err}"
    );

    let (out, _) = expect(&p, &["completions", "bash"], 0);
    assert!(out.contains("baton"), "{out}");
    let (out, _) = expect(&p, &["man"], 0);
    assert!(out.contains(".TH"), "{out}");

    expect(&p, &["frobnicate"], 2);
    expect(&p, &["run"], 2);
    expect(&p, &["ls", "--no-such-option"], 2);
    expect(&p, &["completions", "no-such-shell"], 2);
    expect(&p, &["run", "no-such-workflow"], 2);
    expect(&p, &["show", "no-such-task"], 2);

    // NO_COLOR (set by the test kit): no escape codes anywhere.
    p.workflow(
        "f",
        "name = \"f\"\n\n[[phase]]\nid = \"a\"\nrun = \"exit 1\"\n",
    );
    for args in [
        &["run", "example", "z"][..],
        &["run", "f", "y"],
        &["ls", "--all"],
        &["show", "once"],
        &["log", "once"],
        &["doctor"],
        &["show", "nope"],
    ] {
        let out = p.baton(args).env("NO_COLOR", "1").output().unwrap();
        let all = [out.stdout, out.stderr].concat();
        assert!(
            !all.contains(&0x1b),
            "escape codes in the output of {args:?}: {}",
            String::from_utf8_lossy(&all)
        );
    }
}

// ----- 12. template values never become shell text ---------------------------

/// The files in the project root whose name starts with `PWNED`.
fn pwned(p: &TestProject) -> Vec<String> {
    std::fs::read_dir(p.root())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("PWNED"))
        .collect()
}

#[test]
fn template_values_in_run_commands_are_not_run_by_the_shell() {
    let p = TestProject::new();
    // The repro: the shipped example with a description that runs a command.
    expect(
        &p,
        &["run", "example", "hi $(touch PWNED)", "--id", "ex1"],
        0,
    );
    assert_eq!(pwned(&p), Vec::<String>::new(), "the description was run");
    let out = read(&p, ".baton/tasks/ex1/logs/01-analyze.i0.a1.out");
    assert!(out.contains("Analyzing: hi $(touch PWNED)"), "{out}");

    // Every kind of variable, with quotes that would close the command's.
    p.workflow(
        "inj",
        r#"name = "inj"

[flags]
mode = "plain"

[[phase]]
id = "say"
run = "echo \"[{{task}}] [{{flags.mode}}] [{{labels.who}}] [{{task_id}}] [{{phase}}]\""
"#,
    );
    let task = "a `touch PWNED2` \"; touch PWNED3; echo \"";
    let mode = "x'; touch PWNED4; echo '";
    let who = "$(touch PWNED5)";
    expect(
        &p,
        &[
            "run",
            "inj",
            task,
            "--id",
            "inj1",
            "--flag",
            &format!("mode={mode}"),
            "--label",
            &format!("who={who}"),
        ],
        0,
    );
    assert_eq!(pwned(&p), Vec::<String>::new(), "a template value was run");
    let st = p.state("inj1");
    assert_eq!(
        st["completed_phases"][0]["summary"],
        format!("[{task}] [{mode}] [{who}] [inj1] [say]")
    );
}

// ----- 13. argument size ----------------------------------------------------

/// Over Linux's 128 KiB per argument: spawning would fail with E2BIG on
/// every attempt, so the task is refused before it exists.
#[test]
fn a_prompt_too_big_for_one_argument_is_refused_with_advice() {
    let p = TestProject::new();
    let config = read(&p, ".baton/config.toml");
    write(
        &p,
        ".baton/config.toml",
        &format!(
            "{config}\n[agents.big]\ncommand = [\"sh\", \"-c\", \"wc -c < \\\"$1\\\" >/dev/null 2>&1; echo agent-ran\", \"sh\", \"{{{{prompt}}}}\"]\n"
        ),
    );
    p.workflow(
        "big",
        &format!(
            "name = \"big\"\n\n[[phase]]\nid = \"think\"\nagent = \"big\"\nprompt = \"{}\\n{{{{task}}}}\"\n",
            "x".repeat(140_000)
        ),
    );
    let (_, err) = expect(&p, &["run", "big", "x", "--id", "big1"], 2);
    assert!(
        err.contains("{{prompt_file}}") && err.contains("[agents.big]"),
        "{err}"
    );
    assert!(err.contains("nothing was created"), "{err}");
    expect(&p, &["show", "big1"], 2);

    // Following the advice makes it work.
    write(
        &p,
        ".baton/config.toml",
        &format!(
            "{config}\n[agents.big]\ncommand = [\"sh\", \"-c\", \"test -s \\\"$1\\\" && echo agent-ran\", \"sh\", \"{{{{prompt_file}}}}\"]\n"
        ),
    );
    expect(&p, &["run", "big", "x", "--id", "big1"], 0);
    let st = p.state("big1");
    assert_eq!(st["status"], "COMPLETE");
    assert_eq!(st["completed_phases"][0]["summary"], "agent-ran");
}

// ----- 14. flag values and task ids -----------------------------------------

on_both_backends! {
fn flag_values_must_match_the_declared_type() {
    let p = TestProject::new();
    // example.toml declares `strict = false`.
    let (_, err) = expect(
        &p,
        &[
            "run",
            "example",
            "x",
            "--id",
            "f1",
            "--flag",
            "strict=maybe",
        ],
        2,
    );
    assert!(
        err.contains("strict") && err.contains("boolean") && err.contains("maybe"),
        "{err}"
    );
    p.workflow(
        "typed",
        "name = \"typed\"\n\n[flags]\nretries = 2\nmode = \"fast\"\n\n[[phase]]\nid = \"a\"\nrun = \"echo \\\"{{flags.retries}} {{flags.mode}}\\\"\"\n",
    );
    let (_, err) = expect(
        &p,
        &["run", "typed", "x", "--id", "f2", "--flag", "retries=many"],
        2,
    );
    assert!(
        err.contains("retries") && err.contains("integer") && err.contains("many"),
        "{err}"
    );
    let (_, err) = expect(
        &p,
        &["run", "typed", "x", "--id", "f3", "--flag", "nope=1"],
        2,
    );
    assert!(err.contains("nope"), "{err}");
    assert!(
        err.lines()
            .any(|l| l.trim_start().starts_with("hint:") && l.contains("retries")),
        "no hint listing the flags: {err}"
    );
    assert!(ls(&p, true).is_empty(), "a refused run created a task");

    expect(
        &p,
        &[
            "run",
            "typed",
            "x",
            "--id",
            "f4",
            "--flag",
            "retries=5",
            "--flag",
            "mode=007",
        ],
        0,
    );
    let st = p.state("f4");
    assert_eq!(st["flags"]["retries"], 5);
    assert_eq!(st["flags"]["mode"], "007");
    assert_eq!(st["completed_phases"][0]["summary"], "5 007");

    // Ids git cannot name refs after.
    for bad in ["x.lock", "x."] {
        let (_, err) = expect(&p, &["run", "example", "x", "--id", bad], 2);
        assert!(err.contains("must not end with"), "{err}");
    }
}
}

// ----- 15. --upgrade of a waiting task ---------------------------------------

on_both_backends! {
fn upgrade_of_a_waiting_task_adds_flags_and_drops_the_removed_wait() {
    let p = TestProject::new();
    p.workflow(
        "gate",
        "name = \"gate\"\n\n[[phase]]\nid = \"a\"\nrun = \"echo a\"\n\n[[phase]]\nid = \"approve\"\nwait = { human = \"Ship it?\" }\n\n[[phase]]\nid = \"b\"\nrun = \"echo b\"\n",
    );
    expect(&p, &["run", "gate", "x", "--id", "g1"], 4);
    // The wait is removed; b now uses a flag the first version lacked.
    p.workflow(
        "gate",
        "name = \"gate\"\n\n[flags]\nextra = \"from-v2\"\n\n[[phase]]\nid = \"a\"\nrun = \"echo a\"\n\n[[phase]]\nid = \"b\"\nrun = \"echo \\\"b {{flags.extra}}\\\"\"\n",
    );
    let (_, err) = expect(&p, &["resume", "g1"], 4);
    assert!(err.contains("--upgrade"), "{err}");
    let (_, err) = expect(&p, &["resume", "g1", "--upgrade"], 0);
    assert!(err.contains("removed approve"), "{err}");
    let st = p.state("g1");
    assert_eq!(st["status"], "COMPLETE", "{st:#}");
    assert_eq!(completed(&st), ["a", "b"]);
    assert_eq!(st["flags"]["extra"], "from-v2");
    assert_eq!(st["completed_phases"][1]["summary"], "b from-v2");
    assert_eq!(p.passes("g1")["a"], 1);
    expect(&p, &["doctor"], 0);
}
}

// ----- 16. the projection comes from the journal -------------------------------

on_both_backends! {
fn doctor_finds_no_mismatch_after_fork_and_resume_from() {
    let p = TestProject::new();
    // b passes once, then fails (its marker under .baton/ survives restores),
    // so the tasks stop with the resume note still in their projection.
    p.workflow(
        "once",
        "name = \"once\"\n\n[[phase]]\nid = \"a\"\nrun = \"echo a\"\n\n[[phase]]\nid = \"b\"\nrun = \"if [ -f .baton/b-ran ]; then echo again >&2; exit 1; fi; touch .baton/b-ran; echo b\"\n",
    );
    expect(&p, &["run", "once", "x", "--id", "o1"], 0);
    expect(&p, &["fork", "o1", "--from", "b", "--id", "o2"], 1);
    let st = p.state("o2");
    assert_eq!(st["status"], "FAILED");
    let (out, _) = expect(&p, &["doctor"], 0);
    assert!(!out.contains("does not match"), "{out}");

    expect(&p, &["resume", "o1", "--from", "b"], 1);
    assert_eq!(p.state("o1")["status"], "FAILED");
    let (out, _) = expect(&p, &["doctor"], 0);
    assert!(!out.contains("does not match"), "{out}");
    let brief = read(&p, ".baton/tasks/o1/brief.md");
    assert!(
        brief.contains("Resuming from b: rewound by the user."),
        "{brief}"
    );
}
}

// ----- 17. waits and what answers them -----------------------------------------

/// The `hint:` lines of some stderr.
fn hints(err: &str) -> Vec<&str> {
    err.lines().filter(|l| l.starts_with("hint:")).collect()
}

on_both_backends! {
fn human_and_event_waits_say_how_to_go_on() {
    let p = TestProject::new();
    p.workflow(
        "ship",
        "name = \"ship\"\n\n[[phase]]\nid = \"build\"\nrun = \"echo built\"\n\n[[phase]]\nid = \"approve\"\nwait = { human = \"Ship it?\", options = [\"yes\", \"no\"] }\n\n[[phase]]\nid = \"deploy\"\nrun = \"echo deployed\"\n",
    );
    p.workflow(
        "pr",
        "name = \"pr\"\n\n[[phase]]\nid = \"open\"\nwait = { event = \"github.pull_request.opened\" }\n",
    );
    expect(&p, &["run", "ship", "x", "--id", "h1"], 4);
    expect(&p, &["run", "pr", "x", "--id", "e1"], 4);
    for id in ["h1", "e1"] {
        let (_, err) = expect(&p, &["resume", id], 4);
        let h = hints(&err);
        let how = if id == "h1" {
            "answer it with `baton inbox answer h1/approve CHOICE` (one of: yes, no), which runs the task on; or in `baton serve`'s dashboard, or with POST /api/v1/tasks/h1/answer"
        } else {
            "`baton serve` resumes it when GitHub delivers github.pull_request.opened"
        };
        assert!(h.iter().any(|l| l.contains(how)), "{err}");
        assert!(
            h.iter()
                .any(|l| l.contains(&format!("baton resume {id} --upgrade"))
                    && l.contains(&format!("baton cancel {id}"))),
            "{err}"
        );
    }
    let (_, err) = expect(&p, &["resume", "h1"], 4);
    assert!(err.contains(".baton/workflows/ship.toml"), "{err}");
    assert!(err.contains("phase approve"), "{err}");

    // `ls`: what the task waits for, not an invitation to resume it.
    let (out, _) = expect(&p, &["ls"], 0);
    let row = out.lines().find(|l| l.starts_with("h1 ")).unwrap();
    assert!(
        row.contains("waiting: a human answer to \"Ship it?\""),
        "{out}"
    );
    assert!(!row.contains("yes: baton resume"), "{out}");
    let row = out.lines().find(|l| l.starts_with("e1 ")).unwrap();
    assert!(
        row.contains("waiting: the event github.pull_request.opened"),
        "{out}"
    );
    // JSON keeps `resumable` as the contract has it.
    for r in ls(&p, false) {
        assert_eq!(r["resumable"], true, "{r}");
    }

    // The hint works: without the wait, --upgrade goes on to the end.
    p.workflow(
        "ship",
        "name = \"ship\"\n\n[[phase]]\nid = \"build\"\nrun = \"echo built\"\n\n[[phase]]\nid = \"deploy\"\nrun = \"echo deployed\"\n",
    );
    expect(&p, &["resume", "h1", "--upgrade"], 0);
    let st = p.state("h1");
    assert_eq!(completed(&st), ["build", "deploy"]);
    expect(&p, &["cancel", "e1"], 0);
}
}

// ----- 18. --quiet still reports failures ---------------------------------------

#[test]
fn quiet_still_reports_failures() {
    let p = TestProject::new();
    p.workflow(
        "f",
        "name = \"f\"\n\n[[phase]]\nid = \"a\"\nrun = \"echo broken >&2; exit 3\"\n",
    );
    let (out, err) = expect(&p, &["-q", "run", "f", "x", "--id", "q1"], 1);
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("task q1 FAILED"), "{err}");
    assert!(
        hints(&err).iter().any(|l| l.contains("baton resume q1")),
        "{err}"
    );
    let (_, err) = expect(&p, &["-q", "resume", "q1"], 1);
    assert!(err.contains("FAILED"), "{err}");

    let (out, err) = expect(&p, &["-q", "run", "example", "x", "--id", "q2"], 0);
    assert!(err.is_empty(), "--quiet prints nothing on success: {err}");
    assert!(out.is_empty(), "{out}");
}

// ----- 19. the project from any folder inside it ---------------------------------

#[test]
fn commands_work_from_a_subfolder_and_with_project_pointing_into_it() {
    let p = TestProject::new();
    p.workflow(
        "twice",
        "name = \"twice\"\n\n[[phase]]\nid = \"a\"\nrun = \"if [ -f .baton/a-failed ]; then echo ok; else touch .baton/a-failed; exit 1; fi\"\n",
    );
    let sub = p.root().join("src/deep");
    fs_err::create_dir_all(&sub).unwrap();
    let in_sub = |args: &[&str]| {
        let out = p.baton(args).current_dir(&sub).output().unwrap();
        (
            out.status.code().unwrap(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, _, err) = in_sub(&["run", "twice", "x", "--id", "s1"]);
    assert_eq!(code, 1, "{err}");
    assert!(p.root().join(".baton/tasks/s1/state.json").is_file());
    assert!(!sub.join(".baton").exists());
    // No id: the current task, found from the subfolder.
    let (code, out, err) = in_sub(&["show"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("task      s1"), "{out}");
    let (code, out, err) = in_sub(&["log"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("task_created"), "{out}");
    let (code, _, err) = in_sub(&["resume"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(p.state("s1")["status"], "COMPLETE");

    // --project (and BATON_PROJECT) naming a subfolder walk up the same way.
    let elsewhere = TestProject::bare();
    let sub_s = sub.to_str().unwrap();
    let (code, out, err) = elsewhere.run(&["--project", sub_s, "ls", "--all", "--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"s1\""), "{out}");
    let out = elsewhere
        .baton(&["show", "s1", "--json"])
        .env("BATON_PROJECT", sub_s)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let (code, _, err) = elsewhere.run(&["--project", "/nonexistent/baton", "ls"]);
    assert_eq!(code, 2, "{err}");
    assert!(!hints(&err).is_empty(), "{err}");
    let (code, _, err) = elsewhere.run(&["--project", elsewhere.root().to_str().unwrap(), "ls"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        hints(&err).iter().any(|l| l.contains("baton init")),
        "{err}"
    );
}

#[test]
fn init_inside_a_project_refuses_unless_forced() {
    let p = TestProject::new();
    let sub = p.root().join("pkg");
    fs_err::create_dir_all(&sub).unwrap();
    let out = p.baton(&["init"]).current_dir(&sub).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("inside the baton project"), "{err}");
    assert!(hints(&err).iter().any(|l| l.contains("--force")), "{err}");
    assert!(!sub.join(".baton").exists(), "nothing was created");
    // --project naming the subfolder: the same refusal.
    let (code, _, err) = p.run(&["init", "--project", sub.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(!sub.join(".baton").exists());
    // Re-running init at the project root itself is still fine.
    expect(&p, &["init"], 0);
    // --force: a separate project on purpose.
    let out = p
        .baton(&["init", "--force"])
        .current_dir(&sub)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(sub.join(".baton/config.toml").is_file());

    let (code, _, err) = p.run(&["init", "--project", "/nonexistent/baton"]);
    assert_eq!(code, 2, "{err}");
    assert!(hints(&err).iter().any(|l| l.contains("mkdir")), "{err}");
}

// ----- 20. log --json names the phase -----------------------------------------

on_both_backends! {
fn log_json_names_the_phase_on_every_phase_line() {
    let p = TestProject::new();
    p.workflow(
        "never",
        "name = \"never\"\n\n[[phase]]\nid = \"execute\"\nrun = \"echo executed\"\n\n[[phase]]\nid = \"validate\"\nrun = \"echo broken >&2; exit 1\"\nloop_to = \"execute\"\nmax_iterations = 1\n",
    );
    expect(&p, &["run", "never", "x", "--id", "n1"], 1);
    expect(&p, &["resume", "n1", "--from", "execute"], 1);
    let journal = p.journal("n1");
    let mut kinds = BTreeSet::new();
    for e in &journal {
        let kind = e["kind"].as_str().unwrap();
        if kind == "looped_back" || kind == "rewound" || kind.starts_with("phase_") {
            kinds.insert(kind.to_string());
            assert!(e["phase"].is_string(), "no phase in {e}");
        }
        if kind.starts_with("phase_") && kind != "phase_skipped" && kind != "phase_waiting" {
            assert!(e["attempt"].is_u64(), "no attempt in {e}");
        }
    }
    assert!(kinds.contains("looped_back"), "{journal:?}");
    assert!(kinds.contains("rewound"), "{journal:?}");
    let looped = journal.iter().find(|e| e["kind"] == "looped_back").unwrap();
    assert_eq!(looped["phase"], "validate", "{looped}");
    assert_eq!(looped["to"], "execute", "{looped}");
    let rewound = journal.iter().find(|e| e["kind"] == "rewound").unwrap();
    assert_eq!(rewound["phase"], "execute", "{rewound}");
}
}

// ----- 21. errors come with hints ------------------------------------------------

#[test]
fn config_label_cancel_and_fork_errors_come_with_hints() {
    let p = TestProject::new();
    let config = read(&p, ".baton/config.toml");
    for (bad, needle) in [
        ("[store]\nsynchronous = \"fast\"\n", "synchronous"),
        ("[lease]\nttl = \"10ms\"\n", "ttl"),
        ("[lease]\nttl = \"soon\"\n", "ttl"),
        ("[agents.mine]\ncommand = []\n", "agents.mine"),
    ] {
        write(&p, ".baton/config.toml", bad);
        let (_, err) = expect(&p, &["ls"], 2);
        let first = err.lines().next().unwrap_or("");
        assert!(
            first.starts_with("error: .baton/config.toml") && first.contains(needle),
            "{bad:?}: {err}"
        );
        assert!(
            hints(&err).iter().any(|l| l.contains(".baton/config.toml")),
            "{bad:?}: {err}"
        );
    }
    write(&p, ".baton/config.toml", &config);

    let (_, err) = expect(&p, &["run", "example", "x", "--label", "oops"], 2);
    assert!(
        hints(&err).iter().any(|l| l.contains("--label issue=42")),
        "{err}"
    );
    assert!(!err.contains("tests=false"), "{err}");
    let (_, err) = expect(&p, &["run", "example", "x", "--flag", "oops"], 2);
    assert!(
        hints(&err).iter().any(|l| l.contains("--flag tests=false")),
        "{err}"
    );

    expect(&p, &["run", "example", "x", "--id", "done1"], 0);
    let (_, err) = expect(&p, &["cancel", "done1"], 2);
    assert!(err.contains("already COMPLETE"), "{err}");
    assert!(
        hints(&err).iter().any(|l| l.contains("baton rm done1")),
        "{err}"
    );
    p.workflow(
        "gate",
        "name = \"gate\"\n\n[[phase]]\nid = \"approve\"\nwait = { human = \"ok?\" }\n",
    );
    expect(&p, &["run", "gate", "x", "--id", "c1"], 4);
    expect(&p, &["cancel", "c1"], 0);
    let (_, err) = expect(&p, &["cancel", "c1"], 2);
    assert!(err.contains("already CANCELLED"), "{err}");
    assert!(!hints(&err).is_empty(), "{err}");

    let (_, err) = expect(
        &p,
        &["fork", "done1", "--from", "analyze", "--id", "../bad"],
        2,
    );
    assert!(!hints(&err).is_empty(), "{err}");
}

// ----- 22. exit codes in the help ------------------------------------------------

#[test]
fn help_and_man_page_list_the_exit_codes() {
    let p = TestProject::new();
    let (out, _) = expect(&p, &["--help"], 0);
    for code in ["0  done", "2  bad input", "3  busy", "4  waiting"] {
        assert!(out.contains(code), "{out}");
    }
    let (out, _) = expect(&p, &["man"], 0);
    assert!(out.contains("Exit codes"), "{out}");
    assert!(out.contains("busy"), "{out}");
}

/// `[instances]` (issue 10) is checked like every other key: a bad value
/// stops any command with its code, what is wrong and how to fix it.
#[test]
fn a_bad_instances_setting_is_refused_with_its_code_and_fix() {
    let p = TestProject::new();
    let config = read(&p, ".baton/config.toml");
    write(
        &p,
        ".baton/config.toml",
        &format!("{config}\n[instances]\ncleanup_policy = \"never\"\n"),
    );
    let (_, err) = expect(&p, &["ls"], 2);
    assert!(
        err.contains("WORKFLOW_INVALID_CONFIGURATION")
            && err.contains("cleanup_policy must be \"auto\" or \"manual\"")
            && err.contains("docs/config.md"),
        "{err}"
    );
    write(
        &p,
        ".baton/config.toml",
        &format!("{config}\n[instances]\ncleanup_policy = \"manual\"\n"),
    );
    expect(&p, &["ls"], 0);
}
