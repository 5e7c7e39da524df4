//! Where the capability tokens baton hands its agents are kept: only each
//! token's SHA-256 digest, with the scope it opens
//! (`baton_core::token::Scope` as JSON). A capability goes when the phase
//! attempt or the instance it was made for ends; the engine also judges
//! each against the live task or instance before trusting it, so one a
//! crash left behind opens nothing.

use crate::Result;
use baton_core::instance::InstanceId;
use baton_core::token::Scope;
use baton_core::{TaskId, Timestamp};

/// Which capabilities to revoke.
#[derive(Debug, Clone, Copy)]
pub enum Revoke<'a> {
    /// Those of one phase of a task (every attempt).
    Phase(&'a TaskId, &'a str),
    /// Those of every phase of a task.
    Task(&'a TaskId),
    /// Those of an agent instance.
    Instance(&'a InstanceId),
}

/// The capabilities' part of a store; both backends implement it.
pub trait CapabilityStore: Send + Sync {
    /// Stores a capability by its token's digest.
    fn grant_capability(&self, digest: &str, scope: &Scope, at: Timestamp) -> Result<()>;
    /// The scope a token's digest opens, if it is stored.
    fn capability(&self, digest: &str) -> Result<Option<Scope>>;
    /// Deletes capabilities; how many went.
    fn revoke_capabilities(&self, which: Revoke<'_>) -> Result<usize>;
}

pub(crate) fn scope_of(digest: &str, json: &str) -> Result<Scope> {
    serde_json::from_str(json).map_err(|e| {
        crate::Error::Corrupt(format!(
            "capability {}…: {e}",
            &digest[..digest.len().min(8)]
        ))
    })
}

pub(crate) fn json(s: &Scope) -> String {
    serde_json::to_string(s).expect("a scope is JSON")
}
