//! `baton team …`: create a team, re-attach as its lead, probe it, work
//! its task list and mailbox, heartbeats, reassigning, completing. What
//! members wrote (messages, task titles, names) is escaped in the
//! human-readable views, and a long message clipped.

use super::{Result, engine};
use crate::cli::{
    TeamCommand, TeamCompleteArgs, TeamConsolidateArgs, TeamCreateArgs, TeamHeartbeatArgs,
    TeamIdArgs, TeamImportArgs, TeamJsonArgs, TeamMsgCommand, TeamReassignArgs, TeamResolveArgs,
    TeamResumeArgs, TeamTaskCommand,
};
use crate::printer::{Printer, cell};
use baton_core::Exit;
use baton_core::team::{
    self, LocalStatus, Message, MessageType, NewMessage, NewTask, NewTeammate, Role, Team,
};
use baton_engine::teams::{
    CheckpointOptions, Consolidated, CreateOptions, MemberView, Probe, Teams,
};
use baton_engine::{Error, Project};
use std::sync::Arc;

pub fn run(project: &Project, cmd: TeamCommand, printer: &Arc<Printer>) -> Result<Exit> {
    let eng = engine(project, printer)?;
    let teams = eng.teams()?;
    match cmd {
        TeamCommand::Create(a) => create(&teams, a, printer),
        TeamCommand::Start(a) => start(&teams, a, printer),
        TeamCommand::Ls(a) => ls(&teams, a, printer),
        TeamCommand::Show(a) | TeamCommand::Probe(a) => show(&teams, a, printer),
        TeamCommand::Resume(a) => resume(&teams, a, printer),
        TeamCommand::Task(c) => task(&teams, c, printer),
        TeamCommand::Msg(c) => msg(&teams, c, printer),
        TeamCommand::Heartbeat(a) => heartbeat(&teams, a, printer),
        TeamCommand::Reassign(a) => reassign(&teams, a, printer),
        TeamCommand::Resolve(a) => resolve(&teams, a, printer),
        TeamCommand::Consolidate(a) => consolidate(&teams, a, printer),
        TeamCommand::Sync(a) => sync(&teams, a, printer),
        TeamCommand::Import(a) => import(&teams, a, printer),
        TeamCommand::Complete(a) => complete(&teams, a, printer),
        TeamCommand::Review(a) => review(&teams, a, printer),
    }
}

/// `team create`: the team, then its teammates' agents started.
fn create(teams: &Teams<'_>, a: TeamCreateArgs, printer: &Arc<Printer>) -> Result<Exit> {
    let teammates = a
        .teammates
        .iter()
        .map(|t| teammate(t))
        .collect::<Result<Vec<_>>>()?;
    let tasks = a
        .tasks
        .iter()
        .enumerate()
        .map(|(i, t)| new_task(i, t))
        .collect::<Result<Vec<_>>>()?;
    let t = teams.create(CreateOptions {
        id: a.name,
        teammates,
        tasks,
        facts: a.facts,
        session: a.session,
    })?;
    let started = teams.start_teammates(t.id.as_str(), a.interactive)?;
    let t = teams.get(t.id.as_str())?;
    if a.json {
        return json(printer, &t);
    }
    for (name, instance) in &started {
        printer.info(&format!(
            "started teammate {name} as agent instance {instance} (`baton agent show {instance}`)"
        ));
    }
    printer.info(&format!(
        "created team {} (lead session {}); teammates: {}; tasks: {}",
        t.id,
        t.lead.as_ref().map_or("-", |l| l.session_id.as_str()),
        list(
            t.teammates
                .values()
                .map(|m| format!("{} ({})", m.name, m.role.as_str()))
        ),
        list(t.tasks.iter().map(|x| x.id.clone()))
    ));
    printer.hint(&format!(
        "teammates work with `baton team task start {} TASK --as NAME`; re-attach as the lead with `baton team resume {}`",
        t.id, t.id
    ));
    Ok(Exit::Done)
}

