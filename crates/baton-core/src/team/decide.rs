//! The rules of a team: which input is allowed in which state, and the
//! events it causes. One function per kind of [`Input`]; `decide` itself
//! only finds the team and dispatches.

use super::{
    Checkpoint, Consolidation, Event, Input, LEAD, Lead, LocalChanges, LocalStatus, MergedBranch,
    NewTask, NewTeammate, TaskStatus, Team, TeamError, TeamStatus, TeamTask,
};
use crate::time::Timestamp;
use std::collections::{BTreeMap, BTreeSet};

/// A refusal that will not pass by itself.
fn refuse(code: &'static str, message: String, hint: impl Into<String>) -> TeamError {
    TeamError {
        code,
        message,
        hint: hint.into(),
        transient: false,
    }
}

/// The events `input` causes on `team` (`None` before it exists), or why
/// it is refused. `now` is the store's time.
pub fn decide(team: Option<&Team>, input: Input, now: Timestamp) -> Result<Vec<Event>, TeamError> {
    let (team, input) = match (team, input) {
        (
            None,
            Input::Create {
                lead,
                teammates,
                tasks,
                facts,
            },
        ) => return decide_create(lead, teammates, tasks, facts),
        (Some(t), Input::Create { .. }) => {
            return Err(refuse(
                "TEAM_EXISTS",
                format!("a team {} already exists", t.id),
                "pick another name, or `baton team resume` it",
            ));
        }
        (None, _) => {
            return Err(refuse(
                "TEAM_NOT_FOUND",
                "team not found".into(),
                "list the teams with `baton team ls`",
            ));
        }
        (Some(t), input) => (t, input),
    };
    if team.status == TeamStatus::Completed {
        return Err(refuse(
            "TEAM_COMPLETED",
            format!("team {} is completed and read-only", team.id),
            format!("read what it did with `baton team review {}`", team.id),
        ));
    }
    match input {
        Input::Create { .. } => unreachable!("handled above"),
        Input::Attach {
            lead,
            lead_silent_ms,
            replace_after_ms,
        } => decide_attach(team, lead, lead_silent_ms, replace_after_ms),
        Input::LeadTimedOut { last_seen } => decide_lead_timed_out(team, last_seen),
        Input::AddTeammate(t) => decide_add_teammate(team, t),
        Input::Started { name, instance } => decide_started(team, name, instance),
        Input::Report {
            name,
            session_id,
            local_changes,
            context_usage_percent,
        } => decide_report(team, name, session_id, local_changes, context_usage_percent),
        Input::AddTask(task) => decide_add_task(team, task),
        Input::Assign { task, to } => decide_assign(team, task, to),
        Input::Start { task, by } => decide_start(team, task, by),
        Input::Block { task, by, reason } => decide_block(team, task, by, reason),
        Input::Complete { task, by } => decide_complete(team, task, by),
        Input::Checkpoint {
            task,
            by,
            files_modified,
            local_status,
            git_branch,
            head,
        } => {
            let checkpoint = NewCheckpoint {
                files_modified,
                local_status,
                git_branch,
                head,
            };
            decide_checkpoint(team, task, by, checkpoint, now)
        }
        Input::Reassign {
            task,
            to,
            force,
            owner_online,
        } => decide_reassign(team, task, to, force, owner_online),
        Input::ResolveZombie {
            teammate,
            choice,
            saved,
            head,
            branch,
        } => decide_resolve_zombie(team, teammate, choice, saved, head, branch),
        Input::StartConsolidation {
            message,
            base,
            checks,
        } => decide_start_consolidation(team, message, base, checks),
        Input::AmendConsolidation { message, checks } => {
            decide_amend_consolidation(team, message, checks)
        }
        Input::ConsolidationMerged { merged } => decide_consolidation_merged(team, merged),
        Input::ConsolidationCommitted { commit } => {
            consolidating(team)?;
            Ok(vec![Event::ConsolidationCommitted { commit }])
        }
        // An import is recorded as given: no rule holds it back.
        Input::Imported { from } => Ok(vec![Event::Imported { from }]),
        Input::AbortConsolidation => decide_abort_consolidation(team),
        Input::Finish { force } => decide_finish(team, force),
    }
}

