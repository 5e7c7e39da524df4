//! Who calls, and where its reports may go. Over stdio the caller is the
//! agent baton started, known from the environment baton set for it (and
//! wrote into its CLI's MCP configuration); the summary file it names is
//! taken only when it lies where baton puts such files, inside the
//! project's `.baton/tasks/<task>/run/`, with no symlink leading out. Over
//! Streamable HTTP (`baton serve`'s `/mcp`) the caller is what its
//! capability token says, checked by the server before the request gets
//! here ([`Caller::from_identity`]); no request header names a path or an
//! identity by itself.

use baton_core::instance::InstanceId;
use baton_engine::capabilities::Identity;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Default)]
pub struct Caller {
    /// `BATON_INSTANCE`: the coding or review instance the agent is.
    pub instance: Option<InstanceId>,
    /// Where the running phase attempt's reports go.
    pub summary_file: Option<PathBuf>,
    /// Why a summary file the environment named was not taken.
    pub summary_refused: Option<String>,
    /// `BATON_TASK_ID` and `BATON_PHASE`, for messages.
    pub task: Option<String>,
    pub phase: Option<String>,
    /// `BATON_TEAM` and `BATON_TEAMMATE`: the team the agent is a member of,
    /// and its name there.
    pub team: Option<String>,
    pub teammate: Option<String>,
}

impl Caller {
    /// What a verified capability says (`baton serve`'s `/mcp`).
    pub fn from_identity(who: Identity) -> Caller {
        Caller {
            instance: who.instance,
            summary_file: who.summary_file,
            summary_refused: None,
            task: who.task.map(|t| t.to_string()),
            phase: who.phase,
            team: who.team,
            teammate: who.teammate,
        }
    }

    /// What the environment of `baton mcp` says, for the project at `root`.
    pub fn from_env(root: &Path) -> Caller {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let task = var("BATON_TASK_ID");
        let (summary_file, summary_refused) = match var("BATON_SUMMARY_FILE") {
            None => (None, None),
            Some(f) => match inside_task_run(root, task.as_deref(), Path::new(&f)) {
                Ok(p) => (Some(p), None),
                Err(why) => (None, Some(format!("BATON_SUMMARY_FILE {f:?} {why}"))),
            },
        };
        Caller {
            instance: var("BATON_INSTANCE").and_then(|s| InstanceId::parse(&s).ok()),
            summary_file,
            summary_refused,
            task,
            phase: var("BATON_PHASE"),
            team: var("BATON_TEAM"),
            teammate: var("BATON_TEAMMATE"),
        }
    }
}

/// `file` resolved, when it is a `*.summary` directly in the task's
/// `.baton/tasks/<task>/run/` folder of the project at `root`, reached
/// through no symlink and not one itself.
fn inside_task_run(root: &Path, task: Option<&str>, file: &Path) -> Result<PathBuf, String> {
    let Some(task) = task.filter(|t| baton_core::TaskId::parse(t).is_ok()) else {
        return Err("names no task (BATON_TASK_ID is missing or not a task id)".into());
    };
    let want = root.join(".baton").join("tasks").join(task).join("run");
    let want = std::fs::canonicalize(&want)
        .map_err(|e| format!("cannot be checked: {}: {e}", want.display()))?;
    let dir = file.parent().ok_or("has no folder")?;
    let dir = std::fs::canonicalize(dir).map_err(|e| format!("lies in no folder: {e}"))?;
    if dir != want {
        return Err(format!(
            "lies outside {} (where baton puts this task's reports)",
            want.display()
        ));
    }
    let name = file
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|n| n.ends_with(".summary") && !n.starts_with('.'))
        .ok_or("is not an attempt's summary file (NN-phase.iI.aA.summary)")?;
    let path = dir.join(name);
    if std::fs::symlink_metadata(&path).is_ok_and(|m| !m.is_file()) {
        return Err("is a symlink or not a regular file".into());
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_summary_file_in_the_tasks_run_folder_is_taken() {
        let root = tempfile::tempdir().unwrap();
        let run = root.path().join(".baton/tasks/t1/run");
        std::fs::create_dir_all(&run).unwrap();
        std::fs::create_dir_all(root.path().join(".baton/tasks/t2/run")).unwrap();
        let ok = run.join("01-plan.i0.a1.summary");
        assert_eq!(
            inside_task_run(root.path(), Some("t1"), &ok).unwrap(),
            std::fs::canonicalize(&run)
                .unwrap()
                .join("01-plan.i0.a1.summary")
        );
        let config = root.path().join(".baton/config.toml");
        let other = root
            .path()
            .join(".baton/tasks/t2/run/01-plan.i0.a1.summary");
        let up = run.join("../../../config.toml");
        for bad in [config.as_path(), other.as_path(), up.as_path()] {
            assert!(
                inside_task_run(root.path(), Some("t1"), bad).is_err(),
                "{bad:?}"
            );
        }
        assert!(inside_task_run(root.path(), None, &ok).is_err());
        assert!(inside_task_run(root.path(), Some("../t1"), &ok).is_err());
        // A symlink at the file's place, or a folder that is one.
        std::os::unix::fs::symlink(&config, run.join("02-x.i0.a1.summary")).unwrap();
        assert!(inside_task_run(root.path(), Some("t1"), &run.join("02-x.i0.a1.summary")).is_err());
        let elsewhere = root.path().join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, run.join("sub")).unwrap();
        assert!(
            inside_task_run(root.path(), Some("t1"), &run.join("sub/03-y.i0.a1.summary")).is_err()
        );
    }
}
