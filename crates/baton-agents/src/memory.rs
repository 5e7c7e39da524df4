//! The handoff brief in a CLI's memory file (CLAUDE.md, AGENTS.md,
//! GEMINI.md, QWEN.md, …): a fenced section baton writes before an agent
//! phase on a new CLI and takes out again when the phase ends, so it never
//! lands in the user's commits or a task branch. The user's own text is
//! never touched: the section is replaced where it is, or appended after
//! it; taking it out gives back the text as it was, and a file baton
//! created for the section is removed again.
//!
//! The section's first line says what baton did to the file (created it,
//! added a final newline), so a later run can undo it exactly even after a
//! crash.

use crate::Cli;
use std::io::Write;
use std::path::{Path, PathBuf};

const BEGIN: &str = "<!-- baton:handoff-brief begin";
const END: &str = "<!-- baton:handoff-brief end -->";
const WHAT: &str =
    ": written by baton for one phase and removed when it ends; edit outside this section -->";
/// Flags in the first line: baton created the file / added its last newline.
const NEW_FILE: &str = " new-file";
const ADDED_NEWLINE: &str = " added-newline";

/// Where a section is in a text: its start, its end (past its last
/// newline) and the flags of its first line.
fn find(text: &str) -> Option<(usize, usize, &str)> {
    let start = text.find(BEGIN)?;
    let header_end = start + text[start..].find("-->")?;
    let flags = &text[start + BEGIN.len()..header_end];
    let len = text[start..].find(END)?;
    let mut end = start + len + END.len();
    if text[end..].starts_with('\n') {
        end += 1;
    }
    Some((start, end, flags))
}

fn section(flags: &str, brief: &str) -> String {
    format!("{BEGIN}{flags}{WHAT}\n{}\n{END}\n", brief.trim_end())
}

/// `existing` (a memory file's text, or `None`: there is no file) with
/// baton's fenced brief section set to `brief`: replaced where it is,
/// else appended after the user's own content, which is left as it was.
pub fn with_brief_section(existing: Option<&str>, brief: &str) -> String {
    let Some(text) = existing else {
        return section(NEW_FILE, brief);
    };
    if let Some((start, end, flags)) = find(text) {
        let flags: String = [NEW_FILE, ADDED_NEWLINE]
            .into_iter()
            .filter(|f| flags.contains(f.trim()))
            .collect();
        return format!(
            "{}{}{}",
            &text[..start],
            section(&flags, brief),
            &text[end..]
        );
    }
    if text.is_empty() || text.ends_with('\n') {
        format!("{text}{}", section("", brief))
    } else {
        format!("{text}\n{}", section(ADDED_NEWLINE, brief))
    }
}

/// `text` without baton's section: the user's text as it was, or `None`
/// when baton created the file and nothing else is in it (the file goes).
/// A text without a section is returned as it is.
pub fn without_brief_section(text: &str) -> Option<String> {
    let Some((start, end, flags)) = find(text) else {
        return Some(text.to_string());
    };
    let mut before = &text[..start];
    let after = &text[end..];
    if flags.contains(ADDED_NEWLINE.trim()) && after.is_empty() {
        before = before.strip_suffix('\n').unwrap_or(before);
    }
    let rest = format!("{before}{after}");
    if flags.contains(NEW_FILE.trim()) && rest.trim().is_empty() {
        None
    } else {
        Some(rest)
    }
}

