//! `baton session …`: list and show session logs, continue one as a task,
//! codify one into a workflow. What agents wrote is escaped in the
//! human-readable views, and each block of a log shown is clipped to a
//! preview (`--json` has it all).

use super::{Result, driving_engine, engine, run::report};
use crate::cli::{
    SessionCodifyArgs, SessionCommand, SessionLearnArgs, SessionLsArgs, SessionQueryArgs,
    SessionResumeArgs, SessionShowArgs,
};
use crate::printer::{Printer, cell, clipped};
use baton_core::Exit;
use baton_core::session_log::index::Query;
use baton_core::session_log::{self, LogStatus, codify};
use baton_engine::sessions::{Refined, SessionResume, write_draft, write_workflow};
use baton_engine::{Engine, Error, Project};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub fn run(project: &Project, cmd: SessionCommand, printer: &Arc<Printer>) -> Result<Exit> {
    match cmd {
        SessionCommand::Ls(a) => ls(project, a, printer),
        SessionCommand::Show(a) => show(project, a, printer),
        SessionCommand::Resume(a) => resume(project, a, printer),
        SessionCommand::Query(a) => query(project, a, printer),
        SessionCommand::Learn(a) => learn(project, a, printer),
        SessionCommand::Plan(a) => plan(project, a, printer),
        SessionCommand::Codify(a) => codify_session(project, a, printer),
    }
}

/// `session ls`: one line per session log.
fn ls(project: &Project, a: SessionLsArgs, printer: &Arc<Printer>) -> Result<Exit> {
    let eng = engine(project, printer)?;
    let rows = eng.sessions()?;
    if a.json {
        printer.json(&serde_json::to_string(&rows).expect("json"));
        return Ok(Exit::Done);
    }
    if rows.is_empty() {
        printer.data("no session logs yet (every task writes one to .baton/sessions/)");
        return Ok(Exit::Done);
    }
    for r in &rows {
        printer.data(&format!(
            "{:<28} {:<9} {:<20} {:>8} tok  {}  {}",
            cell(&r.session_id),
            cell(&r.status),
            cell(r.started.as_deref().map_or("-", first_19)),
            r.tokens_used,
            if r.participants.is_empty() {
                "-".to_string()
            } else {
                cell(&r.participants.join(","))
            },
            cell(&r.phases.join(" → "))
        ));
    }
    Ok(Exit::Done)
}

/// `session show`: the log, each block clipped (whole with `--json`).
fn show(project: &Project, a: SessionShowArgs, printer: &Arc<Printer>) -> Result<Exit> {
    let eng = engine(project, printer)?;
    let (log, path) = eng.session_log(&a.session)?;
    if a.json {
        let v = serde_json::json!({
            "path": path,
            "front": log.front,
            "title": log.title,
            "phases": session_log::phases(&log),
            "sections": log.sections,
        });
        printer.json(&v.to_string());
    } else {
        let shown = session_log::render(&clipped_log(log));
        printer.data(&baton_core::text::escape(shown.trim_end()));
    }
    Ok(Exit::Done)
}

/// `session resume`: the log continued as a task, driven here.
fn resume(project: &Project, a: SessionResumeArgs, printer: &Arc<Printer>) -> Result<Exit> {
    let eng = driving_engine(project, printer)?;
    let (id, outcome) = eng.resume_session(
        &a.session,
        SessionResume {
            workflow: a.workflow,
            id: a.id,
            agent: a.agent,
            run_commands: a.run_commands,
        },
    )?;
    Ok(report(&eng, &id, outcome, printer))
}

