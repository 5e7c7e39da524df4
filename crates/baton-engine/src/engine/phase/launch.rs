//! Running a phase's process: spawned held at the gate, journaled, waited
//! for; for a built-in agent CLI also its stream read while it runs (the
//! native session id journaled the moment it shows, what the agent does
//! journaled in batches), its native session continued after a crash, or
//! a new one seeded with the brief when that cannot be done; for a
//! generic agent (`command = [...]`) the end of its output journaled as
//! what it said.

use crate::engine::output::LastLine;
use crate::engine::{Engine, Held};
use crate::error::Result;
use baton_agents::{AgentEvent, Cli, Invocation, generic, tail::Tail};
use baton_core::PhaseId;
use baton_core::agent_stream::shorten;
use baton_core::event::Event;
use baton_core::machine::Input;
use baton_core::state::{AgentSession, PhaseState, SessionStart};
use baton_sys::process::{self, Spec, Stop, Waited};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// What the agent said, at most this long in the journal (the phase's
/// summary keeps the final message whole).
const JOURNAL_TEXT_CHARS: usize = 2_000;
/// Activity is journaled at most this often (a session id, a tool call or
/// result at once).
const FLUSH_EVERY: Duration = Duration::from_millis(250);
/// The observer hears of a running phase at least this often
/// ([`crate::Observer::phase_progress`]), and at once when its last line
/// changed.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// One process to run for a phase.
pub(super) struct Launch {
    pub program: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub stdout: PathBuf,
    pub stderr: PathBuf,
    /// A built-in CLI: its stream is read as it is written.
    pub cli: Option<Cli>,
    /// Its session, journaled before it starts (baton chose the id, or it
    /// is the one continued).
    pub session: Option<AgentSession>,
    /// The agent's name and how the run begins, for a session first seen
    /// in the stream.
    pub agent: String,
    pub start: SessionStart,
    /// The native session this run continues under a new id (droid's
    /// `--fork`): the new one, read from the stream, is journaled as a
    /// resume, with a note saying which session it continues.
    pub forks: Option<String>,
}

/// The CLI's `--version`, asked in the background while the phase runs
/// (a CLI's start-up can take a second; the phase should not wait for it).
pub(super) struct VersionProbe {
    handle: Option<std::thread::JoinHandle<Option<String>>>,
    value: Option<String>,
}

impl VersionProbe {
    pub fn start(program: String, env: Vec<(String, String)>, cwd: PathBuf) -> VersionProbe {
        VersionProbe {
            handle: Some(std::thread::spawn(move || {
                baton_agents::version::version(&program, &env, &cwd)
            })),
            value: None,
        }
    }
    pub fn none() -> VersionProbe {
        VersionProbe {
            handle: None,
            value: None,
        }
    }
    fn get(&mut self) -> Option<String> {
        if let Some(h) = self.handle.take() {
            self.value = h.join().ok().flatten();
        }
        self.value.clone()
    }
}

/// How a launch ended.
pub(super) struct Launched {
    /// The process's end, or why it could not start.
    pub waited: std::result::Result<Waited, String>,
    /// Its stream, parsed (built-in CLIs).
    pub events: Vec<AgentEvent>,
}

