use super::*;

const MIN: i64 = 60_000;

fn lead(session: &str) -> Lead {
    Lead {
        session_id: session.into(),
        owner: format!("host-{session}"),
        attached_at: Timestamp(0),
    }
}

fn mate(name: &str) -> NewTeammate {
    NewTeammate {
        name: name.into(),
        role: Role::Engineer,
        agent: None,
    }
}

fn task(id: &str, deps: &[&str]) -> NewTask {
    NewTask {
        id: id.into(),
        title: format!("do {id}"),
        dependencies: deps.iter().map(|d| d.to_string()).collect(),
    }
}

/// A team driven through `decide` and `apply`, its journal kept.
struct T {
    id: TeamId,
    team: Option<Team>,
    journal: Vec<Record>,
    now: i64,
}

impl T {
    fn new(tasks: Vec<NewTask>) -> T {
        let mut t = T {
            id: TeamId::parse("crew").unwrap(),
            team: None,
            journal: Vec::new(),
            now: 0,
        };
        t.go(Input::Create {
            lead: lead("s1"),
            teammates: vec![mate("ana"), mate("bo")],
            tasks,
            facts: Default::default(),
        })
        .unwrap();
        t
    }

    fn go(&mut self, input: Input) -> Result<usize, TeamError> {
        let events = decide(self.team.as_ref(), input, Timestamp(self.now))?;
        let n = events.len();
        for event in events {
            let rec = Record {
                seq: self.journal.len() as u64 + 1,
                ts: Timestamp(self.now),
                event,
            };
            self.team = apply(self.team.take(), &self.id, &rec);
            self.journal.push(rec);
        }
        Ok(n)
    }

    fn team(&self) -> &Team {
        self.team.as_ref().unwrap()
    }

    fn status(&self, task: &str) -> TaskStatus {
        self.team().task(task).unwrap().status
    }
}

fn start(task: &str, by: &str) -> Input {
    Input::Start {
        task: task.into(),
        by: by.into(),
    }
}

fn complete(task: &str, by: &str) -> Input {
    Input::Complete {
        task: task.into(),
        by: by.into(),
    }
}

#[test]
fn a_dependency_cycle_is_refused_with_the_cycle_named() {
    let e = decide(
        None,
        Input::Create {
            lead: lead("s1"),
            teammates: vec![mate("ana")],
            tasks: vec![task("a", &["c"]), task("b", &["a"]), task("c", &["b"])],
            facts: Default::default(),
        },
        Timestamp(0),
    )
    .unwrap_err();
    assert_eq!(e.code, "DEPENDENCY_CYCLE");
    assert!(e.message.contains("a -> c -> b -> a"), "{}", e.message);
    // And when a new task closes one.
    let mut t = T::new(vec![task("a", &[])]);
    let e = t.go(Input::AddTask(task("a2", &["a2"]))).unwrap_err();
    assert_eq!(e.code, "DEPENDENCY_CYCLE");
    let e = t.go(Input::AddTask(task("x", &["nope"]))).unwrap_err();
    assert!(e.message.contains("depends on nope"), "{}", e.message);
}

#[test]
fn a_task_starts_only_once_its_dependencies_are_completed() {
    let mut t = T::new(vec![task("schema", &[]), task("api", &["schema"])]);
    let e = t.go(start("api", "bo")).unwrap_err();
    assert_eq!(e.code, "TASK_WAITS");
    assert!(
        e.message.contains("before schema is completed"),
        "{}",
        e.message
    );
    // Claiming an unassigned task assigns it.
    t.go(start("schema", "ana")).unwrap();
    assert_eq!(
        t.team().task("schema").unwrap().assigned_to.as_deref(),
        Some("ana")
    );
    assert_eq!(
        t.team().teammates["ana"].current_task.as_deref(),
        Some("schema")
    );
    let e = t.go(complete("schema", "bo")).unwrap_err();
    assert_eq!(e.code, "TASK_OWNED");
    t.go(complete("schema", "ana")).unwrap();
    assert_eq!(t.team().teammates["ana"].current_task, None);
    t.go(start("api", "bo")).unwrap();
    assert_eq!(t.status("api"), TaskStatus::InProgress);
    // Again: nothing new.
    assert_eq!(t.go(start("api", "bo")).unwrap(), 0);
    assert_eq!(t.go(complete("schema", "ana")).unwrap(), 0);
}

