//! The state document (`state.json`, `baton show --json`): the APEX fields of
//! docs/cli.md (`baton show --json`), rendered from a task state.

use crate::lease::{DisplayStatus, Lease};
use crate::state::{AgentRun, AgentSession, PhaseStatus, TaskState, Usage};
use crate::time::Timestamp;
use crate::workflow::Workflow;
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};

/// One journal record as `log --json` and the API show it: the event's own
/// fields plus `seq`, `ts`, `task_id`, and its `phase` and `attempt`.
pub fn journal_line(task: &str, r: &crate::EventRecord) -> Value {
    let mut v = serde_json::to_value(&r.event).expect("an event is JSON");
    if let Some(o) = v.as_object_mut() {
        o.insert("seq".into(), r.seq.into());
        o.insert("ts".into(), r.ts.rfc3339().into());
        o.insert("task_id".into(), task.into());
        // Every phase-related line names its phase, also those whose
        // payload calls it otherwise (looped_back: from, rewound: to).
        if let Some(p) = r.event.phase()
            && o.get("phase").is_none_or(|v| v.is_null())
        {
            o.insert("phase".into(), p.as_str().into());
        }
        if let Some(a) = r.event.attempt() {
            o.insert("attempt".into(), a.into());
        }
    }
    v
}

/// The file name of a phase's rendered output, `NN-phase.md`.
pub fn output_file_name(index: usize, phase: &str) -> String {
    format!("{:02}-{phase}.md", index + 1)
}

/// The state document of a task, borrowed from its state and serialized
/// straight to JSON: it is written at every transition, so it is never
/// built as a `serde_json::Value` tree first. Field order is the
/// document's order.
#[derive(Serialize)]
pub struct Document<'a> {
    version: u32,
    workflow: &'a str,
    task_id: &'a str,
    project_name: &'a str,
    created_at: Rfc3339,
    updated_at: Rfc3339,
    status: &'static str,
    resumable: bool,
    flags: &'a BTreeMap<String, Value>,
    labels: &'a BTreeMap<String, String>,
    task_description: &'a str,
    tech_stack: &'a Value,
    current_phase: Option<CurrentPhase<'a>>,
    completed_phases: Vec<CompletedPhase<'a>>,
    /// Per wait phase passed by an outside event: when, and what it said.
    stage_results: BTreeMap<&'a str, StageResult<'a>>,
    pending_phases: Vec<&'a str>,
    iteration_counts: &'a BTreeMap<String, u32>,
    blockers: &'a [String],
    files_changed_total: Vec<String>,
    recovery_info: RecoveryInfo<'a>,
    phases: Vec<PhaseEntry<'a>>,
    agent: Option<&'a str>,
    last_agent: Option<&'a str>,
    cli_history: Vec<Stretch<'a>>,
    tokens: Tokens,
    waiting: Option<Waiting<'a>>,
    failure: Option<&'a str>,
    resume_note: Option<&'a str>,
    definition_hash: &'a str,
    owner: Option<Owner<'a>>,
    last_seq: u64,
}

/// A timestamp as RFC 3339, written without an intermediate string.
struct Rfc3339(Timestamp);

impl Serialize for Rfc3339 {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0.rfc3339())
    }
}

fn ts(t: Option<Timestamp>) -> Option<Rfc3339> {
    t.map(Rfc3339)
}

#[derive(Serialize)]
struct CurrentPhase<'a> {
    id: &'a str,
    status: &'static str,
    started_at: Option<Rfc3339>,
    attempt: u32,
}

#[derive(Serialize)]
struct CompletedPhase<'a> {
    id: &'a str,
    status: &'static str,
    started_at: Option<Rfc3339>,
    completed_at: Option<Rfc3339>,
    attempt: u32,
    summary: Option<&'a str>,
    output_file: Option<String>,
    files_changed: &'a [String],
    agent_session: Option<&'a AgentSession>,
    agent: Option<&'a str>,
    native_session_id: Option<&'a str>,
    tokens: Tokens,
    exit_code: Option<i32>,
}

#[derive(Serialize)]
struct RecoveryInfo<'a> {
    last_clean_state: Option<&'a str>,
    git_branch: Option<&'a str>,
    git_last_commit: Option<&'a str>,
    can_resume_from: Vec<&'a str>,
}

#[derive(Serialize)]
struct PhaseEntry<'a> {
    id: &'a str,
    status: &'static str,
    attempt: u32,
    iteration: u32,
    last_error: Option<&'a str>,
    tokens: Tokens,
    agent_runs: &'a [AgentRun],
}

