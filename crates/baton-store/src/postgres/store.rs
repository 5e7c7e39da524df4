//! `impl Store for PgStore`: each operation as one statement or one
//! transaction, run (and retried after a lost connection) by `PgStore::run`.

use super::PgStore;
use super::conn::{Fail, Fault, fault_point, in_tx};
use super::connect::connection_lost;
use super::sql::{
    ALL_DEFINITIONS, CLAIM, CLEAR_LEASE, COMMIT, DEFINITION_HASHES, DELETE_TASK, EVENT_PAYLOAD,
    EVENTS, GET_DEFINITION, LIST, LOAD, MAX_SEQ, NOTIFY, PUT_DEFINITION, RENEW_LEASE,
    REQUEST_CANCEL, SET_LEASE,
};
use super::write::{WriteParams, insert_task, lock_task, same_task, write_projection};
use crate::codec::{Header, corrupt, header_json, json, parse_phase, read_lease};
use crate::{
    Acquire, Durability, Error, Holder, PhaseWrites, RenewOutcome, Result, Store, StoredDefinition,
    TaskSnapshot, TaskSummary, last_phase,
};
use baton_core::lease::{Lease, LeaseOwner};
use baton_core::state::TaskStatus;
use baton_core::{EventRecord, TaskId, TaskState, Timestamp};
use postgres::Row;
use postgres::fallible_iterator::FallibleIterator;
use std::time::{Duration, Instant};

fn definition_of(r: &Row) -> StoredDefinition {
    StoredDefinition {
        hash: r.get(0),
        name: r.get(1),
        json: r.get(2),
    }
}

fn task_id(s: &str) -> Result<TaskId> {
    TaskId::parse(s).map_err(|e| corrupt("task id", e))
}

impl Store for PgStore {
    fn put_definition(&self, def: &StoredDefinition) -> Result<()> {
        self.run(|conn, _| {
            conn.db()
                .execute(PUT_DEFINITION, &[&def.hash, &def.name, &def.json])?;
            Ok(())
        })
    }

    fn definition(&self, hash: &str) -> Result<Option<StoredDefinition>> {
        self.run(|conn, _| {
            Ok(conn
                .db()
                .query_opt(GET_DEFINITION, &[&hash])?
                .map(|r| definition_of(&r)))
        })
    }

    fn create_task(
        &self,
        state: &TaskState,
        events: &[EventRecord],
        holder: Holder<'_>,
    ) -> Result<()> {
        let (lease, queued) = match holder {
            Holder::Lease(l) => (Some(l), false),
            Holder::Queue => (None, true),
        };
        self.run(|conn, retrying| {
            in_tx(conn, |db| {
                // After a lost connection, a task already there may be
                // the one the lost attempt created.
                if insert_task(db, state, events, lease, queued, false)?
                    || (retrying && same_task(db, state)?)
                {
                    Ok(())
                } else {
                    Err(Fail::Store(Error::AlreadyExists(state.task_id.clone())))
                }
            })
        })
    }

    fn commit(
        &self,
        owner: &LeaseOwner,
        state: &TaskState,
        phases: &PhaseWrites,
        events: &[EventRecord],
        _durability: Durability,
    ) -> Result<()> {
        let id = &state.task_id;
        let w = WriteParams::new(state, phases, events);
        let owner_json = json(owner);
        let first_seq = events.first().map(|r| r.seq as i64);
        self.run(|conn, retrying| {
            fault_point(Fault::BeforeCommit)?;
            let row = conn.db().query_opt(
                COMMIT,
                &[
                    &id.as_str(),
                    &w.seq,
                    &w.ts,
                    &w.kind,
                    &w.phase,
                    &w.attempt,
                    &w.payload,
                    &w.idx,
                    &w.phase_id,
                    &w.phase_status,
                    &w.phase_data,
                    &w.keep_below,
                    &state.status.as_str(),
                    &last_phase(state),
                    &state.updated_at.millis(),
                    &(state.last_seq as i64),
                    &state.definition_hash,
                    &header_json(state),
                    &owner_json,
                    &first_seq,
                ],
            )?;
            fault_point(Fault::AfterCommit)?;
            let Some(row) = row else {
                return Err(Fail::Store(Error::NotFound(id.clone())));
            };
            if row.get::<_, bool>(2) {
                return Ok(());
            }
            let last_seq = row.get::<_, i64>(0) as u64;
            let lease = read_lease(row.get(1))?;
            let ours = lease.as_ref().map(|l| &l.owner) == Some(owner);
            if retrying
                && ours
                && let Some(last) = events.last()
                && last_seq == last.seq
            {
                // Did the attempt whose connection was lost commit?
                let stored: Option<String> = conn
                    .db()
                    .query_opt(EVENT_PAYLOAD, &[&id.as_str(), &(last.seq as i64)])?
                    .map(|r| r.get(0));
                if stored == Some(json(&last.event)) {
                    return Ok(());
                }
            }
            if !ours {
                return Err(Fail::Store(Error::LeaseLost {
                    task: id.clone(),
                    holder: lease.map(Box::new),
                }));
            }
            Err(Fail::Store(Error::SeqConflict {
                task: id.clone(),
                expected: first_seq.unwrap_or(0) as u64,
                found: last_seq,
            }))
        })
    }

