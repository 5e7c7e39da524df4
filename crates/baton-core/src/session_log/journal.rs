//! A task's session log, built from its journal: one section per phase
//! attempt (or wait), the agent's messages as prose, its tool calls with
//! their results (a call the crash left without one says so), and
//! callouts for what a reader looks for: summaries, errors, decisions
//! (loops, rewinds, handoffs), a person's answers and what waits on them.

use super::{Block, Callout, Front, LogStatus, Section, SessionLog, ToolLine, kind, one_line};
use crate::agent_stream::{AgentEvent, SUBAGENT_TOOLS, shorten};
use crate::comment::Comment;
use crate::event::{Event, EventRecord};
use crate::inbox::InboxItem;

use crate::state::{PhaseStatus, TaskState, TaskStatus};
use crate::workflow::{PhaseKind, WaitSpec, Workflow};
use remarks::Remark;

mod remarks;

/// How a subagent's session shows in its parent's log: its text in the
/// callout, or a link to (or an embed of) its own log, `<task>--<n>.md`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SubagentMode {
    Inline,
    #[default]
    Link,
    Embed,
}

/// The log of `state`, whose whole journal is `records` (`wf` is its
/// pinned workflow: what a wait phase asks), with the inbox items its
/// agents raised (`items`: those of other sessions are left out), its
/// CLIs' subagents shown as `mode` says.
pub fn of_task(
    state: &TaskState,
    records: &[EventRecord],
    wf: Option<&Workflow>,
    items: &[InboxItem],
    comments: &[Comment],
    mode: SubagentMode,
) -> SessionLog {
    let mut b = Builder::new(state);
    if let Some(wf) = wf {
        b.defs = wf
            .phases
            .iter()
            .map(|p| (p.id.to_string(), definition(p)))
            .collect();
    }
    let mut ended = None;
    // The inbox items in their place in time: each where its phase stood
    // when it was raised, before whatever came after it (the task's end).
    // A person's comments on the work likewise, as `[!user]` callouts:
    // those on the task, and those an agent instance's turn brought.
    let target = crate::comment::task_target(state.task_id.as_str());
    let brought = |c: &Comment| {
        c.delivered
            .as_ref()
            .is_some_and(|d| d.to == state.task_id.as_str())
    };
    let mut mine: Vec<Remark> = items
        .iter()
        .filter(|i| i.session.as_deref() == Some(state.task_id.as_str()))
        .map(Remark::Item)
        .chain(
            comments
                .iter()
                .filter(|c| c.target == target || brought(c))
                .map(Remark::Comment),
        )
        .collect();
    mine.sort_by_key(Remark::at);
    let mut mine = mine.into_iter().peekable();
    for r in records {
        while let Some(i) = mine.next_if(|i| i.at() < r.ts) {
            b.remark(i);
        }
        b.event(r, wf, &mut ended);
    }
    for i in mine {
        b.remark(i);
    }
    let subagents = b.place_subagents(mode);
    let usage = state.usage();
    let channel = state.labels.get("channel").cloned();
    if let Some(c) = &channel {
        for s in &mut b.log.sections {
            s.channel = Some(c.clone());
        }
    }
    b.log.front = Front {
        session_id: state.task_id.to_string(),
        workflow: Some(state.workflow.clone()),
        started: Some(state.created_at.rfc3339()),
        ended: ended.filter(|_| !matches!(state.status, TaskStatus::Running | TaskStatus::Waiting)),
        // As its runner (or a reader that found it so) sees it: a reader
        // says CRASHED or QUEUED over it (`status_of`).
        status: LogStatus::from(crate::lease::DisplayStatus::of_task(
            state.status,
            &crate::lease::Liveness::Live,
            false,
        )),
        channel,
        participants: b.participants,
        model: None,
        tokens_used: usage.input_tokens + usage.output_tokens,
        subagents,
        resume_point: resume_point(state),
        labels: state
            .labels
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        flags: state
            .flags
            .iter()
            .map(|(k, v)| {
                let v = match v {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                (k.clone(), v)
            })
            .collect(),
        extra: Vec::new(),
    };
    finish(b.log)
}

/// `log` of a task whose runner died while it ran (CRASHED, as `baton ls`
/// shows it: only a reader can find that out, the runner cannot say it):
/// its status says so, and the phase that was running says what became
/// of it, its tool calls without a result cut off, and how it goes on.
pub fn crashed(log: &mut SessionLog, state: &TaskState, why: &str) {
    log.front.status = LogStatus::Crashed;
    let id = &state.task_id;
    let (title, body, at) = match state.in_progress() {
        Some(p) => (
            format!("the runner died while attempt {} ran", p.attempt.max(1)),
            format!(
                "{why}\n\nThe task is CRASHED: `baton resume {id}` runs {} again from its start.",
                p.id
            ),
            Some(p.id.as_str()),
        ),
        None => (
            "the runner died".to_string(),
            match &log.front.resume_point {
                Some(r) => {
                    format!("{why}\n\nThe task is CRASHED: `baton resume {id}` goes on at {r}.")
                }
                None => format!("{why}\n\nThe task is CRASHED: `baton resume {id}` goes on."),
            },
            None,
        ),
    };
    let section = match at {
        Some(phase) => match log.sections.iter().rposition(|s| s.name == phase) {
            Some(i) => Some(i),
            None => {
                log.sections.push(Section {
                    name: phase.to_string(),
                    ..Section::default()
                });
                Some(log.sections.len() - 1)
            }
        },
        None => log.sections.len().checked_sub(1),
    };
    let blocks = match section {
        Some(i) => &mut log.sections[i].blocks,
        None => &mut log.intro,
    };
    if at.is_some() {
        for b in blocks.iter_mut() {
            if let Block::ToolCalls(calls) = b {
                for c in calls.iter_mut().filter(|c| c.result.is_none()) {
                    c.result = Some("no result: the run was cut off while it ran".into());
                    c.ok = false;
                }
            }
        }
    }
    blocks.push(Block::Callout(Callout::new(kind::ERROR, title, &body)));
}

/// What the log says of phase `p`'s definition where a reader (and
/// `codify`) could not tell it from what happened: its `when`, the
/// command it runs, what it waits for (a person's question shows when it
/// is asked). Nothing for an agent phase without a condition.
fn definition(p: &crate::workflow::Phase) -> Vec<Block> {
    let mut out = Vec::new();
    if let Some(c) = &p.when {
        out.push(Block::Callout(Callout::new(kind::WHEN, c.to_string(), "")));
    }
    match &p.kind {
        PhaseKind::Run { command } => {
            out.push(Block::Callout(Callout::new(kind::COMMAND, "", command)))
        }
        PhaseKind::Wait(w @ (WaitSpec::Event { .. } | WaitSpec::Duration { .. })) => {
            out.push(Block::Callout(Callout::new(kind::WAIT, wait_toml(w), "")))
        }
        _ => {}
    }
    out
}

/// A wait as the inline table of a workflow's `wait = { … }`.
fn wait_toml(w: &WaitSpec) -> String {
    let q = |s: &str| serde_json::to_string(s).expect("a string");
    let table = |m: &std::collections::BTreeMap<String, String>| {
        let pairs: Vec<String> = m
            .iter()
            .map(|(k, v)| format!("{} = {}", q(k), q(v)))
            .collect();
        format!("{{ {} }}", pairs.join(", "))
    };
    match w {
        WaitSpec::Event {
            event,
            matches,
            payload,
        } => {
            let mut s = format!("{{ event = {}", q(event));
            if !matches.is_empty() {
                s.push_str(&format!(", match = {}", table(matches)));
            }
            if !payload.is_empty() {
                s.push_str(&format!(", payload = {}", table(payload)));
            }
            s + " }"
        }
        WaitSpec::Duration { millis } => format!("{{ duration = \"{millis}ms\" }}"),
        WaitSpec::Human { question, options } => {
            let opts: Vec<String> = options.iter().map(|o| q(o)).collect();
            format!(
                "{{ human = {}, options = [{}] }}",
                q(question),
                opts.join(", ")
            )
        }
    }
}

/// A session baton started as a child of a task's session: a review of a
/// coding agent's work (a review instance's turn), a teammate's turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildSession {
    /// Its own log's id (its task).
    pub session: String,
    /// Who it is: `review`, `ana (engineer)`.
    pub agent: String,
    /// What it is, in a few words: `review 1 of c1`.
    pub title: String,
    /// The tokens its agent used (its own task's).
    pub tokens: u64,
    /// What its log says (its sections' blocks), for `inline` mode; empty
    /// in the others.
    pub blocks: Vec<Block>,
}

