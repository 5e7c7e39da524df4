//! The SQLite backend: one file in WAL mode, `synchronous=FULL` by default.

use crate::codec::{Header, corrupt, header_json, json, read_lease};
use crate::{
    Acquire, Durability, Error, Holder, PhaseWrites, RenewOutcome, Result, Store, StoredDefinition,
    TaskSnapshot, TaskSummary, last_phase,
};
use baton_core::lease::{Lease, LeaseOwner};
use baton_core::state::{PhaseState, TaskStatus};
use baton_core::{EventRecord, TaskId, TaskState, Timestamp};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use std::path::Path;
use std::sync::Mutex;

mod buffered;
mod capabilities;
mod comments;
mod deliveries;
mod inbox;
mod instances;
mod links;
mod plays;
mod progress;
pub mod salvage;
mod teams;
mod workspaces;

/// SQLite's `synchronous` setting for the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Synchronous {
    /// Every commit is on disk before it returns (the default).
    #[default]
    Full,
    /// Commits may be lost on power failure (never corrupted); faster.
    Normal,
}

/// Versioned migrations; `PRAGMA user_version` records how many ran.
const MIGRATIONS: &[&str] = &[
    r#"
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
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    last_seq INTEGER NOT NULL,
    definition_hash TEXT NOT NULL REFERENCES definitions(hash),
    lease TEXT,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    header TEXT NOT NULL
);
CREATE INDEX tasks_created ON tasks(created_at);
-- Rowid tables (not WITHOUT ROWID): rows carrying 1 KB summaries would
-- each take a mostly empty overflow page in a WITHOUT ROWID b-tree.
CREATE TABLE phases (
    task_id TEXT NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    id TEXT NOT NULL,
    status TEXT NOT NULL,
    data TEXT NOT NULL,
    UNIQUE (task_id, idx)
);
CREATE TABLE events (
    task_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    ts INTEGER NOT NULL,
    kind TEXT NOT NULL,
    phase TEXT,
    attempt INTEGER,
    payload TEXT NOT NULL,
    UNIQUE (task_id, seq)
);
"#,
    r#"
ALTER TABLE tasks ADD COLUMN queued INTEGER NOT NULL DEFAULT 0;
"#,
    r#"
CREATE TABLE instances (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    parent TEXT,
    updated_at INTEGER NOT NULL,
    data TEXT NOT NULL
);
CREATE TABLE instance_events (
    seq INTEGER PRIMARY KEY,
    ts INTEGER NOT NULL,
    kind TEXT NOT NULL,
    instance_id TEXT NOT NULL,
    payload TEXT NOT NULL
);
"#,
    r#"
CREATE TABLE deliveries (
    id TEXT PRIMARY KEY,
    received_at INTEGER NOT NULL,
    event TEXT NOT NULL,
    action TEXT,
    repository TEXT,
    payload TEXT,
    settled_at INTEGER,
    decision TEXT NOT NULL,
    why TEXT NOT NULL,
    tasks TEXT NOT NULL
);
CREATE INDEX deliveries_received ON deliveries(received_at);
"#,
    r#"
CREATE TABLE progress (
    repository TEXT PRIMARY KEY,
    updated_at INTEGER NOT NULL,
    data TEXT NOT NULL
);
CREATE TABLE plays (
    name TEXT PRIMARY KEY,
    updated_at INTEGER NOT NULL,
    data TEXT NOT NULL
);
"#,
    r#"
CREATE TABLE workspaces (
    name TEXT PRIMARY KEY,
    updated_at INTEGER NOT NULL,
    data TEXT NOT NULL
);
"#,
    r#"
CREATE TABLE teams (
    id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    last_seq INTEGER NOT NULL,
    msg_seq INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    data TEXT NOT NULL
);
CREATE TABLE team_events (
    team_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    ts INTEGER NOT NULL,
    payload TEXT NOT NULL,
    PRIMARY KEY (team_id, seq)
);
CREATE TABLE team_messages (
    team_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    msg_id TEXT NOT NULL,
    sender TEXT NOT NULL,
    recipient TEXT NOT NULL,
    ts INTEGER NOT NULL,
    kind TEXT NOT NULL,
    subject TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (team_id, seq),
    UNIQUE (team_id, msg_id)
);
CREATE INDEX team_messages_to ON team_messages (team_id, recipient, sender, seq);
CREATE TABLE team_acks (
    team_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    name TEXT NOT NULL,
    PRIMARY KEY (team_id, seq, name)
);
CREATE TABLE team_presence (
    team_id TEXT NOT NULL,
    name TEXT NOT NULL,
    seq INTEGER NOT NULL,
    sent_at INTEGER,
    received_at INTEGER NOT NULL,
    PRIMARY KEY (team_id, name)
);
"#,
    r#"
