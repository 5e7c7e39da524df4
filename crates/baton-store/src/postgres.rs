//! The PostgreSQL backend: many workers on many machines share one database.
//!
//! Same tables and semantics as the SQLite backend (`sqlite.rs`), with what
//! a shared server needs on top:
//!
//! * the task row also carries `lease_expires_at` (ms, kept in step with the
//!   lease JSON) so `claim` can pick the oldest free queued task in SQL, with
//!   `FOR UPDATE SKIP LOCKED`, and concurrent claimers never get one task;
//! * `commit` locks the task row (`SELECT … FOR UPDATE`) before checking the
//!   lease and the seq, so concurrent writers serialise per task and the
//!   journal never gets a gap or a duplicate;
//! * queuing or releasing a queued task sends `NOTIFY baton_work` inside its
//!   transaction; `wait_for_work` listens on a second connection;
//! * when the server goes away, every operation reconnects with backoff
//!   (50 ms doubling to 2 s, for up to `reconnect_for` in total) and is
//!   retried; retries of writes are made safe by checking, after the
//!   reconnect, whether the lost attempt committed.
//!
//! Each connection prepares every statement once and keeps it. A commit is
//! one statement, so one round trip: it locks the task row, checks lease
//! and seq, and writes the events, the phase rows and the task row (arrays
//! passed to `unnest`, so one statement for any number of events and
//! phases). Its throughput matches that of single-row `INSERT`
//! transactions (measured 0.9-1.2x, with `fsync` on and off).

use crate::codec::{Header, corrupt, header_json, json, parse_phase, read_lease};
use crate::{
    Acquire, Error, Holder, PhaseWrites, RenewOutcome, Result, Store, StoredDefinition,
    TaskSnapshot, TaskSummary, last_phase,
};
use baton_core::lease::{Lease, LeaseOwner};
use baton_core::state::TaskStatus;
use baton_core::{EventRecord, TaskId, TaskState, Timestamp};
use postgres::config::Host;
use postgres::fallible_iterator::FallibleIterator;
use postgres::types::ToSql;
use postgres::{Client, Config, NoTls, Row, Statement};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Versioned migrations; `baton_schema.version` records how many ran.
const MIGRATIONS: &[&str] = &[r#"
CREATE TABLE definitions (
    hash TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    json TEXT NOT NULL
);
CREATE TABLE tasks (
    id TEXT PRIMARY KEY,
    workflow TEXT NOT NULL,
    description TEXT NOT NULL,
    status TEXT NOT NULL,
    last_phase TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    last_seq BIGINT NOT NULL,
    definition_hash TEXT NOT NULL REFERENCES definitions(hash),
    lease TEXT,
    lease_expires_at BIGINT,
    cancel_requested BOOLEAN NOT NULL DEFAULT false,
    queued BOOLEAN NOT NULL DEFAULT false,
    header TEXT NOT NULL,
    CHECK ((lease IS NULL) = (lease_expires_at IS NULL))
);
CREATE INDEX tasks_created ON tasks (created_at, id);
CREATE INDEX tasks_claim ON tasks (status, created_at, id) WHERE queued;
CREATE TABLE phases (
    task_id TEXT NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
    idx INT NOT NULL,
    id TEXT NOT NULL,
    status TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (task_id, idx)
) WITH (fillfactor = 80);
CREATE TABLE events (
    task_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    ts BIGINT NOT NULL,
    kind TEXT NOT NULL,
    phase TEXT,
    attempt BIGINT,
    payload TEXT NOT NULL,
    PRIMARY KEY (task_id, seq)
);
"#];

/// The advisory lock migrations run under ("baton" in ASCII, then 1), so
/// workers starting together do not race to create the tables.
const SCHEMA_LOCK: i64 = 0x6261_746f_6e00_0001;

/// The channel queued work is announced on.
const CHANNEL: &str = "baton_work";

/// The shared front of the write statements: events and phase rows from
/// arrays, and phase rows from index `$12` on deleted (a phase list that
/// shrank; `i32::MAX` deletes nothing). Sub-statements of one statement
/// see the same snapshot, which is fine: they touch disjoint rows.
macro_rules! write_journal_and_phases {
    () => {
        "WITH ev AS (
            INSERT INTO events (task_id, seq, ts, kind, phase, attempt, payload)
            SELECT $1, e.* FROM unnest($2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::bigint[], $7::text[]) AS e
        ), ph AS (
            INSERT INTO phases (task_id, idx, id, status, data)
            SELECT $1, p.* FROM unnest($8::int[], $9::text[], $10::text[], $11::text[]) AS p
            ON CONFLICT (task_id, idx) DO UPDATE SET id = excluded.id, status = excluded.status, data = excluded.data
        ), del AS (
            DELETE FROM phases WHERE task_id = $1 AND idx >= $12
        ) "
    };
}

