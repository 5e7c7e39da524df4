//! Coding and review agent instances, with their IO: the review loop's
//! pure rules (`baton_core::instance`) applied to real git worktrees and
//! real agent runs.
//!
//! Every change goes through [`Agents::step`]: load the instances, decide,
//! commit the events at the journal position decided from, and decide
//! again if another process got there first. An instance's agent runs as
//! tasks, one per turn (`turns`), each a one-phase task of the built-in
//! the built-in `agent-turn` workflow (`crate::builtin`) in the instance's worktree: the engine's own leases,
//! crash detection, native session journaling and resume apply to it
//! unchanged. A later turn continues the agent's native session with the
//! next prompt (a review's feedback), or gives the brief where that session
//! cannot be continued.
//!
//! What lives where: starting turns and their prompts in `instances/turn.rs`;
//! `request_review` and `merge_back` in `instances/review.rs`; the pull
//! request (`create_pr`, `push_to_github`) in `instances/pull_request.rs`;
//! ending
//! instances, timeouts and removing what they held (never work) in
//! `instances/cleanup.rs`.

mod cleanup;
mod diff;
mod pull_request;
mod reconcile;
mod review;
mod session;
mod turn;
mod upstream;
mod wait;

pub use cleanup::Removal;
pub use pull_request::PushOptions;
pub use review::ReviewOptions;
pub use wait::Done;

use crate::config::InstanceSettings;
use crate::engine::Engine;
use crate::error::{Error, Result};
use baton_core::TaskId;
use baton_core::instance::{
    self, CodingConfig, ErrorCode, Input, Instance, InstanceId, Instances, Record, Resources,
    Status,
};
use baton_core::lease::DisplayStatus;
use baton_sys::git::Git;
use std::path::{Path, PathBuf};

use crate::builtin::INSTANCE_LABEL;

/// How many times a step decides again when other processes keep
/// committing first.
const STEP_TRIES: usize = 50;

/// The agent instances of one project.
pub struct Agents<'e> {
    eng: &'e Engine,
    settings: InstanceSettings,
    git: Git,
}

/// `baton agent spawn`.
#[derive(Debug, Clone, Default)]
pub struct SpawnOptions {
    pub id: Option<String>,
    /// What to do (with `issue`: added to the issue's text; may be empty).
    pub instructions: String,
    /// A GitHub issue of the repository to work on: its title and body
    /// are read when the instance is spawned.
    pub issue: Option<u32>,
    /// Standing instructions ahead of the work (default: `[instances.coding]
    /// system_prompt`).
    pub system_prompt: Option<String>,
    pub agent: Option<String>,
    /// The branch the work starts from (default: the checked-out one).
    pub base: Option<String>,
    /// The branch it works on (default `baton/<id>`).
    pub branch: Option<String>,
    pub require_review: Option<bool>,
    pub max_reviews: Option<u32>,
    pub execution_timeout_ms: Option<u64>,
    /// Run the agent's terminal UI in a tmux session (`baton agent
    /// attach`) instead of headless turns.
    pub interactive: bool,
    /// The workflow phase it works for (`instance = { … }`): it ends with
    /// that phase's work, or with its task.
    pub for_phase: Option<instance::ForPhase>,
}

/// An instance and how its agent stands.
#[derive(Debug, Clone)]
pub struct View {
    pub instance: Instance,
    /// Its latest turn's task and that task's status.
    pub turn: Option<(TaskId, DisplayStatus)>,
    /// An interactive instance's tmux session: whether its program still
    /// runs (`None`: the session is gone).
    pub session: Option<bool>,
}

impl View {
    /// The instance as `baton agent show --json` and the API show it: its
    /// stored form, its kind, its latest turn and, for an interactive one,
    /// its tmux session.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::json;
        let mut j = self.instance.to_json();
        if let Some(o) = j.as_object_mut() {
            let kind = match self.instance.kind() {
                instance::Kind::Coding => "coding",
                instance::Kind::Review => "review",
            };
            o.insert("kind".into(), json!(kind));
            o.insert(
                "turn".into(),
                match &self.turn {
                    Some((t, s)) => json!({"task": t, "status": s.as_str()}),
                    None => serde_json::Value::Null,
                },
            );
            if let Some(name) = &self.instance.resources.session_name {
                let state = match self.session {
                    Some(true) => "running",
                    Some(false) => "exited",
                    None => "gone",
                };
                o.insert("tmux".into(), json!({"session": name, "state": state}));
            }
        }
        j
    }
}

