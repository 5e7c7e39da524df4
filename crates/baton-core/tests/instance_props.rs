//! The review loop's rules (`baton_core::instance`): the whole loop and
//! every refusal the rules make, then random sequences of inputs (spawns,
//! allocations, reviews asked, merged back and pushed, pull requests
//! closed, terminations, failures, time passing and timeouts) through
//! `decide` and `apply` exactly as the engine uses them, with these
//! invariants checked after every step:
//!
//! 1. a coding instance has a review in flight exactly when it is
//!    `review_requested`, and that review is live and names it as parent;
//! 2. every live review is the one its parent waits for (so at most one
//!    per parent);
//! 3. `review_count` never exceeds `max_reviews` and counts exactly the
//!    reviews of that instance that decided;
//! 4. an instance that ended never changes status again;
//! 5. `terminated_at` is set exactly for terminated instances, and a
//!    `pr_created` coding instance has its pull request;
//! 6. replaying the journal (also through its JSON) gives the state;
//! 7. a task is the turn of one instance, once.

use baton_core::instance::{
    self, CodingConfig, Decision, ErrorCode, Event, Input, InstanceId, Instances, PullRequest,
    Record, Resources, ReviewConfig, Status,
};
use baton_core::time::Timestamp;
use proptest::prelude::*;
use std::collections::BTreeMap;

const HOUR: i64 = 3_600_000;

fn id(s: &str) -> InstanceId {
    InstanceId::parse(s).unwrap()
}

fn coding(require_review: bool, max_reviews: u32) -> CodingConfig {
    CodingConfig {
        base_branch: "main".into(),
        target_branch: None,
        instructions: "fix issue 7".into(),
        require_review,
        max_reviews,
        execution_timeout_ms: 24 * HOUR as u64,
        agent: None,
        issue: None,
        system_prompt: None,
        for_phase: None,
    }
}

fn review_config() -> ReviewConfig {
    ReviewConfig {
        review_prompt: None,
        preserve_changes: false,
        timeout_ms: 30 * 60_000,
        agent: None,
    }
}

fn resources(name: &str) -> Resources {
    Resources {
        worktree_path: Some(format!("../repo-worktrees/{name}")),
        session_name: Some(format!("baton-{name}")),
        branch: Some(format!("baton/{name}")),
        agent_session_id: None,
        session_host: None,
    }
}

fn pr(n: u32) -> PullRequest {
    PullRequest {
        number: n,
        url: format!("https://github.com/o/r/pull/{n}"),
    }
}

/// The instances and their journal, driven as the engine drives them.
#[derive(Default)]
struct World {
    all: Instances,
    journal: Vec<Record>,
    now: i64,
}

impl World {
    fn step(&mut self, input: Input) -> Result<(), ErrorCode> {
        let ts = Timestamp(self.now);
        let events = instance::decide(&self.all, input, ts).map_err(|e| e.code)?;
        for event in events {
            let rec = Record {
                seq: self.all.last_seq + 1,
                ts,
                event,
            };
            instance::apply(&mut self.all, &rec);
            self.journal.push(rec);
        }
        Ok(())
    }

    fn ok(&mut self, input: Input) {
        let shown = format!("{input:?}");
        if let Err(code) = self.step(input) {
            panic!("{shown} refused: {code}");
        }
    }

    fn status(&self, s: &str) -> Status {
        self.all.get(&id(s)).unwrap().status
    }

    fn reviews_done(&self, s: &str) -> u32 {
        self.all.get(&id(s)).unwrap().coding().unwrap().review_count
    }

    /// A coding instance `name`, allocated.
    fn working(&mut self, name: &str, require_review: bool, max_reviews: u32) {
        self.ok(Input::Spawn {
            id: id(name),
            config: coding(require_review, max_reviews),
        });
        self.ok(Input::Allocated {
            id: id(name),
            resources: resources(name),
        });
    }