/// `team start`: the teammates with an agent that are not running yet.
fn start(teams: &Teams<'_>, a: TeamIdArgs, printer: &Arc<Printer>) -> Result<Exit> {
    let started = teams.start_teammates(&a.team, false)?;
    if a.json {
        return json(printer, &started);
    }
    if started.is_empty() {
        printer.info("every teammate with an agent is started already");
    }
    for (name, instance) in &started {
        printer.info(&format!(
            "started teammate {name} as agent instance {instance}"
        ));
    }
    Ok(Exit::Done)
}

/// `team ls`: one line per team.
fn ls(teams: &Teams<'_>, a: TeamJsonArgs, printer: &Arc<Printer>) -> Result<Exit> {
    let all = teams.list()?;
    if a.json {
        return json(printer, &all);
    }
    if all.is_empty() {
        printer.data("no teams yet; create one with `baton team create NAME --teammate NAME:ROLE`");
    }
    for t in &all {
        printer.data(&format!(
            "{}  {}  lead {}  {} teammate(s)  tasks: {}",
            cell(t.id.as_str()),
            t.status.as_str(),
            cell(t.lead.as_ref().map_or("-", |l| l.session_id.as_str())),
            t.teammates.len(),
            counts(&t.task_counts())
        ));
    }
    Ok(Exit::Done)
}

/// `team show` and `team probe`: where the team stands.
fn show(teams: &Teams<'_>, a: TeamIdArgs, printer: &Arc<Printer>) -> Result<Exit> {
    let p = teams.probe(&a.team)?;
    if a.json {
        return json(printer, &p);
    }
    print_probe(printer, &p);
    Ok(Exit::Done)
}

/// `team resume`: attach as the lead, saying whom it replaced, whether the
/// lead had timed out and whether a consolidation was left half done.
fn resume(teams: &Teams<'_>, a: TeamResumeArgs, printer: &Arc<Printer>) -> Result<Exit> {
    let at = teams.resume(&a.team, a.session)?;
    if a.json {
        return json(printer, &at);
    }
    let p = &at.probe;
    match (at.how, &at.replaced) {
        ("replaced", Some(old)) => printer.info(&format!(
            "re-attached to team {} as its lead, replacing session {old} (silent too long)",
            p.team.id
        )),
        ("same", _) => printer.info(&format!(
            "re-attached to team {} (same lead session)",
            p.team.id
        )),
        _ => printer.info(&format!("attached to team {} as its lead", p.team.id)),
    }
    if let Some(at) = at.timeout_detected_at {
        printer.always(&format!(
            "the lead had timed out: noticed at {at} (zombie mode); the teammates went on, each one's latest checkpoint is below"
        ));
        printer.hint(
            "for each teammate's work choose: continue, commit, or roll back to the last good commit",
        );
    }
    if p.team.status == team::TeamStatus::Consolidating {
        printer.always(&format!(
            "team {} was consolidating when it stopped{}",
            p.team.id,
            if teams.dirty_index() {
                ", with its changes staged and not committed"
            } else {
                ""
            }
        ));
        printer.hint(&format!(
            "`baton team consolidate {0} --retry` finishes it (never commits twice), `--abort` goes back to the last good commit, `--inspect` shows the staged diff",
            p.team.id
        ));
    }
    print_probe(printer, p);
    Ok(Exit::Done)
}

