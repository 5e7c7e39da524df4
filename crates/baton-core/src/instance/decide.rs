//! The rules of the review loop: which input is allowed in which state,
//! with the typed error of each refusal, and the events an allowed one
//! causes. One function per kind of input.

use super::{
    CodingConfig, Config, Decision, ErrorCode, Event, Input, Instance, InstanceError, InstanceId,
    Instances, Kind, ReviewConfig, State, Status,
};
use crate::time::Timestamp;

type Decided = Result<Vec<Event>, InstanceError>;

fn refuse<T>(code: ErrorCode, message: String, hint: &str) -> Result<T, InstanceError> {
    Err(InstanceError {
        code,
        message,
        hint: hint.to_string(),
    })
}

/// Checks `input` against the rules at time `now` and returns the events
/// it causes, or why it is refused.
pub fn decide(all: &Instances, input: Input, now: Timestamp) -> Decided {
    match input {
        Input::Spawn { id, config } => spawn(all, id, config),
        Input::Allocated { id, resources } => {
            let i = live(all, &id)?;
            if i.status != Status::Started {
                return invalid(i, "have its resources allocated");
            }
            Ok(vec![Event::Allocated { id, resources }])
        }
        Input::Activity { id } => {
            live(all, &id)?;
            Ok(vec![Event::Activity { id }])
        }
        Input::Checkpoint { id, note } => {
            live(all, &id)?;
            if note.trim().is_empty() {
                return refuse(
                    ErrorCode::InvalidConfiguration,
                    "the checkpoint's note is empty".into(),
                    "say in a sentence where the work stands",
                );
            }
            Ok(vec![Event::Checkpoint { id, note }])
        }
        Input::Turn { id, task } => {
            live(all, &id)?;
            if let Some(o) = all.by_id.values().find(|o| o.turns.contains(&task)) {
                return refuse(
                    ErrorCode::InvalidConfiguration,
                    format!("task {task} is a turn of {} already", o.id),
                    "each turn of an agent is a new task",
                );
            }
            Ok(vec![Event::Turn { id, task }])
        }
        Input::RequestReview {
            parent,
            review,
            config,
        } => request_review(all, parent, review, config),
        Input::MergeBack { review, feedback } => {
            let parent = deciding_review(all, &review, "merge back")?;
            Ok(vec![Event::MergedBack {
                review,
                parent,
                feedback,
            }])
        }
        Input::FeedbackDelivered { review } => {
            let i = found(all, &review)?;
            match i.review() {
                // Only a merge-back brings feedback to the coding agent.
                Some(r) if r.decision == Some(Decision::MergeBack) && !r.feedback_delivered => {
                    Ok(vec![Event::FeedbackDelivered { review }])
                }
                _ => invalid(i, "deliver feedback (no merge-back awaits it)"),
            }
        }
        Input::PrCreated { id, pr } => pr_created(all, id, pr),
        Input::PrClosed { id, merged } => {
            let i = found(all, &id)?;
            if i.status != Status::PrCreated {
                return invalid(i, "have its pull request closed");
            }
            Ok(vec![Event::PrClosed { id, merged }])
        }
        Input::Terminate { id, reason } => {
            let i = live(all, &id)?;
            Ok(end_with_children(all, i, |id| Event::Terminated {
                id,
                reason: reason.clone(),
            }))
        }
        Input::Finish { id, reason } => {
            let i = live(all, &id)?;
            let Some(c) = i.coding() else {
                return invalid(i, "finish (only a coding instance's work is done)");
            };
            if let Some(current) = &c.current_review_instance_id {
                return refuse(
                    ErrorCode::ReviewInProgress,
                    format!("{id} has review {current} in flight"),
                    "wait for the review to merge back or push",
                );
            }
            if i.status != Status::Working {
                return invalid(i, "finish");
            }
            Ok(vec![Event::Finished { id, reason }])
        }
        Input::Fail { id, code, reason } => {
            let i = live(all, &id)?;
            Ok(end_with_children(all, i, |id| Event::Failed {
                id,
                code,
                reason: reason.clone(),
            }))
        }
        Input::TimedOut { id } => {
            let i = live(all, &id)?;
            if i.deadline() > now {
                return invalid(i, "time out before its deadline");
            }
            let (code, what) = match i.kind() {
                Kind::Coding => (ErrorCode::ExecutionTimeout, "execution_timeout"),
                Kind::Review => (ErrorCode::ReviewTimeout, "timeout_minutes"),
            };
            let reason = format!("ran past its {what} (deadline {})", i.deadline().rfc3339());
            Ok(end_with_children(all, i, |id| Event::Failed {
                id,
                code,
                reason: reason.clone(),
            }))
        }
        Input::CleanupFailed { id, error } => {
            found(all, &id)?;
            Ok(vec![Event::CleanupFailed { id, error }])
        }
    }
}

