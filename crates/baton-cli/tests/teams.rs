//! Teams through the real `baton` binary, on both stores: the lead times
//! out and re-attaches, teammates go on in zombie mode, a task moves from
//! an offline teammate with its checkpoint, messages survive a partition
//! and arrive once, clocks 5 minutes off never fool liveness, two leads
//! racing to re-attach, and everything surviving SIGKILL of every baton
//! process. Time is moved with `BATON_TEST_CLOCK_OFFSET_MS` (the store's
//! clock and the members' own), so nothing sleeps for minutes.

use baton_testkit::{TestProject, on_both_backends};
use serde_json::Value;

use baton_testkit::teams::{MIN, at, ok};

fn crew(p: &TestProject) {
    fs_err::write(p.root().join("SPEC.md"), "the spec\n").unwrap();
    ok(
        p,
        0,
        &[
            "create",
            "crew",
            "--teammate",
            "ana:engineer",
            "--teammate",
            "bo:tester",
            "--task",
            "Schema",
            "--task",
            "API:t1",
            "--fact",
            "SPEC.md",
        ],
    );
}

fn member<'a>(probe: &'a Value, name: &str) -> &'a Value {
    probe["teammates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {probe}"))
}

on_both_backends! {
    /// 1. The lead is silent for 6 minutes: a teammate's heartbeat notices
    /// it; the lead re-attaches with its own session and sees when.
    fn the_lead_reattaches_after_a_five_minute_timeout() {
        let p = TestProject::new();
        crew(&p);
        ok(&p, 0, &["task", "start", "crew", "t1", "--as", "ana"]);
        // What a teammate says of itself with its heartbeat.
        ok(&p, 1, &["heartbeat", "crew", "ana", "--staged", "2", "--unstaged", "1", "--branch", "team/ana", "--context", "40"]);
        let ana = &ok(&p, 1, &["probe", "crew"])["team"]["teammates"]["ana"];
        assert_eq!(ana["local_changes"], serde_json::json!({"staged": 2, "unstaged": 1, "branch": "team/ana"}));
        assert_eq!(ana["context_usage_percent"], 40);
        ok(&p, 6, &["heartbeat", "crew", "ana"]);
        let probe = ok(&p, 6, &["probe", "crew"]);
        assert_eq!(probe["team"]["status"], "suspended");
        assert!(probe["team"]["lead_timeout_detected_at"].is_i64(), "{probe}");
        assert_eq!(probe["lead"]["liveness"], "timed_out", "6 minutes: past the lead's timeout, never online in zombie mode");

        let (code, out, err) = at(&p, 7, &["resume", "crew"]);
        assert_eq!(code, 0, "{err}");
        assert!(err.contains("re-attached to team crew (same lead session)"), "{err}");
        assert!(err.contains("the lead had timed out"), "{err}");
        assert!(out.contains("ana          engineer    online"), "{out}");
        let probe = ok(&p, 7, &["probe", "crew"]);
        assert_eq!(probe["team"]["status"], "active");
        assert_eq!(probe["team"]["lead_timeout_detected_at"], Value::Null);
        assert!(probe["lead"]["silent_ms"].as_i64().unwrap() < MIN, "{probe}");
    }

    /// 2. An hour away: the teammates went on in zombie mode (tasks,
    /// checkpoints, questions to the lead); the lead sees it all and
    /// chooses for each teammate's work.
    fn the_lead_finds_the_zombie_teams_work_after_an_hour() {
        let p = TestProject::new();
        crew(&p);
        // ana works on a branch of her own, in a worktree.
        let wt_dir = tempfile::tempdir().unwrap();
        let wt = wt_dir.path().join("ana-wt");
        p.git(&["worktree", "add", "-q", "-b", "team/ana", wt.to_str().unwrap()]);
        let good = p.git(&["rev-parse", "HEAD"]).trim().to_string();
        ok(&p, 1, &["task", "start", "crew", "t1", "--as", "ana"]);
        ok(&p, 2, &["task", "checkpoint", "crew", "t1", "--as", "ana", "--status", "green", "--branch", "team/ana", "--head", &good]);
        ok(&p, 10, &["heartbeat", "crew", "bo"]);
        // Work after the good checkpoint, committed and not.
        fs_err::write(wt.join("schema.sql"), "create table t;\n").unwrap();
        std::process::Command::new("git")
            .args(["-C", wt.to_str().unwrap(), "add", "."])
            .status()
            .unwrap();
        std::process::Command::new("git")
            .args(["-C", wt.to_str().unwrap(), "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "wip"])
            .status()
            .unwrap();
        fs_err::write(wt.join("notes.txt"), "half done\n").unwrap();
        ok(&p, 30, &["task", "checkpoint", "crew", "t1", "--as", "ana", "--status", "red", "--branch", "team/ana", "--file", "schema.sql"]);
        for (min, subject) in [(31, "q1"), (45, "q2")] {
            ok(&p, min, &["msg", "send", "crew", "--to", "lead", "--type", "question", "--subject", subject, "which index?", "--as", "ana"]);
        }

        let (code, out, err) = at(&p, 60, &["resume", "crew"]);
        assert_eq!(code, 0, "{err}");
        assert!(err.contains("the lead had timed out: noticed at"), "{err}");
        assert!(out.contains("zombie mode since") || err.contains("zombie mode"), "{out}{err}");
        assert!(out.contains("task t1 (checkpoint #2 red"), "each teammate's latest checkpoint: {out}");
        assert!(out.contains("2 unread by the lead"), "{out}");
        assert!(out.contains("q2"), "{out}");
        let probe = ok(&p, 60, &["probe", "crew"]);
        let timeout = probe["team"]["lead_timeout_detected_at"].clone();
        assert_eq!(timeout, Value::Null, "cleared once the lead is back");
        assert_eq!(member(&probe, "bo")["liveness"], "suspended", "bo was last seen 50 minutes ago");

        // The lead rolls ana's work back to her last green checkpoint:
        // what it replaces is saved, never lost.
        let r = ok(&p, 61, &["resolve", "crew", "ana", "rollback"]);
        assert_eq!(r["head"], good.as_str());
        let saved = r["saved"].as_str().unwrap().to_string();
        assert!(saved.starts_with("refs/baton-saved/teams/crew/ana/"), "{saved}");
        assert_eq!(p.git(&["rev-parse", "team/ana"]).trim(), good);
        assert!(!wt.join("schema.sql").exists());
        assert_eq!(p.git(&["show", &format!("{saved}:schema.sql")]), "create table t;\n");
        assert_eq!(p.git(&["show", &format!("{saved}:notes.txt")]), "half done\n");
        // And bo goes on.
        assert_eq!(ok(&p, 61, &["resolve", "crew", "bo", "continue"])["choice"], "continue");
        let (code, _, err) = at(&p, 61, &["resolve", "crew", "bo", "commit"]);
        assert_eq!(code, 2, "bo checkpointed no branch: {err}");
        assert!(err.contains("bo has checkpointed no branch"), "{err}");
    }

    /// 3. ana goes offline mid-task; the lead moves the task to bo, who
    /// inherits the checkpoint, is told so, and finishes it.
    fn an_offline_teammates_task_moves_with_its_checkpoint() {
        let p = TestProject::new();
        crew(&p);
        ok(&p, 0, &["task", "start", "crew", "t1", "--as", "ana"]);
        ok(&p, 1, &["task", "checkpoint", "crew", "t1", "--as", "ana", "--status", "green", "--branch", "team/ana", "--head", "abc123", "--file", "schema.sql"]);
        // Still online: refused without --force.
        let (code, _, err) = at(&p, 2, &["reassign", "crew", "t1", "--to", "bo"]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("owner ana is online"), "{err}");
        // Eleven minutes later ana is idle: it moves.
        let t = ok(&p, 12, &["reassign", "crew", "t1", "--to", "bo"]);
        let t1 = &t["tasks"][0];
        assert_eq!(t1["assigned_to"], "bo");
        assert_eq!(t1["status"], "in_progress");
        assert_eq!(t1["checkpoint"]["head"], "abc123");
        let inbox = ok(&p, 12, &["msg", "ls", "crew", "--inbox", "bo"]);
        let first = &inbox[0];
        assert_eq!(first["subject"], "task t1 is yours now");
        let body = first["body"].as_str().unwrap();
        assert!(body.contains("from ana"), "{body}");
        assert!(body.contains("branch team/ana, HEAD abc123, local status green, files modified: schema.sql"), "{body}");
        // ana, back, cannot move it any more; bo completes it, and t2 can start.
        let (code, _, err) = at(&p, 13, &["task", "complete", "crew", "t1", "--as", "ana"]);
        assert_eq!(code, 2, "{err}");
        ok(&p, 13, &["task", "complete", "crew", "t1", "--as", "bo"]);
        ok(&p, 13, &["task", "start", "crew", "t2", "--as", "ana"]);
    }

    /// 5. bo is unreachable: messages to it wait, sent twice they are
    /// stored once, and when it is back it gets each exactly once.
    fn messages_to_an_unreachable_teammate_arrive_once() {
        let p = TestProject::new();
        crew(&p);
        for _ in 0..2 {
            // A retry after a lost answer: the same id.
            ok(&p, 1, &["msg", "send", "crew", "--to", "bo", "--id", "m-1", "run the suite"]);
        }
        ok(&p, 2, &["msg", "send", "crew", "--to", "*", "--id", "m-2", "standup at 10"]);
        let again = ok(&p, 3, &["msg", "send", "crew", "--to", "bo", "--id", "m-1", "run the suite"]);
        assert_eq!(again["new"], false);
        let all = ok(&p, 3, &["msg", "ls", "crew"]);
        assert_eq!(all.as_array().unwrap().len(), 2, "{all}");
        // bo is back after 40 minutes.
        let inbox = ok(&p, 40, &["msg", "ls", "crew", "--inbox", "bo"]);
        let ids: Vec<&str> = inbox.as_array().unwrap().iter().map(|m| m["msg_id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["m-1", "m-2"]);
        let seqs: Vec<String> = inbox.as_array().unwrap().iter().map(|m| m["seq"].to_string()).collect();
        let mut args = vec!["msg", "ack", "crew"];
        args.extend(seqs.iter().map(String::as_str));
        args.extend(["--as", "bo"]);
        assert_eq!(ok(&p, 40, &args)["acknowledged"], 2);
        assert_eq!(ok(&p, 41, &["msg", "ls", "crew", "--inbox", "bo"]), Value::Array(vec![]));
        // Sent again late: still once, still acknowledged.
        ok(&p, 42, &["msg", "send", "crew", "--to", "bo", "--id", "m-1", "run the suite"]);
        assert_eq!(ok(&p, 42, &["msg", "ls", "crew", "--inbox", "bo"]), Value::Array(vec![]));
        // ana still has the broadcast.
        assert_eq!(ok(&p, 42, &["msg", "ls", "crew", "--inbox", "ana"]).as_array().unwrap().len(), 1);
    }

    /// 6. Clocks 5 minutes ahead and behind: reported, and liveness goes by
    /// the store's clock alone.
    fn clocks_five_minutes_off_never_fool_liveness() {
        let p = TestProject::new();
        crew(&p);
        let store_now = |min: i64| {
            let v = ok(&p, min, &["probe", "crew"]);
            v["now"].as_i64().unwrap()
        };
        let now = store_now(0);
        let rfc = |ms: i64| {
            jiff::Timestamp::from_millisecond(ms).unwrap().to_string()
        };
        ok(&p, 0, &["heartbeat", "crew", "ana", "--sent-at", &rfc(now + 5 * MIN)]);
        ok(&p, 0, &["heartbeat", "crew", "bo", "--sent-at", &rfc(now - 5 * MIN)]);
        let probe = ok(&p, 0, &["probe", "crew"]);
        let skew = |m: &str| member(&probe, m)["clock_skew_ms"].as_i64().unwrap();
        assert!((skew("ana") - 5 * MIN).abs() < 10_000, "{probe}");
        assert!((skew("bo") + 5 * MIN).abs() < 10_000, "{probe}");
        assert_eq!(member(&probe, "ana")["liveness"], "online");
        assert_eq!(member(&probe, "bo")["liveness"], "online", "a clock behind is not dead");
        // Both silent for 11 minutes by the store's clock: neither is online,
        // whatever their clocks said.
        let later = ok(&p, 11, &["probe", "crew"]);
        assert_eq!(member(&later, "ana")["liveness"], "idle");
        assert_eq!(member(&later, "bo")["liveness"], "idle");
        let (_, out, _) = at(&p, 0, &["probe", "crew"]);
        assert!(out.contains("clock skew +4m 5") || out.contains("clock skew +5m 0"), "{out}");
        assert!(out.contains("clock skew -5m 0") || out.contains("clock skew -4m 5"), "{out}");
    }

    /// 7. The lead has been silent for 31 minutes and two new leads try to
    /// take over at once: exactly one attaches, the other is told who.
    fn two_leads_racing_to_reattach_one_wins() {
        let p = TestProject::new();
        crew(&p);
        let racers: Vec<_> = ["lead-2", "lead-3"]
            .into_iter()
            .map(|s| {
                p.baton(&["team", "resume", "crew", "--session", s])
                    .env("BATON_TEST_CLOCK_OFFSET_MS", (31 * MIN).to_string())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let codes: Vec<i32> = racers
            .into_iter()
            .map(|c| c.wait_with_output().unwrap().status.code().unwrap())
            .collect();
        let mut sorted = codes.clone();
        sorted.sort();
        assert_eq!(sorted, [0, 1], "one attached, one told to retry: {codes:?}");
        let probe = ok(&p, 31, &["probe", "crew"]);
        let winner = probe["team"]["lead"]["session_id"].as_str().unwrap().to_string();
        assert!(winner == "lead-2" || winner == "lead-3");
        // The loser, again: refused, naming the winner.
        let loser = if winner == "lead-2" { "lead-3" } else { "lead-2" };
        let (code, _, err) = at(&p, 32, &["resume", "crew", "--session", loser]);
        assert_eq!(code, 1, "{err}");
        assert!(err.contains(&format!("another live lead: session {winner}")), "{err}");
        // The old lead, back after its replacement: refused too.
        let (code, _, err) = at(&p, 32, &["resume", "crew"]);
        assert_eq!(code, 1, "{err}");
    }

    /// 4. A consolidation killed after staging, before its commit: the
    /// resume says so; a retry commits once; an abort goes back to the last
    /// good commit with what was there saved and the task reopened. Killed
    /// after its commit but before journaling it, a retry finds it.
    fn a_consolidation_killed_midway_is_retried_once_or_aborted() {
        for way in ["retry", "abort", "committed"] {
            let p = TestProject::new();
            crew(&p);
            let base = p.git(&["rev-parse", "HEAD"]).trim().to_string();
            ok(&p, 0, &["task", "start", "crew", "t1", "--as", "ana"]);
            fs_err::write(p.root().join("schema.sql"), "create table t;\n").unwrap();
            ok(&p, 1, &["task", "complete", "crew", "t1", "--as", "ana"]);
            // A check that fails first: nothing is committed.
            let (code, _, err) = at(&p, 2, &["consolidate", "crew", "--check", "test -f checked"]);
            assert_eq!(code, 1, "{err}");
            assert!(err.contains("check \"test -f checked\" failed; nothing was committed"), "{err}");
            fs_err::write(p.root().join("checked"), "").unwrap();
            let point = if way == "committed" { "consolidate-committed:crew" } else { "consolidate-staged:crew" };
            let out = p
                .baton(&["team", "consolidate", "crew", "--retry", "--check", "test -f checked"])
                .env("BATON_TEST_CLOCK_OFFSET_MS", (3 * MIN).to_string())
                .env("BATON_TEST_CRASH_AT", point)
                .output()
                .unwrap();
            assert_eq!(out.status.code(), None, "killed: {}", String::from_utf8_lossy(&out.stderr));
            let probe = ok(&p, 4, &["probe", "crew"]);
            assert_eq!(probe["team"]["status"], "consolidating", "{way}");
            let (code, _, err) = at(&p, 4, &["resume", "crew"]);
            assert_eq!(code, 0, "{err}");
            assert!(err.contains("team crew was consolidating when it stopped"), "{err}");
            assert!(err.contains("--retry") && err.contains("--abort") && err.contains("--inspect"), "{err}");
            let commits = |p: &TestProject| {
                p.git(&["log", "--format=%s"])
                    .lines()
                    .filter(|l| l.starts_with("team crew: t1 Schema"))
                    .count()
            };
            if way == "retry" {
                assert!(err.contains("with its changes staged and not committed"), "{err}");
                let (_, staged, _) = at(&p, 4, &["consolidate", "crew", "--inspect"]);
                assert!(staged.contains("schema.sql"), "{staged}");
            }
            match way {
                "retry" | "committed" => {
                    let c = ok(&p, 5, &["consolidate", "crew", "--retry"]);
                    assert_eq!(c["outcome"], "committed", "{way}: {c}");
                    assert_eq!(commits(&p), 1, "{way}: committed once");
                    assert_eq!(p.git(&["show", "HEAD:schema.sql"]), "create table t;\n");
                    let probe = ok(&p, 5, &["probe", "crew"]);
                    assert_eq!(probe["team"]["status"], "active");
                    assert_eq!(probe["team"]["last_good_commit"], p.git(&["rev-parse", "HEAD"]).trim());
                    let (code, _, err) = at(&p, 6, &["consolidate", "crew", "--retry"]);
                    assert_eq!(code, 2, "nothing under way: {err}");
                    assert_eq!(commits(&p), 1);
                }
                _ => {
                    let c = ok(&p, 5, &["consolidate", "crew", "--abort"]);
                    assert_eq!(c["outcome"], "aborted");
                    assert_eq!(c["reopened"], serde_json::json!(["t1"]));
                    assert_eq!(p.git(&["rev-parse", "HEAD"]).trim(), base);
                    assert!(!p.root().join("schema.sql").exists());
                    let saved = c["saved"].as_str().unwrap();
                    assert_eq!(p.git(&["show", &format!("{saved}:schema.sql")]), "create table t;\n");
                    let probe = ok(&p, 5, &["probe", "crew"]);
                    assert_eq!(probe["team"]["status"], "active");
                    assert_eq!(probe["team"]["tasks"][0]["status"], "pending");
                    assert_eq!(commits(&p), 0);
                }
            }
        }
    }

    /// The git copy: written to its own branch without touching the work
    /// tree or the index, and rebuilt from there in an empty store (a
    /// second clone's); one from a newer baton is refused.
    fn a_team_is_copied_to_git_and_imported_into_an_empty_store() {
        let p = TestProject::new();
        crew(&p);
        ok(&p, 0, &["task", "start", "crew", "t1", "--as", "ana"]);
        ok(&p, 1, &["task", "checkpoint", "crew", "t1", "--as", "ana", "--status", "green", "--head", "abc"]);
        let sent = ok(&p, 1, &["msg", "send", "crew", "--to", "bo", "--id", "m1", "hello bo"]);
        ok(&p, 1, &["msg", "send", "crew", "--to", "lead", "--as", "ana", "--id", "m2", "question"]);
        let seq = sent["message"]["seq"].to_string();
        ok(&p, 2, &["msg", "ack", "crew", &seq, "--as", "bo"]);
        // Something of the user's staged, which the copy must leave alone.
        fs_err::write(p.root().join("mine.txt"), "mine\n").unwrap();
        p.git(&["add", "mine.txt"]);
        let head = p.git(&["rev-parse", "HEAD"]);
        let s = ok(&p, 2, &["sync", "crew"]);
        assert_eq!(s["branch"], "baton-teams");
        assert_eq!(p.git(&["rev-parse", "HEAD"]), head);
        assert_eq!(p.git(&["diff", "--cached", "--name-only"]).trim(), "mine.txt");
        let meta: Value = serde_json::from_str(&p.git(&["show", "baton-teams:.team-state/crew/metadata.json"])).unwrap();
        assert_eq!(meta["schema_version"], 1);
        assert_eq!(meta["team"]["tasks"][0]["status"], "in_progress");
        let mailbox = p.git(&["show", "baton-teams:.team-state/crew/mailbox.jsonl"]);
        assert_eq!(mailbox.lines().count(), 2);
        assert!(p.git(&["show", "baton-teams:.team-state/crew/checkpoints/t1.json"]).contains("\"abc\""));
        // Again, after more happened: one more commit on the branch.
        ok(&p, 3, &["task", "complete", "crew", "t1", "--as", "ana"]);
        ok(&p, 3, &["sync", "crew"]);
        assert_eq!(p.git(&["rev-list", "--count", "baton-teams"]).trim(), "2");

        // Another clone, its own empty store.
        let other = TestProject::bare();
        other.git(&["clone", "-q", p.root().to_str().unwrap(), "."]);
        other.git(&["fetch", "-q", "origin", "baton-teams:baton-teams"]);
        assert!(other.baton(&["init"]).output().unwrap().status.success());
        let (code, _, err) = at(&other, 0, &["probe", "crew"]);
        assert_eq!(code, 2, "not there yet: {err}");
        let imported = ok(&other, 4, &["import"]);
        assert_eq!(imported, serde_json::json!(["crew"]));
        let here = ok(&p, 4, &["review", "crew"]);
        let there = ok(&other, 4, &["review", "crew"]);
        let (here_j, there_j) = (here["journal"].as_array().unwrap(), there["journal"].as_array().unwrap());
        assert_eq!(there_j[..here_j.len()], here_j[..], "the same journal");
        assert_eq!(there_j[here_j.len()]["event"], serde_json::json!({"kind": "imported", "from": "baton-teams"}), "and the import on record");
        assert_eq!(there["team"]["tasks"], here["team"]["tasks"]);
        let msgs = ok(&other, 4, &["msg", "ls", "crew", "--after", "0"]);
        let seqs: Vec<u64> = msgs.as_array().unwrap().iter().map(|m| m["seq"].as_u64().unwrap()).collect();
        assert_eq!(seqs, [1, 2]);
        assert_eq!(msgs[0]["acked_by"], serde_json::json!(["bo"]));
        // Imported again: refused, nothing changed.
        let (code, _, err) = at(&other, 4, &["import"]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("already has a team crew"), "{err}");
        // A copy from a newer baton.
        let wt_dir = tempfile::tempdir().unwrap();
        let wt = wt_dir.path().join("copy");
        other.git(&["worktree", "add", "-q", "-b", "newer", wt.to_str().unwrap(), "baton-teams"]);
        let meta_file = wt.join(".team-state/crew/metadata.json");
        let text = fs_err::read_to_string(&meta_file).unwrap().replace("\"schema_version\": 1", "\"schema_version\": 99");
        fs_err::write(&meta_file, text).unwrap();
        let third = TestProject::new();
        std::process::Command::new("git")
            .args(["-C", wt.to_str().unwrap(), "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qam", "newer"])
            .status()
            .unwrap();
        third.git(&["fetch", "-q", other.root().to_str().unwrap(), "newer:newer"]);
        let (code, _, err) = at(&third, 5, &["import", "newer"]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("written by a newer baton (schema 99; this baton knows up to 1)"), "{err}");
        let (code, _, err) = at(&third, 5, &["import", "no-such-branch"]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("is not a branch or commit"), "{err}");
    }

    /// A completed team is read-only; bad input says what to do.
    fn a_completed_team_is_read_only_and_mistakes_say_what_to_do() {
        let p = TestProject::new();
        let (code, _, err) = at(&p, 0, &["create", "crew", "--teammate", "ana:boss"]);
        assert_eq!(code, 2);
        assert!(err.contains("\"boss\" is not a role"), "{err}");
        let (code, _, err) = at(&p, 0, &["create", "crew", "--teammate", "ana:engineer", "--task", "A:t2", "--task", "B:t1"]);
        assert_eq!(code, 2);
        assert!(err.contains("cycle: t1 -> t2 -> t1"), "{err}");
        let (code, _, err) = at(&p, 0, &["resume", "nope"]);
        assert_eq!(code, 2);
        assert!(err.contains("team not found: nope"), "{err}");
        assert!(err.contains("baton team ls"), "{err}");
        crew(&p);
        let (code, _, err) = at(&p, 0, &["create", "crew"]);
        assert_eq!(code, 2);
        assert!(err.contains("a team crew already exists"), "{err}");
        let (code, _, err) = at(&p, 1, &["complete", "crew"]);
        assert_eq!(code, 2, "tasks are open: {err}");
        assert!(err.contains("team crew has 2 open task(s)"), "{err}");
        ok(&p, 1, &["complete", "crew", "--force"]);
        for args in [
            vec!["task", "start", "crew", "t1", "--as", "ana"],
            vec!["msg", "send", "crew", "--to", "ana", "hello"],
        ] {
            let (code, _, err) = at(&p, 2, &args);
            assert_eq!(code, 2, "{args:?}: {err}");
            assert!(err.contains("completed and read-only"), "{err}");
            assert!(err.contains("baton team review crew"), "{err}");
        }
        let (code, _, err) = at(&p, 2, &["resume", "crew"]);
        assert_eq!(code, 2, "{err}");
        let review = ok(&p, 2, &["review", "crew"]);
        assert_eq!(review["team"]["status"], "completed");
        assert!(review["journal"].as_array().unwrap().len() >= 2);
        // Its log says so; gone, doctor says so and renders it again.
        let log = p.root().join(".baton/sessions/team@crew.md");
        let text = fs_err::read_to_string(&log).unwrap();
        assert!(text.contains("status: completed\n"), "{text}");
        assert!(text.contains("- t2 API: pending (after t1)"), "{text}");
        fs_err::remove_file(&log).unwrap();
        let (code, out, _) = p.run(&["doctor"]);
        assert_ne!(code, 0);
        assert!(out.contains("team crew: its session log"), "{out}");
        let (code, out, err) = p.run(&["doctor", "--fix"]);
        assert_eq!(code, 0, "{out}{err}");
        assert_eq!(fs_err::read_to_string(&log).unwrap(), text);
    }
}

/// Every baton process SIGKILLed mid-work; a new shell re-attaches with
/// nothing lost (SQLite).
#[test]
fn a_team_survives_sigkill_of_every_baton_process() {
    let p = TestProject::new();
    crew(&p);
    ok(&p, 0, &["task", "start", "crew", "t1", "--as", "ana"]);
    // Teammates hammering the store, each loop in its own process group,
    // killed mid-write with whatever baton it is running.
    let mut workers: Vec<std::process::Child> = (0..3)
        .map(|i| {
            use std::os::unix::process::CommandExt;
            std::process::Command::new("sh")
                .arg("-c")
                .arg(format!(
                    "n=0; while true; do n=$((n+1)); {b} team msg send crew --to lead --id w{i}-$n \"tick $n\" --as ana >/dev/null 2>&1; {b} team task checkpoint crew t1 --as ana >/dev/null 2>&1; done",
                    b = baton_testkit::baton_bin().display()
                ))
                .current_dir(p.root())
                .env_remove("BATON_DATABASE_URL")
                .process_group(0)
                .spawn()
                .unwrap()
        })
        .collect();
    baton_testkit::wait_for("some messages", || {
        let v = ok(&p, 0, &["probe", "crew"]);
        (v["messages"].as_u64().unwrap() >= 5).then_some(())
    });
    for w in &mut workers {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(w.id() as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
        let _ = w.wait();
    }
    // A new shell (its own environment), the same lead session.
    let out = p
        .baton(&["team", "resume", "crew", "--session", "lead-1", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["how"], "same");
    let probe = &v["probe"];
    let n = probe["messages"].as_u64().unwrap();
    // Every stored message is there once, gapless.
    let all = ok(
        &p,
        0,
        &["msg", "ls", "crew", "--limit", "100000", "--after", "0"],
    );
    let all = all.as_array().unwrap();
    let seqs: Vec<u64> = all.iter().map(|m| m["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=n).collect::<Vec<_>>());
    assert_eq!(probe["team"]["tasks"][0]["status"], "in_progress");
    assert!(
        probe["team"]["tasks"][0]["checkpoint"]["checkpoint_seq"]
            .as_u64()
            .unwrap()
            >= 1
    );
}

/// A team on PostgreSQL, re-attached from a second clone of the project
/// on another "machine" (another folder, the same database).
#[test]
fn a_team_on_postgresql_reattaches_from_a_second_clone() {
    baton_testkit::with_backend(baton_testkit::Backend::Postgres, || {
        let p = TestProject::new();
        crew(&p);
        ok(&p, 0, &["task", "start", "crew", "t1", "--as", "ana"]);
        ok(
            &p,
            0,
            &[
                "msg",
                "send",
                "crew",
                "--to",
                "lead",
                "--as",
                "ana",
                "schema is up",
            ],
        );
        let url = p.database_url.clone().expect("a PostgreSQL project");
        // A second clone, elsewhere, on the same database.
        let other = TestProject::bare();
        other.git(&["clone", "-q", p.root().to_str().unwrap(), "."]);
        let init = other.baton(&["init"]).output().unwrap();
        assert!(
            init.status.success(),
            "{}",
            String::from_utf8_lossy(&init.stderr)
        );
        let out = other
            .baton(&["team", "resume", "crew", "--session", "lead-1", "--json"])
            .env("BATON_DATABASE_URL", &url)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["how"], "same");
        assert_eq!(v["probe"]["team"]["tasks"][0]["assigned_to"], "ana");
        assert_eq!(v["probe"]["last_messages"][0]["body"], "schema is up");
        // The fact file is not in this clone: said so.
        let o = other
            .baton(&["team", "resume", "crew", "--session", "lead-1"])
            .env("BATON_DATABASE_URL", &url)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("warning: fact SPEC.md is gone"), "{err}");
    });
}

/// A teammate that is a real agent CLI (Claude Code, driven by the
/// scripted model server): baton starts it as an agent instance, and it
/// claims its task, tells the lead, and completes the task through baton's
/// MCP tools; every call counts as its heartbeat.
#[test]
fn a_real_agent_cli_teammate_works_through_the_mcp_tools() {
    use baton_testkit::agents::Agent;
    use baton_testkit::model_server::{ModelServer, Reply};
    use serde_json::json;
    let server = ModelServer::start(vec![
        Reply::tool("mcp__baton__team_task_claim", json!({})),
        Reply::tool(
            "mcp__baton__team_send",
            json!({"to": "lead", "type": "question", "subject": "t1", "body": "schema drafted: one table or two?"}),
        ),
        Reply::tool(
            "mcp__baton__team_checkpoint",
            json!({"task": "t1", "local_status": "green", "files_modified": ["schema.sql"]}),
        ),
        Reply::tool(
            "mcp__baton__team_task_update",
            json!({"task": "t1", "status": "completed"}),
        ),
        Reply::text("t1 is done"),
    ]);
    let home = tempfile::tempdir().unwrap();
    let p = TestProject::new();
    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    text.push_str(&Agent::Claude.baton_config("cc", &server, home.path()));
    fs_err::write(&cfg, text).unwrap();
    let (code, _, err) = at(
        &p,
        0,
        &[
            "create",
            "crew",
            "--teammate",
            "ana:engineer:cc",
            "--task",
            "Schema",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("started teammate ana as agent instance crew-ana"),
        "{err}"
    );
    let probe = baton_testkit::wait_for("ana to complete t1", || {
        let v = ok(&p, 0, &["probe", "crew"]);
        (v["team"]["tasks"][0]["status"] == "completed").then_some(v)
    });
    let t1 = &probe["team"]["tasks"][0];
    assert_eq!(t1["assigned_to"], "ana");
    assert_eq!(t1["last_green"]["files_modified"], json!(["schema.sql"]));
    assert_eq!(member(&probe, "ana")["liveness"], "online");
    assert_eq!(probe["team"]["teammates"]["ana"]["instance"], "crew-ana");
    let inbox = ok(&p, 0, &["msg", "ls", "crew", "--inbox", "lead"]);
    let stream = || {
        fs_err::read_dir(p.root().join(".baton/tasks/crew-ana/logs"))
            .map(|d| {
                d.filter_map(|e| fs_err::read_to_string(e.ok()?.path()).ok())
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default()
    };
    assert_eq!(
        inbox[0]["from"],
        "ana",
        "{inbox}; the agent's stream: {}",
        stream()
    );
    assert_eq!(inbox[0]["type"], "question");
    assert_eq!(inbox[0]["body"], "schema drafted: one table or two?");
    // It was told who it is and how to work.
    let first = server.model_requests()[0].body.to_string();
    assert!(
        first.contains("You are ana, the engineer of team crew"),
        "{first}"
    );
    // The team's log: its teammate's part, its turn (the instance's first
    // task, a log of its own) linked as a child session with the tokens it
    // used once it ended, and the mailbox.
    let team_log = p.root().join(".baton/sessions/team@crew.md");
    let tokens_of = |text: &str| -> Option<u64> {
        text.lines()
            .find(|l| l.starts_with("  - {session: crew-ana, agent: ana, tokens: "))?
            .rsplit("tokens: ")
            .next()?
            .trim_end_matches('}')
            .parse()
            .ok()
    };
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let log = loop {
        let text = fs_err::read_to_string(&team_log).unwrap_or_default();
        if tokens_of(&text).is_some_and(|t| t > 0) {
            break text;
        }
        assert!(
            std::time::Instant::now() < until,
            "no team log with ana's turn and the tokens it used within 30 s:\n{text}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let parsed = baton_core::session_log::parse(&log).unwrap();
    assert_eq!(
        baton_core::session_log::team::team_of(&parsed),
        Some("crew")
    );
    assert_eq!(parsed.front.participants, ["lead", "ana"]);
    for want in [
        "## ana @ana",
        "- t1 Schema: completed at ",
        "> [!subagent] @ana (engineer, turn 1)",
        "> [[crew-ana]]",
        " ana → lead (question) t1: schema drafted: one table or two?",
    ] {
        assert!(log.contains(want), "{want:?} not in the team log:\n{log}");
    }
    assert!(p.root().join(".baton/sessions/crew-ana.md").exists());
    let (code, out, _) = p.run(&["session", "ls", "--json"]);
    assert_eq!(code, 0);
    assert!(out.contains("\"team@crew\""), "{out}");
    // A team is re-attached, not resumed as a task.
    let (code, _, err) = p.run(&["session", "resume", "team@crew"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("baton team resume crew"), "{err}");
}
