//! Every crash point (`baton_core::crash::POINTS`) crashed at through the
//! binary, then recovered from as a user would, with the invariants
//! checked after each. The task engine's points are enumerated here over
//! the phases and commits a task passes; the points of deliveries, agent
//! instances and teams are crashed at by their own journeys
//! (`serve.rs`, `agent_instances.rs`, `teams.rs`, `journeys/teams.rs`),
//! and a check here fails if any point is crashed at by no test at all.
//! The enumeration prints its figures: crash points, commands × points
//! run, invariants checked, breaks found.

use baton_testkit::{TestProject, on_both_backends};
use serde_json::Value;
use std::collections::BTreeMap;

/// Three phases, each leaving a line in runs.txt.
const W: &str = r#"name = "w"
[[phase]]
id = "a"
run = "echo a >> runs.txt"
[[phase]]
id = "b"
run = "echo b >> runs.txt"
[[phase]]
id = "c"
run = "echo c >> runs.txt"
"#;

/// How a user recovers after a crash at each point of a task's run.
enum Recover {
    /// `baton resume ID`.
    Resume,
    /// `baton doctor --fix`: the task had completed in the store.
    Doctor,
}

/// The task engine's crash points, each at the keys a three-phase run
/// passes, with the recovery.
const CASES: [(&str, Recover); 9] = [
    ("journal-committed:claimed", Recover::Resume),
    ("journal-committed:phase_started", Recover::Resume),
    ("journal-committed:phase_passed", Recover::Resume),
    ("before-spawn:a", Recover::Resume),
    ("before-spawn:b", Recover::Resume),
    ("after-spawn:b", Recover::Resume),
    ("after-pass:b", Recover::Resume),
    ("after-pass:c", Recover::Resume),
    ("journal-committed:task_completed", Recover::Doctor),
];

/// What the enumeration checked.
#[derive(Default)]
struct Tally {
    runs: usize,
    invariants: usize,
    breaks: Vec<String>,
}

impl Tally {
    fn check(&mut self, ok: bool, what: String) {
        self.invariants += 1;
        if !ok {
            self.breaks.push(what);
        }
    }
}

fn state_file(p: &TestProject, id: &str) -> Value {
    let text = fs_err::read_to_string(p.root().join(format!(".baton/tasks/{id}/state.json")))
        .unwrap_or_default();
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// Crashes a run at `point`, recovers, and checks what must hold.
fn enumerate(p: &TestProject, point: &str, recover: &Recover, n: usize, t: &mut Tally) {
    let id = format!("k{n}");
    let out = p
        .baton(&["run", "w", "crash", "--id", &id])
        .env("BATON_TEST_CRASH_AT", point)
        .output()
        .unwrap();
    t.runs += 1;
    t.check(
        out.status.code().is_none(),
        format!(
            "{point}: baton was to die by SIGKILL, it exited {:?}",
            out.status.code()
        ),
    );
    let (code, _, err) = match recover {
        Recover::Resume => p.run(&["resume", &id]),
        Recover::Doctor => p.run(&["doctor", "--fix"]),
    };
    t.runs += 1;
    t.check(
        code == 0,
        format!("{point}: the recovery exited {code}: {err}"),
    );
    let doc = p.state(&id);
    t.check(
        doc["status"] == "COMPLETE",
        format!("{point}: {} after the recovery", doc["status"]),
    );
    let want: BTreeMap<String, usize> =
        ["a", "b", "c"].iter().map(|s| (s.to_string(), 1)).collect();
    let got = p.passes(&id);
    t.check(
        got == want,
        format!("{point}: each phase passes once, got {got:?}"),
    );
    let seqs: Vec<u64> = p
        .journal(&id)
        .iter()
        .map(|e| e["seq"].as_u64().unwrap_or(0))
        .collect();
    t.check(
        seqs == (1..=seqs.len() as u64).collect::<Vec<_>>(),
        format!("{point}: the journal has a gap or a repeat: {seqs:?}"),
    );
    // The rendered files match the store.
    let file = state_file(p, &id);
    t.check(
        file["status"] == doc["status"] && file["phases"] == doc["phases"],
        format!("{point}: state.json differs from the store: {file} against {doc}"),
    );
    let (code, out, _) = p.run(&["doctor"]);
    t.check(
        code == 0,
        format!("{point}: doctor finds a problem after the recovery: {out}"),
    );
    // A phase's output is rendered once it passed.
    for phase in ["a", "b", "c"] {
        let any = std::fs::read_dir(p.root().join(format!(".baton/tasks/{id}")))
            .map(|d| {
                d.flatten().any(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    name.ends_with(&format!("-{phase}.md"))
                })
            })
            .unwrap_or(false);
        t.check(any, format!("{point}: no output file for phase {phase}"));
    }
}

on_both_backends! {
    /// Each of the task engine's crash points, at each key a run passes:
    /// the run dies there, the user's recovery completes the task, and
    /// every phase has passed once, the journal is whole, the rendered
    /// files match the store, and `doctor` finds nothing.
    fn every_crash_point_of_a_task_is_recovered_with_its_invariants() {
        let p = TestProject::new();
        p.workflow("w", W);
        let mut t = Tally::default();
        for (n, (point, recover)) in CASES.iter().enumerate() {
            enumerate(&p, point, recover, n, &mut t);
        }
        let names: std::collections::BTreeSet<&str> =
            CASES.iter().map(|(p, _)| p.split(':').next().unwrap()).collect();
        println!(
            "crash points: {} ({} here); commands x points run: {}; invariants checked: {}; breaks found: {}",
            baton_core::crash::POINTS.len(),
            names.len(),
            t.runs,
            t.invariants,
            t.breaks.len()
        );
        assert!(t.breaks.is_empty(), "breaks:\n{}", t.breaks.join("\n"));
    }
}

/// Every crash point is crashed at by some test (its name appears in a
/// `BATON_TEST_CRASH_AT` setting in the suite) and listed in
/// ARCHITECTURE.md.
#[test]
fn every_crash_point_is_crashed_at_by_a_test() {
    let dir = std::path::Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("tests");
    let mut text = String::new();
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let path = e.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|x| x == "rs") {
                text.push_str(&fs_err::read_to_string(&path).unwrap());
            }
        }
    }
    let missing: Vec<&str> = baton_core::crash::POINTS
        .iter()
        .map(|p| p.name)
        .filter(|n| !text.contains(&format!("\"{n}:")) && !text.contains(&format!("\"{n}\"")))
        .collect();
    assert!(
        missing.is_empty(),
        "crash points no test crashes at: {missing:?}"
    );
    // And ARCHITECTURE.md lists each, with what it protects.
    let arch = fs_err::read_to_string(
        std::path::Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap())
            .join("../../ARCHITECTURE.md"),
    )
    .unwrap();
    let unlisted: Vec<&str> = baton_core::crash::POINTS
        .iter()
        .map(|p| p.name)
        .filter(|n| !arch.contains(&format!("| `{n}` |")))
        .collect();
    assert!(
        unlisted.is_empty(),
        "crash points ARCHITECTURE.md does not list: {unlisted:?}"
    );
}
