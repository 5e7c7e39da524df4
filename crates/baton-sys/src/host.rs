//! This machine's identity and process probes, read from /proc.

use baton_core::lease::{LeaseOwner, LocalHost};

fn read_trim(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// Host name and boot id of this machine. `BATON_HOST` overrides the name,
/// for machines that share one (containers cloned from one image): leases
/// of another host are judged by expiry, never by a local pid.
pub fn local_host() -> LocalHost {
    LocalHost {
        host: std::env::var("BATON_HOST")
            .ok()
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty())
            .or_else(|| read_trim("/proc/sys/kernel/hostname"))
            .or_else(|| std::env::var("HOSTNAME").ok())
            .unwrap_or_else(|| "localhost".into()),
        boot_id: read_trim("/proc/sys/kernel/random/boot_id").unwrap_or_else(|| "unknown".into()),
        pid_ns: pid_namespace().to_string(),
    }
}

/// This process's PID namespace, as the link `/proc/self/ns/pid` names it
/// (`pid:[4026531836]`): a pid probed or signalled means that process only
/// inside this namespace (containers on one host each have their own).
/// Empty where the link cannot be read.
pub fn pid_namespace() -> &'static str {
    static NS: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    NS.get_or_init(|| {
        std::fs::read_link("/proc/self/ns/pid")
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default()
    })
}

/// Whether a process recorded in PID namespace `ns` can be probed and
/// signalled from this one (an empty `ns` is a record from before baton
/// kept it: as before, yes).
pub fn same_pid_namespace(ns: &str) -> bool {
    ns.is_empty() || ns == pid_namespace()
}

/// The start time (clock ticks since boot) of a live process, `None` if
/// there is no such process (or it is a zombie).
pub fn process_start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may contain spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // fields[0] is the state (field 3); starttime is field 22.
    if fields.first() == Some(&"Z") || fields.first() == Some(&"X") {
        return None;
    }
    fields.get(19)?.parse().ok()
}

/// The lease owner identity of this process.
pub fn this_owner() -> LeaseOwner {
    let h = local_host();
    let pid = std::process::id();
    LeaseOwner {
        host: h.host,
        boot_id: h.boot_id,
        pid,
        start_time: process_start_time(pid).unwrap_or(0),
        pid_ns: h.pid_ns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_this_process() {
        let me = std::process::id();
        assert!(process_start_time(me).is_some());
        assert_eq!(process_start_time(u32::MAX - 1), None);
        let o = this_owner();
        assert_eq!(o.pid, me);
        assert_eq!(Some(o.start_time), process_start_time(me));
        assert!(o.pid_ns.starts_with("pid:["), "{}", o.pid_ns);
        assert!(same_pid_namespace(&o.pid_ns) && same_pid_namespace(""));
        assert!(!same_pid_namespace("pid:[1]"));
    }
}
