//! A real, private PostgreSQL cluster for tests.
//!
//! [`PgCluster::start`] runs `initdb` into a fresh folder under the system
//! temp dir and starts `postgres` on `127.0.0.1` on a free port, with trust
//! authentication for the superuser `postgres`. Tests share one cluster per
//! test process ([`shared`]) and each creates its own database
//! ([`PgCluster::create_database`]), so they run in parallel safely; a test
//! that stops and restarts the server starts a private cluster.
//!
//! The server binaries must be installed (Debian's `postgresql` package;
//! `./scripts/test` installs it). Without them every PostgreSQL test panics:
//! they fail loudly, never skip.
//!
//! # Running as root
//!
//! `initdb` and `postgres` refuse to run as root. When the test process is
//! root, every server command runs as the unprivileged `postgres` user (or
//! `nobody` when there is none) through `setpriv` (or `runuser`), and the
//! cluster's folder is owned by that user. No `unsafe` code is needed.
//!
//! # Cleanup, even when the test process is killed
//!
//! Statics are never dropped in Rust, and `atexit` handlers do not run when
//! a process is killed. So each cluster gets a watchdog: a tiny `sh` loop in
//! its own session (`setsid -f`, stdio on `/dev/null`, so neither a Ctrl-C
//! to the test's process group nor a pipe reading the test's output keeps
//! it or is kept by it) that polls every half second whether the test
//! process is still alive and the cluster's folder still there. When the
//! test process is gone, however it ended (a normal exit, a panic, SIGKILL),
//! the watchdog stops the server (`pg_ctl stop -m immediate`) and deletes
//! the folder. A cluster that is dropped normally stops its server and
//! deletes its folder itself; the watchdog then sees the folder gone and
//! exits.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

const NOT_FOUND: &str = "PostgreSQL server binaries (initdb, pg_ctl, postgres) not found: \
                         install Debian's `postgresql` package; ./scripts/test does this";

/// The superuser `initdb` creates; it connects without a password.
pub const SUPERUSER: &str = "postgres";

/// A PostgreSQL server of its own: data folder, port, log.
pub struct PgCluster {
    /// The cluster's folder: `data/` (the data directory), the server log
    /// `server.log`, and the Unix socket.
    dir: PathBuf,
    /// `dir/data`.
    data: PathBuf,
    bindir: PathBuf,
    port: u16,
    /// Whom server commands run as (uid, gid), when we are root.
    run_as: Option<(u32, u32)>,
}

/// The cluster shared by every test of this process, started on first use
/// and stopped and deleted (by its watchdog) when the process exits.
pub fn shared() -> &'static PgCluster {
    static SHARED: OnceLock<PgCluster> = OnceLock::new();
    SHARED.get_or_init(PgCluster::start)
}

static COUNTER: AtomicUsize = AtomicUsize::new(0);

impl PgCluster {
    /// Creates a fresh cluster (`initdb`) and starts it (`pg_ctl start -w`).
    /// Panics, with the server's log, if anything fails.
    pub fn start() -> PgCluster {
        Self::start_with(None)
    }

    /// A cluster that takes TCP connections over TLS only (`ssl = on` with
    /// the given PEM certificate chain and key; `hostnossl` refused), as a
    /// managed PostgreSQL does.
    pub fn start_tls(cert_pem: &str, key_pem: &str) -> PgCluster {
        Self::start_with(Some((cert_pem, key_pem)))
    }

