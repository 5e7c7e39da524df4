//! Where teams are kept: each team's journal and projection (written
//! together, in order, refused when another writer got there first), its
//! mailbox (append-only; a message's `seq` is per team, gapless and
//! given by the store, and a `msg_id` sent twice is stored once), its
//! acknowledgements, and each member's presence (its last heartbeat,
//! stamped with the store's clock, kept only when its sequence is newer).

use crate::Result;
use baton_core::Timestamp;
use baton_core::team::{Message, NewMessage, Presence, Record, Team};

/// Which messages to read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MessageQuery {
    /// Addressed to this name (or to everyone), and not sent by it.
    pub to: Option<String>,
    /// Not acknowledged by `to`.
    pub unacked: bool,
    /// With `seq` above this.
    pub after: u64,
    /// At most this many: the first ones, or with `newest` the last ones
    /// (still in order).
    pub limit: usize,
    pub newest: bool,
}

/// The teams' part of a store; both backends implement it.
pub trait TeamStore: Send + Sync {
    /// The store's clock: the database server's for PostgreSQL (shared by
    /// every machine), this machine's for SQLite.
    fn store_now(&self) -> Result<Timestamp>;

    /// Creates the team with its first records; `false` if one of that id
    /// exists.
    fn create_team(&self, team: &Team, records: &[Record]) -> Result<bool>;

    fn team(&self, id: &str) -> Result<Option<Team>>;

    /// Every team, by id.
    fn teams(&self) -> Result<Vec<Team>>;

    /// Appends `records` (numbered on from `expected`) and writes `team`,
    /// in one transaction, if the team's journal still ends at `expected`;
    /// else [`crate::Error::TeamChanged`].
    fn commit_team(&self, expected: u64, team: &Team, records: &[Record]) -> Result<()>;

    /// Journal records with `seq > after`, at most `limit`, in order.
    fn team_records(&self, id: &str, after: u64, limit: usize) -> Result<Vec<Record>>;

    /// Appends `m` to the team's mailbox; the message as stored, and
    /// whether it is new (`false`: that `msg_id` was there already).
    fn send_message(&self, team: &str, m: &NewMessage) -> Result<(Message, bool)>;

    fn messages(&self, team: &str, q: &MessageQuery) -> Result<Vec<Message>>;

    /// How many messages the team has.
    fn message_count(&self, team: &str) -> Result<u64>;

    /// How many messages to `name` (or to everyone, not from it) it has
    /// not acknowledged, counted up to `up_to` (a backlog is not counted
    /// through to its end: re-attaching stays as fast with a long history).
    fn unread_count(&self, team: &str, name: &str, up_to: u64) -> Result<u64>;

    /// Puts `messages` (a copy's: their `seq`, times and acknowledgements
    /// as they were) into the team's empty mailbox, in one transaction.
    fn import_messages(&self, team: &str, messages: &[Message]) -> Result<()>;

    /// Records that `by` acknowledged the messages `seqs`; how many it had
    /// not acknowledged before.
    fn ack_messages(&self, team: &str, by: &str, seqs: &[u64]) -> Result<usize>;

    /// A heartbeat of `name` with its sequence number (`None`: one more
    /// than the last) and its own clock; the presence as kept after it.
    fn heartbeat(
        &self,
        team: &str,
        name: &str,
        seq: Option<u64>,
        sent_at: Option<Timestamp>,
    ) -> Result<Presence>;

    fn presences(&self, team: &str) -> Result<Vec<Presence>>;
}

/// `BATON_TEST_CLOCK_OFFSET_MS`: tests move the store's clock forward (a
/// lead silent for an hour) without waiting for it.
pub fn test_offset_ms() -> i64 {
    static OFFSET: std::sync::OnceLock<i64> = std::sync::OnceLock::new();
    *OFFSET.get_or_init(|| {
        std::env::var("BATON_TEST_CLOCK_OFFSET_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    })
}

pub(crate) fn team_of(id: &str, data: &str) -> Result<Team> {
    serde_json::from_str(data)
        .map_err(|e| crate::Error::Corrupt(format!("the record of team {id}: {e}")))
}

pub(crate) fn json(t: &Team) -> String {
    serde_json::to_string(t).expect("a team is JSON")
}

pub(crate) fn record_of(id: &str, seq: i64, ts: i64, payload: &str) -> Result<Record> {
    Ok(Record {
        seq: seq as u64,
        ts: Timestamp(ts),
        event: serde_json::from_str(payload)
            .map_err(|e| crate::Error::Corrupt(format!("team {id} event {seq}: {e}")))?,
    })
}

pub(crate) fn payload(r: &Record) -> String {
    serde_json::to_string(&r.event).expect("a team event is JSON")
}

/// A message's columns: seq, msg_id, sender, recipient, ts, kind,
/// subject, body.
pub(crate) type MessageRow = (i64, String, String, String, i64, String, String, String);

/// The message of `row`, acknowledged by `acked_by`.
pub(crate) fn message_of(
    row: MessageRow,
    acked_by: Vec<String>,
) -> Result<baton_core::team::Message> {
    let (seq, msg_id, from, to, ts, kind, subject, body) = row;
    Ok(baton_core::team::Message {
        msg_id,
        seq: seq as u64,
        from,
        to,
        ts_ms: ts,
        kind: kind_of(&kind)?,
        subject,
        body,
        acked_by,
    })
}

pub(crate) fn kind_of(s: &str) -> Result<baton_core::team::MessageType> {
    baton_core::team::MessageType::parse(s)
        .ok_or_else(|| crate::Error::Corrupt(format!("a message of type {s:?}")))
}
