//! The invariants, checked by an oracle that reads the wrapped store
//! without faults: after every step for what the step touched, and for
//! everything at the end. Each check is counted; a failed one is a break.

use crate::ledger::InstanceOracle;
use crate::tasks::{terminal, tid};
use crate::world::World;
use baton_core::instance::Event;
use baton_core::instance::{self, InstanceId, Status};
use baton_core::{Event as TaskEvent, machine};
use baton_store::{InstanceStore, MessageQuery, Store, TeamStore};
use std::collections::BTreeSet;

/// Task `id` as stored: its journal is gapless from 1, its projection is
/// the replay of its journal, no phase passed twice in one run of its
/// attempts (without a loop or a rewind between), and every pass that
/// landed is still in the journal.
pub fn task(w: &mut World, id: &str) {
    let Some(snap) = w.store.inner().load(&tid(id)).expect("oracle reads") else {
        return;
    };
    let journal = w
        .store
        .inner()
        .events(&tid(id), 0, usize::MAX >> 1)
        .expect("oracle reads");
    let gapless = journal
        .iter()
        .enumerate()
        .all(|(i, r)| r.seq == i as u64 + 1);
    w.check(
        gapless && journal.len() as u64 == snap.state.last_seq,
        || {
            format!(
                "{id}: journal seqs {:?} for a projection at {}",
                journal.iter().map(|r| r.seq).collect::<Vec<_>>(),
                snap.state.last_seq
            )
        },
    );
    let replayed = machine::replay(&tid(id), &journal);
    w.check(replayed.as_ref() == Some(&snap.state), || {
        format!("{id}: the stored projection is not the replay of its journal")
    });
    let mut passed = BTreeSet::new();
    let mut twice = None;
    for r in &journal {
        match &r.event {
            TaskEvent::PhasePassed { phase, .. } if !passed.insert(phase.to_string()) => {
                twice = Some((r.seq, phase.to_string()));
            }
            TaskEvent::LoopedBack { reset, .. } | TaskEvent::Rewound { reset, .. } => {
                for ph in reset {
                    passed.remove(ph.as_str());
                }
            }
            _ => {}
        }
    }
    w.check(twice.is_none(), || {
        let (seq, ph) = twice.clone().unwrap_or_default();
        format!("{id}: phase {ph} passed again at seq {seq} without a rewind")
    });
    let kept: BTreeSet<(String, String)> = journal
        .iter()
        .filter_map(|r| match &r.event {
            TaskEvent::PhasePassed { phase, summary, .. } => {
                Some((phase.to_string(), summary.clone()))
            }
            _ => None,
        })
        .collect();
    let lost: Vec<String> = w
        .ledger
        .passes
        .iter()
        .filter(|((t, _), _)| t == id)
        .flat_map(|((_, ph), sums)| {
            sums.iter()
                .filter(|s| !kept.contains(&(ph.clone(), (*s).clone())))
                .map(move |s| format!("{ph}: {s:?}"))
        })
        .collect();
    w.check(lost.is_empty(), || {
        format!("{id}: completed summaries lost: {lost:?}")
    });
}