/// `log` with baton's child sessions: each in the frontmatter's
/// `subagents`, and a `[!subagent]` callout at the end of the log linking
/// (or embedding) its own log; inline, its text is in the callout too,
/// and the link (it has a log of its own, rendered from its own journal).
pub fn with_children(
    mut log: SessionLog,
    children: &[ChildSession],
    mode: SubagentMode,
) -> SessionLog {
    for c in children {
        if log.front.subagents.iter().any(|s| s.session == c.session) {
            continue;
        }
        log.front.subagents.push(super::Subagent {
            session: c.session.clone(),
            agent: c.agent.clone(),
            model: None,
            tokens: c.tokens,
        });
        let callout = Block::Callout(Callout::new(
            kind::SUBAGENT,
            format!("@{} ({})", c.agent, c.title),
            &child_body("", &c.blocks, mode, Some(&c.session)),
        ));
        match log.sections.last_mut() {
            Some(s) => s.blocks.push(callout),
            None => log.intro.push(callout),
        }
    }
    log
}

/// A child session's `[!subagent]` callout body: what it was for, then as
/// `mode` says its text (inline) or a link or embed of its own log
/// (`link`: its id, when it has one; inline shows the link too).
pub fn child_body(
    description: &str,
    blocks: &[Block],
    mode: SubagentMode,
    link: Option<&str>,
) -> String {
    let mut body: Vec<String> = Vec::new();
    if !description.is_empty() {
        body.push(description.to_string());
    }
    if mode == SubagentMode::Inline {
        for b in blocks {
            if !body.is_empty() {
                body.push(String::new());
            }
            match b {
                Block::Prose(p) => body.extend(p.lines().map(str::to_string)),
                Block::ToolCalls(calls) => {
                    for c in calls {
                        let call = c.call.split('\u{0}').next().unwrap_or("");
                        body.push(match &c.result {
                            Some(r) => format!("- `{call}` → {r}"),
                            None => format!("- `{call}`"),
                        });
                    }
                }
                Block::Callout(c) => body.push(format!("{}: {}", c.kind, c.title)),
            }
        }
    }
    if let Some(id) = link {
        if mode == SubagentMode::Inline && !blocks.is_empty() {
            body.push(String::new());
        }
        body.push(match mode {
            SubagentMode::Embed => format!("![[{id}]]"),
            _ => format!("[[{id}]]"),
        });
    }
    body.join("\n")
}