// ---------------------------------------------------------------------------
// The team and its members
// ---------------------------------------------------------------------------

/// A new team is created when its teammates and tasks are valid.
fn decide_create(
    lead: Lead,
    teammates: Vec<NewTeammate>,
    tasks: Vec<NewTask>,
    facts: BTreeMap<String, String>,
) -> Result<Vec<Event>, TeamError> {
    check_teammates(&teammates)?;
    check_tasks(&BTreeMap::new(), &tasks)?;
    Ok(vec![Event::Created {
        lead,
        teammates,
        tasks,
        facts,
    }])
}

/// A lead attaches unless another lead is live: the one attached is
/// replaced only once it has been silent longer than `replace_after_ms`.
fn decide_attach(
    team: &Team,
    lead: Lead,
    lead_silent_ms: Option<i64>,
    replace_after_ms: i64,
) -> Result<Vec<Event>, TeamError> {
    let replaced = match &team.lead {
        Some(cur) if cur.session_id == lead.session_id => None,
        Some(cur) => {
            let silent = lead_silent_ms.unwrap_or(i64::MAX);
            if silent <= replace_after_ms {
                return Err(TeamError {
                    code: "LEAD_ATTACHED",
                    message: format!(
                        "team {} has another live lead: session {} ({}), last seen {} ago",
                        team.id,
                        cur.session_id,
                        cur.owner,
                        crate::team::liveness::human_ms(silent)
                    ),
                    hint: format!(
                        "re-attach with that lead's session (`--session {}`), or retry once it has been silent for {}",
                        cur.session_id,
                        crate::team::liveness::human_ms(replace_after_ms)
                    ),
                    transient: true,
                });
            }
            Some(cur.session_id.clone())
        }
        None => None,
    };
    Ok(vec![Event::LeadAttached { lead, replaced }])
}

/// A lead's timeout is recorded once, and only on a team that is active or
/// pending.
fn decide_lead_timed_out(
    team: &Team,
    last_seen: Option<Timestamp>,
) -> Result<Vec<Event>, TeamError> {
    if team.lead_timeout_detected_at.is_some()
        || !matches!(team.status, TeamStatus::Active | TeamStatus::Pending)
    {
        return Ok(Vec::new());
    }
    Ok(vec![Event::LeadTimeoutDetected { last_seen }])
}

/// A teammate joins under a valid name no other teammate has.
fn decide_add_teammate(team: &Team, t: NewTeammate) -> Result<Vec<Event>, TeamError> {
    if team.teammates.contains_key(&t.name) {
        return Err(refuse(
            "TEAMMATE_EXISTS",
            format!("team {} already has a teammate {}", team.id, t.name),
            "pick another name",
        ));
    }
    check_teammates(std::slice::from_ref(&t))?;
    Ok(vec![Event::TeammateAdded { teammate: t }])
}

/// A member's instance started; the instance it already runs changes
/// nothing.
fn decide_started(team: &Team, name: String, instance: String) -> Result<Vec<Event>, TeamError> {
    member(team, &name)?;
    if team
        .teammates
        .get(&name)
        .and_then(|m| m.instance.as_deref())
        == Some(&instance)
    {
        return Ok(Vec::new());
    }
    Ok(vec![Event::TeammateStarted { name, instance }])
}

/// A member reports its session and changes; a context usage over 100% is
/// refused.
fn decide_report(
    team: &Team,
    name: String,
    session_id: Option<String>,
    local_changes: Option<LocalChanges>,
    context_usage_percent: Option<u8>,
) -> Result<Vec<Event>, TeamError> {
    member(team, &name)?;
    if let Some(p) = context_usage_percent
        && p > 100
    {
        return Err(refuse(
            "BAD_INPUT",
            format!("context usage {p}% is over 100%"),
            "give a percentage from 0 to 100",
        ));
    }
    Ok(vec![Event::TeammateReported {
        name,
        session_id,
        local_changes,
        context_usage_percent,
    }])
}

