//! Test support: a hermetic baton project in a temporary git repository,
//! and the real `baton` binary run against it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A temporary project: a git repository with `.baton/` initialised.
pub struct TestProject {
    pub dir: tempfile::TempDir,
    home: tempfile::TempDir,
}

/// Path of the `baton` binary built for the tests.
pub fn baton_bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("baton")
}

impl TestProject {
    /// A git repository with one commit and `baton init` run in it.
    pub fn new() -> TestProject {
        let p = Self::bare();
        p.git(&["init", "-q", "-b", "main"]);
        fs_err::write(p.root().join("README.md"), "# test project\n").unwrap();
        p.git(&["add", "."]);
        p.git(&["commit", "-qm", "initial"]);
        let out = p.baton(&["init"]).output().unwrap();
        assert!(out.status.success(), "baton init failed: {}", String::from_utf8_lossy(&out.stderr));
        p
    }

    /// An empty folder (no git, no `.baton/`).
    pub fn bare() -> TestProject {
        TestProject {
            dir: tempfile::Builder::new().prefix("baton-test-").tempdir().unwrap(),
            home: tempfile::tempdir().unwrap(),
        }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// `git` in the project, with a fixed identity; panics on failure.
    pub fn git(&self, args: &[&str]) -> String {
        let out = self.env(&mut Command::new("git")).args(args).current_dir(self.root()).output().unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn env<'a>(&self, c: &'a mut Command) -> &'a mut Command {
        c.env("HOME", self.home.path())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "Test")
            .env("GIT_AUTHOR_EMAIL", "test@localhost")
            .env("GIT_COMMITTER_NAME", "Test")
            .env("GIT_COMMITTER_EMAIL", "test@localhost")
            .env("NO_COLOR", "1")
            .env_remove("BATON_PROJECT")
            .env_remove("BATON_TEST_CRASH_AT")
            .env_remove("BATON_LOG")
    }

    /// The real `baton` binary, run in the project with a hermetic environment.
    pub fn baton(&self, args: &[&str]) -> Command {
        let mut c = Command::new(baton_bin());
        self.env(&mut c).args(args).current_dir(self.root()).stdin(std::process::Stdio::null());
        c
    }

    /// Runs baton and returns (exit code, stdout, stderr).
    pub fn run(&self, args: &[&str]) -> (i32, String, String) {
        let out = self.baton(args).output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Writes `.baton/workflows/NAME.toml`.
    pub fn workflow(&self, name: &str, toml: &str) {
        fs_err::write(self.root().join(format!(".baton/workflows/{name}.toml")), toml).unwrap();
    }

    /// `baton show ID --json`, parsed.
    pub fn state(&self, id: &str) -> serde_json::Value {
        let (code, out, err) = self.run(&["show", id, "--json"]);
        assert_eq!(code, 0, "show failed: {err}");
        serde_json::from_str(&out).unwrap()
    }

    /// `baton log ID --json`, parsed.
    pub fn journal(&self, id: &str) -> Vec<serde_json::Value> {
        let (code, out, err) = self.run(&["log", id, "--json"]);
        assert_eq!(code, 0, "log failed: {err}");
        out.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    /// How many `phase_passed` events each phase has in the journal.
    pub fn passes(&self, id: &str) -> std::collections::BTreeMap<String, usize> {
        let mut m = std::collections::BTreeMap::new();
        for e in self.journal(id) {
            if e["kind"] == "phase_passed" {
                *m.entry(e["phase"].as_str().unwrap().to_string()).or_insert(0) += 1;
            }
        }
        m
    }
}

impl Default for TestProject {
    fn default() -> Self {
        Self::new()
    }
}
