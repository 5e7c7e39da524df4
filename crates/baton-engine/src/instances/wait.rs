//! Waiting for an instance's end: `baton agent wait`, and an agent phase
//! of a workflow run as a coding instance (`instance = { … }` on the
//! phase), which passes when its instance reaches its end state and fails
//! with the instance's error code otherwise. The phase's process is
//! `baton agent phase`: it spawns the instance, or finds the one an
//! earlier (crashed) attempt spawned and waits for that one, so a resumed
//! task never starts a second agent for the same work. An instance whose
//! work is done ends with its phase (`finished`), giving back what it
//! holds under the cleanup rules, so only live work counts against
//! `max_concurrent_instances`.

use super::{Agents, Removal, SpawnOptions, View, found};
use crate::error::{Error, Result};
use baton_core::instance::{Config, ErrorCode, Input, InstanceId, Status};
use baton_core::lease::DisplayStatus;
use std::time::Duration;

/// How an instance ended its work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Done {
    /// Its pull request is open.
    PullRequest { number: u32, url: String },
    /// Its agent finished with no review required and none in flight.
    Finished,
}

impl Agents<'_> {
    /// Blocks until `id` reaches its end state (see [`Done`]), enforcing
    /// timeouts as it polls; an instance that fails or is ended, or whose
    /// agent's turn failed, is an error with its code.
    pub fn wait(&self, id: &InstanceId) -> Result<Done> {
        loop {
            let v = self.show(id)?;
            if let Some(end) = self.judge(&v) {
                return end;
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    }

    /// `Some` once `v` has reached its end (or cannot reach it).
    fn judge(&self, v: &View) -> Option<Result<Done>> {
        let i = &v.instance;
        if i.status == Status::Finished {
            return Some(Ok(Done::Finished));
        }
        if let Some(pr) = i.coding().and_then(|c| c.pull_request.as_ref())
            && matches!(
                i.status,
                Status::PrCreated | Status::PrMerged | Status::PrClosed
            )
        {
            return Some(Ok(Done::PullRequest {
                number: pr.number,
                url: pr.url.clone(),
            }));
        }
        if i.status.ended() {
            let reason = i.end_reason.clone().unwrap_or_default();
            let code = ErrorCode::ALL
                .into_iter()
                .find(|c| reason.starts_with(c.as_str()))
                .unwrap_or(ErrorCode::InvalidState);
            let why = reason
                .strip_prefix(code.as_str())
                .map(|r| r.trim_start_matches(": ").to_string())
                .unwrap_or(reason.clone());
            return Some(Err(Error::coded(
                code,
                format!("instance {} is {}: {why}", i.id, i.status.as_str()),
            )
            .hint(format!("`baton agent log {}` tells its story", i.id))));
        }
        let c = i.coding()?;
        let Config::Coding(cfg) = &i.config else {
            return None;
        };
        let feedback_pending = self.eng.store.instances().ok().is_some_and(|all| {
            all.reviews_of(&i.id).any(|r| {
                r.review()
                    .is_some_and(|s| s.decision.is_some() && !s.feedback_delivered)
            })
        });
        if i.status != Status::Working || c.current_review_instance_id.is_some() || feedback_pending
        {
            return None;
        }
        match &v.turn {
            Some((_, DisplayStatus::Complete)) if !cfg.require_review => Some(Ok(Done::Finished)),
            Some((task, DisplayStatus::Failed | DisplayStatus::Cancelled)) => Some(Err(
                Error::coded(
                    ErrorCode::InvalidState,
                    format!("the turn {task} of instance {}'s agent did not finish", i.id),
                )
                .hint(format!("`baton show {task}` says why; `baton resume {task}` runs it again")),
            )),
            Some((_, DisplayStatus::Complete)) if c.review_count >= c.max_reviews => {
                Some(Err(Error::coded(
                    ErrorCode::MaxReviewsExceeded,
                    format!(
                        "instance {} had its {} reviews and its agent stopped without a pull request",
                        i.id, c.max_reviews
                    ),
                )
                .hint(format!("open it with `baton agent push {}`", i.id))))
            }
            _ => None,
        }
    }

    /// The process of an agent phase run as a coding instance: spawns
    /// instance `id` (or a fresh id when `id` ended without its work done),
    /// or finds the one a crashed attempt left, and waits for it. Work
    /// done without a pull request ends the instance with its phase
    /// (`finished`, with what cleaning up did); one with a pull request
    /// lives on until it is merged or closed.
    pub fn run_phase(
        &self,
        id: &InstanceId,
        o: SpawnOptions,
    ) -> Result<(InstanceId, Done, Option<Removal>)> {
        let all = self.tick()?;
        let why = match &o.for_phase {
            Some(f) => format!("its work for phase {} of task {} is done", f.phase, f.task),
            None => "its phase's work is done".to_string(),
        };
        let id = match all.get(id) {
            Some(i)
                if !i.status.ended() || matches!(i.status, Status::PrMerged | Status::Finished) =>
            {
                id.clone()
            }
            Some(_) => {
                let fresh = self.free_id(id.as_str())?;
                self.spawn(SpawnOptions {
                    id: Some(fresh.to_string()),
                    ..o
                })?
                .id
            }
            None => {
                self.spawn(SpawnOptions {
                    id: Some(id.to_string()),
                    ..o
                })?
                .id
            }
        };
        let _ = found(&self.eng.store.instances()?, &id)?;
        // Judged done, then finished: another process may move it in
        // between (a kill, a review asked), so judge again when refused.
        for _ in 0..20 {
            let done = self.wait(&id)?;
            if done != Done::Finished || self.show(&id)?.instance.status == Status::Finished {
                return Ok((id, done, None));
            }
            match self.step(Input::Finish {
                id: id.clone(),
                reason: why.clone(),
            }) {
                Ok(_) => return Ok((id.clone(), done, Some(self.clean_up(&id)))),
                Err(e) if e.code.is_some() => continue,
                Err(e) => return Err(e),
            }
        }
        Err(Error::busy(format!(
            "instance {id} kept changing while its phase was ending"
        ))
        .hint("run the task again with `baton resume`"))
    }
}