/// A zombie teammate's work is resolved by one of the three choices.
fn decide_resolve_zombie(
    team: &Team,
    teammate: String,
    choice: String,
    saved: Option<String>,
    head: Option<String>,
    branch: Option<String>,
) -> Result<Vec<Event>, TeamError> {
    member(team, &teammate)?;
    if !matches!(choice.as_str(), "continue" | "commit" | "rollback") {
        return Err(refuse(
            "BAD_INPUT",
            format!("{choice:?} is not a choice"),
            "choose continue, commit or rollback",
        ));
    }
    Ok(vec![Event::ZombieResolved {
        teammate,
        choice,
        saved,
        head,
        branch,
    }])
}

// ---------------------------------------------------------------------------
// Tasks
// ---------------------------------------------------------------------------

/// A task is added when its id is new, its dependencies known and no cycle
/// forms.
fn decide_add_task(team: &Team, task: NewTask) -> Result<Vec<Event>, TeamError> {
    let existing: BTreeMap<String, Vec<String>> = team
        .tasks
        .iter()
        .map(|t| (t.id.clone(), t.dependencies.clone()))
        .collect();
    check_tasks(&existing, std::slice::from_ref(&task))?;
    Ok(vec![Event::TaskAdded { task }])
}

/// The lead assigns an open task to a member; a task in progress with
/// someone else must be reassigned instead.
fn decide_assign(team: &Team, task: String, to: String) -> Result<Vec<Event>, TeamError> {
    let t = task_of(team, &task)?;
    member(team, &to)?;
    if t.status == TaskStatus::Completed {
        return Err(refuse(
            "TASK_COMPLETED",
            format!("task {task} is already completed"),
            "add a new task for more work",
        ));
    }
    if t.assigned_to.as_deref() == Some(to.as_str()) {
        return Ok(Vec::new());
    }
    if let Some(owner) = &t.assigned_to
        && t.status == TaskStatus::InProgress
    {
        return Err(refuse(
            "TASK_OWNED",
            format!("task {task} is in progress with {owner}"),
            format!(
                "move it with `baton team reassign {} {task} --to {to}`",
                team.id
            ),
        ));
    }
    Ok(vec![Event::TaskAssigned { task, to }])
}

/// `by` starts a task assigned to it (or claims an unassigned one) once
/// its dependencies are completed.
fn decide_start(team: &Team, task: String, by: String) -> Result<Vec<Event>, TeamError> {
    let t = task_of(team, &task)?;
    member(team, &by)?;
    match t.status {
        TaskStatus::Completed => {
            return Err(refuse(
                "TASK_COMPLETED",
                format!("task {task} is already completed"),
                "add a new task for more work",
            ));
        }
        TaskStatus::InProgress if t.assigned_to.as_deref() == Some(by.as_str()) => {
            return Ok(Vec::new());
        }
        _ => {}
    }
    if let Some(owner) = &t.assigned_to
        && owner != &by
    {
        return Err(refuse(
            "TASK_OWNED",
            format!("task {task} is assigned to {owner}, not {by}"),
            format!(
                "ask the lead to reassign it (`baton team reassign {} {task} --to {by}`)",
                team.id
            ),
        ));
    }
    let open: Vec<&str> = t
        .dependencies
        .iter()
        .filter(|d| {
            team.task(d)
                .is_none_or(|dt| dt.status != TaskStatus::Completed)
        })
        .map(String::as_str)
        .collect();
    if !open.is_empty() {
        return Err(TeamError {
            code: "TASK_WAITS",
            message: format!(
                "task {task} cannot start before {} {} completed",
                open.join(", "),
                if open.len() == 1 { "is" } else { "are" }
            ),
            hint: "pick a task whose dependencies are done (`baton team show`)".into(),
            transient: true,
        });
    }
    let mut out = Vec::new();
    if t.assigned_to.is_none() {
        out.push(Event::TaskAssigned {
            task: task.clone(),
            to: by.clone(),
        });
    }
    out.push(Event::TaskStarted { task, by });
    Ok(out)
}

/// Only a task in progress is blocked, by its owner or the lead.
fn decide_block(
    team: &Team,
    task: String,
    by: String,
    reason: String,
) -> Result<Vec<Event>, TeamError> {
    let t = task_of(team, &task)?;
    owner(team, t, &by)?;
    if t.status != TaskStatus::InProgress {
        return Err(refuse(
            "TASK_NOT_STARTED",
            format!("task {task} is {}, not in progress", t.status.as_str()),
            "only a task in progress can be blocked",
        ));
    }
    Ok(vec![Event::TaskBlocked { task, by, reason }])
}