impl Engine {
    /// The project's agent instances; they live in git worktrees, so the
    /// project must be in a git repository.
    pub fn agents(&self) -> Result<Agents<'_>> {
        let git = self.git().cloned().ok_or_else(|| {
            Error::coded(
                ErrorCode::InvalidConfiguration,
                format!(
                    "agent instances work in git worktrees, but {} is not in a git repository",
                    self.project.root.display()
                ),
            )
            .hint("run `git init` and commit your files first")
        })?;
        let settings = self.project.config.instances.settings(git.top())?;
        Ok(Agents {
            eng: self,
            settings,
            git,
        })
    }
}

/// After a task ran: if it was a turn of an agent instance, what waited
/// for that turn to end happens now (a review's feedback delivered as the
/// next turn, an ended instance's worktree given back), and the logs it is
/// a child session of are rendered again with what it used.
pub fn turn_ended(eng: &Engine, task: &TaskId) {
    let Some(instance) = eng
        .load(task)
        .ok()
        .and_then(|s| s.state.labels.get(INSTANCE_LABEL).cloned())
    else {
        return;
    };
    if let Err(e) = eng.agents().and_then(|a| a.tick()) {
        eng.observer()
            .info(&format!("after the turn {task}: {}", e.message));
    }
    eng.parents_of_turn_changed(&instance);
}

/// After task `task` was cancelled or removed: the instances its phases
/// started end with it now (their agents stopped, what they hold given
/// back under the cleanup rules) rather than at the next `baton agent`
/// command.
pub fn task_stopped(eng: &Engine, task: &TaskId) {
    let started_here = eng.store.instances().is_ok_and(|all| {
        all.by_id.values().any(|i| {
            !i.status.ended()
                && matches!(&i.config, instance::Config::Coding(c)
                    if c.for_phase.as_ref().is_some_and(|f| &f.task == task))
        })
    });
    if started_here && let Err(e) = eng.agents().and_then(|a| a.tick()) {
        eng.observer().info(&format!(
            "ending the agent instances of {task}: {}",
            e.message
        ));
    }
}

/// What a commit decided on the caller's read found.
pub(crate) enum Committed {
    /// Committed: the instances after it.
    Done(Instances),
    /// Another process committed since that read: nothing was written.
    Changed,
}

