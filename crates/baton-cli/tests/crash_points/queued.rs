//! A queued task's commit and push: the worker killed after a phase's work
//! is committed on the task's branch (not pushed), and after the push
//! (the next phase not started). The next worker takes the task over once
//! its lease expires; the remote's branch then holds every phase's work,
//! with each phase's commit once, and each phase passed once.

use super::{Tally, gapless};
use baton_testkit::{TestProject, on_both_backends};
use std::path::Path;
use std::process::Command;

const TWO: &str = r#"name = "w"
[[phase]]
id = "a"
run = "echo from-a > a.txt"
[[phase]]
id = "b"
needs = ["a"]
run = "cat a.txt > b.txt"
"#;

fn git_at(dir: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new("git")
        .arg("--git-dir")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

on_both_backends! {
    fn a_worker_killed_around_its_push_loses_no_commit() {
        let mut t = Tally::default();
        for point in ["worktree-committed:a", "branch-pushed:a"] {
            let remote = tempfile::Builder::new().prefix("baton-remote-").tempdir().unwrap();
            assert!(Command::new("git").args(["init", "-q", "--bare", "-b", "main"]).arg(remote.path()).status().unwrap().success());
            let p = TestProject::new();
            p.workflow("w", TWO);
            p.set_ttl("2s");
            p.git(&["remote", "add", "origin", remote.path().to_str().unwrap()]);
            p.git(&["add", "-A"]);
            p.git(&["commit", "-qm", "baton workflows"]);
            p.git(&["push", "-q", "origin", "main"]);
            assert_eq!(p.run(&["run", "w", "x", "--queue", "--id", "q1"]).0, 0);
            t.crash(p.baton(&["worker", "--once"]), point);
            std::thread::sleep(std::time::Duration::from_millis(2500));
            let (code, _, err) = p.run(&["worker", "--once"]);
            t.recovered(point, "worker --once", code, 0, &err);
            let doc = p.state("q1");
            t.check(doc["status"] == "COMPLETE", || format!("{point}: {} after the next worker: {err}", doc["status"]));
            let passes = p.passes("q1");
            t.check(passes.get("a") == Some(&1) && passes.get("b") == Some(&1), || format!("{point}: passes {passes:?}"));
            t.check(gapless(&p, "q1"), || format!("{point}: the journal has a gap"));
            let (ok, log) = git_at(remote.path(), &["log", "--format=%s", "baton/q1"]);
            t.check(ok, || format!("{point}: the remote has no branch baton/q1"));
            for phase in ["a", "b"] {
                let n = log.lines().filter(|l| *l == format!("baton: q1 {phase} passed")).count();
                t.check(n == 1, || format!("{point}: the remote's branch has {n} commits of {phase}: {log}"));
            }
            let (_, b) = git_at(remote.path(), &["show", "baton/q1:b.txt"]);
            t.check(b == "from-a\n", || format!("{point}: the remote's b.txt is {b:?}"));
        }
        t.report("queued");
    }
}