#[test]
fn a_lead_reattaches_and_only_a_silent_one_is_replaced() {
    let mut t = T::new(vec![]);
    let attach = |session: &str, silent: Option<i64>| Input::Attach {
        lead: lead(session),
        lead_silent_ms: silent,
        replace_after_ms: 30 * MIN,
    };
    // The same session: the fast path.
    assert_eq!(t.go(attach("s1", Some(MIN))).unwrap(), 1);
    // Another, while the lead is live: refused, naming it, and worth a retry.
    let e = t.go(attach("s2", Some(29 * MIN))).unwrap_err();
    assert_eq!(e.code, "LEAD_ATTACHED");
    assert!(e.transient);
    assert!(e.message.contains("session s1 (host-s1)"), "{}", e.message);
    // Silent past 30 minutes: replaced.
    t.go(attach("s2", Some(31 * MIN))).unwrap();
    assert_eq!(t.team().lead.as_ref().unwrap().session_id, "s2");
    match &t.journal.last().unwrap().event {
        Event::LeadAttached { replaced, .. } => assert_eq!(replaced.as_deref(), Some("s1")),
        e => panic!("{e:?}"),
    }
}

#[test]
fn a_timed_out_lead_suspends_the_team_until_it_is_back() {
    let mut t = T::new(vec![task("a", &[])]);
    t.now = 6 * MIN;
    t.go(Input::LeadTimedOut {
        last_seen: Some(Timestamp(0)),
    })
    .unwrap();
    assert_eq!(t.team().status, TeamStatus::Suspended);
    assert_eq!(t.team().lead_timeout_detected_at, Some(Timestamp(6 * MIN)));
    // Noticed again: nothing new.
    assert_eq!(t.go(Input::LeadTimedOut { last_seen: None }).unwrap(), 0);
    // Teammates keep working in zombie mode.
    t.go(start("a", "ana")).unwrap();
    t.go(Input::Checkpoint {
        task: "a".into(),
        by: "ana".into(),
        files_modified: vec!["src/a.rs".into()],
        local_status: LocalStatus::Green,
        git_branch: Some("team/ana".into()),
        head: Some("abc".into()),
    })
    .unwrap();
    assert_eq!(
        t.team()
            .task("a")
            .unwrap()
            .checkpoint
            .as_ref()
            .unwrap()
            .checkpoint_seq,
        1
    );
    t.go(Input::Attach {
        lead: lead("s1"),
        lead_silent_ms: Some(60 * MIN),
        replace_after_ms: 30 * MIN,
    })
    .unwrap();
    assert_eq!(t.team().status, TeamStatus::Active);
    assert_eq!(t.team().lead_timeout_detected_at, None);
}

#[test]
fn a_task_is_reassigned_from_an_offline_owner_with_its_checkpoint() {
    let mut t = T::new(vec![task("a", &[])]);
    t.go(start("a", "ana")).unwrap();
    t.go(Input::Checkpoint {
        task: "a".into(),
        by: "ana".into(),
        files_modified: vec![],
        local_status: LocalStatus::Red,
        git_branch: Some("team/ana".into()),
        head: Some("abc".into()),
    })
    .unwrap();
    let reassign = |force, online| Input::Reassign {
        task: "a".into(),
        to: "bo".into(),
        force,
        owner_online: online,
    };
    assert_eq!(
        t.go(reassign(false, true)).unwrap_err().code,
        "OWNER_ONLINE"
    );
    t.go(reassign(false, false)).unwrap();
    let a = t.team().task("a").unwrap();
    assert_eq!(a.assigned_to.as_deref(), Some("bo"));
    assert_eq!(a.status, TaskStatus::InProgress);
    assert_eq!(a.checkpoint.as_ref().unwrap().head.as_deref(), Some("abc"));
    assert_eq!(t.team().teammates["bo"].current_task.as_deref(), Some("a"));
    assert_eq!(t.team().teammates["ana"].current_task, None);
    // The old owner can no longer move it.
    assert_eq!(t.go(complete("a", "ana")).unwrap_err().code, "TASK_OWNED");
    t.go(complete("a", "bo")).unwrap();
}

