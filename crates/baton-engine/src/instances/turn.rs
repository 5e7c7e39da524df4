//! The turns of an instance's agent: each a task of the built-in turn
//! workflow, created here and run in the background; the prompts of a
//! coding agent's first turn, a review agent's turn and a turn that brings
//! a review's feedback; and that feedback's delivery once the agent's
//! turn before it has ended (never two turns of one agent at once).

use super::Agents;
use crate::engine::{Imported, RunOptions};
use crate::error::Result;
use baton_core::TaskId;
use baton_core::instance::{Config, Decision, Input, Instance, Instances, Status};
use baton_core::lease::DisplayStatus;
use baton_core::state::AgentSession;

impl Agents<'_> {
    /// Starts a turn of `inst`'s agent in the background: a task whose
    /// prompt is `prompt`, continuing the native `session` if given.
    pub(super) fn start_turn(
        &self,
        inst: &Instance,
        agent: &str,
        prompt: String,
        session: Option<AgentSession>,
    ) -> Result<TaskId> {
        let task = self.create_turn(inst, agent, prompt, session)?;
        self.step(Input::Turn {
            id: inst.id.clone(),
            task: task.clone(),
        })?;
        self.turn_recorded(inst, &task)?;
        Ok(task)
    }

    /// Creates the task of `inst`'s next turn, not started.
    fn create_turn(
        &self,
        inst: &Instance,
        agent: &str,
        prompt: String,
        session: Option<AgentSession>,
    ) -> Result<TaskId> {
        let task = self.turn_id(inst)?;
        self.eng.run(RunOptions {
            workflow: crate::builtin::AGENT_TURN.into(),
            description: prompt,
            id: Some(task.to_string()),
            agent: Some(agent.to_string()),
            create_only: true,
            instance: Some(inst.id.clone()),
            imported: session.map(|session| Imported {
                session,
                first_prompt: None,
                events: Vec::new(),
            }),
            ..Default::default()
        })?;
        Ok(task)
    }

    /// Once a turn is journaled: its parents' logs link to it, and it
    /// runs in the background.
    fn turn_recorded(&self, inst: &Instance, task: &TaskId) -> Result<()> {
        // A review's turn is a child session of its parent's turn, a
        // teammate's of its team: their logs link to it (rendered again
        // from the store now).
        self.eng.parents_of_turn_changed(inst.id.as_str());
        self.eng.detach(task)?;
        Ok(())
    }

    /// Journals the next turn of `p` (found idle on the read `seen`),
    /// with `also` (a review's feedback delivered) in the same commit
    /// decided on `seen`: the turn's task is created first, not started.
    /// A process whose read is older than another's turn of `p` commits
    /// nothing and removes the task it created (`None`), so an agent never
    /// runs two turns at once; a crash before the commit leaves what the
    /// turn was to bring undelivered, for the next tick, never lost. The
    /// caller starts the turn ([`Self::turn_recorded`]).
    fn commit_turn_on(
        &self,
        seen: &Instances,
        p: &Instance,
        also: Option<Input>,
        agent: &str,
        prompt: String,
    ) -> Result<Option<TaskId>> {
        let task = self.create_turn(p, agent, prompt, self.last_session(p))?;
        let mut inputs: Vec<Input> = also.into_iter().collect();
        inputs.push(Input::Turn {
            id: p.id.clone(),
            task: task.clone(),
        });
        match self.commit_on(seen, &inputs) {
            Ok(super::Committed::Done(_)) => Ok(Some(task)),
            Ok(super::Committed::Changed) => {
                let _ = self.eng.remove(&task);
                Ok(None)
            }
            // Refused by the rules: nothing was written.
            Err(e) if e.code.is_some() => {
                let _ = self.eng.remove(&task);
                Err(e)
            }
            // The store failed: the commit may have landed, journaling the
            // turn, so its task stays (removing it would lose what the turn
            // brings and let another turn start beside it; the simulator
            // found that). Unstarted, it shows as crashed, and `baton
            // resume` (as doctor says) runs it.
            Err(e) => Err(e),
        }
    }

    /// The first turn is the instance's own id; later ones `ID-tN`.
    fn turn_id(&self, inst: &Instance) -> Result<TaskId> {
        let mut n = inst.turns.len() + 1;
        loop {
            let s = if n == 1 {
                inst.id.to_string()
            } else {
                format!("{}-t{n}", inst.id)
            };
            let id = TaskId::parse(&s).map_err(|e| crate::Error::op(e.to_string()))?;
            if self.eng.store.load(&id)?.is_none() {
                return Ok(id);
            }
            n += 1;
        }
    }

    /// How the latest turn of `inst` stands, if it had one.
    pub(super) fn last_turn(&self, inst: &Instance) -> Option<(TaskId, DisplayStatus)> {
        let t = inst.turns.last()?;
        let snap = self.eng.load(t).ok()?;
        Some((t.clone(), self.eng.status_of(&snap)))
    }

    /// The native session of `inst`'s latest agent run, to continue (a
    /// generic agent's runs have none).
    pub(super) fn last_session(&self, inst: &Instance) -> Option<AgentSession> {
        inst.turns.iter().rev().find_map(|t| {
            let snap = self.eng.load(t).ok()?;
            snap.state
                .agent_runs()
                .last()
                .map(|(_, run)| run.session.clone())
                .filter(|s| !s.native_id.is_empty())
        })
    }

    /// Starts the turn that brings a person's comments on a coding
    /// instance's work (from the board) to its agent, in its own session,
    /// once its turn before has ended: judged on a fresh read, the turn
    /// journaled on it ([`Self::commit_turn_on`]), then the comments
    /// marked delivered to it. A crash between the two brings them again
    /// in a later turn (never lost); the turn's commit decides which
    /// process brings them, so they never start two turns.
    pub(super) fn deliver_comments(&self, all: &Instances) -> Result<()> {
        use baton_core::comment::{self, Delivered};
        for pid in all.by_id.keys() {
            let seen = self.eng.store.instances()?;
            let Some(p) = seen.get(pid) else { continue };
            let Config::Coding(c) = &p.config else {
                continue;
            };
            if p.status.ended() || p.resources.session_name.is_some() {
                continue;
            }
            let target = comment::instance_target(p.id.as_str());
            let pending: Vec<_> = self
                .eng
                .store
                .comments(&target)?
                .into_iter()
                .filter(|c| c.delivered.is_none())
                .collect();
            if pending.is_empty() || self.turn_busy(p) {
                continue;
            }
            let prompt = format!(
                "A person reviewed your work on baton's board. Their comments:\n\n{}\nAddress them and commit.",
                comment::section(&pending)
            );
            let agent = c.agent.clone().unwrap_or_default();
            let started = self
                .commit_turn_on(&seen, p, None, &agent, prompt)
                .and_then(|task| {
                    let Some(task) = task else { return Ok(()) };
                    let ids: Vec<String> = pending.iter().map(|c| c.id.clone()).collect();
                    let to = Delivered {
                        to: task.to_string(),
                        at: self.eng.now(),
                    };
                    self.eng.store.deliver_comments(&target, &ids, &to)?;
                    self.turn_recorded(p, &task)
                });
            if let Err(e) = started {
                self.eng.observer().info(&format!(
                    "could not start the turn of {} that brings a person's comments: {} (they are in `baton agent log {}`)",
                    p.id, e.message, p.id
                ));
            }
        }
        Ok(())
    }

    /// Whether `p`'s latest turn is still going.
    fn turn_busy(&self, p: &Instance) -> bool {
        self.last_turn(p).is_some_and(|(_, s)| {
            !matches!(
                s,
                DisplayStatus::Complete | DisplayStatus::Failed | DisplayStatus::Cancelled
            )
        })
    }

    /// Starts the turn that brings each merged-back review's feedback to
    /// its coding agent, once that agent's turn before has ended. Each is
    /// judged on a fresh read and journaled with its turn in one commit
    /// decided on it ([`Self::start_feedback_turn`]), so neither two
    /// reviews' feedback nor two processes ever start two turns of one
    /// agent at once (the simulator, `baton-sim`, found both).
    pub(super) fn deliver_feedback(&self, all: &Instances) -> Result<()> {
        let waiting: Vec<_> = all
            .by_id
            .values()
            .filter(|r| {
                r.review().is_some_and(|rs| {
                    rs.decision == Some(Decision::MergeBack) && !rs.feedback_delivered
                })
            })
            .map(|r| r.id.clone())
            .collect();
        for rid in waiting {
            let seen = self.eng.store.instances()?;
            let Some(r) = seen.get(&rid) else { continue };
            let Some(rs) = r.review() else { continue };
            if rs.feedback_delivered {
                continue; // another process delivered it
            }
            let Some(p) = seen.get(&rs.parent_instance_id) else {
                continue;
            };
            if p.status.ended() {
                continue;
            }
            if let Some(name) = &p.resources.session_name {
                // An interactive agent: the feedback is typed into its pane.
                if self.tmux().pane(name).is_none_or(|(_, dead)| dead) {
                    continue;
                }
                if self
                    .step(Input::FeedbackDelivered {
                        review: r.id.clone(),
                    })
                    .is_err()
                {
                    continue;
                }
                let prompt = feedback_prompt(p, r, &rs.decision_reason.clone().unwrap_or_default());
                if let Err(e) = self.tmux().type_text(name, &prompt) {
                    self.eng.observer().info(&format!(
                        "could not type the feedback of review {} into {}'s pane: {e} (the feedback is in `baton agent log {}`)",
                        r.id, p.id, p.id
                    ));
                }
                continue;
            }
            if self.turn_busy(p) {
                continue;
            }
            let agent = match &p.config {
                Config::Coding(c) => c.agent.clone().unwrap_or_default(),
                Config::Review(_) => continue,
            };
            let prompt = feedback_prompt(p, r, &rs.decision_reason.clone().unwrap_or_default());
            let delivered = Input::FeedbackDelivered {
                review: r.id.clone(),
            };
            let started = self
                .commit_turn_on(&seen, p, Some(delivered), &agent, prompt)
                .and_then(|t| t.map_or(Ok(()), |t| self.turn_recorded(p, &t)));
            if let Err(e) = started {
                self.eng.observer().info(&format!(
                    "could not start the turn of {} that brings the feedback of review {}: {} (the feedback is in `baton agent log {}`; `baton doctor` says what is left)",
                    p.id, r.id, e.message, p.id
                ));
            }
        }
        Ok(())
    }
}