/// The own logs of the subagents `state`'s CLIs ran (what `[[<task>--<n>]]`
/// links to), each with its messages and tool calls.
pub fn subagent_logs(state: &TaskState, records: &[EventRecord]) -> Vec<SessionLog> {
    let mut b = Builder::new(state);
    let mut ended = None;
    for r in records {
        b.event(r, None, &mut ended);
    }
    b.subs
        .into_iter()
        .enumerate()
        .map(|(n, sub)| {
            let log = SessionLog {
                front: Front {
                    session_id: child_id(state, n),
                    started: Some(sub.started.clone()),
                    status: if sub.done {
                        LogStatus::Completed
                    } else {
                        LogStatus::Active
                    },
                    participants: vec![sub.kind.clone()],
                    model: sub.model.clone(),
                    tokens_used: sub.tokens,
                    extra: vec![(
                        "parent".into(),
                        super::frontmatter::scalar(state.task_id.as_str()),
                    )],
                    ..Front::default()
                },
                title: if sub.description.is_empty() {
                    format!("{} subagent of {}", sub.kind, state.task_id)
                } else {
                    sub.description.clone()
                },
                intro: Vec::new(),
                sections: vec![Section {
                    name: sub.kind.clone(),
                    agent: Some(sub.kind.clone()),
                    channel: None,
                    blocks: sub.blocks,
                }],
            };
            finish(log)
        })
        .collect()
}

