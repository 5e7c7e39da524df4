//! Folding a team's journal into its projection. One function per event
//! that changes more than a field or two; `apply` itself only dispatches.

use super::{
    Checkpoint, Consolidation, Event, Lead, LocalChanges, LocalStatus, MergedBranch, NewTask,
    NewTeammate, Record, SCHEMA_VERSION, TaskStatus, Team, TeamId, TeamStatus, TeamTask, Teammate,
};
use crate::time::Timestamp;
use std::collections::BTreeMap;

/// The team after `rec` (`None` before the team exists: only `Created`
/// makes one).
pub fn apply(team: Option<Team>, id: &TeamId, rec: &Record) -> Option<Team> {
    let at = rec.ts;
    let mut t = match (team, &rec.event) {
        (
            None,
            Event::Created {
                lead,
                teammates,
                tasks,
                facts,
            },
        ) => return Some(created(id, rec, lead, teammates, tasks, facts)),
        (None, _) => return None,
        (Some(t), _) => t,
    };
    t.last_seq = rec.seq;
    t.updated_at = at;
    match &rec.event {
        Event::Created { .. } => {}
        Event::LeadAttached { lead, .. } => {
            t.lead = Some(lead.clone());
            t.lead_timeout_detected_at = None;
            if t.status == TeamStatus::Suspended {
                t.status = TeamStatus::Active;
            }
        }
        Event::LeadTimeoutDetected { .. } => {
            t.lead_timeout_detected_at = Some(at);
            t.status = TeamStatus::Suspended;
        }
        Event::TeammateAdded { teammate } => add_teammate(&mut t, teammate),
        Event::TeammateStarted { name, instance } => {
            if let Some(m) = t.teammates.get_mut(name) {
                m.instance = Some(instance.clone());
            }
        }
        Event::TeammateReported {
            name,
            session_id,
            local_changes,
            context_usage_percent,
        } => apply_teammate_reported(
            &mut t,
            name,
            session_id,
            local_changes,
            *context_usage_percent,
        ),
        Event::TaskAdded { task } => add_task(&mut t, task, at),
        Event::TaskAssigned { task, to } => apply_task_assigned(&mut t, task, to, at),
        Event::TaskStarted { task, by } => apply_task_started(&mut t, task, by, at),
        Event::TaskBlocked { task, reason, .. } => {
            if let Some(x) = t.task_mut(task) {
                x.status = TaskStatus::Blocked;
                x.blocked_reason = Some(reason.clone());
                x.updated_at = at;
            }
        }
        Event::TaskCompleted { task, .. } => apply_task_completed(&mut t, task, at),
        Event::TaskCheckpointed {
            task, checkpoint, ..
        } => apply_task_checkpointed(&mut t, task, checkpoint, at),
        Event::TaskReassigned { task, from, to, .. } => {
            apply_task_reassigned(&mut t, task, from, to, at)
        }
        Event::ZombieResolved {
            teammate,
            choice,
            saved,
            head,
            branch,
        } => resolved(&mut t, teammate, choice, saved, head, branch, at),
        Event::ConsolidationStarted {
            message,
            base,
            checks,
        } => {
            t.status = TeamStatus::Consolidating;
            t.consolidation = Some(Consolidation {
                started_at: at,
                message: message.clone(),
                base: base.clone(),
                checks: checks.clone(),
                merged: Vec::new(),
            });
        }
        Event::ConsolidationAmended { message, checks } => {
            apply_consolidation_amended(&mut t, message, checks)
        }
        Event::ConsolidationMerged { merged } => apply_consolidation_merged(&mut t, merged),
        Event::Imported { .. } => {
            t.imported_at = Some(at);
        }
        Event::ConsolidationCommitted { commit } => {
            t.status = TeamStatus::Active;
            t.consolidation = None;
            t.last_good_commit = Some(commit.clone());
            t.last_consolidated_at = Some(at);
        }
        Event::ConsolidationAborted { reopened, .. } => {
            apply_consolidation_aborted(&mut t, reopened, at)
        }
        Event::Completed { .. } => {
            t.status = TeamStatus::Completed;
        }
    }
    Some(t)
}

