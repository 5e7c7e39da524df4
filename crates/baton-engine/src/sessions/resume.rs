//! `baton session resume FILE_OR_ID`: a session log continued as a task.
//! A task of the log's id in this store is resumed as any task; otherwise
//! (a log copied to a fresh clone, one written by hand) a new task of the
//! log's workflow (or, when this project has none of that name, one
//! codified from the log) takes the phases before the log's
//! `resume_point` as passed, with the summaries the log gives, and the
//! next agent gets the brief rebuilt from them.

use super::codify::{draft_workflow, write_draft};
use crate::engine::{Engine, FromLog, Outcome, ResumeOptions, RunOptions};
use crate::error::{Error, Result};
use baton_core::TaskId;
use baton_core::session_log::codify::{self, Draft};
use baton_core::session_log::{self, LogStatus, SessionLog, codify::phase_id};
use baton_core::state::{PhaseState, PhaseStatus};
use baton_core::workflow::Workflow;

/// What `baton session resume` may change.
#[derive(Debug, Clone, Default)]
pub struct SessionResume {
    /// The workflow to continue in (default: the log's).
    pub workflow: Option<String>,
    /// The new task's id (default: the log's session id).
    pub id: Option<String>,
    pub agent: Option<String>,
    /// Run the shell commands a log codified here gives (`[!command]`):
    /// without it such a log is refused, its commands listed.
    pub run_commands: bool,
}

/// Labels baton sets itself on a new task.
const OWN_LABELS: [&str; 3] = ["task-id", "workflow-type", "repository"];

impl Engine {
    pub fn resume_session(&self, arg: &str, opts: SessionResume) -> Result<(TaskId, Outcome)> {
        let (log, path) = self.session_log(arg)?;
        if let Some(team) = session_log::team::team_of(&log) {
            return Err(Error::bad_input(format!(
                "{arg} is team {team}'s log: a team is not resumed as a task"
            ))
            .hint(format!(
                "re-attach to the team with `baton team resume {team}`; its teammates' turns are logs of their own, linked from it"
            )));
        }
        let sid = log.front.session_id.clone();
        if opts.id.is_none()
            && let Ok(id) = TaskId::parse(&sid)
            && self.store.load(&id)?.is_some()
        {
            self.observer().info(&format!(
                "task {id} is in this store: it resumes from its journal"
            ));
            let outcome = self.resume(
                &id,
                ResumeOptions {
                    agent: opts.agent,
                    ..Default::default()
                },
            )?;
            return Ok((id, outcome));
        }
        // Everything that could refuse is checked before anything is
        // written: a codified workflow only goes to its file once the log
        // resumes in it.
        let (wf, codified) = self.workflow_of_log(&log, opts.workflow.as_deref())?;
        let passed = passed_before(&log, &wf, self.now())?;
        let wf = match codified {
            Some(draft) => {
                // A log's `[!command]`s would run as written: only when the
                // person said so, having been shown them.
                let commands: Vec<String> = draft
                    .phases
                    .iter()
                    .filter(|p| !passed.iter().any(|s| s.id.as_str() == p.id))
                    .filter_map(|p| match &p.step {
                        codify::Step::Run(command) => Some(format!(
                            "{}: {}",
                            p.id,
                            baton_core::text::escape(&baton_core::agent_stream::shorten(
                                &command.split_whitespace().collect::<Vec<_>>().join(" "),
                                120
                            ))
                        )),
                        _ => None,
                    })
                    .collect();
                if !commands.is_empty() && !opts.run_commands {
                    return Err(Error::bad_input(format!(
                        "the log {arg} gives shell commands for phases still to run, and this project has no workflow {:?} of its own: {}",
                        log.front.workflow.as_deref().unwrap_or(&draft.name),
                        commands.join("; ")
                    ))
                    .hint(
                        "read them; run them as written with `--run-commands`, or continue in a workflow of this project with `--workflow NAME`",
                    ));
                }
                for c in &commands {
                    self.observer()
                        .info(&format!("phase {c} (the command the log gives) runs"));
                }
                self.write_codified(&log, &draft)?
            }
            None => wf,
        };
        let mut description = log.title.clone();
        for b in &log.intro {
            if let session_log::Block::Prose(p) = b {
                description.push_str("\n\n");
                description.push_str(p);
            }
        }
        let source = match &path {
            Some(p) => p.display().to_string(),
            None => format!("of {sid}"),
        };
        let names: Vec<&str> = passed.iter().map(|p| p.id.as_str()).collect();
        let at = wf
            .phases
            .iter()
            .find(|p| !passed.iter().any(|s| s.id == p.id))
            .map_or("its end".to_string(), |p| p.id.to_string());
        self.observer().info(&format!(
            "continuing the session log {source} as workflow {} at {at}{}",
            wf.name,
            if names.is_empty() {
                String::new()
            } else {
                format!(" ({} passed, with the log's summaries)", names.join(", "))
            }
        ));
        let id = opts.id.or_else(|| {
            TaskId::parse(&sid)
                .ok()
                .filter(|i| !self.project.task_dir(i).exists())
                .map(|i| i.to_string())
        });
        self.run(RunOptions {
            workflow: wf.name.clone(),
            description,
            id,
            labels: log
                .front
                .labels
                .iter()
                .filter(|(k, _)| !OWN_LABELS.contains(&k.as_str()))
                .map(|(k, v)| format!("{k}={v}"))
                .collect(),
            agent: opts.agent,
            from_log: Some(FromLog { source, passed }),
            ..Default::default()
        })
    }

