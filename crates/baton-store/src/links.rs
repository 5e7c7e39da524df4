//! Where linked tasks wait for the tasks they need (`baton_core::link::Link`
//! as JSON, one row each, keyed by the id its task will have). Starting
//! one is a compare and set on its not being started: exactly one process
//! starts its task.

use crate::Result;
use baton_core::link::{Link, Started};

/// What starting a link did.
#[derive(Debug, Clone, PartialEq)]
pub enum LinkStart {
    /// This process starts its task.
    Now(Box<Link>),
    /// Another started it.
    Already,
}

/// The links' part of a store; both backends implement it.
pub trait LinkStore: Send + Sync {
    /// Stores `link`; `false` if a link of its id exists.
    fn add_link(&self, link: &Link) -> Result<bool>;
    /// The links, oldest first; only those not started when `pending_only`.
    fn links(&self, pending_only: bool) -> Result<Vec<Link>>;
    /// Marks link `id` started, if it is not yet.
    fn start_link(&self, id: &str, started: &Started) -> Result<LinkStart>;
}

pub(crate) fn link_of(id: &str, json: &str) -> Result<Link> {
    serde_json::from_str(json).map_err(|e| crate::Error::Corrupt(format!("link {id}: {e}")))
}

pub(crate) fn json(l: &Link) -> String {
    serde_json::to_string(l).expect("a link is JSON")
}