/// The team as stored is the replay of its journal, its journal gapless;
/// its mailbox is gapless, holds no message twice, and loses none the
/// store acknowledged.
pub fn team(w: &mut World, id: &str) {
    let inner = w.store.inner();
    let Some(stored) = inner.team(id).expect("oracle reads") else {
        return;
    };
    let records = inner
        .team_records(id, 0, usize::MAX >> 1)
        .expect("oracle reads");
    let gapless = records
        .iter()
        .enumerate()
        .all(|(i, r)| r.seq == i as u64 + 1);
    let replayed = baton_core::team::replay(&stored.id, &records);
    let messages = inner
        .messages(
            id,
            &MessageQuery {
                limit: usize::MAX >> 1,
                ..MessageQuery::default()
            },
        )
        .expect("oracle reads");
    w.check(gapless && replayed.as_ref() == Some(&stored), || {
        format!("team {id}: the stored team is not the replay of its gapless journal")
    });
    let seqs_gapless = messages
        .iter()
        .enumerate()
        .all(|(i, m)| m.seq == i as u64 + 1);
    let ids: BTreeSet<&str> = messages.iter().map(|m| m.msg_id.as_str()).collect();
    w.check(seqs_gapless && ids.len() == messages.len(), || {
        format!(
            "team {id}: mailbox seqs {:?}, {} distinct of {} messages",
            messages.iter().map(|m| m.seq).collect::<Vec<_>>(),
            ids.len(),
            messages.len()
        )
    });
    let lost: Vec<String> = w
        .ledger
        .sent
        .iter()
        .filter(|m| !ids.contains(m.as_str()))
        .cloned()
        .collect();
    w.check(lost.is_empty(), || {
        format!("team {id}: messages lost: {lost:?}")
    });
    let stray: Vec<String> = ids
        .iter()
        .filter(|m| !w.ledger.sent.contains(**m) && !w.ledger.unsure.contains(**m))
        .map(|m| m.to_string())
        .collect();
    w.check(stray.is_empty(), || {
        format!("team {id}: messages nobody sent: {stray:?}")
    });
}

/// The instances as stored: their journal is gapless and replays to the
/// stored rows; no instance is ended twice or leaves an ended status; a
/// review decides once; a turn is journaled once, and is one the
/// simulation started; a turn ended once at most. After a step the oracle
/// folds only the new records; `full` replays the journal from the start,
/// and checks too that no feedback delivered was lost: each
/// `FeedbackDelivered` is followed by a turn of its review's parent (the
/// commit checks the engine journals it in the same commit).
pub fn instances(w: &mut World, full: bool) {
    let mut o = if full {
        InstanceOracle::default()
    } else {
        std::mem::take(&mut w.inst_oracle)
    };
    let inner = w.store.inner();
    let from = o.replayed.last_seq;
    let records = inner
        .instance_events(from, usize::MAX >> 1)
        .expect("oracle reads");
    let stored = inner.instances().expect("oracle reads");
    let gapless = records
        .iter()
        .enumerate()
        .all(|(i, r)| r.seq == from + 1 + i as u64);
    let mut ended_again = Vec::new();
    let mut left_ended = Vec::new();
    let mut decided_again = Vec::new();
    let mut turns_again = Vec::new();
    for r in &records {
        let ended_before: Vec<(InstanceId, Status)> = o
            .replayed
            .by_id
            .values()
            .filter(|i| i.status.ended())
            .map(|i| (i.id.clone(), i.status))
            .collect();
        match &r.event {
            Event::Terminated { id, .. }
            | Event::Finished { id, .. }
            | Event::Failed { id, .. }
            | Event::PrClosed { id, .. }
                if ended_before.iter().any(|(e, _)| e == id) =>
            {
                ended_again.push(format!("{id} at seq {}", r.seq));
            }
            Event::MergedBack { review, .. } => {
                decide_once(&mut o, &mut decided_again, review, r.seq);
            }
            Event::PrCreated { id, owner, .. } if id != owner => {
                decide_once(&mut o, &mut decided_again, id, r.seq);
            }
            Event::Turn { id, task } => {
                let known = w.turns.get(task.as_str()).map(|t| t.instance.as_str());
                if !o.turn_tasks.insert(task.to_string()) || known != Some(id.as_str()) {
                    turns_again.push(format!("{task} of {id} at seq {}", r.seq));
                }
                if let Some(waiting) = o.awaiting_turn.get_mut(id) {
                    waiting.remove(0);
                    if waiting.is_empty() {
                        o.awaiting_turn.remove(id);
                    }
                }
            }
            Event::FeedbackDelivered { review } => {
                if let Some(s) = o.replayed.get(review).and_then(|i| i.review()) {
                    o.awaiting_turn
                        .entry(s.parent_instance_id.clone())
                        .or_default()
                        .push(format!("{review} at seq {}", r.seq));
                }
            }
            _ => {}
        }
        instance::apply(&mut o.replayed, r);
        for (id, was) in ended_before {
            let now = o.replayed.get(&id).map(|i| i.status);
            if now != Some(was) {
                left_ended.push(format!("{id} {} -> {now:?} at seq {}", was.as_str(), r.seq));
            }
        }
    }
    w.check(gapless && stored == o.replayed, || {
        format!(
            "the stored instances (at {}) are not the replay of their gapless journal (seqs from {from}: {:?})",
            stored.last_seq,
            records.iter().map(|r| r.seq).collect::<Vec<_>>()
        )
    });
    w.check(ended_again.is_empty() && left_ended.is_empty(), || {
        format!("instances ended again: {ended_again:?}; left an ended status: {left_ended:?}")
    });
    w.check(decided_again.is_empty(), || {
        format!("reviews decided again: {decided_again:?}")
    });
    let ended_twice: Vec<String> = w
        .turns
        .iter()
        .filter(|(_, t)| t.ends > 1)
        .map(|(k, _)| k.clone())
        .collect();
    w.check(turns_again.is_empty() && ended_twice.is_empty(), || {
        format!("turns journaled again or unknown: {turns_again:?}; ended twice: {ended_twice:?}")
    });
    if full {
        let lost: Vec<&String> = o.awaiting_turn.values().flatten().collect();
        w.check(lost.is_empty(), || {
            format!(
                "feedback delivered and no turn of its parent journaled after it (lost): {lost:?}"
            )
        });
    } else {
        w.inst_oracle = o;
    }
}

