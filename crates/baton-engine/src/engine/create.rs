//! Starting a task: `baton run` (here, detached or queued for workers), a
//! new task id, the first journal records, and the check that every agent
//! phase still to run names an agent that can be run.
//!
//! A task id is never reused while `.baton/tasks/ID/` holds a task the
//! store does not know (the store was emptied or replaced): its state.json
//! and session log may be the only record left, and `baton doctor --fix`
//! rebuilds the task from them.

use super::{Engine, Held, Outcome, RunOptions};
use crate::error::{Error, Result};
use crate::render;
use crate::workdir::Workdir;
use baton_core::machine::{self, NewTask};
use baton_core::workflow::{PhaseKind, Workflow};
use baton_core::{Event, EventRecord, TaskId, TaskState};
use baton_store::{Holder, StoredDefinition};
use baton_sys::process;
use std::collections::BTreeMap;

impl Engine {
    /// `baton run`: creates a task and drives it.
    pub fn run(&self, opts: RunOptions) -> Result<(TaskId, Outcome)> {
        let wf = self.load_workflow(&opts.workflow)?;
        // Given as text: `machine::create` converts each value to the type
        // of the declared flag, or refuses it.
        let flags: std::collections::BTreeMap<String, serde_json::Value> =
            parse_pairs(&opts.flags, "--flag", "tests=false")?
                .into_iter()
                .map(|(k, v)| (k, serde_json::Value::String(v)))
                .collect();
        let mut labels = parse_pairs(&opts.labels, "--label", "issue=42")?;
        if labels.contains_key(crate::builtin::INSTANCE_LABEL) {
            return Err(Error::bad_input(format!(
                "--label {}=…: that label is baton's own (it ties a task to an agent instance)",
                crate::builtin::INSTANCE_LABEL
            ))
            .hint("use another label name"));
        }
        if let Some(i) = &opts.instance {
            labels.insert(crate::builtin::INSTANCE_LABEL.into(), i.to_string());
        }
        // `owner/name` from the git remote, so a GitHub delivery's
        // `repository.full_name` matches it (else the project's name).
        if !labels.contains_key("repository")
            && let Some(git) = &self.git
            && let Some(repo) = self.project.config.github_repository(git)
        {
            labels.insert("repository".into(), repo.to_string());
        }
        let given = match &opts.id {
            Some(id) => Some(TaskId::parse(id).map_err(|e| {
                Error::bad_input(e.to_string())
                    .hint("task ids use letters, digits, '-', '_' and '.'")
            })?),
            None => None,
        };
        let tech_stack = baton_sys::techstack::detect(&self.project.root);
        // A name baton chose may be taken a moment later by another shell
        // choosing at the same time: then it chooses again (the person
        // named no task, so no refusal is theirs to fix).
        let mut tries = 0;
        let (id, mut held) = loop {
            let id = match &given {
                Some(id) => id.clone(),
                None => self.new_task_id(&opts.description, opts.queue)?,
            };
            match self.start_new(
                &id,
                &wf,
                &opts,
                flags.clone(),
                labels.clone(),
                tech_stack.clone(),
            ) {
                Ok(Some(held)) => break (id, held),
                Ok(None) => return Ok((id, Outcome::Queued)),
                Err(e) if given.is_none() && tries < 50 && self.name_taken(&id) => {
                    tries += 1;
                    tracing::debug!(task = %id, error = %e, "the name chosen was taken meanwhile; choosing again");
                }
                Err(e) => return Err(e),
            }
        };
        if opts.create_only {
            // Stop renewing but keep the lease: the background process
            // replaces us as owner, so the task never looks CRASHED between.
            drop(held.hb);
            return Ok((id, Outcome::Waiting("detached".into())));
        }
        let outcome = self.drive(&mut held);
        Ok((id, self.release_driven(held, outcome)?))
    }

