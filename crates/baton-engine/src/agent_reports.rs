//! What an agent reports about its phase from outside baton's process
//! (baton's MCP tools `phase_complete`, `report_blocker` and `checkpoint`,
//! run by the MCP server the agent's CLI started): files beside the
//! attempt's summary file (`$BATON_SUMMARY_FILE`), each written durably
//! before the tool answers, read by the engine when the attempt ends.

use std::io::Write;
use std::path::{Path, PathBuf};

fn beside(summary_file: &Path, suffix: &str) -> PathBuf {
    let mut name = summary_file.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

/// Writes `text` to `path` durably (a temp file, fsync, rename).
fn write_durably(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = beside(path, ".tmp");
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}

/// `phase_complete`: the phase's summary (what the engine records when the
/// attempt passes).
pub fn write_summary(summary_file: &Path, summary: &str) -> std::io::Result<()> {
    write_durably(summary_file, summary)
}

/// `report_blocker`: the attempt fails with `reason`.
pub fn write_blocker(summary_file: &Path, reason: &str) -> std::io::Result<()> {
    write_durably(&beside(summary_file, ".blocker"), reason)
}

/// The most of a blocker's reason that is read (the file is the phase's
/// to write: a blocker file of a gigabyte costs this much).
const BLOCKER_BYTES: u64 = 4096;
/// The most of a checkpoints file that is read, and the most notes kept.
const CHECKPOINT_BYTES: u64 = 256 << 10;
const MAX_CHECKPOINTS: usize = 200;

/// The reason `report_blocker` gave, its first [`BLOCKER_BYTES`].
pub fn blocker(summary_file: &Path) -> Option<String> {
    use std::io::Read;
    let f = baton_sys::process::open_regular(&beside(summary_file, ".blocker")).ok()??;
    let mut buf = Vec::new();
    f.take(BLOCKER_BYTES).read_to_end(&mut buf).ok()?;
    Some(String::from_utf8_lossy(&buf).trim().to_string()).filter(|s| !s.is_empty())
}

/// `checkpoint`: one note appended (one JSON string per line, fsynced).
/// Returns how many notes the attempt has now.
pub fn append_checkpoint(summary_file: &Path, note: &str) -> std::io::Result<usize> {
    let path = beside(summary_file, ".checkpoints");
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)?;
    let line = serde_json::to_string(note).expect("a string is JSON");
    f.write_all(format!("{line}\n").as_bytes())?;
    f.sync_data()?;
    Ok(checkpoints(summary_file).len())
}

/// The notes `checkpoint` appended, oldest first: at most
/// [`MAX_CHECKPOINTS`] of the first [`CHECKPOINT_BYTES`] of the file.
pub fn checkpoints(summary_file: &Path) -> Vec<String> {
    use std::io::{BufRead, Read};
    let Ok(Some(f)) = baton_sys::process::open_regular(&beside(summary_file, ".checkpoints"))
    else {
        return Vec::new();
    };
    std::io::BufReader::new(f.take(CHECKPOINT_BYTES))
        .lines()
        .map_while(|l| l.ok())
        .filter_map(|l| serde_json::from_str(&l).ok())
        .take(MAX_CHECKPOINTS)
        .collect()
}