    /// Review `review` of `parent`, asked and allocated.
    fn reviewing(&mut self, parent: &str, review: &str) {
        self.ok(Input::RequestReview {
            parent: id(parent),
            review: id(review),
            config: review_config(),
        });
        self.ok(Input::Allocated {
            id: id(review),
            resources: resources(review),
        });
    }
}

/// A workflow phase's instance whose work is done ends `finished`: only
/// while it works with no review in flight, and then nothing moves it.
#[test]
fn a_phase_instance_finishes_only_while_it_works_alone() {
    let mut w = World::default();
    w.working("c1", false, 2);
    w.reviewing("c1", "r1");
    let finish = |s: &str| Input::Finish {
        id: id(s),
        reason: "its work for phase implement of task t1 is done".into(),
    };
    assert_eq!(w.step(finish("c1")), Err(ErrorCode::ReviewInProgress));
    assert_eq!(w.step(finish("r1")), Err(ErrorCode::InvalidState));
    w.ok(Input::MergeBack {
        review: id("r1"),
        feedback: "fine".into(),
    });
    w.ok(finish("c1"));
    assert_eq!(w.status("c1"), Status::Finished);
    assert!(Status::Finished.ended());
    let c1 = w.all.get(&id("c1")).unwrap();
    assert_eq!(
        c1.end_reason.as_deref(),
        Some("its work for phase implement of task t1 is done")
    );
    assert_eq!(c1.terminated_at, None, "finished, not terminated");
    assert_eq!(w.step(finish("c1")), Err(ErrorCode::InvalidState));
    assert_eq!(
        w.step(Input::Terminate {
            id: id("c1"),
            reason: "late".into()
        }),
        Err(ErrorCode::InvalidState)
    );
    // A GitHub issue alone is work enough for a coding instance.
    let mut from_issue = coding(false, 1);
    from_issue.instructions = String::new();
    from_issue.issue = Some(baton_core::instance::GithubIssue {
        number: 42,
        title: "Found a bug".into(),
        body: "It breaks.".into(),
        url: "https://github.com/o/r/issues/42".into(),
    });
    w.ok(Input::Spawn {
        id: id("c2"),
        config: from_issue,
    });
    assert_eq!(
        instance::replay(&w.journal).by_id,
        w.all.by_id,
        "the journal folds to the same"
    );
}

#[test]
fn the_whole_loop_ends_with_a_pull_request() {
    let mut w = World::default();
    w.working("c1", true, 3);
    assert_eq!(w.status("c1"), Status::Working);
    w.reviewing("c1", "r1");
    assert_eq!(w.status("c1"), Status::ReviewRequested);
    w.ok(Input::MergeBack {
        review: id("r1"),
        feedback: "rename the helper".into(),
    });
    assert_eq!(w.status("c1"), Status::Working);
    assert_eq!(w.status("r1"), Status::Terminated);
    assert_eq!(w.reviews_done("c1"), 1);
    let r1 = w.all.get(&id("r1")).unwrap().review().unwrap().clone();
    assert_eq!(
        (r1.decision, r1.iteration, r1.feedback_delivered),
        (Some(Decision::MergeBack), 1, false)
    );
    w.ok(Input::FeedbackDelivered { review: id("r1") });
    assert_eq!(
        w.step(Input::FeedbackDelivered { review: id("r1") }),
        Err(ErrorCode::InvalidState),
        "feedback is delivered once"
    );
    w.reviewing("c1", "r2");
    w.ok(Input::PrCreated {
        id: id("r2"),
        pr: pr(42),
    });
    let c1 = w.all.get(&id("c1")).unwrap();
    assert_eq!(c1.status, Status::PrCreated);
    assert_eq!(c1.coding().unwrap().pull_request, Some(pr(42)));
    assert_eq!(c1.coding().unwrap().review_count, 2);
    assert_eq!(w.all.get(&id("r2")).unwrap().review().unwrap().iteration, 2);
    assert_eq!(
        w.step(Input::FeedbackDelivered { review: id("r2") }),
        Err(ErrorCode::InvalidState),
        "a review that opened the pull request has no feedback to deliver"
    );
    w.ok(Input::PrClosed {
        id: id("c1"),
        merged: true,
    });
    assert_eq!(w.status("c1"), Status::PrMerged);
    assert_eq!(instance::replay(&w.journal), w.all);
}