/// Writes the brief into `cli`'s memory file in `dir` (see
/// [`with_brief_section`]), atomically. Returns the file's path.
pub fn write_brief(cli: Cli, dir: &Path, brief: &str) -> std::io::Result<PathBuf> {
    let path = dir.join(cli.memory_file());
    let existing = match std::fs::read_to_string(&path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    replace(&path, &with_brief_section(existing.as_deref(), brief))?;
    Ok(path)
}

/// Takes baton's section out of every built-in CLI's memory file in `dir`
/// (a file baton created goes). Returns the files changed.
pub fn remove_briefs(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut changed = Vec::new();
    for name in memory_files() {
        let path = dir.join(name);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        if !has_brief(&text) {
            continue;
        }
        match without_brief_section(&text) {
            Some(rest) => replace(&path, &rest)?,
            None => std::fs::remove_file(&path)?,
        }
        changed.push(path);
    }
    Ok(changed)
}

/// Every built-in CLI's memory file name, once each.
pub fn memory_files() -> Vec<&'static str> {
    let mut names: Vec<&str> = crate::all().iter().map(|c| c.memory_file()).collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// Whether `text` holds baton's brief section.
pub fn has_brief(text: &str) -> bool {
    find(text).is_some()
}

/// `path`'s content replaced by `text` through a temporary file and a
/// rename, so a crash leaves the old or the new text, never half of it.
pub(crate) fn replace(path: &Path, text: &str) -> std::io::Result<()> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let tmp = path.with_file_name(format!(".{}.baton-tmp", name.unwrap_or_default()));
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_brief_section_is_replaced_and_the_users_text_kept() {
        let user = "# My rules\n\nUse tabs.\n";
        let once = with_brief_section(Some(user), "brief one");
        assert!(once.starts_with(user));
        assert!(once.contains("brief one"));
        let twice = with_brief_section(Some(&once), "brief two");
        assert!(twice.starts_with(user));
        assert!(twice.contains("brief two"));
        assert!(!twice.contains("brief one"), "{twice}");
        assert_eq!(twice.matches(BEGIN).count(), 1);
        // The user edits after the section: kept on the next handoff.
        let edited = format!("{twice}\nMore rules.\n");
        let third = with_brief_section(Some(&edited), "brief three");
        assert!(third.contains("More rules."));
        assert!(third.starts_with(user));
        assert_eq!(
            with_brief_section(None, "b"),
            format!("{BEGIN}{NEW_FILE}{WHAT}\nb\n{END}\n")
        );
    }

    #[test]
    fn taking_the_section_out_gives_back_the_users_text_exactly() {
        for user in ["# Rules\n\nUse tabs.\n", "no final newline", "", "two\n\n"] {
            let with = with_brief_section(Some(user), "the brief");
            assert!(with.contains("the brief"));
            let again = with_brief_section(Some(&with), "another brief");
            assert_eq!(
                without_brief_section(&again).as_deref(),
                Some(user),
                "{again:?}"
            );
        }
        // A file baton created goes again, unless the agent wrote to it.
        let created = with_brief_section(None, "the brief");
        assert_eq!(without_brief_section(&created), None);
        let added_to = format!("{created}\n# Notes the agent kept\n");
        assert_eq!(
            without_brief_section(&added_to).as_deref(),
            Some("\n# Notes the agent kept\n")
        );
        // A section written by an older baton is taken out too.
        let old = "Mine.\n<!-- baton:handoff-brief begin: written by baton, replaced on every handoff; edit outside this section -->\nb\n<!-- baton:handoff-brief end -->\n";
        assert_eq!(without_brief_section(old).as_deref(), Some("Mine.\n"));
    }

    #[test]
    fn removing_briefs_restores_every_memory_file_in_the_folder() {
        let dir = tempfile::tempdir().unwrap();
        let claude = crate::by_name("claude").unwrap();
        let codex = crate::by_name("codex").unwrap();
        std::fs::write(dir.path().join("AGENTS.md"), "House rules.\n").unwrap();
        write_brief(claude, dir.path(), "brief").unwrap();
        write_brief(codex, dir.path(), "brief").unwrap();
        let changed = remove_briefs(dir.path()).unwrap();
        assert_eq!(changed.len(), 2, "{changed:?}");
        assert!(!dir.path().join("CLAUDE.md").exists());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("AGENTS.md")).unwrap(),
            "House rules.\n"
        );
        assert!(remove_briefs(dir.path()).unwrap().is_empty());
    }
}