/// Tokens and cost; unlike `Usage`, the cost is always there (null when
/// unknown).
#[derive(Serialize)]
struct Tokens {
    input: u64,
    output: u64,
    cost_usd: Option<f64>,
}

impl From<Usage> for Tokens {
    fn from(u: Usage) -> Tokens {
        Tokens {
            input: u.input_tokens,
            output: u.output_tokens,
            cost_usd: u.cost_usd,
        }
    }
}

#[derive(Serialize)]
struct Waiting<'a> {
    phase: &'a str,
    #[serde(rename = "for")]
    for_: &'a str,
    due_at: Option<Rfc3339>,
    /// A `wait = { human }` phase's question, and its options if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    question: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    options: Option<&'a [String]>,
}

#[derive(Serialize)]
struct Owner<'a> {
    host: &'a str,
    pid: u32,
    acquired_at: Rfc3339,
    expires_at: Rfc3339,
}

/// Renders the state document. `status` is the display status (it knows
/// about crashes), `lease` the current holder if any.
pub fn render<'a>(
    state: &'a TaskState,
    wf: &'a Workflow,
    status: DisplayStatus,
    lease: Option<&'a Lease>,
) -> Document<'a> {
    // A complete task is at no phase (even with one left pending).
    let current = state
        .current_phase()
        .filter(|p| status != DisplayStatus::Complete || p.status != PhaseStatus::Pending);
    let completed_phases = state
        .phases
        .iter()
        .enumerate()
        .filter(|(_, p)| p.status.is_done())
        .map(|(i, p)| {
            let last = p.agent_runs.last();
            CompletedPhase {
                id: p.id.as_str(),
                status: p.status.as_str(),
                started_at: ts(p.started_at),
                completed_at: ts(p.completed_at),
                attempt: p.attempt,
                summary: p.summary.as_deref(),
                output_file: (p.status == PhaseStatus::Pass).then(|| {
                    format!(
                        ".baton/tasks/{}/{}",
                        state.task_id,
                        output_file_name(i, p.id.as_str())
                    )
                }),
                files_changed: &p.files_changed,
                agent_session: p.agent_session.as_ref(),
                agent: last.map(|r| r.session.agent.as_str()),
                // None for a generic agent (`command = [...]`): no native session.
                native_session_id: last
                    .map(|r| r.session.native_id.as_str())
                    .filter(|id| !id.is_empty()),
                tokens: p.usage().into(),
                exit_code: last.and_then(|r| r.exit_code),
            }
        })
        .collect();
    let done: HashSet<&str> = state
        .phases
        .iter()
        .filter(|p| p.status.is_done())
        .map(|p| p.id.as_str())
        .collect();
    let cp = state.last_checkpoint();
    let waiting = state.waiting_phase().and_then(|p| {
        let human = match wf.phase(p.id.as_str()).map(|d| &d.kind) {
            Some(crate::workflow::PhaseKind::Wait(crate::workflow::WaitSpec::Human {
                question,
                options,
            })) => Some((question.as_str(), options.as_slice())),
            _ => None,
        };
        p.waiting.as_ref().map(|w| Waiting {
            phase: p.id.as_str(),
            for_: &w.description,
            due_at: ts(w.due_at),
            question: human.map(|(q, _)| q),
            options: human.map(|(_, o)| o),
        })
    });
    let stage_results = state
        .phases
        .iter()
        .filter(|p| p.status == PhaseStatus::Pass)
        .filter_map(|p| {
            let a = p.arrived.as_ref()?;
            let fact = |k: &str| a.facts.get(k).map(String::as_str);
            Some((
                p.id.as_str(),
                StageResult {
                    completed_at: Rfc3339(p.completed_at.unwrap_or(a.at)),
                    event: &a.event,
                    delivery: &a.delivery,
                    pr_number: fact("pr-number").and_then(|n| n.parse().ok()),
                    pr_url: fact("pr-url"),
                    approved: fact("review-state").map(|s| s == "approved"),
                    reviewer: fact("reviewer"),
                    merged: fact("pr-merged").map(|m| m == "true"),
                    merge_commit: fact("merge-commit"),
                },
            ))
        })
        .collect();
    Document {
        version: 1,
        workflow: &state.workflow,
        task_id: state.task_id.as_str(),
        project_name: &state.project_name,
        created_at: Rfc3339(state.created_at),
        updated_at: Rfc3339(state.updated_at),
        status: status.as_str(),
        resumable: status.resumable(),
        flags: &state.flags,
        labels: &state.labels,
        task_description: &state.description,
        tech_stack: &state.tech_stack,
        current_phase: current.map(|p| CurrentPhase {
            id: p.id.as_str(),
            status: p.status.as_str(),
            started_at: ts(p.started_at),
            attempt: p.attempt,
        }),
        completed_phases,
        stage_results,
        pending_phases: state
            .phases
            .iter()
            .filter(|p| !p.status.is_done())
            .map(|p| p.id.as_str())
            .collect(),
        iteration_counts: &state.iteration_counts,
        blockers: &state.blockers,
        files_changed_total: state.files_changed_total(),
        recovery_info: RecoveryInfo {
            last_clean_state: state
                .phases
                .iter()
                .filter(|p| p.status == PhaseStatus::Pass)
                .max_by_key(|p| p.completed_at)
                .map(|p| p.id.as_str()),
            git_branch: cp.and_then(|c| c.branch.as_deref()),
            git_last_commit: cp.and_then(|c| c.head.as_deref()),
            can_resume_from: wf
                .phases
                .iter()
                .filter(|d| d.needs.iter().all(|n| done.contains(n.as_str())))
                .map(|d| d.id.as_str())
                .collect(),
        },
        phases: state
            .phases
            .iter()
            .map(|p| PhaseEntry {
                id: p.id.as_str(),
                status: p.status.as_str(),
                attempt: p.attempt,
                iteration: p.iteration,
                last_error: p.last_error.as_deref(),
                tokens: p.usage().into(),
                agent_runs: &p.agent_runs,
            })
            .collect(),
        agent: state.agent.as_deref(),
        last_agent: state
            .agent_runs()
            .last()
            .map(|(_, r)| r.session.agent.as_str()),
        cli_history: cli_history(state),
        tokens: state.usage().into(),
        waiting,
        failure: state.failure.as_deref(),
        resume_note: state.resume_note.as_deref(),
        definition_hash: &state.definition_hash,
        owner: lease.map(|l| Owner {
            host: &l.owner.host,
            pid: l.owner.pid,
            acquired_at: Rfc3339(l.acquired_at),
            expires_at: Rfc3339(l.expires_at),
        }),
        last_seq: state.last_seq,
    }
}

