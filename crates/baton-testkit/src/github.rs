//! The fake GitHub REST API (`fake-github/server.mjs`, run with Node): it
//! checks every request against GitHub's OpenAPI description and answers
//! with GitHub's documented and recorded responses. Its packages are
//! installed by `./scripts/test` (`FAKE_GITHUB_MODULES`); a test that
//! needs it fails loudly when they are missing.

use std::io::{BufRead, BufReader};

use std::process::{Child, Command, Stdio};

pub struct FakeGitHub {
    child: Child,
    /// `http://127.0.0.1:PORT`: the API base URL.
    pub url: String,
    log: tempfile::NamedTempFile,
}

impl FakeGitHub {
    /// Starts the server on a free port. `fail_create`: the first N valid
    /// create requests are answered 502 (a flaky GitHub). `issues`: the
    /// issue numbers that exist (each GitHub's documented example issue,
    /// "Found a bug").
    pub fn start(fail_create: u32, issues: &[u32]) -> FakeGitHub {
        let modules = std::env::var("FAKE_GITHUB_MODULES").expect(
            "FAKE_GITHUB_MODULES is not set: run the tests with ./scripts/test, which installs the fake GitHub API's packages",
        );
        let server = crate::testkit_dir().join("fake-github/server.mjs");
        let log = tempfile::NamedTempFile::new().unwrap();
        let mut child = Command::new("node")
            .arg(&server)
            .args(["--port", "0", "--fail-create", &fail_create.to_string()])
            .args(
                issues
                    .iter()
                    .flat_map(|n| ["--issue".to_string(), n.to_string()]),
            )
            .arg("--log")
            .arg(log.path())
            .env("FAKE_GITHUB_MODULES", &modules)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("node is needed for the fake GitHub API");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .trim()
            .strip_prefix("listening ")
            .unwrap_or_else(|| panic!("the fake GitHub API did not start: {line:?}"))
            .to_string();
        FakeGitHub { child, url, log }
    }

    /// Every request it received, as it logged them (method, path, query,
    /// headers, body, status, problems).
    pub fn requests(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(self.log.path())
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

impl Drop for FakeGitHub {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