/// `team heartbeat`: the member's presence, and what it reports beside it.
fn heartbeat(teams: &Teams<'_>, a: TeamHeartbeatArgs, printer: &Arc<Printer>) -> Result<Exit> {
    let sent_at = a
        .sent_at
        .as_deref()
        .map(|s| {
            baton_core::Timestamp::parse_rfc3339(s).ok_or_else(|| {
                Error::bad_input(format!("--sent-at {s:?} is not an RFC 3339 time"))
                    .hint("write e.g. 2026-11-25T10:00:00Z")
            })
        })
        .transpose()?;
    let p = teams.heartbeat(&a.team, &a.name, a.seq, sent_at)?;
    let changes = (a.staged.is_some() || a.unstaged.is_some() || a.branch.is_some()).then(|| {
        team::LocalChanges {
            staged: a.staged.unwrap_or(0),
            unstaged: a.unstaged.unwrap_or(0),
            branch: a.branch.clone(),
        }
    });
    if (a.context.is_some() || a.session.is_some() || changes.is_some()) && a.name != team::LEAD {
        teams.report(&a.team, &a.name, a.session, changes, a.context)?;
    }
    if a.json {
        return json(printer, &p);
    }
    printer.info(&format!(
        "heartbeat {} of {} received at {}",
        p.seq, p.name, p.received_at
    ));
    Ok(Exit::Done)
}

/// `team reassign`: the task moves to another member.
fn reassign(teams: &Teams<'_>, a: TeamReassignArgs, printer: &Arc<Printer>) -> Result<Exit> {
    let t = teams.reassign(&a.team, &a.by.member, &a.task, &a.to, a.force)?;
    if a.json {
        return json(printer, &t);
    }
    printer.info(&format!(
        "task {} is {}'s now; it was told where the work stands",
        a.task, a.to
    ));
    Ok(Exit::Done)
}

/// `team resolve`: the lead's choice for a zombie teammate's work.
fn resolve(teams: &Teams<'_>, a: TeamResolveArgs, printer: &Arc<Printer>) -> Result<Exit> {
    let r = teams.resolve(&a.team, &a.name, &a.choice)?;
    if a.json {
        return json(printer, &r);
    }
    match (r.choice.as_str(), &r.head, &r.saved) {
        ("rollback", Some(h), Some(s)) => printer.info(&format!(
            "{}'s branch {} is back at {}; what it held is saved at {s}",
            r.teammate,
            r.branch.as_deref().unwrap_or("-"),
            &h[..h.len().min(12)]
        )),
        ("commit", Some(h), _) => printer.info(&format!(
            "{}'s work is committed on {} at {}",
            r.teammate,
            r.branch.as_deref().unwrap_or("-"),
            &h[..h.len().min(12)]
        )),
        _ => printer.info(&format!("{} goes on as it is", r.teammate)),
    }
    Ok(Exit::Done)
}

/// `team consolidate`: run, retry, abort or inspect the consolidation,
/// then say how it went.
fn consolidate(teams: &Teams<'_>, a: TeamConsolidateArgs, printer: &Arc<Printer>) -> Result<Exit> {
    use baton_engine::teams::Consolidate;
    let what = match (a.retry, a.abort, a.inspect) {
        (true, _, _) => Consolidate::Retry,
        (_, true, _) => Consolidate::Abort,
        (_, _, true) => Consolidate::Inspect,
        _ => Consolidate::Run,
    };
    let c = teams.consolidate(&a.team, what, a.message, &a.checks)?;
    if a.json {
        json(printer, &c)?;
    } else {
        print_merged(printer, &c);
    }
    consolidation_outcome(printer, &c, &a.team, a.json)
}

/// The branches that could not be merged, and those that were.
fn print_merged(printer: &Arc<Printer>, c: &Consolidated) {
    for b in &c.missing {
        printer.always(&format!(
            "warning: the teammates' branch {} is not in this repository, so it was not merged (fetch it and consolidate again)",
            cell(b)
        ));
    }
    if !c.merged.is_empty() && matches!(c.outcome, "committed" | "checks-failed") {
        printer.info(&format!(
            "merged the teammates' branches: {}",
            list(c.merged.iter().map(|m| format!(
                "{} ({}, {})",
                cell(&m.branch),
                cell(m.teammate.as_deref().unwrap_or("-")),
                &m.commit[..m.commit.len().min(12)]
            )))
        ));
    }
}

