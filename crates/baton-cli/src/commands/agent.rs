//! `baton agent …`: coding and review agent instances (the work is in
//! `baton_engine::instances`; this prints it).

use super::{Result, engine};
use crate::cli::{
    AgentAttachArgs, AgentCommand, AgentIdArgs, AgentKillArgs, AgentLsArgs, AgentMergeBackArgs,
    AgentPhaseArgs, AgentPushArgs, AgentReviewArgs, AgentSpawnArgs,
};
use crate::printer::{Printer, cell};
use baton_core::Exit;
use baton_core::instance::{Instance, Record};
use baton_engine::instances::{Done, PushOptions, ReviewOptions, SpawnOptions, View};
use baton_engine::{Error, Project};
use serde_json::{Value, json};
use std::io::Read;
use std::sync::Arc;

pub fn run(project: &Project, c: AgentCommand, printer: &Arc<Printer>) -> Result<Exit> {
    let eng = engine(project, printer)?;
    let agents = eng.agents()?;
    match c {
        AgentCommand::Spawn(a) => spawn(&agents, a, printer),
        AgentCommand::Ls(a) => ls(&agents, a, printer),
        AgentCommand::Show(a) => show(&agents, a, printer),
        AgentCommand::Log(a) => log(&agents, a, printer),
        AgentCommand::Attach(a) => attach(&agents, a),
        AgentCommand::Review(a) => review(&agents, a, printer),
        AgentCommand::MergeBack(a) => merge_back(&agents, a, printer),
        AgentCommand::Push(a) => push(&agents, a, printer),
        AgentCommand::Kill(a) => kill(&agents, a, printer),
        AgentCommand::Wait(a) => wait(&agents, a, printer),
        AgentCommand::Phase(a) => phase(&agents, a, printer),
    }
}

type Agents<'e> = baton_engine::instances::Agents<'e>;

fn spawn(agents: &Agents, a: AgentSpawnArgs, printer: &Printer) -> Result<Exit> {
    let instructions = match a.instructions.as_deref() {
        Some("-") => {
            let mut s = String::new();
            std::io::stdin().read_to_string(&mut s)?;
            s
        }
        Some(text) => text.to_string(),
        None => String::new(),
    };
    let execution_timeout_ms = timeout(a.timeout.as_deref())?;
    let inst = agents.spawn(SpawnOptions {
        id: a.id,
        instructions,
        issue: a.issue,
        system_prompt: a.system_prompt,
        agent: a.agent,
        base: a.base,
        branch: a.branch,
        require_review: a.require_review.then_some(true),
        max_reviews: a.max_reviews,
        execution_timeout_ms,
        interactive: a.interactive,
        for_phase: None,
    })?;
    let view = agents.show(&inst.id)?;
    if a.json {
        printer.json(&view.to_json().to_string());
    } else {
        printer.info(&format!(
            "agent {} works in {} on branch {}; follow it with `baton agent show {}`",
            inst.id,
            inst.resources.worktree_path.as_deref().unwrap_or("?"),
            inst.resources.branch.as_deref().unwrap_or("?"),
            inst.id
        ));
        printer.data(inst.id.as_str());
    }
    Ok(Exit::Done)
}

fn ls(agents: &Agents, a: AgentLsArgs, printer: &Printer) -> Result<Exit> {
    let all = agents.list()?;
    let total = all.len();
    let shown: Vec<&View> = all
        .iter()
        .filter(|v| a.all || !v.instance.status.ended())
        .collect();
    if a.json {
        let rows: Vec<Value> = shown.iter().map(|v| v.to_json()).collect();
        printer.json(&Value::Array(rows).to_string());
        return Ok(Exit::Done);
    }
    if shown.is_empty() {
        printer.info(if total == 0 {
            "no agent instances yet; start one with `baton agent spawn \"what to do\"`"
        } else {
            "no live agent instances"
        });
    } else {
        let mut lines = vec![format!(
            "{:<28} {:<7} {:<17} {:<22} {:<8} {:<28} UPDATED",
            "ID", "KIND", "STATUS", "AGENT", "REVIEWS", "BRANCH"
        )];
        for v in &shown {
            let i = &v.instance;
            lines.push(format!(
                "{:<28} {:<7} {:<17} {:<22} {:<8} {:<28} {}",
                i.id.as_str(),
                kind(i),
                i.status.as_str(),
                cell(&turn_text(v)),
                reviews(i),
                cell(i.resources.branch.as_deref().unwrap_or("-")),
                short_time(&i.updated_at.rfc3339()),
            ));
        }
        printer.data(&lines.join("\n"));
    }
    let hidden = total - shown.len();
    if hidden > 0 && !a.all {
        printer.info(&format!(
            "({hidden} ended instance(s) hidden; --all shows them)"
        ));
    }
    Ok(Exit::Done)
}

