//! When the supervisor (inside `baton serve`) may restart a crashed task
//! by itself: at most `max_restarts` within `window`, and never sooner
//! after the last automatic restart than a backoff that doubles with each
//! restart in the window. Pure: the times of the task's earlier automatic
//! restarts (kept on its state, from its journal) and now go in, a verdict
//! comes out. Past the limit the task stays CRASHED with a blocker that
//! starts with [`BLOCKER_PREFIX`].

use crate::time::Timestamp;

/// The blockers the supervisor puts on a task start with this.
pub const BLOCKER_PREFIX: &str = "supervisor: ";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    pub max_restarts: u32,
    pub window_ms: i64,
    /// The wait after the first automatic restart; doubled after each
    /// further one in the window.
    pub backoff_ms: i64,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            max_restarts: 3,
            window_ms: 3_600_000,
            backoff_ms: 5_000,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Restart it now; this is restart `n` of the window.
    Now { n: u32 },
    /// Not before then.
    NotBefore(Timestamp),
    /// The limit is reached: leave it CRASHED, and why.
    GiveUp(String),
}

pub fn judge(restarts: &[Timestamp], now: Timestamp, p: &Policy) -> Verdict {
    let recent: Vec<Timestamp> = restarts
        .iter()
        .copied()
        .filter(|t| t.millis() > now.millis() - p.window_ms)
        .collect();
    let n = recent.len() as u32;
    if n >= p.max_restarts {
        return Verdict::GiveUp(format!(
            "restarted automatically {n} times within {}, and it crashed again; not restarted any more (the limit is [supervisor] max_restarts = {}); resume it by hand once the cause is fixed",
            crate::time::human_millis(p.window_ms),
            p.max_restarts
        ));
    }
    if let Some(last) = recent.iter().max() {
        let wait = p.backoff_ms.saturating_mul(1i64 << (n - 1).min(20));
        let at = last.plus_millis(wait);
        if at > now {
            return Verdict::NotBefore(at);
        }
    }
    Verdict::Now { n: n + 1 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const P: Policy = Policy {
        max_restarts: 3,
        window_ms: 3_600_000,
        backoff_ms: 1_000,
    };

    fn t(ms: i64) -> Timestamp {
        Timestamp(ms)
    }

    #[test]
    fn restarts_back_off_doubling_then_stop_at_the_limit() {
        assert_eq!(judge(&[], t(0), &P), Verdict::Now { n: 1 });
        assert_eq!(judge(&[t(0)], t(500), &P), Verdict::NotBefore(t(1000)));
        assert_eq!(judge(&[t(0)], t(1000), &P), Verdict::Now { n: 2 });
        assert_eq!(
            judge(&[t(0), t(1000)], t(2000), &P),
            Verdict::NotBefore(t(3000))
        );
        assert_eq!(judge(&[t(0), t(1000)], t(3000), &P), Verdict::Now { n: 3 });
        assert!(matches!(
            judge(&[t(0), t(1000), t(3000)], t(99_000), &P),
            Verdict::GiveUp(w) if w.contains("3 times within 1h00m")
        ));
        // Out of the window, they no longer count.
        assert_eq!(
            judge(&[t(0), t(1000), t(3000)], t(3_700_000), &P),
            Verdict::Now { n: 1 }
        );
    }

    proptest! {
        /// Whatever the history, following the verdicts never restarts a
        /// task more than max_restarts times in any window, and never
        /// twice within the backoff.
        #[test]
        fn following_the_verdicts_keeps_the_limit(steps in proptest::collection::vec(1i64..400_000, 1..60)) {
            let mut now = 0i64;
            let mut done: Vec<Timestamp> = Vec::new();
            for s in steps {
                now += s;
                if let Verdict::Now { n } = judge(&done, t(now), &P) {
                    if let Some(last) = done.last() {
                        prop_assert!(now - last.millis() >= P.backoff_ms);
                    }
                    done.push(t(now));
                    let in_window = done.iter().filter(|d| d.millis() > now - P.window_ms).count();
                    prop_assert_eq!(in_window as u32, n);
                    prop_assert!(in_window as u32 <= P.max_restarts);
                }
            }
        }
    }
}