/// Only a task in progress is completed, by its owner or the lead;
/// completing it again changes nothing.
fn decide_complete(team: &Team, task: String, by: String) -> Result<Vec<Event>, TeamError> {
    let t = task_of(team, &task)?;
    owner(team, t, &by)?;
    match t.status {
        TaskStatus::Completed => Ok(Vec::new()),
        TaskStatus::InProgress => Ok(vec![Event::TaskCompleted { task, by }]),
        s => Err(refuse(
            "TASK_NOT_STARTED",
            format!("task {task} is {}, not in progress", s.as_str()),
            format!(
                "start it first (`baton team task start {} {task}`)",
                team.id
            ),
        )),
    }
}

/// What an [`Input::Checkpoint`] reports of the work tree.
struct NewCheckpoint {
    files_modified: Vec<String>,
    local_status: LocalStatus,
    git_branch: Option<String>,
    head: Option<String>,
}

/// A task's owner (or the lead) records a checkpoint, numbered after the
/// last one and stamped `now`.
fn decide_checkpoint(
    team: &Team,
    task: String,
    by: String,
    new: NewCheckpoint,
    now: Timestamp,
) -> Result<Vec<Event>, TeamError> {
    let t = task_of(team, &task)?;
    owner(team, t, &by)?;
    let checkpoint_seq = t.checkpoint.as_ref().map_or(0, |c| c.checkpoint_seq) + 1;
    Ok(vec![Event::TaskCheckpointed {
        task,
        by,
        checkpoint: Checkpoint {
            last_progress_at: now,
            files_modified: new.files_modified,
            local_status: new.local_status,
            checkpoint_seq,
            git_branch: new.git_branch,
            head: new.head,
            rolled_back: None,
        },
    }])
}

/// An open task moves to another member; taking it from an owner who is
/// online needs `force`.
fn decide_reassign(
    team: &Team,
    task: String,
    to: String,
    force: bool,
    owner_online: bool,
) -> Result<Vec<Event>, TeamError> {
    let t = task_of(team, &task)?;
    member(team, &to)?;
    if t.status == TaskStatus::Completed {
        return Err(refuse(
            "TASK_COMPLETED",
            format!("task {task} is already completed"),
            "add a new task for more work",
        ));
    }
    if t.assigned_to.as_deref() == Some(to.as_str()) {
        return Ok(Vec::new());
    }
    if owner_online && !force {
        return Err(refuse(
            "OWNER_ONLINE",
            format!(
                "task {task}'s owner {} is online",
                t.assigned_to.as_deref().unwrap_or("?")
            ),
            "ask them to hand it over, or pass --force",
        ));
    }
    Ok(vec![Event::TaskReassigned {
        task,
        from: t.assigned_to.clone(),
        to,
        forced: force,
    }])
}

// ---------------------------------------------------------------------------
// Consolidation and the end of the team
// ---------------------------------------------------------------------------

/// A consolidation starts unless one is under way already.
fn decide_start_consolidation(
    team: &Team,
    message: String,
    base: Option<String>,
    checks: Vec<String>,
) -> Result<Vec<Event>, TeamError> {
    if team.status == TeamStatus::Consolidating {
        return Ok(Vec::new());
    }
    Ok(vec![Event::ConsolidationStarted {
        message,
        base,
        checks: Some(checks),
    }])
}

/// The consolidation under way takes a new message or new checks; what
/// equals the current one is dropped.
fn decide_amend_consolidation(
    team: &Team,
    message: Option<String>,
    checks: Option<Vec<String>>,
) -> Result<Vec<Event>, TeamError> {
    let c = consolidating(team)?;
    let message = message.filter(|m| *m != c.message);
    let checks = checks.filter(|k| c.checks.as_ref() != Some(k));
    if message.is_none() && checks.is_none() {
        return Ok(Vec::new());
    }
    Ok(vec![Event::ConsolidationAmended { message, checks }])
}