/// Events, phases and the task row (`$13`..`$18`) of an existing task,
/// written without checks (`replace_projection` checked under its own lock).
const WRITE_PROJECTION: &str = concat!(
    write_journal_and_phases!(),
    "UPDATE tasks SET status = $13, last_phase = $14, updated_at = $15, last_seq = $16, definition_hash = $17, header = $18 WHERE id = $1"
);

/// A whole commit in one statement (so one round trip, committed as it
/// returns): lock the task row, check that owner `$19` holds the lease and
/// that the first new event `$20` (NULL: no events) follows the stored last
/// seq, and only then write the events, the phase rows and the task row.
/// It returns the row as locked and whether the writes were made.
///
/// The row lock serialises commits to one task: a second committer waits
/// for it, then (PostgreSQL re-reads a row that changed while it waited on
/// its lock) checks against the seq and lease the first one left.
const COMMIT: &str = "WITH t AS (
        SELECT last_seq, lease FROM tasks WHERE id = $1 FOR UPDATE
    ), ok AS (
        SELECT FROM t WHERE (t.lease::jsonb -> 'owner') = $19::text::jsonb
            AND ($20::bigint IS NULL OR t.last_seq + 1 = $20::bigint)
    ), ev AS (
        INSERT INTO events (task_id, seq, ts, kind, phase, attempt, payload)
        SELECT $1, e.* FROM unnest($2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::bigint[], $7::text[]) AS e
        WHERE EXISTS (SELECT FROM ok)
    ), ph AS (
        INSERT INTO phases (task_id, idx, id, status, data)
        SELECT $1, p.* FROM unnest($8::int[], $9::text[], $10::text[], $11::text[]) AS p
        WHERE EXISTS (SELECT FROM ok)
        ON CONFLICT (task_id, idx) DO UPDATE SET id = excluded.id, status = excluded.status, data = excluded.data
    ), del AS (
        DELETE FROM phases WHERE task_id = $1 AND idx >= $12 AND EXISTS (SELECT FROM ok)
    ), up AS (
        UPDATE tasks SET status = $13, last_phase = $14, updated_at = $15, last_seq = $16, definition_hash = $17, header = $18
        WHERE id = $1 AND EXISTS (SELECT FROM ok)
    )
    SELECT last_seq, lease, EXISTS (SELECT FROM ok) FROM t";

/// Events and phases of a task row just inserted; notifies workers if `$13`.
const WRITE_NEW: &str = concat!(
    write_journal_and_phases!(),
    "SELECT pg_notify('baton_work', '') WHERE $13::boolean"
);

const INSERT_TASK: &str = "INSERT INTO tasks (id, workflow, description, status, last_phase, created_at, updated_at, last_seq, definition_hash, lease, lease_expires_at, header, queued, cancel_requested)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) ON CONFLICT (id) DO NOTHING";
const TASK_IDENTITY: &str = "SELECT last_seq, created_at FROM tasks WHERE id = $1";
const LOCK_TASK: &str =
    "SELECT lease, cancel_requested, queued FROM tasks WHERE id = $1 FOR UPDATE";
const EVENT_PAYLOAD: &str = "SELECT payload FROM events WHERE task_id = $1 AND seq = $2";
const MAX_SEQ: &str = "SELECT COALESCE(MAX(seq), 0) FROM events WHERE task_id = $1";
const SET_LEASE: &str =
    "UPDATE tasks SET lease = $2, lease_expires_at = $3, cancel_requested = false WHERE id = $1";
const RENEW_LEASE: &str = "UPDATE tasks SET lease = $2, lease_expires_at = $3 WHERE id = $1";
const CLEAR_LEASE: &str = "UPDATE tasks SET lease = NULL, lease_expires_at = NULL WHERE id = $1";
const NOTIFY: &str = "SELECT pg_notify('baton_work', '')";
const REQUEST_CANCEL: &str = "UPDATE tasks SET cancel_requested = true WHERE id = $1";
const DELETE_TASK: &str =
    "WITH e AS (DELETE FROM events WHERE task_id = $1) DELETE FROM tasks WHERE id = $1";
const LOAD: &str = "SELECT header, last_seq, lease, cancel_requested, queued,
        ARRAY(SELECT data FROM phases WHERE task_id = $1 ORDER BY idx)
     FROM tasks WHERE id = $1";
const LIST: &str = "SELECT id, workflow, description, status, last_phase, created_at, updated_at, lease, queued FROM tasks ORDER BY created_at, id";
const EVENTS: &str =
    "SELECT seq, ts, payload FROM events WHERE task_id = $1 AND seq > $2 ORDER BY seq LIMIT $3";
