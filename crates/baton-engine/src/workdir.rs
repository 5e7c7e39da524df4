//! A task's workdir: where its phases run (the word "workspace" is kept
//! for the workspaces by agent role, `crate::role_workspaces`, one of
//! the workdirs a task may have). A task run in the foreground uses the
//! project folder itself. A queued task (`baton run --queue`, run by workers) gets
//! its own git worktree under `.baton/worktrees/<id>` on branch
//! `baton/<id>`; at every phase boundary that branch, with the task's
//! checkpoint refs, is pushed to the project's remote, so a worker on
//! another machine fetches it and continues exactly where the last phase
//! ended. Nothing depends on a shared filesystem.

use crate::error::{Error, Result};
use crate::project::Project;
use baton_sys::git::Git;

use baton_core::state::PhaseStatus;
use baton_core::{TaskId, TaskState};
use std::path::PathBuf;

pub struct Workdir {
    /// Where phase processes start.
    pub cwd: PathBuf,
    /// The repository checkpoints are taken in (the worktree's, if any).
    pub git: Option<Git>,
    /// Set for queued tasks: their branch, pushed at phase boundaries.
    pub branch: Option<TaskBranch>,
}

pub struct TaskBranch {
    pub name: String,
    pub remote: Option<String>,
    pub worktree: PathBuf,
    /// What the remote's branch holds as far as this holder knows: a push
    /// only replaces exactly that (`--force-with-lease`), so a runner that
    /// lost the task can never overwrite what the new one published.
    pub published: std::sync::Mutex<Option<String>>,
}

/// `baton/<id>`.
pub fn branch_name(id: &TaskId) -> String {
    branch_name_str(id.as_str())
}

pub fn branch_name_str(id: &str) -> String {
    format!("baton/{id}")
}

/// The remote queued tasks travel through: `[workers] remote`, else
/// `origin` when the repository has it, else none (this machine only).
pub fn remote(project: &Project, git: &Git) -> Result<Option<String>> {
    match &project.config.workers.remote {
        Some(r) if git.has_remote(r) => Ok(Some(r.clone())),
        Some(r) => Err(Error::bad_input(format!(
            "[workers] remote = {r:?} in .baton/config.toml, but the repository has no remote {r:?}"
        ))
        .hint(format!(
            "add it with `git remote add {r} URL`, or remove `remote` under [workers]"
        ))),
        None if git.has_remote("origin") => Ok(Some("origin".into())),
        None => Ok(None),
    }
}

/// A branch in the way of new branch `branch`: git keeps branch names as
/// paths, so a branch `baton` (a file) and `baton/<id>` (a folder) cannot
/// both be. `Some(error)` naming it, with how to move it aside.
pub fn branch_in_the_way(git: &Git, branch: &str) -> Option<Error> {
    // A branch below it (`baton/x/y` for `baton/x`) is in the way too.
    if let Ok(below) = git.run(
        &[
            "for-each-ref",
            "--count=1",
            "--format=%(refname:short)",
            &format!("refs/heads/{branch}/"),
        ],
        &[],
    ) && let Some(b) = below.lines().next().filter(|b| !b.trim().is_empty())
    {
        return Some(
            Error::bad_input(format!(
                "a branch named {b} is in the way of branch {branch}: git cannot keep a branch {branch} beside branches {branch}/…"
            ))
            .hint(format!(
                "rename it, e.g. `git branch -m {b} {}-old` (its commits stay), then try again; nothing was made",
                b.replace('/', "-")
            )),
        );
    }
    let parts: Vec<&str> = branch.split('/').collect();
    (1..parts.len())
        .map(|n| parts[..n].join("/"))
        .find(|prefix| git.resolve(&format!("refs/heads/{prefix}")).is_some())
        .map(|prefix| {
            Error::bad_input(format!(
                "a branch named {prefix} is in the way of branch {branch}: git cannot keep a branch {prefix} beside branches {prefix}/…"
            ))
            .hint(format!(
                "rename it, e.g. `git branch -m {prefix} {prefix}-old` (its commits stay), then try again; nothing was made"
            ))
        })
}

