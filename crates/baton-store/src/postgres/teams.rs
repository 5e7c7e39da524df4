//! [`TeamStore`] for PostgreSQL: the same tables as SQLite's. A journal
//! commit locks its team's row and checks the journal's end; a mailbox
//! append takes the next `seq` from the team's row (its lock serialises
//! appends, and a rolled-back append gives its number back, so `seq` stays
//! gapless); the store's clock is the database server's, the same for every
//! machine. Each operation is safe to retry after a lost connection.

use super::PgStore;
use super::conn::{Fail, in_tx};
use crate::teams::{
    MessageQuery, MessageRow, TeamStore, json, message_of, payload, record_of, team_of,
    test_offset_ms,
};
use crate::{Error, Result};
use baton_core::Timestamp;
use baton_core::team::{Message, NewMessage, Presence, Record, Team};

const NOW: &str = "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint";
const CREATE: &str = "INSERT INTO teams (id, status, last_seq, msg_seq, updated_at, data)
     VALUES ($1, $2, $3, 0, $4, $5) ON CONFLICT (id) DO NOTHING";
const INSERT_EVENT: &str =
    "INSERT INTO team_events (team_id, seq, ts, payload) VALUES ($1, $2, $3, $4)";
const ONE: &str = "SELECT data FROM teams WHERE id = $1";
const ALL: &str = "SELECT id, data FROM teams ORDER BY id";
const LOCK_TEAM: &str = "SELECT last_seq FROM teams WHERE id = $1 FOR UPDATE";
const FIRST_EVENT: &str = "SELECT payload FROM team_events WHERE team_id = $1 AND seq = $2";
const UPDATE: &str =
    "UPDATE teams SET status = $2, last_seq = $3, updated_at = $4, data = $5 WHERE id = $1";
const RECORDS: &str = "SELECT seq, ts, payload FROM team_events
     WHERE team_id = $1 AND seq > $2 ORDER BY seq LIMIT $3";
const BY_MSG_ID: &str = "SELECT seq, msg_id, sender, recipient, ts, kind, subject, body
     FROM team_messages WHERE team_id = $1 AND msg_id = $2";
const LOCK_MAILBOX: &str = "SELECT msg_seq FROM teams WHERE id = $1 FOR UPDATE";
const NEXT_SEQ: &str = "UPDATE teams SET msg_seq = msg_seq + 1 WHERE id = $1 RETURNING msg_seq";
const INSERT_MESSAGE: &str = "INSERT INTO team_messages
     (team_id, seq, msg_id, sender, recipient, ts, kind, subject, body)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)";
/// Which messages a query reads (after `$2`, for `$3`, unacknowledged by
/// it when `$4`).
macro_rules! messages_where {
    () => {
        "SELECT seq, msg_id, sender, recipient, ts, kind, subject, body
         FROM team_messages m WHERE team_id = $1 AND seq > $2
           AND ($3::text IS NULL OR ((recipient = $3 OR recipient = '*') AND sender <> $3))
           AND (NOT $4 OR NOT EXISTS (SELECT 1 FROM team_acks a
                WHERE a.team_id = m.team_id AND a.seq = m.seq AND a.name = $3))"
    };
}
const OLDEST: &str = concat!(messages_where!(), " ORDER BY seq ASC LIMIT $5");
const NEWEST: &str = concat!(messages_where!(), " ORDER BY seq DESC LIMIT $5");
const ACKS: &str =
    "SELECT seq, name FROM team_acks WHERE team_id = $1 AND seq = ANY($2) ORDER BY seq, name";
const UNREAD: &str = "SELECT COUNT(*) FROM (SELECT 1 FROM team_messages m
     WHERE team_id = $1 AND recipient IN ($2, '*') AND sender <> $2
       AND NOT EXISTS (SELECT 1 FROM team_acks a
            WHERE a.team_id = m.team_id AND a.seq = m.seq AND a.name = $2)
     LIMIT $3) AS unread";
const SET_SEQ: &str = "UPDATE teams SET msg_seq = $2 WHERE id = $1";
const ACK_ONE: &str =
    "INSERT INTO team_acks (team_id, seq, name) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING";
