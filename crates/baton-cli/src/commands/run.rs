//! `baton run`, `baton resume`, `baton fork`: drive a task and turn how it
//! ended into an exit code.

use super::{Result, driving_engine, task_id};
use crate::cli::{ForkArgs, HandoffArgs, ImportArgs, ResumeArgs, RunArgs};
use crate::printer::{Printer, cell};
use baton_core::Exit;
use baton_core::lease::DisplayStatus;
use baton_engine::{Engine, Error, Outcome, Project, ResumeOptions, RunOptions};
use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;

pub fn run(project: &Project, args: RunArgs, printer: &Arc<Printer>) -> Result<Exit> {
    let eng = driving_engine(project, printer)?;
    // A current task that crashed or failed: offer to resume it, on a
    // terminal only, and never for `--detach` (nobody is there to answer
    // once it runs in the background). A WAITING task is not offered:
    // resuming it would only report that it still waits.
    if !args.detach
        && std::io::stdin().is_terminal()
        && std::io::stderr().is_terminal()
        && args.id.is_none()
        && let Some(cur) = project.current_task()
        && let Ok(snap) = eng.load(&cur)
    {
        let status = eng.status_of(&snap);
        if matches!(status, DisplayStatus::Crashed | DisplayStatus::Failed) {
            eprint!(
                "The current task {cur} is {} at {}. Resume this task? (Y/n) ",
                status.as_str(),
                baton_store::last_phase(&snap.state).unwrap_or_else(|| "its start".into())
            );
            let _ = std::io::stderr().flush();
            let mut answer = String::new();
            let _ = std::io::stdin().lock().read_line(&mut answer);
            let a = answer.trim().to_ascii_lowercase();
            if a.is_empty() || a == "y" || a == "yes" {
                let outcome = eng.resume(
                    &cur,
                    ResumeOptions {
                        agent: args.agent.clone(),
                        ..Default::default()
                    },
                )?;
                return Ok(report(&eng, &cur, outcome, printer));
            }
        }
    }
    let opts = RunOptions {
        workflow: args.workflow,
        description: args.description.unwrap_or_default(),
        id: args.id,
        flags: args.flags,
        labels: args.labels,
        agent: args.agent,
        create_only: args.detach,
        queue: args.queue,
        imported: None,
        instance: None,
        fresh: args.fresh,
        from_log: None,
    };
    let (id, outcome) = eng.run(opts)?;
    if outcome == Outcome::Queued {
        printer.info(&format!(
            "task {id} is {}; `baton worker` runs it (here or on any machine sharing the store)",
            printer.status_word_err("QUEUED")
        ));
        printer.data(id.as_str());
        return Ok(Exit::Done);
    }
    if args.detach {
        return detach(&eng, &id, printer);
    }
    Ok(report(&eng, &id, outcome, printer))
}

/// Runs the task in the background and returns at once.
fn detach(eng: &baton_engine::Engine, id: &baton_core::TaskId, printer: &Printer) -> Result<Exit> {
    let pid = eng.detach(id)?;
    printer.info(&format!(
        "task {id} runs in the background (pid {pid}); follow it with `baton log {id} --follow`"
    ));
    printer.data(id.as_str());
    Ok(Exit::Done)
}

pub fn resume(project: &Project, args: ResumeArgs, printer: &Arc<Printer>) -> Result<Exit> {
    let eng = driving_engine(project, printer)?;
    let id = task_id(project, args.id.as_deref())?;
    if args.queue {
        let outcome = eng.requeue(&id, args.upgrade)?;
        return Ok(report(&eng, &id, outcome, printer));
    }
    if args.supervised {
        let s = project.config.supervisor.settings()?;
        let outcome = eng.supervise(&id, &s.policy, s.run_queued)?;
        return Ok(report(&eng, &id, outcome, printer));
    }
    let outcome = eng.resume(
        &id,
        ResumeOptions {
            from: args.from,
            agent: args.agent,
            handoff: false,
            upgrade: args.upgrade,
            takeover_from: args.takeover_from,
            auto_restart: None,
        },
    )?;
    let exit = report(&eng, &id, outcome, printer);
    baton_engine::instances::turn_ended(&eng, &id);
    Ok(exit)
}

