//! [`TeamStore`] for SQLite: `teams`, `team_events`, `team_messages`,
//! `team_acks` and `team_presence`. Journal commits and mailbox appends run
//! in IMMEDIATE transactions (one writer at a time, so a message's `seq`
//! is the team's counter plus one, gapless); heartbeats are written with
//! `synchronous=NORMAL` (a presence lost to a power cut is sent again).

use super::SqliteStore;
use crate::teams::{
    MessageQuery, MessageRow, TeamStore, json, message_of, payload, record_of, team_of,
    test_offset_ms,
};
use crate::{Error, Result};
use baton_core::Timestamp;
use baton_core::team::{Message, NewMessage, Presence, Record, Team};
use rusqlite::{OptionalExtension, TransactionBehavior, params};

const MESSAGE_COLUMNS: &str = "seq, msg_id, sender, recipient, ts, kind, subject, body";

fn message_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<MessageRow> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
        r.get(6)?,
        r.get(7)?,
    ))
}

impl SqliteStore {
    fn acks(conn: &rusqlite::Connection, team: &str, seq: i64) -> Result<Vec<String>> {
        let mut stmt = conn.prepare_cached(
            "SELECT name FROM team_acks WHERE team_id = ?1 AND seq = ?2 ORDER BY name",
        )?;
        let rows = stmt.query_map(params![team, seq], |r| r.get::<_, String>(0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

impl TeamStore for SqliteStore {
    fn store_now(&self) -> Result<Timestamp> {
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        Ok(Timestamp(ms + test_offset_ms()))
    }

    fn create_team(&self, team: &Team, records: &[Record]) -> Result<bool> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let id = team.id.as_str();
        let inserted = tx.execute(
            "INSERT INTO teams (id, status, last_seq, msg_seq, updated_at, data)
             VALUES (?1, ?2, ?3, 0, ?4, ?5) ON CONFLICT (id) DO NOTHING",
            params![
                id,
                team.status.as_str(),
                team.last_seq as i64,
                team.updated_at.millis(),
                json(team)
            ],
        )?;
        if inserted == 0 {
            return Ok(false);
        }
        {
            let mut ins = tx.prepare_cached(
                "INSERT INTO team_events (team_id, seq, ts, payload) VALUES (?1, ?2, ?3, ?4)",
            )?;
            for r in records {
                ins.execute(params![id, r.seq as i64, r.ts.millis(), payload(r)])?;
            }
        }
        tx.commit()?;
        Ok(true)
    }

    fn team(&self, id: &str) -> Result<Option<Team>> {
        let conn = self.conn();
        let data: Option<String> = conn
            .prepare_cached("SELECT data FROM teams WHERE id = ?1")?
            .query_row([id], |r| r.get(0))
            .optional()?;
        data.map(|d| team_of(id, &d)).transpose()
    }

    fn teams(&self) -> Result<Vec<Team>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached("SELECT id, data FROM teams ORDER BY id")?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
        rows.map(|row| {
            let (id, data) = row?;
            team_of(&id, &data)
        })
        .collect()
    }

    fn commit_team(&self, expected: u64, team: &Team, records: &[Record]) -> Result<()> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let id = team.id.as_str();
        let found: Option<i64> = tx
            .query_row("SELECT last_seq FROM teams WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .optional()?;
        let Some(found) = found else {
            return Err(Error::NoTeam(id.to_string()));
        };
        if found as u64 != expected || records.first().is_some_and(|r| r.seq != expected + 1) {
            return Err(Error::TeamChanged {
                team: id.to_string(),
                expected,
                found: found as u64,
            });
        }
        {
            let mut ins = tx.prepare_cached(
                "INSERT INTO team_events (team_id, seq, ts, payload) VALUES (?1, ?2, ?3, ?4)",
            )?;
            for r in records {
                ins.execute(params![id, r.seq as i64, r.ts.millis(), payload(r)])?;
            }
        }
        tx.execute(
            "UPDATE teams SET status = ?2, last_seq = ?3, updated_at = ?4, data = ?5 WHERE id = ?1",
            params![
                id,
                team.status.as_str(),
                team.last_seq as i64,
                team.updated_at.millis(),
                json(team)
            ],
        )?;
        tx.commit()?;
        Ok(())
    }

    fn team_records(&self, id: &str, after: u64, limit: usize) -> Result<Vec<Record>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT seq, ts, payload FROM team_events WHERE team_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
        )?;
        let rows = stmt.query_map(
            params![id, after as i64, i64::try_from(limit).unwrap_or(i64::MAX)],
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                ))
            },
        )?;
        rows.map(|row| {
            let (seq, ts, p) = row?;
            record_of(id, seq, ts, &p)
        })
        .collect()
    }

    fn send_message(&self, team: &str, m: &NewMessage) -> Result<(Message, bool)> {
        let now = self.store_now()?;
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let existing = tx
            .prepare_cached(&format!(
                "SELECT {MESSAGE_COLUMNS} FROM team_messages WHERE team_id = ?1 AND msg_id = ?2"
            ))?
            .query_row(params![team, m.msg_id], message_row)
            .optional()?;
        if let Some(row) = existing {
            let acks = Self::acks(&tx, team, row.0)?;
            return Ok((message_of(row, acks)?, false));
        }
        let seq: Option<i64> = tx
            .query_row(
                "UPDATE teams SET msg_seq = msg_seq + 1 WHERE id = ?1 RETURNING msg_seq",
                [team],
                |r| r.get(0),
            )
            .optional()?;
        let Some(seq) = seq else {
            return Err(Error::NoTeam(team.to_string()));
        };
        tx.prepare_cached(
            "INSERT INTO team_messages (team_id, seq, msg_id, sender, recipient, ts, kind, subject, body)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )?
        .execute(params![
            team,
            seq,
            m.msg_id,
            m.from,
            m.to,
            now.millis(),
            m.kind.as_str(),
            m.subject,
            m.body
        ])?;
        tx.commit()?;
        Ok((
            Message {
                msg_id: m.msg_id.clone(),
                seq: seq as u64,
                from: m.from.clone(),
                to: m.to.clone(),
                ts_ms: now.millis(),
                kind: m.kind,
                subject: m.subject.clone(),
                body: m.body.clone(),
                acked_by: Vec::new(),
            },
            true,
        ))
    }

    fn messages(&self, team: &str, q: &MessageQuery) -> Result<Vec<Message>> {
        let conn = self.conn();
        let order = if q.newest { "DESC" } else { "ASC" };
        let sql = format!(
            "SELECT {MESSAGE_COLUMNS} FROM team_messages m
             WHERE team_id = ?1 AND seq > ?2
               AND (?3 IS NULL OR ((recipient = ?3 OR recipient = '*') AND sender <> ?3))
               AND (?4 = 0 OR NOT EXISTS (SELECT 1 FROM team_acks a
                    WHERE a.team_id = m.team_id AND a.seq = m.seq AND a.name = ?3))
             ORDER BY seq {order} LIMIT ?5"
        );
        let rows: Vec<_> = conn
            .prepare_cached(&sql)?
            .query_map(
                params![
                    team,
                    q.after as i64,
                    q.to,
                    q.unacked as i64,
                    i64::try_from(q.limit).unwrap_or(i64::MAX)
                ],
                message_row,
            )?
            .collect::<rusqlite::Result<_>>()?;
        let mut out = rows
            .into_iter()
            .map(|row| {
                let acks = Self::acks(&conn, team, row.0)?;
                message_of(row, acks)
            })
            .collect::<Result<Vec<_>>>()?;
        if q.newest {
            out.reverse();
        }
        Ok(out)
    }

    fn message_count(&self, team: &str) -> Result<u64> {
        let conn = self.conn();
        let n: Option<i64> = conn
            .query_row("SELECT msg_seq FROM teams WHERE id = ?1", [team], |r| {
                r.get(0)
            })
            .optional()?;
        Ok(n.unwrap_or(0) as u64)
    }

    fn unread_count(&self, team: &str, name: &str, up_to: u64) -> Result<u64> {
        let conn = self.conn();
        let n: i64 = conn
            .prepare_cached(
                "SELECT COUNT(*) FROM (SELECT 1 FROM team_messages m
                 WHERE team_id = ?1 AND recipient IN (?2, '*') AND sender <> ?2
                   AND NOT EXISTS (SELECT 1 FROM team_acks a
                        WHERE a.team_id = m.team_id AND a.seq = m.seq AND a.name = ?2)
                 LIMIT ?3)",
            )?
            .query_row(params![team, name, up_to as i64], |r| r.get(0))?;
        Ok(n as u64)
    }

    fn import_messages(&self, team: &str, messages: &[Message]) -> Result<()> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let have: Option<i64> = tx
            .query_row("SELECT msg_seq FROM teams WHERE id = ?1", [team], |r| {
                r.get(0)
            })
            .optional()?;
        match have {
            None => return Err(Error::NoTeam(team.to_string())),
            Some(n) if n > 0 => {
                return Err(Error::Corrupt(format!(
                    "team {team} already has messages; a copy's go into an empty mailbox"
                )));
            }
            Some(_) => {}
        }
        let mut last = 0u64;
        {
            let mut ins = tx.prepare_cached(
                "INSERT INTO team_messages (team_id, seq, msg_id, sender, recipient, ts, kind, subject, body)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )?;
            let mut ack = tx.prepare_cached(
                "INSERT INTO team_acks (team_id, seq, name) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
            )?;
            for m in messages {
                ins.execute(params![
                    team,
                    m.seq as i64,
                    m.msg_id,
                    m.from,
                    m.to,
                    m.ts_ms,
                    m.kind.as_str(),
                    m.subject,
                    m.body
                ])?;
                for who in &m.acked_by {
                    ack.execute(params![team, m.seq as i64, who])?;
                }
                last = last.max(m.seq);
            }
        }
        tx.execute(
            "UPDATE teams SET msg_seq = ?2 WHERE id = ?1",
            params![team, last as i64],
        )?;
        tx.commit()?;
        Ok(())
    }

    fn ack_messages(&self, team: &str, by: &str, seqs: &[u64]) -> Result<usize> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut n = 0;
        {
            let mut ins = tx.prepare_cached(
                "INSERT INTO team_acks (team_id, seq, name)
                 SELECT ?1, ?2, ?3 WHERE EXISTS (SELECT 1 FROM team_messages WHERE team_id = ?1 AND seq = ?2)
                 ON CONFLICT DO NOTHING",
            )?;
            for s in seqs {
                n += ins.execute(params![team, *s as i64, by])?;
            }
        }
        tx.commit()?;
        Ok(n)
    }

    fn heartbeat(
        &self,
        team: &str,
        name: &str,
        seq: Option<u64>,
        sent_at: Option<Timestamp>,
    ) -> Result<Presence> {
        let now = self.store_now()?;
        let mut conn = self.conn();
        let relax = self.sync == super::Synchronous::Full;
        if relax {
            conn.execute_batch("PRAGMA synchronous=NORMAL")?;
        }
        let result = (|| -> Result<Presence> {
            // The write lock first (a read upgraded to a write would fail
            // at once when another process wrote in between).
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let known: Option<bool> = tx
                .query_row("SELECT 1 FROM teams WHERE id = ?1", [team], |_| Ok(true))
                .optional()?;
            if known.is_none() {
                return Err(Error::NoTeam(team.to_string()));
            }
            let last: Option<(i64, Option<i64>, i64)> = tx
                .query_row(
                    "SELECT seq, sent_at, received_at FROM team_presence WHERE team_id = ?1 AND name = ?2",
                    params![team, name],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
                .optional()?;
            let next = seq.unwrap_or_else(|| last.map_or(1, |l| l.0 as u64 + 1));
            if let Some((s, sent, received)) = last
                && next <= s as u64
            {
                // An older (or repeated) heartbeat moves nothing.
                return Ok(Presence {
                    name: name.to_string(),
                    seq: s as u64,
                    sent_at: sent.map(Timestamp),
                    received_at: Timestamp(received),
                });
            }
            tx.execute(
                "INSERT INTO team_presence (team_id, name, seq, sent_at, received_at) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (team_id, name) DO UPDATE SET seq = excluded.seq, sent_at = excluded.sent_at,
                   received_at = excluded.received_at",
                params![team, name, next as i64, sent_at.map(|t| t.millis()), now.millis()],
            )?;
            tx.commit()?;
            Ok(Presence {
                name: name.to_string(),
                seq: next,
                sent_at,
                received_at: now,
            })
        })();
        if relax {
            conn.execute_batch("PRAGMA synchronous=FULL")?;
        }
        result
    }

    fn presences(&self, team: &str) -> Result<Vec<Presence>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT name, seq, sent_at, received_at FROM team_presence WHERE team_id = ?1 ORDER BY name",
        )?;
        let rows = stmt.query_map([team], |r| {
            Ok(Presence {
                name: r.get(0)?,
                seq: r.get::<_, i64>(1)? as u64,
                sent_at: r.get::<_, Option<i64>>(2)?.map(Timestamp),
                received_at: Timestamp(r.get(3)?),
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}
