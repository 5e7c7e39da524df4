//! Where coding and review instances are kept: their journal (one
//! sequence for all instances) and one row per instance, in the same
//! database as the tasks. Writers serialise on the journal's end: a commit
//! names the position it decided from, and is refused if another writer
//! got there first (the caller reloads and decides again).

use crate::Result;
use baton_core::instance::{Instance, Instances, Record};

/// The instances' part of a store; both backends implement it.
pub trait InstanceStore: Send + Sync {
    /// Every instance, and the journal position they reflect.
    fn instances(&self) -> Result<Instances>;

    /// Appends `records` (numbered on from `expected`) and writes the
    /// instances they changed, in one transaction, if the journal still
    /// ends at `expected`; else [`crate::Error::InstancesChanged`].
    fn commit_instances(
        &self,
        expected: u64,
        records: &[Record],
        changed: &[&Instance],
    ) -> Result<()>;

    /// Journal records with `seq > after`, at most `limit`, in order.
    fn instance_events(&self, after: u64, limit: usize) -> Result<Vec<Record>>;
}

/// What each backend stores of an instance and of a record.
pub(crate) struct Row {
    pub id: String,
    pub kind: &'static str,
    pub status: &'static str,
    pub parent: Option<String>,
    pub updated_at: i64,
    pub data: String,
}

impl Row {
    pub(crate) fn of(i: &Instance) -> Row {
        Row {
            id: i.id.to_string(),
            kind: match i.kind() {
                baton_core::instance::Kind::Coding => "coding",
                baton_core::instance::Kind::Review => "review",
            },
            status: i.status.as_str(),
            parent: i.review().map(|r| r.parent_instance_id.to_string()),
            updated_at: i.updated_at.millis(),
            data: serde_json::to_string(i).expect("an instance is JSON"),
        }
    }
}

pub(crate) fn instance_of(data: &str) -> Result<Instance> {
    serde_json::from_str(data).map_err(|e| crate::Error::Corrupt(format!("an instance row: {e}")))
}

pub(crate) fn record_of(seq: i64, ts: i64, payload: &str) -> Result<Record> {
    Ok(Record {
        seq: seq as u64,
        ts: baton_core::Timestamp(ts),
        event: serde_json::from_str(payload)
            .map_err(|e| crate::Error::Corrupt(format!("instance event {seq}: {e}")))?,
    })
}

pub(crate) fn payload(r: &Record) -> String {
    serde_json::to_string(&r.event).expect("an instance event is JSON")
}
