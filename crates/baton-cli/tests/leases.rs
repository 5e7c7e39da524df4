//! Lease owners on other hosts and from earlier boots: what `ls` calls them
//! and whether `resume` may take the task over.

use baton_testkit::TestProject;

const WF: &str = "name = \"w\"\n[[phase]]\nid = \"a\"\nrun = \"echo a\"\n[[phase]]\nid = \"b\"\nrun = \"echo b\"\n";

/// A task that crashed in phase b, whose lease is then rewritten to `lease`.
fn crashed_with_lease(lease: serde_json::Value) -> TestProject {
    let p = TestProject::new();
    p.workflow("w", WF);
    let out = p
        .baton(&["run", "w", "x", "--id", "t"])
        .env("BATON_TEST_CRASH_AT", "after-spawn:b")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), None, "baton should have been SIGKILLed");
    let db = rusqlite::Connection::open(p.root().join(".baton/baton.db")).unwrap();
    db.busy_timeout(std::time::Duration::from_secs(10)).unwrap();
    let n = db
        .execute(
            "UPDATE tasks SET lease = ?1 WHERE id = 't'",
            [lease.to_string()],
        )
        .unwrap();
    assert_eq!(n, 1);
    p
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn lease(host: &str, boot: &str, expires_in_ms: i64) -> serde_json::Value {
    serde_json::json!({
        "owner": {"host": host, "boot_id": boot, "pid": 4242, "start_time": 1},
        "acquired_at": now_ms() - 60_000,
        "expires_at": now_ms() + expires_in_ms,
    })
}

fn ls_status(p: &TestProject) -> serde_json::Value {
    let (_, out, _) = p.run(&["ls", "--json"]);
    serde_json::from_str::<Vec<serde_json::Value>>(&out).unwrap()[0].clone()
}

fn local_host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string()
}

#[test]
fn a_fresh_lease_held_on_another_machine_is_running_and_busy() {
    let p = crashed_with_lease(lease("build-box-7", "boot-x", 60_000));
    let row = ls_status(&p);
    assert_eq!(row["status"], "RUNNING", "{row}");
    assert_eq!(row["resumable"], false);
    let (code, _, err) = p.run(&["resume", "t"]);
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains("pid 4242 on build-box-7"),
        "names the owner: {err}"
    );
}