    /// The first records of a new task `id` of `wf`, stored: queued for
    /// the workers (`None`), or held by this process to run it.
    fn start_new(
        &self,
        id: &TaskId,
        wf: &Workflow,
        opts: &RunOptions,
        flags: std::collections::BTreeMap<String, serde_json::Value>,
        labels: std::collections::BTreeMap<String, String>,
        tech_stack: serde_json::Value,
    ) -> Result<Option<Held>> {
        let mut created = machine::create(
            wf,
            NewTask {
                task_id: id.clone(),
                description: opts.description.clone(),
                project_name: self.project.name(),
                flags,
                labels,
                tech_stack,
            },
        )
        .map_err(|e| {
            let declared: Vec<String> = wf
                .flags
                .iter()
                .map(|(k, v)| format!("{k} ({}, default {v})", machine::flag_type(v)))
                .collect();
            Error::from(e).hint(if declared.is_empty() {
                format!("workflow {:?} declares no flags", wf.name)
            } else {
                format!(
                    "the flags of workflow {:?} are: {}; pass them as --flag NAME=VALUE",
                    wf.name,
                    declared.join(", ")
                )
            })
        })?;
        let carried = if let Some(l) = &opts.from_log {
            Some(Event::Adopted {
                source: format!("{} {}", baton_core::session_log::FROM_LOG, l.source),
                phases: l.passed.clone(),
                iteration_counts: Default::default(),
                status: baton_core::state::TaskStatus::Running,
                blockers: Vec::new(),
                failure: None,
            })
        } else if opts.fresh {
            None
        } else {
            self.carried_over(id, wf, &mut created)?
        };
        let mut first = vec![created];
        first.extend(carried);
        // Phases carried over (or passed in a session log) need no agent.
        let (preview, _) = self.fold_first(id, first.clone())?;
        self.check_agents(wf, &preview.flags, Some(&preview), opts.agent.as_deref())?;
        if let Some(to) = &opts.agent {
            first.push(Event::AgentSwitched {
                from: None,
                to: to.clone(),
                reason: "baton run --agent".into(),
            });
        }
        if let Some(i) = opts.imported.clone() {
            first.push(Event::Imported {
                session: i.session,
                first_prompt: i.first_prompt,
                events: i.events,
            });
        }
        if opts.queue {
            self.enqueue(id, wf, first, None)?;
            return Ok(None);
        }
        Ok(Some(self.create(id, wf.clone(), first)?))
    }

    /// Whether another process has just taken name `id` (its task, or
    /// the branch of a queued one, is there now).
    fn name_taken(&self, id: &TaskId) -> bool {
        self.store.load(id).ok().flatten().is_some()
            || self.git.as_ref().is_some_and(|g| {
                g.resolve(&format!("refs/heads/{}", crate::workdir::branch_name(id)))
                    .is_some()
            })
    }