    fn load(&self, id: &TaskId) -> Result<Option<TaskSnapshot>> {
        let row = self.run(|conn, _| Ok(conn.db().query_opt(LOAD, &[&id.as_str()])?))?;
        let Some(r) = row else {
            return Ok(None);
        };
        let header: String = r.get(0);
        let last_seq: i64 = r.get(1);
        let phases = r
            .get::<_, Vec<String>>(5)
            .iter()
            .map(|d| parse_phase(d, id))
            .collect::<Result<Vec<_>>>()?;
        let state = Header::parse(&header, id)?.into_state(id.clone(), phases, last_seq as u64);
        Ok(Some(TaskSnapshot {
            state,
            lease: read_lease(r.get(2))?,
            cancel_requested: r.get(3),
            queued: r.get(4),
        }))
    }

    fn list(&self) -> Result<Vec<TaskSummary>> {
        let rows = self.run(|conn, _| Ok(conn.db().query(LIST, &[])?))?;
        rows.iter()
            .map(|r| {
                let status: String = r.get(3);
                Ok(TaskSummary {
                    id: task_id(r.get(0))?,
                    workflow: r.get(1),
                    description: r.get(2),
                    status: TaskStatus::parse(&status)
                        .ok_or_else(|| corrupt("task status", &status))?,
                    last_phase: r.get(4),
                    created_at: Timestamp(r.get(5)),
                    updated_at: Timestamp(r.get(6)),
                    lease: read_lease(r.get(7))?,
                    queued: r.get(8),
                })
            })
            .collect()
    }

    fn events(&self, id: &TaskId, after: u64, limit: usize) -> Result<Vec<EventRecord>> {
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows =
            self.run(|conn, _| Ok(conn.db().query(EVENTS, &[&id.as_str(), &after, &limit])?))?;
        rows.iter()
            .map(|r| {
                let seq: i64 = r.get(0);
                let payload: &str = r.get(2);
                Ok(EventRecord {
                    seq: seq as u64,
                    ts: Timestamp(r.get(1)),
                    event: serde_json::from_str(payload)
                        .map_err(|e| corrupt(&format!("task {id} event {seq}"), e))?,
                })
            })
            .collect()
    }

    fn acquire(&self, id: &TaskId, lease: &Lease, replace: Option<&LeaseOwner>) -> Result<Acquire> {
        self.run(|conn, _| {
            in_tx(conn, |db| {
                let Some(row) = lock_task(db, id)? else {
                    return Err(Fail::Store(Error::NotFound(id.clone())));
                };
                if let Some(cur) = row.lease
                    && cur.owner != lease.owner
                    && Some(&cur.owner) != replace
                {
                    return Ok(Acquire::Held(cur));
                }
                db.execute(
                    SET_LEASE,
                    &[&id.as_str(), &json(lease), &lease.expires_at.millis()],
                )?;
                Ok(Acquire::Acquired)
            })
        })
    }

    fn renew(
        &self,
        id: &TaskId,
        owner: &LeaseOwner,
        expires_at: Timestamp,
    ) -> Result<RenewOutcome> {
        self.run(|conn, _| {
            in_tx(conn, |db| {
                let Some(row) = lock_task(db, id)? else {
                    return Ok(RenewOutcome::Lost);
                };
                match row.lease {
                    Some(mut l) if &l.owner == owner => {
                        l.expires_at = expires_at;
                        db.execute(
                            RENEW_LEASE,
                            &[&id.as_str(), &json(&l), &expires_at.millis()],
                        )?;
                        Ok(RenewOutcome::Renewed {
                            cancel_requested: row.cancel_requested,
                        })
                    }
                    _ => Ok(RenewOutcome::Lost),
                }
            })
        })
    }

