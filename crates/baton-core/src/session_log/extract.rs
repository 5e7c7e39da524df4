//! What a log says, read off its sections: the phases in the order they
//! ran (a phase run again right away, a retry, is one phase; a phase that
//! comes back later is a loop), each one's summary, agent and tools, and
//! the corrections people made after errors.

use super::{Block, Section, SessionLog, kind};

/// A phase as the log tells it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LogPhase {
    pub name: String,
    /// The agent of its last section that names one.
    pub agent: Option<String>,
    /// Its last section's summary (see [`summary_of`]).
    pub summary: Option<String>,
    /// The tools it called, by name, first use first.
    pub tools: Vec<String>,
    /// The indexes of its sections in the log.
    pub sections: Vec<usize>,
    /// An earlier phase this one went back to after it (a loop): the
    /// phase heading that came again later.
    pub loops_to: Option<String>,
}

/// The phases of `log`, in the order they first ran. Consecutive sections
/// of one name are one phase (its attempts); a name coming back after
/// others makes the phase before it loop back to it.
pub fn phases(log: &SessionLog) -> Vec<LogPhase> {
    let mut out: Vec<LogPhase> = Vec::new();
    let mut last: Option<usize> = None;
    for (i, s) in log.sections.iter().enumerate() {
        let name = s.name.trim();
        if name.is_empty() {
            continue;
        }
        let found = out.iter().position(|p| p.name == name);
        match found {
            Some(at) => {
                if let Some(prev) = last
                    && prev != at
                    && prev > at
                    && out[prev].loops_to.is_none()
                {
                    out[prev].loops_to = Some(name.to_string());
                }
                merge(&mut out[at], s, i);
                last = Some(at);
            }
            None => {
                let mut p = LogPhase {
                    name: name.to_string(),
                    agent: None,
                    summary: None,
                    tools: Vec::new(),
                    sections: Vec::new(),
                    loops_to: None,
                };
                merge(&mut p, s, i);
                out.push(p);
                last = Some(out.len() - 1);
            }
        }
    }
    out
}

fn merge(p: &mut LogPhase, s: &Section, index: usize) {
    p.sections.push(index);
    if s.agent.is_some() {
        p.agent = s.agent.clone();
    }
    if let Some(sum) = summary_of(s) {
        p.summary = Some(sum);
    }
    for b in &s.blocks {
        if let Block::ToolCalls(calls) = b {
            for c in calls {
                let tool = c.call.split_whitespace().next().unwrap_or("").to_string();
                if !tool.is_empty() && !p.tools.contains(&tool) {
                    p.tools.push(tool);
                }
            }
        }
    }
}

/// What a section concluded: its `[!summary]` callout, else its last
/// prose, else none.
pub fn summary_of(s: &Section) -> Option<String> {
    if let Some(c) = s.callouts(kind::SUMMARY).last() {
        let text = c.body.join("\n").trim().to_string();
        if !text.is_empty() {
            return Some(text);
        }
    }
    s.blocks.iter().rev().find_map(|b| match b {
        Block::Prose(p) if !p.trim().is_empty() => Some(p.trim().to_string()),
        _ => None,
    })
}

/// The learning cases of `log`: every `[!error]` (with the `[!user]` that
/// answered it, if one did before the phase went on) and every `[!user]`
/// that corrected the agent without an error; context is what the phase
/// had said and done before, outcome how the phase ended. One error that
/// came again (each retry of a phase failing the same way) is one case,
/// counted in [`Correction::occurrences`] ([`same_case`]).
pub fn corrections(log: &SessionLog) -> Vec<Correction> {
    let mut merged: Vec<Correction> = Vec::new();
    for c in each_correction(log) {
        match merged.iter_mut().find(|m| same_case(m, &c)) {
            Some(m) => m.occurrences += 1,
            None => merged.push(c),
        }
    }
    merged
}

/// Whether two cases are one: the same phase, and the same error and
/// correction once what changes from one try to the next is left out
/// (numbers: attempt counts, line numbers, times, ids; hex hashes; case
/// and spacing).
pub fn same_case(a: &Correction, b: &Correction) -> bool {
    let key = |t: &Option<String>| t.as_deref().map(normalized);
    a.phase == b.phase && key(&a.error) == key(&b.error) && key(&a.correction) == key(&b.correction)
}

