//! How an attempt ends: its process's end judged (passed, failed, timed
//! out, cancelled, interrupted), a passing phase's summary and output
//! gathered and its work published, and the end journaled.

use super::Attempt;
use super::launch::{self, Launch, Launched};
use crate::engine::{Engine, Held, Outcome};
use crate::error::{Error, Result};
use baton_core::TaskId;
use baton_core::machine::{Failure, Input};
use baton_core::state::PhaseStatus;
use baton_sys::process::{self, Stop, Waited};
use std::path::Path;

/// The most of a summary file that is read (its end; the summary kept is
/// at most 16,000 bytes of it).
const SUMMARY_BYTES: usize = 64 << 10;

/// A passing attempt's summary, output and changed files.
type Passed = (String, String, Vec<String>);

impl Engine {
    /// Judges how the process of an attempt ended and journals it.
    /// `Some(outcome)` ends the drive (cancelled, interrupted).
    pub(super) fn end_attempt(
        &self,
        held: &mut Held,
        at: &Attempt,
        launched: Launched,
        l: &Launch,
    ) -> Result<Option<Outcome>> {
        let Attempt {
            id,
            phase,
            def,
            started,
            ..
        } = at;
        let stderr = l.stderr.clone();
        let stdout = l.stdout.clone();
        // The exit is journaled before anything reads what the process
        // left: a runner that dies while accounting for it (an OOM kill,
        // a SIGKILL before the PASS) leaves an exit for `resume` to judge,
        // never a phase to run again. (Done already when `resume` is the
        // one finishing it.)
        if let Ok(Waited::Exited(status)) = &launched.waited
            && held
                .state
                .phase(phase.as_str())
                .is_some_and(|p| p.exited.is_none())
        {
            self.decide_commit(
                held,
                Input::Exited {
                    phase: phase.clone(),
                    exit: baton_core::state::Exit {
                        code: status.code(),
                        signal: std::os::unix::process::ExitStatusExt::signal(status),
                    },
                },
            )?;
        }
        // What the process wrote is read from here on: without secrets.
        self.redact_files(&[&stdout, &stderr, &at.summary_file]);
        let judged = l.cli.and_then(|c| match &launched.waited {
            Ok(Waited::Exited(st)) => Some(launch::judge(
                c,
                st.code(),
                &launched.events,
                &process::read_tail(&stderr, 4000),
            )),
            _ => None,
        });
        let waited = launched
            .waited
            .map_err(|message| failure(message, None, false, &stderr));
        let elapsed = started.elapsed().as_millis() as i64;
        let result = match waited {
            // A built-in CLI may fail and still exit 0 (a refused write, an
            // API error): its stream says.
            Ok(Waited::Exited(status)) if matches!(judged, Some(Err(_))) => {
                let Some(Err((why, _))) = judged else {
                    unreachable!()
                };
                Err(failure(why, status.code(), false, &stderr))
            }
            Ok(Waited::Exited(status)) if status.success() => {
                self.passed(held, at, judged.and_then(|j| j.ok()), &stdout, &stderr)?
            }
            Ok(Waited::Exited(status)) => Err(failure(
                process::describe(&status),
                status.code(),
                false,
                &stderr,
            )),
            Ok(Waited::TimedOut) => Err(failure(
                format!(
                    "timed out after {}",
                    baton_core::time::human_millis(def.timeout_ms.unwrap_or(0) as i64)
                ),
                None,
                true,
                &stderr,
            )),
            Ok(Waited::Stopped(Stop::Cancelled)) => {
                self.decide_commit(
                    held,
                    Input::Cancel {
                        reason: "cancelled by `baton cancel`".into(),
                    },
                )?;
                self.observer.phase_finished(
                    id,
                    phase.as_str(),
                    PhaseStatus::Pending,
                    elapsed,
                    "cancelled",
                );
                return Ok(Some(Outcome::Cancelled));
            }
            Ok(Waited::Stopped(Stop::Interrupted)) => {
                let why = "baton was stopped by a signal while the phase ran".to_string();
                self.decide_commit(held, Input::Interrupt { reason: why })?;
                self.observer.phase_finished(
                    id,
                    phase.as_str(),
                    PhaseStatus::Pending,
                    elapsed,
                    "interrupted",
                );
                return Ok(Some(Outcome::Interrupted(format!(
                    "phase {phase} was interrupted; `baton resume {id}` runs it again from its start"
                ))));
            }
            Ok(Waited::Stopped(Stop::LeaseLost)) => {
                return Err(Error::busy(format!(
                    "lost the lease of task {id} to another process"
                )));
            }
            Ok(Waited::WaitFailed(e)) => Err(failure(
                format!("lost track of the process: {e}"),
                None,
                false,
                &stderr,
            )),
            Err(f) => Err(f),
        };
        // What the agent recorded through baton's MCP tools during the
        // attempt (`checkpoint`), journaled in order.
        for note in crate::agent_reports::checkpoints(&at.summary_file) {
            self.decide_commit(
                held,
                Input::Note {
                    phase: Some(phase.clone()),
                    text: format!("checkpoint: {note}"),
                },
            )?;
        }
        self.record_end(held, at, result, elapsed)?;
        Ok(None)
    }

