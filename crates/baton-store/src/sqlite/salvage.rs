//! Salvage: copying into this store what can still be read from a damaged
//! one, row by row, so that a damaged page costs only the rows on it. One
//! mechanism serves every table kept beside the tasks (deliveries, the
//! inbox, teams and their journal and mailbox, agent instances, progress
//! records, plays, workspace records, and any table a later migration
//! adds): the columns both schemas have are copied, a row whose key this
//! store already holds is kept as it is here, and every row that cannot be
//! read or written is named, by its key when an index of the damaged store
//! still holds it, else by its rowid. The tasks' own tables are not
//! salvaged: `baton doctor` rebuilds the tasks from their rendered files.
//!
//! The damaged file is opened read-only, as `immutable` (nothing is
//! written beside it either) unless a `-wal` holds data to be read.

use super::{MIGRATIONS, SqliteStore};
use crate::Result;
use rusqlite::types::Value;
use rusqlite::{Connection, OpenFlags, OptionalExtension, Transaction, TransactionBehavior};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The tasks' tables: rebuilt from the rendered files, never salvaged.
pub const TASK_TABLES: [&str; 4] = ["tasks", "phases", "events", "definitions"];

/// Rows that belong to a row of another table: (table, its column naming
/// the owner, the owner's table). Such a row is copied only when its owner
/// is in this store, so a team lost with the damage never leaves a
/// journal or mailbox behind that would stand in the way of a team
/// created again with its name.
const OWNERS: &[(&str, &str, &str)] = &[
    ("team_events", "team_id", "teams"),
    ("team_messages", "team_id", "teams"),
    ("team_acks", "team_id", "teams"),
    ("team_presence", "team_id", "teams"),
];

/// What a salvage copied and what it could not keep.
#[derive(Debug, Default)]
pub struct Salvage {
    /// Why nothing at all could be read (not a database, its schema
    /// unreadable); then `tables` is empty.
    pub unreadable: Option<String>,
    /// `PRAGMA user_version` of the damaged store and of this one, when
    /// they differ (the columns both have were copied).
    pub schemas: Option<(i64, i64)>,
    /// Every table salvaged, owners before the rows that belong to them.
    pub tables: Vec<TableSalvage>,
}

/// One table's salvage.
#[derive(Debug, Default)]
pub struct TableSalvage {
    pub table: String,
    /// Rows copied into this store.
    pub copied: usize,
    /// Rows whose key this store holds already: kept as they are here.
    pub present: usize,
    /// Why the table was not salvaged at all (missing from the damaged
    /// store, a schema this one cannot take, not readable row by row).
    pub refused: Option<String>,
    /// What could not be kept.
    pub lost: Vec<Lost>,
}

/// Records a salvage could not keep, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lost {
    pub rows: LostRows,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LostRows {
    /// One row, by its key: (column, value as SQL) for each key column.
    Key(Vec<(String, String)>),
    /// Rows no index names: those with `column` (the rowid, or the column
    /// that is the rowid) after `after` (`None`: from the first) up to
    /// `to` (`None`: to the last).
    Rowids {
        column: String,
        after: Option<i64>,
        to: Option<i64>,
    },
    /// The rows of a table without rowid after the one with this key
    /// (empty: from the first), read in key order up to the damage.
    After(Vec<(String, String)>),
    /// `rows` rows belonging to a row of `owner` that is not in this
    /// store (lost with the damage): its key.
    WithOwner {
        owner: String,
        key: Vec<(String, String)>,
        rows: usize,
    },
}

impl TableSalvage {
    fn new(table: &str) -> Self {
        TableSalvage {
            table: table.to_string(),
            ..Default::default()
        }
    }
}

fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A value as SQL would write it: `'crew'`, `5`, `NULL`.
fn sql_text(v: &Value) -> String {
    match v {
        Value::Null => "NULL".into(),
        Value::Integer(i) => i.to_string(),
        Value::Real(f) => f.to_string(),
        Value::Text(s) => format!("'{}'", s.replace('\'', "''")),
        Value::Blob(b) => format!(
            "X'{}'",
            b.iter().map(|x| format!("{x:02X}")).collect::<String>()
        ),
    }
}

