//! The review loop's two moves with git in them: `request_review` (the
//! coding agent's work committed on its branch, a review instance on a
//! fork of that branch, its agent started) and `merge_back` (the review's
//! branch merged into its parent's, all or nothing, the feedback on its
//! way to the coding agent, the review cleaned up).

use super::{Agents, found, turn};
use crate::error::{Error, Result};
use baton_core::instance::{self, ErrorCode, Input, Instance, InstanceId, Resources, ReviewConfig};
use baton_sys::git::MergeFailure;
use std::path::PathBuf;

/// `baton agent review`.
#[derive(Debug, Clone, Default)]
pub struct ReviewOptions {
    pub id: Option<String>,
    /// What the reviewer is asked (default: `[instances.review]
    /// review_prompt`, else baton's).
    pub prompt: Option<String>,
    /// The reviewing agent (default: the coding instance's).
    pub agent: Option<String>,
    /// Fail the review after this long (default: `[instances.review]
    /// timeout_minutes`).
    pub timeout_ms: Option<u64>,
}

impl Agents<'_> {
    /// `request_review`: a review instance on a fork of `parent`'s branch,
    /// with its agent started.
    pub fn request_review(&self, parent: &InstanceId, o: ReviewOptions) -> Result<Instance> {
        let all = self.tick()?;
        let k = all.reviews_of(parent).count() + 1;
        let rid = match &o.id {
            Some(s) => InstanceId::parse(s).map_err(|e| {
                Error::coded(ErrorCode::InvalidConfiguration, format!("--id {s:?}: {e}"))
            })?,
            None => self.free_id(&format!("{parent}-r{k}"))?,
        };
        let parent_agent = all
            .get(parent)
            .and_then(|p| match &p.config {
                instance::Config::Coding(c) => c.agent.clone(),
                instance::Config::Review(_) => None,
            })
            .unwrap_or_default();
        let agent = match &o.agent {
            Some(a) => self.agent_name(Some(a))?,
            None => parent_agent,
        };
        // The review's branch and folder must be new: what baton records as
        // the review's is then only ever what baton made.
        let rbranch = format!("baton/{rid}");
        let rpath: PathBuf = self.worktree_path(&rid);
        self.check_new_branch(&rbranch).map_err(|e| {
            Error::coded(ErrorCode::ForkFailed, e.message.clone()).hint(format!(
                "nothing was started; pick another --review-id, or delete the branch {rbranch} if it is left over"
            ))
        })?;
        if rpath.exists() {
            return Err(Error::coded(
                ErrorCode::ForkFailed,
                format!("{} exists already", rpath.display()),
            )
            .hint("nothing was started; pick another --review-id, or move that folder away"));
        }
        let defaults = &self.settings.review;
        let config = ReviewConfig {
            review_prompt: o.prompt.clone().or(defaults.review_prompt.clone()),
            preserve_changes: defaults.preserve_changes,
            timeout_ms: o.timeout_ms.unwrap_or(defaults.timeout_ms),
            agent: Some(agent.clone()),
        };
        let all = self.step(Input::RequestReview {
            parent: parent.clone(),
            review: rid.clone(),
            config,
        })?;
        let p = found(&all, parent)?.clone();
        let (Some(ppath), Some(pbranch)) = (&p.resources.worktree_path, &p.resources.branch) else {
            return Err(self.failed(
                &rid,
                ErrorCode::ForkFailed,
                format!("{parent} has no worktree and branch to fork"),
            ));
        };
        // Everything the coding agent did is on its branch before the fork.
        let committed = crate::repo::open(std::path::Path::new(ppath))
            .ok_or_else(|| format!("{ppath} is not a git worktree"))
            .and_then(|g| {
                g.commit_worktree(&format!("baton: the work of {parent} for review {k}"))
                    .map_err(|e| e.to_string())
            });
        if let Err(e) = committed {
            return Err(self.failed(
                &rid,
                ErrorCode::ForkFailed,
                format!("cannot commit the work of {parent} in {ppath}: {e}"),
            ));
        }
        if let Err(e) = self.add_worktree(&rpath, &rbranch, pbranch) {
            return Err(self.failed(&rid, ErrorCode::ForkFailed, e));
        }
        self.eng.crash_point("review-forked", rid.as_str());
        let all = self.step(Input::Allocated {
            id: rid.clone(),
            resources: Resources {
                worktree_path: Some(rpath.display().to_string()),
                session_name: None,
                branch: Some(rbranch),
                agent_session_id: None,
                session_host: None,
            },
        })?;
        let r = found(&all, &rid)?.clone();
        let prompt = turn::review_prompt(&r, &p);
        if let Err(e) = self.start_turn(&r, &agent, prompt, None) {
            return Err(self.failed(&rid, ErrorCode::ResourceAllocationFailed, e.message));
        }
        Ok(found(&self.eng.store.instances()?, &rid)?.clone())
    }

    /// `merge_back`: review `review`'s branch merged into its parent's, the
    /// feedback on its way to the coding agent, the review ended and its
    /// worktree removed. A conflict changes nothing and names the files.
    pub fn merge_back(&self, review: &InstanceId, feedback: &str) -> Result<Instance> {
        let all = self.tick()?;
        let input = Input::MergeBack {
            review: review.clone(),
            feedback: feedback.to_string(),
        };
        // The rules first: nothing is merged for a refused request.
        instance::decide(&all, input.clone(), self.eng.now())?;
        let r = found(&all, review)?;
        let parent = r
            .review()
            .map(|s| s.parent_instance_id.clone())
            .expect("decide checked it is a review");
        let p = found(&all, &parent)?;
        let (Some(rpath), Some(rbranch)) = (&r.resources.worktree_path, &r.resources.branch) else {
            return Err(Error::coded(
                ErrorCode::InvalidState,
                format!("review {review} has no worktree and branch yet"),
            )
            .hint("wait until `baton agent show` says it is working"));
        };
        let (Some(ppath), Some(pbranch)) = (&p.resources.worktree_path, &p.resources.branch) else {
            return Err(Error::coded(
                ErrorCode::ParentUpdateFailed,
                format!("{parent} has no worktree and branch to merge into"),
            ));
        };
        let update_failed = |what: String| {
            Error::coded(ErrorCode::ParentUpdateFailed, what).hint(format!(
                "nothing was merged; fix it and call merge_back again, or `baton agent kill {review}`"
            ))
        };
        crate::repo::open(std::path::Path::new(rpath))
            .ok_or_else(|| update_failed(format!("{rpath} is not a git worktree")))?
            .commit_worktree(&format!("baton: review {review}"))
            .map_err(|e| {
                update_failed(format!("cannot commit the review's work in {rpath}: {e}"))
            })?;
        let pgit = crate::repo::open(std::path::Path::new(ppath))
            .ok_or_else(|| update_failed(format!("{ppath} is not a git worktree")))?;
        let message = format!("baton: merge back review {review} into {parent}");
        match pgit.merge_branch(rbranch, &message) {
            Ok(()) => {}
            Err(MergeFailure::Conflict(files)) => {
                return Err(Error::coded(
                    ErrorCode::MergeConflict,
                    format!(
                        "merging review {review}'s branch {rbranch} into {pbranch} conflicts in {}; {pbranch} is unchanged",
                        files.join(", ")
                    ),
                )
                .hint(format!(
                    "in the review's worktree ({rpath}), merge {pbranch} into {rbranch}, resolve and commit, then call merge_back again"
                )));
            }
            Err(MergeFailure::Failed(e)) => {
                return Err(update_failed(format!(
                    "cannot merge {rbranch} into {pbranch} in {ppath}: {e}"
                )));
            }
        }
        let all = self.step(input)?;
        self.clean_up(review);
        self.deliver_feedback(&all)?;
        Ok(found(&self.eng.store.instances()?, &parent)?.clone())
    }
}
