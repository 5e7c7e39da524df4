//! `baton ls`, `baton show`, `baton log`: read-only views of the store.

use super::{Result, engine, task_id};
use crate::cli::{LogArgs, LsArgs, ShowArgs};
use crate::printer::{Printer, cell};
use baton_core::Exit;
use baton_core::lease::{DisplayStatus, Liveness};
use baton_core::state::PhaseStatus;
use baton_engine::Project;
use serde_json::json;
use std::sync::Arc;

pub fn ls(project: &Project, args: LsArgs, printer: &Arc<Printer>) -> Result<Exit> {
    let eng = engine(project, printer)?;
    let all = eng.list()?;
    let total = all.len();
    let unknown = eng.unknown_task_folders(&all.iter().map(|(t, _)| t.id.as_str()).collect());
    let shown: Vec<_> = all
        .into_iter()
        .filter(|(_, d)| {
            args.all || !matches!(d, DisplayStatus::Complete | DisplayStatus::Cancelled)
        })
        .collect();
    if args.json {
        let rows: Vec<_> = shown
            .iter()
            .map(|(t, d)| {
                json!({
                    "id": t.id,
                    "workflow": t.workflow,
                    "description": t.description,
                    "status": d.as_str(),
                    "last_phase": t.last_phase,
                    "created_at": t.created_at.rfc3339(),
                    "updated_at": t.updated_at.rfc3339(),
                    "resumable": d.resumable(),
                    "queued": t.queued,
                    "owner": t.lease.as_ref().filter(|_| *d == DisplayStatus::Running).map(|l| json!({"host": l.owner.host, "pid": l.owner.pid})),
                })
            })
            .collect();
        printer.json(&serde_json::to_string(&rows).expect("json"));
        unknown_folders(&unknown, printer);
        return Ok(Exit::Done);
    }
    if shown.is_empty() {
        printer.info(if total > 0 {
            "no unfinished tasks"
        } else if unknown.is_empty() {
            "no tasks yet; start one with `baton run WORKFLOW \"what to do\"`"
        } else {
            "the store holds no tasks"
        });
    } else {
        let mut lines = vec![format!(
            "{:<28} {:<12} {:<10} {:<14} {:<20} RESUMABLE",
            "ID", "WORKFLOW", "STATUS", "PHASE", "UPDATED"
        )];
        for (t, d) in &shown {
            lines.push(format!(
                "{:<28} {:<12} {:<10} {:<14} {:<20} {}",
                t.id.as_str(),
                cell(&t.workflow),
                d.as_str(),
                cell(t.last_phase.as_deref().unwrap_or("-")),
                t.updated_at
                    .rfc3339()
                    .get(..19)
                    .unwrap_or("")
                    .replace('T', " "),
                match d {
                    DisplayStatus::Waiting => waiting_note(&eng, &t.id),
                    d if d.resumable() && t.queued => "yes: baton resume --queue".to_string(),
                    d if d.resumable() => "yes: baton resume".to_string(),
                    _ => "-".to_string(),
                }
            ));
        }
        printer.data(&lines.join("\n"));
    }
    let hidden = total - shown.len();
    if hidden > 0 && !args.all {
        printer.info(&format!(
            "({hidden} complete or cancelled task(s) hidden; --all shows them)"
        ));
    }
    unknown_folders(&unknown, printer);
    Ok(Exit::Done)
}

/// Task folders in `.baton/tasks/` the store does not know (it was emptied
/// or replaced): said on stderr, with the way back.
fn unknown_folders(unknown: &[String], printer: &Printer) {
    if unknown.is_empty() {
        return;
    }
    let named: Vec<String> = unknown.iter().take(5).map(|f| cell(f)).collect();
    printer.always(&format!(
        "{} task folder(s) in .baton/tasks/ hold tasks the store does not know: {}{}",
        unknown.len(),
        named.join(", "),
        if unknown.len() > named.len() {
            ", …"
        } else {
            ""
        }
    ));
    printer.hint("`baton doctor --fix` rebuilds them from their folders into the store");
}

/// The last column of `ls` for a WAITING task: what it waits for.
fn waiting_note(eng: &baton_engine::Engine, id: &baton_core::TaskId) -> String {
    let what = eng.load(id).ok().and_then(|snap| {
        let w = snap.state.waiting_phase()?.waiting.clone()?;
        Some(match w.due_at {
            Some(due) => format!("{}, due {}", w.description, due),
            None => w.description,
        })
    });
    let what = what.unwrap_or_else(|| "see `baton show`".into());
    let short: String = what.chars().take(60).collect();
    if short.len() < what.len() {
        format!("waiting: {}…", cell(&short))
    } else {
        format!("waiting: {}", cell(&short))
    }
}