const PUT_DEFINITION: &str =
    "INSERT INTO definitions (hash, name, json) VALUES ($1, $2, $3) ON CONFLICT (hash) DO NOTHING";
const GET_DEFINITION: &str = "SELECT hash, name, json FROM definitions WHERE hash = $1";
const ALL_DEFINITIONS: &str = "SELECT hash, name, json FROM definitions ORDER BY hash";
const CLAIM: &str = "UPDATE tasks SET lease = $1, lease_expires_at = $2
     WHERE id = (
        SELECT id FROM tasks
        WHERE queued AND status = 'RUNNING' AND (lease IS NULL OR lease_expires_at <= $3)
          AND NOT (id = ANY($4))
        ORDER BY created_at, id LIMIT 1
        FOR UPDATE SKIP LOCKED)
     RETURNING id";
const WORK_THERE: &str = "SELECT EXISTS (SELECT 1 FROM tasks
     WHERE queued AND status = 'RUNNING' AND (lease IS NULL OR lease_expires_at <= $1))";

/// A store in a PostgreSQL database.
pub struct PgStore {
    config: Config,
    /// `host:port`, for connection errors.
    target: String,
    /// `host:port/db`, for [`Store::describe`].
    place: String,
    reconnect_for: Duration,
    /// The connection every operation uses; `None` after it was lost.
    conn: Mutex<Option<Conn>>,
    /// The connection that `LISTEN`s, opened by the first `wait_for_work`.
    listener: Mutex<Option<Client>>,
}

/// A connection and the statements prepared on it.
struct Conn {
    client: Client,
    stmts: HashMap<&'static str, Statement>,
}

/// Why an attempt at an operation failed.
enum Fail {
    /// A final answer (`NotFound`, `LeaseLost`, …).
    Store(Error),
    /// A database error: the connection may be lost (then retried).
    Pg(postgres::Error),
    /// A connection loss the tests inject (see [`fault_point`]).
    #[cfg(test)]
    Lost,
}

impl From<postgres::Error> for Fail {
    fn from(e: postgres::Error) -> Self {
        Fail::Pg(e)
    }
}

impl From<Error> for Fail {
    fn from(e: Error) -> Self {
        Fail::Store(e)
    }
}

type Attempt<T> = std::result::Result<T, Fail>;
type Params<'a> = [&'a (dyn ToSql + Sync)];

/// Something statements run on: a client or a transaction.
trait Session {
    fn prepare_sql(&mut self, sql: &str) -> Result<Statement, postgres::Error>;
    fn run_execute(&mut self, s: &Statement, p: &Params<'_>) -> Result<u64, postgres::Error>;
    fn run_query(&mut self, s: &Statement, p: &Params<'_>) -> Result<Vec<Row>, postgres::Error>;
}

impl Session for Client {
    fn prepare_sql(&mut self, sql: &str) -> Result<Statement, postgres::Error> {
        self.prepare(sql)
    }
    fn run_execute(&mut self, s: &Statement, p: &Params<'_>) -> Result<u64, postgres::Error> {
        self.execute(s, p)
    }
    fn run_query(&mut self, s: &Statement, p: &Params<'_>) -> Result<Vec<Row>, postgres::Error> {
        self.query(s, p)
    }
}

impl Session for postgres::Transaction<'_> {
    fn prepare_sql(&mut self, sql: &str) -> Result<Statement, postgres::Error> {
        self.prepare(sql)
    }
    fn run_execute(&mut self, s: &Statement, p: &Params<'_>) -> Result<u64, postgres::Error> {
        self.execute(s, p)
    }
    fn run_query(&mut self, s: &Statement, p: &Params<'_>) -> Result<Vec<Row>, postgres::Error> {
        self.query(s, p)
    }
}

/// A session with the connection's statement cache.
struct Db<'a, S: Session> {
    s: &'a mut S,
    stmts: &'a mut HashMap<&'static str, Statement>,
}

impl<S: Session> Db<'_, S> {
    fn stmt(&mut self, sql: &'static str) -> Result<Statement, postgres::Error> {
        if let Some(s) = self.stmts.get(sql) {
            return Ok(s.clone());
        }
        let s = self.s.prepare_sql(sql)?;
        self.stmts.insert(sql, s.clone());
        Ok(s)
    }

    fn execute(&mut self, sql: &'static str, p: &Params<'_>) -> Result<u64, postgres::Error> {
        let s = self.stmt(sql)?;
        self.s.run_execute(&s, p)
    }

    fn query(&mut self, sql: &'static str, p: &Params<'_>) -> Result<Vec<Row>, postgres::Error> {
        let s = self.stmt(sql)?;
        self.s.run_query(&s, p)
    }

    fn query_opt(
        &mut self,
        sql: &'static str,
        p: &Params<'_>,
    ) -> Result<Option<Row>, postgres::Error> {
        Ok(self.query(sql, p)?.into_iter().next())
    }

    fn query_one(&mut self, sql: &'static str, p: &Params<'_>) -> Attempt<Row> {
        self.query_opt(sql, p)?
            .ok_or_else(|| Fail::Store(Error::Postgres(format!("no row from: {sql}"))))
    }
}