/// Opens `path` read-only, writing nothing to it nor beside it.
fn open_damaged(path: &Path) -> rusqlite::Result<Connection> {
    let mut uri = String::from("file:");
    for b in path.display().to_string().bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    let wal = std::path::PathBuf::from(format!("{}-wal", path.display()));
    let wal_has_data = std::fs::metadata(wal).is_ok_and(|m| m.len() > 0);
    // `immutable`: no locks, no -shm made; but it ignores a -wal, so a WAL
    // with data is read through an ordinary read-only connection.
    uri.push_str(if wal_has_data {
        "?mode=ro"
    } else {
        "?immutable=1"
    });
    let conn = Connection::open_with_flags(
        uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    // Check each page's cells as it is loaded: damage is an error on the
    // rows it touches rather than garbage copied.
    conn.execute_batch("PRAGMA cell_size_check = ON; PRAGMA query_only = ON;")?;
    // The schema is read here: a file that is no database fails now.
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
        r.get::<_, i64>(0)
    })?;
    Ok(conn)
}

/// A column of a table, as `PRAGMA table_info` gives it.
struct Column {
    name: String,
    /// Its declared type.
    ty: String,
    required: bool,
    /// Its position in the primary key (0: not in it).
    pk: i64,
}

fn columns(conn: &Connection, schema: &str, table: &str) -> rusqlite::Result<Vec<Column>> {
    let mut stmt = conn.prepare(&format!("PRAGMA {schema}.table_info({})", quote(table)))?;
    let rows = stmt.query_map([], |r| {
        let notnull: bool = r.get(3)?;
        let default: Option<String> = r.get(4)?;
        Ok(Column {
            name: r.get(1)?,
            ty: r.get(2)?,
            required: notnull && default.is_none(),
            pk: r.get(5)?,
        })
    })?;
    rows.collect()
}

/// The index of the damaged store's `table` that holds `key` exactly (the
/// primary key's, or a unique one), if any.
fn key_index(conn: &Connection, table: &str, key: &[String]) -> Option<String> {
    let mut stmt = conn
        .prepare(&format!("PRAGMA main.index_list({})", quote(table)))
        .ok()?;
    let names: Vec<(String, bool)> = stmt
        .query_map([], |r| Ok((r.get::<_, String>(1)?, r.get::<_, bool>(2)?)))
        .ok()?
        .filter_map(|r| r.ok())
        .collect();
    names
        .into_iter()
        .filter(|(_, unique)| *unique)
        .find_map(|(name, _)| {
            let mut info = conn
                .prepare(&format!("PRAGMA main.index_info({})", quote(&name)))
                .ok()?;
            let cols: Vec<String> = info
                .query_map([], |r| r.get::<_, Option<String>>(2))
                .ok()?
                .filter_map(|r| r.ok().flatten())
                .collect();
            (cols == key).then_some(name)
        })
}

/// A stretch of rowids a table's b-tree could not list: after `after`
/// (`None`: from the first) up to `to` (`None`: to the end), and the error.
type Gap = (Option<i64>, Option<i64>, String);

/// The rowids the damaged table's own b-tree still lists, and the
/// stretches it cannot: a scan that stops at a damaged page goes on past
/// it by seeking further and further ahead until a seek succeeds, then
/// narrowing back to the first place after the damage that reads.
fn list_rowids(conn: &Connection, table: &str) -> (Vec<i64>, Vec<Gap>) {
    let t = quote(table);
    let scan = format!("SELECT rowid FROM {t} NOT INDEXED WHERE rowid > ?1 ORDER BY rowid");
    let seek = format!("{scan} LIMIT 1");
    // Every row after `x`, until the end (Ok) or a damaged page (Err).
    let scan_from = |x: i64, into: &mut Vec<i64>| -> std::result::Result<(), String> {
        let mut stmt = conn.prepare(&scan).map_err(|e| e.to_string())?;
        let mut rows = stmt.query([x]).map_err(|e| e.to_string())?;
        loop {
            match rows.next() {
                Ok(Some(r)) => into.push(r.get(0).map_err(|e| e.to_string())?),
                Ok(None) => return Ok(()),
                Err(e) => return Err(e.to_string()),
            }
        }
    };
    // The first row after `x`: Ok(None) at the end, Err on damage.
    let next_after = |x: i64| -> std::result::Result<Option<i64>, ()> {
        conn.query_row(&seek, [x], |r| r.get(0))
            .optional()
            .map_err(|_| ())
    };
    let mut found = Vec::new();
    let mut gaps = Vec::new();
    // Rows up to `cur` are listed (`None`: none yet).
    let mut cur: Option<i64> = None;
    while let Err(why) = scan_from(cur.unwrap_or(i64::MIN), &mut found) {
        if let Some(&last) = found.last() {
            cur = Some(cur.map_or(last, |c| c.max(last)));
        }
        let base = cur.unwrap_or(i64::MIN);
        // Seek further and further ahead of the damage…
        let (mut bad, mut step) = (base, 1i64);
        let good = loop {
            let x = match base.checked_add(step) {
                Some(x) if x > bad => x,
                _ => i64::MAX,
            };
            match next_after(x) {
                Ok(next) => break Some((x, next)),
                Err(()) if x == i64::MAX => break None,
                Err(()) => {
                    bad = x;
                    step = step.saturating_mul(2);
                }
            }
        };
        let Some((mut x, mut next)) = good else {
            gaps.push((cur, None, why));
            break;
        };
        // …then back to the first place after it that reads.
        while i128::from(x) - i128::from(bad) > 1 {
            let mid = (i128::from(bad) + (i128::from(x) - i128::from(bad)) / 2) as i64;
            match next_after(mid) {
                Ok(n) => (x, next) = (mid, n),
                Err(()) => bad = mid,
            }
        }
        gaps.push((cur, Some(x), why));
        match next {
            Some(n) => cur = Some(n - 1),
            None => break,
        }
    }
    (found, gaps)
}

