//! The journey suite: each journey is a user's story through the real
//! `baton` binary that crosses at least two features (a webhook before
//! its wait, a crash while a log is written, a lead dying during
//! consolidation), its races made deterministic, and each ends where a
//! user expects. A journey's doc comment names, in its first line, the
//! user story it proves. Journeys that touch the store run on SQLite and
//! on PostgreSQL (`on_both_backends!`).
//!
//! One module per area, so that a newcomer finds a journey by what it is
//! about: `events` (webhooks and their stages), `sessions` (logs, codify,
//! agents in logs), `teams`, `instances` (agent instances from
//! workflows, issues, progress, human waits) and `feedback` (what `run`
//! shows while a phase runs, and messages that say what happened).

#[path = "../common/mod.rs"]
mod common;

mod events;
mod feedback;
mod instances;
mod sessions;
mod teams;