/// How a consolidation ended: failed checks and conflicts are errors
/// (with `--json` too), the rest is said unless `--json`.
fn consolidation_outcome(
    printer: &Arc<Printer>,
    c: &Consolidated,
    team: &str,
    as_json: bool,
) -> Result<Exit> {
    let short = |h: &Option<String>| {
        h.as_deref()
            .map(|h| h[..h.len().min(12)].to_string())
            .unwrap_or_else(|| "-".into())
    };
    match c.outcome {
        "checks-failed" => {
            let (check, tail) = c.failed_check.clone().unwrap_or_default();
            return Err(Error::op(format!(
                "check {check:?} failed; nothing was committed:\n{tail}"
            ))
            .hint(format!(
                "fix it in the project and run `baton team consolidate {team} --retry` (it runs the checks again; -m gives a new message, --check new checks), or `--abort`"
            )));
        }
        "conflicts" => {
            let lines: Vec<String> = c
                .conflicts
                .iter()
                .map(|x| {
                    format!(
                        "  {} ({}): {}",
                        cell(&x.branch),
                        cell(x.teammate.as_deref().unwrap_or("-")),
                        cell(&x.files.join(", "))
                    )
                })
                .collect();
            let first = c.conflicts.first().map_or("BRANCH", |x| x.branch.as_str());
            return Err(Error::op(format!(
                "the teammates' branches conflict with the project's work (or with each other); nothing was merged or committed, and no branch was moved:\n{}",
                lines.join("\n")
            ))
            .hint(format!(
                "merge each into your branch yourself (`git merge {}`), resolve and commit, then `baton team consolidate {team} --retry`; or have the teammate rebase; `--abort` gives up",
                cell(first)
            )));
        }
        _ if as_json => {}
        "inspected" => printer.data(c.staged.as_deref().unwrap_or("")),
        "aborted" => printer.info(&format!(
            "consolidation aborted: the project is back at {}; what it held is saved at {}; reopened: {}",
            short(&c.commit),
            c.saved.as_deref().unwrap_or("-"),
            list(c.reopened.iter().cloned())
        )),
        "unchanged" => printer.info("nothing to commit: the consolidation is done"),
        _ => printer.info(&format!(
            "committed the team's work as {}: {}",
            short(&c.commit),
            c.message.as_deref().unwrap_or("")
        )),
    }
    Ok(Exit::Done)
}

/// `team sync`: the team's copy written to its branch.
fn sync(teams: &Teams<'_>, a: TeamIdArgs, printer: &Arc<Printer>) -> Result<Exit> {
    let s = teams.sync(&a.team)?;
    if a.json {
        return json(printer, &s);
    }
    printer.info(&format!(
        "wrote team {}'s copy to branch {} ({}: {} files, {} journal records, {} messages)",
        a.team,
        s.branch,
        &s.commit[..s.commit.len().min(12)],
        s.files,
        s.records,
        s.messages
    ));
    printer.hint(&format!(
        "share it with `git push origin {}`; another clone of the project rebuilds the team with `baton team import`",
        s.branch
    ));
    Ok(Exit::Done)
}

/// `team import`: the teams copied on a branch or commit, rebuilt here.
fn import(teams: &Teams<'_>, a: TeamImportArgs, printer: &Arc<Printer>) -> Result<Exit> {
    let (ids, from) = teams.import(&a.rev, a.team.as_deref())?;
    if a.json {
        return json(printer, &ids);
    }
    printer.info(&format!(
        "imported team(s) {} from {}",
        ids.join(", "),
        cell(&from)
    ));
    printer.hint(&format!(
        "the lead re-attaches with `baton team resume {}` (its timeout counts from this import); the members' liveness is unknown until they send a heartbeat",
        ids.first().map_or("NAME", String::as_str)
    ));
    Ok(Exit::Done)
}