impl Conn {
    fn db(&mut self) -> Db<'_, Client> {
        Db {
            s: &mut self.client,
            stmts: &mut self.stmts,
        }
    }
}

/// Runs `f` in a transaction on `conn`, committing if it returns `Ok`.
fn in_tx<T>(
    conn: &mut Conn,
    f: impl FnOnce(&mut Db<'_, postgres::Transaction<'_>>) -> Attempt<T>,
) -> Attempt<T> {
    let mut tx = conn.client.transaction()?;
    let v = f(&mut Db {
        s: &mut tx,
        stmts: &mut conn.stmts,
    })?;
    fault_point(Fault::BeforeCommit)?;
    tx.commit()?;
    fault_point(Fault::AfterCommit)?;
    Ok(v)
}

/// Where tests make the connection look lost, just before or just after a
/// write was committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    BeforeCommit,
    AfterCommit,
}

#[cfg(not(test))]
#[inline(always)]
fn fault_point(_: Fault) -> Attempt<()> {
    Ok(())
}

#[cfg(test)]
fn fault_point(f: Fault) -> Attempt<()> {
    if tests::hit(f) {
        Err(Fail::Lost)
    } else {
        Ok(())
    }
}

/// The arrays the write statements take, from events and phase rows.
struct WriteParams<'a> {
    seq: Vec<i64>,
    ts: Vec<i64>,
    kind: Vec<&'static str>,
    phase: Vec<Option<&'a str>>,
    attempt: Vec<Option<i64>>,
    payload: Vec<String>,
    idx: Vec<i32>,
    phase_id: Vec<&'a str>,
    phase_status: Vec<&'static str>,
    phase_data: Vec<String>,
    /// Phase rows from this index on are deleted.
    keep_below: i32,
}

impl<'a> WriteParams<'a> {
    fn new(state: &'a TaskState, writes: &PhaseWrites, events: &'a [EventRecord]) -> Self {
        let mut indices: Vec<usize> = match writes {
            PhaseWrites::Changed(ix) => ix.clone(),
            PhaseWrites::All => (0..state.phases.len()).collect(),
        };
        // One row may not be upserted twice in one statement.
        indices.sort_unstable();
        indices.dedup();
        let phases = indices.iter().map(|&i| (i, &state.phases[i]));
        WriteParams {
            seq: events.iter().map(|r| r.seq as i64).collect(),
            ts: events.iter().map(|r| r.ts.millis()).collect(),
            kind: events.iter().map(|r| r.event.kind()).collect(),
            phase: events
                .iter()
                .map(|r| r.event.phase().map(|p| p.as_str()))
                .collect(),
            attempt: events
                .iter()
                .map(|r| r.event.attempt().map(i64::from))
                .collect(),
            payload: events.iter().map(|r| json(&r.event)).collect(),
            idx: phases.clone().map(|(i, _)| to_i32(i)).collect(),
            phase_id: phases.clone().map(|(_, p)| p.id.as_str()).collect(),
            phase_status: phases.clone().map(|(_, p)| p.status.as_str()).collect(),
            phase_data: phases.map(|(_, p)| json(p)).collect(),
            keep_below: match writes {
                PhaseWrites::Changed(_) => i32::MAX,
                PhaseWrites::All => to_i32(state.phases.len()),
            },
        }
    }
}

fn to_i32(i: usize) -> i32 {
    i32::try_from(i).expect("fewer than 2^31 phases")
}

/// Writes the phases and the task row of an existing task.
fn write_projection<S: Session>(db: &mut Db<'_, S>, state: &TaskState) -> Attempt<u64> {
    let w = WriteParams::new(state, &PhaseWrites::All, &[]);
    let id = state.task_id.as_str();
    Ok(db.execute(
        WRITE_PROJECTION,
        &[
            &id,
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
        ],
    )?)
}