CREATE TABLE inbox (
    id TEXT PRIMARY KEY,
    item_key TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL,
    open INTEGER NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX inbox_open ON inbox (open, created_at);
"#,
    r#"
-- The newest delivery of each signed body: a body seen again within the
-- replay window is a redelivery, whatever its delivery id.
CREATE TABLE delivery_bodies (
    digest BLOB PRIMARY KEY,
    received_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE capabilities (
    digest TEXT PRIMARY KEY,
    task_id TEXT,
    phase TEXT,
    instance_id TEXT,
    created_at INTEGER NOT NULL,
    scope TEXT NOT NULL
);
CREATE INDEX capabilities_task ON capabilities (task_id, phase);
CREATE INDEX capabilities_instance ON capabilities (instance_id);
"#,
    r#"
-- Deliveries that came before the stage they are for: kept for that
-- task's wait phase until the task reaches it, or the time runs out.
CREATE TABLE buffered_events (
    task_id TEXT NOT NULL,
    phase TEXT NOT NULL,
    delivery_id TEXT NOT NULL,
    event TEXT NOT NULL,
    payload TEXT NOT NULL,
    branch_pattern TEXT NOT NULL,
    received_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (task_id, phase, delivery_id)
);
"#,
    r#"
-- Each task's stage record (its repository's progress record holds only
-- the task that moved last): a task deleted and created again continues
-- from its own. Those the repository records already hold are kept.
CREATE TABLE task_stages (
    repository TEXT NOT NULL,
    task_id TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (repository, task_id)
);
INSERT INTO task_stages (repository, task_id, updated_at, data)
    SELECT repository, json_extract(data, '$.task_id'), updated_at, data FROM progress
    WHERE json_extract(data, '$.task_id') IS NOT NULL;
"#,
    r#"
-- A person's comments on a task's or an instance's work, kept until they
-- reach the agent.
CREATE TABLE comments (
    id TEXT PRIMARY KEY,
    target TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    delivered INTEGER NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX comments_target ON comments (target, created_at);
-- Tasks to start once the tasks they need are complete.
CREATE TABLE task_links (
    id TEXT PRIMARY KEY,
    created_at INTEGER NOT NULL,
    started INTEGER NOT NULL,
    data TEXT NOT NULL
);
"#,
    r#"
-- Which delivery last claimed a body: a body whose delivery was only
-- ignored (no task waited) never makes a redelivery of it a replay.
ALTER TABLE delivery_bodies ADD COLUMN delivery_id TEXT;
"#,
    r#"
-- Repository names have no case on GitHub: progress records are keyed by
-- the name in lower case (of spellings of one name, the newest stays).
DELETE FROM progress WHERE EXISTS (SELECT 1 FROM progress b
    WHERE lower(b.repository) = lower(progress.repository) AND b.repository <> progress.repository
      AND (b.updated_at > progress.updated_at OR (b.updated_at = progress.updated_at AND b.repository > progress.repository)));
UPDATE progress SET repository = lower(repository);
DELETE FROM task_stages WHERE EXISTS (SELECT 1 FROM task_stages b
    WHERE lower(b.repository) = lower(task_stages.repository) AND b.task_id = task_stages.task_id
      AND b.repository <> task_stages.repository
      AND (b.updated_at > task_stages.updated_at OR (b.updated_at = task_stages.updated_at AND b.repository > task_stages.repository)));
UPDATE task_stages SET repository = lower(repository);
"#,
];

/// SQLite cannot write where the store is (a read-only folder, mount or
/// file).
fn cannot_write(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::ReadOnly | rusqlite::ErrorCode::CannotOpen)
    )
}

/// The file is not a database, or a damaged one.
fn is_damaged(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt)
    )
}