/// `session query`: the sessions of the index that match, the filters
/// checked first.
fn query(project: &Project, a: SessionQueryArgs, printer: &Arc<Printer>) -> Result<Exit> {
    let eng = engine(project, printer)?;
    if let Some(s) = &a.status
        && LogStatus::parse(s).is_none()
    {
        return Err(
            Error::bad_input(format!("--status {s}: no such status")).hint(
                "use active, completed, failed or paused, or crashed (a task whose runner died)",
            ),
        );
    }
    for (flag, v) in [("--since", &a.since), ("--until", &a.until)] {
        if let Some(v) = v
            && !v.starts_with(|c: char| c.is_ascii_digit())
        {
            return Err(
                Error::bad_input(format!("{flag} {v}: not a time or a date"))
                    .hint("give an RFC 3339 time or a date, e.g. 2026-11-20"),
            );
        }
    }
    let rows = eng.query_sessions(&Query {
        status: a.status,
        agent: a.agent,
        since: a.since,
        until: a.until,
        text: a.text,
    })?;
    if a.json {
        printer.json(&serde_json::to_string(&rows).expect("json"));
        return Ok(Exit::Done);
    }
    if rows.is_empty() {
        printer.data("no session matches");
    }
    for r in &rows {
        printer.data(&format!(
            "{:<28} {:<9} {:<20} {:>8} tok  {:>2} open  {}  {}",
            cell(&r.id),
            cell(&r.status),
            cell(first_19(&r.started)),
            r.tokens,
            r.open_items,
            cell(&r.phases),
            cell(&r.title)
        ));
    }
    Ok(Exit::Done)
}

/// `session learn`: the log's corrections as JSON Lines, appended to
/// `--output` or printed.
fn learn(project: &Project, a: SessionLearnArgs, printer: &Arc<Printer>) -> Result<Exit> {
    if a.kind != "puzzle" {
        return Err(
            Error::bad_input(format!("--type {}: no such kind of case", a.kind))
                .hint("use --type puzzle"),
        );
    }
    let chat = match a.format.as_str() {
        "records" => false,
        "chat" => true,
        other => {
            return Err(
                Error::bad_input(format!("--format {other}: no such format"))
                    .hint("use --format records or --format chat"),
            );
        }
    };
    let eng = engine(project, printer)?;
    let (log, _) = eng.session_log(&a.session)?;
    let cases = session_log::corrections(&log);
    let lines: Vec<String> = cases
        .iter()
        .map(|c| learn_line(&log, c, chat).to_string())
        .collect();
    match &a.output {
        Some(path) => {
            use std::io::Write;
            let mut f = fs_err::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)?;
            for l in &lines {
                writeln!(f, "{l}")?;
            }
            f.sync_all()?;
            printer.info(&format!(
                "wrote {} case(s) to {}",
                lines.len(),
                path.display()
            ));
        }
        None => {
            for l in &lines {
                printer.json(l);
            }
        }
    }
    if cases.is_empty() {
        printer.info("the log has no [!error] or [!user] callouts: no cases");
    }
    Ok(Exit::Done)
}

/// `session plan`: the session's tokens per phase, in parts, each phase
/// routed.
fn plan(project: &Project, a: SessionShowArgs, printer: &Arc<Printer>) -> Result<Exit> {
    let eng = engine(project, printer)?;
    let plan = eng.plan_session(&a.session)?;
    if a.json {
        printer.json(&serde_json::to_string(&plan).expect("json"));
        return Ok(Exit::Done);
    }
    printer.data(&format!(
        "{} tokens (o200k_base); split at {}: {} part(s)",
        plan.total,
        plan.threshold,
        plan.parts.len()
    ));
    for (n, part) in plan.parts.iter().enumerate() {
        let size: u64 = part.iter().map(|p| p.tokens).sum();
        printer.data(&format!("part {} ({size} tokens)", n + 1));
        for p in part {
            printer.data(&format!(
                "  {:<24} {:>8} tok  {:<6} {}  ({})",
                cell(&p.phase),
                p.tokens,
                p.route,
                cell(p.to.as_deref().unwrap_or("-")),
                cell(&p.why)
            ));
        }
    }
    Ok(Exit::Done)
}

/// `session codify`: a workflow drafted from the log (phases chosen with
/// `--interactive`, refined by an agent with `--refine`), written, then
/// said where it is and how to run it.
fn codify_session(project: &Project, a: SessionCodifyArgs, printer: &Arc<Printer>) -> Result<Exit> {
    let eng = engine(project, printer)?;
    let (log, _) = eng.session_log(&a.session)?;
    let name = a
        .output
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut draft = codify::draft(&log, &name);
    if a.interactive {
        draft = choose_phases(draft, printer)?;
    }
    let path = match &a.refine {
        None => write_draft(&eng, &draft, Some(&a.output))?,
        Some(agent) => refine_and_write(&eng, &draft, &name, agent, &a.output, printer)?,
    };
    report_codified(&eng, &path, &name, &draft, printer);
    Ok(Exit::Done)
}