/// Each row's key, by rowid, as far as the key's index can be read: from
/// its start until a damaged page, then from its end back to one.
fn keys_by_rowid(
    conn: &Connection,
    table: &str,
    index: &str,
    key: &[String],
) -> (BTreeMap<i64, Vec<Value>>, bool) {
    let cols = key.iter().map(|c| quote(c)).collect::<Vec<_>>();
    let mut out = BTreeMap::new();
    let mut complete = true;
    for dir in ["ASC", "DESC"] {
        let order = cols
            .iter()
            .map(|c| format!("{c} {dir}"))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!(
            "SELECT rowid, {} FROM {} INDEXED BY {} ORDER BY {order}",
            cols.join(", "),
            quote(table),
            quote(index)
        );
        let Ok(mut stmt) = conn.prepare(&sql) else {
            return (out, false);
        };
        let Ok(mut rows) = stmt.query([]) else {
            return (out, false);
        };
        let whole = loop {
            match rows.next() {
                Ok(Some(r)) => {
                    let read = (0..=key.len())
                        .map(|i| r.get::<_, Value>(i))
                        .collect::<rusqlite::Result<Vec<_>>>();
                    let Ok(mut v) = read else { break false };
                    let Value::Integer(rowid) = v.remove(0) else {
                        break false;
                    };
                    out.insert(rowid, v);
                }
                Ok(None) => break true,
                Err(_) => break false,
            }
        };
        if whole {
            break;
        }
        complete = false;
    }
    (out, complete)
}

impl SqliteStore {
    /// Copies into this store every row of the damaged store at `damaged`
    /// it can read, of every table but [`TASK_TABLES`], in one
    /// transaction. Rows this store already has (same key) are kept as
    /// they are. Errors only when this store cannot be written; what the
    /// damaged file denies is in the report.
    pub fn salvage(&self, damaged: &Path) -> Result<Salvage> {
        let mut out = Salvage::default();
        let old = match open_damaged(damaged) {
            Ok(c) => c,
            Err(e) => {
                out.unreadable = Some(e.to_string());
                return Ok(out);
            }
        };
        let theirs: i64 = match old.query_row("PRAGMA user_version", [], |r| r.get(0)) {
            Ok(v) => v,
            Err(e) => {
                out.unreadable = Some(e.to_string());
                return Ok(out);
            }
        };
        let ours = MIGRATIONS.len() as i64;
        if theirs != ours {
            out.schemas = Some((theirs, ours));
        }
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut tables: Vec<String> = {
            let mut stmt = tx.prepare(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid",
            )?;
            stmt.query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?
        };
        tables.retain(|t| !TASK_TABLES.contains(&t.as_str()));
        // Owners first.
        tables.sort_by_key(|t| OWNERS.iter().any(|(child, _, _)| child == t));
        for table in &tables {
            out.tables
                .push(salvage_table(&old, &tx, table, theirs >= ours)?);
        }
        tx.commit()?;
        Ok(out)
    }
}