#[test]
fn an_aborted_consolidation_reopens_the_tasks_since_the_last_good_commit() {
    let mut t = T::new(vec![task("a", &[]), task("b", &[])]);
    t.go(start("a", "ana")).unwrap();
    t.go(complete("a", "ana")).unwrap();
    t.now = MIN;
    t.go(Input::StartConsolidation {
        message: "team crew: a".into(),
        base: Some("c0".into()),
        checks: vec![],
    })
    .unwrap();
    t.go(Input::ConsolidationCommitted {
        commit: "c1".into(),
    })
    .unwrap();
    t.now = 2 * MIN;
    t.go(start("b", "bo")).unwrap();
    t.go(complete("b", "bo")).unwrap();
    t.now = 3 * MIN;
    t.go(Input::StartConsolidation {
        message: "team crew: b".into(),
        base: Some("c1".into()),
        checks: vec![],
    })
    .unwrap();
    assert_eq!(t.team().status, TeamStatus::Consolidating);
    assert_eq!(
        t.go(Input::Finish { force: true }).unwrap_err().code,
        "CONSOLIDATING"
    );
    t.go(Input::AbortConsolidation).unwrap();
    assert_eq!(t.status("a"), TaskStatus::Completed);
    assert_eq!(t.status("b"), TaskStatus::Pending);
    assert_eq!(t.team().last_good_commit.as_deref(), Some("c1"));
    match &t.journal.last().unwrap().event {
        Event::ConsolidationAborted { back_to, reopened } => {
            assert_eq!(back_to.as_deref(), Some("c1"));
            assert_eq!(reopened, &["b".to_string()]);
        }
        e => panic!("{e:?}"),
    }
}

#[test]
fn a_completed_team_refuses_every_write_and_replay_gives_the_same_team() {
    let mut t = T::new(vec![task("a", &[])]);
    t.go(start("a", "ana")).unwrap();
    t.go(complete("a", "ana")).unwrap();
    t.go(Input::Finish { force: false }).unwrap();
    let e = t.go(start("a", "ana")).unwrap_err();
    assert_eq!(e.code, "TEAM_COMPLETED");
    assert!(e.hint.contains("baton team review crew"), "{}", e.hint);
    assert_eq!(replay(&t.id, &t.journal).as_ref(), t.team.as_ref());
    assert_eq!(
        decide(None, start("a", "ana"), Timestamp(0))
            .unwrap_err()
            .code,
        "TEAM_NOT_FOUND"
    );
}

#[test]
fn a_team_with_open_tasks_is_completed_only_when_forced() {
    let mut t = T::new(vec![task("a", &[]), task("b", &["a"]), task("c", &[])]);
    t.go(start("a", "ana")).unwrap();
    t.go(start("c", "bo")).unwrap();
    t.go(complete("c", "bo")).unwrap();
    let e = t.go(Input::Finish { force: false }).unwrap_err();
    assert_eq!(e.code, "TASKS_OPEN");
    assert!(!e.transient);
    assert!(
        e.message
            .contains("2 open task(s): a do a (in_progress, ana), b do b (pending)"),
        "{}",
        e.message
    );
    assert!(e.hint.contains("--force"), "{}", e.hint);
    assert_eq!(t.team().status, TeamStatus::Active);
    t.go(Input::Finish { force: true }).unwrap();
    assert_eq!(t.team().status, TeamStatus::Completed);
    match &t.journal.last().unwrap().event {
        Event::Completed { open } => assert_eq!(open, &["a".to_string(), "b".to_string()]),
        e => panic!("{e:?}"),
    }
}