    fn start_with(tls: Option<(&str, &str)>) -> PgCluster {
        let bindir = server_bindir();
        let run_as = if effective_uid() == 0 {
            Some(unprivileged_user())
        } else {
            None
        };
        let dir = std::env::temp_dir().join(format!(
            "baton-pg-{}-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0)
        ));
        std::fs::create_dir(&dir)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
        if let Some((uid, gid)) = run_as {
            std::os::unix::fs::chown(&dir, Some(uid), Some(gid))
                .unwrap_or_else(|e| panic!("cannot chown {}: {e}", dir.display()));
        }
        let mut cluster = PgCluster {
            data: dir.join("data"),
            dir,
            bindir,
            port: 0,
            run_as,
        };
        // From here on the folder exists: the watchdog owns its removal
        // should this process die, and Drop should it panic below.
        cluster.spawn_watchdog();
        cluster.run_checked(
            cluster
                .server_cmd("initdb")
                .arg("-D")
                .arg(&cluster.data)
                .args(["-A", "trust", "-U", SUPERUSER, "-E", "UTF8", "--locale=C"])
                // Only initdb's own final flush of the new files is skipped;
                // the server runs with fsync on.
                .arg("--no-sync"),
            "initdb",
        );
        let mut conf = std::fs::OpenOptions::new()
            .append(true)
            .open(cluster.data.join("postgresql.conf"))
            .expect("postgresql.conf exists after initdb");
        writeln!(
            conf,
            "\n# baton-testkit\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{}'\n\
             max_connections = 200\nfsync = on\nlogging_collector = off\n",
            cluster.dir.display()
        )
        .expect("postgresql.conf is writable");
        if let Some((cert, key)) = tls {
            use std::os::unix::fs::PermissionsExt;
            for (name, pem) in [("server.crt", cert), ("server.key", key)] {
                let path = cluster.data.join(name);
                std::fs::write(&path, pem).expect("the cluster's folder is writable");
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
                    .expect("chmod");
                if let Some((uid, gid)) = run_as {
                    std::os::unix::fs::chown(&path, Some(uid), Some(gid)).expect("chown");
                }
            }
            writeln!(
                conf,
                "ssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n"
            )
            .expect("postgresql.conf is writable");
            let hba = cluster.data.join("pg_hba.conf");
            let rules = std::fs::read_to_string(&hba).expect("pg_hba.conf exists after initdb");
            std::fs::write(
                &hba,
                format!(
                    "hostnossl all all 0.0.0.0/0 reject\nhostnossl all all ::/0 reject\n{rules}"
                ),
            )
            .expect("pg_hba.conf is writable");
        }
        drop(conf);

        // A free port can be taken by someone else between our probe and the
        // server's bind: try a few.
        let mut last_failure = String::new();
        for _ in 0..5 {
            cluster.port = crate::free_port();
            match cluster.try_start() {
                Ok(()) => return cluster,
                Err(e) => last_failure = e,
            }
        }
        panic!(
            "PostgreSQL did not start: {last_failure}\nserver log:\n{}",
            cluster.log()
        );
    }

    /// The port the server listens on (on 127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The cluster's folder, writable by the server's user.
    pub fn folder(&self) -> &Path {
        &self.dir
    }

    /// The data directory.
    pub fn data_dir(&self) -> &Path {
        &self.data
    }

    /// `postgres://postgres@127.0.0.1:PORT/DB`.
    pub fn url(&self, db: &str) -> String {
        format!("postgres://{SUPERUSER}@127.0.0.1:{}/{db}", self.port)
    }