/// Branches merged during the consolidation under way; none merged
/// changes nothing.
fn decide_consolidation_merged(
    team: &Team,
    merged: Vec<MergedBranch>,
) -> Result<Vec<Event>, TeamError> {
    consolidating(team)?;
    if merged.is_empty() {
        return Ok(Vec::new());
    }
    Ok(vec![Event::ConsolidationMerged { merged }])
}

/// The consolidation under way is aborted: the work goes back to its base
/// and the tasks completed since the last good commit are open again.
fn decide_abort_consolidation(team: &Team) -> Result<Vec<Event>, TeamError> {
    let Some(c) = &team.consolidation else {
        return Err(refuse(
            "NOT_CONSOLIDATING",
            format!("team {} is not consolidating", team.id),
            "nothing to abort",
        ));
    };
    // The work of the tasks completed since the last good commit
    // goes with the abort: they are open again.
    let reopened = team
        .tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Completed && t.completed_at > team.last_consolidated_at)
        .map(|t| t.id.clone())
        .collect();
    Ok(vec![Event::ConsolidationAborted {
        back_to: c.base.clone(),
        reopened,
    }])
}

/// The team is completed when no consolidation is under way and no task is
/// open, or with its open tasks left open when `force`.
fn decide_finish(team: &Team, force: bool) -> Result<Vec<Event>, TeamError> {
    if team.status == TeamStatus::Consolidating {
        return Err(refuse(
            "CONSOLIDATING",
            format!("team {} is consolidating", team.id),
            format!(
                "finish it first: `baton team resume {}` offers retry, abort or inspect",
                team.id
            ),
        ));
    }
    let open: Vec<&TeamTask> = team
        .tasks
        .iter()
        .filter(|t| t.status != TaskStatus::Completed)
        .collect();
    if !open.is_empty() && !force {
        return Err(refuse(
            "TASKS_OPEN",
            format!(
                "team {} has {} open task(s): {}",
                team.id,
                open.len(),
                open_tasks(&open)
            ),
            format!(
                "finish them first, or `baton team complete {} --force` completes the team with them left open (read-only: nobody can finish them after)",
                team.id
            ),
        ));
    }
    Ok(vec![Event::Completed {
        open: open.iter().map(|t| t.id.clone()).collect(),
    }])
}

// ---------------------------------------------------------------------------
// Shared checks
// ---------------------------------------------------------------------------