#[test]
fn a_retry_keeps_the_checks_unless_given_new_ones_and_the_merged_branches() {
    let mut t = T::new(vec![]);
    assert_eq!(
        t.go(Input::AmendConsolidation {
            message: Some("x".into()),
            checks: None
        })
        .unwrap_err()
        .code,
        "NOT_CONSOLIDATING"
    );
    t.go(Input::StartConsolidation {
        message: "m1".into(),
        base: Some("c0".into()),
        checks: vec!["make test".into()],
    })
    .unwrap();
    // The same message and checks again: nothing new.
    assert_eq!(
        t.go(Input::AmendConsolidation {
            message: Some("m1".into()),
            checks: Some(vec!["make test".into()])
        })
        .unwrap(),
        0
    );
    t.go(Input::AmendConsolidation {
        message: Some("m2".into()),
        checks: None,
    })
    .unwrap();
    let c = t.team().consolidation.clone().unwrap();
    assert_eq!(c.message, "m2");
    assert_eq!(c.checks, Some(vec!["make test".to_string()]));
    let merged = |branch: &str, commit: &str| MergedBranch {
        teammate: Some("ana".into()),
        branch: branch.into(),
        commit: commit.into(),
    };
    t.go(Input::ConsolidationMerged {
        merged: vec![merged("team/ana", "a1")],
    })
    .unwrap();
    t.go(Input::ConsolidationMerged {
        merged: vec![merged("team/ana", "a2")],
    })
    .unwrap();
    assert_eq!(
        t.team().consolidation.as_ref().unwrap().merged,
        vec![merged("team/ana", "a2")]
    );
    t.go(Input::ConsolidationCommitted {
        commit: "c1".into(),
    })
    .unwrap();
    assert_eq!(t.team().consolidation, None);
    assert_eq!(replay(&t.id, &t.journal).as_ref(), t.team.as_ref());
}

#[test]
fn a_rollback_moves_the_open_tasks_checkpoint_to_the_good_commit() {
    let mut t = T::new(vec![task("a", &[])]);
    t.go(start("a", "ana")).unwrap();
    let cp = |status, head: &str| Input::Checkpoint {
        task: "a".into(),
        by: "ana".into(),
        files_modified: vec!["a.rs".into()],
        local_status: status,
        git_branch: Some("team/ana".into()),
        head: Some(head.into()),
    };
    t.go(cp(LocalStatus::Green, "good")).unwrap();
    t.go(cp(LocalStatus::Red, "bad")).unwrap();
    t.now = MIN;
    t.go(Input::ResolveZombie {
        teammate: "ana".into(),
        choice: "rollback".into(),
        saved: Some("refs/baton-saved/teams/crew/ana/1".into()),
        head: Some("good".into()),
        branch: Some("team/ana".into()),
    })
    .unwrap();
    let c = t.team().task("a").unwrap().checkpoint.clone().unwrap();
    assert_eq!(c.head.as_deref(), Some("good"));
    assert_eq!(c.checkpoint_seq, 3);
    assert_eq!(c.local_status, LocalStatus::Green);
    assert_eq!(c.last_progress_at, Timestamp(MIN));
    assert_eq!(
        c.rolled_back.as_deref(),
        Some("refs/baton-saved/teams/crew/ana/1")
    );
    // A commit moves the checkpoint to the commit made.
    t.go(Input::ResolveZombie {
        teammate: "ana".into(),
        choice: "commit".into(),
        saved: None,
        head: Some("c2".into()),
        branch: Some("team/ana".into()),
    })
    .unwrap();
    let c = t.team().task("a").unwrap().checkpoint.clone().unwrap();
    assert_eq!(c.head.as_deref(), Some("c2"));
    assert_eq!(replay(&t.id, &t.journal).as_ref(), t.team.as_ref());
}

/// Journals written before these fields existed are still read.
#[test]
fn older_records_are_read() {
    let e: Event = serde_json::from_str(r#"{"kind":"completed"}"#).unwrap();
    assert_eq!(e, Event::Completed { open: vec![] });
    let e: Event =
        serde_json::from_str(r#"{"kind":"consolidation_started","message":"m","base":null}"#)
            .unwrap();
    assert_eq!(
        e,
        Event::ConsolidationStarted {
            message: "m".into(),
            base: None,
            checks: None
        }
    );
    let e: Event = serde_json::from_str(
        r#"{"kind":"zombie_resolved","teammate":"ana","choice":"continue","saved":null,"head":null}"#,
    )
    .unwrap();
    assert!(matches!(e, Event::ZombieResolved { branch: None, .. }));
}