const COUNT: &str = "SELECT msg_seq FROM teams WHERE id = $1";
const ACK: &str = "INSERT INTO team_acks (team_id, seq, name)
     SELECT $1, $2, $3 WHERE EXISTS (SELECT 1 FROM team_messages WHERE team_id = $1 AND seq = $2)
     ON CONFLICT DO NOTHING";
const EXISTS: &str = "SELECT 1 FROM teams WHERE id = $1";
const PRESENCE: &str = "SELECT seq, sent_at, received_at FROM team_presence
     WHERE team_id = $1 AND name = $2 FOR UPDATE";
const PUT_PRESENCE: &str = "INSERT INTO team_presence (team_id, name, seq, sent_at, received_at)
     VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (team_id, name) DO UPDATE SET seq = excluded.seq,
       sent_at = excluded.sent_at, received_at = excluded.received_at";
const PRESENCES: &str = "SELECT name, seq, sent_at, received_at FROM team_presence
     WHERE team_id = $1 ORDER BY name";

fn message_row(r: &postgres::Row) -> MessageRow {
    (
        r.get(0),
        r.get(1),
        r.get(2),
        r.get(3),
        r.get(4),
        r.get(5),
        r.get(6),
        r.get(7),
    )
}

fn limit(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl TeamStore for PgStore {
    fn store_now(&self) -> Result<Timestamp> {
        let ms = self.run(|conn, _| Ok(conn.db().query_one(NOW, &[])?.get::<_, i64>(0)))?;
        Ok(Timestamp(ms + test_offset_ms()))
    }

    fn create_team(&self, team: &Team, records: &[Record]) -> Result<bool> {
        let id = team.id.as_str();
        let data = json(team);
        let payloads: Vec<String> = records.iter().map(payload).collect();
        self.run(|conn, retrying| {
            in_tx(conn, |db| {
                let n = db.execute(
                    CREATE,
                    &[
                        &id,
                        &team.status.as_str(),
                        &(team.last_seq as i64),
                        &team.updated_at.millis(),
                        &data,
                    ],
                )?;
                if n == 0 {
                    // A retry whose first attempt landed finds its own records.
                    let mine = retrying
                        && records.first().is_some_and(|r| {
                            db.query_opt(FIRST_EVENT, &[&id, &(r.seq as i64)])
                                .ok()
                                .flatten()
                                .is_some_and(|row| row.get::<_, &str>(0) == payloads[0])
                        });
                    return Ok(mine);
                }
                for (r, p) in records.iter().zip(&payloads) {
                    db.execute(INSERT_EVENT, &[&id, &(r.seq as i64), &r.ts.millis(), p])?;
                }
                Ok(true)
            })
        })
    }

    fn team(&self, id: &str) -> Result<Option<Team>> {
        let row = self.run(|conn, _| Ok(conn.db().query_opt(ONE, &[&id])?))?;
        row.map(|r| team_of(id, r.get::<_, &str>(0))).transpose()
    }

    fn teams(&self) -> Result<Vec<Team>> {
        let rows = self.run(|conn, _| Ok(conn.db().query(ALL, &[])?))?;
        rows.iter()
            .map(|r| team_of(r.get::<_, &str>(0), r.get::<_, &str>(1)))
            .collect()
    }

    fn commit_team(&self, expected: u64, team: &Team, records: &[Record]) -> Result<()> {
        let id = team.id.as_str();
        let data = json(team);
        let payloads: Vec<String> = records.iter().map(payload).collect();
        self.run(|conn, retrying| {
            in_tx(conn, |db| {
                let Some(row) = db.query_opt(LOCK_TEAM, &[&id])? else {
                    return Err(Fail::Store(Error::NoTeam(id.to_string())));
                };
                let found = row.get::<_, i64>(0) as u64;
                if retrying
                    && let Some(first) = records.first()
                    && found >= first.seq
                    && db
                        .query_opt(FIRST_EVENT, &[&id, &(first.seq as i64)])?
                        .is_some_and(|r| r.get::<_, &str>(0) == payloads[0])
                {
                    // The lost attempt landed.
                    return Ok(());
                }
                if found != expected || records.first().is_some_and(|r| r.seq != expected + 1) {
                    return Err(Fail::Store(Error::TeamChanged {
                        team: id.to_string(),
                        expected,
                        found,
                    }));
                }
                for (r, p) in records.iter().zip(&payloads) {
                    db.execute(INSERT_EVENT, &[&id, &(r.seq as i64), &r.ts.millis(), p])?;
                }
                db.execute(
                    UPDATE,
                    &[
                        &id,
                        &team.status.as_str(),
                        &(team.last_seq as i64),
                        &team.updated_at.millis(),
                        &data,
                    ],
                )?;
                Ok(())
            })
        })
    }

    fn team_records(&self, id: &str, after: u64, n: usize) -> Result<Vec<Record>> {
        let rows = self.run(|conn, _| {
            Ok(conn
                .db()
                .query(RECORDS, &[&id, &(after as i64), &limit(n)])?)
        })?;
        rows.iter()
            .map(|r| record_of(id, r.get(0), r.get(1), r.get::<_, &str>(2)))
            .collect()
    }

    fn send_message(&self, team: &str, m: &NewMessage) -> Result<(Message, bool)> {
        let now = self.store_now()?;
        let (row, new) = self.run(|conn, _| {
            in_tx(conn, |db| {
                // The team's row first: its lock serialises appends (and a
                // message sent twice at once).
                if db.query_opt(LOCK_MAILBOX, &[&team])?.is_none() {
                    return Err(Fail::Store(Error::NoTeam(team.to_string())));
                }
                if let Some(existing) = db.query_opt(BY_MSG_ID, &[&team, &m.msg_id])? {
                    return Ok((message_row(&existing), false));
                }
                let seq: i64 = db.query_one(NEXT_SEQ, &[&team])?.get(0);
                db.execute(
                    INSERT_MESSAGE,
                    &[
                        &team,
                        &seq,
                        &m.msg_id,
                        &m.from,
                        &m.to,
                        &now.millis(),
                        &m.kind.as_str(),
                        &m.subject,
                        &m.body,
                    ],
                )?;
                let row: MessageRow = (
                    seq,
                    m.msg_id.clone(),
                    m.from.clone(),
                    m.to.clone(),
                    now.millis(),
                    m.kind.as_str().to_string(),
                    m.subject.clone(),
                    m.body.clone(),
                );
                Ok((row, true))
            })
        })?;
        let acks = if new {
            Vec::new()
        } else {
            self.acks(team, &[row.0])?
                .remove(&row.0)
                .unwrap_or_default()
        };
        Ok((message_of(row, acks)?, new))
    }

    fn messages(&self, team: &str, q: &MessageQuery) -> Result<Vec<Message>> {
        let sql = if q.newest { NEWEST } else { OLDEST };
        let rows = self.run(|conn, _| {
            Ok(conn.db().query(
                sql,
                &[&team, &(q.after as i64), &q.to, &q.unacked, &limit(q.limit)],
            )?)
        })?;
        let rows: Vec<MessageRow> = rows.iter().map(message_row).collect();
        let seqs: Vec<i64> = rows.iter().map(|r| r.0).collect();
        let mut acks = self.acks(team, &seqs)?;
        let mut out = rows
            .into_iter()
            .map(|r| {
                let a = acks.remove(&r.0).unwrap_or_default();
                message_of(r, a)
            })
            .collect::<Result<Vec<_>>>()?;
        if q.newest {
            out.reverse();
        }
        Ok(out)
    }

    fn message_count(&self, team: &str) -> Result<u64> {
        let row = self.run(|conn, _| Ok(conn.db().query_opt(COUNT, &[&team])?))?;
        Ok(row.map_or(0, |r| r.get::<_, i64>(0)) as u64)
    }

    fn unread_count(&self, team: &str, name: &str, up_to: u64) -> Result<u64> {
        let up_to = up_to as i64;
        let n = self.run(|conn, _| {
            Ok(conn
                .db()
                .query_one(UNREAD, &[&team, &name, &up_to])?
                .get::<_, i64>(0))
        })?;
        Ok(n as u64)
    }

    fn import_messages(&self, team: &str, messages: &[Message]) -> Result<()> {
        self.run(|conn, _| {
            in_tx(conn, |db| {
                let Some(row) = db.query_opt(LOCK_MAILBOX, &[&team])? else {
                    return Err(Fail::Store(Error::NoTeam(team.to_string())));
                };
                if row.get::<_, i64>(0) > 0 {
                    return Err(Fail::Store(Error::Corrupt(format!(
                        "team {team} already has messages; a copy's go into an empty mailbox"
                    ))));
                }
                let mut last = 0i64;
                for m in messages {
                    let seq = m.seq as i64;
                    db.execute(
                        INSERT_MESSAGE,
                        &[
                            &team,
                            &seq,
                            &m.msg_id,
                            &m.from,
                            &m.to,
                            &m.ts_ms,
                            &m.kind.as_str(),
                            &m.subject,
                            &m.body,
                        ],
                    )?;
                    for who in &m.acked_by {
                        db.execute(ACK_ONE, &[&team, &seq, who])?;
                    }
                    last = last.max(seq);
                }
                db.execute(SET_SEQ, &[&team, &last])?;
                Ok(())
            })
        })
    }

    fn ack_messages(&self, team: &str, by: &str, seqs: &[u64]) -> Result<usize> {
        self.run(|conn, _| {
            in_tx(conn, |db| {
                let mut n = 0;
                for s in seqs {
                    n += db.execute(ACK, &[&team, &(*s as i64), &by])? as usize;
                }
                Ok(n)
            })
        })
    }

    fn heartbeat(
        &self,
        team: &str,
        name: &str,
        seq: Option<u64>,
        sent_at: Option<Timestamp>,
    ) -> Result<Presence> {
        let sent = sent_at.map(|t| t.millis());
        self.run(|conn, _| {
            in_tx(conn, |db| {
                if db.query_opt(EXISTS, &[&team])?.is_none() {
                    return Err(Fail::Store(Error::NoTeam(team.to_string())));
                }
                let now = db.query_one(NOW, &[])?.get::<_, i64>(0) + test_offset_ms();
                let last = db.query_opt(PRESENCE, &[&team, &name])?;
                let last: Option<(i64, Option<i64>, i64)> =
                    last.map(|r| (r.get(0), r.get(1), r.get(2)));
                let next = seq.unwrap_or_else(|| last.map_or(1, |l| l.0 as u64 + 1));
                if let Some((s, sent, received)) = last
                    && next <= s as u64
                {
                    return Ok(Presence {
                        name: name.to_string(),
                        seq: s as u64,
                        sent_at: sent.map(Timestamp),
                        received_at: Timestamp(received),
                    });
                }
                db.execute(PUT_PRESENCE, &[&team, &name, &(next as i64), &sent, &now])?;
                Ok(Presence {
                    name: name.to_string(),
                    seq: next,
                    sent_at,
                    received_at: Timestamp(now),
                })
            })
        })
    }

    fn presences(&self, team: &str) -> Result<Vec<Presence>> {
        let rows = self.run(|conn, _| Ok(conn.db().query(PRESENCES, &[&team])?))?;
        Ok(rows
            .iter()
            .map(|r| Presence {
                name: r.get(0),
                seq: r.get::<_, i64>(1) as u64,
                sent_at: r.get::<_, Option<i64>>(2).map(Timestamp),
                received_at: Timestamp(r.get(3)),
            })
            .collect())
    }
}

impl PgStore {
    /// Who acknowledged each of `seqs`.
    fn acks(
        &self,
        team: &str,
        seqs: &[i64],
    ) -> Result<std::collections::HashMap<i64, Vec<String>>> {
        let mut out: std::collections::HashMap<i64, Vec<String>> = Default::default();
        if seqs.is_empty() {
            return Ok(out);
        }
        let rows = self.run(|conn, _| Ok(conn.db().query(ACKS, &[&team, &seqs])?))?;
        for r in rows {
            out.entry(r.get(0)).or_default().push(r.get(1));
        }
        Ok(out)
    }
}
