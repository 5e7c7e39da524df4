//! The mailbox: sending (idempotent by `msg_id`; a message to a teammate
//! who is away waits for it), a member's inbox (what is addressed to it or
//! to everyone, not yet acknowledged, in `seq` order), acknowledging (only
//! what is addressed to the member), and the whole mailbox for reading.
//! Sending and reading are heartbeats.

use super::Teams;
use crate::error::{Error, Result};
use baton_core::team::{self, Message, NewMessage};
use baton_store::MessageQuery;

impl Teams<'_> {
    /// Sends `m`; the message as stored and whether it is new.
    pub fn send(&self, id: &str, m: &NewMessage) -> Result<(Message, bool)> {
        let t = self.get(id)?;
        if t.status == team::TeamStatus::Completed {
            return Err(
                Error::bad_input(format!("team {id} is completed and read-only"))
                    .hint(format!("read what it did with `baton team review {id}`")),
            );
        }
        for name in [&m.from, &m.to] {
            if name != team::LEAD
                && name != team::EVERYONE
                && !t.teammates.contains_key(name.as_str())
            {
                let names: Vec<&str> = t.teammates.keys().map(String::as_str).collect();
                return Err(
                    Error::bad_input(format!("team {id} has no member {name:?}")).hint(format!(
                        "its members are: lead, {} (and `*` for everyone)",
                        names.join(", ")
                    )),
                );
            }
        }
        if m.msg_id.is_empty() || m.msg_id.len() > 200 {
            return Err(Error::bad_input("a message id must be 1 to 200 characters")
                .hint("leave it out and baton makes one"));
        }
        self.touch(id, &m.from)?;
        let m = self.eng.redacted(m.clone());
        let sent = self.eng.store.send_message(id, &m)?;
        self.eng.crash_point("message-sent", id);
        self.eng.team_mail_sent(&t);
        Ok(sent)
    }

    /// `name`'s inbox: what is addressed to it (or to everyone) that it has
    /// not acknowledged, oldest first.
    pub fn inbox(&self, id: &str, name: &str, limit: usize) -> Result<Vec<Message>> {
        self.touch(id, name)?;
        Ok(self.eng.store.messages(
            id,
            &MessageQuery {
                to: Some(name.into()),
                unacked: true,
                limit,
                ..Default::default()
            },
        )?)
    }

    /// The mailbox after `after`, oldest first (or the newest `limit`).
    pub fn messages(
        &self,
        id: &str,
        after: u64,
        limit: usize,
        newest: bool,
    ) -> Result<Vec<Message>> {
        self.get(id)?;
        Ok(self.eng.store.messages(
            id,
            &MessageQuery {
                after,
                limit,
                newest,
                ..Default::default()
            },
        )?)
    }

    /// `name` acknowledges messages `seqs`; how many were new to it. Only
    /// what is addressed to it (or to everyone, from someone else) can be:
    /// otherwise nothing is acknowledged. A message's recipient never
    /// changes, so checking first is not a race.
    pub fn ack(&self, id: &str, name: &str, seqs: &[u64]) -> Result<usize> {
        self.touch(id, name)?;
        let mut wanted: Vec<u64> = seqs.to_vec();
        wanted.sort_unstable();
        wanted.dedup();
        for &seq in &wanted {
            let m = self
                .eng
                .store
                .messages(
                    id,
                    &MessageQuery {
                        after: seq.saturating_sub(1),
                        limit: 1,
                        ..Default::default()
                    },
                )?
                .into_iter()
                .find(|m| m.seq == seq);
            let inbox = format!(
                "`baton team msg ls {id} --inbox {name}` lists what {name} has to acknowledge"
            );
            let Some(m) = m else {
                return Err(Error::bad_input(format!(
                    "team {id} has no message #{seq}; nothing was acknowledged"
                ))
                .hint(inbox));
            };
            if m.from == name && m.to == team::EVERYONE {
                return Err(Error::bad_input(format!(
                    "message #{seq} is {name}'s own, to everyone; nothing was acknowledged"
                ))
                .hint(inbox));
            }
            if m.to != name && m.to != team::EVERYONE {
                return Err(Error::bad_input(format!(
                    "message #{seq} is addressed to {}, not {name}: only {} can acknowledge it; nothing was acknowledged",
                    m.to, m.to
                ))
                .hint(inbox));
            }
        }
        let acked = self.eng.store.ack_messages(id, name, &wanted)?;
        self.eng.crash_point("message-acked", id);
        Ok(acked)
    }
}
