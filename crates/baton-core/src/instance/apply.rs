//! Folding the instances' journal: each event's effect on the instances it
//! names. `decide` has checked it; `apply` never refuses.

use super::{
    CodingPhase, CodingState, Config, Decision, Event, Instance, InstanceId, Instances, Record,
    Resources, ReviewPhase, ReviewState, State, Status,
};
use crate::time::Timestamp;

/// Applies one journal record.
pub fn apply(all: &mut Instances, rec: &Record) {
    all.last_seq = rec.seq;
    let now = rec.ts;
    match &rec.event {
        Event::Spawned { id, config, parent } => {
            let state = match (config, parent) {
                (Config::Coding(c), _) => State::Coding(CodingState {
                    phase: CodingPhase::Initializing,
                    review_count: 0,
                    max_reviews: c.max_reviews,
                    current_review_instance_id: None,
                    last_activity: None,
                    last_error: None,
                    failure_reason: None,
                    pull_request: None,
                }),
                (Config::Review(_), p) => {
                    let (parent, iteration) = p.clone().expect("a review has a parent");
                    State::Review(ReviewState {
                        phase: ReviewPhase::Initializing,
                        parent_instance_id: parent,
                        iteration,
                        decision: None,
                        decision_reason: None,
                        feedback_delivered: false,
                    })
                }
            };
            all.by_id.insert(
                id.clone(),
                Instance {
                    id: id.clone(),
                    status: Status::Started,
                    state,
                    resources: Resources::default(),
                    config: config.clone(),
                    started_at: now,
                    updated_at: now,
                    terminated_at: None,
                    end_reason: None,
                    turns: Vec::new(),
                },
            );
        }
        Event::Allocated { id, resources } => {
            with(all, id, now, |i| {
                i.resources = resources.clone();
                i.status = Status::Working;
                match &mut i.state {
                    State::Coding(c) => c.phase = CodingPhase::Working,
                    State::Review(r) => r.phase = ReviewPhase::Working,
                }
            });
        }
        Event::Activity { id } | Event::Checkpoint { id, .. } => {
            with(all, id, now, |i| {
                if let State::Coding(c) = &mut i.state {
                    c.last_activity = Some(now);
                }
            });
        }
        Event::Turn { id, task } => {
            with(all, id, now, |i| i.turns.push(task.clone()));
        }
        Event::ReviewRequested { parent, review } => {
            with(all, parent, now, |p| {
                p.status = Status::ReviewRequested;
                if let State::Coding(c) = &mut p.state {
                    c.phase = CodingPhase::ReviewRequested;
                    c.current_review_instance_id = Some(review.clone());
                }
            });
        }
        Event::MergedBack {
            review,
            parent,
            feedback,
        } => {
            decided(all, review, Decision::MergeBack, feedback, now);
            with(all, parent, now, |p| {
                p.status = Status::Working;
                if let State::Coding(c) = &mut p.state {
                    c.phase = CodingPhase::Working;
                    c.review_count += 1;
                    c.current_review_instance_id = None;
                }
            });
        }
        Event::FeedbackDelivered { review } => {
            with(all, review, now, |r| {
                if let State::Review(s) = &mut r.state {
                    s.feedback_delivered = true;
                }
            });
        }
        Event::PrCreated { id, owner, pr } => {
            if id != owner {
                decided(all, id, Decision::PushToGithub, "pushed to GitHub", now);
            }
            let reviewed = id != owner;
            with(all, owner, now, |p| {
                p.status = Status::PrCreated;
                if let State::Coding(c) = &mut p.state {
                    c.phase = CodingPhase::PrCreated;
                    c.pull_request = Some(pr.clone());
                    c.current_review_instance_id = None;
                    if reviewed {
                        c.review_count += 1;
                    }
                }
            });
        }
        Event::PrClosed { id, merged } => {
            with(all, id, now, |i| {
                i.status = if *merged {
                    Status::PrMerged
                } else {
                    Status::PrClosed
                };
            });
        }
        Event::Terminated { id, reason } => {
            end(all, id, Status::Terminated, reason, None, now);
        }
        Event::Finished { id, reason } => {
            end(all, id, Status::Finished, reason, None, now);
        }
        Event::Failed { id, code, reason } => {
            let reason = format!("{code}: {reason}");
            end(all, id, Status::Failed, &reason, Some(code.as_str()), now);
        }
        Event::CleanupFailed { id, error } => {
            with(all, id, now, |i| {
                let error = format!("{}: {error}", super::ErrorCode::CleanupFailed);
                match &mut i.state {
                    State::Coding(c) => c.last_error = Some(error),
                    State::Review(r) => r.decision_reason = Some(error),
                }
            });
        }
    }
}

/// The instances as their journal leaves them.
pub fn replay(records: &[Record]) -> Instances {
    let mut all = Instances::default();
    for r in records {
        apply(&mut all, r);
    }
    all
}

fn with(all: &mut Instances, id: &InstanceId, now: Timestamp, f: impl FnOnce(&mut Instance)) {
    if let Some(i) = all.by_id.get_mut(id) {
        f(i);
        i.updated_at = now;
    }
}

/// A review that decided: it records the decision and cleans itself up.
fn decided(all: &mut Instances, review: &InstanceId, d: Decision, why: &str, now: Timestamp) {
    with(all, review, now, |r| {
        r.status = Status::Terminated;
        r.terminated_at = Some(now);
        r.end_reason = Some(match d {
            Decision::MergeBack => "merged back".into(),
            Decision::PushToGithub => "pushed to GitHub".into(),
        });
        if let State::Review(s) = &mut r.state {
            s.phase = ReviewPhase::Cleanup;
            s.decision = Some(d);
            s.decision_reason = Some(why.to_string());
        }
    });
}

/// Ends an instance (terminated, finished or failed). A review its parent was
/// waiting for gives the parent back its work, with the error if any.
fn end(
    all: &mut Instances,
    id: &InstanceId,
    status: Status,
    reason: &str,
    code: Option<&str>,
    now: Timestamp,
) {
    let mut parent = None;
    with(all, id, now, |i| {
        i.status = status;
        i.end_reason = Some(reason.to_string());
        if status == Status::Terminated {
            i.terminated_at = Some(now);
        }
        match &mut i.state {
            State::Coding(c) => {
                c.phase = if status == Status::Terminated {
                    CodingPhase::Terminated
                } else {
                    CodingPhase::Cleanup
                };
                if status == Status::Failed {
                    c.failure_reason = Some(reason.to_string());
                    c.last_error = code.map(str::to_string);
                }
            }
            State::Review(r) => {
                r.phase = ReviewPhase::Cleanup;
                parent = Some(r.parent_instance_id.clone());
            }
        }
    });
    if let Some(parent) = parent {
        with(all, &parent, now, |p| {
            if let State::Coding(c) = &mut p.state
                && c.current_review_instance_id.as_ref() == Some(id)
            {
                c.current_review_instance_id = None;
                c.phase = CodingPhase::Working;
                if code.is_some() {
                    c.last_error = Some(reason.to_string());
                }
                if p.status == Status::ReviewRequested {
                    p.status = Status::Working;
                }
            }
        });
    }
}
