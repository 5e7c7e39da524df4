//! Leases: who runs a task, and whether that process is provably alive.
//!
//! A lease names its owner by host, boot id, PID namespace, pid and process
//! start time, and expires unless renewed by heartbeat. Classifying it is
//! pure: the caller passes the local host identity and a probe that reads a
//! pid's start time. A pid means something only in the PID namespace it was
//! taken in (two containers on one host share the host name and the boot id,
//! never their pids): an owner in another namespace is judged by its lease's
//! expiry alone, like one on another host.

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
    /// The PID namespace `pid` belongs to (`pid:[4026531836]`, the link
    /// `/proc/self/ns/pid`). Empty in leases written before baton recorded
    /// it: those are probed as they always were.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub pid_ns: String,
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

/// The identity of the host asking: where its pid probes mean something.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocalHost {
    pub host: String,
    pub boot_id: String,
    /// This process's PID namespace (see [`LeaseOwner::pid_ns`]).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub pid_ns: String,
}

impl LocalHost {
    /// Whether a pid recorded by a process of `host`, `boot_id` and
    /// `pid_ns` can be probed (and signalled) from here: same host, same
    /// boot and same PID namespace. An empty `pid_ns` is a record from
    /// before baton kept it, probed as it always was.
    pub fn can_probe(&self, host: &str, boot_id: &str, pid_ns: &str) -> bool {
        host == self.host && boot_id == self.boot_id && (pid_ns.is_empty() || pid_ns == self.pid_ns)
    }

    /// Whether `owner`'s pid can be probed from here.
    pub fn can_probe_owner(&self, owner: &LeaseOwner) -> bool {
        self.can_probe(&owner.host, &owner.boot_id, &owner.pid_ns)
    }
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
    if o.host == local.host && o.boot_id != local.boot_id {
        return Liveness::Dead(format!(
            "{} belonged to an earlier boot of this machine",
            o.describe()
        ));
    }
    // Only where the pid was taken does it name the owner: another host,
    // or another container of this one, is judged by the lease's expiry.
    if local.can_probe_owner(o) {
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
                pid_ns: "pid:[1]".into(),
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
            pid_ns: "pid:[1]".into(),
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

    /// Two containers of one host share its name and boot id; a pid taken
    /// in one names nothing in the other (issue 34: `unshare --pid` saw
    /// "pid 1 has exited (the pid was reused)" and ran the phase twice).
    #[test]
    fn an_owner_in_another_pid_namespace_is_judged_by_expiry() {
        let local = LocalHost {
            host: "h".into(),
            boot_id: "b".into(),
            pid_ns: "pid:[2]".into(),
        };
        // Pid 10 here is another process (its start time differs).
        let here = |pid| if pid == 10 { Some(5) } else { None };
        let now = Timestamp(1000);
        let fresh = lease("h", "b", 10, 77, 2000);
        assert!(classify(Some(&fresh), now, &local, here).is_live());
        let stale = lease("h", "b", 10, 77, 500);
        assert_eq!(classify(Some(&stale), now, &local, here), Liveness::Expired);
        // Another boot kills every namespace of the host.
        assert!(matches!(
            classify(Some(&lease("h", "old", 10, 77, 2000)), now, &local, here),
            Liveness::Dead(_)
        ));
        // A lease written before namespaces were kept is probed as before.
        let mut legacy = lease("h", "b", 10, 77, 2000);
        legacy.owner.pid_ns.clear();
        assert!(matches!(
            classify(Some(&legacy), now, &local, here),
            Liveness::Dead(m) if m.contains("reused")
        ));
        assert!(!local.can_probe_owner(&fresh.owner));
        assert!(local.can_probe_owner(&legacy.owner));
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