#[test]
fn reviews_are_bounded_and_one_at_a_time() {
    let mut w = World::default();
    w.working("c1", false, 1);
    w.reviewing("c1", "r1");
    let again = Input::RequestReview {
        parent: id("c1"),
        review: id("r2"),
        config: review_config(),
    };
    assert_eq!(w.step(again.clone()), Err(ErrorCode::ReviewInProgress));
    w.ok(Input::MergeBack {
        review: id("r1"),
        feedback: "ok".into(),
    });
    assert_eq!(w.step(again), Err(ErrorCode::MaxReviewsExceeded));
    // Without a required review, the coding agent opens its own PR.
    w.ok(Input::PrCreated {
        id: id("c1"),
        pr: pr(7),
    });
    assert_eq!(w.status("c1"), Status::PrCreated);
}

#[test]
fn every_refusal_of_the_rules_has_its_code() {
    let mut w = World::default();
    let ask = |parent: &str, review: &str| Input::RequestReview {
        parent: id(parent),
        review: id(review),
        config: review_config(),
    };
    // Configuration.
    let mut bad = coding(true, 0);
    assert_eq!(
        w.step(Input::Spawn {
            id: id("c0"),
            config: bad.clone()
        }),
        Err(ErrorCode::InvalidConfiguration)
    );
    bad.max_reviews = 1;
    bad.instructions = " ".into();
    assert_eq!(
        w.step(Input::Spawn {
            id: id("c0"),
            config: bad
        }),
        Err(ErrorCode::InvalidConfiguration)
    );
    w.working("c1", true, 2);
    assert_eq!(
        w.step(Input::Spawn {
            id: id("c1"),
            config: coding(false, 1)
        }),
        Err(ErrorCode::InvalidConfiguration),
        "an id is used once"
    );
    // Unknown instances and parents.
    assert_eq!(
        w.step(Input::Terminate {
            id: id("nope"),
            reason: "x".into()
        }),
        Err(ErrorCode::InstanceNotFound)
    );
    assert_eq!(w.step(ask("nope", "r9")), Err(ErrorCode::ParentNotFound));
    // A coding agent may not merge back; a PR needs the required review.
    assert_eq!(
        w.step(Input::MergeBack {
            review: id("c1"),
            feedback: "x".into()
        }),
        Err(ErrorCode::InvalidState)
    );
    assert_eq!(
        w.step(Input::PrCreated {
            id: id("c1"),
            pr: pr(1)
        }),
        Err(ErrorCode::InvalidState)
    );
    // A parent not working, or a review asking for a review.
    w.ok(Input::Spawn {
        id: id("c2"),
        config: coding(false, 1),
    });
    assert_eq!(w.step(ask("c2", "r2")), Err(ErrorCode::ParentInvalidState));
    w.reviewing("c1", "r1");
    assert_eq!(w.step(ask("r1", "r3")), Err(ErrorCode::ParentInvalidState));
    assert_eq!(
        w.step(Input::PrCreated {
            id: id("c1"),
            pr: pr(1)
        }),
        Err(ErrorCode::ReviewInProgress)
    );
    // A review whose parent no longer waits for it.
    w.ok(Input::Terminate {
        id: id("r1"),
        reason: "stop".into(),
    });
    assert_eq!(w.status("c1"), Status::Working, "the parent works again");
    assert_eq!(
        w.step(Input::MergeBack {
            review: id("r1"),
            feedback: "late".into()
        }),
        Err(ErrorCode::InvalidState)
    );
    // Deadlines: not before them.
    assert_eq!(
        w.step(Input::TimedOut { id: id("c1") }),
        Err(ErrorCode::InvalidState)
    );
    let codes: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(codes.len(), 16);
    assert!(codes.iter().all(|c| c.starts_with("WORKFLOW_")));
}