/// The team right after `Created`: active, with its lead, teammates and
/// tasks.
fn created(
    id: &TeamId,
    rec: &Record,
    lead: &Lead,
    teammates: &[NewTeammate],
    tasks: &[NewTask],
    facts: &BTreeMap<String, String>,
) -> Team {
    let at = rec.ts;
    let mut t = Team {
        id: id.clone(),
        schema_version: SCHEMA_VERSION,
        created_at: at,
        updated_at: at,
        status: TeamStatus::Active,
        lead: Some(lead.clone()),
        lead_timeout_detected_at: None,
        teammates: Default::default(),
        tasks: Vec::new(),
        facts: facts.clone(),
        consolidation: None,
        last_good_commit: None,
        last_consolidated_at: None,
        imported_at: None,
        last_seq: rec.seq,
    };
    for m in teammates {
        add_teammate(&mut t, m);
    }
    for task in tasks {
        add_task(&mut t, task, at);
    }
    t
}

// ---------------------------------------------------------------------------
// Teammates and tasks
// ---------------------------------------------------------------------------

/// A teammate's report replaces only what it gives.
fn apply_teammate_reported(
    t: &mut Team,
    name: &str,
    session_id: &Option<String>,
    local_changes: &Option<LocalChanges>,
    context_usage_percent: Option<u8>,
) {
    if let Some(m) = t.teammates.get_mut(name) {
        if session_id.is_some() {
            m.session_id = session_id.clone();
        }
        if local_changes.is_some() {
            m.local_changes = local_changes.clone();
        }
        if context_usage_percent.is_some() {
            m.context_usage_percent = context_usage_percent;
        }
    }
}

/// The task has a new owner; the previous owner no longer works on it.
fn apply_task_assigned(t: &mut Team, task: &str, to: &str, at: Timestamp) {
    let previous = t.task(task).and_then(|x| x.assigned_to.clone());
    if let Some(x) = t.task_mut(task) {
        x.assigned_to = Some(to.to_string());
        x.updated_at = at;
    }
    if let Some(p) = previous {
        clear_current(t, &p, task);
    }
}

/// The task is in progress (first started at the first start) and is
/// `by`'s current task.
fn apply_task_started(t: &mut Team, task: &str, by: &str, at: Timestamp) {
    if let Some(x) = t.task_mut(task) {
        x.status = TaskStatus::InProgress;
        x.started_at.get_or_insert(at);
        x.blocked_reason = None;
        x.updated_at = at;
    }
    if let Some(m) = t.teammates.get_mut(by) {
        m.current_task = Some(task.to_string());
    }
}

/// The task is completed and no longer its owner's current task.
fn apply_task_completed(t: &mut Team, task: &str, at: Timestamp) {
    let owner = t.task(task).and_then(|x| x.assigned_to.clone());
    if let Some(x) = t.task_mut(task) {
        x.status = TaskStatus::Completed;
        x.completed_at = Some(at);
        x.updated_at = at;
    }
    if let Some(o) = owner {
        clear_current(t, &o, task);
    }
}

/// The checkpoint is kept, and kept as the last green one when it is
/// green.
fn apply_task_checkpointed(t: &mut Team, task: &str, checkpoint: &Checkpoint, at: Timestamp) {
    if let Some(x) = t.task_mut(task) {
        x.checkpoint = Some(checkpoint.clone());
        if checkpoint.local_status == LocalStatus::Green {
            x.last_green = Some(checkpoint.clone());
        }
        x.updated_at = at;
    }
}

/// The task moves from `from` to `to`; a task in progress becomes `to`'s
/// current task.
fn apply_task_reassigned(t: &mut Team, task: &str, from: &Option<String>, to: &str, at: Timestamp) {
    let started = t
        .task(task)
        .is_some_and(|x| x.status == TaskStatus::InProgress);
    if let Some(x) = t.task_mut(task) {
        x.assigned_to = Some(to.to_string());
        x.updated_at = at;
    }
    if let Some(f) = from {
        clear_current(t, f, task);
    }
    if started && let Some(m) = t.teammates.get_mut(to) {
        m.current_task = Some(task.to_string());
    }
}

// ---------------------------------------------------------------------------
// Consolidation
// ---------------------------------------------------------------------------

/// The consolidation under way takes the message and checks given.
fn apply_consolidation_amended(
    t: &mut Team,
    message: &Option<String>,
    checks: &Option<Vec<String>>,
) {
    if let Some(c) = t.consolidation.as_mut() {
        if let Some(m) = message {
            c.message = m.clone();
        }
        if let Some(k) = checks {
            c.checks = Some(k.clone());
        }
    }
}