impl Workdir {
    /// The project's own folder, in `git` (the engine's: one `Git` per
    /// process, so its snapshot state and ref writer are shared).
    pub fn project(project: &Project, git: Option<Git>) -> Workdir {
        Workdir {
            cwd: project.root.clone(),
            git,
            branch: None,
        }
    }

    /// `baton run --queue`: creates the task's branch at HEAD (or at
    /// `start`: a fork of a queued task starts where its checkpoint stood)
    /// and publishes it, so any worker can start it. Returns the commit it
    /// starts from.
    pub fn enqueue(project: &Project, id: &TaskId, start: Option<&str>) -> Result<String> {
        let git = crate::repo::open(&project.root).ok_or_else(|| {
            Error::bad_input("--queue needs a git repository: each queued task runs in its own worktree on branch baton/<id>")
                .hint("run `git init` and commit, or run the task in the foreground without --queue")
        })?;
        let head = match start {
            Some(commit) => commit.to_string(),
            None => git.head().ok_or_else(|| {
                Error::bad_input("--queue: the repository has no commit yet to start from")
                    .hint("commit your files first (`git commit`)")
            })?,
        };
        let branch = format!("refs/heads/{}", branch_name(id));
        if let Some(e) = branch_in_the_way(&git, &branch_name(id)) {
            return Err(e);
        }
        if git.resolve(&branch).is_some() {
            return Err(
                Error::bad_input(format!("a branch {} already exists", branch_name(id)))
                    .hint("pick another --id, or delete the branch if it is left over"),
            );
        }
        git.run(&["update-ref", &branch, &head, ""], &[])
            .map_err(|e| Error::op(format!("cannot create branch {}: {e}", branch_name(id))))?;
        if let Some(r) = remote(project, &git)? {
            let pushed = git.run(
                &[
                    "push",
                    "-q",
                    "--no-verify",
                    &r,
                    &format!("{branch}:{branch}"),
                ],
                &[],
            );
            if let Err(e) = pushed {
                let _ = git.run(&["update-ref", "-d", &branch], &[]);
                if e.stderr.contains("rejected") {
                    return Err(Error::bad_input(format!(
                        "a branch {} already exists on remote {r}",
                        branch_name(id)
                    ))
                    .hint("pick another --id; nothing was queued"));
                }
                return Err(Error::op(format!(
                    "cannot push branch {} to remote {r}: {e}",
                    branch_name(id)
                ))
                .hint("check that the remote is reachable and writable; nothing was queued"));
            }
        }
        Ok(head)
    }

    /// The commits a queued task `id` published (its branch and checkpoint
    /// refs), fetched from the remote when there is one: a fork of it
    /// starts from them.
    pub fn fetch_published(project: &Project, id: &TaskId) -> Result<()> {
        let Some(git) = crate::repo::open(&project.root) else {
            return Ok(());
        };
        if let Some(r) = remote(project, &git)? {
            git.fetch_task(&r, id.as_str()).map_err(|e| {
                Error::op(format!(
                    "cannot fetch branch {} from {r}: {e}",
                    branch_name(id)
                ))
            })?;
        }
        Ok(())
    }

    /// The worktree of a queued task, checked out where its work stands:
    /// at the start of the phase in progress (or interrupted), else at the
    /// tip of its branch (the remote's when there is one). Whatever an
    /// earlier run left there that differs is saved under
    /// `refs/baton-saved/<id>/` first, never thrown away.
    pub fn prepare(project: &Project, state: &TaskState, now_ms: i64) -> Result<Workdir> {
        let id = &state.task_id;
        let git = crate::repo::open(&project.root).ok_or_else(|| {
            Error::op(format!(
                "task {id} is queued, so it runs in a git worktree, but {} is not in a git repository",
                project.root.display()
            ))
        })?;
        let name = branch_name(id);
        let remote = remote(project, &git)?;
        let mut target = None;
        if let Some(r) = &remote {
            target = git
                .fetch_task(r, id.as_str())
                .map_err(|e| Error::op(format!("cannot fetch branch {name} from {r}: {e}")))?;
        }
        let published = target.clone();
        if target.is_none() {
            target = git.resolve(&format!("refs/heads/{name}"));
        }
        if let Some(start) = resume_point(state) {
            target = Some(start);
        }
        let target = target.ok_or_else(|| {
            Error::op(format!(
                "task {id}'s branch {name} is neither here nor on {}",
                remote.as_deref().unwrap_or("a remote")
            ))
            .hint("it was deleted; cancel the task (`baton cancel`) or recreate the branch")
        })?;
        let worktree = project.baton_dir().join("worktrees").join(id.as_str());
        let rel = git.project_rel();
        let cwd = worktree.join(&rel);
        check_out(&git, &worktree, &name, &target, id.as_str(), now_ms, &[]).map_err(
            |(what, e)| {
                Error::op(format!(
                    "cannot prepare the worktree of task {id} ({what}): {e}"
                ))
            },
        )?;
        fs_err::create_dir_all(&cwd)?;
        share_into(project, &git, &worktree);
        Ok(Workdir {
            git: crate::repo::open(&cwd),
            cwd,
            branch: Some(TaskBranch {
                name,
                remote,
                worktree,
                published: std::sync::Mutex::new(published),
            }),
        })
    }

