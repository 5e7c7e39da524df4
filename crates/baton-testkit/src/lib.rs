//! Test support: a hermetic baton project in a temporary git repository,
//! and the real `baton` binary run against it.

pub mod agents;
pub mod browser;
pub mod crash;
pub mod github;
pub mod mcp;
pub mod model_server;
pub mod pg;
pub mod pgbouncer;
pub mod serve;
pub mod teams;

pub use pg::PgCluster;

use std::path::{Path, PathBuf};
use std::process::Command;

/// Which store a test's projects use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    /// A fresh database in this test process's private PostgreSQL cluster.
    Postgres,
}

thread_local! {
    static BACKEND: std::cell::Cell<Backend> = const { std::cell::Cell::new(Backend::Sqlite) };
}

/// Runs `f` with every `TestProject` it creates on `backend`.
pub fn with_backend<T>(backend: Backend, f: impl FnOnce() -> T) -> T {
    let before = BACKEND.with(|b| b.replace(backend));
    let out = f();
    BACKEND.with(|b| b.set(before));
    out
}

/// The backend `TestProject::new` uses on this thread.
pub fn backend() -> Backend {
    BACKEND.with(|b| b.get())
}

/// One parameterised suite, not two copies: each test written inside runs
/// twice, as `NAME::sqlite` and `NAME::postgres`, its projects (made by
/// `TestProject::new` or `bare`) on that store.
#[macro_export]
macro_rules! on_both_backends {
    ($(#[doc = $doc:literal])* fn $name:ident() $body:block $($rest:tt)*) => {
        $(#[doc = $doc])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            #[test]
            fn sqlite() {
                $crate::with_backend($crate::Backend::Sqlite, || $body)
            }
            #[test]
            fn postgres() {
                $crate::with_backend($crate::Backend::Postgres, || $body)
            }
        }
        $crate::on_both_backends! { $($rest)* }
    };
    () => {};
}

/// A temporary project: a git repository with `.baton/` initialised.
pub struct TestProject {
    pub dir: tempfile::TempDir,
    home: tempfile::TempDir,
    /// Set on PostgreSQL: every baton command gets it as BATON_DATABASE_URL.
    pub database_url: Option<String>,
}

/// A TCP port free on 127.0.0.1 just now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("can bind a port on 127.0.0.1")
}

/// One of GitHub's real webhook payloads (octokit's examples) kept in
/// the testkit, e.g. `pull_request/opened.payload.json`.
pub fn github_fixture(path: &str) -> PathBuf {
    testkit_dir().join("fixtures/github-webhooks").join(path)
}

/// This crate's folder in the checkout the tests run from. Cargo names the
/// running test's package at run time; the path compiled in is only the
/// fallback, since a build cache shared between clones (CI's) may hold a
/// testkit compiled in another clone.
pub fn testkit_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .and_then(|dir| {
            dir.ancestors()
                .map(|a| a.join("crates/baton-testkit"))
                .chain(std::iter::once(dir.clone()))
                .find(|d| d.join("fixtures").is_dir() && d.join("Cargo.toml").is_file())
        })
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

/// Path of the `baton` binary built for the tests.
pub fn baton_bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("baton")
}

impl TestProject {
    /// A git repository with one commit and `baton init` run in it.
    pub fn new() -> TestProject {
        Self::init(Self::bare())
    }