pub fn handoff(project: &Project, args: HandoffArgs, printer: &Arc<Printer>) -> Result<Exit> {
    let eng = driving_engine(project, printer)?;
    let id = task_id(project, args.id.as_deref())?;
    let snap = eng.load(&id)?;
    if !eng.project.config.agents.contains_key(&args.to) {
        let known: Vec<&str> = eng
            .project
            .config
            .agents
            .keys()
            .map(String::as_str)
            .collect();
        return Err(Error::bad_input(format!(
            "no agent {:?} in .baton/config.toml",
            args.to
        ))
        .hint(if known.is_empty() {
            format!("add [agents.{}] with cli = \"codex\" (or claude, gemini, qwen, opencode, copilot, droid) to .baton/config.toml", args.to)
        } else {
            format!("its agents are: {}", known.join(", "))
        }));
    }
    match snap.state.status {
        baton_core::TaskStatus::Complete | baton_core::TaskStatus::Cancelled => {
            return Err(Error::bad_input(format!(
                "task {id} is {}: it has no phases left to hand off",
                snap.state.status.as_str()
            ))
            .hint(format!(
                "run phases again on {0} with `baton resume {id} --from PHASE --agent {0}`",
                args.to
            )));
        }
        _ => {}
    }
    let outcome = eng.resume(
        &id,
        ResumeOptions {
            agent: Some(args.to),
            handoff: true,
            ..ResumeOptions::default()
        },
    )?;
    Ok(report(&eng, &id, outcome, printer))
}

