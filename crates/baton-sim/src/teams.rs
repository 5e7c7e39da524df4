//! Team actors: members claiming and completing the team's tasks from
//! their own (possibly stale) read of the team, committed at the position
//! they decided from, as `Teams::step` does; and the mailbox, where a send
//! cut on the way is sent again under the same `msg_id`.

use crate::tasks::short;
use crate::world::World;
use baton_core::Timestamp;
use baton_core::team::{
    self, Input, Lead, MessageType, NewMessage, NewTask, NewTeammate, Record, Role, TaskStatus,
};
use baton_store::TeamStore;
use baton_store::sim::is_injected;

pub const TEAM: &str = "crew";
pub const MEMBERS: [&str; 3] = ["ana", "bo", "cy"];
const TASKS: usize = 4;

/// Creates the team with its tasks (set-up, not a step).
pub fn setup(w: &World) {
    let id = baton_core::TaskId::parse(TEAM).expect("a team id");
    let now = w.now();
    let events = team::decide(
        None,
        Input::Create {
            lead: Lead {
                session_id: "lead".into(),
                owner: "p0".into(),
                attached_at: now,
            },
            teammates: MEMBERS
                .map(|n| NewTeammate {
                    name: n.into(),
                    role: Role::Engineer,
                    agent: None,
                })
                .to_vec(),
            tasks: (0..TASKS)
                .map(|i| NewTask {
                    id: format!("w{i}"),
                    title: format!("work {i}"),
                    dependencies: Vec::new(),
                })
                .collect(),
            facts: Default::default(),
        },
        now,
    )
    .expect("a valid team");
    let records: Vec<Record> = events
        .into_iter()
        .enumerate()
        .map(|(i, event)| Record {
            seq: i as u64 + 1,
            ts: now,
            event,
        })
        .collect();
    let t = team::replay(&id, &records).expect("a created team");
    w.store
        .inner()
        .create_team(&t, &records)
        .expect("the team is stored");
}

/// Member `who` (driven by process `p`) claims a pending task or completes
/// one it started, deciding from the process's last read of the team.
pub fn work(w: &mut World, p: usize, who: &str) {
    if w.procs[p].team.is_none() {
        w.procs[p].team = w.store.team(TEAM).expect("reads do not fail");
    }
    let Some(view) = w.procs[p].team.clone() else {
        return;
    };
    let mine = view
        .tasks
        .iter()
        .find(|t| t.status == TaskStatus::InProgress && t.assigned_to.as_deref() == Some(who));
    let input = match mine {
        Some(t) => Input::Complete {
            task: t.id.clone(),
            by: who.into(),
        },
        None => {
            let pending: Vec<&str> = view
                .tasks
                .iter()
                .filter(|t| t.status == TaskStatus::Pending)
                .map(|t| t.id.as_str())
                .collect();
            let Some(task) = w.rng.pick(&pending).map(|s| s.to_string()) else {
                return;
            };
            Input::Start {
                task,
                by: who.into(),
            }
        }
    };
    let name = w.procs[p].name.clone();
    let what = format!("{input:?}");
    let now: Timestamp = w.local_now(p);
    let events = match team::decide(Some(&view), input, now) {
        Ok(e) => e,
        Err(e) => {
            w.log(format!("{name} team {what}: refused ({})", e.code));
            return;
        }
    };
    let mut next = view.clone();
    let mut records = Vec::new();
    for event in events {
        let rec = Record {
            seq: next.last_seq + 1,
            ts: now,
            event,
        };
        next = team::apply(Some(next), &view.id, &rec).expect("a team stays");
        records.push(rec);
    }
    w.team_dirty = true;
    match w.store.commit_team(view.last_seq, &next, &records) {
        Ok(()) => {
            w.log(format!("{name} team {what} -> seq {}", next.last_seq));
            w.procs[p].team = Some(next);
        }
        Err(e) => {
            // Decide again from a fresh read next time.
            w.log(format!("{name} team {what}: {}", short(&e)));
            w.procs[p].team = None;
        }
    }
}

/// Member `from` sends a new message, or sends again one whose send was
/// cut (same `msg_id`: stored once whatever happened the first time).
pub fn send(w: &mut World, p: usize, from: &str) {
    let msg_id = match w.ledger.unsure.iter().next().cloned() {
        Some(id) if w.rng.chance(50) => id,
        _ => format!("m{}", w.ledger.sent.len() + w.ledger.unsure.len()),
    };
    send_id(w, p, from, &msg_id);
}

/// Sends `msg_id` (its content follows from it, as a retry's does).
pub fn send_id(w: &mut World, p: usize, from: &str, msg_id: &str) {
    let to = MEMBERS[msg_id.len() % MEMBERS.len()];
    let m = NewMessage {
        msg_id: msg_id.into(),
        from: from.into(),
        to: to.into(),
        kind: MessageType::Info,
        subject: format!("about {msg_id}"),
        body: "text".into(),
    };
    let name = w.procs[p].name.clone();
    w.team_dirty = true;
    match w.store.send_message(TEAM, &m) {
        Ok((stored, new)) => {
            w.log(format!(
                "{name} send {msg_id}: seq {} ({})",
                stored.seq,
                if new { "new" } else { "again" }
            ));
            w.ledger.unsure.remove(msg_id);
            w.ledger.sent.insert(msg_id.to_string());
        }
        Err(e) => {
            w.log(format!("{name} send {msg_id}: {}", short(&e)));
            if is_injected(&e) {
                w.ledger.unsure.insert(msg_id.to_string());
            }
        }
    }
}

/// The quiet period's last act: every cut send is sent again until stored.
pub fn resend_all(w: &mut World) {
    let unsure: Vec<String> = w.ledger.unsure.iter().cloned().collect();
    for id in unsure {
        send_id(w, 0, MEMBERS[0], &id);
    }
}
