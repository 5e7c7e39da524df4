//! A log turned into a workflow (`baton session codify`): a phase per
//! heading (a retry is one phase), its agent from `@agent`, the tools it
//! used as hints in its prompt, a question a person answered as a `wait =
//! { human }` phase, and a loop where a heading came back after others.
//! What the log says of a phase's definition is kept, so the workflow
//! runs the way the session ran: a `[!command]` stays a `run` command, a
//! `[!wait]` a wait, a `[!when]` its condition (on the log's `flags`).

use super::{LogPhase, SessionLog, kind, phases};
use std::collections::BTreeSet;

/// A workflow drafted from a log, before it is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Draft {
    pub name: String,
    pub description: String,
    /// `[flags]`: those the session ran with, and any a `when` names that
    /// the log does not give (off).
    pub flags: Vec<(String, String)>,
    pub phases: Vec<DraftPhase>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DraftPhase {
    pub id: String,
    /// The heading it came from.
    pub heading: String,
    pub agent: Option<String>,
    pub step: Step,
    /// The condition it ran on (`when`), as the workflow writes it.
    pub when: Option<String>,
    /// The phase to go back to when this one fails, and how often.
    pub loop_to: Option<(String, u32)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Prompt(String),
    /// A shell command (`run`).
    Run(String),
    Human {
        question: String,
        options: Vec<String>,
    },
    /// Another wait: the inline table of `wait = { … }`.
    Wait(String),
}

/// The draft of `log` as workflow `name`.
pub fn draft(log: &SessionLog, name: &str) -> Draft {
    let found = phases(log);
    let mut ids = BTreeSet::new();
    let id_of: Vec<String> = found
        .iter()
        .map(|p| {
            let base = phase_id(&p.name);
            let mut id = base.clone();
            let mut n = 2;
            while !ids.insert(id.clone()) {
                id = format!("{base}-{n}");
                n += 1;
            }
            id
        })
        .collect();
    let mut flags: Vec<(String, String)> = log
        .front
        .flags
        .iter()
        .filter(|(k, _)| flag_name(k))
        .cloned()
        .collect();
    let phases = found
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let step = step(log, p);
            let when = first_callout(log, p, kind::WHEN)
                .map(|c| c.title.trim().to_string())
                .and_then(|w| condition(&w, &mut flags));
            DraftPhase {
                id: id_of[i].clone(),
                heading: p.name.clone(),
                agent: p.agent.clone(),
                when,
                loop_to: p
                    .loops_to
                    .as_ref()
                    .filter(|_| !matches!(step, Step::Human { .. } | Step::Wait(_)))
                    .and_then(|to| {
                        let at = found.iter().position(|q| &q.name == to)?;
                        // As many times as the log went round, and once more.
                        Some((id_of[at].clone(), p.sections.len() as u32 + 1))
                    }),
                step,
            }
        })
        .collect();
    Draft {
        name: name.to_string(),
        description: format!("Codified from the session log {:?}", log.front.session_id),
        flags,
        phases,
    }
}

/// The first callout of `kind` in phase `p`'s sections.
fn first_callout<'a>(
    log: &'a SessionLog,
    p: &LogPhase,
    kind: &'a str,
) -> Option<&'a super::Callout> {
    p.sections
        .iter()
        .find_map(|&i| log.sections[i].callouts(kind).next())
}

