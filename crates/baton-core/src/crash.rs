//! The crash points: each place where baton has written part of what one
//! step makes durable, named, with what is durable when it fires and what
//! must hold after a crash there and the user's recovery. In a test build
//! (debug assertions on: what `cargo test` builds), the process aborts with
//! SIGKILL at a point that `BATON_TEST_CRASH_AT` names: `POINT` (the first
//! time it is reached) or `POINT:KEY` (when it is reached for that phase,
//! team, instance or event). A release build has no crash points.
//! `baton-cli/tests/crash_points.rs` crashes at each and checks.

/// One crash point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CrashPoint {
    pub name: &'static str,
    /// What the key names.
    pub key: &'static str,
    /// What is durable when it fires, and what is not yet.
    pub between: &'static str,
    /// What must hold after a crash there and the recovery.
    pub protects: &'static str,
}

/// Every crash point.
pub const POINTS: &[CrashPoint] = &[
    CrashPoint {
        name: "journal-committed",
        key: "the kind of the commit's last event (phase_started, phase_passed, task_completed, …)",
        between: "a transition's events and projection are committed; state.json, the phase's output file and the session log are not rendered yet",
        protects: "resume (or `doctor --fix`) renders the files from the store; no phase runs again that passed",
    },
    CrashPoint {
        name: "before-spawn",
        key: "the phase",
        between: "the phase's start is journaled; its process is not spawned",
        protects: "resume runs the attempt; the phase passes once",
    },
    CrashPoint {
        name: "after-spawn",
        key: "the phase",
        between: "the phase's process runs and its pid is journaled; its end is not",
        protects: "resume kills the orphan and runs the attempt again; the phase passes once",
    },
    CrashPoint {
        name: "after-pass",
        key: "the phase",
        between: "the PASS is journaled; the phase's output file and the next phase are not",
        protects: "resume renders the missing output and goes on with the next phase; the passed one never runs again",
    },
    CrashPoint {
        name: "delivery-passed",
        key: "the wait phase",
        between: "a delivery's event passed the wait (journaled); the delivery is not settled",
        protects: "the next `serve` settles the delivery as the resume it was, not a second one; `resume` completes the task with the wait passed once",
    },
    CrashPoint {
        name: "review-forked",
        key: "the review instance",
        between: "the review's worktree and branch exist; its allocation is not journaled",
        protects: "`doctor --fix` finds the review whose start was cut short, removes its worktree and branch and marks it failed; the coding agent goes on",
    },
    CrashPoint {
        name: "consolidate-merged",
        key: "the team",
        between: "a teammate's branch is merged in the consolidation worktree; nothing is committed on the team branch",
        protects: "`team resume` consolidates again from the start; no teammate's commit is lost",
    },
    CrashPoint {
        name: "consolidate-staged",
        key: "the team",
        between: "the consolidation's result is staged; the commit is not made",
        protects: "`team resume` consolidates again; the team branch never holds half a consolidation",
    },
    CrashPoint {
        name: "consolidate-committed",
        key: "the team",
        between: "the consolidation commit is made; the team journal has not recorded it",
        protects: "`team resume` adopts the commit; no second consolidation commit",
    },
];

/// Whether `name` is a crash point.
pub fn known(name: &str) -> bool {
    POINTS.iter().any(|p| p.name == name)
}

/// Whether `wanted` (`POINT` or `POINT:KEY`) names the point `name`
/// reached with `key`.
pub fn matches(wanted: &str, name: &str, key: &str) -> bool {
    match wanted.split_once(':') {
        Some((n, k)) => n == name && k == key,
        None => wanted == name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_are_named_once_and_matched_with_or_without_their_key() {
        let mut names: Vec<&str> = POINTS.iter().map(|p| p.name).collect();
        names.sort_unstable();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n, "a point named twice");
        assert!(known("after-pass") && !known("after-passs"));
        assert!(matches("after-pass", "after-pass", "b"));
        assert!(matches("after-pass:b", "after-pass", "b"));
        assert!(!matches("after-pass:c", "after-pass", "b"));
        assert!(!matches("before-spawn:b", "after-pass", "b"));
    }
}