/// Inserts a new task (row, events, phases); `Ok(false)` if the id exists.
fn insert_task<S: Session>(
    db: &mut Db<'_, S>,
    state: &TaskState,
    events: &[EventRecord],
    lease: Option<&Lease>,
    queued: bool,
    cancel_requested: bool,
) -> Attempt<bool> {
    let inserted = db.execute(
        INSERT_TASK,
        &[
            &state.task_id.as_str(),
            &state.workflow,
            &state.description,
            &state.status.as_str(),
            &last_phase(state),
            &state.created_at.millis(),
            &state.updated_at.millis(),
            &(state.last_seq as i64),
            &state.definition_hash,
            &lease.map(json),
            &lease.map(|l| l.expires_at.millis()),
            &header_json(state),
            &queued,
            &cancel_requested,
        ],
    )?;
    if inserted == 0 {
        return Ok(false);
    }
    let w = WriteParams::new(state, &PhaseWrites::All, events);
    let notify = queued && state.status == TaskStatus::Running;
    db.execute(
        WRITE_NEW,
        &[
            &state.task_id.as_str(),
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
            &notify,
        ],
    )?;
    Ok(true)
}

/// Whether the task is there with this journal length and creation time:
/// after a lost connection, that the lost attempt created it.
fn same_task<S: Session>(db: &mut Db<'_, S>, state: &TaskState) -> Attempt<bool> {
    Ok(db
        .query_opt(TASK_IDENTITY, &[&state.task_id.as_str()])?
        .is_some_and(|r| {
            r.get::<_, i64>(0) as u64 == state.last_seq
                && r.get::<_, i64>(1) == state.created_at.millis()
        }))
}

/// The locked task row: lease, cancel flag, queued.
struct Locked {
    lease: Option<Lease>,
    cancel_requested: bool,
    queued: bool,
}

fn lock_task<S: Session>(db: &mut Db<'_, S>, id: &TaskId) -> Attempt<Option<Locked>> {
    let Some(r) = db.query_opt(LOCK_TASK, &[&id.as_str()])? else {
        return Ok(None);
    };
    Ok(Some(Locked {
        lease: read_lease(r.get(0))?,
        cancel_requested: r.get(1),
        queued: r.get(2),
    }))
}

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

fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

impl PgStore {
    /// Connects to `url`, runs migrations, and reconnects (with backoff, for
    /// up to `reconnect_for`) when the server goes away later.
    ///
    /// The first connection is tried once (a wrong URL or a server that is
    /// down is reported at once, as [`Error::Connect`]), except that a
    /// server still starting up is waited for, up to `reconnect_for`.
    pub fn connect(url: &str, reconnect_for: Duration) -> Result<PgStore> {
        let mut config: Config = url
            .parse()
            .map_err(|e: postgres::Error| Error::InvalidUrl {
                url: redact(url),
                reason: std::error::Error::source(&e)
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| e.to_string()),
            })?;
        // A server that vanishes without closing the connection (a network
        // partition, a machine powered off) is noticed in about half a
        // minute instead of TCP's hours, and the reconnect loop takes over.
        // Settings in the URL win.
        if config.get_keepalives_idle() == Duration::from_secs(2 * 60 * 60) {
            config.keepalives_idle(Duration::from_secs(10));
        }
        if config.get_keepalives_interval().is_none() {
            config.keepalives_interval(Duration::from_secs(5));
        }
        if config.get_keepalives_retries().is_none() {
            config.keepalives_retries(3);
        }
        if config.get_tcp_user_timeout().is_none() {
            config.tcp_user_timeout(Duration::from_secs(30));
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        if config.get_application_name().is_none() {
            config.application_name("baton");
        }
        let (target, place) = places(&config);
        let store = PgStore {
            config,
            target,
            place,
            reconnect_for,
            conn: Mutex::new(None),
            listener: Mutex::new(None),
        };
        let deadline = Instant::now() + reconnect_for;
        let mut delay = Duration::from_millis(50);
        let mut conn = loop {
            match store.open(None) {
                Ok(c) => break c,
                Err(e) if code_is(&e, &["57P03"]) && Instant::now() < deadline => {
                    std::thread::sleep(delay.min(deadline - Instant::now()));
                    delay = (delay * 2).min(Duration::from_secs(2));
                }
                Err(e) => {
                    return Err(Error::Connect {
                        target: store.target.clone(),
                        reason: plain_reason(&e, &store.config),
                    });
                }
            }
        };
        match store.migrate(&mut conn) {
            Ok(()) => {}
            Err(Fail::Store(e)) => return Err(e),
            Err(Fail::Pg(e)) => return Err(store.pg_error(&e)),
            #[cfg(test)]
            Err(Fail::Lost) => unreachable!("no fault is injected into migrations"),
        }
        *store.conn.lock().unwrap_or_else(|p| p.into_inner()) = Some(conn);
        Ok(store)
    }