/// `text` without what differs between two reports of one error.
fn normalized(text: &str) -> String {
    let mut out = String::new();
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        // A hash or an id (7 or more hex digits) is any hash.
        let hexes = word.chars().filter(char::is_ascii_hexdigit).count();
        if hexes >= 7
            && word
                .chars()
                .filter(|c| c.is_ascii_alphanumeric())
                .all(|c| c.is_ascii_hexdigit())
        {
            out.push('#');
            continue;
        }
        let mut digits = false;
        for c in word.chars() {
            if c.is_ascii_digit() {
                if !digits {
                    out.push('#');
                }
                digits = true;
            } else {
                digits = false;
                out.extend(c.to_lowercase());
            }
        }
    }
    out
}

/// Every case as it comes, near duplicates too.
fn each_correction(log: &SessionLog) -> Vec<Correction> {
    let mut out: Vec<Correction> = Vec::new();
    let found = phases(log);
    for (si, s) in log.sections.iter().enumerate() {
        let outcome = found
            .iter()
            .find(|p| p.sections.contains(&si))
            .and_then(|p| p.summary.clone());
        let mut context: Vec<String> = Vec::new();
        let mut open: Option<usize> = None;
        for b in &s.blocks {
            match b {
                Block::Prose(p) => context.push(p.trim().to_string()),
                Block::ToolCalls(calls) => {
                    for c in calls {
                        context.push(match &c.result {
                            Some(r) if c.ok => format!("called {} → {r}", c.call),
                            Some(r) => format!("called {} → failed: {r}", c.call),
                            None => format!("called {} (no result)", c.call),
                        });
                    }
                }
                Block::Callout(c) if c.kind == kind::ERROR => {
                    out.push(Correction {
                        phase: s.name.clone(),
                        context: context.join("\n"),
                        error: Some(callout_text(c)),
                        correction: None,
                        outcome: outcome.clone(),
                        occurrences: 1,
                    });
                    open = Some(out.len() - 1);
                }
                Block::Callout(c) if c.kind == kind::USER => {
                    let said = callout_text(c);
                    match open.take() {
                        Some(i) => out[i].correction = Some(said),
                        None => out.push(Correction {
                            phase: s.name.clone(),
                            context: context.join("\n"),
                            error: None,
                            correction: Some(said),
                            outcome: outcome.clone(),
                            occurrences: 1,
                        }),
                    }
                }
                Block::Callout(c) if c.kind == kind::SUMMARY => {}
                Block::Callout(c) => context.push(callout_text(c)),
            }
        }
    }
    out
}

fn callout_text(c: &super::Callout) -> String {
    let body = c.body.join("\n");
    match (c.title.is_empty(), body.trim().is_empty()) {
        (false, false) => format!("{}\n{}", c.title, body.trim()),
        (false, true) => c.title.clone(),
        _ => body.trim().to_string(),
    }
}

/// A correction: something went wrong (an `[!error]`) and a person (a
/// `[!user]`) said what to do, or the user corrected the agent outright.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Correction {
    /// The section it happened in.
    pub phase: String,
    /// What came before: the section's prose and tool calls up to it.
    pub context: String,
    /// The error, when there was one.
    pub error: Option<String>,
    /// What the person said, when they said something.
    pub correction: Option<String>,
    /// What the section ended with afterwards (its summary), if it did.
    pub outcome: Option<String>,
    /// How many times this case came (the same error in each retry of a
    /// phase is one case); the first is the one described.
    pub occurrences: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(phase: &str, error: &str) -> Correction {
        Correction {
            phase: phase.into(),
            context: String::new(),
            error: Some(error.into()),
            correction: None,
            outcome: None,
            occurrences: 1,
        }
    }

    #[test]
    fn one_error_retried_is_one_case_and_other_errors_stay_apart() {
        let a = case(
            "build",
            "attempt 1 failed; it is tried again\nexit status 1\nerror at src/lib.rs:12 (commit 1a2b3c4d5e)",
        );
        let b = case(
            "build",
            "attempt 2 failed; it is tried again\nexit status 1\nerror at  src/lib.rs:14 (commit 9f8e7d6c5b)",
        );
        assert!(same_case(&a, &b));
        assert!(!same_case(
            &a,
            &case(
                "test",
                "attempt 1 failed; it is tried again\nexit status 1\nerror at src/lib.rs:12 (commit 1a2b3c4d5e)"
            )
        ));
        assert!(!same_case(
            &a,
            &case("build", "attempt 1 failed\nlinker not found")
        ));
        let mut corrected = b.clone();
        corrected.correction = Some("use the other linker".into());
        assert!(
            !same_case(&a, &corrected),
            "a person's answer makes its own case"
        );
    }
}
