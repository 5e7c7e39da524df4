//! PgBouncer (Debian's `pgbouncer` package, run for real) in front of a
//! test cluster, in session or transaction pooling mode, on a free port of
//! 127.0.0.1; stopped when dropped.

use crate::pg::{PgCluster, SUPERUSER};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

const PROGRAM: &str = "/usr/sbin/pgbouncer";

pub struct PgBouncer {
    child: Child,
    port: u16,
}

impl PgBouncer {
    /// Starts PgBouncer with `pool_mode = mode` (`session`,
    /// `transaction`) in front of `cluster`, and waits until it listens.
    pub fn start(cluster: &PgCluster, mode: &str) -> PgBouncer {
        assert!(
            Path::new(PROGRAM).exists(),
            "{PROGRAM} is missing: install Debian's pgbouncer package; ./scripts/test does this"
        );
        let port = crate::free_port();
        let dir = cluster.folder();
        let users = dir.join(format!("pgbouncer-{port}.users"));
        std::fs::write(&users, format!("\"{SUPERUSER}\" \"\"\n"))
            .expect("the cluster's folder is writable");
        let ini = dir.join(format!("pgbouncer-{port}.ini"));
        std::fs::write(
            &ini,
            format!(
                "[databases]\n* = host=127.0.0.1 port={}\n\n[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {port}\n\
                 unix_socket_dir =\nauth_type = trust\nauth_file = {}\npool_mode = {mode}\n\
                 default_pool_size = 10\nmax_client_conn = 200\nlogfile = {}\n",
                cluster.port(),
                users.display(),
                dir.join(format!("pgbouncer-{port}.log")).display()
            ),
        )
        .expect("the cluster's folder is writable");
        for f in [&users, &ini] {
            crate::pg::give_to_server(cluster, f);
        }
        let child = cluster
            .as_server(Path::new(PROGRAM))
            .arg(&ini)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {PROGRAM}: {e}"));
        let until = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < until,
                "PgBouncer did not listen on {port} within 20s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        PgBouncer { child, port }
    }

    /// `postgres://postgres@127.0.0.1:PORT/DB` through the pooler.
    pub fn url(&self, db: &str) -> String {
        format!("postgres://{SUPERUSER}@127.0.0.1:{}/{db}", self.port)
    }
}

impl Drop for PgBouncer {
    fn drop(&mut self) {
        // setpriv and runuser exec it: the child is PgBouncer itself.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