    /// A process that exited 0: the phase's summary and output, the files
    /// it changed and, for a queued task, its work published (`Err` when
    /// that fails).
    fn passed(
        &self,
        held: &mut Held,
        at: &Attempt,
        judged: Option<(String, String)>,
        stdout: &Path,
        stderr: &Path,
    ) -> Result<std::result::Result<Passed, Failure>> {
        let Attempt {
            id,
            phase,
            idx,
            label,
            summary_file,
            ..
        } = at;
        let output = match &judged {
            Some((_, transcript)) => process::tail(transcript, 16_000).to_string(),
            None => process::read_tail(stdout, 16_000),
        };
        // The agent said it cannot go on (`report_blocker`): the attempt
        // fails with its reason, whatever its exit.
        if let Some(reason) = crate::agent_reports::blocker(summary_file) {
            return Ok(Err(failure(
                format!("blocked: {reason}"),
                None,
                false,
                stderr,
            )));
        }
        // The summary file is the phase's to write: read in bounded
        // memory, kept when it holds bytes that are not UTF-8 (replaced,
        // and the journal says so), never dropped for them.
        let written = process::read_text_tail(summary_file, SUMMARY_BYTES)
            .filter(|t| !t.text.trim().is_empty());
        // Something that is not a file (a FIFO, a device, a folder) in its
        // place is never read: said, and the output's last line used.
        if std::fs::symlink_metadata(summary_file).is_ok()
            && !std::fs::metadata(summary_file).is_ok_and(|m| m.is_file())
        {
            self.decide_commit(
                held,
                Input::Note {
                    phase: Some(phase.clone()),
                    text: "the summary file is not a regular file (a FIFO, a device or a folder): it was not read".into(),
                },
            )?;
        }
        if let Some(t) = written.as_ref().filter(|t| t.lossy || t.cut) {
            let mut said = Vec::new();
            if t.cut {
                said.push(format!(
                    "was longer than {SUMMARY_BYTES} bytes: its end is kept"
                ));
            }
            if t.lossy {
                said.push("held bytes that are not UTF-8: each is shown as U+FFFD".to_string());
            }
            self.decide_commit(
                held,
                Input::Note {
                    phase: Some(phase.clone()),
                    text: format!("the summary file {}", said.join(", and ")),
                },
            )?;
        }
        let summary = written
            .map(|t| t.text.trim().to_string())
            .or_else(|| judged.map(|(last, _)| last).filter(|s| !s.is_empty()))
            .unwrap_or_else(|| {
                output
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("")
                    .trim()
                    .to_string()
            });
        let summary = process::tail(&summary, 16_000).to_string();
        let files = files_changed(held, *idx, id, label);
        // A queued task's work is on its branch (and remote) before
        // the journal says the phase passed.
        if held.ws.branch.is_some() {
            self.still_holding(held)?;
        }
        let published = match held.ws.publish(id, phase.as_str()) {
            Err(crate::workdir::Unpublished::Moved(why)) => {
                // A runner that lost the task pushed after this one
                // fetched. Still ours? Then replace what it pushed.
                self.still_holding(held)?;
                tracing::debug!(task = %id, %why, "remote branch moved; publishing over it");
                held.ws
                    .adopt_remote_tip()
                    .map_err(crate::workdir::Unpublished::Failed)
                    .and_then(|()| held.ws.publish(id, phase.as_str()))
            }
            other => other,
        };
        Ok(match published {
            Ok(()) => Ok((summary, output, files)),
            Err(e) => Err(failure(e.message(), None, false, stderr)),
        })
    }

