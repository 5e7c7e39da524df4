//! Plays: a list of tasks run one after another with one workflow (seed
//! 000), with a durable marker of the task the play is at and the tasks it
//! finished, so a play killed at task 5 continues at task 5. Pure: the
//! tasks file read, and the record the engine keeps in the store.

use crate::time::Timestamp;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One task of a play.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlayTask {
    pub id: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

/// A play as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Play {
    /// The tasks file's name without its extension.
    pub name: String,
    pub file: String,
    pub workflow: String,
    /// Read from the file when the play started (the file may change or
    /// go away afterwards).
    pub tasks: Vec<PlayTask>,
    /// The index of the task the play is at.
    pub next: usize,
    /// The tasks it finished, in order.
    pub done: Vec<String>,
    /// `running`, `stopped` (a task failed, waits or was interrupted) or
    /// `done`.
    pub status: String,
    /// Why it stopped.
    pub stopped: Option<String>,
    pub started_at: Timestamp,
    pub updated_at: Timestamp,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TomlFile {
    #[serde(default)]
    task: Vec<TomlTask>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TomlTask {
    id: Option<String>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    labels: BTreeMap<String, String>,
}

/// Reads a tasks file: TOML (`[[task]]` tables with `id`, `description`,
/// `labels`) when its name ends in `.toml`, else JSON Lines (an object per
/// line with the same keys). A task without an id gets `<name>-<n>`.
/// `Err` says what is wrong, with the line.
pub fn parse_tasks(name: &str, file_name: &str, text: &str) -> Result<Vec<PlayTask>, String> {
    let raw: Vec<TomlTask> = if file_name.ends_with(".toml") {
        toml::from_str::<TomlFile>(text)
            .map_err(|e| {
                let (line, col) = crate::workflow::line_col(text, e.span().map_or(0, |s| s.start));
                format!("{file_name}:{line}:{col}: {}", e.message().trim())
            })?
            .task
    } else {
        let mut all = Vec::new();
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            #[derive(Deserialize)]
            #[serde(deny_unknown_fields)]
            struct Line {
                id: Option<String>,
                #[serde(default)]
                description: String,
                #[serde(default)]
                labels: BTreeMap<String, String>,
            }
            let l: Line =
                serde_json::from_str(line).map_err(|e| format!("{file_name}:{}: {e}", n + 1))?;
            all.push(TomlTask {
                id: l.id,
                description: l.description,
                labels: l.labels,
            });
        }
        all
    };
    if raw.is_empty() {
        return Err(format!("{file_name} lists no task"));
    }
    let mut seen = std::collections::BTreeSet::new();
    raw.into_iter()
        .enumerate()
        .map(|(i, t)| {
            let id = t.id.unwrap_or_else(|| format!("{name}-{}", i + 1));
            crate::TaskId::parse(&id).map_err(|e| format!("{file_name}: task {}: {e}", i + 1))?;
            if !seen.insert(id.clone()) {
                return Err(format!(
                    "{file_name}: task {}: the id {id} is listed twice",
                    i + 1
                ));
            }
            Ok(PlayTask {
                id,
                description: t.description,
                labels: t.labels,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_and_json_lines_read_alike() {
        let toml = "[[task]]\nid = \"t1\"\ndescription = \"Add the widget\"\nlabels = { issue = \"42\" }\n\n[[task]]\ndescription = \"Test it\"\n";
        let a = parse_tasks("sprint", "sprint.toml", toml).unwrap();
        let jsonl = "{\"id\": \"t1\", \"description\": \"Add the widget\", \"labels\": {\"issue\": \"42\"}}\n\n{\"description\": \"Test it\"}\n";
        let b = parse_tasks("sprint", "sprint.jsonl", jsonl).unwrap();
        assert_eq!(a, b);
        assert_eq!(a[1].id, "sprint-2");
        assert_eq!(a[0].labels["issue"], "42");
    }

    #[test]
    fn mistakes_name_the_line() {
        let e = parse_tasks("s", "s.jsonl", "{\"id\": \"a\"}\n{\"id\": 5}\n").unwrap_err();
        assert!(e.starts_with("s.jsonl:2:"), "{e}");
        let e = parse_tasks("s", "s.toml", "[[task]]\nid = \"a\"\nwho = 1\n").unwrap_err();
        assert!(e.starts_with("s.toml:3:"), "{e}");
        let e = parse_tasks("s", "s.jsonl", "{\"id\": \"a\"}\n{\"id\": \"a\"}\n").unwrap_err();
        assert!(e.contains("listed twice"), "{e}");
        let e = parse_tasks("s", "s.jsonl", "{\"id\": \"no spaces\"}\n").unwrap_err();
        assert!(e.contains("task 1"), "{e}");
        assert!(
            parse_tasks("s", "s.toml", "")
                .unwrap_err()
                .contains("no task")
        );
    }
}
