//! Files kept on a branch of their own, written and read through git's
//! plumbing alone: no worktree, no index of the user's is touched (a
//! temporary index is used), so a branch can carry baton's records beside
//! the user's work (the teams' `.team-state/`).

use super::{Git, GitError, IDENT};

impl Git {
    /// Replaces everything under `prefix` on `branch` with `files` (paths
    /// relative to `prefix`, and their bytes) in one commit; the rest of the
    /// branch is kept. Made again when another writer moved the branch in
    /// between. The commit.
    pub fn commit_files(
        &self,
        branch: &str,
        prefix: &str,
        files: &[(String, Vec<u8>)],
        message: &str,
    ) -> Result<String, GitError> {
        let refname = format!("refs/heads/{branch}");
        let tmp = TempDir::new().map_err(|e| GitError {
            args: "commit_files".into(),
            stderr: format!("no temporary folder: {e}"),
        })?;
        let index = tmp.path().join("index");
        let index_s = index.display().to_string();
        let env = |extra: &[(&'static str, &'static str)]| -> Vec<(String, String)> {
            let mut v: Vec<(String, String)> = extra
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            v.push(("GIT_INDEX_FILE".into(), index_s.clone()));
            v
        };
        let run = |args: &[&str], extra: &[(&'static str, &'static str)]| {
            let owned = env(extra);
            let pairs: Vec<(&str, &str)> = owned
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            self.run(args, &pairs)
        };
        let mut last = GitError {
            args: "commit_files".into(),
            stderr: "the branch kept moving".into(),
        };
        for _ in 0..10 {
            let _ = std::fs::remove_file(&index);
            let old = self.resolve(&refname);
            match &old {
                Some(o) => run(&["read-tree", o], &[])?,
                None => run(&["read-tree", "--empty"], &[])?,
            };
            run(
                &[
                    "rm",
                    "--cached",
                    "-r",
                    "-q",
                    "--ignore-unmatch",
                    "--",
                    prefix,
                ],
                &[],
            )?;
            for (i, (path, bytes)) in files.iter().enumerate() {
                let blob_file = tmp.path().join(format!("blob-{i}"));
                std::fs::write(&blob_file, bytes).map_err(|e| GitError {
                    args: "commit_files".into(),
                    stderr: e.to_string(),
                })?;
                let sha = run(
                    &["hash-object", "-w", &blob_file.display().to_string()],
                    &[],
                )?;
                run(
                    &[
                        "update-index",
                        "--add",
                        "--cacheinfo",
                        &format!("100644,{},{prefix}/{path}", sha.trim()),
                    ],
                    &[],
                )?;
            }
            let tree = run(&["write-tree"], &[])?.trim().to_string();
            let mut args = vec!["commit-tree", tree.as_str(), "-m", message];
            if let Some(o) = &old {
                args.push("-p");
                args.push(o);
            }
            let commit = run(&args, &IDENT)?.trim().to_string();
            let expected = old.clone().unwrap_or_default();
            match self.run(&["update-ref", &refname, &commit, &expected], &[]) {
                Ok(_) => return Ok(commit),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// The files under `prefix` at `rev`: paths relative to `prefix`, and
    /// their bytes.
    pub fn read_files(&self, rev: &str, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, GitError> {
        let names = self.run(&["ls-tree", "-r", "--name-only", rev, "--", prefix], &[])?;
        names
            .lines()
            .filter(|l| !l.is_empty())
            .map(|path| {
                let out = self
                    .command(&["cat-file", "blob", &format!("{rev}:{path}")], &[])
                    .output()
                    .map_err(|e| GitError {
                        args: "cat-file".into(),
                        stderr: e.to_string(),
                    })?;
                if !out.status.success() {
                    return Err(GitError {
                        args: format!("cat-file blob {rev}:{path}"),
                        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
                    });
                }
                let rel = path
                    .strip_prefix(prefix)
                    .unwrap_or(path)
                    .trim_start_matches('/')
                    .to_string();
                Ok((rel, out.stdout))
            })
            .collect()
    }
}

/// A folder of its own under the system's temporary folder, removed when
/// dropped.
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new() -> std::io::Result<TempDir> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let p = std::env::temp_dir().join(format!("baton-git-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&p)?;
        Ok(TempDir(p))
    }

    fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
