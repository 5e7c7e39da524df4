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