    fn open(&self, timeout: Option<Duration>) -> Result<Conn, postgres::Error> {
        let client = match timeout {
            None => self.config.connect(NoTls)?,
            Some(t) => self
                .config
                .clone()
                .connect_timeout(t.max(Duration::from_millis(100)))
                .connect(NoTls)?,
        };
        Ok(Conn {
            client,
            stmts: HashMap::new(),
        })
    }

    /// Brings the schema up to date under the advisory lock.
    fn migrate(&self, conn: &mut Conn) -> Attempt<()> {
        let mut tx = conn.client.transaction()?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])?;
        tx.batch_execute("CREATE TABLE IF NOT EXISTS baton_schema (version INT NOT NULL)")?;
        let found: Option<i32> = tx
            .query_one("SELECT MAX(version) FROM baton_schema", &[])?
            .get(0);
        let found = i64::from(found.unwrap_or(0));
        if found > MIGRATIONS.len() as i64 {
            return Err(Fail::Store(Error::NewerSchema {
                path: self.place.clone(),
                found,
                known: MIGRATIONS.len(),
            }));
        }
        if found < MIGRATIONS.len() as i64 {
            for m in &MIGRATIONS[found as usize..] {
                tx.batch_execute(m)?;
            }
            tx.execute("DELETE FROM baton_schema", &[])?;
            tx.execute(
                "INSERT INTO baton_schema (version) VALUES ($1)",
                &[&(MIGRATIONS.len() as i32)],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Runs one operation, reconnecting and retrying it when the connection
    /// is lost. `op` is told whether an earlier attempt lost its connection
    /// (and so may or may not have committed).
    fn run<T>(&self, mut op: impl FnMut(&mut Conn, bool) -> Attempt<T>) -> Result<T> {
        let mut guard = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        // Set once a connection was lost: until when to keep trying, and why.
        let mut lost: Option<(Instant, String)> = None;
        loop {
            if guard.is_none() {
                let (deadline, why) = lost
                    .clone()
                    .unwrap_or_else(|| (Instant::now() + self.reconnect_for, String::new()));
                *guard = Some(self.reconnect(deadline, &why)?);
            }
            let conn = guard.as_mut().expect("connected above");
            let why = match op(conn, lost.is_some()) {
                Ok(v) => return Ok(v),
                Err(Fail::Store(e)) => return Err(e),
                Err(Fail::Pg(e)) if connection_lost(&e) => plain_reason(&e, &self.config),
                Err(Fail::Pg(e)) => return Err(self.pg_error(&e)),
                #[cfg(test)]
                Err(Fail::Lost) => "injected connection loss".to_string(),
            };
            *guard = None;
            let deadline = lost
                .map(|(d, _)| d)
                .unwrap_or_else(|| Instant::now() + self.reconnect_for);
            lost = Some((deadline, why));
        }
    }

    /// Connects again, with backoff, until `deadline`.
    fn reconnect(&self, deadline: Instant, why: &str) -> Result<Conn> {
        let mut delay = Duration::from_millis(50);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let e = match self.open(Some(left.min(Duration::from_secs(10)))) {
                Ok(c) => return Ok(c),
                Err(e) => e,
            };
            let left = deadline.saturating_duration_since(Instant::now());
            if !transient(&e) || left.is_zero() {
                let reason = plain_reason(&e, &self.config);
                return Err(Error::Connect {
                    target: self.target.clone(),
                    reason: if why.is_empty() {
                        reason
                    } else {
                        format!(
                            "{reason} (the connection was lost: {why}; retried for {:?})",
                            self.reconnect_for
                        )
                    },
                });
            }
            std::thread::sleep(delay.min(left));
            delay = (delay * 2).min(Duration::from_secs(2));
        }
    }

    /// A database error that is not a lost connection, in plain words.
    fn pg_error(&self, e: &postgres::Error) -> Error {
        match e.as_db_error() {
            Some(db) => {
                let mut m = format!("{} (SQLSTATE {})", db.message(), db.code().code());
                if let Some(d) = db.detail() {
                    m.push_str(": ");
                    m.push_str(d);
                }
                Error::Postgres(m)
            }
            None => Error::Postgres(chain(e)),
        }
    }

    /// Opens the listening connection (with backoff, for up to
    /// `reconnect_for`) and says whether claimable work is there already,
    /// which may have been announced before it listened.
    fn listen(&self) -> Result<(Client, bool)> {
        let deadline = Instant::now() + self.reconnect_for;
        let mut why = String::new();
        loop {
            let mut conn = self.reconnect(deadline, &why)?;
            let attempt = (|| -> Result<bool, postgres::Error> {
                conn.client.batch_execute(&format!("LISTEN {CHANNEL}"))?;
                Ok(conn.client.query_one(WORK_THERE, &[&now_millis()])?.get(0))
            })();
            match attempt {
                Ok(work) => return Ok((conn.client, work)),
                Err(e) if connection_lost(&e) && Instant::now() < deadline => {
                    why = plain_reason(&e, &self.config);
                }
                Err(e) => return Err(self.pg_error(&e)),
            }
        }
    }
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
                    holder: lease,
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
                        holder: row.lease,
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

/// `host:port` and `host:port/db` of a configuration.
fn places(config: &Config) -> (String, String) {
    let mut hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            Host::Tcp(name) if name.contains(':') => format!("[{name}]"),
            Host::Tcp(name) => name.clone(),
            Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    if hosts.is_empty() {
        hosts = config
            .get_hostaddrs()
            .iter()
            .map(|a| match a {
                std::net::IpAddr::V6(v6) => format!("[{v6}]"),
                std::net::IpAddr::V4(v4) => v4.to_string(),
            })
            .collect();
    }
    let ports = config.get_ports();
    let target = if hosts.is_empty() {
        "(no host)".to_string()
    } else {
        hosts
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
                format!("{h}:{port}")
            })
            .collect::<Vec<_>>()
            .join(",")
    };
    // Like libpq, the database defaults to the user's name.
    let db = config
        .get_dbname()
        .or(config.get_user())
        .unwrap_or("postgres");
    let place = format!("{target}/{db}");
    (target, place)
}