/// `--refine AGENT`: the draft as the agent refined it, or the draft itself
/// when it kept it, written to `output`.
fn refine_and_write(
    eng: &Engine,
    draft: &codify::Draft,
    name: &str,
    agent: &str,
    output: &Path,
    printer: &Printer,
) -> Result<PathBuf> {
    let agents: Vec<String> = eng.project.config.agents.keys().cloned().collect();
    let text = codify::to_toml(draft, &agents);
    printer.info(&format!("asking {agent} to refine the draft"));
    Ok(match eng.refine_workflow(&text, name, agent)? {
        (task, Refined::Workflow(refined)) => {
            printer.info(&format!("{agent} refined it (task {task})"));
            write_workflow(eng, name, &refined, output)?
        }
        (task, Refined::Kept(why)) => {
            printer.info(&format!("kept the draft: {why} (task {task})"));
            write_draft(eng, draft, Some(output))?
        }
    })
}

/// Says which phases the codified workflow at `path` has, and how to run
/// it: from where it is, or once copied where `baton run` looks.
fn report_codified(
    eng: &Engine,
    path: &Path,
    name: &str,
    draft: &codify::Draft,
    printer: &Printer,
) {
    // What was written (the draft, or the agent's refined one).
    let wf = fs_err::read_to_string(path).ok().and_then(|text| {
        baton_core::workflow::Workflow::parse(&text, "", name, &|f| {
            std::fs::read_to_string(eng.project.baton_dir().join(f)).map_err(|e| e.to_string())
        })
        .ok()
    });
    let phases: Vec<String> = match &wf {
        Some(w) => w.phases.iter().map(|p| p.id.to_string()).collect(),
        None => draft.phases.iter().map(|p| p.id.clone()).collect(),
    };
    printer.info(&format!(
        "wrote {} with {} phase{}: {}",
        path.display(),
        phases.len(),
        if phases.len() == 1 { "" } else { "s" },
        phases.join(", ")
    ));
    // `baton run NAME` reads .baton/workflows/NAME.toml: a file
    // written elsewhere runs once it is there.
    let home = eng.project.workflows_dir().join(format!("{name}.toml"));
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if same(path, &home) {
        printer.hint(&format!("run it with `baton run {name} \"…\"`"));
    } else {
        let what = if home.exists() {
            format!(
                "; {} is another workflow of that name, which this would replace",
                home.display()
            )
        } else {
            String::new()
        };
        printer.hint(&format!(
            "`baton run` finds workflows in {}: copy it there (`cp {} {}`), then run it with `baton run {name} \"…\"`{what}",
            eng.project.workflows_dir().display(),
            path.display(),
            home.display()
        ));
    }
}

/// The first 19 characters of a time (`2026-11-20T10:00:00`).
fn first_19(s: &str) -> &str {
    s.char_indices().nth(19).map_or(s, |(at, _)| &s[..at])
}

/// A log as `session show` prints it: each block of it (a passage of
/// prose, a tool line, a callout) clipped to a preview.
fn clipped_log(mut log: session_log::SessionLog) -> session_log::SessionLog {
    use session_log::Block;
    let clip = |s: &mut String| {
        if let std::borrow::Cow::Owned(c) = clipped(s) {
            *s = c;
        }
    };
    clip(&mut log.title);
    for b in log
        .intro
        .iter_mut()
        .chain(log.sections.iter_mut().flat_map(|s| s.blocks.iter_mut()))
    {
        match b {
            Block::Prose(p) => clip(p),
            Block::ToolCalls(calls) => {
                for c in calls {
                    clip(&mut c.call);
                    if let Some(r) = &mut c.result {
                        clip(r);
                    }
                }
            }
            Block::Callout(c) => {
                clip(&mut c.title);
                let mut body = c.body.join("\n");
                clip(&mut body);
                c.body = body.lines().map(str::to_string).collect();
            }
        }
    }
    log
}