pub fn import(project: &Project, args: ImportArgs, printer: &Arc<Printer>) -> Result<Exit> {
    use baton_agents::{Cli, locate, native};
    let cli: Cli = baton_agents::by_name(&args.cli).ok_or_else(|| {
        Error::bad_input(format!("baton cannot import sessions of {:?}", args.cli)).hint(format!(
            "name the CLI that wrote the session: {}",
            baton_agents::clis::listed()
        ))
    })?;
    let eng = driving_engine(project, printer)?;
    // The user's environment, with that of an agent on this CLI (its
    // config home) on top.
    let agent_env = eng
        .project
        .config
        .agents
        .values()
        .find(|a| a.cli.is_some_and(|c| c.name() == cli.name()))
        .map(|a| a.env.clone())
        .unwrap_or_default();
    let env = |k: &str| agent_env.get(k).cloned().or_else(|| std::env::var(k).ok());
    let bad = |e: String| {
        Error::bad_input(e).hint(format!(
            "pass the session file, or the session's full id; `baton import {} --help` says where each CLI keeps them",
            cli.name()
        ))
    };
    let text = match cli.export_command(&args.session) {
        // A CLI that keeps no file per session prints it on request.
        Some(argv) => {
            let shown = argv.join(" ");
            let out = std::process::Command::new(&argv[0])
                .args(&argv[1..])
                .envs(agent_env.iter())
                .stdin(std::process::Stdio::null())
                .output()
                .map_err(|e| {
                    Error::bad_input(format!("cannot run `{shown}`: {e}")).hint(format!(
                        "install {} (npm install -g {}), or pass a file holding the export",
                        cli.title(),
                        cli.package().name
                    ))
                })?;
            if !out.status.success() {
                return Err(bad(format!(
                    "`{shown}` failed: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                )));
            }
            String::from_utf8_lossy(&out.stdout).into_owned()
        }
        None => {
            let path = locate::locate(cli, &args.session, &env).map_err(bad)?;
            fs_err::read_to_string(&path).map_err(|e| bad(e.to_string()))?
        }
    };
    let t = native::parse_transcript(cli, &text).map_err(bad)?;
    let Some(native_id) = t.native_id.clone() else {
        return Err(bad(format!(
            "the session file names no session id; is it {}?",
            cli.native_file()
        )));
    };
    if t.warnings > 0 {
        printer.info(&format!(
            "{} line(s) of the session could not be read and were left out",
            t.warnings
        ));
    }
    let cwd = t
        .cwd
        .clone()
        .unwrap_or_else(|| eng.project.root.display().to_string());
    let description = t
        .first_prompt
        .as_deref()
        .map(|p| baton_core::agent_stream::shorten(p.trim().trim_matches('"'), 200))
        .unwrap_or_else(|| format!("{} session {native_id}", cli.name()));
    printer.info(&format!(
        "importing {} session {native_id} ({} event(s), from {cwd})",
        cli.name(),
        t.events.len()
    ));
    let opts = RunOptions {
        workflow: args.workflow,
        description,
        id: args.id,
        flags: Vec::new(),
        labels: vec![format!("imported-from={}", cli.name())],
        agent: args.agent,
        create_only: false,
        queue: false,
        instance: None,
        fresh: false,
        from_log: None,
        imported: Some(baton_engine::Imported {
            session: baton_core::state::AgentSession {
                agent: cli.name().into(),
                cli: cli.name().into(),
                native_id,
                cwd,
                version: None,
                start: baton_core::state::SessionStart::New,
            },
            first_prompt: t.first_prompt,
            events: t.events,
        }),
    };
    let (id, outcome) = eng.run(opts)?;
    Ok(report(&eng, &id, outcome, printer))
}

pub fn fork(project: &Project, args: ForkArgs, printer: &Arc<Printer>) -> Result<Exit> {
    let eng = driving_engine(project, printer)?;
    let src = task_id(project, Some(&args.id))?;
    if eng
        .find(&baton_core::TaskId::parse(&args.new_id).map_err(|e| {
            Error::bad_input(e.to_string())
                .hint("task ids use letters, digits, '-', '_' and '.', e.g. --id fix-login-2")
        })?)?
        .is_some()
    {
        return Err(
            Error::bad_input(format!("a task {} already exists", args.new_id))
                .hint("pick another --id"),
        );
    }
    let (id, outcome) = eng.fork(&src, &args.from, &args.new_id)?;
    Ok(report(&eng, &id, outcome, printer))
}

/// Prints how the task ended and picks the exit code. A task that failed,
/// was cancelled or was interrupted is reported even with `--quiet`.
pub fn report(eng: &Engine, id: &baton_core::TaskId, outcome: Outcome, printer: &Printer) -> Exit {
    match &outcome {
        Outcome::Complete => printer.info(&format!(
            "task {id} is {}",
            printer.status_word_err(DisplayStatus::Complete.as_str())
        )),
        Outcome::Failed(why) => {
            printer.always(&format!(
                "task {id} {}: {}",
                printer.status_word_err("FAILED"),
                cell(why)
            ));
            printer.hint(&format!(
                "fix the cause, then `baton resume {id}` re-runs the failed phase"
            ));
        }
        Outcome::Waiting(what) => {
            printer.info(&format!(
                "task {id} is {}: {}",
                printer.status_word_err("WAITING"),
                cell(what)
            ));
            if !printer.quiet {
                for h in waiting_hints(eng, id) {
                    printer.hint(&h);
                }
            }
        }
        Outcome::Cancelled => printer.always(&format!(
            "task {id} was {}",
            printer.status_word_err("CANCELLED")
        )),
        Outcome::Queued => printer.info(&format!("task {id} is QUEUED")),
        Outcome::Interrupted(why) => {
            printer.always(&format!("task {id} interrupted: {}", cell(why)));
            printer.hint(&format!(
                "`baton resume {id}` goes on; the interrupted phase runs again from its start"
            ));
        }
    }
    outcome.exit()
}

/// How to go on with a task that waits. A timer is passed by a `resume`
/// once it is due; an event comes through `baton serve` (or `baton
/// deliver`); a person answers with `baton inbox answer` (which runs the
/// task on in that process), or in `baton serve`'s dashboard or API; or
/// the wait can be taken out of the workflow, or the task stopped.
fn waiting_hints(eng: &Engine, id: &baton_core::TaskId) -> Vec<String> {
    let Ok(snap) = eng.load(id) else {
        return Vec::new();
    };
    let Some(p) = snap.state.waiting_phase() else {
        return Vec::new();
    };
    let phase = p.id.as_str();
    if p.waiting.as_ref().is_some_and(|w| w.due_at.is_some()) {
        return vec![format!(
            "`baton resume {id}` once it is due passes the timer and goes on"
        )];
    }
    use baton_core::workflow::{PhaseKind, WaitSpec};
    let how = match eng
        .pinned(&snap.state.definition_hash)
        .ok()
        .and_then(|wf| Some(wf.phase(phase)?.kind.clone()))
    {
        Some(PhaseKind::Wait(WaitSpec::Event { event, .. })) => format!(
            "`baton serve` resumes it when GitHub delivers {event} (docs/server.md); `baton deliver EVENT PAYLOAD_FILE` hands it a payload by hand"
        ),
        Some(PhaseKind::Wait(WaitSpec::Human { options, .. })) if !options.is_empty() => format!(
            "answer it with `baton inbox answer {id}/{phase} CHOICE` (one of: {}), which runs the task on; or in `baton serve`'s dashboard, or with POST /api/v1/tasks/{id}/answer (docs/server.md)",
            options.join(", ")
        ),
        _ => format!(
            "answer it with `baton inbox answer {id}/{phase} ANSWER`, which runs the task on; or in `baton serve`'s dashboard, or with POST /api/v1/tasks/{id}/answer (docs/server.md)"
        ),
    };
    vec![
        how,
        format!(
            "to go on without it, remove phase {phase} from .baton/workflows/{}.toml (and any `needs` on it), then run `baton resume {id} --upgrade`; or stop the task with `baton cancel {id}`",
            snap.state.workflow
        ),
    ]
}