    /// After a phase passed: commits its work onto the task branch and
    /// publishes branch and checkpoints. A no-op for foreground tasks.
    pub fn publish(&self, id: &TaskId, phase: &str) -> Result<(), Unpublished> {
        let (Some(b), Some(git)) = (&self.branch, &self.git) else {
            return Ok(());
        };
        git.commit_worktree(&format!("baton: {id} {phase} passed"))
            .map_err(|e| {
                Unpublished::Failed(format!(
                    "cannot commit the work of {phase} on {}: {e}",
                    b.name
                ))
            })?;
        crate::crash_point::at("worktree-committed", phase);
        let head = git.head().unwrap_or_default();
        if let Some(r) = &b.remote {
            let mut published = b.published.lock().unwrap_or_else(|p| p.into_inner());
            let mut last = String::new();
            // A remote that is briefly away gets about half a minute.
            for attempt in 0..6 {
                if attempt > 0 {
                    std::thread::sleep(std::time::Duration::from_millis(500 << (attempt - 1)));
                }
                match git.push_task(r, id.as_str(), published.as_deref()) {
                    Ok(()) => {
                        *published = Some(head);
                        crate::crash_point::at("branch-pushed", phase);
                        return Ok(());
                    }
                    Err(e) if e.stderr.contains("stale info") => {
                        return Err(Unpublished::Moved(format!(
                            "the remote's {} moved under this runner (another runner took the task over?); not overwriting it: {}",
                            b.name,
                            e.stderr.lines().last().unwrap_or("")
                        )));
                    }
                    Err(e) => last = e.stderr.lines().last().unwrap_or("").to_string(),
                }
            }
            return Err(Unpublished::Failed(format!(
                "cannot push {} to {r}: {last}",
                b.name
            )));
        }
        Ok(())
    }

    /// After `Unpublished::Moved`, once the caller has checked it still
    /// holds the task: what the remote's branch holds now is what the next
    /// push replaces (a runner that lost the task pushed late).
    pub fn adopt_remote_tip(&self) -> Result<(), String> {
        let (Some(b), Some(git)) = (&self.branch, &self.git) else {
            return Ok(());
        };
        let Some(r) = &b.remote else { return Ok(()) };
        let out = git
            .run(
                &["ls-remote", "--heads", r, &format!("refs/heads/{}", b.name)],
                &[],
            )
            .map_err(|e| e.to_string())?;
        let tip = out.split_whitespace().next().map(str::to_string);
        *b.published.lock().unwrap_or_else(|p| p.into_inner()) = tip;
        Ok(())
    }
}

/// Checks `branch` out at `target` in the git worktree `worktree` of
/// `git` (added if it is not there yet). Whatever the worktree held that
/// differs from `target` is saved first under
/// `refs/baton-saved/<task>/<now_ms>-<pid>`, never thrown away; the files
/// `carry` names (paths in the worktree) keep their text across the
/// checkout. `Err` names the step that failed.
pub(crate) fn check_out(
    git: &Git,
    worktree: &std::path::Path,
    branch: &str,
    target: &str,
    task: &str,
    now_ms: i64,
    carry: &[PathBuf],
) -> std::result::Result<(), (&'static str, String)> {
    let carried: Vec<(PathBuf, Vec<u8>)> = carry
        .iter()
        .filter_map(|rel| Some((rel.clone(), std::fs::read(worktree.join(rel)).ok()?)))
        .collect();
    check_out_only(git, worktree, branch, target, task, now_ms)?;
    for (rel, text) in carried {
        crate::render::atomic_write(&worktree.join(rel), &text)
            .map_err(|e| ("carry", e.to_string()))?;
    }
    Ok(())
}

