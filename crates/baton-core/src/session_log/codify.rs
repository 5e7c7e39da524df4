//! A log turned into a workflow (`baton session codify`): a phase per
//! heading (a retry is one phase), its agent from `@agent`, the tools it
//! used as hints in its prompt, a question a person answered as a `wait =
//! { human }` phase, and a loop where a heading came back after others.

use super::{LogPhase, SessionLog, kind, phases};
use std::collections::BTreeSet;

/// A workflow drafted from a log, before it is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Draft {
    pub name: String,
    pub description: String,
    pub phases: Vec<DraftPhase>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DraftPhase {
    pub id: String,
    /// The heading it came from.
    pub heading: String,
    pub agent: Option<String>,
    pub step: Step,
    /// The phase to go back to when this one fails, and how often.
    pub loop_to: Option<(String, u32)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Prompt(String),
    Human {
        question: String,
        options: Vec<String>,
    },
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
    let phases = found
        .iter()
        .enumerate()
        .map(|(i, p)| DraftPhase {
            id: id_of[i].clone(),
            heading: p.name.clone(),
            agent: p.agent.clone(),
            step: step(log, p),
            loop_to: p.loops_to.as_ref().and_then(|to| {
                let at = found.iter().position(|q| &q.name == to)?;
                // As many times as the log went round, and once more.
                Some((id_of[at].clone(), p.sections.len() as u32 + 1))
            }),
        })
        .collect();
    Draft {
        name: name.to_string(),
        description: format!("Codified from the session log {:?}", log.front.session_id),
        phases,
    }
}

/// A question a person answered in the phase makes it a human wait;
/// anything else is an agent phase.
fn step(log: &SessionLog, p: &LogPhase) -> Step {
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
        .map(|s| crate::agent_stream::shorten(s, 600))
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
    for p in &d.phases {
        out.push_str(&format!(
            "\n# from the heading {:?}\n[[phase]]\nid = {}\n",
            p.heading,
            q(&p.id)
        ));
        match &p.step {
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