    fn release(&self, id: &TaskId, owner: &LeaseOwner) -> Result<()> {
        self.run(|conn, _| {
            in_tx(conn, |db| {
                if let Some(row) = lock_task(db, id)?
                    && row.lease.is_some_and(|l| &l.owner == owner)
                {
                    db.execute(CLEAR_LEASE, &[&id.as_str()])?;
                    // Unfinished: another worker may take it. Finished:
                    // idle `--until-idle` workers see the queue drain.
                    if row.queued {
                        db.execute(NOTIFY, &[])?;
                    }
                }
                Ok(())
            })
        })
    }

    fn request_cancel(&self, id: &TaskId) -> Result<()> {
        let n = self.run(|conn, _| Ok(conn.db().execute(REQUEST_CANCEL, &[&id.as_str()])?))?;
        if n == 0 {
            return Err(Error::NotFound(id.clone()));
        }
        Ok(())
    }

    fn delete_task(&self, id: &TaskId) -> Result<bool> {
        self.run(|conn, retrying| {
            let n = conn.db().execute(DELETE_TASK, &[&id.as_str()])?;
            // After a lost connection, a task now gone was most likely
            // deleted by the attempt whose answer was lost.
            Ok(n > 0 || retrying)
        })
    }

    fn replace_projection(&self, state: &TaskState, seen_lease: Option<&Lease>) -> Result<()> {
        let id = &state.task_id;
        self.run(|conn, _| {
            in_tx(conn, |db| {
                let Some(row) = lock_task(db, id)? else {
                    return Err(Fail::Store(Error::NotFound(id.clone())));
                };
                if row.lease.as_ref() != seen_lease {
                    return Err(Fail::Store(Error::LeaseLost {
                        task: id.clone(),
                        holder: row.lease.map(Box::new),
                    }));
                }
                let last: i64 = db.query_one(MAX_SEQ, &[&id.as_str()])?.get(0);
                if last as u64 != state.last_seq {
                    return Err(Fail::Store(Error::SeqConflict {
                        task: id.clone(),
                        expected: state.last_seq,
                        found: last as u64,
                    }));
                }
                write_projection(db, state)?;
                Ok(())
            })
        })
    }

    fn claim(&self, lease: &Lease, skip: &[TaskId]) -> Result<Option<TaskId>> {
        let skip: Vec<&str> = skip.iter().map(|t| t.as_str()).collect();
        // A claim whose answer was lost is retried as a new claim: the task
        // it may have taken is freed when that lease expires.
        let id: Option<String> = self.run(|conn, _| {
            Ok(conn
                .db()
                .query_opt(
                    CLAIM,
                    &[
                        &json(lease),
                        &lease.expires_at.millis(),
                        &lease.acquired_at.millis(),
                        &skip,
                    ],
                )?
                .map(|r| r.get(0)))
        })?;
        id.as_deref().map(task_id).transpose()
    }

    fn wait_for_work(&self, timeout: Duration) -> Result<()> {
        let start = Instant::now();
        let mut guard = self.listener.lock().unwrap_or_else(|p| p.into_inner());
        if guard.is_none() {
            let (client, work) = self.listen()?;
            *guard = Some(client);
            if work {
                return Ok(());
            }
        }
        let client = guard.as_mut().expect("listening");
        let left = timeout.saturating_sub(start.elapsed());
        let woken = {
            let mut notifications = client.notifications();
            let woken = notifications.timeout_iter(left).next();
            if let Ok(Some(_)) = woken {
                // Several announcements make one wake-up.
                while let Ok(Some(_)) = notifications.iter().next() {}
            }
            woken
        };
        let broken = match woken {
            Ok(Some(_)) => false,
            // Ok(None) is a timeout, or the server closed the connection.
            Ok(None) => client.is_closed() || client.is_valid(Duration::from_secs(5)).is_err(),
            Err(e) if connection_lost(&e) => true,
            Err(e) => return Err(self.pg_error(&e)),
        };
        if broken {
            // Announcements may have been missed while it was down: listen
            // again and return, so the caller looks for work.
            *guard = None;
            let (client, _) = self.listen()?;
            *guard = Some(client);
        }
        Ok(())
    }

