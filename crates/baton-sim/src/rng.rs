//! The simulator's only source of chance: one seeded generator per run, so
//! that a seed replays every choice exactly. No wall clock, no thread, no
//! hash order ever feeds a decision.

use baton_store::sim::SplitMix64;

/// The seeded generator the scheduler draws every choice from.
#[derive(Debug, Clone)]
pub struct Rng(SplitMix64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(SplitMix64::new(seed))
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.0.below(n)
    }

    /// True `percent` times in a hundred.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// A number in `lo..=hi`.
    pub fn between(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as u64) as i64
    }

    /// One of `items` (`None` when empty).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        if items.is_empty() {
            None
        } else {
            items.get(self.below(items.len() as u64) as usize)
        }
    }

    /// A seed for another generator (the store's faults), drawn from this one.
    pub fn fork(&mut self) -> u64 {
        self.0.next_u64()
    }
}