#[test]
fn an_expired_lease_from_another_machine_is_crashed_and_resumable() {
    let p = crashed_with_lease(lease("build-box-7", "boot-x", -1_000));
    let row = ls_status(&p);
    assert_eq!(row["status"], "CRASHED", "{row}");
    assert_eq!(row["resumable"], true);
    let (code, _, err) = p.run(&["resume", "t"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(p.state("t")["status"], "COMPLETE");
}

#[test]
fn an_owner_from_an_earlier_boot_of_this_machine_is_dead_at_once() {
    // Still "fresh" by its expiry, but this machine has rebooted since.
    let p = crashed_with_lease(lease(&local_host(), "an-earlier-boot", 60_000));
    let row = ls_status(&p);
    assert_eq!(row["status"], "CRASHED", "{row}");
    let (code, _, err) = p.run(&["resume", "t"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("earlier boot"),
        "says why the owner is gone: {err}"
    );
}

#[test]
fn a_store_from_a_newer_baton_is_left_alone() {
    let p = TestProject::new();
    p.workflow("w", WF);
    assert_eq!(p.run(&["run", "w", "x", "--id", "t"]).0, 0);
    let db_path = p.root().join(".baton/baton.db");
    rusqlite::Connection::open(&db_path)
        .unwrap()
        .pragma_update(None, "user_version", 99)
        .unwrap();
    let (code, _, err) = p.run(&["ls"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("newer baton"), "{err}");
    assert!(
        !err.contains("doctor --fix"),
        "must not suggest setting it aside: {err}"
    );
    let (code, out, err) = p.run(&["doctor", "--fix"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(db_path.exists(), "doctor --fix moved a healthy store");
    let moved = std::fs::read_dir(p.root().join(".baton"))
        .unwrap()
        .filter_map(|e| e.ok())
        .any(|e| e.file_name().to_string_lossy().contains("damaged"));
    assert!(!moved);
}

/// A phase that says it started, then holds until the file `go` exists in
/// the project: a person (the test) decides when it ends, never a clock.
const HELD: &str = "name = \"slow\"\n[[phase]]\nid = \"work\"\nrun = \"echo run >> ran.txt; while [ ! -e go ]; do sleep 0.05; done; echo done\"\n";

fn runs_of(p: &TestProject) -> usize {
    std::fs::read_to_string(p.root().join("ran.txt")).map_or(0, |t| t.lines().count())
}

baton_testkit::on_both_backends! {
    /// Issue 34: two containers of one host (their own PID namespaces, one
    /// project volume, one host name). The runner in the first is pid 1
    /// there; in the second, pid 1 is another process, so a pid probe said
    /// "pid 1 … has exited (the pid was reused)" and the phase ran twice.
    /// Across namespaces only the lease's expiry counts.
    fn a_runner_in_another_container_is_judged_by_its_lease_never_its_pid() {
        let p = TestProject::new();
        p.workflow("slow", HELD);
        let mut a = p
            .baton_in_container(&["run", "slow", "--id", "d1"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        baton_testkit::wait_for("the phase to start in the first container", || {
            (runs_of(&p) == 1).then_some(())
        });
        let out = p
            .baton_in_container(&["ls", "--json"])
            .output()
            .unwrap();
        let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(rows[0]["status"], "RUNNING", "{rows:?}");
        let out = p.baton_in_container(&["resume", "d1"]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "busy, not taken over: {err}");
        assert!(err.contains("pid 1 on"), "names the runner: {err}");
        // doctor in the second container finds nothing to kill or repair.
        let out = p.baton_in_container(&["doctor", "--fix"]).output().unwrap();
        let said = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
        assert!(!said.contains("CRASHED") && !said.contains("killed"), "{said}");
        std::fs::write(p.root().join("go"), "").unwrap();
        let status = baton_testkit::wait_child(&mut a, "the first container's run");
        assert!(status.success(), "the first runner kept its lease");
        assert_eq!(runs_of(&p), 1, "the phase ran once");
        assert_eq!(p.state("d1")["status"], "COMPLETE");
    }

    /// When the first container dies (its pid 1 killed, and with it every
    /// process of its namespace), the second takes the task over once its
    /// lease expires, and the phase runs again there.
    fn a_dead_containers_task_is_taken_over_when_its_lease_expires() {
        let p = TestProject::new();
        p.set_ttl("2s");
        p.workflow("slow", HELD);
        let mut a = p
            .baton_in_container(&["run", "slow", "--id", "d2"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        baton_testkit::wait_for("the phase to start", || (runs_of(&p) == 1).then_some(()));
        // unshare --kill-child: its death takes the namespace with it.
        a.kill().unwrap();
        a.wait().unwrap();
        std::fs::write(p.root().join("go"), "").unwrap();
        // Busy (exit 3) until the lease expires, as a person retrying sees.
        let out = baton_testkit::wait_for("the lease to expire", || {
            let out = p.baton_in_container(&["resume", "d2"]).output().unwrap();
            (out.status.code() != Some(3)).then_some(out)
        });
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        // What the other container started cannot be seen from here: said
        // (unless this container was given the dead one's namespace inode,
        // which only a namespace whose every process is gone gives up).
        assert!(
            err.contains("cannot check or stop it from here") || err.contains("has exited"),
            "{err}"
        );
        assert_eq!(runs_of(&p), 2);
        assert_eq!(p.state("d2")["status"], "COMPLETE");
    }
}

/// `faketime -f OFFSET baton ARGS…` as another host (`BATON_HOST`): a
/// machine whose clock is off by OFFSET.
fn on_skewed_host(
    p: &TestProject,
    host: &str,
    offset: &str,
    args: &[&str],
) -> std::process::Command {
    let mut c = p.baton_under(&["faketime", "-f", offset], args);
    c.env("BATON_HOST", host);
    c
}

/// Issue 34: on PostgreSQL, hosts judge leases by the server's clock. A
/// task ran on host A (ttl 30 s); host B, its clock 45 s ahead, called it
/// CRASHED and took it over while A's phase still ran. And a runner whose
/// own clock is 45 s behind wrote leases that had expired when written.
#[test]
fn hosts_with_skewed_clocks_judge_leases_by_the_servers_clock() {
    baton_testkit::with_backend(baton_testkit::Backend::Postgres, || {
        let p = TestProject::new();
        p.workflow("slow", HELD);
        // A's clock is 45 s behind, B's 45 s ahead: 90 s apart, three ttls.
        let mut a = on_skewed_host(&p, "host-a", "-45s", &["run", "slow", "--id", "s1"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        baton_testkit::wait_for("the phase to start on host A", || {
            (runs_of(&p) == 1).then_some(())
        });
        for (host, offset) in [("host-b", "+45s"), ("host-c", "+0s")] {
            let out = on_skewed_host(&p, host, offset, &["ls", "--json"])
                .output()
                .unwrap();
            let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout)
                .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
            assert_eq!(
                rows[0]["status"], "RUNNING",
                "{host} sees it running: {rows:?}"
            );
            let out = on_skewed_host(&p, host, offset, &["resume", "s1"])
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                out.status.code(),
                Some(3),
                "{host} does not take it over: {err}"
            );
            assert!(err.contains("on host-a"), "{err}");
        }
        std::fs::write(p.root().join("go"), "").unwrap();
        let status = baton_testkit::wait_child(&mut a, "host A's run");
        assert!(status.success());
        assert_eq!(runs_of(&p), 1, "the phase ran once");
        assert_eq!(p.state("s1")["status"], "COMPLETE");
    });
}
