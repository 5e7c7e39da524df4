//! Consolidation: the team's work made one commit in the project. It is
//! journaled as started (with the commit message, HEAD as the last good
//! commit, and the checks), then every run of it (the first, or a retry):
//!
//! 1. merges the teammates' branches (the one baton gave each agent
//!    teammate, `baton/<team>-<name>`, and every branch their tasks'
//!    checkpoints name) into the project's work tree. The merges are
//!    computed first with `git merge-tree`, on a commit of the work tree
//!    made through a temporary index, so a conflict changes nothing: the
//!    conflicting branches and files are reported and the team stays
//!    `consolidating`. Clean merges are laid down with a two-tree
//!    `read-tree -m -u` (what the project held is kept beside them) and
//!    journaled with the commits merged, so a retry does not merge them
//!    again;
//! 2. runs the checks (recorded when it started; a retry's `--check`
//!    replaces them, its `-m` the message);
//! 3. stages every change and commits, with the merged branches' tips as
//!    parents besides HEAD (git then knows they are merged), and journals
//!    the commit.
//!
//! A crash anywhere leaves the team `consolidating`; `baton team resume`
//! says so and `baton team consolidate` then offers `--retry`
//! (idempotent: a commit already made with its message is found, never
//! made twice), `--abort` (the project back at the last good commit, what
//! it held saved under `refs/baton-saved/`, the tasks completed since
//! reopened) or `--inspect` (the staged diff). The teammates' branches
//! are only read, never moved.

use super::Teams;
use crate::error::{Error, Result};
use baton_core::state::Checkpoint;
use baton_core::team::{self, Input, MergedBranch, Team, TeamStatus};
use baton_sys::git::{Git, TreeMerge};

/// What `baton team consolidate` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Consolidate {
    /// A new consolidation (or the one under way, again).
    Run,
    Retry,
    Abort,
    Inspect,
}

/// A teammate's branch that does not merge cleanly.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Conflict {
    pub teammate: Option<String>,
    pub branch: String,
    /// The files that conflict (with the project's work or with a branch
    /// merged before it).
    pub files: Vec<String>,
}

/// How it ended.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Consolidated {
    /// `committed`, `unchanged` (nothing to commit), `aborted`,
    /// `inspected`, `checks-failed` or `conflicts`.
    pub outcome: &'static str,
    pub commit: Option<String>,
    pub message: Option<String>,
    /// The failed check's command and the end of its output.
    pub failed_check: Option<(String, String)>,
    /// `--abort`: where the project's state was saved; the tasks reopened.
    pub saved: Option<String>,
    pub reopened: Vec<String>,
    /// `--inspect`: the staged changes.
    pub staged: Option<String>,
    /// The teammates' branches merged so far, at the commits merged.
    pub merged: Vec<MergedBranch>,
    /// The branches that conflict: nothing was merged or committed.
    pub conflicts: Vec<Conflict>,
    /// The teammates' branches this repository does not have (not
    /// merged).
    pub missing: Vec<String>,
}

impl Consolidated {
    fn new(outcome: &'static str, message: Option<String>) -> Consolidated {
        Consolidated {
            outcome,
            commit: None,
            message,
            failed_check: None,
            saved: None,
            reopened: Vec::new(),
            staged: None,
            merged: Vec::new(),
            conflicts: Vec::new(),
            missing: Vec::new(),
        }
    }
}