/// The branches merged, each replacing an earlier merge of the same
/// branch.
fn apply_consolidation_merged(t: &mut Team, merged: &[MergedBranch]) {
    if let Some(c) = t.consolidation.as_mut() {
        for m in merged {
            c.merged.retain(|x| x.branch != m.branch);
            c.merged.push(m.clone());
        }
    }
}

/// The team is active again, without a consolidation, and the reopened
/// tasks are pending.
fn apply_consolidation_aborted(t: &mut Team, reopened: &[String], at: Timestamp) {
    t.status = TeamStatus::Active;
    t.consolidation = None;
    for id in reopened {
        if let Some(x) = t.task_mut(id) {
            x.status = TaskStatus::Pending;
            x.completed_at = None;
            x.updated_at = at;
        }
    }
}

/// The lead's choice for a teammate's work: after a commit its open
/// tasks on that branch are at the new commit; after a roll back they are
/// at the good commit, and what was there is named as discarded, so whoever
/// takes such a task next goes on from the good commit.
fn resolved(
    t: &mut Team,
    teammate: &str,
    choice: &str,
    saved: &Option<String>,
    head: &Option<String>,
    branch: &Option<String>,
    at: Timestamp,
) {
    let Some(head) = head else { return };
    for x in t
        .tasks
        .iter_mut()
        .filter(|x| x.assigned_to.as_deref() == Some(teammate) && x.status != TaskStatus::Completed)
    {
        let on_branch = |c: &Option<Checkpoint>| {
            c.as_ref()
                .is_some_and(|c| branch.is_none() || c.git_branch == *branch)
        };
        if !on_branch(&x.checkpoint) && !on_branch(&x.last_green) {
            continue;
        }
        let seq = x.checkpoint.as_ref().map_or(0, |c| c.checkpoint_seq) + 1;
        match choice {
            "rollback" => {
                let good = x
                    .last_green
                    .clone()
                    .filter(|g| g.head.as_deref() == Some(head.as_str()));
                let c = Checkpoint {
                    last_progress_at: at,
                    files_modified: good
                        .as_ref()
                        .map(|g| g.files_modified.clone())
                        .unwrap_or_default(),
                    local_status: LocalStatus::Green,
                    checkpoint_seq: seq,
                    git_branch: branch
                        .clone()
                        .or_else(|| x.checkpoint.as_ref().and_then(|c| c.git_branch.clone())),
                    head: Some(head.clone()),
                    rolled_back: saved.clone(),
                };
                x.checkpoint = Some(c);
                x.updated_at = at;
            }
            "commit" => {
                if let Some(c) = x.checkpoint.as_mut() {
                    c.head = Some(head.clone());
                    c.checkpoint_seq = seq;
                    c.last_progress_at = at;
                }
                x.updated_at = at;
            }
            _ => {}
        }
    }
}

/// The team a whole journal makes.
pub fn replay(id: &TeamId, records: &[Record]) -> Option<Team> {
    records.iter().fold(None, |t, r| apply(t, id, r))
}

/// A new teammate, with nothing reported yet.
fn add_teammate(t: &mut Team, m: &NewTeammate) {
    t.teammates.insert(
        m.name.clone(),
        Teammate {
            name: m.name.clone(),
            role: m.role,
            agent: m.agent.clone(),
            session_id: None,
            instance: None,
            current_task: None,
            local_changes: None,
            context_usage_percent: None,
        },
    );
}

/// A new task, pending and unassigned.
fn add_task(t: &mut Team, task: &NewTask, at: Timestamp) {
    t.tasks.push(TeamTask {
        id: task.id.clone(),
        title: task.title.clone(),
        assigned_to: None,
        status: TaskStatus::Pending,
        dependencies: task.dependencies.clone(),
        created_at: at,
        updated_at: at,
        started_at: None,
        completed_at: None,
        blocked_reason: None,
        checkpoint: None,
        last_green: None,
    });
}

/// `name` no longer works on `task` if it was its current task.
fn clear_current(t: &mut Team, name: &str, task: &str) {
    if let Some(m) = t.teammates.get_mut(name)
        && m.current_task.as_deref() == Some(task)
    {
        m.current_task = None;
    }
}