/// The URL without its password, for messages.
fn redact(url: &str) -> String {
    let drop_password = |part: &str, sep: char| -> String {
        part.split(sep)
            .filter(|kv| !kv.trim_start().starts_with("password="))
            .collect::<Vec<_>>()
            .join(&sep.to_string())
    };
    let Some(scheme_end) = url.find("://") else {
        // key=value form.
        return drop_password(url, ' ');
    };
    let (scheme, rest) = url.split_at(scheme_end + 3);
    let (rest, query) = match rest.split_once('?') {
        Some((r, q)) => (r, Some(q)),
        None => (rest, None),
    };
    let auth_end = rest.find('/').unwrap_or(rest.len());
    let rest = match rest[..auth_end].rfind('@') {
        Some(at) => {
            let user = rest[..at].split(':').next().unwrap_or("");
            format!("{user}@{}", &rest[at + 1..])
        }
        None => rest.to_string(),
    };
    match query {
        Some(q) => format!("{scheme}{rest}?{}", drop_password(q, '&')),
        None => format!("{scheme}{rest}"),
    }
}

fn code_is(e: &postgres::Error, codes: &[&str]) -> bool {
    e.code().is_some_and(|c| codes.contains(&c.code()))
}

/// Whether `e` means the connection is gone (so reconnecting may help).
fn connection_lost(e: &postgres::Error) -> bool {
    if e.is_closed() || io_error(e).is_some() {
        return true;
    }
    e.code().is_some_and(|c| {
        c.code().starts_with("08") || matches!(c.code(), "57P01" | "57P02" | "57P03")
    })
}

/// Whether a failed connection attempt is worth repeating: the server is
/// unreachable, starting, shutting down or full; not a wrong password or
/// database.
fn transient(e: &postgres::Error) -> bool {
    match e.as_db_error() {
        None => true,
        Some(db) => {
            let c = db.code().code();
            c.starts_with("08") || c.starts_with("57P") || c == "53300"
        }
    }
}

fn io_error(e: &postgres::Error) -> Option<&std::io::Error> {
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            return Some(io);
        }
        source = s.source();
    }
    None
}

/// An error with its causes, `: `-separated.
fn chain(e: &postgres::Error) -> String {
    let mut s = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(c) = source {
        let m = c.to_string();
        if !s.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        source = c.source();
    }
    s
}

/// Why a connection failed or was lost, in plain words.
fn plain_reason(e: &postgres::Error, config: &Config) -> String {
    if let Some(db) = e.as_db_error() {
        return db.message().to_string();
    }
    if let Some(io) = io_error(e) {
        use std::io::ErrorKind::*;
        return match io.kind() {
            ConnectionRefused => "connection refused".to_string(),
            TimedOut => "timed out".to_string(),
            NotFound => format!("no server socket there ({io})"),
            ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof => {
                "the server closed the connection".to_string()
            }
            _ if io.to_string().contains("lookup address") => {
                let hosts: Vec<String> = config
                    .get_hosts()
                    .iter()
                    .filter_map(|h| match h {
                        Host::Tcp(n) => Some(n.clone()),
                        Host::Unix(_) => None,
                    })
                    .collect();
                format!("could not resolve host {}", hosts.join(","))
            }
            _ => io.to_string(),
        };
    }
    if e.is_closed() {
        return "the server closed the connection".to_string();
    }
    let m = chain(e);
    if m.contains("timeout") {
        return "timed out".to_string();
    }
    m
}

