//! `baton team` driven with its clock moved, as the team suites drive it:
//! a lead's timeout is played by moving the clock, never by waiting.

use crate::TestProject;
use serde_json::Value;

/// A minute, in the milliseconds `BATON_TEST_CLOCK_OFFSET_MS` takes.
pub const MIN: i64 = 60_000;

/// `baton team ARGS…` at `minutes` from now, as lead session `lead-1`:
/// its exit code, stdout and stderr.
pub fn at(p: &TestProject, minutes: i64, args: &[&str]) -> (i32, String, String) {
    at_env(p, minutes, args, &[])
}

/// The same, with more environment variables.
pub fn at_env(
    p: &TestProject,
    minutes: i64,
    args: &[&str],
    env: &[(&str, &str)],
) -> (i32, String, String) {
    let mut c = command(p, minutes, args);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The command `baton team ARGS…` at `minutes` from now, as lead session
/// `lead-1`, not run yet.
pub fn command(p: &TestProject, minutes: i64, args: &[&str]) -> std::process::Command {
    let mut full = vec!["team"];
    full.extend_from_slice(args);
    let mut c = p.baton(&full);
    c.env("BATON_TEST_CLOCK_OFFSET_MS", (minutes * MIN).to_string())
        .env("BATON_LEAD_SESSION", "lead-1");
    c
}

/// The same, expected to succeed; its JSON output.
pub fn ok(p: &TestProject, minutes: i64, args: &[&str]) -> Value {
    let mut a = args.to_vec();
    a.push("--json");
    let (code, out, err) = at(p, minutes, &a);
    assert_eq!(code, 0, "team {args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// Team `crew`: ana (engineer) and bo (tester), tasks t1 (Schema) and t2
/// (API), made at minute 0 with lead session `lead-1`.
pub fn crew(p: &TestProject) {
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
            "API",
        ],
    );
}