/// One table: `current`: the damaged store is at this store's schema, so
/// a table missing from it was lost, not yet to come.
fn salvage_table(
    old: &Connection,
    tx: &Transaction<'_>,
    table: &str,
    current: bool,
) -> Result<TableSalvage> {
    let mut out = TableSalvage::new(table);
    let here = columns(tx, "main", table)?;
    let there = match columns(old, "main", table) {
        Ok(c) => c,
        Err(e) => {
            out.refused = Some(format!("its columns cannot be read: {e}"));
            return Ok(out);
        }
    };
    if there.is_empty() {
        if current {
            out.refused = Some("the damaged store has no such table".into());
        }
        return Ok(out);
    }
    let common: Vec<&str> = here
        .iter()
        .filter(|c| there.iter().any(|t| t.name == c.name))
        .map(|c| c.name.as_str())
        .collect();
    let wanting: Vec<&str> = here
        .iter()
        .filter(|c| c.required && !common.contains(&c.name.as_str()))
        .map(|c| c.name.as_str())
        .collect();
    if !wanting.is_empty() {
        out.refused = Some(format!(
            "its rows lack the column(s) {} this store requires (an older schema)",
            wanting.join(", ")
        ));
        return Ok(out);
    }
    if old
        .prepare(&format!("SELECT rowid FROM {} LIMIT 0", quote(table)))
        .is_err()
    {
        return scan_in_key_order(old, tx, table, &here, &common, out);
    }
    let mut key: Vec<(i64, String)> = here
        .iter()
        .filter(|c| c.pk > 0)
        .map(|c| (c.pk, c.name.clone()))
        .collect();
    key.sort();
    let key: Vec<String> = key.into_iter().map(|(_, n)| n).collect();
    // A lone INTEGER PRIMARY KEY is the rowid itself (in the damaged
    // store's schema, which is the one read).
    let rowid_is_key = key.len() == 1
        && there
            .iter()
            .any(|c| c.name == key[0] && c.pk == 1 && c.ty.eq_ignore_ascii_case("INTEGER"))
        && there.iter().filter(|c| c.pk > 0).count() == 1;
    let (listed, gaps) = list_rowids(old, table);
    let (keys, keys_whole) = match (rowid_is_key, key_index(old, table, &key)) {
        (false, Some(index)) => keys_by_rowid(old, table, &index, &key),
        _ => (BTreeMap::new(), false),
    };
    let rowids: BTreeSet<i64> = listed.iter().copied().chain(keys.keys().copied()).collect();
    let owner = OWNERS
        .iter()
        .find(|(child, _, _)| *child == table)
        .and_then(|(_, col, owner)| {
            let at = common.iter().position(|c| c == col)?;
            let pk = columns(tx, "main", owner)
                .ok()?
                .into_iter()
                .find(|c| c.pk == 1)?
                .name;
            Some((at, *owner, pk))
        });
    let key_at: Vec<Option<usize>> = key
        .iter()
        .map(|k| common.iter().position(|c| c == k))
        .collect();
    let names = common
        .iter()
        .map(|c| quote(c))
        .collect::<Vec<_>>()
        .join(", ");
    let read_sql = format!(
        "SELECT {names} FROM {} NOT INDEXED WHERE rowid = ?1",
        quote(table)
    );
    let insert_sql = format!(
        "INSERT INTO main.{} ({names}) VALUES ({}) ON CONFLICT DO NOTHING",
        quote(table),
        vec!["?"; common.len()].join(", ")
    );
    let named = |values: &[Value]| -> Vec<(String, String)> {
        key.iter()
            .zip(values)
            .map(|(k, v)| (k.clone(), sql_text(v)))
            .collect()
    };
    let by_rowid = |rowid: i64| -> Vec<(String, String)> {
        if rowid_is_key {
            vec![(key[0].clone(), rowid.to_string())]
        } else {
            keys.get(&rowid).map(|v| named(v)).unwrap_or_default()
        }
    };
    let mut orphans: BTreeMap<String, (Vec<(String, String)>, usize)> = BTreeMap::new();
    let mut insert = tx.prepare(&insert_sql)?;
    for rowid in rowids {
        let read = old.query_row(&read_sql, [rowid], |r| {
            (0..common.len())
                .map(|i| r.get::<_, Value>(i))
                .collect::<rusqlite::Result<Vec<_>>>()
        });
        let values = match read.optional() {
            Ok(Some(v)) => v,
            other => {
                let reason = match other {
                    Err(e) => e.to_string(),
                    _ => "its index names it, but the table does not hold it".into(),
                };
                let k = by_rowid(rowid);
                out.lost.push(Lost {
                    rows: if k.is_empty() {
                        LostRows::Rowids {
                            column: "rowid".into(),
                            after: Some(rowid.saturating_sub(1)),
                            to: Some(rowid),
                        }
                    } else {
                        LostRows::Key(k)
                    },
                    reason,
                });
                continue;
            }
        };
        let key_values: Vec<Value> = key_at
            .iter()
            .map(|at| at.map_or(Value::Null, |i| values[i].clone()))
            .collect();
        if let Some((at, owner, pk)) = &owner {
            let held: Option<i64> = tx
                .query_row(
                    &format!(
                        "SELECT 1 FROM main.{} WHERE {} = ?1",
                        quote(owner),
                        quote(pk)
                    ),
                    [&values[*at]],
                    |r| r.get(0),
                )
                .optional()?;
            if held.is_none() {
                let entry = orphans
                    .entry(sql_text(&values[*at]))
                    .or_insert_with(|| (vec![(pk.clone(), sql_text(&values[*at]))], 0));
                entry.1 += 1;
                continue;
            }
        }
        match insert.execute(rusqlite::params_from_iter(values.iter())) {
            Ok(1) => out.copied += 1,
            Ok(_) => out.present += 1,
            Err(e) => out.lost.push(Lost {
                rows: LostRows::Key(named(&key_values)),
                reason: format!("this store refused it: {e}"),
            }),
        }
    }
    for (key, rows) in orphans.into_values() {
        let owner = owner.as_ref().map(|o| o.1).unwrap_or_default();
        out.lost.push(Lost {
            rows: LostRows::WithOwner {
                owner: owner.to_string(),
                key,
                rows,
            },
            reason: format!("they belong to a row of {owner} that was not salvaged"),
        });
    }
    // Stretches of the table its b-tree could not list, unless the key's
    // index, read whole, named every row there is.
    if !keys_whole {
        let column = if rowid_is_key {
            key[0].clone()
        } else {
            "rowid".into()
        };
        for (after, to, why) in gaps {
            out.lost.push(Lost {
                rows: LostRows::Rowids {
                    column: column.clone(),
                    after,
                    to,
                },
                reason: why,
            });
        }
    }
    Ok(out)
}

