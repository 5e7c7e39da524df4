//! Token-aware delegation: a session's tokens per phase (counted by the
//! caller's tokenizer), split into parts at phase boundaries when the
//! whole is over a threshold, and each phase routed to a fast model
//! (routine work) or a strong one (decisions).

use super::{Block, SessionLog, kind, phases, render};
use serde::Serialize;

/// The rules (`[sessions]` of the project's config).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rules {
    pub threshold: u64,
    pub fast: Option<String>,
    pub strong: Option<String>,
    pub decision_words: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PhasePlan {
    pub phase: String,
    pub tokens: u64,
    /// "fast" or "strong".
    pub route: &'static str,
    /// The agent or model that route names, if the config names one.
    pub to: Option<String>,
    pub why: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Plan {
    /// The whole log's tokens (its frontmatter and title included).
    pub total: u64,
    pub threshold: u64,
    /// Consecutive phases, each part at most the threshold unless one
    /// phase alone is over it.
    pub parts: Vec<Vec<PhasePlan>>,
}

/// The plan of `log`, counting tokens with `count`.
pub fn plan(log: &SessionLog, count: &dyn Fn(&str) -> u64, rules: &Rules) -> Plan {
    let total = count(&render(log));
    let mut list = Vec::new();
    for p in phases(log) {
        let text: String = p
            .sections
            .iter()
            .map(|&i| super::render::section(&log.sections[i]))
            .collect();
        let tokens = count(&text);
        let asked = p.sections.iter().any(|&i| {
            log.sections[i].blocks.iter().any(|b| {
                matches!(b, Block::Callout(c) if [kind::DECISION, kind::DECISION_NEEDED, kind::APPROVAL_REQUIRED].contains(&c.kind.as_str()))
            })
        });
        let lower = p.name.to_lowercase();
        let word = rules
            .decision_words
            .iter()
            .find(|w| lower.contains(&w.to_lowercase()));
        let (route, to, why) = match (word, asked) {
            (Some(w), _) => ("strong", &rules.strong, format!("its name says {w}")),
            (None, true) => (
                "strong",
                &rules.strong,
                "decisions were made in it".to_string(),
            ),
            (None, false) => ("fast", &rules.fast, "routine work".to_string()),
        };
        list.push(PhasePlan {
            phase: p.name,
            tokens,
            route,
            to: to.clone(),
            why,
        });
    }
    let mut parts: Vec<Vec<PhasePlan>> = Vec::new();
    let mut size = 0;
    for p in list {
        let fits = parts
            .last()
            .is_some_and(|_| size + p.tokens <= rules.threshold);
        if !fits {
            parts.push(Vec::new());
            size = 0;
        }
        size += p.tokens;
        parts.last_mut().expect("a part").push(p);
    }
    if total <= rules.threshold && parts.len() > 1 {
        parts = vec![parts.into_iter().flatten().collect()];
    }
    Plan {
        total,
        threshold: rules.threshold,
        parts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session_log::{Callout, Section};

    #[test]
    fn phases_are_split_at_the_threshold_and_routed_by_kind() {
        let mut log = SessionLog::default();
        for (name, words) in [("analyze", 30), ("plan", 10), ("build", 50), ("test", 20)] {
            let mut s = Section {
                name: name.into(),
                ..Section::default()
            };
            s.blocks.push(Block::Prose("w ".repeat(words)));
            if name == "test" {
                s.blocks.push(Block::Callout(Callout::new(
                    kind::DECISION,
                    "skip the flaky one",
                    "",
                )));
            }
            log.sections.push(s);
        }
        let words = |t: &str| t.split_whitespace().count() as u64;
        let rules = Rules {
            threshold: 60,
            fast: Some("haiku".into()),
            strong: Some("opus".into()),
            decision_words: vec!["plan".into()],
        };
        let p = plan(&log, &words, &rules);
        let shape: Vec<Vec<(&str, &str)>> = p
            .parts
            .iter()
            .map(|part| part.iter().map(|x| (x.phase.as_str(), x.route)).collect())
            .collect();
        assert_eq!(
            shape,
            [
                vec![("analyze", "fast"), ("plan", "strong")],
                vec![("build", "fast")],
                vec![("test", "strong")]
            ]
        );
        assert_eq!(p.parts[0][1].to.as_deref(), Some("opus"));
        assert_eq!(p.parts[2][0].why, "decisions were made in it");
        // Under the threshold: one part.
        let one = plan(
            &log,
            &words,
            &Rules {
                threshold: 10_000,
                ..rules
            },
        );
        assert_eq!(one.parts.len(), 1);
    }
}