/// `team complete`: the team made read-only, warning of tasks left open.
fn complete(teams: &Teams<'_>, a: TeamCompleteArgs, printer: &Arc<Printer>) -> Result<Exit> {
    let (t, open) = teams.complete(&a.team, team::LEAD, a.force)?;
    if a.json {
        return json(printer, &t);
    }
    if !open.is_empty() {
        printer.always(&format!(
            "warning: completed with {} task(s) left open, which nobody can finish now: {}",
            open.len(),
            cell(&open.join(", "))
        ));
    }
    printer.info(&format!("team {} is completed and read-only", t.id));
    Ok(Exit::Done)
}

/// `team review`: where the team stands, then its whole journal.
fn review(teams: &Teams<'_>, a: TeamIdArgs, printer: &Arc<Printer>) -> Result<Exit> {
    let p = teams.probe(&a.team)?;
    let journal = teams.journal(&a.team)?;
    if a.json {
        return json(
            printer,
            &serde_json::json!({"team": p.team, "journal": journal, "messages": p.messages}),
        );
    }
    print_probe(printer, &p);
    printer.data(&format!("journal: {} record(s)", journal.len()));
    for r in &journal {
        printer.data(&format!(
            "  {:>4}  {}  {}",
            r.seq,
            r.ts,
            cell(&serde_json::to_string(&r.event).unwrap_or_default())
        ));
    }
    Ok(Exit::Done)
}

/// `team task …`: one change to the task list, said in a line.
fn task(teams: &Teams<'_>, c: TeamTaskCommand, printer: &Arc<Printer>) -> Result<Exit> {
    let (t, json_out, said) = match c {
        TeamTaskCommand::Add(a) => {
            let current = teams.get(&a.team)?;
            let id = a.id.unwrap_or_else(|| next_task_id(&current));
            let t = teams.add_task(
                &a.team,
                &a.by.member,
                NewTask {
                    id: id.clone(),
                    title: a.title,
                    dependencies: a.after,
                },
            )?;
            (t, a.json, format!("added task {id}"))
        }
        TeamTaskCommand::Assign(a) => (
            teams.assign(&a.team, &a.by.member, &a.task, &a.to)?,
            a.json,
            format!("task {} is assigned to {}", a.task, a.to),
        ),
        TeamTaskCommand::Start(a) => (
            teams.start(&a.team, &a.by.member, &a.task)?,
            a.json,
            format!("{} started task {}", a.by.member, a.task),
        ),
        TeamTaskCommand::Block(a) => (
            teams.block(&a.team, &a.by.member, &a.task, &a.reason)?,
            a.json,
            format!("task {} is blocked: {}", a.task, a.reason),
        ),
        TeamTaskCommand::Complete(a) => (
            teams.complete_task(&a.team, &a.by.member, &a.task)?,
            a.json,
            format!("task {} is completed", a.task),
        ),
        TeamTaskCommand::Checkpoint(a) => {
            let local_status = match a.status.as_str() {
                "green" => LocalStatus::Green,
                "red" => LocalStatus::Red,
                "pending" => LocalStatus::Pending,
                other => {
                    return Err(Error::bad_input(format!(
                        "--status {other:?} is not a local status"
                    ))
                    .hint("write green, red or pending"));
                }
            };
            let t = teams.checkpoint(
                &a.team,
                &a.by.member,
                &a.task,
                &CheckpointOptions {
                    files_modified: a.files,
                    local_status,
                    git_branch: a.branch,
                    head: a.head,
                },
            )?;
            let n = t
                .task(&a.task)
                .and_then(|x| x.checkpoint.as_ref())
                .map_or(0, |c| c.checkpoint_seq);
            (t, a.json, format!("checkpoint #{n} of task {}", a.task))
        }
    };
    if json_out {
        return json(printer, &t);
    }
    printer.info(&said);
    Ok(Exit::Done)
}