pub fn show(project: &Project, args: ShowArgs, printer: &Arc<Printer>) -> Result<Exit> {
    let eng = engine(project, printer)?;
    let id = task_id(project, args.id.as_deref())?;
    let snap = eng.load(&id)?;
    // Reading never needs to write: files that cannot be rendered again
    // here (a read-only folder) are said, and the store shown all the same.
    match eng.repair_rendered(&snap) {
        Ok(true) if !args.json => printer.info(&format!(
            "re-rendered the files of task {id} from the store"
        )),
        Ok(_) => {}
        Err(e) => printer.info(&format!(
            "note: the files of task {id} are out of date and could not be rendered again: {}",
            e.message
        )),
    }
    let doc = eng.document(&snap)?;
    if args.json {
        printer.json(&serde_json::to_string_pretty(&doc).expect("json"));
        return Ok(Exit::Done);
    }
    let st = &snap.state;
    let status = eng.status_of(&snap);
    let mut out = vec![
        format!("task      {}", st.task_id),
        format!("workflow  {}", cell(&st.workflow)),
        format!("status    {}", printer.status_word(status.as_str())),
    ];
    if !st.description.is_empty() {
        out.push(format!("about     {}", cell(&st.description)));
    }
    out.push(format!(
        "created   {}   updated {}",
        st.created_at, st.updated_at
    ));
    if let (DisplayStatus::Running, Some(l)) = (status, &snap.lease) {
        out.push(format!("runner    {}", cell(&l.owner.describe())));
    }
    if let (DisplayStatus::Crashed, Liveness::Dead(why)) =
        (status, eng.liveness(snap.lease.as_ref()))
    {
        out.push(format!("crash     {}", cell(&why)));
    }
    out.push(String::new());
    for p in &st.phases {
        let mark = match p.status {
            PhaseStatus::Pass => "✓",
            PhaseStatus::Failed => "✗",
            PhaseStatus::Skipped => "-",
            PhaseStatus::InProgress => "▶",
            PhaseStatus::Waiting => "…",
            PhaseStatus::Pending => " ",
        };
        let mut line = format!("  {mark} {:<16} {:<11}", p.id.as_str(), p.status.as_str());
        if p.attempt > 1 {
            line.push_str(&format!(" attempt {}", p.attempt));
        }
        if let Some(n) = st.iteration_counts.get(p.id.as_str()) {
            line.push_str(&format!(" loops {n}"));
        }
        let note = match p.status {
            PhaseStatus::Pass => p
                .summary
                .as_deref()
                .and_then(|s| s.lines().next())
                .unwrap_or(""),
            PhaseStatus::Failed => p.last_error.as_deref().unwrap_or(""),
            PhaseStatus::Waiting => p
                .waiting
                .as_ref()
                .map(|w| w.description.as_str())
                .unwrap_or(""),
            _ => "",
        };
        if !note.is_empty() {
            let short: String = note.chars().take(80).collect();
            line.push_str(&format!("  {}", cell(&short)));
        }
        out.push(line);
        // Its agent: which CLI session, and what it used.
        if let Some(r) = p.agent_runs.last() {
            let u = p.usage();
            // A generic agent (`command = [...]`) has no native session.
            let session = match r.session.native_id.as_str() {
                "" => String::new(),
                id => format!(" session {}", cell(id)),
            };
            out.push(format!(
                "      {} ({}){session}{}",
                cell(&r.session.agent),
                cell(&r.session.cli),
                if u.is_empty() {
                    String::new()
                } else {
                    format!(" · {}", usage_words(&u))
                }
            ));
        }
    }
    let total = st.usage();
    if !total.is_empty() {
        out.push(String::new());
        out.push(format!("usage     {}", usage_words(&total)));
    }
    let history = baton_core::document::cli_history(st);
    if history.len() > 1 || st.agent.is_some() {
        let names: Vec<String> = history
            .iter()
            .map(|h| format!("{} ({})", cell(h.agent), cell(h.cli)))
            .collect();
        if !names.is_empty() {
            out.push(format!("agents    {}", names.join(" → ")));
        }
    }
    if let Some(f) = &st.failure {
        out.push(String::new());
        out.push(format!("failure   {}", cell(f)));
    }
    // Events that came before their stage, kept for it.
    if let Some(kept) = doc["buffered_events"].as_array() {
        out.push(String::new());
        for k in kept {
            let s = |key: &str| k[key].as_str().unwrap_or("").to_string();
            out.push(format!(
                "kept for {}: {} (delivery {}, received {}, until {})",
                cell(&s("phase")),
                cell(&s("event")),
                cell(&s("delivery")),
                s("received_at"),
                s("expires_at")
            ));
        }
    }
    if status == DisplayStatus::Waiting {
        if let Some(w) = st.waiting_phase().and_then(|p| p.waiting.as_ref()) {
            out.push(String::new());
            out.push(match w.due_at {
                Some(due) => format!(
                    "waits for {} (due at {due}); then `baton resume {id}`",
                    cell(&w.description)
                ),
                None => format!("waits for {}", cell(&w.description)),
            });
        }
    } else if status.resumable() && snap.queued {
        out.push(String::new());
        out.push(format!(
            "hand it back to the workers with `baton resume {id} --queue`, or run it here with `baton resume {id}`"
        ));
    } else if status.resumable() {
        out.push(String::new());
        out.push(format!("resume with `baton resume {id}`"));
    }
    printer.data(&out.join("\n"));
    Ok(Exit::Done)
}

