//! Where plays are kept (`baton_core::play::Play` as JSON, one row per
//! play name): the durable marker of the task a play is at.

use crate::Result;
use baton_core::play::Play;

/// The plays' part of a store; both backends implement it.
pub trait PlayStore: Send + Sync {
    /// Writes `p` (durably: it is the play's marker).
    fn put_play(&self, p: &Play) -> Result<()>;
    /// Every play, the most recently updated first.
    fn plays(&self) -> Result<Vec<Play>>;
}

pub(crate) fn play_of(name: &str, json: &str) -> Result<Play> {
    serde_json::from_str(json).map_err(|e| crate::Error::Corrupt(format!("play {name}: {e}")))
}

pub(crate) fn json(p: &Play) -> String {
    serde_json::to_string(p).expect("a play is JSON")
}
