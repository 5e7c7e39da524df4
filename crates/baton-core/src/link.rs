//! Linked tasks: a task that needs others starts by itself once every one
//! of them is COMPLETE. Until then it is a link (kept in the store, so it
//! outlives any process), holding what its task is to be; then exactly
//! one process starts it (a compare and set on the link), here or queued
//! for the workers. Pure: the link and whether it is due.

use crate::state::TaskStatus;
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

/// A task to start once the tasks it needs are complete.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    /// The id its task will have (reserved).
    pub id: String,
    pub workflow: String,
    pub description: String,
    #[serde(default)]
    pub flags: Vec<String>,
    #[serde(default)]
    pub labels: Vec<String>,
    pub agent: Option<String>,
    /// Queue it for the workers instead of running it where it starts.
    #[serde(default)]
    pub queue: bool,
    /// The tasks it waits for.
    pub needs: Vec<String>,
    pub created_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<Started>,
}

/// When the link's task was started, and how that went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Started {
    pub at: Timestamp,
    /// `RUNNING`, `QUEUED`, or why it could not be started.
    pub outcome: String,
}

/// Whether `link` is due: not started, and every task it needs COMPLETE
/// (`status` says how a task stands; `None`: there is no such task).
pub fn due(link: &Link, status: impl Fn(&str) -> Option<TaskStatus>) -> bool {
    link.started.is_none()
        && link
            .needs
            .iter()
            .all(|n| status(n) == Some(TaskStatus::Complete))
}

/// Why `link` can never start, when it cannot: a task it needs was
/// cancelled (it will never complete) or is gone. A task that failed or
/// crashed may still be resumed and complete, so it keeps the link.
pub fn dead_end(link: &Link, status: impl Fn(&str) -> Option<TaskStatus>) -> Option<String> {
    if link.started.is_some() {
        return None;
    }
    link.needs.iter().find_map(|n| match status(n) {
        Some(TaskStatus::Cancelled) => Some(format!("not started: task {n} was cancelled")),
        None => Some(format!("not started: task {n} is gone")),
        Some(_) => None,
    })
}

/// How a link ended without its task being started by it.
pub fn cancelled_by(by: &str) -> String {
    format!("cancelled by {by}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_is_due_once_every_task_it_needs_is_complete_and_only_once() {
        let mut l = Link {
            id: "b".into(),
            workflow: "w".into(),
            description: String::new(),
            flags: vec![],
            labels: vec![],
            agent: None,
            queue: false,
            needs: vec!["a1".into(), "a2".into()],
            created_at: Timestamp(0),
            started: None,
        };
        let both = |s: &str| match s {
            "a1" | "a2" => Some(TaskStatus::Complete),
            _ => None,
        };
        let one = |s: &str| match s {
            "a1" => Some(TaskStatus::Complete),
            "a2" => Some(TaskStatus::Failed),
            _ => None,
        };
        assert!(!due(&l, one));
        assert!(!due(&l, |_| None), "a task it needs that is gone");
        assert!(due(&l, both));
        l.started = Some(Started {
            at: Timestamp(1),
            outcome: "RUNNING".into(),
        });
        assert!(!due(&l, both), "started once");
    }

    #[test]
    fn a_link_whose_task_was_cancelled_or_is_gone_can_never_start() {
        let l = Link {
            id: "b".into(),
            workflow: "w".into(),
            description: String::new(),
            flags: vec![],
            labels: vec![],
            agent: None,
            queue: false,
            needs: vec!["a1".into(), "a2".into()],
            created_at: Timestamp(0),
            started: None,
        };
        let with = |a2: Option<TaskStatus>| {
            move |s: &str| match s {
                "a1" => Some(TaskStatus::Complete),
                _ => a2,
            }
        };
        assert_eq!(
            dead_end(&l, with(Some(TaskStatus::Failed))),
            None,
            "it may be resumed"
        );
        assert_eq!(dead_end(&l, with(Some(TaskStatus::Running))), None);
        assert_eq!(
            dead_end(&l, with(Some(TaskStatus::Cancelled))).as_deref(),
            Some("not started: task a2 was cancelled")
        );
        assert_eq!(
            dead_end(&l, with(None)).as_deref(),
            Some("not started: task a2 is gone")
        );
        let ended = Link {
            started: Some(Started {
                at: Timestamp(1),
                outcome: cancelled_by("ana"),
            }),
            ..l
        };
        assert_eq!(dead_end(&ended, with(None)), None, "ended once");
    }
}