/// The id of `state`'s `n`th subagent's log (from 0).
fn child_id(state: &TaskState, n: usize) -> String {
    format!("{}--{}", state.task_id, n + 1)
}

/// The phase a resume continues at: the first not passed or skipped.
fn resume_point(state: &TaskState) -> Option<String> {
    if state.status == TaskStatus::Complete {
        return None;
    }
    state
        .phases
        .iter()
        .find(|p| !matches!(p.status, PhaseStatus::Pass | PhaseStatus::Skipped))
        .map(|p| p.id.to_string())
}

struct Builder {
    task: String,
    log: SessionLog,
    /// The last section is still being written (its phase has not ended).
    open: bool,
    participants: Vec<String>,
    /// The subagents the CLIs ran, in the order they started.
    subs: Vec<Sub>,
    /// The time of the event being read.
    now: String,
    /// What each phase's first section says of its definition.
    defs: std::collections::BTreeMap<String, Vec<Block>>,
}

/// A subagent: where its callout goes, and what it did.
struct Sub {
    parent: String,
    kind: String,
    description: String,
    model: Option<String>,
    started: String,
    /// The section and block of its callout.
    at: Option<(usize, usize)>,
    blocks: Vec<Block>,
    /// It ended: its tool call has its result, or (`runs_on`) it said
    /// its last word.
    done: bool,
    /// It runs on after its tool call returns (Codex's `spawn_agent`).
    runs_on: bool,
    /// The tokens its CLI reported for it (Codex counts per thread; 0:
    /// none reported, Claude Code counts per session).
    tokens: u64,
}

impl Builder {
    fn new(state: &TaskState) -> Builder {
        let mut b = Builder {
            task: state.task_id.to_string(),
            log: SessionLog::default(),
            open: false,
            participants: Vec::new(),
            subs: Vec::new(),
            now: String::new(),
            defs: Default::default(),
        };
        let desc = crate::session_log::clean(&state.description);
        let mut lines = desc.trim().lines();
        b.log.title = one_line(lines.next().unwrap_or(state.task_id.as_str()));
        let rest: String = lines.collect::<Vec<_>>().join("\n");
        if !rest.trim().is_empty() {
            b.log.intro.push(Block::Prose(rest.trim().to_string()));
        }
        b
    }