    /// Delete and recreate keeps the stage: when the task's stage record
    /// (keyed by its `repository` label and its id) is of this workflow
    /// and no task with this id exists, the new task takes over the phases
    /// it had passed (with their summaries) and the labels it had that it
    /// is not given anew (those its events set, such as `pr-number`), and
    /// says so. `created`'s labels gain those carried over.
    fn carried_over(
        &self,
        id: &TaskId,
        wf: &Workflow,
        created: &mut Event,
    ) -> Result<Option<Event>> {
        let Event::TaskCreated { labels, .. } = created else {
            return Ok(None);
        };
        let Some(repo) = labels.get("repository").cloned() else {
            return Ok(None);
        };
        let Some(p) = self.store.task_stage(&repo, id.as_str())? else {
            return Ok(None);
        };
        if p.workflow != wf.name || self.store.load(id)?.is_some() {
            return Ok(None);
        }
        let phases = baton_core::progress::carried_over(&p, wf);
        if phases.is_empty() {
            return Ok(None);
        }
        let kept = baton_core::progress::labels_carried(&p, labels);
        labels.extend(kept.clone());
        let names: Vec<&str> = phases.iter().map(|p| p.id.as_str()).collect();
        let stage = wf
            .phases
            .iter()
            .find(|d| !names.contains(&d.id.as_str()))
            .map_or("its end".to_string(), |d| d.id.to_string());
        let labels_said = if kept.is_empty() {
            String::new()
        } else {
            format!(
                "; its labels {} are kept",
                kept.iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        self.observer.info(&format!(
            "task {id} continues at {stage}: the progress record of {repo} says {} passed before it was deleted{labels_said} (pass --fresh to start over)",
            names.join(", ")
        ));
        Ok(Some(Event::Adopted {
            source: format!("progress record of {repo}"),
            phases,
            iteration_counts: Default::default(),
            status: baton_core::state::TaskStatus::Running,
            blockers: Vec::new(),
            failure: None,
        }))
    }

    /// `run --queue`: stores the task for the workers, with no lease, on a
    /// new branch `baton/<id>` (pushed to the remote) made at HEAD, or at
    /// `start`.
    pub(super) fn enqueue(
        &self,
        id: &TaskId,
        wf: &Workflow,
        first: Vec<Event>,
        start: Option<&str>,
    ) -> Result<()> {
        self.refuse_unknown_folder(id)?;
        if self.store.load(id)?.is_some() {
            return Err(
                Error::bad_input(format!("a task {id} already exists")).hint(format!(
                    "continue it with `baton resume {id}`, or pick another --id"
                )),
            );
        }
        let base = Workdir::enqueue(&self.project, id, start)?;
        let (state, records) = self.first_records(id, wf, first)?;
        if let Err(e) = self.store.create_task(&state, &records, Holder::Queue) {
            if let Some(g) = &self.git {
                let _ = g.run(
                    &["update-ref", "-d", &format!("refs/heads/baton/{id}")],
                    &[],
                );
            }
            return Err(e.into());
        }
        self.observer.info(&format!(
            "queued task {id} on branch baton/{id} from {}",
            &base[..base.len().min(12)]
        ));
        if let Ok(Some(snap)) = self.store.load(id) {
            let _ = render::state_json(&self.project.task_dir(id), &self.document(&snap)?);
        }
        Ok(())
    }

    pub(crate) fn new_task_id(&self, description: &str, queue: bool) -> Result<TaskId> {
        let mut existing: std::collections::HashSet<String> = self
            .store
            .list()?
            .into_iter()
            .map(|t| t.id.to_string())
            .collect();
        // A queued task's branch goes to the remote, where another clone's
        // removed task may have left one of the same name.
        if queue
            && let Some(g) = &self.git
            && let Ok(Some(r)) = crate::workdir::remote(&self.project, g)
            && let Ok(out) = g.run(&["ls-remote", "--heads", &r, "refs/heads/baton/*"], &[])
        {
            existing.extend(
                out.lines()
                    .filter_map(|l| l.split_once("refs/heads/baton/"))
                    .map(|(_, name)| name.trim().to_string()),
            );
        }
        let mut seq = self.store.list()?.len() as u32 + 1;
        loop {
            let slug = baton_core::ids::slugify(seq, description);
            // A removed queued task may have left its branch (it keeps the
            // commits): never reuse that name.
            let branch_taken = self.git.as_ref().is_some_and(|g| {
                g.resolve(&format!(
                    "refs/heads/{}",
                    crate::workdir::branch_name_str(&slug)
                ))
                .is_some()
            });
            // Nor the folder of a task the store does not know (or one
            // `baton clean` left).
            let folder_taken = self.project.tasks_dir().join(&slug).exists();
            if !existing.contains(&slug) && !branch_taken && !folder_taken {
                return TaskId::parse(&slug).map_err(|e| Error::op(e.to_string()));
            }
            seq += 1;
        }
    }

    /// Stores a new task (its first events) holding its lease.
    pub(super) fn create(&self, id: &TaskId, wf: Workflow, first: Vec<Event>) -> Result<Held> {
        self.refuse_unknown_folder(id)?;
        let (state, records) = self.first_records(id, &wf, first)?;
        let lease = self.new_lease();
        self.store
            .create_task(&state, &records, Holder::Lease(&lease))?;
        // A new task under the id of a cleaned one is a live record again.
        let _ = std::fs::remove_file(self.project.task_dir(id).join(super::CLEANED));
        let ws = match self.workspace_of(&state, &wf, false) {
            Ok(ws) => ws,
            Err(e) => {
                // Created, not started: `baton resume` starts it.
                let _ = self.store.release(id, &self.owner);
                return Err(e);
            }
        };
        let held = self.hold(state, wf, lease, ws)?;
        self.observer.task_started(id, &held.wf.name);
        Ok(held)
    }

    /// Refuses `id` when `.baton/tasks/ID/` holds a task (a state.json, not
    /// marked cleaned) that the store does not know: a new task there would
    /// overwrite its state.json and its session log, perhaps the only record
    /// of it left.
    fn refuse_unknown_folder(&self, id: &TaskId) -> Result<()> {
        let dir = self.project.task_dir(id);
        if !is_task_folder(&dir) || self.store.load(id)?.is_some() {
            return Ok(());
        }
        Err(Error::bad_input(format!(
            "{} holds task {id}, which the store does not know (was the store emptied or replaced?); a new task {id} would overwrite its state.json and its session log",
            dir.display()
        ))
        .hint(format!(
            "`baton doctor --fix` rebuilds task {id} from its folder (then `baton resume {id}`)"
        ))
        .hint("or start the new task under another --id"))
    }

    /// The ids of the task folders in `.baton/tasks/` (with a state.json,
    /// not marked cleaned) that are not among `known` (the ids the store
    /// holds, as `list` gave them), sorted.
    pub fn unknown_task_folders(&self, known: &std::collections::HashSet<&str>) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(self.project.tasks_dir()) else {
            return Vec::new();
        };
        let mut folders: Vec<String> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|name| !known.contains(name.as_str()))
            .filter(|name| is_task_folder(&self.project.tasks_dir().join(name)))
            .collect();
        folders.sort();
        folders
    }