/// `t1 Schema (in_progress, ana), t2 API (pending)`.
fn open_tasks(open: &[&TeamTask]) -> String {
    open.iter()
        .map(|t| {
            format!(
                "{} {} ({}{})",
                t.id,
                t.title,
                t.status.as_str(),
                t.assigned_to
                    .as_deref()
                    .map(|a| format!(", {a}"))
                    .unwrap_or_default()
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The consolidation under way, or "not consolidating".
fn consolidating(team: &Team) -> Result<&Consolidation, TeamError> {
    team.consolidation.as_ref().ok_or_else(|| {
        refuse(
            "NOT_CONSOLIDATING",
            format!("team {} is not consolidating", team.id),
            format!("start with `baton team consolidate {}`", team.id),
        )
    })
}

/// `name` is the lead or one of the team's teammates.
fn member(team: &Team, name: &str) -> Result<(), TeamError> {
    if name == LEAD || team.teammates.contains_key(name) {
        return Ok(());
    }
    let names: Vec<&str> = team.teammates.keys().map(String::as_str).collect();
    Err(refuse(
        "NO_TEAMMATE",
        format!("team {} has no teammate {name:?}", team.id),
        format!("its teammates are: {}", names.join(", ")),
    ))
}

/// The team's task `id`, or a refusal naming the tasks it has.
fn task_of<'a>(team: &'a Team, id: &str) -> Result<&'a TeamTask, TeamError> {
    team.task(id).ok_or_else(|| {
        let ids: Vec<&str> = team.tasks.iter().map(|t| t.id.as_str()).collect();
        refuse(
            "NO_TASK",
            format!("team {} has no task {id:?}", team.id),
            if ids.is_empty() {
                "it has no tasks yet; add one with `baton team task add`".to_string()
            } else {
                format!("its tasks are: {}", ids.join(", "))
            },
        )
    })
}

/// `by` works on `t`: its owner, or the lead.
fn owner(team: &Team, t: &TeamTask, by: &str) -> Result<(), TeamError> {
    member(team, by)?;
    if by == LEAD || t.assigned_to.as_deref() == Some(by) {
        return Ok(());
    }
    Err(refuse(
        "TASK_OWNED",
        format!(
            "task {} is {}, not {by}'s",
            t.id,
            t.assigned_to
                .as_deref()
                .map_or("not assigned".to_string(), |o| format!("{o}'s"))
        ),
        "only its owner (or the lead) moves it",
    ))
}

/// New teammates' names: valid, not reserved, each given once.
fn check_teammates(teammates: &[NewTeammate]) -> Result<(), TeamError> {
    let mut seen = BTreeSet::new();
    for t in teammates {
        let ok = !t.name.is_empty()
            && t.name.len() <= 64
            && t.name != LEAD
            && t.name != super::EVERYONE
            && t.name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !ok {
            return Err(refuse(
                "BAD_INPUT",
                format!("{:?} is not a teammate name", t.name),
                "use letters, digits, '-' and '_' (at most 64), not \"lead\" or \"*\"",
            ));
        }
        if !seen.insert(t.name.as_str()) {
            return Err(refuse(
                "BAD_INPUT",
                format!("teammate {} is named twice", t.name),
                "give each teammate its own name",
            ));
        }
    }
    Ok(())
}

/// New tasks `new` next to `existing` (id → dependencies): ids valid and
/// unique, dependencies known, no cycle (the cycle named).
fn check_tasks(existing: &BTreeMap<String, Vec<String>>, new: &[NewTask]) -> Result<(), TeamError> {
    let mut all = existing.clone();
    for t in new {
        let ok = !t.id.is_empty()
            && t.id.len() <= 64
            && t.id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !ok {
            return Err(refuse(
                "BAD_INPUT",
                format!("{:?} is not a task id", t.id),
                "use letters, digits, '-', '_' and '.' (at most 64)",
            ));
        }
        if t.title.trim().is_empty() {
            return Err(refuse(
                "BAD_INPUT",
                format!("task {} has no title", t.id),
                "say what the task is",
            ));
        }
        if all.insert(t.id.clone(), t.dependencies.clone()).is_some() {
            return Err(refuse(
                "BAD_INPUT",
                format!("a task {} already exists", t.id),
                "give each task its own id",
            ));
        }
    }
    for t in new {
        for d in &t.dependencies {
            if !all.contains_key(d) {
                return Err(refuse(
                    "BAD_INPUT",
                    format!(
                        "task {} depends on {d}, which is not a task of the team",
                        t.id
                    ),
                    "add that task first, or fix the dependency",
                ));
            }
        }
    }
    if let Some(cycle) = find_cycle(&all) {
        return Err(refuse(
            "DEPENDENCY_CYCLE",
            format!(
                "the tasks' dependencies form a cycle: {}",
                cycle.join(" -> ")
            ),
            "remove one of those dependencies",
        ));
    }
    Ok(())
}

/// A cycle among `deps` (id → what it depends on), as the ids around it
/// with the first repeated at the end.
fn find_cycle(deps: &BTreeMap<String, Vec<String>>) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    fn visit<'a>(
        id: &'a str,
        deps: &'a BTreeMap<String, Vec<String>>,
        marks: &mut BTreeMap<&'a str, Mark>,
        path: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        match marks.get(id) {
            Some(Mark::Done) => return None,
            Some(Mark::Open) => {
                let at = path.iter().position(|p| *p == id).unwrap_or(0);
                let mut cycle: Vec<String> = path[at..].iter().map(|s| s.to_string()).collect();
                cycle.push(id.to_string());
                return Some(cycle);
            }
            None => {}
        }
        marks.insert(id, Mark::Open);
        path.push(id);
        for d in deps.get(id).into_iter().flatten() {
            if let Some(c) = visit(d, deps, marks, path) {
                return Some(c);
            }
        }
        path.pop();
        marks.insert(id, Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    for id in deps.keys() {
        let mut path = Vec::new();
        if let Some(c) = visit(id, deps, &mut marks, &mut path) {
            return Some(c);
        }
    }
    None
}