/// What every turn's agent is told about baton.
fn footer(inst: &Instance) -> String {
    let path = inst.resources.worktree_path.as_deref().unwrap_or("?");
    let branch = inst.resources.branch.as_deref().unwrap_or("?");
    let Some(c) = inst.coding() else {
        return String::new();
    };
    let Config::Coding(cfg) = &inst.config else {
        return String::new();
    };
    let left = c.max_reviews.saturating_sub(c.review_count);
    let mut s = format!(
        "\n\n---\nYou are baton agent instance {id}, working in the git worktree {path} on branch {branch} (from {base}). Commit your work on that branch as you go.\n",
        id = inst.id,
        base = cfg.base_branch,
    );
    if left > 0 {
        s.push_str(&format!(
            "When the work is ready for review, run `baton agent review` (or call baton's MCP tool request_review): a review agent checks it on a copy of your branch, and its changes and feedback come back to you. Reviews left: {left}.\n"
        ));
    }
    if cfg.require_review && c.review_count == 0 {
        s.push_str("A review is required before this work can become a pull request.\n");
    } else {
        s.push_str("When the work is ready to be merged, run `baton agent push` (or call baton's MCP tool create_pr): your branch is pushed and a pull request opened.\n");
    }
    s
}

/// The prompt of a coding agent's first turn.
pub(super) fn coding_prompt(inst: &Instance) -> String {
    let Config::Coding(cfg) = &inst.config else {
        return String::new();
    };
    let standing = cfg
        .system_prompt
        .as_ref()
        .map(|s| format!("{}\n\n---\n\n", s.trim()))
        .unwrap_or_default();
    format!("{standing}{}{}", cfg.task(), footer(inst))
}

