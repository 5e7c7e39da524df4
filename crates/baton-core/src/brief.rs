//! The handoff brief: the context the next agent (or command) gets, rebuilt
//! from completed phases so any CLI can pick the work up.

use crate::agent_stream::{AgentEvent, shorten, without_dangling_calls};
use crate::state::{PhaseStatus, TaskState};
use std::fmt::Write;

/// At most this many characters of each phase summary go into the brief;
/// the full summary stays in the phase's output file. Agents get the brief
/// in their prompt, and a prompt passed as one argument must stay under
/// Linux's 128 KiB per-argument limit however long the task runs.
pub const MAX_SUMMARY_CHARS: usize = 4_000;
/// At most this many entries of "Files changed so far" go into the brief.
pub const MAX_FILES: usize = 200;

/// Renders the brief as markdown for the phase about to run.
pub fn render(state: &TaskState, phase: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Handoff brief: {}", state.task_id);
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "## Task\n\n{}\n",
        if state.description.is_empty() {
            "(no description)"
        } else {
            &state.description
        }
    );
    let _ = writeln!(s, "Workflow: {} · current phase: {phase}\n", state.workflow);
    if let Some(note) = &state.resume_note {
        let _ = writeln!(s, "## Resume note\n\n{note}\n");
    }
    if let Some(obj) = state.tech_stack.as_object().filter(|o| !o.is_empty()) {
        let _ = writeln!(s, "## Tech stack\n");
        for (k, v) in obj {
            let items: Vec<String> = match v {
                serde_json::Value::Array(a) => a
                    .iter()
                    .map(|x| {
                        x.as_str()
                            .map(str::to_string)
                            .unwrap_or_else(|| x.to_string())
                    })
                    .collect(),
                other => vec![other.to_string()],
            };
            if !items.is_empty() {
                let _ = writeln!(s, "- {k}: {}", items.join(", "));
            }
        }
        let _ = writeln!(s);
    }
    let done: Vec<_> = state
        .phases
        .iter()
        .enumerate()
        .filter(|(_, p)| p.status == PhaseStatus::Pass)
        .collect();
    if !done.is_empty() {
        let _ = writeln!(s, "## Completed phases\n");
        for (i, p) in &done {
            let summary = p.summary.as_deref().unwrap_or("").trim();
            let summary = if summary.is_empty() {
                "(no summary)".to_string()
            } else {
                match summary.char_indices().nth(MAX_SUMMARY_CHARS) {
                    None => summary.to_string(),
                    Some((cut, _)) => format!(
                        "{}\n\n(truncated; the full summary is in .baton/tasks/{}/{})",
                        summary[..cut].trim_end(),
                        state.task_id,
                        crate::document::output_file_name(*i, p.id.as_str())
                    ),
                }
            };
            let _ = writeln!(s, "### {} (attempt {})\n\n{summary}\n", p.id, p.attempt);
        }
    }
    let files = state.files_changed_total();
    if !files.is_empty() {
        let _ = writeln!(s, "## Files changed so far\n");
        for f in files.iter().take(MAX_FILES) {
            let _ = writeln!(s, "- {f}");
        }
        if files.len() > MAX_FILES {
            let _ = writeln!(s, "- and {} more", files.len() - MAX_FILES);
        }
        let _ = writeln!(s);
    }
    let criteria = acceptance_criteria(state);
    if !criteria.is_empty() {
        let _ = writeln!(s, "## Acceptance criteria\n");
        for c in criteria {
            let _ = writeln!(s, "{c}");
        }
        let _ = writeln!(s);
    }
    if !state.blockers.is_empty() {
        let _ = writeln!(s, "## Blockers\n");
        for b in &state.blockers {
            let _ = writeln!(s, "- {b}");
        }
        let _ = writeln!(s);
    }
    s
}

/// At most this many characters of an interrupted run's record go into
/// the brief (the most recent part is kept).
pub const MAX_PROGRESS_CHARS: usize = 12_000;