/// A table without rowid (one b-tree, ordered by its key): read in key
/// order, each row copied as it comes; where the damage stops the read,
/// the rows after the last one read are named as lost.
fn scan_in_key_order(
    old: &Connection,
    tx: &Transaction<'_>,
    table: &str,
    here: &[Column],
    common: &[&str],
    mut out: TableSalvage,
) -> Result<TableSalvage> {
    let mut key: Vec<(i64, &str)> = here
        .iter()
        .filter(|c| c.pk > 0)
        .map(|c| (c.pk, c.name.as_str()))
        .collect();
    key.sort();
    let key_at: Vec<usize> = key
        .iter()
        .filter_map(|(_, k)| common.iter().position(|c| c == k))
        .collect();
    let names = common
        .iter()
        .map(|c| quote(c))
        .collect::<Vec<_>>()
        .join(", ");
    let mut insert = tx.prepare(&format!(
        "INSERT INTO main.{} ({names}) VALUES ({}) ON CONFLICT DO NOTHING",
        quote(table),
        vec!["?"; common.len()].join(", ")
    ))?;
    let scan = format!("SELECT {names} FROM {}", quote(table));
    let mut stmt = match old.prepare(&scan) {
        Ok(s) => s,
        Err(e) => {
            out.refused = Some(format!("it cannot be read: {e}"));
            return Ok(out);
        }
    };
    let mut last: Vec<(String, String)> = Vec::new();
    let stopped = match stmt.query([]) {
        Err(e) => Some(e.to_string()),
        Ok(mut rows) => loop {
            match rows.next() {
                Ok(None) => break None,
                Err(e) => break Some(e.to_string()),
                Ok(Some(r)) => {
                    let values = match (0..common.len())
                        .map(|i| r.get::<_, Value>(i))
                        .collect::<rusqlite::Result<Vec<_>>>()
                    {
                        Ok(v) => v,
                        Err(e) => break Some(e.to_string()),
                    };
                    last = key_at
                        .iter()
                        .map(|i| (common[*i].to_string(), sql_text(&values[*i])))
                        .collect();
                    match insert.execute(rusqlite::params_from_iter(values.iter())) {
                        Ok(1) => out.copied += 1,
                        Ok(_) => out.present += 1,
                        Err(e) => out.lost.push(Lost {
                            rows: LostRows::Key(last.clone()),
                            reason: format!("this store refused it: {e}"),
                        }),
                    }
                }
            }
        },
    };
    if let Some(reason) = stopped {
        out.lost.push(Lost {
            rows: LostRows::After(last),
            reason,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