/// `team msg …`: send, list or acknowledge messages.
fn msg(teams: &Teams<'_>, c: TeamMsgCommand, printer: &Arc<Printer>) -> Result<Exit> {
    match c {
        TeamMsgCommand::Send(a) => {
            let kind = MessageType::parse(&a.kind).ok_or_else(|| {
                Error::bad_input(format!("--type {:?} is not a message type", a.kind))
                    .hint(format!("write one of: {}", MessageType::NAMES))
            })?;
            let (m, new) = teams.send(
                &a.team,
                &NewMessage {
                    msg_id: a.id.unwrap_or_else(baton_engine::engine::new_uuid),
                    from: a.by.member,
                    to: a.to,
                    kind,
                    subject: a.subject,
                    body: a.body,
                },
            )?;
            if a.json {
                return json(printer, &serde_json::json!({"message": m, "new": new}));
            }
            if new {
                printer.info(&format!("sent message #{} to {}", m.seq, m.to));
            } else {
                printer.info(&format!(
                    "message {} was already sent (#{}); it is stored once",
                    m.msg_id, m.seq
                ));
            }
            Ok(Exit::Done)
        }
        TeamMsgCommand::Ls(a) => {
            let all = match &a.inbox {
                Some(name) => teams.inbox(&a.team, name, a.limit)?,
                None => teams.messages(&a.team, a.after, a.limit, a.after == 0)?,
            };
            if a.json {
                return json(printer, &all);
            }
            if all.is_empty() {
                printer.data("no messages");
            }
            for m in &all {
                printer.data(&message_line(m));
            }
            Ok(Exit::Done)
        }
        TeamMsgCommand::Ack(a) => {
            let n = teams.ack(&a.team, &a.by.member, &a.seqs)?;
            if a.json {
                return json(printer, &serde_json::json!({"acknowledged": n}));
            }
            printer.info(&format!("{} acknowledged {n} message(s)", a.by.member));
            Ok(Exit::Done)
        }
    }
}

fn teammate(spec: &str) -> Result<NewTeammate> {
    let parts: Vec<&str> = spec.split(':').collect();
    let bad = || {
        Error::bad_input(format!("--teammate {spec:?} is not NAME:ROLE[:AGENT]")).hint(format!(
            "e.g. --teammate ana:engineer:claude; roles: {}",
            Role::NAMES
        ))
    };
    if !(2..=3).contains(&parts.len()) {
        return Err(bad());
    }
    let role = Role::parse(parts[1]).ok_or_else(|| {
        Error::bad_input(format!("--teammate {spec:?}: {:?} is not a role", parts[1]))
            .hint(format!("roles: {}", Role::NAMES))
    })?;
    Ok(NewTeammate {
        name: parts[0].to_string(),
        role,
        agent: parts
            .get(2)
            .map(|a| a.to_string())
            .filter(|a| !a.is_empty()),
    })
}

/// `--task TITLE[:DEPS]`, the `i`th: id `t<i+1>`.
fn new_task(i: usize, spec: &str) -> Result<NewTask> {
    let (title, deps) = match spec.rsplit_once(':') {
        Some((t, d)) if d.split(',').all(|x| x.trim().starts_with('t')) => (t, Some(d)),
        _ => (spec, None),
    };
    Ok(NewTask {
        id: format!("t{}", i + 1),
        title: title.trim().to_string(),
        dependencies: deps
            .into_iter()
            .flat_map(|d| d.split(','))
            .map(|d| d.trim().to_string())
            .filter(|d| !d.is_empty())
            .collect(),
    })
}

fn next_task_id(t: &Team) -> String {
    (1..)
        .map(|n| format!("t{n}"))
        .find(|id| t.task(id).is_none())
        .expect("a free id")
}

fn json(printer: &Arc<Printer>, v: &impl serde::Serialize) -> Result<Exit> {
    printer.json(&serde_json::to_string(v).expect("JSON"));
    Ok(Exit::Done)
}

