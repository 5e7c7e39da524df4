use super::*;
use crate::Synchronous;
use std::path::PathBuf;

/// A store file at `dir/old.db` at this baton's schema, with `fill`
/// run on it, checkpointed so that the file holds everything.
fn old_store(dir: &Path, fill: &str) -> PathBuf {
    let path = dir.join("old.db");
    drop(SqliteStore::open(&path, Synchronous::Full).unwrap());
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(fill).unwrap();
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    path
}

/// `n` deliveries `d-1`… with payloads of `size` bytes.
fn deliveries(n: usize, size: usize) -> String {
    (1..=n)
        .map(|i| {
            format!(
                "INSERT INTO deliveries (id, received_at, event, payload, decision, why, tasks)
                 VALUES ('d-{i}', {i}, 'issues', '{}', 'pending', '', '[]');",
                "x".repeat(size)
            )
        })
        .collect()
}

/// The pages of `name` (a table or an index) of type `kind`, in order.
fn pages(path: &Path, name: &str, kind: &str) -> Vec<i64> {
    let conn = Connection::open(path).unwrap();
    let mut stmt = conn
        .prepare("SELECT pageno FROM dbstat WHERE name = ?1 AND pagetype = ?2 ORDER BY pageno")
        .unwrap();
    stmt.query_map([name, kind], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

/// Overwrites page `page` of the file with garbage.
fn damage(path: &Path, page: i64) {
    use std::io::{Seek, SeekFrom, Write};
    let size: i64 = Connection::open(path)
        .unwrap()
        .query_row("PRAGMA page_size", [], |r| r.get(0))
        .unwrap();
    let mut f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.seek(SeekFrom::Start(((page - 1) * size) as u64)).unwrap();
    f.write_all(&vec![0xA5; size as usize]).unwrap();
}

fn table<'a>(s: &'a Salvage, name: &str) -> &'a TableSalvage {
    s.tables.iter().find(|t| t.table == name).unwrap()
}

fn ids(store: &SqliteStore, sql: &str) -> BTreeSet<String> {
    let conn = store.conn();
    let mut stmt = conn.prepare(sql).unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

#[test]
fn a_damaged_page_costs_only_its_rows_each_named_by_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = old_store(
        dir.path(),
        &format!(
            "{}INSERT INTO plays (name, updated_at, data) VALUES ('p', 1, '{{}}');",
            deliveries(200, 600)
        ),
    );
    let leaves = pages(&path, "deliveries", "leaf");
    assert!(leaves.len() > 10, "{leaves:?}");
    damage(&path, leaves[leaves.len() / 2]);
    let before = std::fs::read(&path).unwrap();
    let new = SqliteStore::in_memory().unwrap();
    let s = new.salvage(&path).unwrap();
    assert_eq!(s.unreadable, None);
    assert_eq!(s.schemas, None);
    let d = table(&s, "deliveries");
    assert_eq!(d.refused, None);
    assert!(!d.lost.is_empty() && d.lost.len() < 20, "{:?}", d.lost);
    let lost: BTreeSet<String> = d
        .lost
        .iter()
        .map(|l| match &l.rows {
            LostRows::Key(k) => {
                assert_eq!(k[0].0, "id");
                assert!(l.reason.contains("malformed"), "{}", l.reason);
                k[0].1.trim_matches('\'').to_string()
            }
            other => panic!("not named by its key: {other:?}"),
        })
        .collect();
    let copied = ids(&new, "SELECT id FROM deliveries");
    assert_eq!(d.copied, copied.len());
    assert_eq!(copied.len() + lost.len(), 200);
    assert!(copied.is_disjoint(&lost));
    assert_eq!(table(&s, "plays").copied, 1);
    // Nothing was written to the damaged file, nor beside it.
    assert_eq!(std::fs::read(&path).unwrap(), before);
    let beside: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(beside, vec![std::ffi::OsString::from("old.db")]);
}

