//! The SQL of the PostgreSQL backend: the migrations, the advisory lock they
//! run under, and every statement the store prepares.

/// Versioned migrations; `baton_schema.version` records how many ran.
pub(super) const MIGRATIONS: &[&str] = &[
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
"#,
    r#"
CREATE TABLE instances (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    parent TEXT,
    updated_at BIGINT NOT NULL,
    data TEXT NOT NULL
);
CREATE TABLE instance_events (
    seq BIGINT PRIMARY KEY,
    ts BIGINT NOT NULL,
    kind TEXT NOT NULL,
    instance_id TEXT NOT NULL,
    payload TEXT NOT NULL
);
"#,
    r#"
CREATE TABLE deliveries (
    id TEXT PRIMARY KEY,
    received_at BIGINT NOT NULL,
    event TEXT NOT NULL,
    action TEXT,
    repository TEXT,
    payload TEXT,
    settled_at BIGINT,
    decision TEXT NOT NULL,
    why TEXT NOT NULL,
    tasks TEXT NOT NULL
);
CREATE INDEX deliveries_received ON deliveries (received_at);
CREATE INDEX deliveries_unsettled ON deliveries (received_at) WHERE settled_at IS NULL;
"#,
    r#"
CREATE TABLE progress (
    repository TEXT PRIMARY KEY,
    updated_at BIGINT NOT NULL,
    data TEXT NOT NULL
);
CREATE TABLE plays (
    name TEXT PRIMARY KEY,
    updated_at BIGINT NOT NULL,
    data TEXT NOT NULL
);
"#,
    r#"
CREATE TABLE workspaces (
    name TEXT PRIMARY KEY,
    updated_at BIGINT NOT NULL,
    data TEXT NOT NULL
);
"#,
    r#"
CREATE TABLE teams (
    id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    last_seq BIGINT NOT NULL,
    msg_seq BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    data TEXT NOT NULL
);
CREATE TABLE team_events (
    team_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    ts BIGINT NOT NULL,
    payload TEXT NOT NULL,
    PRIMARY KEY (team_id, seq)
);
CREATE TABLE team_messages (
    team_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    msg_id TEXT NOT NULL,
    sender TEXT NOT NULL,
    recipient TEXT NOT NULL,
    ts BIGINT NOT NULL,
    kind TEXT NOT NULL,
    subject TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (team_id, seq),
    UNIQUE (team_id, msg_id)
);
CREATE INDEX team_messages_to ON team_messages (team_id, recipient, sender, seq);
CREATE TABLE team_acks (
    team_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    name TEXT NOT NULL,
    PRIMARY KEY (team_id, seq, name)
);
CREATE TABLE team_presence (
    team_id TEXT NOT NULL,
    name TEXT NOT NULL,
    seq BIGINT NOT NULL,
    sent_at BIGINT,
    received_at BIGINT NOT NULL,
    PRIMARY KEY (team_id, name)
);
"#,
    r#"
CREATE TABLE inbox (
    id TEXT PRIMARY KEY,
    item_key TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL,
    open BOOLEAN NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX inbox_open ON inbox (open, created_at);
"#,
    r#"
-- The newest delivery of each signed body: a body seen again within the
-- replay window is a redelivery, whatever its delivery id.
CREATE TABLE delivery_bodies (
    digest TEXT PRIMARY KEY,
    delivery_id TEXT NOT NULL,
    received_at BIGINT NOT NULL
);
CREATE TABLE capabilities (
    digest TEXT PRIMARY KEY,
    task_id TEXT,
    phase TEXT,
    instance_id TEXT,
    created_at BIGINT NOT NULL,
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
    received_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
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
    updated_at BIGINT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (repository, task_id)
);
INSERT INTO task_stages (repository, task_id, updated_at, data)
    SELECT repository, data::jsonb ->> 'task_id', updated_at, data FROM progress
    WHERE data::jsonb ->> 'task_id' IS NOT NULL;
"#,
    r#"
-- A person's comments on a task's or an instance's work, kept until they
-- reach the agent.
CREATE TABLE comments (
    id TEXT PRIMARY KEY,
    target TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    delivered BOOLEAN NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX comments_target ON comments (target, created_at);
-- Tasks to start once the tasks they need are complete.
CREATE TABLE task_links (
    id TEXT PRIMARY KEY,
    created_at BIGINT NOT NULL,
    started BOOLEAN NOT NULL,
    data TEXT NOT NULL
);
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

/// The advisory lock migrations run under ("baton" in ASCII, then 1), so
/// workers starting together do not race to create the tables.
pub(super) const SCHEMA_LOCK: i64 = 0x6261_746f_6e00_0001;

/// The channel queued work is announced on.
pub(super) const CHANNEL: &str = "baton_work";

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
pub(super) const WRITE_PROJECTION: &str = concat!(
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
pub(super) const COMMIT: &str = "WITH t AS (
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
pub(super) const WRITE_NEW: &str = concat!(
    write_journal_and_phases!(),
    "SELECT pg_notify('baton_work', '') WHERE $13::boolean"
);

pub(super) const INSERT_TASK: &str = "INSERT INTO tasks (id, workflow, description, status, last_phase, created_at, updated_at, last_seq, definition_hash, lease, lease_expires_at, header, queued, cancel_requested)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) ON CONFLICT (id) DO NOTHING";
pub(super) const TASK_IDENTITY: &str = "SELECT last_seq, created_at FROM tasks WHERE id = $1";
pub(super) const LOCK_TASK: &str =
    "SELECT lease, cancel_requested, queued FROM tasks WHERE id = $1 FOR UPDATE";
pub(super) const EVENT_PAYLOAD: &str = "SELECT payload FROM events WHERE task_id = $1 AND seq = $2";
pub(super) const MAX_SEQ: &str = "SELECT COALESCE(MAX(seq), 0) FROM events WHERE task_id = $1";
pub(super) const SET_LEASE: &str =
    "UPDATE tasks SET lease = $2, lease_expires_at = $3, cancel_requested = false WHERE id = $1";
pub(super) const RENEW_LEASE: &str =
    "UPDATE tasks SET lease = $2, lease_expires_at = $3 WHERE id = $1";
pub(super) const CLEAR_LEASE: &str =
    "UPDATE tasks SET lease = NULL, lease_expires_at = NULL WHERE id = $1";
pub(super) const NOTIFY: &str = "SELECT pg_notify('baton_work', '')";
pub(super) const REQUEST_CANCEL: &str = "UPDATE tasks SET cancel_requested = true WHERE id = $1";
pub(super) const DELETE_TASK: &str =
    "WITH e AS (DELETE FROM events WHERE task_id = $1) DELETE FROM tasks WHERE id = $1";
pub(super) const LOAD: &str = "SELECT header, last_seq, lease, cancel_requested, queued,
        ARRAY(SELECT data FROM phases WHERE task_id = $1 ORDER BY idx)
     FROM tasks WHERE id = $1";
pub(super) const LIST: &str = "SELECT id, workflow, description, status, last_phase, created_at, updated_at, lease, queued FROM tasks ORDER BY created_at, id";
pub(super) const EVENTS: &str =
    "SELECT seq, ts, payload FROM events WHERE task_id = $1 AND seq > $2 ORDER BY seq LIMIT $3";
pub(super) const PUT_DEFINITION: &str =
    "INSERT INTO definitions (hash, name, json) VALUES ($1, $2, $3) ON CONFLICT (hash) DO NOTHING";
pub(super) const GET_DEFINITION: &str = "SELECT hash, name, json FROM definitions WHERE hash = $1";
pub(super) const ALL_DEFINITIONS: &str = "SELECT hash, name, json FROM definitions ORDER BY hash";
pub(super) const DEFINITION_HASHES: &str = "SELECT hash FROM definitions ORDER BY hash";
pub(super) const CLAIM: &str = "UPDATE tasks SET lease = $1, lease_expires_at = $2
     WHERE id = (
        SELECT id FROM tasks
        WHERE queued AND status = 'RUNNING' AND (lease IS NULL OR lease_expires_at <= $3)
          AND NOT (id = ANY($4))
        ORDER BY created_at, id LIMIT 1
        FOR UPDATE SKIP LOCKED)
     RETURNING id";
pub(super) const WORK_THERE: &str = "SELECT EXISTS (SELECT 1 FROM tasks
     WHERE queued AND status = 'RUNNING' AND (lease IS NULL OR lease_expires_at <= $1))";

/// The server's clock in ms since the epoch (`clock_timestamp()`, not the
/// transaction's start): the one clock leases are judged by.
pub(super) const SERVER_NOW: &str = "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint";
