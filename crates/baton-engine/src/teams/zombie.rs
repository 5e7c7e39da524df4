//! After zombie mode: the lead's choice for each teammate's work, which
//! went on while the lead was away. `continue` leaves it as it is;
//! `commit` commits what the teammate's worktree holds onto its branch;
//! `rollback` puts its branch (and worktree) back to the last good commit,
//! after saving what it replaces under `refs/baton-saved/teams/...`, never
//! resetting anything without a saved ref. The branch is the one its
//! checkpoints name, else the one baton gave an agent teammate. Journaled
//! either way; the journal moves the teammate's open tasks' checkpoints to
//! the commit made or gone back to, so a task reassigned after a roll back
//! is taken up from the good commit, not from the work discarded.

use super::Teams;
use crate::error::{Error, Result};
use baton_core::team::{self, Input, Team};
use baton_sys::git::Git;
use std::path::PathBuf;

/// What `team resolve` did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Resolved {
    pub teammate: String,
    pub choice: String,
    pub branch: Option<String>,
    /// The branch's commit after it.
    pub head: Option<String>,
    /// Where what a roll back replaced is saved.
    pub saved: Option<String>,
}

impl Teams<'_> {
    /// `baton team resolve TEAM NAME continue|commit|rollback`.
    pub fn resolve(&self, id: &str, name: &str, choice: &str) -> Result<Resolved> {
        let t = self.get(id)?;
        if !t.teammates.contains_key(name) {
            let names: Vec<&str> = t.teammates.keys().map(String::as_str).collect();
            return Err(
                Error::bad_input(format!("team {id} has no teammate {name:?}"))
                    .hint(format!("its teammates are: {}", names.join(", "))),
            );
        }
        let branch = work_branch(&t, name).or_else(|| self.instance_branch(&t.teammates[name]));
        let (head, saved) = match choice {
            "continue" => (None, None),
            "commit" => (Some(self.commit(&t, name, branch.as_deref())?), None),
            "rollback" => {
                let (h, s) = self.rollback(&t, name, branch.as_deref())?;
                (Some(h), Some(s))
            }
            other => {
                return Err(Error::bad_input(format!("{other:?} is not a choice"))
                    .hint("choose continue, commit or rollback"));
            }
        };
        self.touch(id, team::LEAD)?;
        self.step(id, |_, _| {
            Ok(Input::ResolveZombie {
                teammate: name.into(),
                choice: choice.into(),
                saved: saved.clone(),
                head: head.clone(),
                branch: branch.clone(),
            })
        })?;
        Ok(Resolved {
            teammate: name.into(),
            choice: choice.into(),
            branch,
            head,
            saved,
        })
    }

    fn git(&self) -> Result<Git> {
        self.eng.git().cloned().ok_or_else(|| {
            Error::bad_input("a teammate's work is in git, but the project is not a git repository")
                .hint("continue is the only choice here")
        })
    }

    fn commit(&self, t: &Team, name: &str, branch: Option<&str>) -> Result<String> {
        let git = self.git()?;
        let branch = branch.ok_or_else(|| no_branch(t, name))?;
        let wt = worktree_of(&git, branch).ok_or_else(|| {
            Error::bad_input(format!(
                "branch {branch} of {name} is checked out in no worktree: there is nothing to commit"
            ))
            .hint("choose continue, or rollback")
        })?;
        let wg = crate::repo::open(&wt)
            .ok_or_else(|| Error::op(format!("{} is not a worktree", wt.display())))?;
        wg.commit_worktree(&format!("team {}: {name}'s work, kept by the lead", t.id))
            .map_err(|e| Error::op(format!("cannot commit {name}'s work on {branch}: {e}")))
    }

    /// Back to the last good commit: the latest green checkpoint of the
    /// teammate's task, else the team's last consolidation.
    fn rollback(&self, t: &Team, name: &str, branch: Option<&str>) -> Result<(String, String)> {
        let git = self.git()?;
        let branch = branch.ok_or_else(|| no_branch(t, name))?;
        let good = t
            .tasks
            .iter()
            .filter(|x| x.assigned_to.as_deref() == Some(name))
            .filter_map(|x| x.last_green.as_ref())
            .filter(|c| c.head.is_some())
            .max_by_key(|c| c.last_progress_at)
            .and_then(|c| c.head.clone())
            .or_else(|| t.last_good_commit.clone())
            .ok_or_else(|| {
                Error::bad_input(format!(
                    "{name} has no good commit to go back to: no green checkpoint and no consolidation yet"
                ))
                .hint("choose continue or commit")
            })?;
        let good = git.resolve(&format!("{good}^{{commit}}")).ok_or_else(|| {
            Error::op(format!(
                "the last good commit {good} is not in this repository"
            ))
            .hint("fetch it first")
        })?;
        let now = self.now()?.millis();
        let saved_prefix = format!("teams/{}/{name}", t.id);
        match worktree_of(&git, branch) {
            Some(wt) if same_dir(&wt, git.top()) => {
                return Err(Error::bad_input(format!(
                    "branch {branch} of {name} is checked out in the project folder itself; baton does not reset your own folder"
                ))
                .hint(format!("check out another branch there first, or roll back by hand to {good}")));
            }
            Some(wt) => {
                // Saves what the worktree holds, then checks the branch out
                // at the good commit.
                crate::workdir::check_out(&git, &wt, branch, &good, &saved_prefix, now, &[])
                    .map_err(|(what, e)| {
                        Error::op(format!("cannot roll back {name}'s worktree ({what}): {e}"))
                    })?;
            }
            None => {
                let tip = git
                    .resolve(&format!("refs/heads/{branch}"))
                    .ok_or_else(|| {
                        Error::bad_input(format!("branch {branch} of {name} does not exist"))
                    })?;
                let saved = format!(
                    "refs/baton-saved/{saved_prefix}/{now}-{}",
                    std::process::id()
                );
                git.run(&["update-ref", &saved, &tip], &[])
                    .and_then(|_| {
                        git.run(
                            &["update-ref", &format!("refs/heads/{branch}"), &good, &tip],
                            &[],
                        )
                    })
                    .map_err(|e| Error::op(format!("cannot roll back {branch}: {e}")))?;
            }
        }
        // Whatever was saved (the worktree's state, or the branch's tip).
        let saved = git
            .run(
                &[
                    "for-each-ref",
                    "--sort=-refname",
                    "--count=1",
                    "--format=%(refname)",
                    &format!("refs/baton-saved/{saved_prefix}/"),
                ],
                &[],
            )
            .map(|s| s.trim().to_string())
            .unwrap_or_default();
        Ok((good, saved))
    }
}