    /// Stores the definition and builds a new task's first journal records.
    pub(super) fn first_records(
        &self,
        id: &TaskId,
        wf: &Workflow,
        first: Vec<Event>,
    ) -> Result<(TaskState, Vec<EventRecord>)> {
        let json = serde_json::to_string(wf).expect("workflow serializes");
        self.store.put_definition(&StoredDefinition {
            hash: wf.hash(),
            name: wf.name.clone(),
            json,
        })?;
        self.fold_first(id, first)
    }

    /// A new task's first journal records, folded (nothing stored).
    fn fold_first(&self, id: &TaskId, first: Vec<Event>) -> Result<(TaskState, Vec<EventRecord>)> {
        let now = self.now();
        let mut records = Vec::new();
        let mut state: Option<TaskState> = None;
        for (i, ev) in first.into_iter().enumerate() {
            let ev = self.redacted(ev);
            let rec = EventRecord {
                seq: i as u64 + 1,
                ts: now,
                event: ev,
            };
            match &mut state {
                None => state = machine::initial(id.clone(), &rec),
                Some(s) => machine::apply(s, &rec),
            }
            records.push(rec);
        }
        let state = state.ok_or_else(|| Error::op("a task must start with task_created"))?;
        Ok((state, records))
    }

    /// Every agent phase still to run (not done, `when` not false) must
    /// name a configured agent whose program can be run.
    pub(super) fn check_agents(
        &self,
        wf: &Workflow,
        flags: &BTreeMap<String, serde_json::Value>,
        state: Option<&TaskState>,
        agent: Option<&str>,
    ) -> Result<()> {
        for p in &wf.phases {
            if !matches!(p.kind, PhaseKind::Prompt { .. }) {
                continue;
            }
            if p.when.as_ref().is_some_and(|c| !c.eval(flags)) {
                continue;
            }
            if state
                .and_then(|s| s.phase(p.id.as_str()))
                .is_some_and(|s| s.status.is_done())
            {
                continue;
            }
            let name = agent
                .map(str::to_string)
                .or_else(|| p.agent.clone())
                .or_else(|| self.project.config.defaults.agent.clone());
            match name {
                None => {
                    return Err(Error::bad_input(format!("phase {} is an agent phase but names no agent", p.id))
                        .hint("set `agent` on the phase or under [defaults] in the workflow, or pass --agent NAME"));
                }
                Some(n) if !self.project.config.agents.contains_key(&n) => {
                    return Err(Error::bad_input(format!(
                        "phase {} uses agent {n:?}, which .baton/config.toml does not define",
                        p.id
                    ))
                    .hint(format!("add [agents.{n}] with command = [\"{n}\", \"-p\", \"{{{{prompt}}}}\"] to .baton/config.toml")));
                }
                Some(n) => {
                    let cfg = &self.project.config.agents[&n];
                    let argv = cfg.argv();
                    let program = &argv[0];
                    let path = cfg.env.get("PATH").map(String::as_str);
                    if let Err(e) = process::resolve(program, &self.project.root, path) {
                        return Err(Error::bad_input(format!(
                            "phase {} uses agent {n:?}, whose program `{program}` cannot be run: {e}",
                            p.id
                        ))
                        .hint(format!(
                            "install `{program}`, fix [agents.{n}] command in .baton/config.toml, or pick another agent with --agent NAME"
                        )));
                    }
                    if let (Some(state), PhaseKind::Prompt { template, .. }) = (state, &p.kind) {
                        check_prompt_size(state, p, template, &n, cfg)?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// A prompt that `{{prompt}}` would put into one argument too long for
/// the command line, known from what the task says before it starts (its
/// description, labels, flags; what phases will add only makes it
/// longer): refused before the task is created, never found after.
fn check_prompt_size(
    state: &TaskState,
    p: &baton_core::workflow::Phase,
    template: &str,
    name: &str,
    cfg: &crate::config::AgentConfig,
) -> Result<()> {
    let argv = cfg.argv();
    if !argv.iter().any(|a| a.contains("{{prompt}}")) {
        return Ok(());
    }
    let prompt = baton_core::template::render(template, |v| machine::value_of(state, &p.id, v));
    let filled = baton_agents::generic::fill(&argv, &prompt, std::path::Path::new(""));
    let Some(big) = filled
        .iter()
        .find(|a| a.len() > super::phase::MAX_ARG_BYTES)
    else {
        return Ok(());
    };
    let advice = if cfg.cli.is_some() {
        "shorten what goes into it (a long description can live in a file the prompt names)"
            .to_string()
    } else {
        format!(
            "use {{{{prompt_file}}}} instead of {{{{prompt}}}} in [agents.{name}] command in .baton/config.toml, or shorten what goes into it"
        )
    };
    Err(Error::bad_input(format!(
        "phase {} would give agent {name:?} an argument of {} bytes (its prompt is {} bytes), more than the {} bytes one argument may have",
        p.id,
        big.len(),
        prompt.len(),
        super::phase::MAX_ARG_BYTES
    ))
    .hint(format!("{advice}; nothing was created")))
}

/// Whether `dir` holds a task's rendered files (a state.json) that
/// `baton clean` did not mark as cleaned: what `baton doctor --fix` can
/// rebuild a task from.
fn is_task_folder(dir: &std::path::Path) -> bool {
    dir.join("state.json").is_file() && !dir.join(super::CLEANED).exists()
}

/// Parses `K=V` pairs; `example` is a valid one, for the hint.
pub(crate) fn parse_pairs(
    items: &[String],
    flag: &str,
    example: &str,
) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for item in items {
        match item.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => {
                out.insert(k.trim().to_string(), v.to_string());
            }
            _ => {
                return Err(Error::bad_input(format!(
                    "{flag} {item:?} is not of the form KEY=VALUE"
                ))
                .hint(format!("write e.g. {flag} {example}")));
            }
        }
    }
    Ok(out)
}
