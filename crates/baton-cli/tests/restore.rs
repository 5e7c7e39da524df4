//! Restoring checkpoints (`resume --from`, `fork`) never loses what the user
//! had: work outside the project folder, other branches, saved work.

use baton_testkit::{TestProject, on_both_backends};

const WF: &str = r#"
name = "m"
[[phase]]
id = "a"
run = "echo one > a.txt"
[[phase]]
id = "b"
run = "echo two >> a.txt; echo b > b.txt"
"#;

fn read(p: &TestProject, f: &str) -> String {
    std::fs::read_to_string(p.root().join(f)).unwrap_or_else(|e| panic!("{f}: {e}"))
}

/// All refs under refs/baton-saved/, with the files each one holds.
fn saved(p: &TestProject) -> Vec<(String, String)> {
    p.git(&["for-each-ref", "--format=%(refname)", "refs/baton-saved/"])
        .lines()
        .map(|r| (r.to_string(), p.git(&["ls-tree", "-r", "--name-only", r])))
        .collect()
}

on_both_backends! {
fn from_restores_the_project_and_saves_what_was_there_first() {
    let p = TestProject::new();
    p.workflow("m", WF);
    assert_eq!(p.run(&["run", "m", "x", "--id", "t"]).0, 0);
    std::fs::write(p.root().join("a.txt"), "edited by hand\n").unwrap();
    std::fs::write(p.root().join("mine.txt"), "untracked work\n").unwrap();
    let (code, _, err) = p.run(&["resume", "t", "--from", "b"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("refs/baton-saved/t/"),
        "says where the old work tree went: {err}"
    );
    // b ran again on a.txt as it was when b first started.
    assert_eq!(read(&p, "a.txt"), "one\ntwo\n");
    assert!(
        !p.root().join("mine.txt").exists(),
        "files the checkpoint lacks are removed"
    );
    // ... but they are saved, with the hand edit.
    let refs = saved(&p);
    assert_eq!(refs.len(), 1, "{refs:?}");
    assert!(refs[0].1.contains("mine.txt"), "{refs:?}");
    let blob = p.git(&["show", &format!("{}:a.txt", refs[0].0)]);
    assert_eq!(blob, "edited by hand\n");
    // The journal says so before the rewind.
    let kinds: Vec<String> = p
        .journal("t")
        .iter()
        .map(|e| e["kind"].as_str().unwrap().to_string())
        .collect();
    let note = kinds
        .iter()
        .rposition(|k| k == "note")
        .expect("a note about the restore");
    let rewound = kinds.iter().rposition(|k| k == "rewound").unwrap();
    assert!(note < rewound, "{kinds:?}");
    // `rm` keeps saved work.
    assert_eq!(p.run(&["rm", "t"]).0, 0);
    assert_eq!(saved(&p).len(), 1, "rm deleted the saved work tree");
}
}

on_both_backends! {
fn a_project_in_a_subfolder_never_loses_work_elsewhere_in_the_repo() {
    let p = TestProject::bare();
    p.git(&["init", "-q", "-b", "main"]);
    std::fs::create_dir_all(p.root().join("proj")).unwrap();
    std::fs::create_dir_all(p.root().join("other")).unwrap();
    std::fs::write(p.root().join("other/o.txt"), "base\n").unwrap();
    std::fs::write(p.root().join("proj/README"), "x\n").unwrap();
    p.git(&["add", "."]);
    p.git(&["commit", "-qm", "init"]);
    let proj = p.root().join("proj");
    let baton = |args: &[&str]| {
        let mut all = vec!["--project", proj.to_str().unwrap()];
        all.extend_from_slice(args);
        p.run(&all)
    };
    assert_eq!(baton(&["init"]).0, 0);
    std::fs::write(proj.join(".baton/workflows/m.toml"), WF).unwrap();
    let (code, _, err) = baton(&["run", "m", "x", "--id", "t"]);
    assert_eq!(code, 0, "{err}");
    // Work outside the project folder, uncommitted.
    std::fs::write(p.root().join("other/o.txt"), "base\nmy edit\n").unwrap();
    let (code, _, err) = baton(&["resume", "t", "--from", "b"]);
    assert_eq!(code, 0, "{err}");
    // Restored as of b's start (the edit came later) but saved, not lost.
    let refs = saved(&p);
    assert_eq!(refs.len(), 1, "{refs:?}");
    assert_eq!(
        p.git(&["show", &format!("{}:other/o.txt", refs[0].0)]),
        "base\nmy edit\n"
    );
    // The project's .baton/ is untouched and the task complete.
    assert!(proj.join(".baton/workflows/m.toml").exists());
    assert_eq!(p.state_in(&proj, "t")["status"], "COMPLETE");
}
}

on_both_backends! {
fn restoring_onto_another_branch_is_refused_before_anything_changes() {
    let p = TestProject::new();
    p.workflow("m", WF);
    assert_eq!(p.run(&["run", "m", "x", "--id", "t"]).0, 0);
    p.git(&["checkout", "-q", "-b", "feature"]);
    std::fs::write(p.root().join("feat.txt"), "feature work\n").unwrap();
    p.git(&["add", "feat.txt"]);
    p.git(&["commit", "-qm", "feature"]);
    let journal = p.journal("t").len();
    let (code, _, err) = p.run(&["resume", "t", "--from", "b"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("git checkout main"), "{err}");
    assert_eq!(read(&p, "feat.txt"), "feature work\n");
    assert_eq!(
        p.git(&["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "feature"
    );
    assert_eq!(p.journal("t").len(), journal, "nothing is journaled");
    let (code, _, err) = p.run(&["fork", "t", "--from", "b", "--id", "t2"]);
    assert_eq!(code, 2, "{err}");
    let (_, out, _) = p.run(&["ls", "--all", "--json"]);
    assert!(!out.contains("\"t2\""), "no fork was created: {out}");
}
}

on_both_backends! {
fn a_refused_rewind_changes_no_file() {
    let p = TestProject::new();
    p.workflow(
        "f",
        "name = \"f\"\n[[phase]]\nid = \"a\"\nrun = \"echo a > a.txt; exit 1\"\n[[phase]]\nid = \"b\"\nrun = \"true\"\n[[phase]]\nid = \"c\"\nrun = \"true\"\n",
    );
    assert_eq!(p.run(&["run", "f", "x", "--id", "y"]).0, 1);
    std::fs::write(p.root().join("user.txt"), "mine\n").unwrap();
    let (code, _, err) = p.run(&["resume", "y", "--from", "c"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("needs b"), "{err}");
    assert_eq!(read(&p, "user.txt"), "mine\n");
    assert!(saved(&p).is_empty());
}
}

on_both_backends! {
fn forks_save_their_work_trees_under_distinct_refs() {
    let p = TestProject::new();
    p.workflow("m", WF);
    assert_eq!(p.run(&["run", "m", "x", "--id", "t"]).0, 0);
    std::fs::write(p.root().join("w1.txt"), "W1\n").unwrap();
    assert_eq!(p.run(&["fork", "t", "--from", "b", "--id", "f1"]).0, 0);
    std::fs::write(p.root().join("w2.txt"), "W2\n").unwrap();
    assert_eq!(p.run(&["fork", "t", "--from", "b", "--id", "f2"]).0, 0);
    let refs = saved(&p);
    assert_eq!(refs.len(), 2, "{refs:?}");
    assert!(refs.iter().any(|(_, files)| files.contains("w1.txt")));
    assert!(refs.iter().any(|(_, files)| files.contains("w2.txt")));
    // The original is untouched and a fork's projection matches its journal.
    let (code, out, err) = p.run(&["doctor"]);
    assert_eq!(code, 0, "{out}{err}");
}
}

on_both_backends! {
fn a_closed_stderr_does_not_crash_the_run() {
    let p = TestProject::new();
    p.workflow("m", WF);
    let mut child = p
        .baton(&["run", "m", "x", "--id", "t"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stderr.take()); // like `2>&1 | head -1` closing early
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    assert_eq!(p.state("t")["status"], "COMPLETE");
}
}

on_both_backends! {
fn ignored_files_in_the_way_block_the_restore_and_staged_content_is_saved() {
    let p = TestProject::new();
    p.workflow("m", WF);
    std::fs::write(p.root().join("notes.txt"), "v1\n").unwrap();
    assert_eq!(p.run(&["run", "m", "x", "--id", "t"]).0, 0);
    // notes.txt was in the checkpoint; now it is ignored and holds new work.
    std::fs::write(p.root().join(".gitignore"), "notes.txt\n").unwrap();
    std::fs::write(p.root().join("notes.txt"), "PRECIOUS\n").unwrap();
    let (code, _, err) = p.run(&["resume", "t", "--from", "a"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("ignored files") && err.contains("notes.txt"),
        "{err}"
    );
    assert_eq!(read(&p, "notes.txt"), "PRECIOUS\n");
    std::fs::remove_file(p.root().join("notes.txt")).unwrap();

    // Staged and unstaged versions of one file are both kept.
    std::fs::write(p.root().join("README.md"), "staged\n").unwrap();
    p.git(&["add", "README.md"]);
    std::fs::write(p.root().join("README.md"), "unstaged\n").unwrap();
    let (code, _, err) = p.run(&["resume", "t", "--from", "a"]);
    assert_eq!(code, 0, "{err}");
    let refs = saved(&p);
    assert_eq!(refs.len(), 1, "{refs:?}");
    assert_eq!(
        p.git(&["show", &format!("{}:README.md", refs[0].0)]),
        "unstaged\n"
    );
    assert_eq!(
        p.git(&["show", &format!("{}^2:README.md", refs[0].0)]),
        "staged\n"
    );
}
}

on_both_backends! {
fn a_checkpoint_from_a_detached_head_is_not_restored_onto_a_branch() {
    let p = TestProject::new();
    p.workflow("m", WF);
    p.git(&["checkout", "-q", "--detach"]);
    assert_eq!(p.run(&["run", "m", "x", "--id", "t"]).0, 0);
    p.git(&["checkout", "-q", "main"]);
    std::fs::write(p.root().join("m.txt"), "work\n").unwrap();
    p.git(&["add", "m.txt"]);
    p.git(&["commit", "-qm", "work"]);
    let head = p.git(&["rev-parse", "main"]);
    let (code, _, err) = p.run(&["resume", "t", "--from", "b"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("git checkout --detach"), "{err}");
    assert_eq!(p.git(&["rev-parse", "main"]), head, "main moved");
}
}

on_both_backends! {
fn no_restore_under_another_running_task_and_a_refused_fork_leaves_nothing() {
    let p = TestProject::new();
    p.workflow("m", WF);
    assert_eq!(p.run(&["run", "m", "x", "--id", "t"]).0, 0);
    p.workflow(
        "slow",
        "name = \"slow\"\n[[phase]]\nid = \"s\"\nrun = \"touch started; sleep 30\"\n",
    );
    let mut runner = p
        .baton(&["run", "slow", "y", "--id", "busy"])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !p.root().join("started").exists() {
        assert!(
            std::time::Instant::now() < until,
            "the slow phase never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::fs::write(p.root().join("new.txt"), "mine\n").unwrap();
    let (code, _, err) = p.run(&["fork", "t", "--from", "b", "--id", "f1"]);
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains("task busy is running in this work tree"),
        "{err}"
    );
    assert_eq!(read(&p, "new.txt"), "mine\n");
    let (code, _, err) = p.run(&["resume", "t", "--from", "b"]);
    assert_eq!(code, 3, "{err}");
    assert_eq!(p.run(&["cancel", "busy"]).0, 0);
    let _ = runner.wait();
    let (_, out, _) = p.run(&["ls", "--all", "--json"]);
    assert!(!out.contains("\"f1\""), "a refused fork left a task: {out}");
}
}

on_both_backends! {
fn doctor_reports_a_restore_that_died_halfway() {
    let p = TestProject::new();
    p.workflow("m", WF);
    assert_eq!(p.run(&["run", "m", "x", "--id", "t"]).0, 0);
    // A git that kills baton as the restore lays the old files down.
    let bin = p.root().join(".fakebin");
    std::fs::create_dir_all(&bin).unwrap();
    let real = String::from_utf8(
        std::process::Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let wrapper = format!(
        "#!/bin/sh\ncase \"$*\" in *'read-tree --reset'*) kill -9 $PPID;; esac\nexec {} \"$@\"\n",
        real.trim()
    );
    std::fs::write(bin.join("git"), wrapper).unwrap();
    let mut perm = std::fs::metadata(bin.join("git")).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(bin.join("git"), perm).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let out = p
        .baton(&["resume", "t", "--from", "b"])
        .env("PATH", path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), None, "baton should have been killed");
    let (code, out, _) = p.run(&["doctor"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("a restore of the work tree did not finish"),
        "{out}"
    );
    assert!(out.contains("refs/baton-saved/t/"), "{out}");
}
}
