//! What baton puts in an agent's working folder for one run and takes out
//! again when the run ends: the handoff brief in a memory file
//! ([`crate::memory`]) and baton's server in droid's MCP servers file
//! ([`crate::folder_mcp`]). [`undo`] takes every one out (also what a
//! crashed run left); [`as_committed`] says what each file is without
//! baton's change, so a commit made while a run goes on never holds it.

use std::path::{Path, PathBuf};

/// The MCP servers files, relative to the working folder, that a CLI
/// reads there (droid's).
pub const FOLDER_MCP_FILES: &[&str] = &[".factory/mcp.json"];

/// Undoes every change baton made for a run in `dir`. Returns the files
/// changed.
pub fn undo(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut changed = crate::memory::remove_briefs(dir)?;
    for rel in FOLDER_MCP_FILES {
        changed.extend(crate::folder_mcp::undo(dir, rel)?);
    }
    Ok(changed)
}

/// The files in `dir` baton changed for a run, each with its path
/// relative to `dir` and its text without baton's change (`None`: the
/// file was not there).
pub fn as_committed(dir: &Path) -> std::io::Result<Vec<(String, Option<String>)>> {
    let read = |rel: &str| match std::fs::read_to_string(dir.join(rel)) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    };
    let mut out = Vec::new();
    for name in crate::memory::memory_files() {
        if let Some(text) = read(name)?
            && crate::memory::has_brief(&text)
        {
            out.push((
                name.to_string(),
                crate::memory::without_brief_section(&text),
            ));
        }
    }
    for rel in FOLDER_MCP_FILES {
        if let Some(text) = read(rel)?
            && let Some(original) = crate::folder_mcp::without_baton_server(&text)
        {
            out.push((rel.to_string(), original));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_run_file_is_undone_and_known_without_its_change() {
        let dir = tempfile::tempdir().unwrap();
        let codex = crate::by_name("codex").unwrap();
        std::fs::write(dir.path().join("AGENTS.md"), "House rules.\n").unwrap();
        crate::memory::write_brief(codex, dir.path(), "the brief").unwrap();
        let mcp = dir.path().join(".factory/mcp.json");
        std::fs::create_dir_all(mcp.parent().unwrap()).unwrap();
        let server = serde_json::json!({"command": "baton"});
        let text = crate::folder_mcp::with_baton_server(None, false, server).unwrap();
        std::fs::write(&mcp, text).unwrap();
        let committed = as_committed(dir.path()).unwrap();
        assert_eq!(
            committed,
            vec![
                ("AGENTS.md".to_string(), Some("House rules.\n".to_string())),
                (".factory/mcp.json".to_string(), None),
            ]
        );
        assert_eq!(undo(dir.path()).unwrap().len(), 2);
        assert!(!dir.path().join(".factory").exists());
        assert!(as_committed(dir.path()).unwrap().is_empty());
    }
}
