//! Task branches and their checkpoint refs: fetched from and pushed to a
//! remote, listed and deleted.

use super::{Git, GitError};

impl Git {
    pub fn has_remote(&self, name: &str) -> bool {
        self.run(&["remote"], &[])
            .map(|out| out.lines().any(|l| l.trim() == name))
            .unwrap_or(false)
    }

    /// Fetches a task's branch and checkpoint refs from `remote`; returns the
    /// branch's commit there, `None` if the remote has no such branch.
    pub fn fetch_task(&self, remote: &str, task: &str) -> Result<Option<String>, GitError> {
        let branch = format!("refs/heads/baton/{task}");
        let listed = self.run(&["ls-remote", "--heads", remote, &branch], &[])?;
        if listed.trim().is_empty() {
            return Ok(None);
        }
        let tracking = format!("refs/remotes/{remote}/baton/{task}");
        self.run(
            &[
                "fetch",
                "-q",
                "--no-tags",
                remote,
                &format!("+{branch}:{tracking}"),
                &format!("+refs/baton/{task}/*:refs/baton/{task}/*"),
            ],
            &[],
        )?;
        Ok(self.resolve(&tracking))
    }

    /// Pushes a task's branch and checkpoint refs to `remote`, all or
    /// nothing. The branch may be rewound (a re-run from an earlier commit)
    /// but only over `expected`, what this holder last saw there (`None`:
    /// no such branch yet).
    pub fn push_task(
        &self,
        remote: &str,
        task: &str,
        expected: Option<&str>,
    ) -> Result<(), GitError> {
        let branch = format!("refs/heads/baton/{task}");
        let lease = format!("--force-with-lease={branch}:{}", expected.unwrap_or(""));
        self.run(
            &[
                "push",
                "-q",
                "--atomic",
                "--no-verify",
                &lease,
                remote,
                &format!("{branch}:{branch}"),
                &format!("+refs/baton/{task}/*:refs/baton/{task}/*"),
            ],
            &[],
        )?;
        Ok(())
    }

    /// Deletes every ref under `prefix` (e.g. `refs/baton/TASK/`).
    pub fn delete_refs(&self, prefix: &str) -> Result<usize, GitError> {
        let out = self.run(&["for-each-ref", "--format=%(refname)", prefix], &[])?;
        let mut n = 0;
        for r in out.lines().filter(|l| !l.is_empty()) {
            self.run(&["update-ref", "-d", r], &[])?;
            n += 1;
        }
        Ok(n)
    }

    /// Task ids that have refs under `refs/baton/`.
    pub fn ref_tasks(&self) -> Vec<String> {
        let out = self
            .run(&["for-each-ref", "--format=%(refname)", "refs/baton/"], &[])
            .unwrap_or_default();
        let mut ids: Vec<String> = out
            .lines()
            .filter_map(|l| l.strip_prefix("refs/baton/"))
            .filter_map(|l| l.split('/').next())
            .map(str::to_string)
            .collect();
        ids.sort();
        ids.dedup();
        ids
    }
}