    /// The comments an attempt that passed carried reached the agent. If
    /// this is not recorded (a crash just now), they go with the next
    /// attempt again: more than once, never lost.
    fn comments_delivered(&self, at: &Attempt) {
        if at.comments.is_empty() {
            return;
        }
        let ids: Vec<String> = at.comments.iter().map(|c| c.id.clone()).collect();
        let d = baton_core::comment::Delivered {
            to: format!("{}/{}", at.id, at.label),
            at: self.now(),
        };
        let target = baton_core::comment::task_target(at.id.as_str());
        if let Err(e) = self.store.deliver_comments(&target, &ids, &d) {
            tracing::warn!(task = %at.id, error = %e, "comments not marked delivered");
        }
    }

    /// Journals the end of an attempt: PASS with its summary and output, or
    /// FAILED with why.
    fn record_end(
        &self,
        held: &mut Held,
        at: &Attempt,
        result: std::result::Result<Passed, Failure>,
        elapsed: i64,
    ) -> Result<()> {
        let Attempt {
            id,
            phase,
            idx,
            label,
            dir,
            ..
        } = at;
        match result {
            Ok((summary, output, files)) => {
                self.decide_commit(
                    held,
                    Input::Pass {
                        phase: phase.clone(),
                        summary: summary.clone(),
                        output,
                        files_changed: files,
                    },
                )?;
                self.crash_point("after-pass", phase.as_str());
                self.comments_delivered(at);
                held.rendered.phase_output(dir, &held.state, *idx)?;
                self.observer.phase_finished(
                    id,
                    phase.as_str(),
                    PhaseStatus::Pass,
                    elapsed,
                    &summary,
                );
            }
            Err(mut f) => {
                f.files_changed = files_changed(held, *idx, id, label);
                let detail = match f.stderr_tail.lines().rev().find(|l| !l.trim().is_empty()) {
                    Some(line) => format!("{}: {}", f.message, line.trim()),
                    None => f.message.clone(),
                };
                self.decide_commit(
                    held,
                    Input::Fail {
                        phase: phase.clone(),
                        failure: f,
                    },
                )?;
                self.observer.phase_finished(
                    id,
                    phase.as_str(),
                    PhaseStatus::Failed,
                    elapsed,
                    &detail,
                );
            }
        }
        Ok(())
    }
}

/// Why an attempt failed, with the tail of its stderr.
fn failure(message: String, exit_code: Option<i32>, timed_out: bool, err: &Path) -> Failure {
    Failure {
        message,
        exit_code,
        timed_out,
        stderr_tail: process::read_tail(err, 4000),
        files_changed: Vec::new(),
    }
}

/// The files an attempt changed: its work tree snapshotted at its end and
/// compared with its start checkpoint. A snapshot taken here is the next
/// phase's start when nothing runs in between ([`Held::just_snapshotted`]).
fn files_changed(held: &mut Held, idx: usize, id: &TaskId, label: &str) -> Vec<String> {
    let (Some(git), Some(from)) = (
        &held.ws.git,
        held.state.phases[idx]
            .checkpoint
            .as_ref()
            .and_then(|c| c.snapshot.clone()),
    ) else {
        return Vec::new();
    };
    let ended = git.end_snapshot(
        &from,
        &format!("refs/baton/{id}/{label}/end"),
        "baton: phase end",
    );
    held.just_snapshotted = ended.is_ok();
    ended.unwrap_or_default()
}