/// The "work in progress" section of the brief: what an interrupted agent
/// run did, as baton read it from the CLI's stream, for a new session that
/// takes over. A tool call the run never got the result of is left out
/// (named, not replayed): a dangling call makes the next model refuse.
pub fn progress_section(cli: &str, native_id: &str, events: &[AgentEvent]) -> String {
    progress_section_as(
        "Work in progress (interrupted)",
        &format!(
            "The previous run of this phase ({cli} session {native_id}) was cut off and could not be continued. What it did, as baton recorded it:"
        ),
        events,
    )
}

/// The brief's section for a session begun outside baton (`baton import`).
pub fn imported_section(cli: &str, native_id: &str, events: &[AgentEvent]) -> String {
    progress_section_as(
        "Imported session",
        &format!("This task began as a {cli} session ({native_id}) outside baton. What it did:"),
        events,
    )
}

fn progress_section_as(title: &str, intro: &str, events: &[AgentEvent]) -> String {
    let mut lines: Vec<String> = Vec::new();
    for e in without_dangling_calls(events) {
        match e {
            AgentEvent::AssistantText { text } if !text.trim().is_empty() => {
                lines.push(format!("- said: {}", shorten(&text, 600)))
            }
            AgentEvent::ToolCall { name, summary, .. } => {
                lines.push(format!("- called {name} {summary}"))
            }
            AgentEvent::ToolResult { ok, summary, .. } => lines.push(format!(
                "  - {}{}",
                if ok { "ok" } else { "failed" },
                if summary.is_empty() {
                    String::new()
                } else {
                    format!(": {summary}")
                }
            )),
            AgentEvent::Warning { message } if message.contains("got no result") => {
                lines.push(format!("- {message}"))
            }
            AgentEvent::Error { message } => lines.push(format!("- error: {message}")),
            _ => {}
        }
    }
    let mut body = lines.join("\n");
    if body.chars().count() > MAX_PROGRESS_CHARS {
        let skip = body.chars().count() - MAX_PROGRESS_CHARS;
        body = format!(
            "(earlier steps left out)\n{}",
            body.chars().skip(skip).collect::<String>()
        );
    }
    if body.is_empty() {
        body = "(nothing was recorded before it stopped)".into();
    }
    format!(
        "## {title}\n\n{intro}\n\n{body}\n\nCheck the working folder for what is already done, and do not redo it.\n"
    )
}

