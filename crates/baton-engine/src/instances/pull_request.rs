//! Ending the loop with a pull request: `create_pr` (a coding agent's own,
//! when no review is required or one has been had) and `push_to_github`
//! (a review's decision: its commits merged into the coding agent's
//! branch first). The coding agent's branch is pushed to the remote and
//! the pull request opened through GitHub's REST API; the coding instance
//! becomes `pr_created` with its number and URL.

use super::{Agents, found};
use crate::error::{Error, Result};
use crate::github::NewPull;
use baton_core::instance::{self, Config, ErrorCode, Input, Instance, InstanceId, PullRequest};
use baton_sys::git::{Git, MergeFailure};
use std::path::Path;

/// `baton agent push`.
#[derive(Debug, Clone, Default)]
pub struct PushOptions {
    /// Default: the first line of the instructions.
    pub title: Option<String>,
    /// Default: the instructions, and which instance opened it.
    pub body: Option<String>,
    pub draft: bool,
}

impl Agents<'_> {
    /// A pull request was closed on GitHub (a webhook delivery): the
    /// coding instances that opened it (matched by its URL) become
    /// `pr_merged` or `pr_closed`. Returns them.
    pub fn pull_request_closed(&self, url: &str, merged: bool) -> Result<Vec<InstanceId>> {
        let all = self.eng.store.instances()?;
        let mut moved = Vec::new();
        for i in all.by_id.values() {
            let opened = i
                .coding()
                .and_then(|c| c.pull_request.as_ref())
                .is_some_and(|pr| pr.url == url);
            if opened && i.status == instance::Status::PrCreated {
                self.step(Input::PrClosed {
                    id: i.id.clone(),
                    merged,
                })?;
                moved.push(i.id.clone());
            }
        }
        Ok(moved)
    }

    /// `create_pr` for coding instance `id`, `push_to_github` for review
    /// `id`. Returns the coding instance, now `pr_created`.
    pub fn push(&self, id: &InstanceId, o: PushOptions) -> Result<Instance> {
        let all = self.tick()?;
        // The rules first: nothing is pushed for a refused request.
        let placeholder = PullRequest {
            number: 0,
            url: String::new(),
        };
        instance::decide(
            &all,
            Input::PrCreated {
                id: id.clone(),
                pr: placeholder,
            },
            self.eng.now(),
        )?;
        let i = found(&all, id)?;
        let (owner, review) = match i.review() {
            Some(r) => (found(&all, &r.parent_instance_id)?, Some(i)),
            None => (i, None),
        };
        let Config::Coding(cfg) = &owner.config else {
            unreachable!("an owner is a coding instance")
        };
        let target = self.pull_request_target()?;
        let failed = |what: String| Error::coded(ErrorCode::PrCreationFailed, what);
        let (Some(opath), Some(branch)) = (&owner.resources.worktree_path, &owner.resources.branch)
        else {
            return Err(failed(format!("{} has no worktree and branch", owner.id)));
        };
        let ogit = crate::repo::open(Path::new(opath))
            .ok_or_else(|| failed(format!("{opath} is not a git worktree")))?;
        ogit.commit_worktree(&format!("baton: the work of {}", owner.id))
            .map_err(|e| failed(format!("cannot commit the work in {opath}: {e}")))?;
        if let Some(r) = review {
            self.merge_review(r, &ogit, branch)?;
        }
        self.git
            .run(
                &[
                    "push",
                    "-q",
                    "--no-verify",
                    &target.remote,
                    &format!("refs/heads/{branch}:refs/heads/{branch}"),
                ],
                &[],
            )
            .map_err(|e| {
                failed(format!(
                    "cannot push {branch} to {}: {}",
                    target.remote, e.stderr
                ))
                .hint("check that the remote is reachable and that you may push to it; nothing was opened")
            })?;
        let title = o.title.clone().unwrap_or_else(|| match &cfg.issue {
            Some(i) => title_of(&i.title),
            None => title_of(&cfg.instructions),
        });
        let reviews =
            owner.coding().map(|c| c.review_count).unwrap_or(0) + u32::from(review.is_some());
        let body = o.body.clone().unwrap_or_else(|| {
            // "Closes #N" links the issue, which GitHub closes on merge.
            let closes = cfg
                .issue
                .as_ref()
                .map(|i| format!("Closes #{}\n\n", i.number))
                .unwrap_or_default();
            format!(
                "{closes}{}\n\n---\nOpened by baton agent instance `{}` after {reviews} review(s).",
                cfg.task().trim(),
                owner.id
            )
        });
        let pull = target
            .github
            .create_pull(
                &target.repo,
                &NewPull {
                    title: &title,
                    body: &body,
                    head: branch,
                    base: &cfg.base_branch,
                    draft: o.draft,
                },
            )
            .map_err(|e| {
                failed(format!(
                    "{branch} was pushed to {}, but the pull request into {} of {} could not be opened: {e}",
                    target.remote, cfg.base_branch, target.repo
                ))
                .hint("check the token's rights and that the base branch is on GitHub, then call push again (it reuses an open pull request)")
            })?;
        let all = self.step(Input::PrCreated {
            id: id.clone(),
            pr: PullRequest {
                number: pull.number,
                url: pull.url,
            },
        })?;
        if review.is_some() {
            self.clean_up(id);
        }
        Ok(found(&all, &owner.id)?.clone())
    }

    /// A review's commits into its parent's branch before the push.
    fn merge_review(&self, r: &Instance, ogit: &Git, branch: &str) -> Result<()> {
        let (Some(rpath), Some(rbranch)) = (&r.resources.worktree_path, &r.resources.branch) else {
            return Ok(());
        };
        let update_failed = |what: String| Error::coded(ErrorCode::ParentUpdateFailed, what);
        crate::repo::open(Path::new(rpath))
            .ok_or_else(|| update_failed(format!("{rpath} is not a git worktree")))?
            .commit_worktree(&format!("baton: review {}", r.id))
            .map_err(|e| update_failed(format!("cannot commit the review's work: {e}")))?;
        match ogit.merge_branch(rbranch, &format!("baton: review {} into {branch}", r.id)) {
            Ok(()) => Ok(()),
            Err(MergeFailure::Conflict(files)) => Err(Error::coded(
                ErrorCode::MergeConflict,
                format!(
                    "merging review {}'s branch {rbranch} into {branch} conflicts in {}; {branch} is unchanged and nothing was pushed",
                    r.id,
                    files.join(", ")
                ),
            )
            .hint(format!(
                "in the review's worktree ({rpath}), merge {branch} into {rbranch}, resolve and commit, then push again"
            ))),
            Err(MergeFailure::Failed(e)) => Err(update_failed(format!(
                "cannot merge {rbranch} into {branch}: {e}"
            ))),
        }
    }
}

/// The first line of the instructions, at most 72 characters.
fn title_of(instructions: &str) -> String {
    let line = instructions
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("Work by a baton agent");
    let mut t: String = line.chars().take(72).collect();
    if line.chars().count() > 72 {
        t.pop();
        t.push('…');
    }
    t
}
