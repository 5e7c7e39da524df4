//! Teams and their mailbox: one script of team commands (a task started, a
//! message sent and acknowledged, the task completed), killed at each
//! point in turn, the killed command run again as the member would, and
//! the script finished. The team then equals one that never crashed: the
//! same tasks, the same journal (every kind of event as many times), the
//! same mailbox (no message lost nor duplicated) and nothing left in the
//! inbox that was acknowledged. Consolidation's own points are crashed at
//! by `teams.rs`.

use super::Tally;
use baton_testkit::teams::{MIN, at, crew, ok};
use baton_testkit::{TestProject, on_both_backends};
use serde_json::Value;
use std::collections::BTreeMap;

/// The script: each command with the point it passes.
fn script(step: usize) -> (Vec<String>, &'static str) {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    match step {
        0 => (
            s(&["task", "start", "crew", "t1", "--as", "ana"]),
            "team-committed:task_started",
        ),
        1 => (
            s(&[
                "msg",
                "send",
                "crew",
                "--to",
                "bo",
                "--id",
                "m-1",
                "run the suite",
                "--as",
                "ana",
            ]),
            "message-sent:crew",
        ),
        2 => (
            s(&["msg", "ack", "crew", "1", "--as", "bo"]),
            "message-acked:crew",
        ),
        _ => (
            s(&["task", "complete", "crew", "t1", "--as", "ana"]),
            "team-committed:task_completed",
        ),
    }
}
const STEPS: usize = 4;

/// Runs step `i` (at minute `i + 1`), killed at `crash` when given.
fn run(p: &TestProject, i: usize, crash: Option<&str>, t: &mut Tally) -> (i32, String) {
    let (args, _) = script(i);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match crash {
        Some(point) => {
            let mut full = vec!["team"];
            full.extend_from_slice(&args);
            let mut c = p.baton(&full);
            c.env(
                "BATON_TEST_CLOCK_OFFSET_MS",
                ((i as i64 + 1) * MIN).to_string(),
            )
            .env("BATON_LEAD_SESSION", "lead-1");
            t.crash(c, point);
            (-1, String::new())
        }
        None => {
            let (code, _, err) = at(p, i as i64 + 1, &args);
            (code, err)
        }
    }
}

/// What the team is, to compare: its tasks, the kinds of its journal's
/// events counted, its mailbox, and bo's inbox.
fn view(p: &TestProject) -> Value {
    let review = ok(p, 9, &["review", "crew"]);
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    for r in review["journal"].as_array().into_iter().flatten() {
        let k = r["event"]["kind"]
            .as_str()
            .or(r["kind"].as_str())
            .unwrap_or("?");
        // Heartbeats and sightings depend on how many commands ran.
        if !matches!(k, "member_seen" | "heartbeat" | "lead_seen") {
            *kinds.entry(k.to_string()).or_insert(0) += 1;
        }
    }
    let tasks: Vec<Value> = review["team"]["tasks"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|x| serde_json::json!([x["id"], x["status"], x["assignee"]]))
        .collect();
    let mail = ok(p, 9, &["msg", "ls", "crew", "--after", "0"]);
    let mail: Vec<Value> = mail
        .as_array()
        .or(mail["messages"].as_array())
        .into_iter()
        .flatten()
        .map(|m| serde_json::json!([m["seq"], m["msg_id"], m["from"], m["to"], m["body"]]))
        .collect();
    let inbox = ok(p, 9, &["msg", "ls", "crew", "--inbox", "bo"]);
    let inbox_len = inbox
        .as_array()
        .or(inbox["messages"].as_array())
        .map_or(0, Vec::len);
    serde_json::json!({"tasks": tasks, "kinds": kinds, "mail": mail, "bo_inbox": inbox_len})
}

on_both_backends! {
    /// Each team and mailbox point: the team ends as if nothing crashed.
    fn a_team_crashed_at_each_point_ends_as_if_nothing_crashed() {
        let mut t = Tally::default();
        let reference = {
            let p = TestProject::new();
            crew(&p);
            for i in 0..STEPS {
                let (code, err) = run(&p, i, None, &mut t);
                assert_eq!(code, 0, "step {i}: {err}");
            }
            view(&p)
        };
        assert_eq!(reference["bo_inbox"], 0, "{reference}");
        assert_eq!(reference["mail"].as_array().map(Vec::len), Some(1), "{reference}");
        for k in 0..STEPS {
            let (_, point) = script(k);
            let p = TestProject::new();
            crew(&p);
            for i in 0..STEPS {
                if i == k {
                    run(&p, i, Some(point), &mut t);
                    // The member runs the killed command again: done once
                    // (0), or refused as done already (2).
                    let (code, err) = run(&p, i, None, &mut t);
                    t.runs += 1;
                    t.check(code == 0 || code == 2, || format!("{point}: the command again exited {code}: {err}"));
                } else {
                    let (code, err) = run(&p, i, None, &mut t);
                    t.runs += 1;
                    t.check(code == 0, || format!("{point}: step {i} after the crash exited {code}: {err}"));
                }
            }
            let got = view(&p);
            for part in ["tasks", "kinds", "mail", "bo_inbox"] {
                t.check(got[part] == reference[part], || {
                    format!("{point}: the team's {part} differ from a run without a crash: {} against {}", got[part], reference[part])
                });
            }
            let (code, out, _) = p.run(&["doctor"]);
            t.check(code == 0, || format!("{point}: doctor finds a problem: {out}"));
        }
        t.report("teams");
    }
}
