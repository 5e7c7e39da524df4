//! baton-core: the domain of baton with no IO, no clock and no randomness.
//!
//! Workflow definitions are parsed and validated here, and the task state
//! machine lives here as pure functions: `decide` turns a state and an input
//! into journal events, `apply` folds an event into the state. Everything
//! that touches the world (processes, git, the store, time) is passed in by
//! the engine.

pub mod agent_stream;
pub mod brief;
pub mod comment;
pub mod condition;
pub mod crash;
pub mod document;
pub mod error;
pub mod event;
pub mod ids;
pub mod inbox;
pub mod instance;
pub mod lease;
pub mod link;
pub mod machine;
pub mod play;
pub mod progress;
pub mod redact;
pub mod session_log;
pub mod state;
pub mod supervisor;
pub mod team;
pub mod template;
pub mod text;
pub mod time;
pub mod token;
pub mod webhook;
pub mod workflow;
pub mod workspace;

pub use error::{ErrorKind, Exit};
pub use event::{Event, EventRecord};
pub use ids::{PhaseId, TaskId};
pub use state::{PhaseState, PhaseStatus, TaskState, TaskStatus};
pub use time::{Clock, Timestamp};
pub use workflow::Workflow;