#[test]
fn a_table_without_rowid_is_read_in_key_order_up_to_the_damage() {
    let dir = tempfile::tempdir().unwrap();
    let fill: String = (0..2000)
        .map(|i| {
            format!(
                "INSERT INTO delivery_bodies (digest, received_at) VALUES (X'{:032x}', {i});",
                i as u128 * 7919
            )
        })
        .collect();
    let path = old_store(dir.path(), &fill);
    let whole = SqliteStore::in_memory().unwrap().salvage(&path).unwrap();
    let t = table(&whole, "delivery_bodies");
    assert_eq!(
        (t.copied, t.refused.as_deref()),
        (2000, None),
        "{:?}",
        t.lost
    );
    assert!(t.lost.is_empty());
    let leaves = pages(&path, "delivery_bodies", "leaf");
    assert!(leaves.len() > 4, "{leaves:?}");
    damage(&path, leaves[leaves.len() / 2]);
    let s = SqliteStore::in_memory().unwrap().salvage(&path).unwrap();
    let t = table(&s, "delivery_bodies");
    assert!(t.copied > 0 && t.copied < 2000, "{}", t.copied);
    let [
        Lost {
            rows: LostRows::After(key),
            ..
        },
    ] = t.lost.as_slice()
    else {
        panic!("{:?}", t.lost);
    };
    assert_eq!(key[0].0, "digest", "{key:?}");
}

#[test]
fn rows_no_index_names_are_named_by_the_stretch_of_rowids_lost() {
    let dir = tempfile::tempdir().unwrap();
    let fill: String = (1..=300)
        .map(|i| {
            format!(
                "INSERT INTO instance_events (seq, ts, kind, instance_id, payload) VALUES ({i}, 0, 'k', 'c1', '{}');",
                "y".repeat(500)
            )
        })
        .collect();
    let path = old_store(dir.path(), &fill);
    let leaves = pages(&path, "instance_events", "leaf");
    damage(&path, leaves[3]);
    let new = SqliteStore::in_memory().unwrap();
    let s = new.salvage(&path).unwrap();
    let t = table(&s, "instance_events");
    let [
        Lost {
            rows: LostRows::Rowids { column, after, to },
            ..
        },
    ] = t.lost.as_slice()
    else {
        panic!("{:?}", t.lost);
    };
    assert_eq!(column, "seq");
    let (after, to) = (after.unwrap(), to.unwrap());
    assert!(after > 1 && to < 300 && after < to, "{after}..{to}");
    // Every row outside the stretch is back; none inside it.
    let back: BTreeSet<i64> = {
        let conn = new.conn();
        let mut stmt = conn.prepare("SELECT seq FROM instance_events").unwrap();
        stmt.query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    };
    let outside: BTreeSet<i64> = (1..=300).filter(|i| *i <= after || *i > to).collect();
    assert_eq!(back, outside);
    assert_eq!(t.copied, back.len());
}

#[test]
fn a_damaged_root_loses_its_table_named_as_far_as_can_be() {
    let dir = tempfile::tempdir().unwrap();
    let events: String = (1..=100)
        .map(|i| {
            format!(
                "INSERT INTO instance_events (seq, ts, kind, instance_id, payload) VALUES ({i}, 0, 'k', 'c1', '{}');",
                "y".repeat(500)
            )
        })
        .collect();
    let path = old_store(dir.path(), &format!("{events}{}", deliveries(200, 600)));
    for name in ["instance_events", "deliveries"] {
        let root = pages(&path, name, "internal");
        damage(&path, root[0]);
    }
    let s = SqliteStore::in_memory().unwrap().salvage(&path).unwrap();
    let e = table(&s, "instance_events");
    assert_eq!(e.copied, 0);
    assert_eq!(
        e.lost.iter().map(|l| &l.rows).collect::<Vec<_>>(),
        vec![&LostRows::Rowids {
            column: "seq".into(),
            after: None,
            to: None
        }]
    );
    // The key's index names every delivery lost.
    let d = table(&s, "deliveries");
    assert_eq!(d.lost.len(), 200);
    assert!(d.lost.iter().all(|l| matches!(l.rows, LostRows::Key(_))));
}

#[test]
fn when_the_index_is_damaged_too_the_keys_it_still_holds_name_the_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = old_store(dir.path(), &deliveries(1500, 100));
    let leaves = pages(&path, "deliveries", "leaf");
    damage(&path, leaves[leaves.len() - 3]);
    let index = pages(&path, "sqlite_autoindex_deliveries_1", "leaf");
    assert!(index.len() > 2, "{index:?}");
    damage(&path, index[0]);
    let new = SqliteStore::in_memory().unwrap();
    let s = new.salvage(&path).unwrap();
    let d = table(&s, "deliveries");
    // The index read from its end still names the rows lost near the
    // end of the table; the stretch the table cannot list is named too,
    // as the index cannot vouch for all of it.
    let keyed = d
        .lost
        .iter()
        .filter(|l| matches!(l.rows, LostRows::Key(_)))
        .count();
    let stretches = d
        .lost
        .iter()
        .filter(|l| matches!(l.rows, LostRows::Rowids { .. }))
        .count();
    assert!(keyed > 0 && stretches == 1, "{:?}", d.lost);
    assert_eq!(d.copied + keyed, 1500, "{:?}", d.lost);
}

