//! Files rendered from the store: `state.json`, `NN-phase.md` outputs and
//! the `current` pointer. Every write is atomic (temp file, fsync, rename,
//! fsync of the folder), so a crash leaves the old file or the new one.

use baton_core::document;
use baton_core::state::{PhaseStatus, TaskState};
use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` atomically.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs_err::create_dir_all(dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    {
        let mut f = fs_err::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    fs_err::rename(&tmp, path)?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Writes `state.json` for a task.
pub fn state_json(task_dir: &Path, doc: &impl serde::Serialize) -> std::io::Result<()> {
    atomic_write(&task_dir.join("state.json"), &state_json_bytes(doc))
}

fn state_json_bytes(doc: &impl serde::Serialize) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(doc).expect("json");
    bytes.push(b'\n');
    bytes
}

/// `state.json` written by a thread of its own while the task goes on (the
/// write waits on the disk twice): one write at a time, in order; the next
/// one, [`Background::finish`] or drop waits for the one in flight, and
/// the first two report its error.
#[derive(Debug, Default)]
pub struct Background {
    pending: Option<std::thread::JoinHandle<std::io::Result<()>>>,
}

impl Background {
    /// Renders `doc` now and writes it in the background.
    pub fn state_json(&mut self, task_dir: &Path, doc: &impl serde::Serialize) -> std::io::Result<()> {
        self.finish()?;
        let bytes = state_json_bytes(doc);
        let path = task_dir.join("state.json");
        self.pending = Some(std::thread::spawn(move || atomic_write(&path, &bytes)));
        Ok(())
    }

    /// Waits for the write in flight, if any.
    pub fn finish(&mut self) -> std::io::Result<()> {
        match self.pending.take() {
            Some(h) => h
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("the state.json writer panicked"))),
            None => Ok(()),
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

/// The markdown of a passed phase's output file.
pub fn phase_markdown(state: &TaskState, index: usize) -> String {
    let p = &state.phases[index];
    let mut s = format!(
        "---\ntask: {}\nphase: {}\nstatus: {}\nattempt: {}\niteration: {}\nstarted_at: {}\ncompleted_at: {}\n---\n\n# {}\n\n## Summary\n\n{}\n",
        state.task_id,
        p.id,
        p.status.as_str(),
        p.attempt,
        p.iteration,
        p.started_at.map(|t| t.rfc3339()).unwrap_or_default(),
        p.completed_at.map(|t| t.rfc3339()).unwrap_or_default(),
        p.id,
        p.summary.as_deref().unwrap_or("").trim(),
    );
    if !p.files_changed.is_empty() {
        s.push_str("\n## Files changed\n\n");
        for f in &p.files_changed {
            s.push_str(&format!("- {f}\n"));
        }
    }
    let out = p.output.as_deref().unwrap_or("").trim_end();
    if !out.is_empty() {
        s.push_str("\n## Output\n\n```text\n");
        s.push_str(&out.replace("```", "ʼʼʼ"));
        s.push_str("\n```\n");
    }
    s
}

/// Writes the output file of every passed phase whose file is missing or
/// stale (after a crash between the PASS commit and the rendering, this is
/// what brings the file back). Returns how many files it wrote.
pub fn phase_outputs(task_dir: &Path, state: &TaskState) -> std::io::Result<usize> {
    let mut n = 0;
    for (i, p) in state.phases.iter().enumerate() {
        if p.status != PhaseStatus::Pass {
            continue;
        }
        let path = task_dir.join(document::output_file_name(i, p.id.as_str()));
        let md = phase_markdown(state, i);
        if std::fs::read_to_string(&path).ok().as_deref() != Some(md.as_str()) {
            atomic_write(&path, md.as_bytes())?;
            n += 1;
        }
    }
    Ok(n)
}

/// Writes one phase's output file.
pub fn phase_output(task_dir: &Path, state: &TaskState, index: usize) -> std::io::Result<()> {
    let p = &state.phases[index];
    let path = task_dir.join(document::output_file_name(index, p.id.as_str()));
    atomic_write(&path, phase_markdown(state, index).as_bytes())
}

/// Parses the summary and output back out of a phase output file (for
/// `doctor --fix` when the store is lost).
pub fn parse_phase_markdown(md: &str) -> (String, String) {
    let section = |name: &str| -> String {
        let head = format!("\n## {name}\n\n");
        let Some(start) = md.find(&head) else {
            return String::new();
        };
        let rest = &md[start + head.len()..];
        let end = rest.find("\n## ").unwrap_or(rest.len());
        rest[..end].trim().to_string()
    };
    let summary = section("Summary");
    let output = section("Output");
    let output = output
        .strip_prefix("```text\n")
        .and_then(|o| o.strip_suffix("```"))
        .map(|o| o.trim_end().to_string())
        .unwrap_or(output);
    (summary, output)
}