/// What the outside event that passed a wait phase said (`stage_results`).
#[derive(Serialize)]
struct StageResult<'a> {
    completed_at: Rfc3339,
    event: &'a str,
    delivery: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pr_number: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pr_url: Option<&'a str>,
    /// A review's: whether it approved.
    #[serde(skip_serializing_if = "Option::is_none")]
    approved: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reviewer: Option<&'a str>,
    /// A closed pull request's: whether it was merged.
    #[serde(skip_serializing_if = "Option::is_none")]
    merged: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    merge_commit: Option<&'a str>,
}

/// A stretch of a task's agent runs on one agent (`cli_history`).
#[derive(Serialize)]
pub struct Stretch<'a> {
    pub agent: &'a str,
    pub cli: &'a str,
    pub phases: Vec<&'a str>,
    started_at: Rfc3339,
    ended_at: Option<Rfc3339>,
    duration_s: Option<f64>,
}

/// The task's agent runs grouped into stretches on one agent:
/// `[{agent, cli, phases, started_at, ended_at, duration_s}]`.
pub fn cli_history(state: &TaskState) -> Vec<Stretch<'_>> {
    let mut out: Vec<Stretch> = Vec::new();
    for (phase, run) in state.agent_runs() {
        match out.last_mut() {
            Some(s) if s.agent == run.session.agent && s.cli == run.session.cli => {
                if !s.phases.contains(&phase.as_str()) {
                    s.phases.push(phase.as_str());
                }
                if let Some(end) = run.ended_at {
                    s.ended_at = Some(Rfc3339(end));
                }
            }
            _ => out.push(Stretch {
                agent: &run.session.agent,
                cli: &run.session.cli,
                phases: vec![phase.as_str()],
                started_at: Rfc3339(run.started_at),
                ended_at: ts(run.ended_at),
                duration_s: None,
            }),
        }
    }
    for s in &mut out {
        s.duration_s = s
            .ended_at
            .as_ref()
            .map(|e| (e.0.millis() - s.started_at.0.millis()) as f64 / 1000.0);
    }
    out
}
