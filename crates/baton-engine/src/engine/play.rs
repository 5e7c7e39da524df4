//! `baton play`: a play's tasks run one after another with its workflow.
//! Before each task the play's marker (`baton_store::PlayStore`) says
//! which task it is at; after each task that completes, the marker moves
//! on with that task among the finished. A task that fails, waits or is
//! interrupted stops the play there; `baton play --resume` continues it at
//! that same task (resumed, or run if it never started), never running a
//! finished one again.

use super::{Engine, Outcome, ResumeOptions, RunOptions};
use crate::error::{Error, Result};
use baton_core::TaskId;
use baton_core::lease::DisplayStatus;
use baton_core::play::Play;

impl Engine {
    /// Runs `play` from the task it is at, at most `max_tasks` tasks (none:
    /// to its end). Returns the last task's outcome (`Complete` when the
    /// play got to its end or ran its `max_tasks`).
    /// The plays recorded.
    pub fn plays(&self) -> Result<Vec<Play>> {
        Ok(self.store.plays()?)
    }

    pub fn play(&self, play: &mut Play, max_tasks: Option<usize>) -> Result<Outcome> {
        let total = play.tasks.len();
        let mut ran = 0;
        play.status = "running".into();
        play.stopped = None;
        self.put_play(play)?;
        while play.next < total && max_tasks.is_none_or(|m| ran < m) {
            let t = play.tasks[play.next].clone();
            let id = TaskId::parse(&t.id).map_err(|e| Error::bad_input(e.to_string()))?;
            self.observer.info(&format!(
                "play {}: task {} of {total}: {id}",
                play.name,
                play.next + 1
            ));
            let outcome = match self.store.load(&id)? {
                // Begun before the play stopped (or was killed): on from
                // where it is.
                Some(snap) => match self.status_of(&snap) {
                    DisplayStatus::Complete => Outcome::Complete,
                    _ => self.resume(&id, ResumeOptions::default())?,
                },
                None => {
                    let labels = t.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    self.run(RunOptions {
                        workflow: play.workflow.clone(),
                        description: t.description.clone(),
                        id: Some(t.id.clone()),
                        labels,
                        ..RunOptions::default()
                    })?
                    .1
                }
            };
            if outcome != Outcome::Complete {
                play.status = "stopped".into();
                play.stopped = Some(format!(
                    "task {} of {total} ({id}) {}",
                    play.next + 1,
                    ended(&outcome)
                ));
                self.put_play(play)?;
                return Ok(outcome);
            }
            play.done.push(t.id);
            play.next += 1;
            ran += 1;
            self.put_play(play)?;
        }
        if play.next >= total {
            play.status = "done".into();
            self.put_play(play)?;
        }
        Ok(Outcome::Complete)
    }

    /// The status of each task of `play` it passed over without running
    /// it (before its `--start-from-task`): id and status word (`none`:
    /// no such task).
    pub fn play_passed_over(&self, play: &Play) -> Result<Vec<(String, String)>> {
        let mut out = Vec::new();
        for t in play.tasks.iter().take(play.next) {
            if play.done.contains(&t.id) {
                continue;
            }
            let status = match TaskId::parse(&t.id).ok().map(|id| self.store.load(&id)) {
                Some(Ok(Some(snap))) => self.status_of(&snap).as_str().to_string(),
                Some(Err(e)) => return Err(e.into()),
                _ => "none".to_string(),
            };
            out.push((t.id.clone(), status));
        }
        Ok(out)
    }

    fn put_play(&self, play: &mut Play) -> Result<()> {
        play.updated_at = self.now();
        Ok(self.store.put_play(play)?)
    }
}

/// How a task of a play ended, in words (`failed: …`, `is waiting: …`).
fn ended(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Complete => "is complete".into(),
        Outcome::Failed(why) => format!("failed: {why}"),
        Outcome::Waiting(what) => format!("is waiting: {what}"),
        Outcome::Cancelled => "was cancelled".into(),
        Outcome::Interrupted(why) => format!("was interrupted: {why}"),
        Outcome::Queued => "was queued for the workers".into(),
    }
}