fn list(items: impl Iterator<Item = String>) -> String {
    let v: Vec<String> = items.collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

fn counts(c: &std::collections::BTreeMap<&'static str, usize>) -> String {
    ["pending", "in_progress", "blocked", "completed"]
        .iter()
        .map(|s| format!("{} {s}", c.get(s).copied().unwrap_or(0)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn ago(ms: Option<i64>) -> String {
    ms.map_or("never".into(), |m| format!("{} ago", team::human_ms(m)))
}

fn member_line(m: &MemberView) -> String {
    let mut s = format!(
        "  {:<12} {:<11} {:<9} last seen {}",
        cell(&m.name),
        cell(&m.role),
        m.liveness.as_str(),
        ago(m.silent_ms)
    );
    if let Some(t) = &m.current_task {
        s.push_str(&format!("  task {}", cell(t)));
    }
    if let Some(c) = &m.checkpoint {
        s.push_str(&format!(
            " (checkpoint #{} {} at {}{})",
            c.checkpoint_seq,
            c.local_status.as_str(),
            c.last_progress_at,
            c.head
                .as_deref()
                .map(|h| format!(", HEAD {}", cell(&h.chars().take(12).collect::<String>())))
                .unwrap_or_default()
        ));
    }
    if let Some(k) = m.clock_skew_ms {
        s.push_str(&format!(
            "  clock skew {}{} (liveness by the store's clock)",
            if k > 0 { "+" } else { "-" },
            team::human_ms(k.abs())
        ));
    }
    s
}

fn message_line(m: &Message) -> String {
    format!(
        "  #{:<5} {} -> {}  {}  {}{}",
        m.seq,
        cell(&m.from),
        cell(&m.to),
        m.kind.as_str(),
        if m.subject.is_empty() {
            String::new()
        } else {
            format!("\"{}\": ", cell(&m.subject))
        },
        cell(&m.body)
    )
}

fn print_probe(printer: &Arc<Printer>, p: &Probe) {
    let t = &p.team;
    printer.data(&format!(
        "team {}  {}  lead session {}",
        cell(t.id.as_str()),
        t.status.as_str(),
        cell(t.lead.as_ref().map_or("-", |l| l.session_id.as_str()))
    ));
    printer.data(&format!(
        "lead: {}, last seen {}",
        p.lead.liveness.as_str().replace('_', " "),
        ago(p.lead.silent_ms)
    ));
    if let Some(at) = t.lead_timeout_detected_at {
        printer.data(&format!(
            "zombie mode since {at}: the lead timed out, the teammates go on"
        ));
    }
    printer.data("teammates:");
    for m in &p.teammates {
        printer.data(&member_line(m));
    }
    printer.data(&format!("tasks: {}", counts(&p.tasks_by_status)));
    for x in &t.tasks {
        printer.data(&format!(
            "  {:<6} {:<11} {:<10} {}{}",
            cell(&x.id),
            x.status.as_str(),
            cell(x.assigned_to.as_deref().unwrap_or("-")),
            cell(&x.title),
            if x.dependencies.is_empty() {
                String::new()
            } else {
                format!("  (after {})", cell(&x.dependencies.join(", ")))
            }
        ));
    }
    for (f, now) in &p.facts_changed {
        printer.always(&format!(
            "warning: fact {} {} since the team recorded it",
            cell(f),
            if now.is_some() { "changed" } else { "is gone" }
        ));
    }
    printer.data(&format!(
        "messages: {} ({}{} unread by the lead); the last ones:",
        p.messages,
        p.unread_for_lead,
        if p.unread_for_lead_more { "+" } else { "" }
    ));
    for m in &p.last_messages {
        printer.data(&message_line(m));
    }
    printer.data(&format!(
        "last activity {}{}",
        p.last_activity,
        p.next_checkpoint
            .map(|c| format!("; next checkpoint due {c}"))
            .unwrap_or_default()
    ));
}