pub fn log(project: &Project, args: LogArgs, printer: &Arc<Printer>) -> Result<Exit> {
    let eng = engine(project, printer)?;
    let id = task_id(project, args.id.as_deref())?;
    eng.load(&id)?;
    let mut after = 0;
    // With --follow (not --json): where in the phases' output we are.
    let mut output = args
        .follow
        .then(baton_engine::engine::OutputCursor::default)
        .filter(|_| !args.json);
    let mut first = true;
    loop {
        let events = eng.events(&id, after, 1000)?;
        // Read after the journal: an attempt the journal says ended has
        // all of its output on disk by now. The first look's journal is
        // history: only the running phase's recent lines are shown.
        let (mut ended, mut running) = (Vec::new(), Vec::new());
        if let Some(cursor) = output.as_mut() {
            let seen: &[baton_core::EventRecord] = if first { &[] } else { &events };
            let read = eng.phase_output(&eng.load(&id)?, cursor, seen)?;
            *cursor = read.cursor.clone();
            for line in read.lines {
                if line.attempt == cursor.attempt && read.running.is_some() {
                    running.push(line);
                } else {
                    ended.push(line);
                }
            }
        }
        first = false;
        // An ended attempt's lines go before the event that ended it; any
        // whose end is not in this batch yet, after the batch.
        let mut at_end: Vec<(usize, Vec<baton_engine::engine::OutputLine>)> = Vec::new();
        let mut after_batch = Vec::new();
        let mut placed = vec![false; events.len()];
        while let Some(l) = ended.first() {
            let attempt = l.attempt.clone();
            let group: Vec<_> = ended
                .iter()
                .filter(|x| x.attempt == attempt)
                .cloned()
                .collect();
            ended.retain(|x| x.attempt != attempt);
            let number = attempt
                .rsplit_once(".a")
                .and_then(|(_, n)| n.parse::<u32>().ok());
            let end = events.iter().enumerate().position(|(i, r)| {
                !placed[i]
                    && matches!(
                        r.event,
                        baton_core::Event::PhasePassed { .. }
                            | baton_core::Event::PhaseFailed { .. }
                            | baton_core::Event::PhaseInterrupted { .. }
                    )
                    && r.event
                        .phase()
                        .is_some_and(|p| p.as_str() == group[0].phase)
                    && r.event.attempt() == number
            });
            match end {
                Some(i) => {
                    placed[i] = true;
                    at_end.push((i, group));
                }
                None => after_batch.extend(group),
            }
        }
        for (i, r) in events.iter().enumerate() {
            for (_, group) in at_end.iter().filter(|(at, _)| *at == i) {
                print_output(printer, group);
            }
            after = r.seq;
            if args.json {
                let v = baton_core::document::journal_line(id.as_str(), r);
                printer.json(&serde_json::to_string(&v).expect("json"));
            } else if let baton_core::Event::AgentActivity { phase, events, .. } = &r.event {
                // One line per thing the agent did.
                for e in events {
                    printer.data(&format!(
                        "{:>5}  {}  {:<18} {phase}: {}",
                        r.seq,
                        r.ts,
                        "agent",
                        cell(&e.describe())
                    ));
                }
            } else {
                printer.data(&format!(
                    "{:>5}  {}  {:<18} {}",
                    r.seq,
                    r.ts,
                    r.event.kind(),
                    cell(&describe(&r.event))
                ));
            }
        }
        print_output(printer, &after_batch);
        print_output(printer, &running);
        if printer.stdout_gone() {
            // Nobody reads any more (`baton log --follow | head`).
            break;
        }
        if events.len() == 1000 {
            continue;
        }
        if !args.follow {
            break;
        }
        let snap = eng.load(&id)?;
        let d = eng.status_of(&snap);
        if d != DisplayStatus::Running && eng.events(&id, after, 1)?.is_empty() {
            if let Some(cursor) = output.as_mut() {
                // What the last phase printed after the last look.
                let read = eng.phase_output(&snap, cursor, &[])?;
                print_output(printer, &read.lines);
            }
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    Ok(Exit::Done)
}

/// Lines a phase printed, as `log --follow` shows them: no journal seq,
/// the time they were read, whose they are, escaped.
fn print_output(printer: &Printer, lines: &[baton_engine::engine::OutputLine]) {
    if lines.is_empty() {
        return;
    }
    let now = baton_core::Timestamp(jiff::Timestamp::now().as_millisecond());
    for l in lines {
        printer.data(&format!(
            "{:>5}  {now}  {:<18} {}: {}",
            "·",
            l.stream,
            l.phase,
            cell(&l.text)
        ));
    }
}

/// Tokens and cost in words: "1200 tokens in, 300 out, $0.0123".
fn usage_words(u: &baton_core::state::Usage) -> String {
    format!(
        "{} tokens in, {} out{}",
        u.input_tokens,
        u.output_tokens,
        u.cost_usd.map(|c| format!(", ${c:.4}")).unwrap_or_default()
    )
}

/// One thing an agent did, on one line.
fn describe(e: &baton_core::Event) -> String {
    use baton_core::Event::*;
    match e {
        TaskCreated {
            workflow,
            description,
            ..
        } => format!("workflow {workflow}: {description}"),
        Claimed { owner, command } => format!("{owner} ({command})"),
        PhaseStarted {
            phase,
            attempt,
            iteration,
            ..
        } => format!("{phase} attempt {attempt} iteration {iteration}"),
        PhaseProcess { phase, process, .. } => format!("{phase} pid {}", process.pid),
        PhaseExited { phase, exit, .. } => match (exit.code, exit.signal) {
            (Some(c), _) => format!("{phase} exit code {c}"),
            (None, Some(s)) => format!("{phase} killed by signal {s}"),
            (None, None) => format!("{phase} ended"),
        },
        AgentSession { phase, session, .. } => format!(
            "{phase} {}{} ({}{}, {}) in {}",
            session.agent,
            match session.native_id.as_str() {
                "" => String::new(),
                id => format!(" session {id}"),
            },
            session.cli,
            session
                .version
                .as_deref()
                .map(|v| format!(" {v}"))
                .unwrap_or_default(),
            match session.start {
                baton_core::state::SessionStart::New => "new",
                baton_core::state::SessionStart::Resumed => "continued natively",
                baton_core::state::SessionStart::Brief => "new, given the brief",
            },
            session.cwd
        ),
        AgentActivity { phase, events, .. } => format!("{phase}: {} event(s)", events.len()),
        AgentEnded {
            phase, exit_code, ..
        } => format!(
            "{phase}: the agent exited {}",
            exit_code.map_or("on a signal".to_string(), |c| c.to_string())
        ),
        Imported {
            session, events, ..
        } => format!(
            "{} session {} from {} ({} event(s))",
            session.cli,
            session.native_id,
            session.cwd,
            events.len()
        ),
        AgentSwitched { from, to, reason } => format!(
            "{} → {to} ({reason})",
            from.as_deref().unwrap_or("the workflow's agents")
        ),
        PhasePassed { phase, summary, .. } => {
            format!("{phase}: {}", summary.lines().next().unwrap_or(""))
        }
        PhaseFailed {
            phase,
            error,
            retry,
            ..
        } => format!(
            "{phase}: {error}{}",
            if *retry { " (will retry)" } else { "" }
        ),
        PhaseSkipped { phase, reason } => format!("{phase}: {reason}"),
        PhaseWaiting {
            phase, description, ..
        } => format!("{phase} waits for {description}"),
        EventArrived {
            phase,
            event,
            delivery,
            facts,
        } => {
            let said: Vec<String> = facts.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!(
                "{phase}: {event} arrived (delivery {delivery}) {}",
                said.join(" ")
            )
        }
        PhaseInterrupted {
            phase,
            attempt,
            reason,
        } => format!("{phase} attempt {attempt}: {reason}"),
        LoopedBack {
            from,
            to,
            iteration,
            ..
        } => format!("{from} → {to} (iteration {iteration})"),
        Rewound { to, reset } => format!("to {to} ({} phase(s) reset)", reset.len()),
        TaskResumed { note, .. } => note.clone(),
        DefinitionUpgraded { added, removed, .. } => {
            format!("added {added:?}, removed {removed:?}")
        }
        Adopted { source, phases, .. } => format!("{source}: {} phase(s)", phases.len()),
        TaskCompleted => String::new(),
        TaskFailed { reason, .. } | TaskCancelled { reason } => reason.clone(),
        Note { text, .. } => text.clone(),
        Answered { phase, answer, by } => format!("{phase}: {by} answered {answer:?}"),
        AutoRestarted { reason } => format!("restarted by the supervisor: {reason}"),
        RestartsExhausted { reason } => format!("not restarted again: {reason}"),
    }
}
