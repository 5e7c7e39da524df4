//! Consolidation: the team's work made one commit in the project. It is
//! journaled as started (with the commit message, the same on every
//! retry, and HEAD as the last good commit), the checks run (`[teams]
//! checks`, or `--check`), every change is staged and committed, and the
//! commit is journaled. A crash anywhere leaves the team `consolidating`;
//! `baton team resume` says so and `baton team consolidate` then offers
//! `--retry` (idempotent: a commit already made with that message is
//! found, never made twice), `--abort` (the project back at the last good
//! commit, what it held saved under `refs/baton-saved/`, the tasks
//! completed since reopened) or `--inspect` (the staged diff).

use super::Teams;
use crate::error::{Error, Result};
use crate::git::Git;
use baton_core::state::Checkpoint;
use baton_core::team::{self, Input, TeamStatus};

/// What `baton team consolidate` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Consolidate {
    /// A new consolidation (or the one under way, again).
    Run,
    Retry,
    Abort,
    Inspect,
}

/// How it ended.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Consolidated {
    /// `committed`, `unchanged` (nothing to commit), `aborted`,
    /// `inspected` or `checks-failed`.
    pub outcome: &'static str,
    pub commit: Option<String>,
    pub message: Option<String>,
    /// The failed check's command and the end of its output.
    pub failed_check: Option<(String, String)>,
    /// `--abort`: where the project's state was saved; the tasks reopened.
    pub saved: Option<String>,
    pub reopened: Vec<String>,
    /// `--inspect`: the staged changes.
    pub staged: Option<String>,
}

impl Teams<'_> {
    /// Whether the project's index holds staged changes.
    pub fn dirty_index(&self) -> bool {
        self.eng.git().is_some_and(Git::has_staged)
    }

    fn repo(&self) -> Result<Git> {
        self.eng.git().cloned().ok_or_else(|| {
            Error::bad_input(
                "consolidation commits the team's work, but the project is not a git repository",
            )
            .hint("run `git init` and commit first")
        })
    }

    pub fn consolidate(
        &self,
        id: &str,
        what: Consolidate,
        message: Option<String>,
        checks: &[String],
    ) -> Result<Consolidated> {
        let git = self.repo()?;
        let t = self.get(id)?;
        self.touch(id, team::LEAD)?;
        let under_way = t.status == TeamStatus::Consolidating;
        match what {
            Consolidate::Retry | Consolidate::Abort | Consolidate::Inspect if !under_way => {
                return Err(Error::bad_input(format!("team {id} is not consolidating"))
                    .hint(format!("start one with `baton team consolidate {id}`")));
            }
            Consolidate::Inspect => {
                let staged = git
                    .run(&["diff", "--cached", "--stat", "--patch"], &[])
                    .map_err(|e| Error::op(format!("cannot read the staged changes: {e}")))?;
                return Ok(Consolidated {
                    outcome: "inspected",
                    commit: None,
                    message: t.consolidation.map(|c| c.message),
                    failed_check: None,
                    saved: None,
                    reopened: Vec::new(),
                    staged: Some(staged),
                });
            }
            Consolidate::Abort => return self.abort(&git, id),
            _ => {}
        }
        let t = if under_way {
            t
        } else {
            let message = message.unwrap_or_else(|| {
                let done: Vec<String> = t
                    .tasks
                    .iter()
                    .filter(|x| x.status == team::TaskStatus::Completed)
                    .filter(|x| x.completed_at > t.last_consolidated_at)
                    .map(|x| format!("{} {}", x.id, x.title))
                    .collect();
                if done.is_empty() {
                    format!("team {id}: consolidation")
                } else {
                    format!("team {id}: {}", done.join("; "))
                }
            });
            let base = git.head();
            self.step(id, |_, _| {
                Ok(Input::StartConsolidation {
                    message: message.clone(),
                    base: base.clone(),
                })
            })?
            .0
        };
        let c = t.consolidation.clone().expect("consolidating");
        // Made already by a run that crashed before journaling it?
        if let Some(head) = git.head()
            && Some(&head) != c.base.as_ref()
            && git
                .run(&["log", "-1", "--format=%B", &head], &[])
                .is_ok_and(|m| m.trim() == c.message.trim())
        {
            self.step(id, |_, _| {
                Ok(Input::ConsolidationCommitted {
                    commit: head.clone(),
                })
            })?;
            return Ok(done("committed", Some(head), c.message));
        }
        let checks: Vec<String> = if checks.is_empty() {
            self.settings.checks.clone()
        } else {
            checks.to_vec()
        };
        for check in &checks {
            let out = std::process::Command::new("sh")
                .args(["-c", check])
                .current_dir(git.top())
                .output()
                .map_err(|e| Error::op(format!("cannot run check {check:?}: {e}")))?;
            if !out.status.success() {
                let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
                text.push_str(&String::from_utf8_lossy(&out.stderr));
                let tail = crate::process::tail(&text, 2_000).to_string();
                return Ok(Consolidated {
                    outcome: "checks-failed",
                    commit: None,
                    message: Some(c.message),
                    failed_check: Some((check.clone(), tail)),
                    saved: None,
                    reopened: Vec::new(),
                    staged: None,
                });
            }
        }
        git.run(&["add", "-A", "--", ":/", ":!.baton"], &[])
            .map_err(|e| Error::op(format!("cannot stage the team's work: {e}")))?;
        self.eng.crash_point("consolidate-staged", id);
        if !self.dirty_index() && git.head() == c.base {
            self.step(id, |_, _| {
                Ok(Input::ConsolidationCommitted {
                    commit: c.base.clone().unwrap_or_default(),
                })
            })?;
            return Ok(done("unchanged", c.base.clone(), c.message));
        }
        let head = git
            .commit_staged(&c.message)
            .map_err(|e| Error::op(format!("cannot commit the team's work: {e}")))?;
        self.eng.crash_point("consolidate-committed", id);
        self.step(id, |_, _| {
            Ok(Input::ConsolidationCommitted {
                commit: head.clone(),
            })
        })?;
        Ok(done("committed", Some(head), c.message))
    }

    /// Back to the last good commit, what the project held saved first.
    fn abort(&self, git: &Git, id: &str) -> Result<Consolidated> {
        let t = self.get(id)?;
        let c = t.consolidation.clone().expect("consolidating");
        let safety = format!(
            "refs/baton-saved/teams/{id}/consolidation/{}",
            self.now()?.millis()
        );
        if let Some(base) = &c.base {
            let cp = Checkpoint {
                branch: git.branch(),
                head: Some(base.clone()),
                snapshot: Some(base.clone()),
                snapshot_ref: None,
            };
            git.restore(&cp, &safety).map_err(|e| {
                Error::op(format!("cannot put the project back at {base}: {e}")).hint(format!(
                    "what was there is saved at {safety} if that ref exists"
                ))
            })?;
        }
        let (_, records) = self.step(id, |_, _| Ok(Input::AbortConsolidation))?;
        let reopened = records
            .iter()
            .find_map(|r| match &r.event {
                team::Event::ConsolidationAborted { reopened, .. } => Some(reopened.clone()),
                _ => None,
            })
            .unwrap_or_default();
        Ok(Consolidated {
            outcome: "aborted",
            commit: c.base,
            message: Some(c.message),
            failed_check: None,
            saved: Some(safety),
            reopened,
            staged: None,
        })
    }
}

fn done(outcome: &'static str, commit: Option<String>, message: String) -> Consolidated {
    Consolidated {
        outcome,
        commit,
        message: Some(message),
        failed_check: None,
        saved: None,
        reopened: Vec::new(),
        staged: None,
    }
}
