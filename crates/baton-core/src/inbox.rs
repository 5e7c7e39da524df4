//! The inbox: what waits on a person, across all sessions. Agents raise
//! items through baton's MCP tools (`notify`, `request_decision`,
//! `request_approval`); a task waiting in a `wait = { human }` phase is an
//! item too. Each is answered at most once, with who answered journaled;
//! the rules of a valid answer are here.

use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemKind {
    /// Something to know; acknowledged, not decided.
    Notify,
    /// A question with options (`request_decision`, a `wait = { human }`).
    Decision,
    /// An action to approve or deny (`request_approval`).
    Approval,
}

impl ItemKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ItemKind::Notify => "notify",
            ItemKind::Decision => "decision",
            ItemKind::Approval => "approval",
        }
    }
}

/// One item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InboxItem {
    pub id: String,
    /// Who raised it and about what: the same question raised again (an
    /// agent that came back after a crash) is the same item.
    pub key: String,
    pub kind: ItemKind,
    /// The session (task) it belongs to.
    pub session: Option<String>,
    pub phase: Option<String>,
    /// The question, the action, or the message.
    pub text: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
    /// A notification that a task is complete (`notify` with
    /// `level = "task_complete"`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub task_complete: bool,
    /// Who raised it (an agent's name, `baton`).
    pub raised_by: String,
    pub created_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<Answer>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    /// The option chosen, `approved` or `denied`, or `acknowledged`.
    pub choice: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub by: String,
    pub at: Timestamp,
}

impl InboxItem {
    pub fn is_open(&self) -> bool {
        self.answer.is_none()
    }
}

/// The key of an item: who, where, what kind, and the text.
pub fn key(session: Option<&str>, phase: Option<&str>, kind: ItemKind, text: &str) -> String {
    format!(
        "{}/{}/{}/{}",
        session.unwrap_or("-"),
        phase.unwrap_or("-"),
        kind.as_str(),
        text.trim()
    )
}

/// `choice` as the answer of `item`: one of its options (any case), for
/// an approval `approved`/`denied`, for a notification anything. The
/// error says what would have been accepted.
pub fn check_answer(item: &InboxItem, choice: &str) -> Result<String, String> {
    if let Some(a) = &item.answer {
        return Err(format!(
            "item {} was answered already: {} by {}",
            item.id, a.choice, a.by
        ));
    }
    let choice = choice.trim();
    match item.kind {
        ItemKind::Notify => Ok("acknowledged".into()),
        ItemKind::Approval => match choice {
            "approved" | "approve" | "yes" => Ok("approved".into()),
            "denied" | "deny" | "no" => Ok("denied".into()),
            _ => Err(format!(
                "item {} asks for approval: approve it or deny it",
                item.id
            )),
        },
        ItemKind::Decision if item.options.is_empty() => {
            if choice.is_empty() {
                Err(format!("item {} needs an answer", item.id))
            } else {
                Ok(choice.to_string())
            }
        }
        ItemKind::Decision => item
            .options
            .iter()
            .find(|o| o.eq_ignore_ascii_case(choice))
            .cloned()
            .ok_or_else(|| {
                format!(
                    "{choice:?} is not an option of item {}: {}",
                    item.id,
                    item.options.join(", ")
                )
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(kind: ItemKind, options: &[&str]) -> InboxItem {
        InboxItem {
            id: "d1".into(),
            key: key(Some("t"), Some("p"), kind, "q"),
            kind,
            session: Some("t".into()),
            phase: Some("p".into()),
            text: "q".into(),
            options: options.iter().map(|s| s.to_string()).collect(),
            task_complete: false,
            raised_by: "claude".into(),
            created_at: Timestamp(0),
            answer: None,
        }
    }

    #[test]
    fn answers_must_fit_the_item_and_come_once() {
        let d = item(ItemKind::Decision, &["Merge", "Wait"]);
        assert_eq!(check_answer(&d, "merge").unwrap(), "Merge");
        assert!(
            check_answer(&d, "later")
                .unwrap_err()
                .contains("Merge, Wait")
        );
        let a = item(ItemKind::Approval, &[]);
        assert_eq!(check_answer(&a, "deny").unwrap(), "denied");
        assert!(check_answer(&a, "maybe").is_err());
        let mut n = item(ItemKind::Notify, &[]);
        assert_eq!(check_answer(&n, "").unwrap(), "acknowledged");
        n.answer = Some(Answer {
            choice: "acknowledged".into(),
            reason: None,
            by: "ana".into(),
            at: Timestamp(1),
        });
        assert!(
            check_answer(&n, "")
                .unwrap_err()
                .contains("answered already")
        );
    }
}