fn show(agents: &Agents, a: AgentIdArgs, printer: &Printer) -> Result<Exit> {
    let id = agents.resolve(a.id.as_deref())?;
    let v = agents.show(&id)?;
    if a.json {
        printer.json(&v.to_json().to_string());
        return Ok(Exit::Done);
    }
    let i = &v.instance;
    let mut lines = vec![
        format!("instance:   {} ({})", i.id, kind(i)),
        format!("status:     {}", i.status.as_str()),
        format!("agent:      {}", cell(&turn_text(&v))),
        format!(
            "worktree:   {}",
            cell(i.resources.worktree_path.as_deref().unwrap_or("-"))
        ),
        format!(
            "branch:     {}",
            cell(i.resources.branch.as_deref().unwrap_or("-"))
        ),
    ];
    if let Some(s) = &i.resources.agent_session_id {
        lines.push(format!("session:    {}", cell(s)));
    }
    if let Some(c) = i.coding() {
        lines.push(format!("reviews:    {}", reviews(i)));
        if let Some(r) = &c.current_review_instance_id {
            lines.push(format!("in review:  {r}"));
        }
        if let Some(pr) = &c.pull_request {
            lines.push(format!("pull req.:  #{} {}", pr.number, cell(&pr.url)));
        }
        if let Some(e) = &c.last_error {
            lines.push(format!("last error: {}", cell(e)));
        }
    }
    if let Some(r) = i.review() {
        lines.push(format!(
            "reviews:    {} (review {})",
            r.parent_instance_id, r.iteration
        ));
        if let Some(d) = &r.decision_reason {
            lines.push(format!("decided:    {}", cell(d)));
        }
    }
    if !i.turns.is_empty() {
        let turns: Vec<&str> = i.turns.iter().map(|t| t.as_str()).collect();
        lines.push(format!(
            "turns:      {} (`baton log TASK`)",
            turns.join(", ")
        ));
    }
    lines.push(format!("started:    {}", i.started_at.rfc3339()));
    lines.push(format!("updated:    {}", i.updated_at.rfc3339()));
    if let Some(r) = &i.end_reason {
        lines.push(format!("ended:      {}", cell(r)));
    }
    printer.data(&lines.join("\n"));
    Ok(Exit::Done)
}

fn log(agents: &Agents, a: AgentIdArgs, printer: &Printer) -> Result<Exit> {
    let id = agents.resolve(a.id.as_deref())?;
    let records = agents.events(&id)?;
    if a.json {
        let lines: Vec<String> = records.iter().map(|r| record_json(r).to_string()).collect();
        if !lines.is_empty() {
            printer.json(&lines.join("\n"));
        }
        return Ok(Exit::Done);
    }
    let lines: Vec<String> = records
        .iter()
        .map(|r| {
            let ev = serde_json::to_value(&r.event).expect("json");
            let mut detail: Vec<String> = ev
                .as_object()
                .map(|o| {
                    o.iter()
                        .filter(|(k, _)| k.as_str() != "kind")
                        .map(|(k, v)| match v {
                            Value::String(s) => format!("{k}={}", cell(s)),
                            v => format!("{k}={}", cell(&v.to_string())),
                        })
                        .collect()
                })
                .unwrap_or_default();
            detail.sort();
            format!(
                "{:>5}  {}  {:<18} {}",
                r.seq,
                short_time(&r.ts.rfc3339()),
                r.event.kind(),
                detail.join(" ")
            )
        })
        .collect();
    printer.data(&lines.join("\n"));
    let pane = agents.folder(&id).join("pane.log");
    if pane.is_file() {
        printer.info(&format!(
            "its terminal, as it was when its session ended: {}",
            pane.display()
        ));
    }
    Ok(Exit::Done)
}

