//! How the projection is encoded in both backends: the task row's JSON
//! header (the task state without its phases), phase and lease JSON.

use crate::{Error, Result};
use baton_core::lease::Lease;
use baton_core::state::{PhaseState, TaskStatus};
use baton_core::{TaskId, TaskState, Timestamp};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The task row's JSON: the task state without its phases.
#[derive(Serialize)]
pub(crate) struct HeaderRef<'a> {
    workflow: &'a str,
    definition_hash: &'a str,
    description: &'a str,
    project_name: &'a str,
    created_at: Timestamp,
    updated_at: Timestamp,
    status: TaskStatus,
    flags: &'a BTreeMap<String, serde_json::Value>,
    labels: &'a BTreeMap<String, String>,
    tech_stack: &'a serde_json::Value,
    iteration_counts: &'a BTreeMap<String, u32>,
    blockers: &'a [String],
    resume_note: &'a Option<String>,
    failure: &'a Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    agent: &'a Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    handoff_pending: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    imported: &'a Option<baton_core::state::AgentSession>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    auto_restarts: &'a [Timestamp],
}

#[derive(Deserialize)]
pub(crate) struct Header {
    workflow: String,
    definition_hash: String,
    description: String,
    project_name: String,
    created_at: Timestamp,
    updated_at: Timestamp,
    status: TaskStatus,
    flags: BTreeMap<String, serde_json::Value>,
    labels: BTreeMap<String, String>,
    tech_stack: serde_json::Value,
    iteration_counts: BTreeMap<String, u32>,
    blockers: Vec<String>,
    resume_note: Option<String>,
    failure: Option<String>,
    #[serde(default)]
    agent: Option<String>,
    #[serde(default)]
    handoff_pending: bool,
    #[serde(default)]
    imported: Option<baton_core::state::AgentSession>,
    #[serde(default)]
    auto_restarts: Vec<Timestamp>,
}

pub(crate) fn header_json(s: &TaskState) -> String {
    serde_json::to_string(&HeaderRef {
        workflow: &s.workflow,
        definition_hash: &s.definition_hash,
        description: &s.description,
        project_name: &s.project_name,
        created_at: s.created_at,
        updated_at: s.updated_at,
        status: s.status,
        flags: &s.flags,
        labels: &s.labels,
        tech_stack: &s.tech_stack,
        iteration_counts: &s.iteration_counts,
        blockers: &s.blockers,
        resume_note: &s.resume_note,
        failure: &s.failure,
        agent: &s.agent,
        handoff_pending: s.handoff_pending,
        imported: &s.imported,
        auto_restarts: &s.auto_restarts,
    })
    .expect("header serializes")
}

pub(crate) fn corrupt(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Corrupt(format!("{what}: {e}"))
}

pub(crate) fn json<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("serializes")
}

pub(crate) fn read_lease(s: Option<String>) -> Result<Option<Lease>> {
    s.map(|s| serde_json::from_str(&s).map_err(|e| corrupt("lease", e)))
        .transpose()
}

impl Header {
    pub(crate) fn parse(text: &str, id: &TaskId) -> Result<Header> {
        serde_json::from_str(text).map_err(|e| corrupt(&format!("task {id}"), e))
    }

    pub(crate) fn into_state(
        self,
        id: TaskId,
        phases: Vec<PhaseState>,
        last_seq: u64,
    ) -> TaskState {
        TaskState {
            task_id: id,
            workflow: self.workflow,
            definition_hash: self.definition_hash,
            description: self.description,
            project_name: self.project_name,
            created_at: self.created_at,
            updated_at: self.updated_at,
            status: self.status,
            flags: self.flags,
            labels: self.labels,
            tech_stack: self.tech_stack,
            phases,
            iteration_counts: self.iteration_counts,
            blockers: self.blockers,
            resume_note: self.resume_note,
            failure: self.failure,
            agent: self.agent,
            handoff_pending: self.handoff_pending,
            imported: self.imported,
            auto_restarts: self.auto_restarts,
            last_seq,
        }
    }
}

/// A phase row's JSON.
pub(crate) fn parse_phase(text: &str, id: &TaskId) -> Result<PhaseState> {
    serde_json::from_str(text).map_err(|e| corrupt(&format!("task {id} phase"), e))
}
