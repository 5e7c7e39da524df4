//! A person's comments on a task's or an agent instance's work: each on a
//! line of a file of its diff (line 0: the file as a whole). They are kept
//! in the store until they reach the agent: a task's in the prompt and
//! brief of its next phase that passes, an instance's as the feedback of
//! its next turn. Pure: checking what a person wrote, and the text the
//! agent is given.

use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

/// The longest comment, in bytes.
pub const MAX_BODY: usize = 10_000;

/// One comment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Comment {
    pub id: String,
    /// What it is on: `task:<id>` or `instance:<id>`.
    pub target: String,
    /// The file of the diff, as the diff names it.
    pub path: String,
    /// The line of the file's new side (0: the file as a whole).
    pub line: u32,
    pub body: String,
    pub by: String,
    pub created_at: Timestamp,
    /// Where it reached the agent: a phase attempt or a turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered: Option<Delivered>,
}

/// Where and when a comment reached the agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delivered {
    pub to: String,
    pub at: Timestamp,
}

pub fn task_target(task: &str) -> String {
    format!("task:{task}")
}

pub fn instance_target(instance: &str) -> String {
    format!("instance:{instance}")
}

/// What is wrong with a comment a person wrote, if anything.
pub fn check(path: &str, body: &str) -> Result<(), String> {
    if body.trim().is_empty() {
        return Err("the comment is empty: say what the agent should change".into());
    }
    if body.len() > MAX_BODY {
        return Err(format!(
            "the comment is {} bytes, more than {MAX_BODY}: keep it shorter",
            body.len()
        ));
    }
    if path.trim().is_empty() || path.contains('\0') || path.len() > 4096 {
        return Err("the comment names no file of the diff (path)".into());
    }
    Ok(())
}

/// The comments as the agent reads them, in its prompt or its brief.
pub fn section(comments: &[Comment]) -> String {
    if comments.is_empty() {
        return String::new();
    }
    let mut s = String::from("## A person's comments on your work\n\n");
    s.push_str("Address each of these in this step:\n\n");
    for c in comments {
        let place = if c.line == 0 {
            format!("`{}`", c.path)
        } else {
            format!("`{}` line {}", c.path, c.line)
        };
        let body = c.body.trim().replace('\n', "\n  ");
        s.push_str(&format!("- {place} ({}): {body}\n", c.by));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(path: &str, line: u32, body: &str) -> Comment {
        Comment {
            id: "c-1".into(),
            target: task_target("t"),
            path: path.into(),
            line,
            body: body.into(),
            by: "ana".into(),
            created_at: Timestamp(0),
            delivered: None,
        }
    }

    #[test]
    fn comments_are_checked_and_read_as_a_list_the_agent_can_act_on() {
        assert!(check("src/a.rs", " ").unwrap_err().contains("empty"));
        assert!(check("", "fix it").unwrap_err().contains("no file"));
        assert!(
            check("a", &"x".repeat(MAX_BODY + 1))
                .unwrap_err()
                .contains("shorter")
        );
        assert!(check("src/a.rs", "rename it").is_ok());
        let s = section(&[
            c("src/a.rs", 3, "name it parse_line\nnot parse"),
            c("README.md", 0, "say why"),
        ]);
        assert!(s.starts_with("## A person's comments on your work"), "{s}");
        assert!(
            s.contains("- `src/a.rs` line 3 (ana): name it parse_line\n  not parse\n"),
            "{s}"
        );
        assert!(s.contains("- `README.md` (ana): say why\n"), "{s}");
        assert_eq!(section(&[]), "");
    }
}
