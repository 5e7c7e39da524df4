//! The supervisor inside `baton serve`: every second it looks for tasks
//! that need it (`Engine::needing_supervision`: crashed, or a durable timer
//! due), asks whether each may restart now (`Engine::triage`: the limits
//! and backoff of `[supervisor]`), and restarts it as a process of its own
//! (`baton resume ID --supervised`, `runner.rs`). A task it
//! runs, or backs off from, is left alone; several servers (and workers)
//! on one store never run one task twice: the lease decides.
//!
//! Every 5 minutes it also writes the git copy of each team that is not
//! completed and changed since (`baton team sync`).

use baton_core::{TaskId, Timestamp};
use baton_engine::config::SupervisorSettings;
use baton_engine::{Engine, Triage};
use std::collections::{HashMap, HashSet};
use std::process::Child;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

const EVERY: Duration = Duration::from_secs(1);
/// How often the teams' git copies are written.
const TEAM_COPIES_EVERY: Duration = Duration::from_secs(300);

pub struct Supervisor {
    thread: Option<JoinHandle<()>>,
}

#[derive(Default)]
struct Book {
    /// The restarts running now.
    running: HashMap<TaskId, Child>,
    /// Tasks backing off, until when.
    resting: HashMap<TaskId, Timestamp>,
    /// Tasks it gave up on (reported once).
    given_up: HashSet<TaskId>,
    /// When the teams' copies were last written, and each team's journal
    /// position and message count then.
    teams_copied: Option<std::time::Instant>,
    team_marks: HashMap<String, (u64, u64)>,
}

impl Supervisor {
    pub fn start(
        eng: Arc<Engine>,
        settings: SupervisorSettings,
        stop: Arc<AtomicBool>,
    ) -> Supervisor {
        let thread = std::thread::Builder::new()
            .name("baton-supervisor".into())
            .spawn(move || {
                let mut book = Book::default();
                while !stop.load(Ordering::SeqCst) {
                    if let Err(e) = round(&eng, &settings, &mut book) {
                        eng.observer()
                            .info(&format!("warning: supervisor: {}", e.message));
                    }
                    if book
                        .teams_copied
                        .is_none_or(|t| t.elapsed() >= TEAM_COPIES_EVERY)
                    {
                        book.teams_copied = Some(std::time::Instant::now());
                        copy_teams(&eng, &mut book.team_marks);
                    }
                    let mut slept = Duration::ZERO;
                    while slept < EVERY && !stop.load(Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(50));
                        slept += Duration::from_millis(50);
                        reap(&eng, &mut book);
                    }
                }
                // Stopping: the restarts running are interrupted at their
                // phase, journaled, and release their leases.
                for child in book.running.values() {
                    crate::runner::terminate(child);
                }
                for (_, mut child) in book.running.drain() {
                    let _ = child.wait();
                }
            })
            .expect("a thread starts");
        Supervisor {
            thread: Some(thread),
        }
    }

    /// Waits for the loop and the restarts it runs (the caller set `stop`).
    pub fn finish(mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn reap(eng: &Engine, book: &mut Book) {
    book.running.retain(|id, child| match child.try_wait() {
        Ok(Some(status)) => {
            eng.observer().info(&format!(
                "supervisor: the restart of task {id} ended ({status})"
            ));
            false
        }
        _ => true,
    });
}

fn round(
    eng: &Engine,
    settings: &SupervisorSettings,
    book: &mut Book,
) -> Result<(), baton_engine::Error> {
    reap(eng, book);
    start_linked(eng);
    let needs = eng.needing_supervision(settings.run_queued)?;
    let now = Timestamp(jiff::Timestamp::now().as_millisecond());
    book.resting.retain(|_, until| *until > now);
    let needing: HashSet<&TaskId> = needs.iter().map(|(id, _)| id).collect();
    book.given_up.retain(|id| needing.contains(id));
    for (id, need) in &needs {
        if book.running.contains_key(id)
            || book.resting.contains_key(id)
            || book.given_up.contains(id)
        {
            continue;
        }
        match eng.triage(id, need, &settings.policy) {
            Ok(Triage::Restart) => match restart(eng, id) {
                Ok(child) => {
                    eng.observer().info(&format!(
                        "supervisor: restarting task {id} (pid {}): {need:?}",
                        child.id()
                    ));
                    book.running.insert(id.clone(), child);
                }
                Err(e) => {
                    eng.observer().info(&format!(
                        "warning: supervisor: cannot start a restart of task {id}: {e}"
                    ));
                    book.resting
                        .insert(id.clone(), now.plus_millis(settings.policy.backoff_ms));
                }
            },
            Ok(Triage::NotBefore(at)) => {
                book.resting.insert(id.clone(), at);
            }
            Ok(Triage::GaveUp(why)) => {
                eng.observer()
                    .info(&format!("supervisor: task {id} stays CRASHED: {why}"));
                book.given_up.insert(id.clone());
            }
            Err(e) => {
                eng.observer().info(&format!(
                    "supervisor: task {id} not restarted: {}",
                    e.message
                ));
                book.resting
                    .insert(id.clone(), now.plus_millis(settings.policy.backoff_ms));
            }
        }
    }
    Ok(())
}

/// Starts the linked tasks whose tasks are all complete: queued for the
/// workers, or run here in the background (kept by the server's runs).
fn start_linked(eng: &Engine) {
    let links = eng.links();
    let due = match links.due() {
        Ok(d) => d,
        Err(e) => {
            eng.observer()
                .info(&format!("warning: supervisor: linked tasks: {}", e.message));
            return;
        }
    };
    for l in due {
        let started = links.start(&l).and_then(|s| match s {
            Some((id, baton_engine::Outcome::Queued)) => Ok(Some((id, None))),
            Some((id, _)) => eng.detach(&id).map(|pid| Some((id, Some(pid)))),
            None => Ok(None),
        });
        match started {
            Ok(Some((id, pid))) => eng.observer().info(&format!(
                "supervisor: task {id} starts: the tasks it needs are complete ({})",
                pid.map_or("queued for the workers".into(), |p| format!("pid {p}"))
            )),
            Ok(None) => {}
            Err(e) => eng.observer().info(&format!(
                "warning: supervisor: linked task {} not started: {}",
                l.id, e.message
            )),
        }
    }
}

fn restart(eng: &Engine, id: &TaskId) -> std::io::Result<Child> {
    crate::runner::spawn_resume(eng, id, &["--supervised"])
}

/// Writes the git copy of every team not completed that changed since its
/// last copy.
fn copy_teams(eng: &Engine, marks: &mut HashMap<String, (u64, u64)>) {
    if eng.git().is_none() {
        return;
    }
    let Ok(teams) = eng.teams() else { return };
    let Ok(all) = teams.list() else { return };
    for t in all {
        if t.status == baton_core::team::TeamStatus::Completed {
            continue;
        }
        let id = t.id.to_string();
        let mark = (t.last_seq, teams.message_count(&id).unwrap_or(0));
        if marks.get(&id) == Some(&mark) {
            continue;
        }
        match teams.sync(&id) {
            Ok(_) => {
                marks.insert(id, mark);
            }
            Err(e) => eng.observer().info(&format!(
                "warning: cannot copy team {id} to git: {}",
                e.message
            )),
        }
    }
}