#[test]
fn timeouts_are_due_from_the_store_whoever_started_the_instance() {
    let mut w = World::default();
    w.working("c1", false, 2);
    w.reviewing("c1", "r1");
    w.now += 31 * 60_000;
    let due = instance::due(&w.all, Timestamp(w.now));
    assert_eq!(due, vec![Input::TimedOut { id: id("r1") }]);
    for input in due {
        w.ok(input);
    }
    assert_eq!(w.status("r1"), Status::Failed);
    let c1 = w.all.get(&id("c1")).unwrap();
    assert_eq!(c1.status, Status::Working, "the parent goes on");
    assert!(
        c1.coding()
            .unwrap()
            .last_error
            .as_deref()
            .unwrap()
            .starts_with("WORKFLOW_REVIEW_TIMEOUT"),
        "{c1:?}"
    );
    assert_eq!(c1.coding().unwrap().review_count, 0);
    // The reviewer, still at work, hears why it may no longer merge back.
    assert_eq!(
        w.step(Input::MergeBack {
            review: id("r1"),
            feedback: "late".into()
        }),
        Err(ErrorCode::ReviewTimeout)
    );
    w.now += 24 * HOUR;
    for input in instance::due(&w.all, Timestamp(w.now)) {
        w.ok(input);
    }
    let c1 = w.all.get(&id("c1")).unwrap();
    assert_eq!(c1.status, Status::Failed);
    assert_eq!(
        c1.coding().unwrap().last_error.as_deref(),
        Some("WORKFLOW_EXECUTION_TIMEOUT")
    );
    assert!(instance::due(&w.all, Timestamp(w.now)).is_empty());
    assert_eq!(
        w.step(Input::RequestReview {
            parent: id("c1"),
            review: id("r2"),
            config: review_config(),
        }),
        Err(ErrorCode::ExecutionTimeout),
        "a timed-out coding agent asking for a review is told why it cannot"
    );
    assert_eq!(
        w.step(Input::Terminate {
            id: id("c1"),
            reason: "x".into()
        }),
        Err(ErrorCode::ExecutionTimeout)
    );
}