    /// Fills each subagent's callout as `mode` says; their frontmatter entries.
    fn place_subagents(&mut self, mode: SubagentMode) -> Vec<super::Subagent> {
        let mut entries = Vec::new();
        for (n, sub) in self.subs.iter().enumerate() {
            let id = format!("{}--{}", self.task, n + 1);
            entries.push(super::Subagent {
                session: id.clone(),
                agent: sub.kind.clone(),
                model: sub.model.clone(),
                tokens: sub.tokens,
            });
            let Some((si, bi)) = sub.at else { continue };
            // Inline: no file of its own, its text in the callout.
            let link = (mode != SubagentMode::Inline).then_some(id.as_str());
            let body = child_body(&sub.description, &sub.blocks, mode, link);
            let title = format!(
                "@{} ({})",
                sub.kind,
                sub.model.as_deref().unwrap_or("its CLI's model")
            );
            if let Some(Block::Callout(c)) = self
                .log
                .sections
                .get_mut(si)
                .and_then(|s| s.blocks.get_mut(bi))
            {
                *c = Callout::new(kind::SUBAGENT, title, &body);
            }
        }
        entries
    }
    fn event(&mut self, r: &EventRecord, wf: Option<&Workflow>, ended: &mut Option<String>) {
        self.now = r.ts.rfc3339();
        match &r.event {
            Event::PhaseStarted { phase, attempt, .. } => {
                self.start(phase.as_str());
                if *attempt > 1 {
                    self.prose(&format!("_Attempt {attempt}._"));
                }
            }
            Event::AgentSession { phase, session, .. } => {
                let s = self.section(phase.as_str());
                s.agent = Some(session.agent.clone());
                let who = match &session.version {
                    Some(v) => format!(
                        "{}@{}",
                        session.agent,
                        v.split_whitespace().next().unwrap_or(v)
                    ),
                    None => session.agent.clone(),
                };
                if !self
                    .participants
                    .iter()
                    .any(|p| p.split('@').next() == Some(&session.agent))
                {
                    self.participants.push(who);
                }
            }
            Event::AgentEnded {
                version: Some(v), ..
            } => {
                // The version comes at the end: name it if it was not known.
                if let Some(agent) = self.log.sections.last().and_then(|s| s.agent.clone())
                    && let Some(p) = self.participants.iter_mut().find(|p| **p == agent)
                {
                    *p = format!("{agent}@{}", v.split_whitespace().next().unwrap_or(v));
                }
            }
            Event::AgentActivity { phase, events, .. } => {
                self.section(phase.as_str());
                for e in events {
                    self.agent_event(e);
                }
            }
            Event::Imported {
                session,
                events,
                first_prompt,
            } => {
                self.start("imported");
                let s = self.section("imported");
                s.agent = Some(session.agent.clone());
                if let Some(p) = first_prompt {
                    self.callout(kind::USER, "the first prompt", p);
                }
                for e in events {
                    self.agent_event(e);
                }
                self.open = false;
            }
            Event::PhasePassed {
                phase,
                summary,
                files_changed,
                ..
            } => {
                self.section(phase.as_str());
                let title = if files_changed.is_empty() {
                    "passed".to_string()
                } else {
                    shorten(
                        &format!("passed, changed {}", files_changed.join(", ")),
                        160,
                    )
                };
                // The agent's last message is usually the summary: said once.
                let s = self.log.sections.last_mut().expect("a section");
                if let Some(Block::Prose(p)) = s.blocks.last()
                    && p.trim() == summary.trim()
                {
                    s.blocks.pop();
                }
                self.callout(kind::SUMMARY, &title, summary);
                self.open = false;
            }
            Event::PhaseFailed {
                phase,
                attempt,
                error,
                stderr_tail,
                retry,
                ..
            } => {
                self.section(phase.as_str());
                let mut body = error.clone();
                let tail: Vec<&str> = stderr_tail.lines().rev().take(8).collect();
                if !tail.is_empty() && !error.contains(stderr_tail.trim()) {
                    body.push_str("\n\n");
                    body.push_str(&tail.into_iter().rev().collect::<Vec<_>>().join("\n"));
                }
                let title = if *retry {
                    format!("attempt {attempt} failed; it is tried again")
                } else {
                    format!("attempt {attempt} failed")
                };
                self.callout(kind::ERROR, &title, &body);
                self.open = false;
            }
            Event::PhaseInterrupted {
                phase,
                attempt,
                reason,
            } => {
                self.section(phase.as_str());
                self.cut_off();
                // A person's cancel stopped it: not something that went
                // wrong (`session learn` makes no case of it).
                if reason == crate::machine::CANCELLED {
                    self.callout(
                        kind::NOTE,
                        &format!("attempt {attempt} was stopped"),
                        reason,
                    );
                } else {
                    self.callout(
                        kind::ERROR,
                        &format!("attempt {attempt} was interrupted"),
                        reason,
                    );
                }
                self.open = false;
            }
            Event::PhaseSkipped { phase, reason } => {
                self.start(phase.as_str());
                // A person's question is shown when it is asked: one never
                // asked is said here, so the log keeps the phase's kind.
                if let Some(PhaseKind::Wait(w @ WaitSpec::Human { .. })) =
                    wf.and_then(|w| w.phase(phase.as_str())).map(|p| &p.kind)
                {
                    self.callout(kind::WAIT, &wait_toml(w), "");
                }
                self.prose(&format!("_Skipped: {}._", one_line(reason)));
                self.open = false;
            }
            Event::PhaseWaiting {
                phase, description, ..
            } => {
                self.section(phase.as_str());
                let spec = wf
                    .and_then(|w| w.phase(phase.as_str()))
                    .and_then(|p| match &p.kind {
                        PhaseKind::Wait(w) => Some(w),
                        _ => None,
                    });
                match spec {
                    Some(WaitSpec::Human { question, options }) => {
                        let mut body: Vec<String> =
                            options.iter().map(|o| format!("- {o}")).collect();
                        body.push(String::new());
                        body.push(format!(
                            "answer: `baton inbox answer {}/{phase} <choice>`",
                            self.task
                        ));
                        self.callout(kind::DECISION_NEEDED, question, &body.join("\n"));
                    }
                    _ => self.callout(kind::NOTE, &format!("waiting for {description}"), ""),
                }
            }
            Event::Answered { phase, answer, by } => {
                self.section(phase.as_str());
                self.callout(kind::USER, &format!("{by} answered"), answer);
            }
            Event::EventArrived {
                phase,
                event,
                facts,
                ..
            } => {
                self.section(phase.as_str());
                let body: Vec<String> = facts.iter().map(|(k, v)| format!("{k}: {v}")).collect();
                self.callout(kind::NOTE, &format!("{event} arrived"), &body.join("\n"));
            }
            Event::LoopedBack {
                from,
                to,
                iteration,
                ..
            } => {
                self.section(from.as_str());
                self.callout(
                    kind::DECISION,
                    &format!("back to {to} (iteration {})", iteration + 1),
                    "",
                );
            }
            Event::Rewound { to, .. } => {
                self.callout(kind::DECISION, &format!("rewound to {to}"), "");
            }
            Event::AgentSwitched { from, to, reason } => {
                let title = match from {
                    Some(f) => format!("handed over from {f} to {to}"),
                    None => format!("runs on {to}"),
                };
                self.callout(kind::DECISION, &title, reason);
            }
            Event::TaskResumed { note, .. } if !note.trim().is_empty() => {
                self.callout(kind::NOTE, "resumed", note);
            }
            Event::Adopted { source, phases, .. } => {
                for p in phases.iter().filter(|p| p.status == PhaseStatus::Pass) {
                    self.start(p.id.as_str());
                    self.prose(&format!("_Carried over from {}._", one_line(source)));
                    self.callout(kind::SUMMARY, "passed", p.summary.as_deref().unwrap_or(""));
                    self.open = false;
                }
            }
            Event::AutoRestarted { reason } => {
                self.callout(kind::NOTE, "restarted by the supervisor", reason)
            }
            Event::RestartsExhausted { reason } => {
                self.callout(kind::ERROR, "no more restarts", reason)
            }
            Event::TaskCompleted => {
                *ended = Some(r.ts.rfc3339());
                self.callout(kind::TASK_COMPLETE, "the task is complete", "");
            }
            Event::TaskFailed { reason, .. } => {
                *ended = Some(r.ts.rfc3339());
                self.callout(kind::ERROR, "the task failed", reason);
            }
            Event::TaskCancelled { reason } => {
                *ended = Some(r.ts.rfc3339());
                self.callout(kind::NOTE, "cancelled", reason);
            }
            _ => {}
        }
    }

