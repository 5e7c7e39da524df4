//! Where the inbox's items raised by agents are kept (one row per item,
//! `baton_core::inbox::InboxItem` as JSON, its `key` unique so the same
//! question raised again is the same item). Answering is a compare and
//! set on the item being open: an item is answered at most once.

use crate::Result;
use baton_core::inbox::{Answer, InboxItem};

/// What answering an item did.
#[derive(Debug, Clone, PartialEq)]
pub enum Answered {
    /// This answer is the item's.
    Now(InboxItem),
    /// It was answered before (the item, with that answer).
    Already(InboxItem),
    NotFound,
}

/// The inbox's part of a store; both backends implement it.
pub trait InboxStore: Send + Sync {
    /// Stores `item` unless an item of its `key` exists; returns the
    /// stored one (the existing item when there was one).
    fn raise_item(&self, item: &InboxItem) -> Result<InboxItem>;
    fn inbox_item(&self, id: &str) -> Result<Option<InboxItem>>;
    /// Items, oldest first; only the open ones when `open_only`.
    fn inbox_items(&self, open_only: bool) -> Result<Vec<InboxItem>>;
    /// Gives item `id` its answer, if it is still open.
    fn answer_item(&self, id: &str, answer: &Answer) -> Result<Answered>;
}

pub(crate) fn item_of(id: &str, json: &str) -> Result<InboxItem> {
    serde_json::from_str(json).map_err(|e| crate::Error::Corrupt(format!("inbox item {id}: {e}")))
}

pub(crate) fn json(i: &InboxItem) -> String {
    serde_json::to_string(i).expect("an inbox item is JSON")
}

/// `item` with `answer`.
pub(crate) fn with_answer(mut item: InboxItem, answer: &Answer) -> InboxItem {
    item.answer = Some(answer.clone());
    item
}