/// The prompt of a review agent's turn, on a fork of `parent`'s branch.
pub(super) fn review_prompt(review: &Instance, parent: &Instance) -> String {
    let Config::Review(rc) = &review.config else {
        return String::new();
    };
    let instructions = match &parent.config {
        Config::Coding(c) => c.task(),
        Config::Review(_) => String::new(),
    };
    let path = review.resources.worktree_path.as_deref().unwrap_or("?");
    let branch = review.resources.branch.as_deref().unwrap_or("?");
    let pbranch = parent.resources.branch.as_deref().unwrap_or("?");
    let ask = rc.review_prompt.clone().unwrap_or_else(|| {
        "Review this work: is it correct and complete for its instructions, is it tested, is it clear? Fix what you can yourself.".into()
    });
    let iteration = review.review().map(|r| r.iteration).unwrap_or(1);
    format!(
        "{ask}\n\nYou are baton review instance {rid} (review {iteration} of coding instance {pid}). This worktree ({path}, branch {branch}) is a copy of its branch {pbranch}; `git log` and `git diff` show its work. Its instructions were:\n\n{instructions}\n\n---\nCommit any fix you make on your branch. When you are done, decide:\n- more work is needed: run `baton agent merge-back --feedback \"...\"` (or call baton's MCP tool merge_back): your commits are merged into {pbranch} and your feedback goes to the coding agent, which goes on with it;\n- the work is ready: run `baton agent push` (or call baton's MCP tool push_to_github): your commits are merged into {pbranch}, which is pushed, and a pull request is opened.\n",
        rid = review.id,
        pid = parent.id,
    )
}

/// The prompt of the turn that brings review `r`'s feedback to `p`.
fn feedback_prompt(p: &Instance, r: &Instance, feedback: &str) -> String {
    let iteration = r.review().map(|s| s.iteration).unwrap_or(1);
    let branch = p.resources.branch.as_deref().unwrap_or("?");
    let mut s = format!(
        "Review {iteration} of your work is done (by baton review instance {rid}); its changes were merged into your branch {branch}. The reviewer's feedback:\n\n{feedback}\n\nAddress it and commit.",
        rid = r.id,
    );
    if let Some(c) = p.coding() {
        let left = c.max_reviews.saturating_sub(c.review_count);
        if left > 0 && p.status == Status::Working {
            s.push_str(&format!(
                " When it is ready, run `baton agent review` again (reviews left: {left})."
            ));
        }
    }
    s.push('\n');
    s
}