    /// A new section for `phase`; the phase's first says what its
    /// definition holds that its story would not show.
    fn start(&mut self, phase: &str) {
        let blocks = self.defs.remove(phase).unwrap_or_default();
        self.log.sections.push(Section {
            name: phase.to_string(),
            blocks,
            ..Section::default()
        });
        self.open = true;
    }

    /// The open section of `phase`, opened if it is not the last one.
    fn section(&mut self, phase: &str) -> &mut Section {
        let same = self.open && self.log.sections.last().is_some_and(|s| s.name == phase);
        if !same {
            self.start(phase);
        }
        self.log.sections.last_mut().expect("a section")
    }

    fn blocks(&mut self) -> &mut Vec<Block> {
        match self.log.sections.last_mut() {
            Some(s) => &mut s.blocks,
            None => &mut self.log.intro,
        }
    }

    fn prose(&mut self, text: &str) {
        let text = text.trim();
        if text.is_empty() {
            return;
        }
        self.blocks().push(Block::Prose(text.to_string()));
    }

    fn callout(&mut self, k: &str, title: &str, body: &str) {
        self.blocks()
            .push(Block::Callout(Callout::new(k, title, body)));
    }

    fn agent_event(&mut self, e: &AgentEvent) {
        match e {
            // The same message again right away (a CLI that says it twice,
            // or turns that repeat themselves) is said once.
            AgentEvent::AssistantText { text } => {
                if !matches!(self.blocks().last(), Some(Block::Prose(p)) if p.trim() == text.trim())
                {
                    self.prose(text)
                }
            }
            AgentEvent::Final { text, ok } => {
                // The final message is most often one already said.
                let said = self
                    .blocks()
                    .iter()
                    .any(|b| matches!(b, Block::Prose(p) if p.trim() == text.trim()));
                if !text.trim().is_empty() && !said {
                    self.prose(text);
                }
                if !ok {
                    self.callout(kind::ERROR, "the agent ended with a failure", "");
                }
            }
            AgentEvent::ToolCall { id, name, summary } => {
                let call = if summary.is_empty() {
                    name.clone()
                } else {
                    format!("{name} {summary}")
                };
                let line = ToolLine {
                    call: format!("{call}\u{0}{id}"),
                    result: None,
                    ok: true,
                };
                match self.blocks().last_mut() {
                    Some(Block::ToolCalls(calls)) => calls.push(line),
                    _ => self.blocks().push(Block::ToolCalls(vec![line])),
                }
                if SUBAGENT_TOOLS.contains(&name.as_str()) {
                    // Its callout goes right after the call; filled at the end.
                    self.blocks()
                        .push(Block::Callout(Callout::new(kind::SUBAGENT, "", "")));
                    let at = self
                        .log
                        .sections
                        .len()
                        .checked_sub(1)
                        .map(|s| (s, self.log.sections[s].blocks.len() - 1));
                    let (kind, description) = match summary.split_once(": ") {
                        Some((k, d)) => (k.to_string(), d.to_string()),
                        None => (name.clone(), summary.clone()),
                    };
                    self.subs.push(Sub {
                        parent: id.clone(),
                        kind: if kind.is_empty() { name.clone() } else { kind },
                        description,
                        model: None,
                        started: self.now.clone(),
                        at,
                        blocks: Vec::new(),
                        done: false,
                        runs_on: name == "spawn_agent",
                        tokens: 0,
                    });
                }
            }
            AgentEvent::Subagent {
                parent,
                model,
                event,
            } => {
                let now = self.now.clone();
                // The latest with that call id: a CLI may number its calls
                // anew in every run (Codex's `item_1`).
                let i = match self.subs.iter().rposition(|s| &s.parent == parent) {
                    Some(i) => i,
                    None => {
                        self.subs.push(Sub {
                            parent: parent.clone(),
                            kind: "subagent".into(),
                            description: String::new(),
                            model: None,
                            started: now,
                            at: None,
                            blocks: Vec::new(),
                            done: false,
                            runs_on: false,
                            tokens: 0,
                        });
                        self.subs.len() - 1
                    }
                };
                let sub = &mut self.subs[i];
                if sub.model.is_none() {
                    sub.model = model.clone();
                }
                match event.as_ref() {
                    AgentEvent::Usage {
                        input_tokens,
                        output_tokens,
                        ..
                    } => sub.tokens += input_tokens + output_tokens,
                    AgentEvent::Final { .. } => sub.done = true,
                    _ => {}
                }
                sub_event(&mut sub.blocks, event);
            }
            AgentEvent::ToolResult { id, ok, summary } => {
                if let Some(sub) = self.subs.iter_mut().rev().find(|s| &s.parent == id)
                    && !sub.runs_on
                {
                    sub.done = true;
                }
                let tag = format!("\u{0}{id}");
                let found = self.blocks().iter_mut().rev().find_map(|b| match b {
                    Block::ToolCalls(calls) => calls
                        .iter_mut()
                        .find(|c| c.call.ends_with(&tag) && c.result.is_none()),
                    _ => None,
                });
                if let Some(c) = found {
                    c.result = Some(if summary.is_empty() {
                        "done".into()
                    } else {
                        summary.clone()
                    });
                    c.ok = *ok;
                }
            }
            AgentEvent::Error { message } => {
                self.callout(kind::ERROR, "the agent reported an error", message)
            }
            AgentEvent::SessionStarted { .. }
            | AgentEvent::Usage { .. }
            | AgentEvent::Warning { .. } => {}
        }
    }