    fn init(p: TestProject) -> TestProject {
        p.git(&["init", "-q", "-b", "main"]);
        fs_err::write(p.root().join("README.md"), "# test project\n").unwrap();
        p.git(&["add", "."]);
        p.git(&["commit", "-qm", "initial"]);
        let out = p.baton(&["init"]).output().unwrap();
        assert!(
            out.status.success(),
            "baton init failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        p
    }

    /// An empty folder (no git, no `.baton/`).
    pub fn bare() -> TestProject {
        TestProject {
            dir: tempfile::Builder::new()
                .prefix("baton-test-")
                .tempdir()
                .unwrap(),
            home: tempfile::tempdir().unwrap(),
            database_url: match backend() {
                Backend::Sqlite => None,
                Backend::Postgres => Some(pg::shared().create_database()),
            },
        }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// `git` in the project, with a fixed identity; panics on failure.
    pub fn git(&self, args: &[&str]) -> String {
        let out = self
            .env(&mut Command::new("git"))
            .args(args)
            .current_dir(self.root())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
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
            .env_remove("BATON_HOST");
        match &self.database_url {
            Some(url) => c.env("BATON_DATABASE_URL", url),
            None => c.env_remove("BATON_DATABASE_URL"),
        }
    }

    /// The real `baton` binary, run in the project with a hermetic environment.
    pub fn baton(&self, args: &[&str]) -> Command {
        let mut c = Command::new(baton_bin());
        self.env(&mut c)
            .args(args)
            .current_dir(self.root())
            .stdin(std::process::Stdio::null());
        c
    }

    /// `WRAPPER… baton ARGS…`: baton as [`TestProject::baton`] makes it
    /// (its environment and folder), run by another program (`unshare`,
    /// `faketime`) that takes baton's command line as its last arguments.
    pub fn baton_under(&self, wrapper: &[&str], args: &[&str]) -> Command {
        let inner = self.baton(args);
        let mut c = Command::new(wrapper[0]);
        c.args(&wrapper[1..])
            .arg(inner.get_program())
            .args(inner.get_args())
            .current_dir(self.root())
            .stdin(std::process::Stdio::null());
        for (k, v) in inner.get_envs() {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
        c
    }

    /// `baton ARGS…` in a PID namespace of its own (`unshare --pid --fork
    /// --mount-proc`): a container of this host sharing the project and
    /// the host name, where baton is pid 1 and every pid means another
    /// process than here. Killing the returned child (unshare) kills all
    /// of it.
    pub fn baton_in_container(&self, args: &[&str]) -> Command {
        self.baton_under(
            &["unshare", "--pid", "--fork", "--mount-proc", "--kill-child"],
            args,
        )
    }

    /// `baton ARGS…` with the project folder mounted read-only for it alone
    /// (a mount namespace of its own): what a person with no write access
    /// to the project gets, even for the root the tests run as.
    pub fn baton_read_only(&self, args: &[&str]) -> Command {
        let root = self.root().display().to_string();
        self.baton_under(
            &[
                "unshare",
                "--mount",
                "sh",
                "-c",
                r#"mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@""#,
                &root,
            ],
            args,
        )
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
    /// Sets the lease's time to live in `.baton/config.toml` (`"1s"`), so
    /// a crashed holder's lease expires within a test.
    pub fn set_ttl(&self, ttl: &str) {
        let cfg = self.root().join(".baton/config.toml");
        let text = fs_err::read_to_string(&cfg).unwrap();
        assert!(text.contains("ttl = \"30s\""), "the default ttl: {text}");
        fs_err::write(
            &cfg,
            text.replace("ttl = \"30s\"", &format!("ttl = \"{ttl}\"")),
        )
        .unwrap();
    }

    pub fn workflow(&self, name: &str, toml: &str) {
        fs_err::write(
            self.root().join(format!(".baton/workflows/{name}.toml")),
            toml,
        )
        .unwrap();
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
        out.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// How many `phase_passed` events each phase has in the journal.
    pub fn passes(&self, id: &str) -> std::collections::BTreeMap<String, usize> {
        let mut m = std::collections::BTreeMap::new();
        for e in self.journal(id) {
            if e["kind"] == "phase_passed" {
                *m.entry(e["phase"].as_str().unwrap().to_string())
                    .or_insert(0) += 1;
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

impl TestProject {
    /// The hermetic environment as `KEY=VALUE` words, for commands run
    /// through a shell (e.g. inside tmux, which does not inherit ours).
    pub fn env_words(&self) -> Vec<String> {
        let mut words = vec![
            format!("HOME={}", self.home.path().display()),
            "GIT_CONFIG_GLOBAL=/dev/null".into(),
            "GIT_CONFIG_NOSYSTEM=1".into(),
            "GIT_AUTHOR_NAME=Test".into(),
            "GIT_AUTHOR_EMAIL=test@localhost".into(),
            "GIT_COMMITTER_NAME=Test".into(),
            "GIT_COMMITTER_EMAIL=test@localhost".into(),
            "NO_COLOR=1".into(),
            "TERM=xterm-256color".into(),
        ];
        if let Some(url) = &self.database_url {
            words.push(format!("BATON_DATABASE_URL={url}"));
        }
        words
    }
}

/// A private tmux server (its own socket) with one window running a shell
/// command, for tests of what a person sees on a real terminal.
pub struct Tmux {
    socket: String,
}

impl Tmux {
    /// Starts `command` (run by `sh -c`) in a detached 160x40 session.
    /// Panics if tmux is missing: terminal tests need it for real.
    pub fn start(command: &str) -> Tmux {
        let socket = format!(
            "baton-test-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        );
        let t = Tmux { socket };
        let out = t
            .cmd(&[
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-x",
                "160",
                "-y",
                "40",
                "sh",
                "-c",
                command,
            ])
            .output()
            .expect("tmux is required for terminal tests (./scripts/test installs it)");
        assert!(
            out.status.success(),
            "tmux new-session: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        t
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new("tmux");
        c.arg("-L").arg(&self.socket).args(args);
        c
    }

    /// The visible screen as text.
    pub fn screen(&self) -> String {
        let out = self
            .cmd(&["capture-pane", "-p", "-J", "-S", "-200"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Types `keys` (tmux key names, e.g. "y", "Enter").
    pub fn send(&self, keys: &[&str]) {
        let mut args = vec!["send-keys"];
        args.extend_from_slice(keys);
        assert!(self.cmd(&args).status().unwrap().success());
    }

    /// Waits until the screen contains `text`; panics with the screen after `secs`.
    pub fn wait_for(&self, text: &str, secs: u64) -> String {
        // Never less than DEADLINE: a busy machine draws slowly.
        let secs = secs.max(DEADLINE.as_secs());
        let until = std::time::Instant::now() + std::time::Duration::from_secs(secs);
        loop {
            let s = self.screen();
            if s.contains(text) {
                return s;
            }
            if std::time::Instant::now() > until {
                panic!("timed out waiting for {text:?}; the screen shows:\n{s}");
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]).output();
    }
}

impl TestProject {
    /// `baton --project DIR show ID --json`, for projects in subfolders.
    pub fn state_in(&self, project: &Path, id: &str) -> serde_json::Value {
        let (code, out, err) =
            self.run(&["--project", project.to_str().unwrap(), "show", id, "--json"]);
        assert_eq!(code, 0, "show failed: {err}");
        serde_json::from_str(&out).unwrap()
    }
}

impl Tmux {
    /// The visible screen with its colours and attributes as escape codes
    /// (`capture-pane -e`), to tell coloured output from plain.
    pub fn screen_with_escapes(&self) -> String {
        let out = self
            .cmd(&["capture-pane", "-p", "-e", "-J", "-S", "-200"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

/// How long the polling helpers wait before they fail a test: what a
/// person waits for on a machine busy with other work (a passing test
/// never waits it out).
pub const DEADLINE: std::time::Duration = std::time::Duration::from_secs(120);

/// Polls `f` every 25 ms until it returns `Some`, or panics after [`DEADLINE`].
pub fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let until = std::time::Instant::now() + DEADLINE;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            std::time::Instant::now() < until,
            "timed out after {DEADLINE:?} waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
}

/// Waits for a child with a deadline (kills it and panics when it is late).
pub fn wait_child(child: &mut std::process::Child, what: &str) -> std::process::ExitStatus {
    let until = std::time::Instant::now() + DEADLINE;
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if std::time::Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not exit within {DEADLINE:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
}

/// Whether a process is gone: no such pid, or a zombie nobody reaped yet
/// (the state field of `/proc/PID/stat`, after the command name).
pub fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            let state = stat
                .rfind(')')
                .and_then(|i| stat[i + 1..].split_whitespace().next());
            matches!(state, Some("Z") | Some("X") | None)
        }
    }
}