impl Engine {
    /// Spawns `l` held at the gate, journals its process, lets it go and
    /// waits for it (at most `timeout`), journaling a built-in CLI's
    /// session and activity on the way.
    pub(super) fn launch(
        &self,
        held: &mut Held,
        phase: &PhaseId,
        l: &Launch,
        timeout: Option<Duration>,
        version: &mut VersionProbe,
    ) -> Result<Launched> {
        if let Some(session) = l.session.clone() {
            // Before the CLI starts: a crash from here on still knows which
            // native session to continue.
            self.decide_commit(
                held,
                Input::AgentSession {
                    phase: phase.clone(),
                    session,
                },
            )?;
        }
        // A CLI whose stream has no token counts writes them to a file.
        let usage = l.cli.and_then(|c| {
            let mut name = l.stdout.file_name()?.to_os_string();
            name.push(".usage.json");
            let file = l.stdout.with_file_name(name);
            c.usage_file_args(&file).map(|args| (file, args))
        });
        let mut args = l.args.clone();
        if let Some((file, more)) = &usage {
            let _ = std::fs::remove_file(file);
            args.extend(more.iter().cloned());
        }
        let spec = Spec {
            program: l.program.clone(),
            args,
            env: l.env.clone(),
            cwd: held.ws.cwd.clone(),
            stdout: l.stdout.clone(),
            stderr: l.stderr.clone(),
        };
        tracing::debug!(
            task = %held.state.task_id,
            %phase,
            program = %spec.program,
            argc = spec.args.len() + 1,
            env_vars = spec.env.len(),
            cwd = %spec.cwd.display(),
            timeout = ?timeout,
            stdout = %spec.stdout.display(),
            "starting phase process"
        );
        let mut running = match process::spawn(&spec) {
            Ok(r) => r,
            Err(e) => {
                return Ok(Launched {
                    waited: Err(format!("cannot start `{}`: {e}", l.program)),
                    events: Vec::new(),
                });
            }
        };
        self.decide_commit(
            held,
            Input::Process {
                phase: phase.clone(),
                process: running.process_ref(),
            },
        )?;
        self.crash_point("after-spawn", phase.as_str());
        let pgid = running.process_ref().pid;
        if let Some(g) = &self.phase_groups {
            g.add(pgid);
        }
        running.release();
        let lost = held.hb.lost.clone();
        let cancel = held.hb.cancel.clone();
        let task = held.state.task_id.clone();
        let mut progress = Progress {
            // A built-in CLI's stdout is its JSON stream: what it did is
            // told from that instead.
            output: l.cli.is_none().then(|| LastLine::new(&l.stdout, &l.stderr)),
            activity: String::new(),
            told: None,
            started: Instant::now(),
        };
        let mut stream = Stream {
            tail: l.cli.map(|c| Tail::new(c, &l.stdout, l.env.clone())),
            session_known: l.session.is_some(),
            pending: Vec::new(),
            all: Vec::new(),
            flushed: Instant::now(),
            failed: None,
        };
        let mut check = || {
            if lost.load(Ordering::SeqCst) {
                return Some(Stop::LeaseLost);
            }
            if cancel.load(Ordering::SeqCst) {
                return Some(Stop::Cancelled);
            }
            if self.interrupt.load(Ordering::SeqCst) {
                return Some(Stop::Interrupted);
            }
            if let Some(new) = stream.tail.as_mut().map(|t| t.poll()) {
                if let Some(line) = new.iter().rev().find_map(activity_line) {
                    progress.activity = line;
                }
                stream.take(new);
                if let Err(e) = self.flush(held, phase, l, &mut stream, false) {
                    stream.failed = Some(e);
                    return Some(Stop::LeaseLost);
                }
            }
            progress.tell(&*self.observer, &task, phase.as_str());
            // The session log catches up with what was committed.
            self.tick_log(held);
            None
        };
        let waited = running.wait(timeout, &mut check);
        if let Some(g) = &self.phase_groups {
            g.remove(pgid);
        }
        if let Some(e) = stream.failed.take() {
            return Err(e);
        }
        if matches!(waited, Waited::Stopped(Stop::LeaseLost)) {
            return Ok(Launched {
                waited: Ok(waited),
                events: stream.all,
            });
        }
        if let Some(new) = stream.tail.as_mut().map(|t| t.finish()) {
            stream.take(new);
        }
        if let (Some(c), Some((file, _))) = (l.cli, &usage) {
            let text = baton_sys::process::read_text_tail(file, 1 << 20)
                .map(|t| t.text)
                .unwrap_or_default();
            stream.take(c.usage_from_file(&text).into_iter().collect());
        }
        self.flush(held, phase, l, &mut stream, true)?;
        // A generic agent's output is what it said: the end of its stdout.
        let generic = l.cli.is_none() && l.session.is_some();
        if generic {
            let said = process::read_tail(&l.stdout, JOURNAL_TEXT_CHARS);
            if !said.trim().is_empty() {
                self.decide_commit(
                    held,
                    Input::AgentActivity {
                        phase: phase.clone(),
                        events: vec![AgentEvent::AssistantText {
                            text: said.trim().to_string(),
                        }],
                    },
                )?;
            }
        }
        if (l.cli.is_some() || generic)
            && let Waited::Exited(status) = &waited
        {
            self.decide_commit(
                held,
                Input::AgentEnded {
                    phase: phase.clone(),
                    exit_code: status.code(),
                    version: version.get(),
                },
            )?;
            if let Some(run) = held
                .state
                .phase(phase.as_str())
                .and_then(|p| p.agent_runs.last())
            {
                let cli = l.cli.map_or("command", |c| c.name());
                self.observer
                    .agent_ended(&held.state.task_id, cli, &run.usage);
            }
        }
        Ok(Launched {
            waited: Ok(waited),
            events: stream.all,
        })
    }

