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
        name: "state-rendered",
        key: "the kind of the commit's last event",
        between: "state.json shows the commit; the session log and the phase's output file do not yet",
        protects: "resume (or `doctor --fix`) renders the session log and outputs from the store; state.json never shows what the store has not",
    },
    CrashPoint {
        name: "snapshot-taken",
        key: "the phase",
        between: "the phase's start snapshot is under refs/baton/<id>/<attempt>/start; its start is not journaled",
        protects: "resume starts the attempt again over the same work tree; the phase passes once and the user's files are untouched",
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
        name: "worktree-committed",
        key: "the phase",
        between: "a queued task's phase passed and its work is committed on baton/<id> in its worktree; the branch is not pushed",
        protects: "the next worker resumes the task and pushes the branch; no commit of the phase is lost and the phase does not run again",
    },
    CrashPoint {
        name: "branch-pushed",
        key: "the phase",
        between: "the task branch is pushed; the next phase is not started",
        protects: "the next worker goes on from the pushed branch (force-with-lease from what it holds); nothing on the remote is overwritten that was not the task's",
    },
    CrashPoint {
        name: "delivery-recorded",
        key: "the delivery's event (pull_request, issue_comment, …)",
        between: "the delivery is stored, not handed to the tasks nor settled",
        protects: "a redelivery (`baton deliver` again, or GitHub's) or the next `serve` hands it over once; the task resumes once",
    },
    CrashPoint {
        name: "delivery-passed",
        key: "the wait phase",
        between: "a delivery's event passed the wait (journaled); the delivery is not settled",
        protects: "the next `serve` settles the delivery as the resume it was, not a second one; `resume` completes the task with the wait passed once",
    },
    CrashPoint {
        name: "delivery-settled",
        key: "the delivery's event",
        between: "the delivery is settled (its tasks' waits passed); the tasks it passed are held and not run on",
        protects: "`resume` runs the tasks on from their wait, passed once; a redelivery changes nothing",
    },
    CrashPoint {
        name: "instance-committed",
        key: "the kind of the instance event committed last (created, turn_started, …)",
        between: "an agent instance's transition is committed; what follows it (capabilities revoked, worktree, process) is not done",
        protects: "`doctor --fix` (or the next `baton agent` command's tick) settles what the transition left; no instance is counted twice",
    },
    CrashPoint {
        name: "review-forked",
        key: "the review instance",
        between: "the review's worktree and branch exist; its allocation is not journaled",
        protects: "`doctor --fix` finds the review whose start was cut short, removes its worktree and branch and marks it failed; the coding agent goes on",
    },
    CrashPoint {
        name: "team-committed",
        key: "the kind of the team event committed last (task_started, task_completed, …)",
        between: "a team transition is in the store; the team's session log is not rendered and the command has not answered",
        protects: "the command run again finds it done (or refuses it as done, exit 2) and applies nothing twice; no team event is lost",
    },
    CrashPoint {
        name: "message-sent",
        key: "the team",
        between: "a message is in the mailbox; the team's session log is not rendered and the sender has no answer",
        protects: "the sender sends again with the same id: the message is there once, never lost nor duplicated",
    },
    CrashPoint {
        name: "message-acked",
        key: "the team",
        between: "messages are acknowledged in the store; the member has no answer",
        protects: "acknowledging again counts nothing new; the inbox holds nothing acknowledged and loses nothing else",
    },
    CrashPoint {
        name: "inbox-answered",
        key: "the inbox item",
        between: "the answer is stored (a task's wait passed with it, journaled); the task is not run on and its session log not rendered",
        protects: "answering again is refused (exit 2); `resume` runs the task on from the answer, given once; the log shows it",
    },
    CrashPoint {
        name: "workspace-prepared",
        key: "the workspace's folder name",
        between: "a role workspace is checked out for a task; its record and the phase's start are not written",
        protects: "resume checks it out again from the same commit; what the agent's memory files held is kept",
    },
    CrashPoint {
        name: "task-copied",
        key: "the task",
        between: "`store copy` copied this task and checked it; the tasks after it and the other records are not copied",
        protects: "the same copy run again skips what is there identically and finishes; the target then equals the source",
    },
    CrashPoint {
        name: "doctor-repaired",
        key: "the repair's number in the run (1, 2, …)",
        between: "`doctor --fix` made this repair; the ones after it are not made",
        protects: "`doctor --fix` run again makes the rest, and `doctor` then finds nothing; no task changes status",
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
