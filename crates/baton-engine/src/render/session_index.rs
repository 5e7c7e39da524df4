//! `.baton/index.toon`: one TOON table of every session log (id, status,
//! times, phases, agents, tokens, open inbox items, title), updated under
//! a file lock whenever a log is written, rebuilt from the logs when it
//! is missing, unreadable or of another version (`baton doctor --fix`
//! rebuilds it too). `baton session query` reads only this file.

use crate::render;
use baton_core::session_log::index::{Index, IndexRow, VERSION, open_in, read_table, row_of};
use nix::fcntl::{Flock, FlockArg};
use std::path::{Path, PathBuf};

/// The index of the project whose `.baton` folder is `baton_dir`.
pub struct SessionIndex {
    path: PathBuf,
    sessions: PathBuf,
}

impl SessionIndex {
    pub fn of(baton_dir: &Path) -> SessionIndex {
        SessionIndex {
            path: baton_dir.join("index.toon"),
            sessions: baton_dir.join("sessions"),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The rows, or `None` when the file is missing or does not read.
    /// The table as baton writes it is read row by row; anything else
    /// (a file reformatted by another TOON tool) through the decoder.
    pub fn read(&self) -> Option<Vec<IndexRow>> {
        let text = std::fs::read_to_string(&self.path).ok()?;
        let idx: Index = match read_table(&text) {
            Some(i) => i,
            None => toon_format::decode_default(&text).ok()?,
        };
        (idx.version == VERSION).then_some(idx.sessions)
    }

    /// Puts `row` in (replacing the row of its id), under the lock.
    pub fn upsert(&self, row: IndexRow) -> std::io::Result<()> {
        self.upsert_all(vec![row])
    }

    /// Puts `rows` in, each replacing the row of its id, under the lock.
    pub fn upsert_all(&self, new: Vec<IndexRow>) -> std::io::Result<()> {
        let _lock = self.lock()?;
        // No index (or one that does not read): built from the logs, and
        // written whatever the rows.
        let (mut rows, mut changed) = match self.read() {
            Some(r) => (r, false),
            None => (self.scan()?, true),
        };
        for row in new {
            match rows.iter_mut().find(|r| r.id == row.id) {
                Some(r) if *r == row => {}
                Some(r) => {
                    *r = row;
                    changed = true;
                }
                None => {
                    rows.push(row);
                    changed = true;
                }
            }
        }
        if changed { self.write(rows) } else { Ok(()) }
    }

    /// Rebuilds the file from the logs; how many sessions it holds.
    pub fn rebuild(&self) -> std::io::Result<usize> {
        let _lock = self.lock()?;
        let rows = self.scan()?;
        let n = rows.len();
        self.write(rows)?;
        Ok(n)
    }

    /// The file says what the logs say.
    pub fn is_current(&self) -> std::io::Result<bool> {
        // No index and no log to list (a new project, or only queued
        // tasks so far): nothing is out of date.
        let Some(mut have) = self.read() else {
            return Ok(self.scan()?.is_empty());
        };
        let mut want = self.scan()?;
        have.sort_by(|a, b| a.id.cmp(&b.id));
        want.sort_by(|a, b| a.id.cmp(&b.id));
        // Open items are counted from the store when a log is written, and
        // only estimated from the logs here: not compared.
        let strip = |v: &mut Vec<IndexRow>| v.iter_mut().for_each(|r| r.open_items = 0);
        strip(&mut have);
        strip(&mut want);
        Ok(have == want)
    }

    /// The rows of every log that reads (open items counted from their
    /// `decision_needed` and `approval_required` callouts not answered).
    fn scan(&self) -> std::io::Result<Vec<IndexRow>> {
        let mut rows = Vec::new();
        let Ok(entries) = std::fs::read_dir(&self.sessions) else {
            return Ok(rows);
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.extension().is_none_or(|x| x != "md") {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&p) else {
                continue;
            };
            if let Ok(log) = baton_core::session_log::parse(&text) {
                rows.push(row_of(&log, open_in(&log)));
            }
        }
        rows.sort_by(|a, b| a.started.cmp(&b.started).then_with(|| a.id.cmp(&b.id)));
        Ok(rows)
    }

    fn write(&self, sessions: Vec<IndexRow>) -> std::io::Result<()> {
        let text = encode(&Index {
            version: VERSION,
            sessions,
        });
        render::derived_write(&self.path, format!("{text}\n").as_bytes())
    }

    /// The lock file is in the sessions folder, which git ignores with the
    /// index (`.baton/.gitignore`).
    fn lock(&self) -> std::io::Result<Flock<std::fs::File>> {
        fs_err::create_dir_all(&self.sessions)?;
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.sessions.join(".index.lock"))?;
        Flock::lock(f, FlockArg::LockExclusive).map_err(|(_, e)| std::io::Error::from(e))
    }
}

/// The index as TOON, written as toon-format writes it (a property test
/// holds the two to the same bytes) but without building a document tree:
/// a task's log write rewrites the index, which may hold 10,000 rows.
fn encode(idx: &Index) -> String {
    use toon_format::utils::string::quote_string;
    let cell = |s: &str| {
        if toon_format::needs_quoting(s, ',') {
            quote_string(s)
        } else {
            s.to_string()
        }
    };
    let mut out = format!("version: {}\n", idx.version);
    if idx.sessions.is_empty() {
        out.push_str("sessions: []");
        return out;
    }
    out.push_str(&format!(
        "sessions[{}]{{{}}}:",
        idx.sessions.len(),
        baton_core::session_log::index::FIELDS
    ));
    for r in &idx.sessions {
        out.push_str("\n  ");
        let cells = [
            cell(&r.id),
            cell(&r.status),
            cell(&r.started),
            cell(&r.ended),
            cell(&r.workflow),
            cell(&r.phases),
            cell(&r.agents),
            r.tokens.to_string(),
            r.open_items.to_string(),
            cell(&r.title),
        ];
        out.push_str(&cells.join(","));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[ -~]{0,16}",
            Just(String::new()),
            Just("123".to_string()),
            Just("true".to_string()),
            Just("a, \"b\"\\ c".to_string()),
            Just("line\nbreak\ttab".to_string()),
            Just("- dash".to_string()),
            Just("é ü ✓".to_string()),
            Just("bell\u{7} and \u{1f}".to_string()),
            Just("-1.5e3".to_string()),
            Just("null".to_string()),
        ]
    }

    proptest! {
        /// The row reader reads exactly what the TOON encoder writes.
        #[test]
        fn the_row_reader_reads_what_toon_format_writes(
            rows in prop::collection::vec(
                (text(), text(), text(), text(), text(), text(), text(), any::<u64>(), any::<u64>(), text()),
                0..20,
            )
        ) {
            let sessions: Vec<IndexRow> = rows
                .into_iter()
                .map(|(id, status, started, ended, workflow, phases, agents, tokens, open_items, title)| IndexRow {
                    id, status, started, ended, workflow, phases, agents, tokens, open_items, title,
                })
                .collect();
            let idx = Index { version: VERSION, sessions };
            let written = toon_format::encode_default(&idx).unwrap();
            prop_assert_eq!(&encode(&idx), &written, "baton writes what toon-format writes");
            prop_assert_eq!(read_table(&written), Some(idx.clone()), "{}", written);
            let decoded: Index = toon_format::decode_default(&written).unwrap();
            prop_assert_eq!(decoded, idx);
        }
    }
}
