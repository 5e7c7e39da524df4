//! Workspaces by agent role, on disk. A task run in the foreground whose
//! workflow has agents with a `role` works in the service's shared
//! workspace (`<base>/workspace-<service>`, a git worktree on the task's
//! branch `baton/<id>`, committed at every phase that passes) instead of
//! the project folder; a phase whose agent's role is not
//! `implementation` runs in the agent's own workspace
//! (`<base>/workspace-<service>-<agent>`, on `baton/<id>-<agent>`),
//! checked out at the shared workspace's commit when the phase starts.
//! Each is a folder of its own, so each has its own memory file
//! (`CLAUDE.md`, `AGENTS.md`, …). The names are `baton_core::workspace`'s;
//! which task uses which is the engine's (`engine/role_workspaces.rs`).

use crate::config::Config;
use crate::error::{Error, Result};
use crate::project::Project;
use crate::workdir::{TaskBranch, Workdir, check_out, resume_point};
use baton_core::workflow::{Phase, PhaseKind, Workflow};
use baton_core::workspace::{self as names, Place};
use baton_core::{TaskId, TaskState};
use baton_sys::git::Git;
use std::path::{Path, PathBuf};

/// The agent phase `def` of task `state` runs with (the task's `--agent`,
/// else the phase's, else `[defaults] agent`); `None` for a phase that is
/// not an agent's, or is run as a coding agent instance.
pub fn agent_of(config: &Config, state: &TaskState, def: &Phase) -> Option<String> {
    match &def.kind {
        PhaseKind::Prompt { .. } if def.instance.is_none() => state
            .agent
            .clone()
            .or(def.agent.clone())
            .or(config.defaults.agent.clone()),
        _ => None,
    }
}

/// The role of agent `name`, if it has one.
pub fn role_of<'a>(config: &'a Config, name: &str) -> Option<&'a str> {
    config.agents.get(name)?.role.as_deref()
}

/// Whether a task of `wf` works in workspaces by role: one of its agent
/// phases runs with an agent that has a role.
pub fn uses_roles(config: &Config, state: &TaskState, wf: &Workflow) -> bool {
    wf.phases
        .iter()
        .any(|p| agent_of(config, state, p).is_some_and(|a| role_of(config, &a).is_some()))
}

/// Where the phase `def` runs when it is not where the task works: its
/// agent's own workspace (`Some((place, agent, role))`).
pub fn own_place(
    config: &Config,
    service: &str,
    state: &TaskState,
    def: &Phase,
) -> Option<(Place, String, String)> {
    let agent = agent_of(config, state, def)?;
    let role = role_of(config, &agent)?.to_string();
    match names::place(service, &agent, &role) {
        Place::Shared(_) => None,
        own => Some((own, agent, role)),
    }
}

/// `[workspaces] service`, else the name of the GitHub repository, else
/// the project folder's.
pub fn service(project: &Project, git: &Git) -> String {
    project
        .config
        .workspaces
        .service
        .clone()
        .or_else(|| project.config.github_repository(git).map(|r| r.name))
        .unwrap_or_else(|| project.name())
}

/// The folder workspaces are made in: `[workspaces] base`, under the
/// project folder when relative (default `.baton/workspaces`).
pub fn base(project: &Project) -> PathBuf {
    match &project.config.workspaces.base {
        Some(b) if Path::new(b).is_absolute() => PathBuf::from(b),
        Some(b) => project.root.join(b),
        None => project.baton_dir().join("workspaces"),
    }
}

/// The project's repository, which workspaces are worktrees of.
pub fn repository(project: &Project) -> Result<Git> {
    crate::repo::open(&project.root).ok_or_else(|| {
        Error::bad_input(format!(
            "agents with a role work in git worktrees (workspaces by role), but {} is not in a git repository",
            project.root.display()
        ))
        .hint("run `git init` and commit, or remove `role` from the agents under [agents.NAME] in .baton/config.toml")
    })
}

/// The service's shared workspace `path`, checked out for task `state` on
/// its branch `baton/<id>`: at the start of the phase under way when one
/// was interrupted, else at the branch's tip, else (a new task) at the
/// project's HEAD.
pub fn shared(git: &Git, path: &Path, state: &TaskState, now_ms: i64) -> Result<Workdir> {
    let id = &state.task_id;
    let branch = crate::workdir::branch_name(id);
    let target = resume_point(state)
        .or_else(|| git.resolve(&format!("refs/heads/{branch}")))
        .or_else(|| git.head())
        .ok_or_else(|| {
            Error::bad_input("the repository has no commit yet for a workspace to start from")
                .hint("commit your files first (`git commit`)")
        })?;
    open(git, path, &branch, &target, id, now_ms, &[])
}

/// Agent `agent`'s own workspace `path`, checked out for task `state` at
/// `seed` (the shared workspace's commit) on `baton/<id>-<agent>`. Its
/// memory files (`CLAUDE.md`, `AGENTS.md`, …) are its own: they keep what
/// the agent (or you) wrote in them from one task to the next.
pub fn own(
    git: &Git,
    path: &Path,
    state: &TaskState,
    agent: &str,
    seed: &str,
    now_ms: i64,
) -> Result<Workdir> {
    let id = &state.task_id;
    let branch = names::own_branch(id.as_str(), agent);
    let rel = git.project_rel();
    let memory: Vec<PathBuf> = baton_agents::memory::memory_files()
        .into_iter()
        .map(|f| rel.join(f))
        .collect();
    open(git, path, &branch, seed, id, now_ms, &memory)
}

fn open(
    git: &Git,
    path: &Path,
    branch: &str,
    target: &str,
    id: &TaskId,
    now_ms: i64,
    carry: &[PathBuf],
) -> Result<Workdir> {
    if git.resolve(&format!("refs/heads/{branch}")).is_none()
        && let Some(e) = crate::workdir::branch_in_the_way(git, branch)
    {
        return Err(e);
    }
    let name = path.file_name().map(|n| n.to_string_lossy().to_string());
    check_out(git, path, branch, target, id.as_str(), now_ms, carry).map_err(|(what, e)| {
        Error::op(format!(
            "cannot prepare workspace {} for task {id} ({what}): {e}",
            name.as_deref().unwrap_or("?")
        ))
    })?;
    crate::crash_point::at("workspace-prepared", name.as_deref().unwrap_or(""));
    let rel = git.project_rel();
    let cwd = if rel.as_os_str().is_empty() {
        path.to_path_buf()
    } else {
        path.join(rel)
    };
    fs_err::create_dir_all(&cwd)?;
    Ok(Workdir {
        git: crate::repo::open(&cwd),
        cwd,
        branch: Some(TaskBranch {
            name: branch.to_string(),
            remote: None,
            worktree: path.to_path_buf(),
            published: std::sync::Mutex::new(None),
        }),
    })
}