impl Teams<'_> {
    /// Whether the project's index holds staged changes.
    pub fn dirty_index(&self) -> bool {
        self.eng.git().is_some_and(Git::has_staged)
    }

    fn repo(&self) -> Result<Git> {
        self.eng.git().cloned().ok_or_else(|| {
            Error::bad_input(
                "consolidation commits the team's work, but the project is not a git repository",
            )
            .hint("run `git init` and commit first")
        })
    }

    /// `message` and `checks` (when given) are the new consolidation's,
    /// or replace those of the one under way.
    pub fn consolidate(
        &self,
        id: &str,
        what: Consolidate,
        message: Option<String>,
        checks: &[String],
    ) -> Result<Consolidated> {
        let git = self.repo()?;
        let t = self.get(id)?;
        self.touch(id, team::LEAD)?;
        let under_way = t.status == TeamStatus::Consolidating;
        match what {
            Consolidate::Retry | Consolidate::Abort | Consolidate::Inspect if !under_way => {
                return Err(Error::bad_input(format!("team {id} is not consolidating"))
                    .hint(format!("start one with `baton team consolidate {id}`")));
            }
            Consolidate::Inspect => {
                let staged = git
                    .run(&["diff", "--cached", "--stat", "--patch"], &[])
                    .map_err(|e| Error::op(format!("cannot read the staged changes: {e}")))?;
                let mut out = Consolidated::new("inspected", t.consolidation.map(|c| c.message));
                out.staged = Some(staged);
                return Ok(out);
            }
            Consolidate::Abort => return self.abort(&git, id),
            _ => {}
        }
        let given = (!checks.is_empty()).then(|| checks.to_vec());
        let t = if under_way {
            // Made already by a run that crashed before journaling it?
            if let Some(done) = self.made_already(&git, id, &t)? {
                return Ok(done);
            }
            if message.is_some() || given.is_some() {
                self.step(id, |_, _| {
                    Ok(Input::AmendConsolidation {
                        message: message.clone(),
                        checks: given.clone(),
                    })
                })?
                .0
            } else {
                t
            }
        } else {
            let message = message.unwrap_or_else(|| default_message(&t));
            let checks = given.unwrap_or_else(|| self.settings.checks.clone());
            let base = git.head();
            self.step(id, |_, _| {
                Ok(Input::StartConsolidation {
                    message: message.clone(),
                    base: base.clone(),
                    checks: checks.clone(),
                })
            })?
            .0
        };
        let c = t.consolidation.clone().expect("consolidating");
        let head = git.head().ok_or_else(|| {
            Error::bad_input("the project's branch has no commit yet to consolidate onto")
                .hint("commit something first")
        })?;

        // 1. The teammates' branches, merged into the work tree.
        let plan = self.merge_plan(&git, &t, &head)?;
        if !plan.conflicts.is_empty() {
            let mut out = Consolidated::new("conflicts", Some(c.message));
            out.merged = c.merged;
            out.conflicts = plan.conflicts;
            out.missing = plan.missing;
            return Ok(out);
        }
        let merged = if plan.merged.is_empty() {
            c.merged.clone()
        } else {
            stage_all(&git)?;
            git.run(
                &["read-tree", "-m", "-u", &plan.from_tree, &plan.to_tree],
                &[],
            )
            .map_err(|e| {
                Error::op(format!(
                    "cannot lay the teammates' branches down in the project: {e}"
                ))
                .hint("move the files it names out of the way, then `--retry`")
            })?;
            self.eng.crash_point("consolidate-merged", id);
            let (after, _) = self.step(id, |_, _| {
                Ok(Input::ConsolidationMerged {
                    merged: plan.merged.clone(),
                })
            })?;
            after.consolidation.map(|c| c.merged).unwrap_or_default()
        };

        // 2. The checks, on the merged work.
        let checks = c
            .checks
            .clone()
            .unwrap_or_else(|| self.settings.checks.clone());
        for check in &checks {
            // Its output (a whole test suite's) goes to a file, of which
            // the end is read: bounded whatever it prints.
            let log = tempfile::tempfile()
                .map_err(|e| Error::op(format!("cannot run check {check:?}: {e}")))?;
            let err = log
                .try_clone()
                .map_err(|e| Error::op(format!("cannot run check {check:?}: {e}")))?;
            let status = std::process::Command::new("sh")
                .args(["-c", check])
                .current_dir(git.top())
                .stdin(std::process::Stdio::null())
                .stdout(
                    log.try_clone()
                        .map_err(|e| Error::op(format!("cannot run check {check:?}: {e}")))?,
                )
                .stderr(err)
                .status()
                .map_err(|e| Error::op(format!("cannot run check {check:?}: {e}")))?;
            if !status.success() {
                let tail = tail_of(log, 2_000);
                let mut done = Consolidated::new("checks-failed", Some(c.message));
                done.failed_check = Some((check.clone(), tail));
                done.merged = merged;
                done.missing = plan.missing;
                return Ok(done);
            }
        }

        // 3. One commit, the merged tips its parents besides HEAD.
        stage_all(&git)?;
        self.eng.crash_point("consolidate-staged", id);
        let parents: Vec<&str> = std::iter::once(head.as_str())
            .chain(
                merged
                    .iter()
                    .map(|m| m.commit.as_str())
                    .filter(|tip| !is_ancestor(&git, tip, &head)),
            )
            .collect();
        if !self.dirty_index() && parents.len() == 1 {
            self.step(id, |_, _| {
                Ok(Input::ConsolidationCommitted {
                    commit: head.clone(),
                })
            })?;
            let mut done = Consolidated::new("unchanged", Some(c.message));
            done.commit = Some(head);
            done.missing = plan.missing;
            return Ok(done);
        }
        let commit = commit_index(&git, &parents, &c.message)
            .map_err(|e| Error::op(format!("cannot commit the team's work: {e}")))?;
        self.eng.crash_point("consolidate-committed", id);
        self.step(id, |_, _| {
            Ok(Input::ConsolidationCommitted {
                commit: commit.clone(),
            })
        })?;
        let mut done = Consolidated::new("committed", Some(c.message));
        done.commit = Some(commit);
        done.merged = merged;
        done.missing = plan.missing;
        Ok(done)
    }

    /// A commit the consolidation under way made before a crash kept it
    /// from being journaled: HEAD moved past the base with its message.
    fn made_already(&self, git: &Git, id: &str, t: &Team) -> Result<Option<Consolidated>> {
        let c = t.consolidation.clone().expect("consolidating");
        let Some(head) = git.head() else {
            return Ok(None);
        };
        let same = Some(&head) != c.base.as_ref()
            && git
                .run(&["log", "-1", "--format=%B", &head], &[])
                .is_ok_and(|m| m.trim() == c.message.trim());
        if !same {
            return Ok(None);
        }
        self.step(id, |_, _| {
            Ok(Input::ConsolidationCommitted {
                commit: head.clone(),
            })
        })?;
        let mut done = Consolidated::new("committed", Some(c.message));
        done.commit = Some(head);
        done.merged = c.merged;
        Ok(Some(done))
    }

    /// The teammates' branches, whose first: the branch baton gave each
    /// agent teammate, then those its tasks' checkpoints name (teammates
    /// by name), then those of tasks nobody has.
    pub(super) fn team_branches(&self, t: &Team) -> Vec<(Option<String>, String)> {
        let mut out: Vec<(Option<String>, String)> = Vec::new();
        let mut add = |who: Option<&str>, b: String| {
            if !out.iter().any(|(_, x)| *x == b) {
                out.push((who.map(str::to_string), b));
            }
        };
        let named = |x: &team::TeamTask| {
            [&x.checkpoint, &x.last_green]
                .into_iter()
                .flatten()
                .filter_map(|c| c.git_branch.clone())
                .collect::<Vec<_>>()
        };
        for m in t.teammates.values() {
            if let Some(b) = self.instance_branch(m) {
                add(Some(&m.name), b);
            }
            for x in t
                .tasks
                .iter()
                .filter(|x| x.assigned_to.as_deref() == Some(&m.name))
            {
                for b in named(x) {
                    add(Some(&m.name), b);
                }
            }
        }
        for x in t.tasks.iter().filter(|x| x.assigned_to.is_none()) {
            for b in named(x) {
                add(None, b);
            }
        }
        out
    }

    /// What merging the teammates' branches into the work tree gives,
    /// computed without changing anything.
    fn merge_plan(&self, git: &Git, t: &Team, head: &str) -> Result<Plan> {
        let c = t.consolidation.as_ref().expect("consolidating");
        let from_tree = worktree_tree(git)
            .map_err(|e| Error::op(format!("cannot read the project's work tree: {e}")))?;
        let mut plan = Plan {
            to_tree: from_tree.clone(),
            from_tree,
            merged: Vec::new(),
            conflicts: Vec::new(),
            missing: Vec::new(),
        };
        let current = git.branch();
        let mut todo = Vec::new();
        for (who, branch) in self.team_branches(t) {
            if current.as_deref() == Some(branch.as_str()) {
                continue;
            }
            let Some(tip) = git.resolve(&format!("refs/heads/{branch}")) else {
                plan.missing.push(branch);
                continue;
            };
            let laid_down = c
                .merged
                .iter()
                .any(|m| m.branch == branch && m.commit == tip);
            if laid_down || is_ancestor(git, &tip, head) {
                continue;
            }
            todo.push(MergedBranch {
                teammate: who,
                branch,
                commit: tip,
            });
        }
        if todo.is_empty() {
            return Ok(plan);
        }
        let op =
            |e: baton_sys::git::GitError| Error::op(format!("cannot merge the team's work: {e}"));
        // The work tree as a commit whose parents are HEAD and what is laid
        // down already: the merge base of a branch merged before is its
        // tip then, so only what came after is merged again.
        let parents: Vec<&str> = std::iter::once(head)
            .chain(c.merged.iter().map(|m| m.commit.as_str()))
            .filter(|p| git.resolve(p).is_some())
            .collect();
        let mut ours = git
            .commit_tree(&plan.from_tree, &parents, "baton: the project's work tree")
            .map_err(op)?;
        for m in todo {
            match git.merge_tree(&ours, &m.commit).map_err(op)? {
                TreeMerge::Clean(tree) => {
                    ours = git
                        .commit_tree(
                            &tree,
                            &[&ours, &m.commit],
                            &format!("baton: merge {}", m.branch),
                        )
                        .map_err(op)?;
                    plan.to_tree = tree;
                    plan.merged.push(m);
                }
                TreeMerge::Conflict(files) => plan.conflicts.push(Conflict {
                    teammate: m.teammate,
                    branch: m.branch,
                    files,
                }),
            }
        }
        Ok(plan)
    }

    /// Back to the last good commit, what the project held saved first.
    fn abort(&self, git: &Git, id: &str) -> Result<Consolidated> {
        let t = self.get(id)?;
        let c = t.consolidation.clone().expect("consolidating");
        let safety = format!(
            "refs/baton-saved/teams/{id}/consolidation/{}",
            self.now()?.millis()
        );
        if let Some(base) = &c.base {
            let cp = Checkpoint {
                branch: git.branch(),
                head: Some(base.clone()),
                snapshot: Some(base.clone()),
                snapshot_ref: None,
            };
            git.restore(&cp, &safety).map_err(|e| {
                Error::op(format!("cannot put the project back at {base}: {e}")).hint(format!(
                    "what was there is saved at {safety} if that ref exists"
                ))
            })?;
        }
        let (_, records) = self.step(id, |_, _| Ok(Input::AbortConsolidation))?;
        let reopened = records
            .iter()
            .find_map(|r| match &r.event {
                team::Event::ConsolidationAborted { reopened, .. } => Some(reopened.clone()),
                _ => None,
            })
            .unwrap_or_default();
        let mut out = Consolidated::new("aborted", Some(c.message));
        out.commit = c.base;
        out.saved = Some(safety);
        out.reopened = reopened;
        Ok(out)
    }
}

