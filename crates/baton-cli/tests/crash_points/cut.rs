//! PostgreSQL at each point of a task's run: the process is held at the
//! point (`BATON_TEST_HOLD_AT`), its connections to the store are cut
//! (`pg_terminate_backend`), and at every third point the server is
//! restarted too; then it goes on. It finishes (exit 0) or stops with an
//! operational error (exit 1), never anything else; `resume` then
//! completes the task, and the invariants of a crash hold (each phase
//! passed once, the journal whole, the files matching the store).

use super::Tally;
use crate::task::{W, cases, check_complete};
use baton_testkit::TestProject;
use baton_testkit::pg::PgCluster;
use std::time::{Duration, Instant};

#[test]
fn the_store_cut_or_restarted_at_each_point_loses_nothing() {
    let cluster = PgCluster::start();
    let mut p = TestProject::new();
    p.database_url = Some(cluster.create_database());
    p.workflow("w", W);
    let url = p.database_url.clone().unwrap();
    let mut t = Tally::default();
    let hold = p.root().join("held");
    // A completed task's last commit is not a point a run is held at
    // with anything after it to cut: those are a crash's (task.rs).
    let points: Vec<String> = cases()
        .into_iter()
        .filter(|c| !c.ends_with(":task_completed"))
        .collect();
    for (n, point) in points.iter().enumerate() {
        let id = format!("p{n}");
        let child = p
            .baton(&["run", "w", "x", "--id", &id])
            .env("BATON_TEST_HOLD_AT", point)
            .env("BATON_TEST_HOLD_FILE", &hold)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let until = Instant::now() + Duration::from_secs(60);
        while !hold.exists() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        t.points
            .insert(point.split(':').next().unwrap().to_string());
        t.check(hold.exists(), || {
            format!("{point}: the run never reached it")
        });
        let cut = cluster.cut_connections(&url);
        t.check(cut >= 1, || {
            format!("{point}: no connection of the store to cut")
        });
        let restart = n % 3 == 2;
        if restart {
            cluster.restart_after(Duration::from_millis(300));
        }
        let _ = std::fs::remove_file(&hold);
        let out = child.wait_with_output().unwrap();
        t.runs += 1;
        let code = out.status.code().unwrap_or(-1);
        let how = if restart { "cut and restarted" } else { "cut" };
        t.check(code == 0 || code == 1, || {
            format!(
                "{point} ({how}): the run exited {code}: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        if p.state(&id)["status"] != "COMPLETE" {
            let (code, _, err) = p.run(&["resume", &id]);
            t.recovered(point, "resume", code, 0, &err);
        }
        check_complete(&p, &id, &format!("{point} ({how})"), &mut t);
    }
    // Its own cluster (restarted here), so the figures say PostgreSQL.
    baton_testkit::with_backend(baton_testkit::Backend::Postgres, || t.report("cut"));
}
