//! What people add to a task's story, placed in it by time: the inbox
//! items its agents raised (with their answers) and a person's comments
//! on its work, each a callout.

use super::{Block, Builder, Callout, kind};
use crate::comment::Comment;
use crate::inbox::{InboxItem, ItemKind};

/// What people add to a task's story: an inbox item, a comment.
pub(super) enum Remark<'a> {
    Item(&'a InboxItem),
    Comment(&'a Comment),
}

impl Remark<'_> {
    pub(super) fn at(&self) -> crate::time::Timestamp {
        match self {
            Remark::Item(i) => i.created_at,
            Remark::Comment(c) => c.created_at,
        }
    }
}

impl Builder {
    pub(super) fn remark(&mut self, r: Remark<'_>) {
        match r {
            Remark::Item(i) => self.item(i),
            Remark::Comment(c) => {
                let place = if c.line == 0 {
                    c.path.clone()
                } else {
                    format!("{}:{}", c.path, c.line)
                };
                let delivered = c
                    .delivered
                    .as_ref()
                    .map(|d| format!("\n\nreached the agent in {}", d.to))
                    .unwrap_or_default();
                let callout = Callout::new(
                    kind::USER,
                    format!("{} commented on {place}", c.by),
                    &format!("{}{delivered}", c.body),
                );
                self.blocks().push(Block::Callout(callout));
            }
        }
    }

    /// An inbox item, at the end of the last section of its phase, and its
    /// answer when it has one.
    fn item(&mut self, i: &InboxItem) {
        let at = i
            .phase
            .as_deref()
            .and_then(|p| self.log.sections.iter().rposition(|s| s.name == p));
        let (k, mut body): (&str, Vec<String>) = match i.kind {
            ItemKind::Decision => {
                let mut b: Vec<String> = i.options.iter().map(|o| format!("- {o}")).collect();
                b.push(String::new());
                b.push(format!("answer: `baton inbox answer {} <choice>`", i.id));
                (kind::DECISION_NEEDED, b)
            }
            ItemKind::Approval => (
                kind::APPROVAL_REQUIRED,
                vec![format!(
                    "answer: `baton inbox approve {}` or `baton inbox deny {} --reason …`",
                    i.id, i.id
                )],
            ),
            ItemKind::Notify if i.task_complete => (kind::TASK_COMPLETE, Vec::new()),
            ItemKind::Notify => (kind::NOTE, Vec::new()),
        };
        body.insert(0, format!("from {} · item {}", i.raised_by, i.id));
        let mut blocks = vec![Block::Callout(Callout::new(
            k,
            i.text.clone(),
            &body.join("\n"),
        ))];
        if let Some(a) = &i.answer {
            blocks.push(Block::Callout(Callout::new(
                kind::USER,
                format!("{} answered {}: {}", a.by, i.id, a.choice),
                a.reason.as_deref().unwrap_or(""),
            )));
        }
        let target = match at {
            Some(n) => &mut self.log.sections[n].blocks,
            None => self.blocks(),
        };
        target.extend(blocks);
    }
}