    /// Journals what the stream showed since the last flush: a new session
    /// at once, the rest at most every [`FLUSH_EVERY`] (all of it when `last`).
    fn flush(
        &self,
        held: &mut Held,
        phase: &PhaseId,
        l: &Launch,
        stream: &mut Stream,
        last: bool,
    ) -> Result<()> {
        if !stream.session_known
            && let Some(native_id) = stream.pending.iter().find_map(|e| match e {
                AgentEvent::SessionStarted { native_id } => Some(native_id.clone()),
                _ => None,
            })
        {
            stream.session_known = true;
            let cli = l.cli.map(|c| c.name()).unwrap_or_default();
            if let Some(old) = l.forks.as_ref().filter(|old| **old != native_id) {
                self.decide_commit(
                    held,
                    Input::Note {
                        phase: Some(phase.clone()),
                        text: format!(
                            "the {cli} session {old} was forked into {native_id} to continue it ({cli} cannot load a session in place offline); {native_id} is the session from now on"
                        ),
                    },
                )?;
            }
            self.decide_commit(
                held,
                Input::AgentSession {
                    phase: phase.clone(),
                    session: AgentSession {
                        agent: l.agent.clone(),
                        cli: cli.into(),
                        native_id,
                        cwd: held.ws.cwd.display().to_string(),
                        version: None,
                        start: l.start,
                    },
                },
            )?;
        }
        // A tool's call and result are the agent's steps: journaled at
        // once, so a crash never loses one; the rest in batches.
        let step = stream.pending.iter().any(|e| {
            matches!(
                e,
                AgentEvent::ToolCall { .. } | AgentEvent::ToolResult { .. }
            )
        });
        if stream.pending.is_empty() || (!last && !step && stream.flushed.elapsed() < FLUSH_EVERY) {
            return Ok(());
        }
        let events: Vec<AgentEvent> = std::mem::take(&mut stream.pending)
            .into_iter()
            .filter(|e| !matches!(e, AgentEvent::SessionStarted { .. }))
            .map(for_journal)
            .collect();
        stream.flushed = Instant::now();
        if events.is_empty() {
            return Ok(());
        }
        self.decide_commit(
            held,
            Input::AgentActivity {
                phase: phase.clone(),
                events,
            },
        )
    }

    /// What the session the task was imported from did.
    pub(super) fn imported_events(&self, held: &Held) -> Vec<AgentEvent> {
        let Ok(records) = self.store.events(&held.state.task_id, 0, 64) else {
            return Vec::new();
        };
        records
            .into_iter()
            .find_map(|r| match r.event {
                Event::Imported { events, .. } => Some(events),
                _ => None,
            })
            .unwrap_or_default()
    }

    /// What the interrupted run(s) of `ps` did, from the journal: the
    /// activity of every attempt in its chain of continued sessions.
    pub(super) fn interrupted_progress(&self, held: &Held, ps: &PhaseState) -> Vec<AgentEvent> {
        let mut attempts = Vec::new();
        for run in ps.agent_runs.iter().rev() {
            if run.iteration != ps.iteration {
                break;
            }
            attempts.push(run.attempt);
            if run.session.start != SessionStart::Resumed {
                break;
            }
        }
        let Ok(records) = self.store.events(&held.state.task_id, 0, usize::MAX) else {
            return Vec::new();
        };
        // The current iteration's records: after the last loop or rewind
        // that reset this phase.
        let from = records
            .iter()
            .rposition(|r| match &r.event {
                Event::LoopedBack { reset, .. } | Event::Rewound { reset, .. } => {
                    reset.contains(&ps.id)
                }
                _ => false,
            })
            .map_or(0, |i| i + 1);
        records[from..]
            .iter()
            .filter_map(|r| match &r.event {
                Event::AgentActivity {
                    phase,
                    attempt,
                    events,
                } if *phase == ps.id && attempts.contains(attempt) => Some(events.clone()),
                _ => None,
            })
            .flatten()
            .collect()
    }
}