    fn definitions(&self) -> Result<Vec<StoredDefinition>> {
        let rows = self.run(|conn, _| Ok(conn.db().query(ALL_DEFINITIONS, &[])?))?;
        Ok(rows.iter().map(definition_of).collect())
    }

    fn definition_hashes(&self) -> Result<Vec<String>> {
        let rows = self.run(|conn, _| Ok(conn.db().query(DEFINITION_HASHES, &[])?))?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    fn import_task(&self, snap: &TaskSnapshot, events: &[EventRecord]) -> Result<()> {
        let state = &snap.state;
        self.run(|conn, retrying| {
            in_tx(conn, |db| {
                if insert_task(db, state, events, None, snap.queued, snap.cancel_requested)?
                    || (retrying && same_task(db, state)?)
                {
                    Ok(())
                } else {
                    Err(Fail::Store(Error::AlreadyExists(state.task_id.clone())))
                }
            })
        })
    }

    fn describe(&self) -> String {
        self.place.clone()
    }

    fn server_now(&self) -> Result<Option<Timestamp>> {
        let ms = self.run(|conn, _| {
            Ok(conn
                .db()
                .query_one(super::sql::SERVER_NOW, &[])?
                .get::<_, i64>(0))
        })?;
        Ok(Some(Timestamp(ms)))
    }

    fn check(&self) -> Result<Vec<String>> {
        const LAST_SEQ: &str = "SELECT t.id, t.last_seq, COALESCE(MAX(e.seq), 0)
             FROM tasks t LEFT JOIN events e ON e.task_id = t.id
             GROUP BY t.id, t.last_seq HAVING t.last_seq <> COALESCE(MAX(e.seq), 0) ORDER BY t.id";
        const GAPS: &str = "SELECT task_id, COUNT(*), MIN(seq), MAX(seq) FROM events
             GROUP BY task_id HAVING MIN(seq) <> 1 OR COUNT(*) <> MAX(seq) ORDER BY task_id";
        const NO_DEFINITION: &str = "SELECT id, definition_hash FROM tasks t
             WHERE NOT EXISTS (SELECT 1 FROM definitions d WHERE d.hash = t.definition_hash) ORDER BY id";
        const ORPHANS: &str = "SELECT DISTINCT task_id FROM events e
             WHERE NOT EXISTS (SELECT 1 FROM tasks t WHERE t.id = e.task_id) ORDER BY task_id";
        const LEASES: &str =
            "SELECT id, lease, lease_expires_at FROM tasks WHERE lease IS NOT NULL ORDER BY id";
        let (last_seq, gaps, no_def, orphans, leases) = self.run(|conn, _| {
            let mut db = conn.db();
            Ok((
                db.query(LAST_SEQ, &[])?,
                db.query(GAPS, &[])?,
                db.query(NO_DEFINITION, &[])?,
                db.query(ORPHANS, &[])?,
                db.query(LEASES, &[])?,
            ))
        })?;
        let mut problems = Vec::new();
        for r in last_seq {
            problems.push(format!(
                "task {}: its row says the journal ends at event {}, the journal ends at {}",
                r.get::<_, &str>(0),
                r.get::<_, i64>(1),
                r.get::<_, i64>(2)
            ));
        }
        for r in gaps {
            problems.push(format!(
                "task {}: its journal has gaps ({} events numbered {} to {})",
                r.get::<_, &str>(0),
                r.get::<_, i64>(1),
                r.get::<_, i64>(2),
                r.get::<_, i64>(3)
            ));
        }
        for r in no_def {
            problems.push(format!(
                "task {}: its definition {} is not stored",
                r.get::<_, &str>(0),
                r.get::<_, &str>(1)
            ));
        }
        for r in orphans {
            problems.push(format!(
                "events of task {} remain, but the task does not",
                r.get::<_, &str>(0)
            ));
        }
        for r in leases {
            let id: &str = r.get(0);
            match read_lease(r.get(1)) {
                Ok(Some(l)) if Some(l.expires_at.millis()) == r.get::<_, Option<i64>>(2) => {}
                Ok(_) => problems.push(format!(
                    "task {id}: its lease_expires_at does not match its lease"
                )),
                Err(e) => problems.push(format!("task {id}: {e}")),
            }
        }
        Ok(problems)
    }
}
