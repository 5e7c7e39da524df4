//! baton-engine: drives tasks through their phases, durably.
//!
//! It owns all IO around the pure core: the project folder and its config,
//! leases and heartbeats, phase processes in their own process groups, git
//! checkpoints, and the files rendered from the store. It never talks to the
//! user directly; it reports through an [`Observer`].

pub mod agent_reports;
pub mod builtin;
pub mod capabilities;
pub mod clock;
pub mod comments;
pub mod config;
pub mod crash_point;
pub mod doctor;
pub mod engine;
pub mod error;
pub mod finding;
pub mod github;
pub mod inbox;
pub mod instances;
pub mod links;
pub mod metrics;
pub mod project;
pub mod registry;
pub mod render;
pub mod repo;
pub mod role_workspaces;
pub mod secrets;
pub mod sessions;
pub mod store;
pub mod teams;
pub mod workdir;
pub mod worker;

pub use engine::{
    AutoRestart, Awaited, Decision, Delivered, DeliveryWriter, Engine, FromLog, HandedOver,
    Imported, Need, Observer, Outcome, Passed, ResumeOptions, RunOptions, Triage, ignored,
    moves_instances, new_delivery, new_uuid,
};
pub use error::Error;
pub use project::Project;