/// One learning case as JSON: a puzzle record, or a chat for fine-tuning.
fn learn_line(
    log: &session_log::SessionLog,
    c: &session_log::Correction,
    chat: bool,
) -> serde_json::Value {
    if !chat {
        return serde_json::json!({
            "type": "puzzle",
            "session": log.front.session_id,
            "task": log.title,
            "phase": c.phase,
            "context": c.context,
            "what_went_wrong": c.error,
            "correction": c.correction,
            "outcome": c.outcome,
            "occurrences": c.occurrences,
        });
    }
    let mut user = format!("Task: {}\nPhase: {}\n", log.title, c.phase);
    if !c.context.is_empty() {
        user.push_str(&format!("\nSo far:\n{}\n", c.context));
    }
    if let Some(e) = &c.error {
        user.push_str(&format!("\nWhat went wrong:\n{e}\n"));
        if c.occurrences > 1 {
            user.push_str(&format!("(This happened {} times.)\n", c.occurrences));
        }
    }
    user.push_str("\nWhat should be done next?");
    let mut answer = c.correction.clone().unwrap_or_default();
    if let Some(o) = &c.outcome {
        if !answer.is_empty() {
            answer.push_str("\n\n");
        }
        answer.push_str(&format!("Outcome: {o}"));
    }
    serde_json::json!({"messages": [
        {"role": "system", "content": "You are a coding agent. Learn from the corrections people made to earlier sessions."},
        {"role": "user", "content": user},
        {"role": "assistant", "content": answer},
    ]})
}

/// `--interactive`: each phase kept (Enter), renamed (`r NEW-ID`) or
/// dropped (`d`), read a line at a time from stdin.
fn choose_phases(mut draft: codify::Draft, printer: &Printer) -> Result<codify::Draft> {
    use std::io::BufRead;
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let total = draft.phases.len();
    let mut kept = Vec::new();
    let mut renamed: Vec<(String, String)> = Vec::new();
    for (n, mut p) in std::mem::take(&mut draft.phases).into_iter().enumerate() {
        loop {
            printer.always(&format!(
                "phase {}/{total}: {} (from \"{}\"{}{}) — Enter keeps it, r NEW-ID renames it, d drops it",
                n + 1,
                p.id,
                p.heading,
                p.agent.as_deref().map(|a| format!(", @{a}")).unwrap_or_default(),
                p.loop_to
                    .as_ref()
                    .map(|(to, _)| format!(", loops to {to}"))
                    .unwrap_or_default()
            ));
            let answer = match lines.next() {
                Some(l) => l.map_err(|e| Error::op(format!("cannot read the answer: {e}")))?,
                // Input ended: the rest are kept as drafted.
                None => String::new(),
            };
            let answer = answer.trim();
            if answer.is_empty() || answer == "y" {
                kept.push(p);
                break;
            }
            if answer == "d" {
                break;
            }
            if let Some(new) = answer.strip_prefix("r ").map(str::trim) {
                let id = codify::phase_id(new);
                if id != new {
                    printer.always(&format!(
                        "{new:?} is not a phase id ([a-z0-9-]); say r {id} to take that"
                    ));
                    continue;
                }
                renamed.push((std::mem::replace(&mut p.id, id.clone()), id));
                kept.push(p);
                break;
            }
            printer.always("answer with Enter, r NEW-ID or d");
        }
    }
    // A loop back follows its phase's new name, and goes with it.
    let ids: Vec<String> = kept.iter().map(|p| p.id.clone()).collect();
    for p in &mut kept {
        if let Some((to, _)) = p.loop_to.as_mut()
            && let Some((_, new)) = renamed.iter().find(|(old, _)| old == to)
        {
            *to = new.clone();
        }
        if p.loop_to.as_ref().is_some_and(|(to, _)| !ids.contains(to)) {
            p.loop_to = None;
        }
    }
    if kept.is_empty() {
        return Err(
            Error::bad_input("every phase was dropped: there is no workflow to write")
                .hint("keep at least one phase"),
        );
    }
    draft.phases = kept;
    Ok(draft)
}