/// A flag's name as `[flags]` and `when` write it.
fn flag_name(k: &str) -> bool {
    !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Condition `src` when it reads as one, the flags it names that `flags`
/// lacks added to them (off: the log does not say).
fn condition(src: &str, flags: &mut Vec<(String, String)>) -> Option<String> {
    let named = std::cell::RefCell::new(Vec::new());
    let c = crate::condition::Condition::parse(src, |f| {
        named.borrow_mut().push(f.to_string());
        flag_name(f)
    })
    .ok()?;
    for f in named.into_inner() {
        if !flags.iter().any(|(k, _)| *k == f) {
            flags.push((f, "false".into()));
        }
    }
    Some(c.to_string())
}

/// A question a person answered in the phase makes it a human wait;
/// anything else is an agent phase.
fn step(log: &SessionLog, p: &LogPhase) -> Step {
    if let Some(c) = first_callout(log, p, kind::COMMAND) {
        let body = c.body.join("\n");
        let command = if body.trim().is_empty() {
            c.title.clone()
        } else {
            body
        };
        if !command.trim().is_empty() {
            return Step::Run(command);
        }
    }
    if let Some(c) = first_callout(log, p, kind::WAIT)
        && c.title.trim().starts_with('{')
    {
        return Step::Wait(c.title.trim().to_string());
    }
    let asked = p.sections.iter().find_map(|&i| {
        log.sections[i]
            .callouts(kind::DECISION_NEEDED)
            .chain(log.sections[i].callouts(kind::APPROVAL_REQUIRED))
            .next()
    });
    if let Some(c) = asked
        && p.tools.is_empty()
    {
        let options = c
            .body
            .iter()
            .filter_map(|l| l.trim().strip_prefix("- "))
            .map(|o| o.trim().to_string())
            .filter(|o| !o.is_empty())
            .collect();
        return Step::Human {
            question: if c.title.is_empty() {
                format!("{}?", p.name)
            } else {
                c.title.clone()
            },
            options,
        };
    }
    let mut prompt = format!(
        "Phase \"{}\" of: {{{{task}}}}\n\nIn the session this workflow was codified from, this phase did:\n",
        p.name
    );
    let did = p
        .summary
        .as_deref()
        .map(|s| match s.strip_prefix("_Skipped") {
            Some(_) => "(nothing: it was skipped there)".to_string(),
            None => crate::agent_stream::shorten(s, 600),
        })
        .unwrap_or_else(|| "(the log says nothing of its outcome)".into());
    prompt.push_str(&did);
    prompt.push('\n');
    if !p.tools.is_empty() {
        prompt.push_str(&format!(
            "\nTools that helped there: {}.\n",
            p.tools.join(", ")
        ));
    }
    prompt.push_str("\n{{brief}}\n");
    Step::Prompt(prompt)
}

/// A phase id (`[a-z0-9][a-z0-9-]*`) from a heading.
pub fn phase_id(heading: &str) -> String {
    let mut id = String::new();
    for c in heading.chars() {
        if c.is_ascii_alphanumeric() {
            id.push(c.to_ascii_lowercase());
        } else if !id.is_empty() && !id.ends_with('-') {
            id.push('-');
        }
    }
    let id = id
        .trim_end_matches('-')
        .chars()
        .take(48)
        .collect::<String>();
    let id = id.trim_end_matches('-').to_string();
    if id.is_empty() { "phase".into() } else { id }
}

/// The draft as a workflow file. Agents not in `agents` (those this
/// project can run) are left out, so the phase runs on the default one.
pub fn to_toml(d: &Draft, agents: &[String]) -> String {
    let q = |s: &str| toml_string(s);
    let mut out = format!(
        "name = {}\ndescription = {}\n",
        q(&d.name),
        q(&d.description)
    );
    if !d.flags.is_empty() {
        out.push_str("\n# the values the session ran with\n[flags]\n");
        for (k, v) in &d.flags {
            let value = match crate::condition::parse_flag_value(v) {
                serde_json::Value::String(s) => q(&s),
                other => other.to_string(),
            };
            out.push_str(&format!("{k} = {value}\n"));
        }
    }
    for p in &d.phases {
        out.push_str(&format!(
            "\n# from the heading {:?}\n[[phase]]\nid = {}\n",
            p.heading,
            q(&p.id)
        ));
        if let Some(w) = &p.when {
            out.push_str(&format!("when = {}\n", q(w)));
        }
        match &p.step {
            Step::Run(command) => out.push_str(&format!("run = {}\n", multiline(command))),
            Step::Wait(table) => out.push_str(&format!("wait = {table}\n")),
            Step::Prompt(text) => {
                if let Some(a) = p.agent.as_ref().filter(|a| agents.contains(a)) {
                    out.push_str(&format!("agent = {}\n", q(a)));
                }
                out.push_str(&format!("prompt = {}\n", q(text)));
            }
            Step::Human { question, options } => {
                let opts: Vec<String> = options.iter().map(|o| q(o)).collect();
                out.push_str(&format!(
                    "wait = {{ human = {}, options = [{}] }}\n",
                    q(question),
                    opts.join(", ")
                ));
            }
        }
        if let Some((to, n)) = &p.loop_to {
            out.push_str(&format!("loop_to = {}\nmax_iterations = {n}\n", q(to)));
        }
    }
    out
}

/// A TOML string for a command: a multi-line literal when it has lines
/// (as people write `run = '''…'''`), else a basic string.
fn multiline(s: &str) -> String {
    let literal = s.contains('\n')
        && !s.contains("'''")
        && !s.ends_with('\'')
        && !s.chars().any(|c| c.is_control() && c != '\n' && c != '\t');
    if literal {
        format!("'''\n{s}'''")
    } else {
        toml_string(s)
    }
}

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
