//! `baton play TASKS_FILE --workflow W [--start-from-task N] [--max-tasks M]`
//! and `baton play --resume`: a list of tasks run one after another, with a
//! durable marker of the task the play is at.

use super::Result;
use crate::cli::PlayArgs;
use crate::printer::Printer;
use baton_core::Exit;
use baton_core::play::Play;
use baton_engine::{Error, Project};
use std::sync::Arc;

pub fn run(project: &Project, args: PlayArgs, printer: &Arc<Printer>) -> Result<Exit> {
    let eng = super::driving_engine(project, printer)?;
    let mut play = if args.resume {
        let unfinished = eng
            .plays()?
            .into_iter()
            .find(|p| p.status != "done")
            .ok_or_else(|| {
                Error::bad_input("no play is unfinished: nothing to resume")
                    .hint("start one with `baton play TASKS_FILE --workflow W`")
            })?;
        printer.info(&format!(
            "play {} continues at task {} of {} ({}), {} finished before",
            unfinished.name,
            unfinished.next + 1,
            unfinished.tasks.len(),
            unfinished
                .tasks
                .get(unfinished.next)
                .map_or("-", |t| t.id.as_str()),
            unfinished.done.len()
        ));
        unfinished
    } else {
        start(&eng, &args)?
    };
    let outcome = eng.play(&mut play, args.max_tasks)?;
    let total = play.tasks.len();
    // Tasks before --start-from-task were not run by this play: what they
    // are is said, never counted as complete.
    let passed_over = eng.play_passed_over(&play)?;
    match play.status.as_str() {
        "done" if passed_over.is_empty() => printer.info(&format!(
            "play {}: all {total} tasks complete",
            play.name
        )),
        "done" => printer.info(&format!(
            "play {}: reached its end; {} of {total} tasks ran and are complete ({})",
            play.name,
            play.done.len(),
            play.done.join(", ")
        )),
        "stopped" => {
            printer.always(&format!(
                "play {} stopped: {}",
                play.name,
                play.stopped.as_deref().unwrap_or("")
            ));
            printer.hint("fix the cause, then continue the play with `baton play --resume` (it runs that task on)");
        }
        _ => printer.info(&format!(
            "play {}: {} of {total} tasks complete (--max-tasks); continue it with `baton play --resume`",
            play.name,
            play.done.len(),
        )),
    }
    if !passed_over.is_empty() {
        let listed: Vec<String> = passed_over
            .iter()
            .map(|(id, status)| match status.as_str() {
                "none" => format!("{id} (never run)"),
                s => format!("{id} ({})", printer.status_word_err(s)),
            })
            .collect();
        printer.info(&format!(
            "play {}: not run by this play (it started at task {}): {}",
            play.name,
            passed_over_start(&play),
            listed.join(", ")
        ));
        for (i, (id, status)) in passed_over.iter().enumerate() {
            if status != "COMPLETE" {
                let n = play.tasks.iter().position(|t| &t.id == id).unwrap_or(i) + 1;
                printer.hint(&match status.as_str() {
                    "none" => {
                        format!("{id} never ran: run the play from it with `--start-from-task {n}`")
                    }
                    s if s == "FAILED" || s == "CRASHED" || s == "WAITING" => {
                        format!("{id} is {s}: `baton resume {id}` goes on with it")
                    }
                    s => format!("{id} is {s}"),
                });
            }
        }
    }
    Ok(outcome.exit())
}

/// The task (counted from 1) this play started at: the first it ran or
/// is at.
fn passed_over_start(play: &Play) -> usize {
    play.tasks
        .iter()
        .position(|t| play.done.first() == Some(&t.id))
        .unwrap_or(play.next)
        + 1
}

/// A new play of `args.file`, its tasks read, from `--start-from-task`.
fn start(eng: &baton_engine::Engine, args: &PlayArgs) -> Result<Play> {
    let file = args
        .file
        .as_ref()
        .expect("clap requires it without --resume");
    let workflow = args
        .workflow
        .clone()
        .expect("clap requires it without --resume");
    let text = fs_err::read_to_string(file).map_err(|e| {
        Error::bad_input(format!("cannot read the tasks file: {e}"))
            .hint("pass a TOML file of [[task]] tables (id, description, labels) or JSON Lines")
    })?;
    let file_name = file.file_name().map_or_else(
        || file.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let name = file
        .file_stem()
        .map_or_else(|| "play".to_string(), |n| n.to_string_lossy().into_owned());
    let tasks = baton_core::play::parse_tasks(&name, &file_name, &text).map_err(|e| {
        Error::bad_input(e).hint(
            "each task has an id (letters, digits, -, _, .), a description and labels; a TOML file of [[task]] tables, or JSON Lines",
        )
    })?;
    eng.load_workflow(&workflow)?;
    let from = args.start_from_task.unwrap_or(1);
    if from == 0 || from > tasks.len() {
        return Err(Error::bad_input(format!(
            "--start-from-task {from}: {file_name} lists {} tasks",
            tasks.len()
        ))
        .hint("tasks are counted from 1"));
    }
    if args.start_from_task.is_none()
        && let Some(old) = eng
            .plays()?
            .into_iter()
            .find(|p| p.name == name && p.status != "done")
    {
        return Err(Error::bad_input(format!(
            "play {name} is unfinished at task {} of {}",
            old.next + 1,
            old.tasks.len()
        ))
        .hint("continue it with `baton play --resume`, or start it again from a task with --start-from-task N"));
    }
    let now = baton_core::Timestamp(jiff::Timestamp::now().as_millisecond());
    Ok(Play {
        name,
        file: file.display().to_string(),
        workflow,
        done: Vec::new(),
        tasks,
        next: from - 1,
        status: "running".into(),
        stopped: None,
        started_at: now,
        updated_at: now,
    })
}