fn attach(agents: &Agents, a: AgentAttachArgs) -> Result<Exit> {
    use std::os::unix::process::CommandExt;
    let id = agents.resolve(Some(&a.id))?;
    let mut cmd = agents.attach_command(&id)?;
    // Becomes tmux: the terminal is the person's until they detach.
    let e = cmd.exec();
    Err(Error::op(format!("cannot run tmux attach: {e}")).hint("install tmux"))
}

fn review(agents: &Agents, a: AgentReviewArgs, printer: &Printer) -> Result<Exit> {
    let parent = agents.resolve(a.id.as_deref())?;
    let r = agents.request_review(
        &parent,
        ReviewOptions {
            id: a.review_id,
            prompt: a.prompt,
            agent: a.agent,
            timeout_ms: timeout(a.timeout.as_deref())?,
        },
    )?;
    if a.json {
        printer.json(&agents.show(&r.id)?.to_json().to_string());
    } else {
        printer.info(&format!(
            "review {} of {parent} works in {} on branch {}",
            r.id,
            r.resources.worktree_path.as_deref().unwrap_or("?"),
            r.resources.branch.as_deref().unwrap_or("?"),
        ));
        printer.data(r.id.as_str());
    }
    Ok(Exit::Done)
}

fn merge_back(agents: &Agents, a: AgentMergeBackArgs, printer: &Printer) -> Result<Exit> {
    let review = agents.resolve(a.id.as_deref())?;
    let parent = agents.merge_back(&review, &a.feedback)?;
    if a.json {
        printer.json(&agents.show(&parent.id)?.to_json().to_string());
    } else {
        printer.info(&format!(
            "review {review} merged into {} ({}); the feedback goes to its agent",
            parent.id,
            parent.resources.branch.as_deref().unwrap_or("?")
        ));
    }
    Ok(Exit::Done)
}

fn push(agents: &Agents, a: AgentPushArgs, printer: &Printer) -> Result<Exit> {
    let id = agents.resolve(a.id.as_deref())?;
    let owner = agents.push(
        &id,
        PushOptions {
            title: a.title,
            body: a.body,
            draft: a.draft,
        },
    )?;
    if a.json {
        printer.json(&agents.show(&owner.id)?.to_json().to_string());
    } else if let Some(pr) = owner.coding().and_then(|c| c.pull_request.as_ref()) {
        printer.info(&format!(
            "pull request #{} opened for {} ({})",
            pr.number,
            owner.id,
            cell(owner.resources.branch.as_deref().unwrap_or("?"))
        ));
        printer.data(&cell(&pr.url));
    }
    Ok(Exit::Done)
}

fn wait(agents: &Agents, a: AgentIdArgs, printer: &Printer) -> Result<Exit> {
    let id = agents.resolve(a.id.as_deref())?;
    let done = agents.wait(&id)?;
    if a.json {
        printer.json(&agents.show(&id)?.to_json().to_string());
    } else {
        printer.data(&done_line(&id, &done));
    }
    Ok(Exit::Done)
}