fn check_out_only(
    git: &Git,
    worktree: &std::path::Path,
    branch: &str,
    target: &str,
    task: &str,
    now_ms: i64,
) -> std::result::Result<(), (&'static str, String)> {
    let fail = |what: &'static str| move |e: baton_sys::git::GitError| (what, e.to_string());
    if worktree.join(".git").exists() {
        let wg = crate::repo::open(worktree).ok_or((
            "open",
            format!("{} is not a git worktree", worktree.display()),
        ))?;
        let saved = format!("refs/baton-saved/{task}/{now_ms}-{}", std::process::id());
        let snap = wg
            .snapshot(&saved, &format!("baton: what the worktree of {task} held"))
            .map_err(fail("save"))?;
        let tree = |rev: &str| {
            wg.run(
                &["rev-parse", "--verify", "-q", &format!("{rev}^{{tree}}")],
                &[],
            )
            .ok()
            .map(|t| t.trim().to_string())
        };
        // Nothing to keep: the worktree holds the target's files, or its
        // own commits, clean, on another branch (which keeps them).
        let on_other_branch = wg.branch().is_some_and(|b| b != branch);
        let same = |rev: &str| tree(&snap).is_some() && tree(&snap) == tree(rev);
        if same(target) || (on_other_branch && same("HEAD")) {
            let _ = wg.run(&["update-ref", "-d", &saved], &[]);
        } else {
            tracing::debug!(%task, %saved, "saved what the worktree held");
        }
        wg.run(&["checkout", "-q", "-f", "-B", branch, target], &[])
            .map_err(fail("checkout"))?;
        wg.run(&["clean", "-q", "-f", "-d"], &[])
            .map_err(fail("clean"))?;
    } else {
        let _ = git.run(&["worktree", "prune"], &[]);
        let parent = worktree.parent().expect("has parent");
        fs_err::create_dir_all(parent).map_err(|e| ("create", e.to_string()))?;
        // Never shown as untracked files of the project's repository.
        let ignore = parent.join(".gitignore");
        if !ignore.exists() {
            fs_err::write(&ignore, "*\n").map_err(|e| ("create", e.to_string()))?;
        }
        let wt = worktree.display().to_string();
        git.run(
            &["worktree", "add", "-q", "-f", "-B", branch, &wt, target],
            &[],
        )
        .map_err(fail("worktree add"))?;
    }
    Ok(())
}

/// The checkout's heavy ignored folders shared into the new worktree at
/// `into`, as `[worktrees]` says; what could not be is said and skipped.
pub(crate) fn share_into(project: &Project, git: &Git, into: &std::path::Path) {
    let cfg = &project.config.worktrees;
    for (rel, done) in git.share_ignored(into, &cfg.shared(), cfg.share()) {
        match done {
            Ok(how) => {
                tracing::debug!(folder = %rel, into = %into.display(), how, "shared into the worktree")
            }
            Err(why) => {
                tracing::info!(folder = %rel, into = %into.display(), %why, "not shared into the worktree")
            }
        }
    }
}

/// Why a phase's work did not reach the remote.
#[derive(Debug)]
pub enum Unpublished {
    /// The remote's branch is not what this runner last saw there.
    Moved(String),
    Failed(String),
}

impl Unpublished {
    pub fn message(self) -> String {
        match self {
            Unpublished::Moved(m) | Unpublished::Failed(m) => m,
        }
    }
}

/// The commit a queued task's work resumes from when a phase was under way:
/// the start of its latest attempt.
pub(crate) fn resume_point(state: &TaskState) -> Option<String> {
    state
        .phases
        .iter()
        .find(|p| {
            p.status == PhaseStatus::InProgress
                || (matches!(p.status, PhaseStatus::Pending | PhaseStatus::Failed) && p.attempt > 0)
        })
        .and_then(|p| p.checkpoint.as_ref())
        .and_then(|c| c.head.clone())
}