/// What merging the branches gives: the work tree's tree before and
/// after, the branches merged, those in conflict, those missing.
struct Plan {
    from_tree: String,
    to_tree: String,
    merged: Vec<MergedBranch>,
    conflicts: Vec<Conflict>,
    missing: Vec<String>,
}

/// `team crew: t1 Schema; t2 API`: the tasks completed since the last one.
fn default_message(t: &Team) -> String {
    let done: Vec<String> = t
        .tasks
        .iter()
        .filter(|x| x.status == team::TaskStatus::Completed)
        .filter(|x| x.completed_at > t.last_consolidated_at)
        .map(|x| format!("{} {}", x.id, x.title))
        .collect();
    if done.is_empty() {
        format!("team {}: consolidation", t.id)
    } else {
        format!("team {}: {}", t.id, done.join("; "))
    }
}

/// Every change in the project staged (its `.baton/` left out).
fn stage_all(git: &Git) -> Result<()> {
    git.run(&["add", "-A", "--", ":/", ":!.baton"], &[])
        .map_err(|e| Error::op(format!("cannot stage the team's work: {e}")))?;
    Ok(())
}

/// The tree of the work tree as `stage_all` would stage it, through a
/// temporary copy of the index: the project's own index is not touched.
fn worktree_tree(git: &Git) -> std::result::Result<String, baton_sys::git::GitError> {
    let index = git.run(&["rev-parse", "--git-path", "index"], &[])?;
    let index = git.top().join(index.trim());
    let tmp = index.with_file_name(format!("baton-consolidate-index-{}", std::process::id()));
    if index.exists() {
        let _ = std::fs::copy(&index, &tmp);
    }
    let tmp_s = tmp.to_string_lossy().into_owned();
    let env = [("GIT_INDEX_FILE", tmp_s.as_str())];
    let tree = git
        .run(&["add", "-A", "--", ":/", ":!.baton"], &env)
        .and_then(|_| git.run(&["write-tree"], &env));
    let _ = std::fs::remove_file(&tmp);
    Ok(tree?.trim().to_string())
}

/// Whether `a` is `b` or an ancestor of it.
fn is_ancestor(git: &Git, a: &str, b: &str) -> bool {
    git.run(&["merge-base", "--is-ancestor", a, b], &[]).is_ok()
}

/// Commits the index with `parents` (HEAD first) and moves HEAD (its
/// branch) there, only if HEAD is still `parents[0]`.
fn commit_index(
    git: &Git,
    parents: &[&str],
    message: &str,
) -> std::result::Result<String, baton_sys::git::GitError> {
    let tree = git.run(&["write-tree"], &[])?.trim().to_string();
    let commit = git.commit_tree(&tree, parents, message)?;
    git.run(
        &[
            "update-ref",
            "-m",
            "baton: team consolidation",
            "HEAD",
            &commit,
            parents[0],
        ],
        &[],
    )?;
    Ok(commit)
}

/// The last `max` bytes of a file, as text.
fn tail_of(mut f: std::fs::File, max: u64) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(max)));
    let mut buf = Vec::new();
    let _ = f.take(max).read_to_end(&mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}