/// A workflow's agent phase as a coding instance: its last line is the
/// phase's summary.
fn phase(agents: &Agents, a: AgentPhaseArgs, printer: &Printer) -> Result<Exit> {
    let id = agents.resolve(Some(&a.id))?;
    let instructions = fs_err::read_to_string(&a.instructions_file)?;
    printer.always(&format!(
        "agent instance {id}: spawned or found, waiting for its work"
    ));
    let for_phase = match (a.task, a.phase) {
        (Some(task), Some(phase)) => Some(baton_core::instance::ForPhase {
            task: baton_core::TaskId::parse(&task)
                .map_err(|e| Error::bad_input(format!("--task {task:?}: {e}")))?,
            phase,
        }),
        _ => None,
    };
    let (id, done, removal) = agents.run_phase(
        &id,
        SpawnOptions {
            id: None,
            instructions,
            agent: a.agent,
            base: a.base,
            branch: None,
            require_review: a.require_review,
            max_reviews: a.max_reviews,
            execution_timeout_ms: a.timeout_ms,
            interactive: a.interactive,
            for_phase,
            ..Default::default()
        },
    )?;
    // Where its work is now: the branch it was done on, or nothing left
    // (no work held), as the cleanup rules of docs/agents.md decide.
    let kept = match &removal {
        Some(r) if !r.removed.is_empty() => " and ended; nothing was left to keep".to_string(),
        Some(r) => {
            let branch = agents
                .show(&id)
                .ok()
                .and_then(|v| v.instance.resources.branch)
                .unwrap_or_default();
            let why = r
                .kept
                .iter()
                .chain(&r.failed)
                .map(|(_, why)| why.as_str())
                .collect::<Vec<_>>()
                .join("; ");
            format!(" and ended; its worktree and branch {branch} are kept: {why}")
        }
        None => String::new(),
    };
    printer.data(&format!("{}{}", done_line(&id, &done), cell(&kept)));
    Ok(Exit::Done)
}

fn done_line(id: &baton_core::instance::InstanceId, done: &Done) -> String {
    match done {
        Done::PullRequest { number, url } => {
            format!(
                "agent instance {id} opened pull request #{number}: {}",
                cell(url)
            )
        }
        Done::Finished => format!("agent instance {id} finished its work"),
    }
}

fn kill(agents: &Agents, a: AgentKillArgs, printer: &Printer) -> Result<Exit> {
    let id = agents.resolve(Some(&a.id))?;
    let removal = agents.kill(&id, &a.reason)?;
    if a.json {
        printer.json(&removal.to_json().to_string());
    } else {
        printer.info(&format!("agent {id} ended"));
        for (i, what) in &removal.removed {
            printer.info(&format!("  {i}: removed {what}"));
        }
        for (i, why) in &removal.kept {
            printer.info(&format!("  {i}: kept its worktree and branch: {why}"));
        }
        for (i, e) in &removal.failed {
            printer.info(&format!("  {i}: WORKFLOW_CLEANUP_FAILED: {e}"));
        }
    }
    Ok(Exit::Done)
}

/// `--timeout DURATION`.
fn timeout(t: Option<&str>) -> Result<Option<u64>> {
    let Some(t) = t else { return Ok(None) };
    baton_core::workflow::parse_duration(t)
        .map(Some)
        .map_err(|m| {
            Error::coded(
                baton_core::instance::ErrorCode::InvalidConfiguration,
                format!("--timeout {t:?}: {m}"),
            )
            .hint("write e.g. --timeout 2h or --timeout 90m")
        })
}

fn kind(i: &Instance) -> &'static str {
    match i.kind() {
        baton_core::instance::Kind::Coding => "coding",
        baton_core::instance::Kind::Review => "review",
    }
}

fn reviews(i: &Instance) -> String {
    match i.coding() {
        Some(c) => format!("{}/{}", c.review_count, c.max_reviews),
        None => "-".into(),
    }
}

fn turn_text(v: &View) -> String {
    if v.instance.resources.session_name.is_some() {
        return match v.session {
            Some(true) => "tmux running".into(),
            Some(false) => "tmux exited".into(),
            None => "tmux gone".into(),
        };
    }
    match &v.turn {
        Some((task, status)) => format!("{task} {}", status.as_str()),
        None => "-".into(),
    }
}

fn short_time(rfc3339: &str) -> String {
    rfc3339.get(..19).unwrap_or("").replace('T', " ")
}

/// An instance as `--json` prints it: its stored form (times in RFC
/// 3339), plus `kind` and its latest turn (`{task, status}`).
fn record_json(r: &Record) -> Value {
    let mut j = serde_json::to_value(&r.event).expect("json");
    if let Some(o) = j.as_object_mut() {
        o.insert("seq".into(), json!(r.seq));
        o.insert("ts".into(), json!(r.ts.rfc3339()));
    }
    j
}