#[cfg(test)]
mod tests {
    //! Faults injected at the edge of a commit: the transaction is lost just
    //! before or just after `COMMIT`, as if the server went away then.

    use super::*;
    use std::cell::Cell;

    thread_local! {
        static ARMED: Cell<Option<Fault>> = const { Cell::new(None) };
    }

    /// Whether `f` is armed on this thread; disarms it.
    pub(super) fn hit(f: Fault) -> bool {
        ARMED.with(|a| {
            if a.get() == Some(f) {
                a.set(None);
                true
            } else {
                false
            }
        })
    }

    impl Fault {
        fn arm(self) {
            ARMED.with(|a| a.set(Some(self)));
        }
    }

    #[test]
    fn redact_drops_passwords() {
        assert_eq!(
            redact("postgres://u:secret@h:1/db?sslmode=disable&password=x"),
            "postgres://u@h:1/db?sslmode=disable"
        );
        assert_eq!(redact("postgres://h/db"), "postgres://h/db");
        assert_eq!(redact("host=h password=secret user=u"), "host=h user=u");
    }

    #[test]
    fn places_name_host_port_and_database() {
        let c: Config = "postgres://u:p@db.example:6543/work".parse().unwrap();
        assert_eq!(
            places(&c),
            ("db.example:6543".into(), "db.example:6543/work".into())
        );
        let c: Config = "postgres://u@localhost".parse().unwrap();
        assert_eq!(places(&c).1, "localhost:5432/u");
    }

    fn task(store: &PgStore, owner: &LeaseOwner) -> TaskState {
        use baton_core::machine::{self, NewTask};
        let wf = baton_core::Workflow::parse(
            "name = \"w\"\n[[phase]]\nid = \"a\"\nrun = \"true\"\n",
            "w.toml",
            "w",
            &|_| Err("none".into()),
        )
        .unwrap();
        store
            .put_definition(&StoredDefinition {
                hash: wf.hash(),
                name: wf.name.clone(),
                json: serde_json::to_string(&wf).unwrap(),
            })
            .unwrap();
        let id = TaskId::parse("t1").unwrap();
        let new = NewTask {
            task_id: id.clone(),
            description: "d".into(),
            project_name: "p".into(),
            flags: Default::default(),
            labels: Default::default(),
            tech_stack: serde_json::json!({}),
        };
        let rec = EventRecord {
            seq: 1,
            ts: Timestamp(10),
            event: machine::create(&wf, new).unwrap(),
        };
        let state = machine::initial(id, &rec).unwrap();
        let lease = Lease {
            owner: owner.clone(),
            acquired_at: Timestamp(0),
            expires_at: Timestamp(1000),
        };
        Fault::AfterCommit.arm();
        store
            .create_task(&state, &[rec], Holder::Lease(&lease))
            .expect("a create whose answer was lost is recognised on retry");
        state
    }

    fn note(state: &mut TaskState, text: &str) -> EventRecord {
        let r = EventRecord {
            seq: state.last_seq + 1,
            ts: Timestamp(20),
            event: baton_core::Event::Note {
                phase: None,
                text: text.into(),
            },
        };
        baton_core::machine::apply(state, &r);
        r
    }

    #[test]
    fn a_commit_lost_before_or_after_commit_lands_exactly_once() {
        let url = baton_testkit::pg::shared().create_database();
        let store = PgStore::connect(&url, Duration::from_secs(10)).unwrap();
        let owner = LeaseOwner {
            host: "h".into(),
            boot_id: "b".into(),
            pid: 7,
            start_time: 1,
        };
        let mut state = task(&store, &owner);
        let id = state.task_id.clone();

        for fault in [Fault::BeforeCommit, Fault::AfterCommit, Fault::AfterCommit] {
            let r = note(&mut state, &format!("{fault:?}"));
            fault.arm();
            store
                .commit(&owner, &state, &PhaseWrites::Changed(vec![]), &[r])
                .unwrap_or_else(|e| panic!("{fault:?}: {e}"));
            assert!(!hit(fault), "the fault fired");
        }
        let events = store.events(&id, 0, usize::MAX).unwrap();
        assert_eq!(
            events.iter().map(|e| e.seq).collect::<Vec<_>>(),
            vec![1, 2, 3, 4]
        );
        assert_eq!(store.load(&id).unwrap().unwrap().state, state);
        assert!(store.check().unwrap().is_empty());
    }
}
