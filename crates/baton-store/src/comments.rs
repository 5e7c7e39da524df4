//! Where a person's comments on a task's or an instance's work are kept
//! until they reach the agent (`baton_core::comment::Comment` as JSON, one
//! row each). Marking them delivered is a compare and set on their not
//! being delivered yet: a comment reaches one phase or turn.

use crate::Result;
use baton_core::comment::{Comment, Delivered};

/// The comments' part of a store; both backends implement it.
pub trait CommentStore: Send + Sync {
    fn add_comment(&self, c: &Comment) -> Result<()>;
    /// The comments on `target`, oldest first.
    fn comments(&self, target: &str) -> Result<Vec<Comment>>;
    /// Marks those of `ids` on `target` not delivered yet as delivered
    /// `d`; how many it marked.
    fn deliver_comments(&self, target: &str, ids: &[String], d: &Delivered) -> Result<usize>;
}

pub(crate) fn comment_of(id: &str, json: &str) -> Result<Comment> {
    serde_json::from_str(json).map_err(|e| crate::Error::Corrupt(format!("comment {id}: {e}")))
}

pub(crate) fn json(c: &Comment) -> String {
    serde_json::to_string(c).expect("a comment is JSON")
}
