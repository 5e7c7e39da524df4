//! Session logs: every task rendered as a readable markdown file,
//! `.baton/sessions/<id>.md`, from its journal (the model and its rules
//! are `baton_core::session_log`).
//!
//! `writer.rs` keeps a held task's log current (at every phase transition,
//! and every two seconds while an agent streams); `read.rs` lists the
//! logs and renders one on demand from the store; `resume.rs` continues a
//! log as a task (on a fresh clone too); `codify.rs` writes the workflow
//! a log is drafted into; `index.rs` keeps `.baton/index.toon`, the
//! compact index `baton session query` answers from; `tokens.rs` counts
//! tokens for `baton session plan`; `team.rs` writes a team's log, which
//! links its teammates' turns; `parents.rs` renders a parent's log again
//! when a child session's turn starts or ends.

mod codify;
mod index;
mod parents;
mod read;
mod resume;
mod team;
pub mod tokens;
mod writer;

pub use codify::{REFINE_WORKFLOW, REFINE_WORKFLOW_NAME, Refined, write_draft, write_workflow};
pub use index::SessionIndex;
pub use read::{SessionRow, log_is_stale, read_log};
pub use resume::SessionResume;
pub(crate) use writer::LogWriter;