/// What the observer is told of a running phase.
struct Progress {
    /// A command's (or a `command = [...]` agent's) output.
    output: Option<LastLine>,
    /// What a built-in CLI's agent did last.
    activity: String,
    /// When it was last told, and the line.
    told: Option<(Instant, String)>,
    started: Instant,
}

impl Progress {
    fn tell(&mut self, observer: &dyn crate::Observer, task: &baton_core::TaskId, phase: &str) {
        if let Some(o) = &mut self.output {
            o.poll();
        }
        let line = match &self.output {
            Some(o) => o.line(),
            None => self.activity.as_str(),
        };
        let due = match &self.told {
            None => true,
            Some((at, told)) => told != line || at.elapsed() >= PROGRESS_EVERY,
        };
        if due {
            let elapsed = self.started.elapsed().as_millis() as i64;
            observer.phase_progress(task, phase, elapsed, line);
            self.told = Some((Instant::now(), line.to_string()));
        }
    }
}

/// What an agent did, in one line, for a running phase's progress.
fn activity_line(e: &AgentEvent) -> Option<String> {
    let first = |t: &str| {
        t.lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(str::to_string)
    };
    match e {
        AgentEvent::ToolCall { name, summary, .. } => Some(format!("→ {name} {summary}")),
        AgentEvent::AssistantText { text } => first(text),
        AgentEvent::Subagent { event, .. } => activity_line(event),
        _ => None,
    }
}

/// The stream of one launch, between flushes.
struct Stream {
    tail: Option<Tail>,
    session_known: bool,
    pending: Vec<AgentEvent>,
    all: Vec<AgentEvent>,
    flushed: Instant,
    failed: Option<crate::Error>,
}

impl Stream {
    fn take(&mut self, new: Vec<AgentEvent>) {
        self.all.extend(new.iter().cloned());
        self.pending.extend(new);
    }
}

/// An event as journaled: long texts shortened.
fn for_journal(e: AgentEvent) -> AgentEvent {
    match e {
        AgentEvent::AssistantText { text } => AgentEvent::AssistantText {
            text: shorten_keep_lines(&text),
        },
        AgentEvent::Final { ok, text } => AgentEvent::Final {
            ok,
            text: shorten_keep_lines(&text),
        },
        AgentEvent::Error { message } => AgentEvent::Error {
            message: shorten(&message, JOURNAL_TEXT_CHARS),
        },
        other => other,
    }
}

fn shorten_keep_lines(text: &str) -> String {
    match text.char_indices().nth(JOURNAL_TEXT_CHARS) {
        None => text.to_string(),
        Some((cut, _)) => format!("{}…", &text[..cut]),
    }
}

/// A built-in CLI's finished run judged from its stream.
pub(super) use baton_agents::failure::judge;

/// The prompt for a run that continues the CLI's own session.
pub(super) fn resumed_prompt(prompt: &str) -> String {
    format!(
        "baton: this session was interrupted (a crash or a restart) before it finished, and baton has resumed it. Continue the task from where you stopped: check what is already done in the working folder and do not redo it. The task was:\n\n{prompt}"
    )
}

/// `prompt` with the handoff brief: in place of `{{brief}}` when the
/// template asks for it (`rendered_with`), else before it.
pub(super) fn with_brief(prompt: &str, brief: &str, rendered_with: Option<String>) -> String {
    match rendered_with {
        Some(p) => p,
        None => format!("{brief}\n---\n\n{prompt}"),
    }
}

/// How a prompt phase's built-in CLI run begins: its own interrupted
/// session continued when the CLI can, else a new one.
pub(super) fn invocation_for<'a>(
    ps: &'a PhaseState,
    agent: &str,
    cli: Cli,
    cwd: &std::path::Path,
) -> Option<&'a AgentSession> {
    ps.agent_session
        .as_ref()
        .filter(|_| ps.interrupted)
        .filter(|s| s.agent == agent && s.cli == cli.name())
        .filter(|s| cli.resumes_from(&s.cwd, cwd))
}

/// The argv (prompt filled in) of `agent` for `how`.
pub(super) fn argv_for(
    agent: &crate::config::AgentConfig,
    how: Invocation<'_>,
    prompt: &str,
    prompt_file: &std::path::Path,
) -> Vec<String> {
    generic::fill(&agent.argv_for(how), prompt, prompt_file)
}