#[test]
fn terminating_a_coding_instance_ends_its_review_first() {
    let mut w = World::default();
    w.working("c1", false, 2);
    w.reviewing("c1", "r1");
    w.ok(Input::Terminate {
        id: id("c1"),
        reason: "no longer needed".into(),
    });
    let kinds: Vec<String> = w.journal[w.journal.len() - 2..]
        .iter()
        .map(|r| match &r.event {
            Event::Terminated { id, .. } => id.to_string(),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(kinds, ["r1", "c1"]);
    assert_eq!(w.status("r1"), Status::Terminated);
    assert_eq!(w.status("c1"), Status::Terminated);
    assert_eq!(
        w.step(Input::Terminate {
            id: id("c1"),
            reason: "again".into()
        }),
        Err(ErrorCode::InvalidState)
    );
    w.ok(Input::CleanupFailed {
        id: id("c1"),
        error: "worktree holds unpushed commits; kept".into(),
    });
    let c1 = w.all.get(&id("c1")).unwrap();
    assert_eq!(
        c1.status,
        Status::Terminated,
        "a cleanup failure is recorded, not thrown"
    );
    assert!(
        c1.coding()
            .unwrap()
            .last_error
            .as_deref()
            .unwrap()
            .starts_with("WORKFLOW_CLEANUP_FAILED")
    );
}

// ----- random sequences ----------------------------------------------------

#[derive(Debug, Clone)]
enum Action {
    Spawn(u8, bool, u32),
    Allocate(u8),
    Activity(u8),
    /// A turn of the agent, as task `t<k>` (or a task that is a turn
    /// already).
    Turn(u8, bool),
    Review(u8, u8),
    MergeBack(u8),
    Deliver(u8),
    Pr(u8),
    PrClosed(u8, bool),
    Terminate(u8),
    /// Its workflow phase's work is done.
    Finish(u8),
    Fail(u8),
    CleanupFailed(u8),
    /// Minutes pass, then whatever is due times out.
    Wait(u32),
}

fn action() -> impl Strategy<Value = Action> {
    // Few ids, and the loop's own steps more often than the ends, so
    // that reviews are asked, merged back and pushed in most sequences.
    let n = 0u8..8;
    prop_oneof![
        3 => (n.clone(), any::<bool>(), 0u32..4).prop_map(|(i, r, m)| Action::Spawn(i, r, m)),
        6 => n.clone().prop_map(Action::Allocate),
        1 => n.clone().prop_map(Action::Activity),
        1 => (n.clone(), any::<bool>()).prop_map(|(i, again)| Action::Turn(i, again)),
        6 => (n.clone(), 0u8..6).prop_map(|(p, r)| Action::Review(p, r)),
        4 => n.clone().prop_map(Action::MergeBack),
        1 => n.clone().prop_map(Action::Deliver),
        3 => n.clone().prop_map(Action::Pr),
        1 => (n.clone(), any::<bool>()).prop_map(|(i, m)| Action::PrClosed(i, m)),
        1 => n.clone().prop_map(Action::Terminate),
        1 => n.clone().prop_map(Action::Finish),
        1 => n.clone().prop_map(Action::Fail),
        1 => n.clone().prop_map(Action::CleanupFailed),
        1 => (1u32..600).prop_map(Action::Wait),
    ]
}

/// Coding instance `c<i>`.
fn coding_id(i: u8) -> InstanceId {
    id(&format!("c{}", i % 4))
}

/// The `i`-th of the instances there are (reviews first when `review`),
/// or one that does not exist.
fn pick(w: &World, i: u8, review: bool) -> InstanceId {
    let mut ids: Vec<&InstanceId> = w
        .all
        .by_id
        .values()
        .filter(|x| !review || x.review().is_some())
        .map(|x| &x.id)
        .collect();
    ids.sort_by_key(|x| (!x.as_str().starts_with('r'), x.as_str().to_string()));
    match ids.get(usize::from(i) % (ids.len() + 1)) {
        Some(x) => (*x).clone(),
        None => id("gone"),
    }
}

fn input_of(a: &Action, w: &World, k: usize) -> Vec<Input> {
    match a.clone() {
        Action::Spawn(i, r, m) => vec![Input::Spawn {
            id: coding_id(i),
            config: CodingConfig {
                execution_timeout_ms: 6 * HOUR as u64,
                ..coding(r, m)
            },
        }],
        Action::Allocate(i) => vec![Input::Allocated {
            id: pick(w, i, false),
            resources: resources(&format!("x{i}")),
        }],
        Action::Activity(i) if k.is_multiple_of(2) => vec![Input::Activity {
            id: pick(w, i, false),
        }],
        Action::Activity(i) => vec![Input::Checkpoint {
            id: pick(w, i, false),
            note: format!("note {k}"),
        }],
        Action::Turn(i, again) => {
            let id_ = pick(w, i, false);
            let any_turn = w.all.by_id.values().find_map(|x| x.turns.first());
            let task = match any_turn {
                Some(t) if again => t.clone(),
                _ => id(&format!("t{k:03}")),
            };
            vec![Input::Turn { id: id_, task }]
        }
        // A fresh review id each time, or now and then one in use.
        Action::Review(p, r) => vec![Input::RequestReview {
            parent: coding_id(p),
            review: if r == 0 {
                pick(w, p, false)
            } else {
                id(&format!("r{k:03}"))
            },
            config: ReviewConfig {
                timeout_ms: 45 * 60_000,
                ..review_config()
            },
        }],
        Action::MergeBack(i) => vec![Input::MergeBack {
            review: pick(w, i, true),
            feedback: format!("feedback {k}"),
        }],
        Action::Deliver(i) => vec![Input::FeedbackDelivered {
            review: pick(w, i, true),
        }],
        Action::Pr(i) => vec![Input::PrCreated {
            id: pick(w, i, false),
            pr: pr(k as u32 + 1),
        }],
        Action::PrClosed(i, merged) => vec![Input::PrClosed {
            id: pick(w, i, false),
            merged,
        }],
        Action::Terminate(i) => vec![Input::Terminate {
            id: pick(w, i, false),
            reason: "by hand".into(),
        }],
        Action::Finish(i) => vec![Input::Finish {
            id: pick(w, i, false),
            reason: "its phase passed".into(),
        }],
        Action::Fail(i) => vec![Input::Fail {
            id: pick(w, i, false),
            code: ErrorCode::ResourceAllocationFailed,
            reason: "tmux is gone".into(),
        }],
        Action::CleanupFailed(i) => vec![Input::CleanupFailed {
            id: pick(w, i, false),
            error: "kept".into(),
        }],
        Action::Wait(_) => instance::due(&w.all, Timestamp(w.now)),
    }
}

fn check(w: &World, ended_before: &BTreeMap<InstanceId, Status>) -> Result<(), TestCaseError> {
    // 7.
    let mut turns = std::collections::BTreeSet::new();
    for i in w.all.by_id.values() {
        for t in &i.turns {
            prop_assert!(turns.insert(t.clone()), "task {} is a turn twice", t);
        }
    }
    for i in w.all.by_id.values() {
        if let Some(c) = i.coding() {
            let max = c.max_reviews;
            // 1.
            prop_assert_eq!(
                c.current_review_instance_id.is_some(),
                i.status == Status::ReviewRequested,
                "{:?}",
                i
            );
            if let Some(r) = &c.current_review_instance_id {
                let r = w.all.get(r).expect("the review in flight exists");
                prop_assert!(!r.status.ended(), "{:?}", r);
                prop_assert_eq!(&r.review().unwrap().parent_instance_id, &i.id);
            }
            // 3.
            prop_assert!(c.review_count <= max, "{:?}", i);
            let decided = w
                .all
                .reviews_of(&i.id)
                .filter(|r| r.review().unwrap().decision.is_some())
                .count() as u32;
            prop_assert_eq!(c.review_count, decided, "{:?}", i);
            // 5.
            if i.status == Status::PrCreated {
                prop_assert!(c.pull_request.is_some());
            }
        }
        if let Some(r) = i.review()
            && !i.status.ended()
        {
            // 2.
            let p = w.all.get(&r.parent_instance_id).expect("a review's parent");
            prop_assert_eq!(
                p.coding().unwrap().current_review_instance_id.as_ref(),
                Some(&i.id)
            );
        }
        // 4.
        if let Some(before) = ended_before.get(&i.id) {
            prop_assert_eq!(*before, i.status, "an ended instance moved");
        }
        // 5.
        prop_assert_eq!(i.terminated_at.is_some(), i.status == Status::Terminated);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn the_review_loop_invariants_hold(actions in prop::collection::vec(action(), 1..80)) {
        let mut w = World::default();
        for (k, a) in actions.iter().enumerate() {
            if let Action::Wait(minutes) = a {
                w.now += i64::from(*minutes) * 60_000;
            }
            let ended: BTreeMap<InstanceId, Status> = w
                .all
                .by_id
                .values()
                .filter(|i| i.status.ended())
                .map(|i| (i.id.clone(), i.status))
                .collect();
            for input in input_of(a, &w, k) {
                let before = w.all.clone();
                if w.step(input).is_err() {
                    prop_assert_eq!(&before, &w.all, "a refusal changed nothing");
                }
            }
            check(&w, &ended)?;
        }
        // 6.
        prop_assert_eq!(&instance::replay(&w.journal), &w.all);
        let json = serde_json::to_string(&w.journal).unwrap();
        let back: Vec<Record> = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(&instance::replay(&back), &w.all);
    }
}