#[test]
fn a_team_lost_takes_its_rows_with_it_and_rows_already_here_stay() {
    let dir = tempfile::tempdir().unwrap();
    let path = old_store(
        dir.path(),
        "INSERT INTO teams (id, status, last_seq, msg_seq, updated_at, data) VALUES ('crew', 'active', 1, 1, 0, '{}');
         INSERT INTO team_messages VALUES ('crew', 1, 'm1', 'lead', 'ana', 0, 'info', '', 'hi');
         INSERT INTO team_messages VALUES ('ghost', 1, 'm1', 'lead', 'bo', 0, 'info', '', 'boo');
         INSERT INTO team_messages VALUES ('ghost', 2, 'm2', 'lead', 'bo', 0, 'info', '', 'boo');
         INSERT INTO workspaces VALUES ('w', 5, 'old');
         INSERT INTO workspaces VALUES ('v', 5, 'old');",
    );
    let new = SqliteStore::in_memory().unwrap();
    new.conn()
        .execute_batch("INSERT INTO workspaces VALUES ('w', 9, 'new')")
        .unwrap();
    let s = new.salvage(&path).unwrap();
    assert_eq!(table(&s, "teams").copied, 1);
    let m = table(&s, "team_messages");
    assert_eq!(m.copied, 1);
    assert_eq!(
        m.lost,
        vec![Lost {
            rows: LostRows::WithOwner {
                owner: "teams".into(),
                key: vec![("id".into(), "'ghost'".into())],
                rows: 2
            },
            reason: "they belong to a row of teams that was not salvaged".into()
        }]
    );
    let w = table(&s, "workspaces");
    assert_eq!((w.copied, w.present), (1, 1));
    assert_eq!(
        ids(&new, "SELECT name || data FROM workspaces"),
        BTreeSet::from(["wnew".to_string(), "vold".to_string()])
    );
}

#[test]
fn an_older_schema_gives_the_columns_it_has_and_its_missing_tables_are_no_loss() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    let conn = Connection::open(&path).unwrap();
    // The first four migrations (up to deliveries), and a plays table
    // without a column this schema requires.
    for m in &MIGRATIONS[..4] {
        conn.execute_batch(m).unwrap();
    }
    conn.execute_batch(
        "PRAGMA user_version = 4;
         CREATE TABLE plays (name TEXT PRIMARY KEY, data TEXT NOT NULL);
         INSERT INTO plays VALUES ('p', '{}');
         INSERT INTO deliveries (id, received_at, event, decision, why, tasks) VALUES ('d-1', 1, 'issues', 'ignored', '', '[]');",
    )
    .unwrap();
    drop(conn);
    let new = SqliteStore::in_memory().unwrap();
    let s = new.salvage(&path).unwrap();
    assert_eq!(s.schemas, Some((4, MIGRATIONS.len() as i64)));
    assert_eq!(table(&s, "deliveries").copied, 1);
    assert!(
        table(&s, "plays")
            .refused
            .as_deref()
            .is_some_and(|r| r.contains("updated_at")),
        "{:?}",
        table(&s, "plays")
    );
    let teams = table(&s, "teams");
    assert_eq!(
        (teams.copied, &teams.refused, teams.lost.len()),
        (0, &None, 0)
    );
    assert!(
        s.tables
            .iter()
            .all(|t| !TASK_TABLES.contains(&t.table.as_str()))
    );
}

#[test]
fn a_file_that_is_no_database_is_unreadable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    std::fs::write(&path, b"garbage, not a database ".repeat(200)).unwrap();
    let s = SqliteStore::in_memory().unwrap().salvage(&path).unwrap();
    assert!(s.unreadable.is_some_and(|r| r.contains("not a database")));
    assert!(s.tables.is_empty());
}