/// Acceptance criteria found in completed summaries: checklist items
/// (`- [ ]`, `- [x]`), lines starting `AC:`, and the list following a line
/// that mentions "acceptance criteria".
pub fn acceptance_criteria(state: &TaskState) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in state
        .phases
        .iter()
        .filter(|p| p.status == PhaseStatus::Pass)
    {
        let mut in_section = false;
        for line in p.summary.as_deref().unwrap_or("").lines() {
            let t = line.trim();
            let lower = t.to_ascii_lowercase();
            if lower.contains("acceptance criteria") {
                in_section = true;
                continue;
            }
            let is_item = t.starts_with("- ")
                || t.starts_with("* ")
                || t.split_once(". ")
                    .is_some_and(|(n, _)| n.chars().all(|c| c.is_ascii_digit()) && !n.is_empty());
            let item = if t.starts_with("- [ ]") || t.starts_with("- [x]") || t.starts_with("- [X]")
            {
                Some(t.to_string())
            } else if let Some(rest) = t.strip_prefix("AC:") {
                Some(format!("- {}", rest.trim()))
            } else if in_section && is_item {
                Some(t.to_string())
            } else {
                if in_section && (t.is_empty() || t.starts_with('#')) && !out.is_empty() {
                    in_section = false;
                }
                None
            };
            if let Some(i) = item
                && !out.contains(&i)
            {
                out.push(i);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {

    #[test]
    fn progress_leaves_out_a_call_without_its_result() {
        use crate::agent_stream::AgentEvent as E;
        let events = vec![
            E::AssistantText {
                text: "Writing the file".into(),
            },
            E::ToolCall {
                id: "a".into(),
                name: "Write".into(),
                summary: "hello.txt".into(),
            },
            E::ToolResult {
                id: "a".into(),
                ok: true,
                summary: "written".into(),
            },
            E::ToolCall {
                id: "b".into(),
                name: "Bash".into(),
                summary: "cargo test".into(),
            },
        ];
        let s = super::progress_section("claude", "S-1", &events);
        assert!(s.contains("claude session S-1"), "{s}");
        assert!(
            s.contains("- called Write hello.txt\n  - ok: written"),
            "{s}"
        );
        assert!(!s.contains("- called Bash"), "{s}");
        assert!(s.contains("Bash cargo test got no result"), "{s}");
        let empty = super::progress_section("codex", "T", &[]);
        assert!(empty.contains("nothing was recorded"));
    }
    use super::*;
    use crate::event::{Event, EventRecord};
    use crate::ids::{PhaseId, TaskId};
    use crate::machine;
    use crate::time::Timestamp;

    fn state_with(summary: &str, files: Vec<String>) -> TaskState {
        let id = TaskId::parse("t1").unwrap();
        let phases: Vec<PhaseId> = ["a", "b"]
            .iter()
            .map(|p| PhaseId::parse(p).unwrap())
            .collect();
        let rec = |seq, event| EventRecord {
            seq,
            ts: Timestamp(0),
            event,
        };
        let mut s = machine::initial(
            id,
            &rec(
                1,
                Event::TaskCreated {
                    workflow: "wf".into(),
                    definition_hash: "h".into(),
                    description: "d".into(),
                    project_name: "p".into(),
                    flags: Default::default(),
                    labels: Default::default(),
                    tech_stack: serde_json::json!({}),
                    phases: phases.clone(),
                },
            ),
        )
        .unwrap();
        for (seq, event) in [
            Event::PhaseStarted {
                phase: phases[1].clone(),
                attempt: 1,
                iteration: 0,
                checkpoint: None,
            },
            Event::PhasePassed {
                phase: phases[1].clone(),
                attempt: 1,
                summary: summary.into(),
                output: String::new(),
                files_changed: files,
            },
        ]
        .into_iter()
        .enumerate()
        {
            machine::apply(&mut s, &rec(seq as u64 + 2, event));
        }
        s
    }

    #[test]
    fn long_summaries_are_cut_at_a_char_boundary_with_a_pointer() {
        // 3-byte characters: a byte cut at 4,000 would split one.
        let long = "é".repeat(MAX_SUMMARY_CHARS) + "€€€ TAIL";
        let b = render(&state_with(&long, Vec::new()), "c");
        assert!(b.contains(&"é".repeat(MAX_SUMMARY_CHARS)), "{}", b.len());
        assert!(!b.contains("TAIL"));
        assert!(
            b.contains("(truncated; the full summary is in .baton/tasks/t1/02-b.md)"),
            "{b}"
        );
        let short = render(&state_with("all good", Vec::new()), "c");
        assert!(short.contains("all good") && !short.contains("truncated"));
        let exact = "x".repeat(MAX_SUMMARY_CHARS);
        assert!(!render(&state_with(&exact, Vec::new()), "c").contains("truncated"));
    }

    #[test]
    fn long_file_lists_are_cut() {
        let files: Vec<String> = (0..250).map(|i| format!("src/f{i:03}.rs")).collect();
        let b = render(&state_with("ok", files), "c");
        assert!(b.contains("- src/f199.rs"));
        assert!(!b.contains("- src/f200.rs"));
        assert!(b.contains("- and 50 more"), "{b}");
        let b = render(&state_with("ok", vec!["a.rs".into()]), "c");
        assert!(b.contains("- a.rs") && !b.contains("more"));
    }
}