    /// Creates a new, uniquely named, empty database and returns its URL.
    pub fn create_database(&self) -> String {
        let name = format!(
            "t_{}_{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let mut cmd = Command::new(self.bindir.join("createdb"));
        cmd.args(["-h", "127.0.0.1", "-U", SUPERUSER, "-w"])
            .arg("-p")
            .arg(self.port.to_string())
            .arg(&name);
        for var in [
            "PGSERVICE",
            "PGOPTIONS",
            "PGSSLMODE",
            "PGPASSFILE",
            "PGDATABASE",
        ] {
            cmd.env_remove(var);
        }
        self.run_checked(&mut cmd, "createdb");
        self.url(&name)
    }

    /// Cuts every connection to the database of `url`
    /// (`pg_terminate_backend`), as a server-side kill or a network cut
    /// does to its clients; how many it cut.
    pub fn cut_connections(&self, url: &str) -> usize {
        let db = url.rsplit('/').next().unwrap_or_default();
        assert!(
            db.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "a database name of the testkit's: {db}"
        );
        let out = Command::new(self.bindir.join("psql"))
            .args(["-h", "127.0.0.1", "-U", SUPERUSER, "-w", "-d", "postgres", "-Atc"])
            .arg(format!(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '{db}' AND pid <> pg_backend_pid()"
            ))
            .arg("-p")
            .arg(self.port.to_string())
            .env_remove("PGSERVICE")
            .env_remove("PGOPTIONS")
            .stdin(Stdio::null())
            .output()
            .expect("psql runs");
        assert!(
            out.status.success(),
            "psql: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .unwrap_or(0)
    }

    /// Stops the server (`pg_ctl stop -m fast`: open transactions are rolled
    /// back, clients are disconnected) and waits until it is down.
    pub fn stop(&self) {
        self.run_checked(
            self.server_cmd("pg_ctl")
                .arg("-D")
                .arg(&self.data)
                .args(["stop", "-m", "fast", "-w", "-t", "60"]),
            "pg_ctl stop",
        );
    }

    /// Starts the stopped server again, on the same port and data directory,
    /// and waits until it accepts connections.
    pub fn start_again(&self) {
        if let Err(e) = self.try_start() {
            panic!(
                "PostgreSQL did not start again: {e}\nserver log:\n{}",
                self.log()
            );
        }
    }

    /// Stops the server, keeps it down for `down`, and starts it again.
    pub fn restart_after(&self, down: Duration) {
        self.stop();
        std::thread::sleep(down);
        self.start_again();
    }

    /// The server's log so far (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }

    fn try_start(&self) -> Result<(), String> {
        let out = self
            .server_cmd("pg_ctl")
            .arg("-D")
            .arg(&self.data)
            .arg("-l")
            .arg(self.dir.join("server.log"))
            .args(["-w", "-t", "60", "-o"])
            .arg(format!("-p {}", self.port))
            .arg("start")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run pg_ctl: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "pg_ctl start exited with {}: {}{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    }

    /// A server program (`initdb`, `pg_ctl`) run as the unprivileged user
    /// when we are root, in the cluster's folder (the user may not be
    /// allowed into our current directory).
    fn server_cmd(&self, program: &str) -> Command {
        self.as_server(&self.bindir.join(program))
    }

    /// Any program run as the server's user, in the cluster's folder (a
    /// pooler in front of it, which will not run as root either), and
    /// that folder, where it may write.
    pub fn as_server(&self, path: &Path) -> Command {
        let mut cmd = match self.run_as {
            None => Command::new(path),
            Some((uid, gid)) => {
                let mut c = as_user_prefix(uid, gid);
                c.arg(path);
                c
            }
        };
        cmd.current_dir(&self.dir)
            .env("LC_ALL", "C")
            .env_remove("PGDATA")
            .env_remove("PGPORT")
            .env_remove("PGHOST");
        cmd
    }

    fn run_checked(&self, cmd: &mut Command, what: &str) {
        let out = cmd
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
        assert!(
            out.status.success(),
            "{what} failed ({}): {}{}\nserver log:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            self.log()
        );
    }

    /// Starts the watchdog described in the module documentation.
    fn spawn_watchdog(&self) {
        const SCRIPT: &str = r#"pid=$1; dir=$2; shift 2
while kill -0 "$pid" 2>/dev/null && [ -d "$dir" ]; do sleep 0.5; done
if [ -d "$dir/data" ]; then "$@" >/dev/null 2>&1; fi
rm -rf "$dir""#;
        let mut cmd = Command::new("setsid");
        cmd.arg("-f")
            .args(["sh", "-c", SCRIPT, "baton-pg-watchdog"])
            .arg(std::process::id().to_string())
            .arg(&self.dir);
        // The stop command, run as the server's user.
        if let Some((uid, gid)) = self.run_as {
            let prefix = as_user_prefix(uid, gid);
            cmd.arg(prefix.get_program());
            cmd.args(prefix.get_args());
        }
        cmd.arg(self.bindir.join("pg_ctl"))
            .arg("-D")
            .arg(self.data_dir())
            .args(["stop", "-m", "immediate", "-w", "-t", "30"])
            .current_dir("/")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // `setsid -f` forks the watchdog off and returns at once.
        let status = cmd
            .status()
            .unwrap_or_else(|e| panic!("cannot start the cluster's watchdog (setsid): {e}"));
        assert!(status.success(), "setsid -f sh failed: {status}");
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        if self.data_dir().join("postmaster.pid").exists() {
            let _ = self
                .server_cmd("pg_ctl")
                .arg("-D")
                .arg(&self.data)
                .args(["stop", "-m", "immediate", "-w", "-t", "30"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `setpriv` (or `runuser`) switching to `uid:gid` before running what follows.
/// Hands `file` to the server's user (when we are root), so a program run
/// as that user may read it.
pub(crate) fn give_to_server(cluster: &PgCluster, file: &Path) {
    if let Some((uid, gid)) = cluster.run_as {
        std::os::unix::fs::chown(file, Some(uid), Some(gid))
            .unwrap_or_else(|e| panic!("cannot chown {}: {e}", file.display()));
    }
}

fn as_user_prefix(uid: u32, gid: u32) -> Command {
    if find_in_path("setpriv").is_some() {
        let mut c = Command::new("setpriv");
        c.arg(format!("--reuid={uid}"))
            .arg(format!("--regid={gid}"))
            .arg("--clear-groups")
            .arg("--");
        c
    } else {
        let mut c = Command::new("runuser");
        c.arg("-u").arg(user_name(uid)).arg("--");
        c
    }
}

fn user_name(uid: u32) -> String {
    let out = Command::new("id")
        .args(["-nu", &uid.to_string()])
        .output()
        .expect("id runs");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The folder holding `initdb`, `pg_ctl` and `postgres`: `pg_config
/// --bindir` if it is a server's, else the newest
/// `/usr/lib/postgresql/*/bin`, else where `initdb` is on `PATH`.
fn server_bindir() -> PathBuf {
    let is_server = |d: &Path| {
        ["initdb", "pg_ctl", "postgres"]
            .iter()
            .all(|p| d.join(p).is_file())
    };
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output()
        && out.status.success()
    {
        let d = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if is_server(&d) {
            return d;
        }
    }
    let mut versions: Vec<(Vec<u32>, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e
                .file_name()
                .to_str()?
                .split('.')
                .map(|n| n.parse().ok())
                .collect::<Option<Vec<u32>>>()?;
            Some((v, e.path().join("bin")))
        })
        .filter(|(_, d)| is_server(d))
        .collect();
    versions.sort();
    if let Some((_, d)) = versions.pop() {
        return d;
    }
    if let Some(initdb) = find_in_path("initdb") {
        let real = std::fs::canonicalize(&initdb).unwrap_or(initdb);
        if let Some(d) = real.parent()
            && is_server(d)
        {
            return d.to_path_buf();
        }
    }
    panic!("{NOT_FOUND}");
}

fn find_in_path(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// The effective uid, from `/proc/self/status` (no `unsafe` needed).
fn effective_uid() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|u| u.parse().ok())
        .expect("an Uid line in /proc/self/status")
}

/// (uid, gid) of `postgres`, else of `nobody`.
fn unprivileged_user() -> (u32, u32) {
    let id = |flag: &str, user: &str| -> Option<u32> {
        let out = Command::new("id").args([flag, user]).output().ok()?;
        if !out.status.success() {
            return None;
        }
        String::from_utf8_lossy(&out.stdout).trim().parse().ok()
    };
    ["postgres", "nobody"]
        .iter()
        .find_map(|u| Some((id("-u", u)?, id("-g", u)?)))
        .expect(
            "running as root, and neither a `postgres` nor a `nobody` user exists to run the \
             PostgreSQL server as",
        )
}

/// A port on 127.0.0.1 that was free a moment ago.
#[cfg(test)]
mod tests {
    use super::*;

    fn psql(c: &PgCluster, url: &str, sql: &str) -> Result<String, String> {
        let out = Command::new(c.bindir.join("psql"))
            .args(["-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql, url])
            .output()
            .unwrap();
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    #[test]
    fn a_private_cluster_serves_stops_restarts_and_is_removed_on_drop() {
        let c = PgCluster::start();
        let url = c.create_database();
        assert!(url.starts_with(&format!("postgres://postgres@127.0.0.1:{}/t_", c.port())));
        psql(
            &c,
            &url,
            "CREATE TABLE x (v INT); INSERT INTO x VALUES (42)",
        )
        .unwrap();
        assert_eq!(psql(&c, &url, "SHOW fsync").unwrap(), "on");
        assert_eq!(psql(&c, &url, "SHOW max_connections").unwrap(), "200");

        c.stop();
        assert!(psql(&c, &url, "SELECT 1").is_err(), "the server is down");
        c.start_again();
        assert_eq!(
            psql(&c, &url, "SELECT v FROM x").unwrap(),
            "42",
            "same data dir"
        );
        c.restart_after(Duration::from_millis(100));
        assert_eq!(psql(&c, &url, "SELECT v FROM x").unwrap(), "42");

        let dir = c.dir.clone();
        drop(c);
        assert!(!dir.exists(), "{} is removed", dir.display());
    }

    #[test]
    fn the_shared_cluster_gives_each_caller_a_fresh_database() {
        let a = shared().create_database();
        let b = shared().create_database();
        assert_ne!(a, b);
        assert_eq!(shared().port(), shared().port());
        psql(shared(), &a, "CREATE TABLE only_in_a (v INT)").unwrap();
        assert!(psql(shared(), &b, "SELECT * FROM only_in_a").is_err());
    }

    #[test]
    fn the_watchdog_cleans_up_after_a_killed_process() {
        // A child process (this test binary, re-run on the helper below)
        // starts a cluster, reports its folder and is SIGKILLed.
        if std::env::var_os("BATON_PG_CHILD").is_some() {
            return;
        }
        let exe = std::env::current_exe().unwrap();
        let mut child = Command::new(exe)
            .args([
                "--exact",
                "pg::tests::child_starts_a_cluster_and_waits",
                "--nocapture",
                "--ignored",
            ])
            .env("BATON_PG_CHILD", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = std::io::BufReader::new(child.stdout.take().unwrap());
        let dir = std::io::BufRead::lines(out)
            .map_while(Result::ok)
            .find_map(|l| l.strip_prefix("CLUSTER ").map(str::to_string))
            .expect("the child reports its cluster's folder");
        let dir = PathBuf::from(dir);
        assert!(dir.join("data/postmaster.pid").exists());
        child.kill().unwrap();
        child.wait().unwrap();
        crate::wait_for(
            "the watchdog to remove the killed process's cluster",
            || (!dir.exists()).then_some(()),
        );
    }

    #[test]
    #[ignore = "run by the_watchdog_cleans_up_after_a_killed_process"]
    fn child_starts_a_cluster_and_waits() {
        if std::env::var_os("BATON_PG_CHILD").is_none() {
            return;
        }
        let c = PgCluster::start();
        println!("CLUSTER {}", c.dir.display());
        std::thread::sleep(Duration::from_secs(120));
    }
}
