//! The state document (`state.json`, `baton show --json`): the APEX fields of
//! spec/cli.md, rendered from a task state.

use crate::lease::{DisplayStatus, Lease};
use crate::state::{PhaseStatus, TaskState};
use crate::workflow::Workflow;
use serde_json::{Value, json};

/// The file name of a phase's rendered output, `NN-phase.md`.
pub fn output_file_name(index: usize, phase: &str) -> String {
    format!("{:02}-{phase}.md", index + 1)
}

/// Renders the state document. `status` is the display status (it knows
/// about crashes), `lease` the current holder if any.
pub fn render(
    state: &TaskState,
    wf: &Workflow,
    status: DisplayStatus,
    lease: Option<&Lease>,
) -> Value {
    let ts = |t: Option<crate::time::Timestamp>| t.map(|t| t.rfc3339());
    let out_path = |i: usize, id: &str| -> String {
        format!(".baton/tasks/{}/{}", state.task_id, output_file_name(i, id))
    };
    let current = state
        .phases
        .iter()
        .find(|p| {
            matches!(
                p.status,
                PhaseStatus::InProgress | PhaseStatus::Waiting | PhaseStatus::Failed
            )
        })
        .or_else(|| {
            if status == DisplayStatus::Complete {
                None
            } else {
                state
                    .phases
                    .iter()
                    .find(|p| p.status == PhaseStatus::Pending)
            }
        });
    let current_phase = current.map(|p| {
        json!({
            "id": p.id,
            "status": p.status.as_str(),
            "started_at": ts(p.started_at),
            "attempt": p.attempt,
        })
    });
    let completed: Vec<Value> = state
        .phases
        .iter()
        .enumerate()
        .filter(|(_, p)| p.status.is_done())
        .map(|(i, p)| {
            json!({
                "id": p.id,
                "status": p.status.as_str(),
                "started_at": ts(p.started_at),
                "completed_at": ts(p.completed_at),
                "attempt": p.attempt,
                "summary": p.summary,
                "output_file": (p.status == PhaseStatus::Pass).then(|| out_path(i, p.id.as_str())),
                "files_changed": p.files_changed,
                "agent_session": p.agent_session,
                "agent": p.agent_runs.last().map(|r| &r.session.agent),
                "native_session_id": p.agent_runs.last().map(|r| &r.session.native_id),
                "tokens": usage_json(&p.usage()),
                "exit_code": p.agent_runs.last().and_then(|r| r.exit_code),
            })
        })
        .collect();
    let pending: Vec<&str> = state
        .phases
        .iter()
        .filter(|p| !p.status.is_done())
        .map(|p| p.id.as_str())
        .collect();
    let last_clean = state
        .phases
        .iter()
        .filter(|p| p.status == PhaseStatus::Pass)
        .max_by_key(|p| p.completed_at)
        .map(|p| p.id.as_str());
    let can_resume_from: Vec<&str> = wf
        .phases
        .iter()
        .filter(|d| {
            d.needs
                .iter()
                .all(|n| state.phase(n.as_str()).is_some_and(|p| p.status.is_done()))
        })
        .map(|d| d.id.as_str())
        .collect();
    let cp = state.last_checkpoint();
    let waiting = state.waiting_phase().and_then(|p| {
        p.waiting
            .as_ref()
            .map(|w| json!({"phase": p.id, "for": w.description, "due_at": ts(w.due_at)}))
    });
    let mut doc = json!({
        "version": 1,
        "workflow": state.workflow,
        "task_id": state.task_id,
        "project_name": state.project_name,
        "created_at": state.created_at.rfc3339(),
        "updated_at": state.updated_at.rfc3339(),
        "status": status.as_str(),
        "resumable": status.resumable(),
        "flags": state.flags,
        "labels": state.labels,
        "task_description": state.description,
        "tech_stack": state.tech_stack,
        "current_phase": current_phase,
        // The long lists are put in below, moved rather than copied.
        "completed_phases": null,
        "pending_phases": pending,
        "iteration_counts": state.iteration_counts,
        "blockers": state.blockers,
        "files_changed_total": state.files_changed_total(),
        "recovery_info": {
            "last_clean_state": last_clean,
            "git_branch": cp.and_then(|c| c.branch.clone()),
            "git_last_commit": cp.and_then(|c| c.head.clone()),
            "can_resume_from": can_resume_from,
        },
        "phases": null,
        "agent": state.agent,
        "last_agent": state.agent_runs().last().map(|(_, r)| &r.session.agent),
        "cli_history": cli_history(state),
        "tokens": usage_json(&state.usage()),
        "waiting": waiting,
        "failure": state.failure,
        "resume_note": state.resume_note,
        "definition_hash": state.definition_hash,
        "owner": lease.map(|l| json!({
            "host": l.owner.host, "pid": l.owner.pid,
            "acquired_at": l.acquired_at.rfc3339(), "expires_at": l.expires_at.rfc3339(),
        })),
        "last_seq": state.last_seq,
    });
    let phases = state
        .phases
        .iter()
        .map(|p| {
            json!({
                "id": p.id,
                "status": p.status.as_str(),
                "attempt": p.attempt,
                "iteration": p.iteration,
                "last_error": p.last_error,
                "tokens": usage_json(&p.usage()),
                "agent_runs": p.agent_runs,
            })
        })
        .collect();
    // Assigning to a key keeps its place in the document.
    doc["completed_phases"] = Value::Array(completed);
    doc["phases"] = Value::Array(phases);
    doc
}

fn usage_json(u: &crate::state::Usage) -> Value {
    json!({
        "input": u.input_tokens,
        "output": u.output_tokens,
        "cost_usd": u.cost_usd,
    })
}

/// The task's agent runs grouped into stretches on one agent:
/// `[{agent, cli, phases, started_at, ended_at, duration_s}]`.
pub fn cli_history(state: &TaskState) -> Vec<Value> {
    struct Stretch<'a> {
        agent: &'a str,
        cli: &'a str,
        phases: Vec<&'a str>,
        started_at: crate::time::Timestamp,
        ended_at: Option<crate::time::Timestamp>,
    }
    let mut out: Vec<Stretch> = Vec::new();
    for (phase, run) in state.agent_runs() {
        let end = run.ended_at;
        match out.last_mut() {
            Some(s) if s.agent == run.session.agent && s.cli == run.session.cli => {
                if !s.phases.contains(&phase.as_str()) {
                    s.phases.push(phase.as_str());
                }
                s.ended_at = end.or(s.ended_at);
            }
            _ => out.push(Stretch {
                agent: &run.session.agent,
                cli: &run.session.cli,
                phases: vec![phase.as_str()],
                started_at: run.started_at,
                ended_at: end,
            }),
        }
    }
    out.iter()
        .map(|s| {
            json!({
                "agent": s.agent,
                "cli": s.cli,
                "phases": s.phases,
                "started_at": s.started_at.rfc3339(),
                "ended_at": s.ended_at.map(|t| t.rfc3339()),
                "duration_s": s.ended_at.map(|e| (e.millis() - s.started_at.millis()) as f64 / 1000.0),
            })
        })
        .collect()
}