impl Agents<'_> {
    pub fn settings(&self) -> &InstanceSettings {
        &self.settings
    }

    /// Decides `input` against the stored instances and commits what it
    /// causes; decides again when another process committed first.
    /// Returns the instances after it.
    pub fn step(&self, input: Input) -> Result<Instances> {
        for _ in 0..STEP_TRIES {
            let all = self.eng.store.instances()?;
            match self.commit_on(&all, std::slice::from_ref(&input))? {
                Committed::Done(after) => return Ok(after),
                Committed::Changed => std::thread::sleep(std::time::Duration::from_millis(5)),
            }
        }
        Err(Error::busy(format!(
            "the agent instances kept changing under this command ({STEP_TRIES} tries)"
        ))
        .hint("try again"))
    }

    /// Decides `inputs`, in order, against `all` (the instances as the
    /// caller read them) and commits what they cause in one transaction,
    /// only if nothing was committed since `all` was read (else
    /// [`Committed::Changed`], and nothing is written).
    pub(crate) fn commit_on(&self, all: &Instances, inputs: &[Input]) -> Result<Committed> {
        let now = self.eng.now();
        let mut after = all.clone();
        let mut records: Vec<Record> = Vec::new();
        for input in inputs {
            for event in instance::decide(&after, input.clone(), now)? {
                let r = Record {
                    seq: all.last_seq + 1 + records.len() as u64,
                    ts: now,
                    event: self.eng.redacted(event),
                };
                instance::apply(&mut after, &r);
                records.push(r);
            }
        }
        let changed = after.changed_since(all);
        match self
            .eng
            .store
            .commit_instances(all.last_seq, &records, &changed)
        {
            Ok(()) => {
                if let Some(last) = records.last() {
                    self.eng
                        .crash_point("instance-committed", last.event.kind());
                }
                // An instance that ended takes its MCP capabilities along.
                for i in changed.iter().filter(|i| i.status.ended()) {
                    if all.by_id.get(&i.id).is_none_or(|b| !b.status.ended()) {
                        self.eng.revoke_instance_capabilities(&i.id);
                    }
                }
                Ok(Committed::Done(after))
            }
            Err(baton_store::Error::InstancesChanged { .. }) => Ok(Committed::Changed),
            Err(e) => Err(e.into()),
        }
    }

    /// Every instance, after enforcing timeouts and delivering feedback
    /// that waits.
    pub fn list(&self) -> Result<Vec<View>> {
        let all = self.tick()?;
        Ok(all.by_id.into_values().map(|i| self.view(i)).collect())
    }

    /// Every instance as stored, nothing enforced nor delivered first
    /// (for readers, such as the API's listing).
    pub fn stored(&self) -> Result<Instances> {
        Ok(self.eng.store.instances()?)
    }

    /// One instance (see [`Agents::list`]).
    pub fn show(&self, id: &InstanceId) -> Result<View> {
        let all = self.tick()?;
        let i = found(&all, id)?.clone();
        Ok(self.view(i))
    }

    /// The journal records about `id` (and, for a coding instance, its
    /// reviews' requests and decisions), in order.
    pub fn events(&self, id: &InstanceId) -> Result<Vec<Record>> {
        let all = self.eng.store.instances()?;
        found(&all, id)?;
        let mut ids: Vec<&InstanceId> = all.reviews_of(id).map(|r| &r.id).collect();
        ids.push(id);
        let mut out = Vec::new();
        let mut after = 0;
        loop {
            let batch = self.eng.store.instance_events(after, 1000)?;
            let Some(last) = batch.last() else { break };
            after = last.seq;
            out.extend(batch.into_iter().filter(|r| about(r, &ids)));
        }
        Ok(out)
    }

    /// `checkpoint` by instance `id`'s agent: journaled. The same note
    /// again within a minute (a client's retry) is that same checkpoint.
    /// Returns its journal position.
    pub fn checkpoint(&self, id: &InstanceId, note: &str) -> Result<u64> {
        let mut all = self.eng.store.instances()?;
        found(&all, id)?;
        // Cheap on the hot path: deadlines are enforced only when one has
        // passed, so an instance past its own is told it timed out.
        if !instance::due(&all, self.eng.now()).is_empty() {
            all = self.tick()?;
        }
        let recent = self
            .eng
            .store
            .instance_events(all.last_seq.saturating_sub(32), 32)?;
        let now = self.eng.now().millis();
        let again = recent.iter().rev().find(|r| {
            matches!(&r.event, instance::Event::Checkpoint { id: i, note: n } if i == id && n == note)
                && now - r.ts.millis() < 60_000
        });
        if let Some(r) = again {
            return Ok(r.seq);
        }
        let after = self.step(Input::Checkpoint {
            id: id.clone(),
            note: note.to_string(),
        })?;
        Ok(after.last_seq)
    }

    fn view(&self, mut instance: Instance) -> View {
        let turn = self.last_turn(&instance);
        if let Some(s) = self.last_session(&instance) {
            instance.resources.agent_session_id = Some(s.native_id);
        }
        let session = instance
            .resources
            .session_name
            .as_deref()
            .and_then(|n| self.tmux().pane(n))
            .map(|(_, dead)| !dead);
        View {
            instance,
            turn,
            session,
        }
    }

    /// The instance `id`: given, or the one this process runs in
    /// (`BATON_INSTANCE`, set for every turn's agent).
    pub fn resolve(&self, id: Option<&str>) -> Result<InstanceId> {
        let given = id.map(str::to_string).or_else(|| {
            std::env::var("BATON_INSTANCE")
                .ok()
                .filter(|s| !s.is_empty())
        });
        let Some(s) = given else {
            return Err(Error::bad_input(
                "which instance? none was given and this is not inside an agent's turn",
            )
            .hint("pass its id; `baton agent ls` lists them"));
        };
        InstanceId::parse(&s).map_err(|e| {
            Error::coded(
                ErrorCode::InstanceNotFound,
                format!("{s:?} is not an instance id: {e}"),
            )
            .hint("`baton agent ls` lists the instances")
        })
    }

    /// `baton agent spawn`: a coding instance in a new worktree, and the
    /// first turn of its agent, in the background.
    pub fn spawn(&self, o: SpawnOptions) -> Result<Instance> {
        let before = self.tick()?;
        let live = before
            .by_id
            .values()
            .filter(|i| !i.status.ended() && i.status != Status::PrCreated)
            .count();
        let max = self.settings.max_concurrent_instances as usize;
        if live >= max {
            return Err(Error::coded(
                ErrorCode::ResourceAllocationFailed,
                format!(
                    "{live} agent instances are live, as many as [instances] max_concurrent_instances allows ({max})"
                ),
            )
            .hint("end one with `baton agent kill ID`, or raise max_concurrent_instances in .baton/config.toml"));
        }
        let agent = self.agent_name(o.agent.as_deref())?;
        if o.interactive {
            self.check_tui(&agent)?;
        }
        let issue = o.issue.map(|n| self.read_issue(n)).transpose()?;
        if issue.is_none() && o.instructions.trim().is_empty() {
            return Err(Error::coded(
                ErrorCode::InvalidConfiguration,
                "the instructions are empty, and no GitHub issue was given",
            )
            .hint("say what the agent is to do, or give --issue N"));
        }
        let id = match (&o.id, &issue) {
            (Some(s), _) => InstanceId::parse(s).map_err(|e| {
                Error::coded(ErrorCode::InvalidConfiguration, format!("--id {s:?}: {e}"))
                    .hint("ids use letters, digits, '-', '_' and '.'")
            })?,
            (None, Some(i)) => self.new_id(&format!("issue {} {}", i.number, i.title))?,
            (None, None) => self.new_id(&o.instructions)?,
        };
        if self.eng.store.load(&id)?.is_some() {
            return Err(Error::coded(
                ErrorCode::InvalidConfiguration,
                format!("a task {id} exists already (an instance's first turn takes its id)"),
            )
            .hint("pick another --id"));
        }
        let base = match o.base.clone() {
            Some(b) => b,
            None => self.git.branch().ok_or_else(|| {
                Error::coded(
                    ErrorCode::InvalidConfiguration,
                    "the repository has no branch checked out to start from",
                )
                .hint("name the branch the work starts from with --base")
            })?,
        };
        if self.git.resolve(&format!("{base}^{{commit}}")).is_none() {
            return Err(Error::coded(
                ErrorCode::InvalidConfiguration,
                format!("the base branch {base:?} does not exist (or has no commit)"),
            )
            .hint("name an existing branch with --base, e.g. --base main"));
        }
        let branch = o.branch.clone().unwrap_or_else(|| format!("baton/{id}"));
        self.check_new_branch(&branch)?;
        let path = self.worktree_path(&id);
        if path.exists() {
            return Err(Error::coded(
                ErrorCode::InvalidConfiguration,
                format!("{} exists already", path.display()),
            )
            .hint("pick another --id, or move that folder away"));
        }
        let config = CodingConfig {
            base_branch: base.clone(),
            target_branch: Some(branch.clone()),
            instructions: o.instructions.clone(),
            require_review: o.require_review.unwrap_or(self.settings.require_review),
            max_reviews: o.max_reviews.unwrap_or(self.settings.max_reviews),
            execution_timeout_ms: o
                .execution_timeout_ms
                .unwrap_or(self.settings.execution_timeout_ms),
            agent: Some(agent.clone()),
            issue,
            system_prompt: o
                .system_prompt
                .clone()
                .filter(|s| !s.trim().is_empty())
                .or(self.settings.system_prompt.clone()),
            for_phase: o.for_phase.clone(),
        };
        self.step(Input::Spawn {
            id: id.clone(),
            config,
        })?;
        if let Err(e) = self.add_worktree(&path, &branch, &base) {
            return Err(self.failed(&id, ErrorCode::ResourceAllocationFailed, e));
        }
        let all = self.step(Input::Allocated {
            id: id.clone(),
            resources: Resources {
                worktree_path: Some(path.display().to_string()),
                session_name: o.interactive.then(|| session::session_name(&id)),
                branch: Some(branch),
                // Known before it starts: the terminal UI's own session.
                agent_session_id: if o.interactive {
                    self.chosen_session_id(&agent)
                } else {
                    None
                },
                session_host: o.interactive.then(|| self.eng.local().clone()),
            },
        })?;
        let inst = found(&all, &id)?.clone();
        let prompt = turn::coding_prompt(&inst);
        let started = if o.interactive {
            self.start_session(&inst, &agent, &prompt)
        } else {
            self.start_turn(&inst, &agent, prompt, None).map(|_| ())
        };
        if let Err(e) = started {
            return Err(self.failed(&id, ErrorCode::ResourceAllocationFailed, e));
        }
        Ok(found(&self.eng.store.instances()?, &id)?.clone())
    }

    /// The agent to run: given, else the project's default.
    fn agent_name(&self, given: Option<&str>) -> Result<String> {
        let cfg = &self.eng.project.config;
        let name = given
            .map(str::to_string)
            .or_else(|| cfg.defaults.agent.clone())
            .ok_or_else(|| {
                Error::coded(
                    ErrorCode::InvalidConfiguration,
                    "no agent was named and .baton/config.toml has no default agent",
                )
                .hint("pass --agent NAME, or set `agent` under [defaults]")
            })?;
        if !cfg.agents.contains_key(&name) {
            let mut known: Vec<&String> = cfg.agents.keys().collect();
            known.sort();
            return Err(Error::coded(
                ErrorCode::InvalidConfiguration,
                format!("agent {name:?} is not defined in .baton/config.toml"),
            )
            .hint(format!(
                "the agents defined are: {}",
                known
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        Ok(name)
    }

    /// A fresh id from the instructions' first words.
    fn new_id(&self, instructions: &str) -> Result<InstanceId> {
        let words: Vec<&str> = instructions.split_whitespace().take(5).collect();
        let slug = baton_core::ids::slugify(1, &words.join(" "));
        self.free_id(slug.trim_start_matches("01-"))
    }

    /// `base`, or `base-2`, `base-3`…: the first id no instance, task,
    /// branch `baton/<id>` or worktree folder uses.
    fn free_id(&self, base: &str) -> Result<InstanceId> {
        let all = self.eng.store.instances()?;
        for n in 1.. {
            let s = if n == 1 {
                base.to_string()
            } else {
                format!("{base}-{n}")
            };
            let id = InstanceId::parse(&s).map_err(|e| Error::op(e.to_string()))?;
            let taken = all.by_id.contains_key(&id)
                || self.eng.store.load(&id)?.is_some()
                || self
                    .git
                    .resolve(&format!("refs/heads/baton/{id}"))
                    .is_some()
                || self.worktree_path(&id).exists();
            if !taken {
                return Ok(id);
            }
        }
        unreachable!("some number is free")
    }

    fn worktree_path(&self, id: &InstanceId) -> PathBuf {
        self.settings.worktree_base.join(id.as_str())
    }

    fn check_new_branch(&self, branch: &str) -> Result<()> {
        if self
            .git
            .run(&["check-ref-format", "--branch", branch], &[])
            .is_err()
        {
            return Err(Error::coded(
                ErrorCode::InvalidConfiguration,
                format!("{branch:?} is not a valid branch name"),
            )
            .hint("name the branch like `feature/login` (see `git check-ref-format`)"));
        }
        if self.git.resolve(&format!("refs/heads/{branch}")).is_some() {
            return Err(Error::coded(
                ErrorCode::InvalidConfiguration,
                format!("a branch {branch} exists already"),
            )
            .hint("pick another --branch (or --id), or delete that branch if it is left over"));
        }
        if let Some(e) = crate::workdir::branch_in_the_way(&self.git, branch) {
            let mut coded = Error::coded(ErrorCode::InvalidConfiguration, e.message);
            coded.hints = e.hints;
            return Err(coded);
        }
        Ok(())
    }

    /// `git worktree add -b BRANCH PATH START`.
    fn add_worktree(&self, path: &Path, branch: &str, start: &str) -> Result<(), String> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        let p = path.display().to_string();
        self.git
            .run(&["worktree", "add", "-q", "-b", branch, &p, start], &[])
            .map_err(|e| format!("cannot create the worktree {p} on branch {branch}: {e}"))?;
        crate::workdir::share_into(&self.eng.project, &self.git, path);
        Ok(())
    }

    /// Records that `id` failed with `code` (ending its reviews with it)
    /// and returns the error for the caller.
    fn failed(&self, id: &InstanceId, code: ErrorCode, why: impl std::fmt::Display) -> Error {
        let reason = why.to_string();
        let err = Error::coded(code, reason.clone());
        match self.step(Input::Fail {
            id: id.clone(),
            code,
            reason,
        }) {
            Ok(_) => {
                let removed = self.clean_up(id);
                err.hint(removed.summary())
            }
            Err(e) => err.hint(format!("recording the failure failed too: {}", e.message)),
        }
    }
}

/// Whether record `r` concerns `ids` (an instance and its reviews).
fn about(r: &Record, ids: &[&InstanceId]) -> bool {
    use instance::Event as E;
    let hit = |i: &InstanceId| ids.contains(&i);
    match &r.event {
        E::ReviewRequested { parent, review } | E::MergedBack { review, parent, .. } => {
            hit(parent) || hit(review)
        }
        E::PrCreated { id, owner, .. } => hit(id) || hit(owner),
        e => hit(e.instance()),
    }
}

fn found<'a>(all: &'a Instances, id: &InstanceId) -> Result<&'a Instance> {
    all.get(id).ok_or_else(|| {
        Error::coded(
            ErrorCode::InstanceNotFound,
            format!("there is no agent instance {id}"),
        )
        .hint("`baton agent ls` lists the instances")
    })
}