    /// The calls of the last section that never got a result: the run
    /// was cut off while they ran.
    fn cut_off(&mut self) {
        for b in self.blocks() {
            if let Block::ToolCalls(calls) = b {
                for c in calls.iter_mut().filter(|c| c.result.is_none()) {
                    c.result = Some("no result: the run was cut off while it ran".into());
                    c.ok = false;
                }
            }
        }
    }
}

/// A subagent's own event into its blocks: its text as prose, its tool
/// calls with their results.
fn sub_event(blocks: &mut Vec<Block>, e: &AgentEvent) {
    match e {
        AgentEvent::AssistantText { text } if !text.trim().is_empty() => {
            blocks.push(Block::Prose(text.trim().to_string()))
        }
        AgentEvent::ToolCall { id, name, summary } => {
            let line = ToolLine {
                call: format!("{name} {summary}\u{0}{id}").replacen(" \u{0}", "\u{0}", 1),
                result: None,
                ok: true,
            };
            match blocks.last_mut() {
                Some(Block::ToolCalls(calls)) => calls.push(line),
                _ => blocks.push(Block::ToolCalls(vec![line])),
            }
        }
        AgentEvent::ToolResult { id, ok, summary } => {
            let tag = format!("\u{0}{id}");
            if let Some(c) = blocks.iter_mut().rev().find_map(|b| match b {
                Block::ToolCalls(calls) => calls.iter_mut().find(|c| c.call.ends_with(&tag)),
                _ => None,
            }) {
                c.result = Some(if summary.is_empty() {
                    "done".into()
                } else {
                    summary.clone()
                });
                c.ok = *ok;
            }
        }
        AgentEvent::Error { message } => blocks.push(Block::Callout(Callout::new(
            kind::ERROR,
            "the subagent reported an error",
            message,
        ))),
        AgentEvent::Subagent { event, .. } => sub_event(blocks, event),
        _ => {}
    }
}

/// The tool calls' ids, kept while the log was built, taken out.
fn finish(mut log: SessionLog) -> SessionLog {
    for s in &mut log.sections {
        for b in &mut s.blocks {
            if let Block::ToolCalls(calls) = b {
                for c in calls {
                    if let Some(at) = c.call.find('\u{0}') {
                        c.call.truncate(at);
                    }
                }
            }
        }
    }
    log
}
