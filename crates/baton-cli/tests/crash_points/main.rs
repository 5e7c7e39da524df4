//! Every crash point (`baton_core::crash::POINTS`) crashed at through the
//! binary, then recovered from as a user would, with the invariants
//! checked after each: the task engine's points over the phases and
//! commits a run passes (`task.rs`), deliveries (`deliveries.rs`), teams
//! and their mailbox (`teams.rs`), the inbox (`inbox.rs`), queued tasks'
//! commits and pushes (`queued.rs`), `store copy` (`copy.rs`), each repair
//! of `doctor --fix` (`doctor.rs`), and, on PostgreSQL, the store's
//! connection cut (and the server restarted) at each point (`cut.rs`).
//! Agent instances' points are crashed at by their own journeys
//! (`agent_instances.rs`). A check here fails if any point is crashed at by
//! no test, or missing from ARCHITECTURE.md.
//!
//! Each enumeration prints its figures (crash points, commands × points
//! run, invariants checked, breaks found) and, when `BATON_FIGURES_DIR` is
//! set (the test script sets it), writes them there for the script to
//! print; with `BATON_CRASH_CAMPAIGN=1` the enumerations run every key of
//! every point (the campaign script), else a sample that still reaches
//! every point.

mod copy;
mod cut;
mod deliveries;
mod doctor;
mod inbox;
mod queued;
mod task;
mod teams;

use baton_testkit::TestProject;
pub use baton_testkit::crash::Tally;

/// Whether the campaign (every key of every point) runs.
pub fn campaign() -> bool {
    std::env::var("BATON_CRASH_CAMPAIGN").is_ok_and(|v| v == "1")
}

/// The journal's seqs run 1..=n, with no gap or repeat.
pub fn gapless(p: &TestProject, id: &str) -> bool {
    let seqs: Vec<u64> = p
        .journal(id)
        .iter()
        .map(|e| e["seq"].as_u64().unwrap_or(0))
        .collect();
    seqs == (1..=seqs.len() as u64).collect::<Vec<_>>()
}

/// The lines of a file of the project (0 when it is missing).
pub fn lines(p: &TestProject, file: &str) -> usize {
    fs_err::read_to_string(p.root().join(file))
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

/// Every crash point is crashed at by some test (its name appears in a
/// `BATON_TEST_CRASH_AT` or `BATON_TEST_HOLD_AT` setting in the suite) and
/// listed in ARCHITECTURE.md.
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
