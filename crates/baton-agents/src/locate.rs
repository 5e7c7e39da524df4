//! Finding an agent CLI's own session file on disk, for `baton import`.
//!
//! The user names either the file itself or the CLI's session id; an id is
//! looked up in that CLI's session folder by its adapter
//! ([`AgentCli::locate_native`]), honouring the variables the CLI itself
//! honours. Only an exact id match is ever taken, never "the newest
//! session". A CLI that keeps no file per session names the command that
//! prints a session instead ([`AgentCli::export_command`]).

use crate::{AgentCli, Cli, Env};
use std::path::{Path, PathBuf};

/// The session file `file_or_id` names for `cli`: an existing path as it
/// is, else the file of the session with exactly that id in the CLI's
/// session folder. `env` reads environment variables (`HOME` and the
/// CLI's own).
pub fn locate(cli: Cli, file_or_id: &str, env: Env<'_>) -> Result<PathBuf, String> {
    let given = Path::new(file_or_id);
    if given.is_file() {
        return Ok(given.to_path_buf());
    }
    if given.exists() {
        return Err(format!(
            "{file_or_id} is a folder, not a session file; pass the session file or its id"
        ));
    }
    let id = file_or_id.trim();
    if id.is_empty() || id.contains('/') || id.contains('\\') || id.starts_with('.') {
        return Err(format!(
            "there is no file {file_or_id}; pass an existing session file or a session id"
        ));
    }
    cli.locate_native(id, env)
}

/// `$VAR` when set and not empty, else `rel` under `$HOME`.
pub(crate) fn dir_from(env: Env<'_>, var: &str, rel: &str) -> Result<PathBuf, String> {
    match env(var).filter(|v| !v.is_empty()) {
        Some(d) => Ok(PathBuf::from(d)),
        None => under_home(env, rel),
    }
}

/// `rel` under `$HOME`.
pub(crate) fn under_home(env: Env<'_>, rel: &str) -> Result<PathBuf, String> {
    env("HOME")
        .filter(|v| !v.is_empty())
        .map(|h| PathBuf::from(h).join(rel))
        .ok_or_else(|| {
            "HOME is not set, so the session folder is unknown; pass the session file instead"
                .to_string()
        })
}

/// Whether `id` can be a session id (no path, nothing odd).
pub(crate) fn plain_id(id: &str) -> bool {
    !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

pub(crate) fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The files matching `is_it` in `dir`, going down through one folder per
/// element of `levels` (`"*"`: every folder, else that name). With no
/// levels, every subfolder at any depth is searched.
pub(crate) fn in_subfolders(
    dir: &Path,
    levels: &[&str],
    is_it: &dyn Fn(&Path) -> bool,
) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    let mut entries: Vec<_> = rd.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            match levels.split_first() {
                Some((level, rest)) if *level == "*" || file_name(&p) == *level => {
                    out.extend(in_subfolders(&p, rest, is_it))
                }
                Some(_) => {}
                None => out.extend(in_subfolders(&p, &[], is_it)),
            }
        } else if levels.is_empty() && is_it(&p) {
            out.push(p);
        }
    }
    out
}

pub(crate) fn one_of(
    cli: &dyn AgentCli,
    id: &str,
    searched: &Path,
    mut found: Vec<PathBuf>,
    pattern: &str,
    what_id: &str,
) -> Result<PathBuf, String> {
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(format!(
            "no {} session {id} in {} (searched {pattern}); pass the session file's path instead, or {what_id}",
            cli.name(),
            searched.display(),
        )),
        _ => Err(format!(
            "{} {} sessions have the id {id}: {}; pass the one to import by its path",
            found.len(),
            cli.name(),
            found
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}