    /// The workflow a log continues in: the one asked for, else the log's
    /// when this project has it, else one codified from the log (its
    /// draft too: written by [`Engine::write_codified`] once the log is
    /// known to resume in it).
    fn workflow_of_log(
        &self,
        log: &SessionLog,
        asked: Option<&str>,
    ) -> Result<(Workflow, Option<Draft>)> {
        if let Some(w) = asked {
            return Ok((self.load_workflow(w)?, None));
        }
        if let Some(w) = &log.front.workflow
            && self
                .project
                .workflows_dir()
                .join(format!("{w}.toml"))
                .is_file()
        {
            return Ok((self.load_workflow(w)?, None));
        }
        let name = format!("session-{}", phase_id(&log.front.session_id));
        let draft = codify::draft(log, &name);
        let wf = draft_workflow(self, &draft)?;
        Ok((wf, Some(draft)))
    }

    /// Writes the workflow codified from `log` beside the others (and
    /// says so); the workflow as written.
    fn write_codified(&self, log: &SessionLog, draft: &Draft) -> Result<Workflow> {
        let path = write_draft(self, draft, None)?;
        self.observer().info(&format!(
            "{}: wrote {} from the log's phases",
            match &log.front.workflow {
                Some(w) => format!("this project has no workflow {w}"),
                None => "the log names no workflow".to_string(),
            },
            path.display()
        ));
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| draft.name.clone());
        self.load_workflow(&stem)
    }
}

/// Where in `wf` the resume point `point` is: a phase of that id (or a
/// heading that slugs to one), a heading of the log, or a place in the
/// log (`phase-2`, `2`: its second phase) when no phase is named so.
fn resume_at(point: &str, told: &[session_log::LogPhase], wf: &Workflow) -> Option<usize> {
    let slug = phase_id(point);
    let in_wf = |name: &str| {
        let id = phase_id(name);
        wf.phases
            .iter()
            .position(|p| p.id.as_str() == name || p.id.as_str() == id)
    };
    if let Some(at) = in_wf(point) {
        return Some(at);
    }
    if let Some(t) = told.iter().find(|t| phase_id(&t.name) == slug)
        && let Some(at) = in_wf(&t.name)
    {
        return Some(at);
    }
    let n: usize = slug
        .strip_prefix("phase-")
        .unwrap_or(&slug)
        .parse()
        .ok()
        .filter(|n| *n >= 1)?;
    match told.get(n - 1) {
        Some(t) => in_wf(&t.name),
        None => (n <= wf.phases.len()).then_some(n - 1),
    }
}

/// The workflow's phases before the log's resume point, passed with the
/// summaries the log gives them.
fn passed_before(
    log: &SessionLog,
    wf: &Workflow,
    now: baton_core::Timestamp,
) -> Result<Vec<PhaseState>> {
    let told = session_log::phases(log);
    let matches = |wf_id: &str, name: &str| name == wf_id || phase_id(name) == wf_id;
    let at = match &log.front.resume_point {
        Some(point) => resume_at(point, &told, wf).ok_or_else(|| {
            let ids: Vec<&str> = wf.phases.iter().map(|p| p.id.as_str()).collect();
            Error::bad_input(format!(
                "the log's resume_point {point:?} is no phase of workflow {} ({})",
                wf.name,
                ids.join(", ")
            ))
            .hint(
                "set resume_point in the log's frontmatter to one of them (or a heading of the log, or its place: phase-2), or pass --workflow",
            )
        })?,
        None if log.front.status == LogStatus::Completed => {
            return Err(Error::bad_input(format!(
                "the session {} is completed: its log has no resume_point",
                log.front.session_id
            ))
            .hint("to run its work again, `baton session codify` it into a workflow and `baton run` that"));
        }
        // Hand-written without one: the first phase the log tells nothing of.
        None => wf
            .phases
            .iter()
            .position(|p| {
                !told
                    .iter()
                    .any(|t| matches(p.id.as_str(), &t.name) && t.summary.is_some())
            })
            .unwrap_or(wf.phases.len()),
    };
    // Only what the log shows passing (with its summary) counts as
    // passed: a phase the log tells nothing of (one this clone's workflow
    // gained) runs.
    Ok(wf.phases[..at]
        .iter()
        .filter_map(|p| {
            let summary = told
                .iter()
                .find(|t| matches(p.id.as_str(), &t.name))
                .and_then(|t| t.summary.clone())?;
            let mut s = PhaseState::new(p.id.clone());
            s.status = PhaseStatus::Pass;
            s.attempt = 1;
            s.completed_at = Some(now);
            s.summary = Some(summary);
            Some(s)
        })
        .collect())
}