/// SQLite's "busy" or "locked".
fn is_locked(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

pub struct SqliteStore {
    conn: Mutex<Connection>,
    path: String,
    sync: Synchronous,
}

impl SqliteStore {
    /// Opens (creating if needed) the store at `path` and runs migrations.
    pub fn open(path: &Path, sync: Synchronous) -> Result<Self> {
        let open_err = |reason: String| Error::Open {
            path: path.display().to_string(),
            reason,
        };
        // A store being created by another process at this moment (its
        // switch to WAL, its migrations) can answer "locked" without
        // waiting for the busy timeout: try again for a while.
        let started = std::time::Instant::now();
        loop {
            let opened = Connection::open(path).map_err(Error::Sqlite);
            match opened.and_then(|conn| Self::setup(conn, sync)) {
                Err(Error::Sqlite(e))
                    if is_locked(&e) && started.elapsed() < std::time::Duration::from_secs(30) =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                // A folder or mount that cannot be written: read it as it
                // is (reading never needs to write).
                Err(Error::Sqlite(e)) if cannot_write(&e) && path.is_file() => {
                    return Self::open_read_only(path).map_err(|_| open_err(e.to_string()));
                }
                Err(Error::Sqlite(e)) if is_damaged(&e) => {
                    return Err(Error::Corrupt(format!("{}: {e}", path.display())));
                }
                Err(Error::Sqlite(e)) => return Err(open_err(e.to_string())),
                other => return other,
            }
        }
    }

    /// The store on a read-only folder or mount: opened for reading only
    /// (its WAL read through memory when its `-shm` cannot be written),
    /// at the schema it has; a write is refused as [`Error::ReadOnly`].
    fn open_read_only(path: &Path) -> Result<Self> {
        use rusqlite::OpenFlags;
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI;
        let uri = |extra: &str| format!("file:{}?mode=ro{extra}", path.display());
        let conn = Connection::open_with_flags(uri(""), flags)
            .and_then(|c| {
                c.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))
                    .map(|_| c)
            })
            // Nothing can change a file on a read-only mount: SQLite may
            // read it without its locks.
            .or_else(|_| Connection::open_with_flags(uri("&immutable=1"), flags))?;
        conn.busy_timeout(std::time::Duration::from_secs(30))?;
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version as usize > MIGRATIONS.len() {
            return Err(Error::NewerSchema {
                path: path.display().to_string(),
                found: version,
                known: MIGRATIONS.len(),
            });
        }
        if (version as usize) < MIGRATIONS.len() {
            return Err(Error::Open {
                path: path.display().to_string(),
                reason: "it is read-only, and this baton must upgrade its schema first".into(),
            });
        }
        Ok(SqliteStore {
            path: path.display().to_string(),
            conn: Mutex::new(conn),
            sync: Synchronous::Full,
        })
    }

    /// Whether this store was opened for reading only (a read-only folder).
    pub fn is_read_only(&self) -> bool {
        self.conn().is_readonly(rusqlite::MAIN_DB).unwrap_or(false)
    }

    /// An in-memory store, for tests.
    pub fn in_memory() -> Result<Self> {
        Self::setup(Connection::open_in_memory()?, Synchronous::Full)
    }

    fn setup(conn: Connection, sync: Synchronous) -> Result<Self> {
        conn.busy_timeout(std::time::Duration::from_secs(30))?;
        // journal_mode returns a row; query it rather than execute it.
        let _mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
        conn.execute_batch(match sync {
            Synchronous::Full => "PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;",
            Synchronous::Normal => "PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;",
        })?;
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version as usize > MIGRATIONS.len() {
            return Err(Error::NewerSchema {
                path: conn.path().unwrap_or("?").to_string(),
                found: version,
                known: MIGRATIONS.len(),
            });
        }
        for (i, m) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            // Two baton commands may open a new store at once: take the
            // write lock first, then see whether the step is still to do.
            conn.execute_batch("BEGIN IMMEDIATE")?;
            let step = (|| -> Result<()> {
                let now: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
                if now as usize <= i {
                    conn.execute_batch(m)?;
                    conn.pragma_update(None, "user_version", (i + 1) as i64)?;
                }
                Ok(())
            })();
            match step {
                Ok(()) => conn.execute_batch("COMMIT")?,
                Err(e) => {
                    let _ = conn.execute_batch("ROLLBACK");
                    return Err(e);
                }
            }
        }
        Ok(SqliteStore {
            path: conn
                .path()
                .filter(|p| !p.is_empty())
                .unwrap_or(":memory:")
                .to_string(),
            conn: Mutex::new(conn),
            sync,
        })
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave a half transaction
        // (rusqlite rolls back on drop), so a poisoned lock is still usable.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// One commit in its own transaction (see [`Store::commit`]).
