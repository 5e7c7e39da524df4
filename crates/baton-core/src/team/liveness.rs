//! Whether a teammate (or the lead) is alive, from its last heartbeat as
//! the store received it. A heartbeat carries the sender's sequence number
//! and its own clock; the store stamps it with its own clock when it
//! arrives, and keeps it only if its sequence is newer. Liveness is read
//! from the store's stamp alone, so a sender whose clock is minutes ahead
//! or behind is never taken for alive when it is dead, nor dead when it is
//! alive; the difference between the two clocks is only reported.

use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

/// A sender's last heartbeat, as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Presence {
    pub name: String,
    /// The sender's sequence number of that heartbeat.
    pub seq: u64,
    /// The sender's clock when it sent it.
    pub sent_at: Option<Timestamp>,
    /// The store's clock when it arrived.
    pub received_at: Timestamp,
}

/// The thresholds of liveness, configurable under `[teams]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    pub online_ms: i64,
    pub idle_ms: i64,
    pub suspended_ms: i64,
    /// A lead silent this long is timed out (zombie mode).
    pub lead_timeout_ms: i64,
    /// A lead silent this long may be replaced by another.
    pub lead_replace_ms: i64,
    /// A sender's clock this far from the store's is reported as skew.
    pub skew_ms: i64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            online_ms: 10 * 60_000,
            idle_ms: 30 * 60_000,
            suspended_ms: 60 * 60_000,
            lead_timeout_ms: 5 * 60_000,
            lead_replace_ms: 30 * 60_000,
            skew_ms: 30_000,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Liveness {
    Online,
    Idle,
    Suspended,
    Stale,
    /// No heartbeat yet.
    Unseen,
    /// The lead only: silent past `[teams] lead_timeout`, or the team is in
    /// zombie mode (its timeout was noticed and it has not re-attached).
    TimedOut,
}

impl Liveness {
    pub fn as_str(self) -> &'static str {
        match self {
            Liveness::Online => "online",
            Liveness::Idle => "idle",
            Liveness::Suspended => "suspended",
            Liveness::Stale => "stale",
            Liveness::Unseen => "unseen",
            Liveness::TimedOut => "timed_out",
        }
    }
}

/// The liveness of `p` at the store's time `now`.
pub fn liveness(p: Option<&Presence>, now: Timestamp, th: &Thresholds) -> Liveness {
    let Some(p) = p else {
        return Liveness::Unseen;
    };
    let age = now.millis() - p.received_at.millis();
    if age < th.online_ms {
        Liveness::Online
    } else if age < th.idle_ms {
        Liveness::Idle
    } else if age < th.suspended_ms {
        Liveness::Suspended
    } else {
        Liveness::Stale
    }
}

/// The lead's liveness: timed out once the team is in zombie mode
/// (`zombie`) or the lead has been silent past the lead timeout, which is
/// shorter than the teammates' thresholds; else as any member's.
pub fn lead_liveness(
    p: Option<&Presence>,
    now: Timestamp,
    th: &Thresholds,
    zombie: bool,
) -> Liveness {
    if zombie {
        return Liveness::TimedOut;
    }
    match p {
        Some(p) if now.millis() - p.received_at.millis() > th.lead_timeout_ms => Liveness::TimedOut,
        _ => liveness(p, now, th),
    }
}

/// How far the sender's clock was from the store's (positive: ahead),
/// when that is past the threshold.
pub fn skew_ms(p: &Presence, th: &Thresholds) -> Option<i64> {
    let d = p.sent_at?.millis() - p.received_at.millis();
    (d.abs() > th.skew_ms).then_some(d)
}

/// `5m 3s`, `2h 0m`, `12s`.
pub fn human_ms(ms: i64) -> String {
    if ms == i64::MAX {
        return "ever".into();
    }
    let s = ms.max(0) / 1000;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m {}s", s / 60, s % 60),
        _ => format!("{}h {}m", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: i64 = 60_000;

    fn beat(sent: i64, received: i64) -> Presence {
        Presence {
            name: "ana".into(),
            seq: 1,
            sent_at: Some(Timestamp(sent)),
            received_at: Timestamp(received),
        }
    }

    #[test]
    fn liveness_goes_by_the_age_of_the_last_heartbeat() {
        let th = Thresholds::default();
        let at = |age_min: i64| liveness(Some(&beat(0, 0)), Timestamp(age_min * MIN), &th);
        assert_eq!(at(0), Liveness::Online);
        assert_eq!(at(9), Liveness::Online);
        assert_eq!(at(10), Liveness::Idle);
        assert_eq!(at(29), Liveness::Idle);
        assert_eq!(at(30), Liveness::Suspended);
        assert_eq!(at(60), Liveness::Stale);
        assert_eq!(liveness(None, Timestamp(0), &th), Liveness::Unseen);
    }

    /// A sender 5 minutes ahead or behind: the skew is reported, and its
    /// liveness is what the store's clock says, either way.
    #[test]
    fn a_skewed_clock_is_reported_and_never_moves_liveness() {
        let th = Thresholds::default();
        let store = 100 * MIN;
        for skew in [5 * MIN, -5 * MIN] {
            let p = beat(store + skew, store);
            assert_eq!(skew_ms(&p, &th), Some(skew));
            // Dead for 11 minutes by the store's clock: not online, whatever
            // its own clock said.
            assert_eq!(
                liveness(Some(&p), Timestamp(store + 11 * MIN), &th),
                Liveness::Idle
            );
            // Alive a minute ago: online.
            assert_eq!(
                liveness(Some(&p), Timestamp(store + MIN), &th),
                Liveness::Online
            );
        }
        assert_eq!(skew_ms(&beat(store + 20_000, store), &th), None);
    }

    /// A lead silent past its 5-minute timeout, or in zombie mode, is
    /// never shown online, though a teammate would be for 10 minutes.
    #[test]
    fn a_lead_past_its_timeout_is_timed_out_not_online() {
        let th = Thresholds::default();
        let p = beat(0, 0);
        let at = |min: i64, zombie| lead_liveness(Some(&p), Timestamp(min * MIN), &th, zombie);
        assert_eq!(at(4, false), Liveness::Online);
        assert_eq!(at(6, false), Liveness::TimedOut);
        assert_eq!(at(1, true), Liveness::TimedOut);
        assert_eq!(
            liveness(Some(&p), Timestamp(6 * MIN), &th),
            Liveness::Online
        );
        assert_eq!(
            lead_liveness(None, Timestamp(0), &th, false),
            Liveness::Unseen
        );
    }
}
