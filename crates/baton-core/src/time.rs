//! Time as a value: the core never reads a clock, it is handed timestamps.

use serde::{Deserialize, Serialize};

/// Milliseconds since the Unix epoch, UTC. Rendered as RFC 3339.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Timestamp(pub i64);

impl Timestamp {
    pub fn from_millis(ms: i64) -> Self {
        Timestamp(ms)
    }
    pub fn millis(self) -> i64 {
        self.0
    }
    pub fn plus_millis(self, ms: i64) -> Self {
        Timestamp(self.0.saturating_add(ms))
    }
    /// RFC 3339 in UTC with millisecond precision, e.g. `2026-11-21T23:13:14.123Z`.
    pub fn rfc3339(self) -> String {
        match jiff::Timestamp::from_millisecond(self.0) {
            Ok(ts) => format!("{ts:.3}"),
            Err(_) => "invalid-timestamp".to_string(),
        }
    }
    pub fn parse_rfc3339(s: &str) -> Option<Self> {
        s.parse::<jiff::Timestamp>()
            .ok()
            .map(|t| Timestamp(t.as_millisecond()))
    }
}

impl std::fmt::Display for Timestamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.rfc3339())
    }
}

/// A source of the current time, injected into the engine.
pub trait Clock: Send + Sync {
    fn now(&self) -> Timestamp;
}

/// A clock that only moves when told to; for tests.
#[derive(Debug, Default)]
pub struct ManualClock(std::sync::atomic::AtomicI64);

impl ManualClock {
    pub fn new(start: Timestamp) -> Self {
        ManualClock(std::sync::atomic::AtomicI64::new(start.0))
    }
    pub fn advance_millis(&self, ms: i64) {
        self.0.fetch_add(ms, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.0.load(std::sync::atomic::Ordering::SeqCst))
    }
}

/// Formats a duration in milliseconds as a short human string: `850ms`, `12.3s`, `4m05s`, `2h03m`.
pub fn human_millis(ms: i64) -> String {
    let ms = ms.max(0);
    if ms < 1000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        format!("{:.1}s", ms as f64 / 1000.0)
    } else if ms < 3_600_000 {
        format!("{}m{:02}s", ms / 60_000, (ms / 1000) % 60)
    } else {
        format!("{}h{:02}m", ms / 3_600_000, (ms / 60_000) % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_round_trips() {
        let t = Timestamp(1_700_000_000_123);
        let s = t.rfc3339();
        assert_eq!(s, "2023-11-14T22:13:20.123Z");
        assert_eq!(Timestamp::parse_rfc3339(&s), Some(t));
    }

    #[test]
    fn human_durations() {
        assert_eq!(human_millis(850), "850ms");
        assert_eq!(human_millis(12_340), "12.3s");
        assert_eq!(human_millis(245_000), "4m05s");
        assert_eq!(human_millis(7_380_000), "2h03m");
    }
}
