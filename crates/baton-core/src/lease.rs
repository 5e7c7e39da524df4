//! Leases: who runs a task, and whether that process is provably alive.
//!
//! A lease names its owner by host, boot id, pid and process start time, and
//! expires unless renewed by heartbeat. Classifying it is pure: the caller
//! passes the local host identity and a probe that reads a pid's start time.

use crate::state::TaskStatus;
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseOwner {
    pub host: String,
    /// Changes at every boot: an owner from an earlier boot is dead.
    pub boot_id: String,
    pub pid: u32,
    pub start_time: u64,
}

impl LeaseOwner {
    pub fn describe(&self) -> String {
        format!("pid {} on {}", self.pid, self.host)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    pub owner: LeaseOwner,
    pub acquired_at: Timestamp,
    pub expires_at: Timestamp,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Liveness {
    /// Nobody holds the lease.
    Free,
    /// The owner is alive (checked on this host) or its lease is still fresh.
    Live,
    /// The owner's lease ran out without renewal (another host).
    Expired,
    /// The owner is provably dead: the reason says how we know.
    Dead(String),
}

impl Liveness {
    pub fn is_live(&self) -> bool {
        matches!(self, Liveness::Live)
    }
}

/// The identity of the host asking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalHost {
    pub host: String,
    pub boot_id: String,
}

/// Classifies a lease. `probe(pid)` returns that local process's start time,
/// or `None` when no such process exists.
pub fn classify(
    lease: Option<&Lease>,
    now: Timestamp,
    local: &LocalHost,
    probe: impl Fn(u32) -> Option<u64>,
) -> Liveness {
    let Some(lease) = lease else {
        return Liveness::Free;
    };
    let o = &lease.owner;
    if o.host == local.host {
        if o.boot_id != local.boot_id {
            return Liveness::Dead(format!(
                "{} belonged to an earlier boot of this machine",
                o.describe()
            ));
        }
        return match probe(o.pid) {
            Some(st) if st == o.start_time => Liveness::Live,
            Some(_) => Liveness::Dead(format!("{} has exited (the pid was reused)", o.describe())),
            None => Liveness::Dead(format!("{} has exited", o.describe())),
        };
    }
    if lease.expires_at > now {
        Liveness::Live
    } else {
        Liveness::Expired
    }
}

/// The status users see: a RUNNING task nobody is running is CRASHED.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum DisplayStatus {
    Running,
    /// Queued for a worker (`baton run --queue`), which none runs now.
    Queued,
    Waiting,
    Crashed,
    Failed,
    Complete,
    Cancelled,
}

impl DisplayStatus {
    /// Every status, in the order `baton ls` documents them.
    pub const ALL: [DisplayStatus; 7] = [
        DisplayStatus::Running,
        DisplayStatus::Queued,
        DisplayStatus::Waiting,
        DisplayStatus::Crashed,
        DisplayStatus::Failed,
        DisplayStatus::Complete,
        DisplayStatus::Cancelled,
    ];

    pub fn of(status: TaskStatus, liveness: &Liveness) -> Self {
        match status {
            TaskStatus::Running if liveness.is_live() => DisplayStatus::Running,
            TaskStatus::Running => DisplayStatus::Crashed,
            TaskStatus::Waiting => DisplayStatus::Waiting,
            TaskStatus::Failed => DisplayStatus::Failed,
            TaskStatus::Complete => DisplayStatus::Complete,
            TaskStatus::Cancelled => DisplayStatus::Cancelled,
        }
    }
    /// A queued task nobody runs waits for a worker: it is QUEUED, never
    /// CRASHED (a worker picks it up, also after its last one died).
    pub fn of_task(status: TaskStatus, liveness: &Liveness, queued: bool) -> Self {
        match Self::of(status, liveness) {
            DisplayStatus::Crashed if queued => DisplayStatus::Queued,
            d => d,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            DisplayStatus::Running => "RUNNING",
            DisplayStatus::Queued => "QUEUED",
            DisplayStatus::Waiting => "WAITING",
            DisplayStatus::Crashed => "CRASHED",
            DisplayStatus::Failed => "FAILED",
            DisplayStatus::Complete => "COMPLETE",
            DisplayStatus::Cancelled => "CANCELLED",
        }
    }
    /// Whether `baton resume` can continue it.
    pub fn resumable(self) -> bool {
        matches!(
            self,
            DisplayStatus::Crashed | DisplayStatus::Failed | DisplayStatus::Waiting
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(host: &str, boot: &str, pid: u32, st: u64, exp: i64) -> Lease {
        Lease {
            owner: LeaseOwner {
                host: host.into(),
                boot_id: boot.into(),
                pid,
                start_time: st,
            },
            acquired_at: Timestamp(0),
            expires_at: Timestamp(exp),
        }
    }

    #[test]
    fn classifies_owners() {
        let local = LocalHost {
            host: "h".into(),
            boot_id: "b".into(),
        };
        let alive = |pid| if pid == 10 { Some(77) } else { None };
        let now = Timestamp(1000);
        assert_eq!(classify(None, now, &local, alive), Liveness::Free);
        // a local live owner stays live even if its lease is old
        assert!(classify(Some(&lease("h", "b", 10, 77, 0)), now, &local, alive).is_live());
        assert!(
            matches!(classify(Some(&lease("h", "b", 10, 78, 9999)), now, &local, alive), Liveness::Dead(m) if m.contains("reused"))
        );
        assert!(matches!(
            classify(Some(&lease("h", "b", 11, 77, 9999)), now, &local, alive),
            Liveness::Dead(_)
        ));
        assert!(
            matches!(classify(Some(&lease("h", "old", 10, 77, 9999)), now, &local, alive), Liveness::Dead(m) if m.contains("earlier boot"))
        );
        assert!(classify(Some(&lease("other", "x", 10, 77, 2000)), now, &local, alive).is_live());
        assert_eq!(
            classify(Some(&lease("other", "x", 10, 77, 500)), now, &local, alive),
            Liveness::Expired
        );
    }

    #[test]
    fn display_status() {
        assert_eq!(
            DisplayStatus::of(TaskStatus::Running, &Liveness::Free),
            DisplayStatus::Crashed
        );
        assert_eq!(
            DisplayStatus::of(TaskStatus::Running, &Liveness::Live),
            DisplayStatus::Running
        );
        assert_eq!(
            DisplayStatus::of_task(TaskStatus::Running, &Liveness::Expired, true),
            DisplayStatus::Queued
        );
        assert_eq!(
            DisplayStatus::of_task(TaskStatus::Running, &Liveness::Live, true),
            DisplayStatus::Running
        );
        assert!(!DisplayStatus::Complete.resumable());
        assert!(DisplayStatus::Crashed.resumable());
    }
}
