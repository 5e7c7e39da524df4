//! The git repositories the engine works in: `baton_sys::git::Git`, told
//! which files an agent run puts in a work tree (a brief, an MCP server
//! entry; `baton_agents::run_files`), so they are never taken for work
//! nor committed with it.

use baton_sys::git::Git;
use std::path::Path;

/// The repository containing `path`, if it is inside a git work tree.
pub fn open(path: &Path) -> Option<Git> {
    Git::open(path).map(|g| g.knowing_run_files(baton_agents::run_files::as_committed))
}