/// The live instances whose deadline has passed at `now`: one
/// [`Input::TimedOut`] each, whoever started them.
pub fn due(all: &Instances, now: Timestamp) -> Vec<Input> {
    all.by_id
        .values()
        .filter(|i| !i.status.ended() && i.status != Status::PrCreated && i.deadline() <= now)
        .map(|i| Input::TimedOut { id: i.id.clone() })
        .collect()
}

fn spawn(all: &Instances, id: InstanceId, config: CodingConfig) -> Decided {
    if all.by_id.contains_key(&id) {
        return refuse(
            ErrorCode::InvalidConfiguration,
            format!("an instance {id} exists already"),
            "choose another id, or leave it out to get a fresh one",
        );
    }
    if config.base_branch.trim().is_empty() {
        return refuse(
            ErrorCode::InvalidConfiguration,
            "the base branch is empty".into(),
            "name the branch the work starts from (e.g. main)",
        );
    }
    // A GitHub issue is work enough: its title and body are the
    // instructions, and what the user adds goes after them.
    if config.task().trim().is_empty() {
        return refuse(
            ErrorCode::InvalidConfiguration,
            "the instance has no instructions".into(),
            "give a GitHub issue or custom instructions",
        );
    }
    if config.require_review && config.max_reviews == 0 {
        return refuse(
            ErrorCode::InvalidConfiguration,
            "require_review is set but max_reviews is 0: no review could ever happen".into(),
            "set max_reviews to 1 or more, or require_review = false",
        );
    }
    if config.execution_timeout_ms == 0 {
        return refuse(
            ErrorCode::InvalidConfiguration,
            "execution_timeout is 0".into(),
            "give a timeout such as \"24h\"",
        );
    }
    Ok(vec![Event::Spawned {
        id,
        config: Config::Coding(config),
        parent: None,
    }])
}

fn request_review(
    all: &Instances,
    parent: InstanceId,
    review: InstanceId,
    config: ReviewConfig,
) -> Decided {
    let Some(p) = all.get(&parent) else {
        return refuse(
            ErrorCode::ParentNotFound,
            format!("there is no instance {parent} to review"),
            "`baton agent ls` lists the instances",
        );
    };
    let Some(c) = p.coding() else {
        return refuse(
            ErrorCode::ParentInvalidState,
            format!("{parent} is a review instance; only coding instances ask for reviews"),
            "call request_review from the coding agent",
        );
    };
    if let Some(current) = &c.current_review_instance_id {
        return refuse(
            ErrorCode::ReviewInProgress,
            format!("{parent} already has review {current} in flight"),
            "wait for it to merge back or push, or terminate it",
        );
    }
    if let Some((code, why)) = failed_with(p) {
        return refuse(
            code,
            format!("{parent} failed ({why}); a review can be asked only while it is working"),
            "`baton agent show` says where it is; start again with `baton agent spawn`",
        );
    }
    if p.status != Status::Working {
        return refuse(
            ErrorCode::ParentInvalidState,
            format!(
                "{parent} is {}; a review can be asked only while it is working",
                p.status.as_str()
            ),
            "`baton agent show` says where it is",
        );
    }
    if c.review_count >= c.max_reviews {
        return refuse(
            ErrorCode::MaxReviewsExceeded,
            format!(
                "{parent} has had {} of its {} reviews",
                c.review_count, c.max_reviews
            ),
            "open the pull request (create_pr), or raise max_reviews",
        );
    }
    if all.by_id.contains_key(&review) {
        return refuse(
            ErrorCode::InvalidConfiguration,
            format!("an instance {review} exists already"),
            "choose another id for the review",
        );
    }
    if config.timeout_ms == 0 {
        return refuse(
            ErrorCode::InvalidConfiguration,
            "the review's timeout is 0".into(),
            "give timeout_minutes of 1 or more",
        );
    }
    let iteration = c.review_count + 1;
    Ok(vec![
        Event::Spawned {
            id: review.clone(),
            config: Config::Review(config),
            parent: Some((parent.clone(), iteration)),
        },
        Event::ReviewRequested { parent, review },
    ])
}