/// The branch `name` works on: its current task's checkpoint's, else its
/// latest checkpoint's (else, for an agent teammate, the branch baton gave
/// it).
fn work_branch(t: &Team, name: &str) -> Option<String> {
    let m = t.teammates.get(name)?;
    let current = m.current_task.as_deref().and_then(|c| t.task(c));
    current
        .into_iter()
        .chain(
            t.tasks
                .iter()
                .filter(|x| x.assigned_to.as_deref() == Some(name)),
        )
        .filter_map(|x| x.checkpoint.as_ref())
        .find_map(|c| c.git_branch.clone())
}

fn no_branch(t: &Team, name: &str) -> Error {
    Error::bad_input(format!(
        "{name} has checkpointed no branch in team {}",
        t.id
    ))
    .hint("choose continue; a teammate's checkpoints name the branch its work is on (`--branch`), and baton gives each agent teammate one")
}

fn same_dir(a: &std::path::Path, b: &std::path::Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

/// The worktree `branch` is checked out in, if any.
fn worktree_of(git: &Git, branch: &str) -> Option<PathBuf> {
    let out = git.run(&["worktree", "list", "--porcelain"], &[]).ok()?;
    let mut path = None;
    for line in out.lines() {
        if let Some(p) = line.strip_prefix("worktree ") {
            path = Some(PathBuf::from(p));
        } else if line.strip_prefix("branch ") == Some(&format!("refs/heads/{branch}")) {
            return path;
        }
    }
    None
}