fn decide_once(o: &mut InstanceOracle, again: &mut Vec<String>, review: &InstanceId, seq: u64) {
    let n = o.decisions.entry(review.clone()).or_default();
    *n += 1;
    if *n > 1 {
        again.push(format!("{review} at seq {seq}"));
    }
}

/// Liveness of the instances, at the end of the quiet period: every one
/// is settled (ended, or waiting on its pull request), or `due` names it
/// at its deadline and timing it out ends it.
pub fn instances_settled(w: &mut World) {
    let all = w.store.inner().instances().expect("oracle reads");
    let settled = |s: Status| s.ended() || s == Status::PrCreated;
    for i in all.by_id.values() {
        let ends = settled(i.status) || {
            let at = i.deadline();
            let named = instance::due(&all, at)
                .iter()
                .any(|d| matches!(d, instance::Input::TimedOut { id } if id == &i.id));
            let input = instance::Input::TimedOut { id: i.id.clone() };
            let ticked = instance::decide(&all, input, at).ok().map(|events| {
                let mut after = all.clone();
                for (k, event) in events.into_iter().enumerate() {
                    let seq = all.last_seq + 1 + k as u64;
                    instance::apply(&mut after, &instance::Record { seq, ts: at, event });
                }
                after
            });
            let ends =
                named && ticked.is_some_and(|a| a.get(&i.id).is_some_and(|j| settled(j.status)));
            let turn = i.turns.last().and_then(|t| w.turns.get(t.as_str()));
            w.log(format!(
                "liveness: {} {} (turn {:?}), left to its deadline",
                i.id,
                i.status.as_str(),
                turn.map(|t| t.state)
            ));
            ends
        };
        w.check(ends, || {
            format!(
                "instance {} is still {} after the quiet period, and its deadline would not end it",
                i.id,
                i.status.as_str()
            )
        });
    }
}

/// Liveness, at the end of the quiet period: every task the simulation
/// started reached a terminal status.
pub fn all_terminal(w: &mut World) {
    let tasks = w.store.inner().list().expect("oracle reads");
    for t in tasks {
        w.check(terminal(t.status), || {
            format!(
                "{}: still {} after the quiet period",
                t.id,
                t.status.as_str()
            )
        });
    }
}