/// A review that may decide now (merge back or push): working, with its
/// parent waiting for it. Returns the parent's id.
fn deciding_review(
    all: &Instances,
    review: &InstanceId,
    what: &str,
) -> Result<InstanceId, InstanceError> {
    let i = found(all, review)?;
    let Some(r) = i.review() else {
        return refuse(
            ErrorCode::InvalidState,
            format!("{review} is a coding instance; only a review may {what}"),
            "a coding agent asks for a review (request_review) or opens its pull request (create_pr)",
        );
    };
    if i.status != Status::Working {
        return invalid(i, what);
    }
    let parent = &r.parent_instance_id;
    let Some(p) = all.get(parent) else {
        return refuse(
            ErrorCode::ParentNotFound,
            format!("the parent {parent} of review {review} is gone"),
            "terminate the review",
        );
    };
    let waiting = p
        .coding()
        .and_then(|c| c.current_review_instance_id.as_ref())
        == Some(review);
    if !waiting || p.status != Status::ReviewRequested {
        return refuse(
            ErrorCode::ParentInvalidState,
            format!(
                "the parent {parent} is {} and no longer waits for review {review}",
                p.status.as_str()
            ),
            "terminate the review",
        );
    }
    Ok(parent.clone())
}

fn pr_created(all: &Instances, id: InstanceId, pr: super::PullRequest) -> Decided {
    let i = found(all, &id)?;
    let owner = match &i.state {
        State::Review(_) => deciding_review(all, &id, "push to GitHub")?,
        State::Coding(c) => {
            if let Some(current) = &c.current_review_instance_id {
                return refuse(
                    ErrorCode::ReviewInProgress,
                    format!("{id} has review {current} in flight"),
                    "the review pushes the pull request, or merges back first",
                );
            }
            if i.status != Status::Working {
                return invalid(i, "open a pull request");
            }
            let require = matches!(&i.config, Config::Coding(c) if c.require_review);
            if require && c.review_count == 0 {
                return refuse(
                    ErrorCode::InvalidState,
                    format!("{id} requires a review before its pull request"),
                    "call request_review first",
                );
            }
            id.clone()
        }
    };
    Ok(vec![Event::PrCreated { id, owner, pr }])
}

/// Ends `i` and every live review it spawned (children first), each with
/// the event `end` makes.
fn end_with_children(
    all: &Instances,
    i: &Instance,
    end: impl Fn(InstanceId) -> Event,
) -> Vec<Event> {
    let mut events: Vec<Event> = all
        .reviews_of(&i.id)
        .filter(|r| !r.status.ended())
        .map(|r| end(r.id.clone()))
        .collect();
    events.push(end(i.id.clone()));
    events
}

fn found<'a>(all: &'a Instances, id: &InstanceId) -> Result<&'a Instance, InstanceError> {
    all.get(id).ok_or_else(|| InstanceError {
        code: ErrorCode::InstanceNotFound,
        message: format!("there is no instance {id}"),
        hint: "`baton agent ls` lists the instances".into(),
    })
}

fn live<'a>(all: &'a Instances, id: &InstanceId) -> Result<&'a Instance, InstanceError> {
    let i = found(all, id)?;
    if i.status.ended() {
        return invalid(i, "change");
    }
    Ok(i)
}

fn invalid<T>(i: &Instance, what: &str) -> Result<T, InstanceError> {
    if let Some((code, why)) = failed_with(i) {
        return refuse(
            code,
            format!("{} failed ({why}) and cannot {what}", i.id),
            "`baton agent show` says where it is; start again with `baton agent spawn`",
        );
    }
    refuse(
        ErrorCode::InvalidState,
        format!("{} is {} and cannot {what}", i.id, i.status.as_str()),
        "`baton agent show` says where it is",
    )
}

/// The code and reason a failed instance ended with (a timeout, a failed
/// turn): what an agent still calling on it is told, rather than a bare
/// "invalid state".
fn failed_with(i: &Instance) -> Option<(ErrorCode, &str)> {
    if i.status != Status::Failed {
        return None;
    }
    let reason = i.end_reason.as_deref()?;
    ErrorCode::ALL.into_iter().find_map(|c| {
        let why = reason.strip_prefix(c.as_str())?.strip_prefix(": ")?;
        Some((c, why))
    })
}
