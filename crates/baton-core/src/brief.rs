//! The handoff brief: the context the next agent (or command) gets, rebuilt
//! from completed phases so any CLI can pick the work up.

use crate::state::{PhaseStatus, TaskState};
use std::fmt::Write;

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
        .filter(|p| p.status == PhaseStatus::Pass)
        .collect();
    if !done.is_empty() {
        let _ = writeln!(s, "## Completed phases\n");
        for p in &done {
            let summary = p.summary.as_deref().unwrap_or("").trim();
            let _ = writeln!(
                s,
                "### {} (attempt {})\n\n{}\n",
                p.id,
                p.attempt,
                if summary.is_empty() {
                    "(no summary)"
                } else {
                    summary
                }
            );
        }
    }
    let files = state.files_changed_total();
    if !files.is_empty() {
        let _ = writeln!(s, "## Files changed so far\n");
        for f in files {
            let _ = writeln!(s, "- {f}");
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