fn commit_in(
    conn: &mut Connection,
    owner: &LeaseOwner,
    state: &TaskState,
    phases: &PhaseWrites,
    events: &[EventRecord],
) -> Result<()> {
    let id = &state.task_id;
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let row: Option<(i64, Option<String>)> = tx
        .query_row(
            "SELECT last_seq, lease FROM tasks WHERE id = ?1",
            [id.as_str()],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let Some((last_seq, lease)) = row else {
        return Err(Error::NotFound(id.clone()));
    };
    let lease = read_lease(lease)?;
    if lease.as_ref().map(|l| &l.owner) != Some(owner) {
        return Err(Error::LeaseLost {
            task: id.clone(),
            holder: lease.map(Box::new),
        });
    }
    if let Some(first) = events.first()
        && first.seq != last_seq as u64 + 1
    {
        return Err(Error::SeqConflict {
            task: id.clone(),
            expected: first.seq,
            found: last_seq as u64,
        });
    }
    insert_events(&tx, id, events)?;
    update_task_row(&tx, state)?;
    write_phases(&tx, state, phases)?;
    tx.commit()?;
    Ok(())
}

/// The lease of a task inside a transaction: `None` if there is no task.
fn lease_in(tx: &rusqlite::Transaction<'_>, id: &TaskId) -> Result<Option<Option<Lease>>> {
    let raw: Option<Option<String>> = tx
        .query_row(
            "SELECT lease FROM tasks WHERE id = ?1",
            [id.as_str()],
            |r| r.get(0),
        )
        .optional()?;
    raw.map(read_lease).transpose()
}

/// Writes a task's row from its state; returns the rows changed (0: no task).
fn update_task_row(tx: &rusqlite::Transaction<'_>, state: &TaskState) -> Result<usize> {
    Ok(tx.execute(
        "UPDATE tasks SET status = ?2, last_phase = ?3, updated_at = ?4, last_seq = ?5, definition_hash = ?6, header = ?7 WHERE id = ?1",
        params![
            state.task_id.as_str(),
            state.status.as_str(),
            last_phase(state),
            state.updated_at.millis(),
            state.last_seq as i64,
            state.definition_hash,
            header_json(state),
        ],
    )?)
}

fn insert_events(
    tx: &rusqlite::Transaction<'_>,
    id: &TaskId,
    events: &[EventRecord],
) -> Result<()> {
    let mut stmt = tx.prepare_cached(
        "INSERT INTO events (task_id, seq, ts, kind, phase, attempt, payload) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    for r in events {
        stmt.execute(params![
            id.as_str(),
            r.seq as i64,
            r.ts.millis(),
            r.event.kind(),
            r.event.phase().map(|p| p.as_str()),
            r.event.attempt(),
            json(&r.event),
        ])?;
    }
    Ok(())
}

fn write_phases(
    tx: &rusqlite::Transaction<'_>,
    state: &TaskState,
    writes: &PhaseWrites,
) -> Result<()> {
    let id = state.task_id.as_str();
    let all: Vec<usize>;
    let indices = match writes {
        PhaseWrites::Changed(ix) => ix.as_slice(),
        PhaseWrites::All => {
            tx.execute("DELETE FROM phases WHERE task_id = ?1", [id])?;
            all = (0..state.phases.len()).collect();
            all.as_slice()
        }
    };
    let mut stmt = tx.prepare_cached(
        "INSERT INTO phases (task_id, idx, id, status, data) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (task_id, idx) DO UPDATE SET id = excluded.id, status = excluded.status, data = excluded.data",
    )?;
    for &i in indices {
        let p: &PhaseState = &state.phases[i];
        stmt.execute(params![
            id,
            i as i64,
            p.id.as_str(),
            p.status.as_str(),
            json(p)
        ])?;
    }
    Ok(())
}

impl Store for SqliteStore {
    fn put_definition(&self, def: &StoredDefinition) -> Result<()> {
        self.conn().execute(
            "INSERT OR IGNORE INTO definitions (hash, name, json) VALUES (?1, ?2, ?3)",
            params![def.hash, def.name, def.json],
        )?;
        Ok(())
    }

    fn definition(&self, hash: &str) -> Result<Option<StoredDefinition>> {
        Ok(self
            .conn()
            .query_row(
                "SELECT hash, name, json FROM definitions WHERE hash = ?1",
                [hash],
                |r| {
                    Ok(StoredDefinition {
                        hash: r.get(0)?,
                        name: r.get(1)?,
                        json: r.get(2)?,
                    })
                },
            )
            .optional()?)
    }

    fn create_task(
        &self,
        state: &TaskState,
        events: &[EventRecord],
        holder: Holder<'_>,
    ) -> Result<()> {
        let (lease, queued) = match holder {
            Holder::Lease(l) => (Some(json(l)), false),
            Holder::Queue => (None, true),
        };
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let exists: bool = tx
            .query_row(
                "SELECT 1 FROM tasks WHERE id = ?1",
                [state.task_id.as_str()],
                |_| Ok(true),
            )
            .optional()?
            .unwrap_or(false);
        if exists {
            return Err(Error::AlreadyExists(state.task_id.clone()));
        }
        tx.execute(
            "INSERT INTO tasks (id, workflow, description, status, last_phase, created_at, updated_at, last_seq, definition_hash, lease, header, queued)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            params![
                state.task_id.as_str(),
                state.workflow,
                state.description,
                state.status.as_str(),
                last_phase(state),
                state.created_at.millis(),
                state.updated_at.millis(),
                state.last_seq as i64,
                state.definition_hash,
                lease,
                header_json(state),
                queued,
            ],
        )?;
        insert_events(&tx, &state.task_id, events)?;
        write_phases(&tx, state, &PhaseWrites::All)?;
        tx.commit()?;
        Ok(())
    }

    fn commit(
        &self,
        owner: &LeaseOwner,
        state: &TaskState,
        phases: &PhaseWrites,
        events: &[EventRecord],
        durability: Durability,
    ) -> Result<()> {
        let mut conn = self.conn();
        // In WAL mode, NORMAL writes the transaction to the WAL without
        // syncing it; the next FULL commit syncs the WAL up to itself.
        let relax = durability == Durability::Process && self.sync == Synchronous::Full;
        if relax {
            conn.execute_batch("PRAGMA synchronous=NORMAL")?;
        }
        let committed = commit_in(&mut conn, owner, state, phases, events);
        if relax {
            conn.execute_batch("PRAGMA synchronous=FULL")?;
        }
        committed
    }

    fn load(&self, id: &TaskId) -> Result<Option<TaskSnapshot>> {
        let conn = self.conn();
        let row: Option<(String, i64, Option<String>, bool, bool)> = conn
            .query_row(
                "SELECT header, last_seq, lease, cancel_requested, queued FROM tasks WHERE id = ?1",
                [id.as_str()],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
            )
            .optional()?;
        let Some((header, last_seq, lease, cancel_requested, queued)) = row else {
            return Ok(None);
        };
        let h = Header::parse(&header, id)?;
        let lease = read_lease(lease)?;
        let mut stmt =
            conn.prepare_cached("SELECT data FROM phases WHERE task_id = ?1 ORDER BY idx")?;
        let phases = stmt
            .query_map([id.as_str()], |r| r.get::<_, String>(0))?
            .map(|d| {
                let d = d?;
                serde_json::from_str::<PhaseState>(&d)
                    .map_err(|e| corrupt(&format!("task {id} phase"), e))
            })
            .collect::<Result<Vec<_>>>()?;
        let state = h.into_state(id.clone(), phases, last_seq as u64);
        Ok(Some(TaskSnapshot {
            state,
            lease,
            cancel_requested,
            queued,
        }))
    }

    fn list(&self) -> Result<Vec<TaskSummary>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT id, workflow, description, status, last_phase, created_at, updated_at, lease, queued FROM tasks ORDER BY created_at, id",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, Option<String>>(4)?,
                r.get::<_, i64>(5)?,
                r.get::<_, i64>(6)?,
                r.get::<_, Option<String>>(7)?,
                r.get::<_, bool>(8)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (id, workflow, description, status, last_phase, created, updated, lease, queued) =
                row?;
            out.push(TaskSummary {
                id: TaskId::parse(&id).map_err(|e| corrupt("task id", e))?,
                workflow,
                description,
                status: TaskStatus::parse(&status)
                    .ok_or_else(|| corrupt("task status", &status))?,
                last_phase,
                created_at: Timestamp(created),
                updated_at: Timestamp(updated),
                lease: read_lease(lease)?,
                queued,
            });
        }
        Ok(out)
    }

    fn events(&self, id: &TaskId, after: u64, limit: usize) -> Result<Vec<EventRecord>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT seq, ts, payload FROM events WHERE task_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
        )?;
        let rows = stmt.query_map(
            params![
                id.as_str(),
                after as i64,
                limit.min(i64::MAX as usize) as i64
            ],
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                ))
            },
        )?;
        let mut out = Vec::new();
        for row in rows {
            let (seq, ts, payload) = row?;
            out.push(EventRecord {
                seq: seq as u64,
                ts: Timestamp(ts),
                event: serde_json::from_str(&payload)
                    .map_err(|e| corrupt(&format!("task {id} event {seq}"), e))?,
            });
        }
        Ok(out)
    }

    fn acquire(&self, id: &TaskId, lease: &Lease, replace: Option<&LeaseOwner>) -> Result<Acquire> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let Some(current) = lease_in(&tx, id)? else {
            return Err(Error::NotFound(id.clone()));
        };
        if let Some(cur) = current
            && cur.owner != lease.owner
            && Some(&cur.owner) != replace
        {
            return Ok(Acquire::Held(cur));
        }
        tx.execute(
            "UPDATE tasks SET lease = ?2, cancel_requested = 0 WHERE id = ?1",
            params![id.as_str(), json(lease)],
        )?;
        tx.commit()?;
        Ok(Acquire::Acquired)
    }

    fn renew(
        &self,
        id: &TaskId,
        owner: &LeaseOwner,
        expires_at: Timestamp,
    ) -> Result<RenewOutcome> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let row: Option<(Option<String>, bool)> = tx
            .query_row(
                "SELECT lease, cancel_requested FROM tasks WHERE id = ?1",
                [id.as_str()],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        let Some((lease, cancel_requested)) = row else {
            return Ok(RenewOutcome::Lost);
        };
        match read_lease(lease)? {
            Some(mut l) if &l.owner == owner => {
                l.expires_at = expires_at;
                tx.execute(
                    "UPDATE tasks SET lease = ?2 WHERE id = ?1",
                    params![id.as_str(), json(&l)],
                )?;
                tx.commit()?;
                Ok(RenewOutcome::Renewed { cancel_requested })
            }
            _ => Ok(RenewOutcome::Lost),
        }
    }

    fn release(&self, id: &TaskId, owner: &LeaseOwner) -> Result<()> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        if let Some(lease) = lease_in(&tx, id)?
            && lease.is_some_and(|l| &l.owner == owner)
        {
            tx.execute("UPDATE tasks SET lease = NULL WHERE id = ?1", [id.as_str()])?;
            tx.commit()?;
        }
        Ok(())
    }

    fn request_cancel(&self, id: &TaskId) -> Result<()> {
        let n = self.conn().execute(
            "UPDATE tasks SET cancel_requested = 1 WHERE id = ?1",
            [id.as_str()],
        )?;
        if n == 0 {
            return Err(Error::NotFound(id.clone()));
        }
        Ok(())
    }

    fn delete_task(&self, id: &TaskId) -> Result<bool> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute("DELETE FROM events WHERE task_id = ?1", [id.as_str()])?;
        tx.execute("DELETE FROM phases WHERE task_id = ?1", [id.as_str()])?;
        let n = tx.execute("DELETE FROM tasks WHERE id = ?1", [id.as_str()])?;
        tx.commit()?;
        Ok(n > 0)
    }

    fn replace_projection(&self, state: &TaskState, seen_lease: Option<&Lease>) -> Result<()> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let id = &state.task_id;
        let Some(lease) = lease_in(&tx, id)? else {
            return Err(Error::NotFound(id.clone()));
        };
        if lease.as_ref() != seen_lease {
            return Err(Error::LeaseLost {
                task: id.clone(),
                holder: lease.map(Box::new),
            });
        }
        let last: i64 = tx.query_row(
            "SELECT COALESCE(MAX(seq), 0) FROM events WHERE task_id = ?1",
            [id.as_str()],
            |r| r.get(0),
        )?;
        if last as u64 != state.last_seq {
            return Err(Error::SeqConflict {
                task: id.clone(),
                expected: state.last_seq,
                found: last as u64,
            });
        }
        let n = update_task_row(&tx, state)?;
        if n == 0 {
            return Err(Error::NotFound(state.task_id.clone()));
        }
        write_phases(&tx, state, &PhaseWrites::All)?;
        tx.commit()?;
        Ok(())
    }

    fn claim(&self, lease: &Lease, skip: &[TaskId]) -> Result<Option<TaskId>> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let candidates: Vec<(String, Option<String>)> = {
            let mut stmt = tx.prepare_cached(
                "SELECT id, lease FROM tasks WHERE queued = 1 AND status = 'RUNNING' ORDER BY created_at, id",
            )?;
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<_, _>>()?
        };
        for (id, held) in candidates {
            if skip.iter().any(|s| s.as_str() == id) {
                continue;
            }
            let free = match read_lease(held)? {
                None => true,
                Some(l) => l.expires_at <= lease.acquired_at,
            };
            if free {
                tx.execute(
                    "UPDATE tasks SET lease = ?2 WHERE id = ?1",
                    params![id, json(lease)],
                )?;
                tx.commit()?;
                return TaskId::parse(&id)
                    .map(Some)
                    .map_err(|e| corrupt("task id", e));
            }
        }
        Ok(None)
    }

    fn wait_for_work(&self, timeout: std::time::Duration) -> Result<()> {
        // One file on one machine: a short sleep is as good as a signal.
        std::thread::sleep(timeout.min(std::time::Duration::from_millis(200)));
        Ok(())
    }

    fn definitions(&self) -> Result<Vec<StoredDefinition>> {
        let conn = self.conn();
        let mut stmt = conn.prepare("SELECT hash, name, json FROM definitions ORDER BY hash")?;
        let rows = stmt.query_map([], |r| {
            Ok(StoredDefinition {
                hash: r.get(0)?,
                name: r.get(1)?,
                json: r.get(2)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn definition_hashes(&self) -> Result<Vec<String>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached("SELECT hash FROM definitions ORDER BY hash")?;
        let rows = stmt.query_map([], |r| r.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn import_task(&self, snap: &TaskSnapshot, events: &[EventRecord]) -> Result<()> {
        let state = &snap.state;
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        if lease_in(&tx, &state.task_id)?.is_some() {
            return Err(Error::AlreadyExists(state.task_id.clone()));
        }
        tx.execute(
            "INSERT INTO tasks (id, workflow, description, status, last_phase, created_at, updated_at, last_seq, definition_hash, lease, header, queued, cancel_requested)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, NULL, ?10, ?11, ?12)",
            params![
                state.task_id.as_str(),
                state.workflow,
                state.description,
                state.status.as_str(),
                last_phase(state),
                state.created_at.millis(),
                state.updated_at.millis(),
                state.last_seq as i64,
                state.definition_hash,
                header_json(state),
                snap.queued,
                snap.cancel_requested,
            ],
        )?;
        insert_events(&tx, &state.task_id, events)?;
        write_phases(&tx, state, &PhaseWrites::All)?;
        tx.commit()?;
        Ok(())
    }

    fn describe(&self) -> String {
        self.path.clone()
    }

    fn check(&self) -> Result<Vec<String>> {
        let conn = self.conn();
        let mut stmt = conn.prepare("PRAGMA integrity_check")?;
        let rows: Vec<String> = stmt
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<Result<_, _>>()?;
        Ok(rows.into_iter().filter(|r| r != "ok").collect())
    }
}
