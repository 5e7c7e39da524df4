//! Session logs: every task rendered as a readable markdown file,
//! `.baton/sessions/<id>.md`, from its journal (the model and its rules
//! are `baton_core::session_log`).
//!
//! The engine keeps a held task's log current (`crate::render`: at every
//! phase transition, and every two seconds while an agent streams), with
//! the index `.baton/index.toon`. Here are the `baton session` commands
//! over them: `read.rs` lists the logs and renders one on demand from the
//! store; `resume.rs` continues a log as a task (on a fresh clone too);
//! `codify.rs` writes the workflow a log is drafted into; `query.rs`
//! answers `baton session query` from the index; `plan.rs` counts a
//! session's tokens per phase for `baton session plan`; `team.rs` writes
//! a team's log, which links its teammates' turns; `parents.rs` renders a
//! parent's log again when a child session's turn starts or ends.

mod codify;
mod parents;
mod plan;
mod query;
mod read;
mod resume;
mod team;

pub use codify::{Refined, write_draft, write_workflow};
pub use read::{SessionRow, log_is_stale, read_log};
pub use resume::SessionResume;
