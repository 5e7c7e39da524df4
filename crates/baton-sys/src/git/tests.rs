//! The git wrapper against real repositories made in temporary folders:
//! HEAD reading, phase snapshots, the stat check and the index reader.

use super::Held;
use super::stat::{EntryStat, parse_index};
use super::*;

/// git in `dir` with a fixed identity and no user configuration.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .envs(IDENT)
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn write(dir: &Path, path: &str, text: &str) {
    let p = dir.join(path);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// A repository with a few committed files, the project (and its
/// `.baton/`, committed too) in `proj/`.
fn repo() -> (tempfile::TempDir, PathBuf, Git) {
    let dir = tempfile::tempdir().unwrap();
    let top = dir.path().to_path_buf();
    git(&top, &["init", "-q", "-b", "main"]);
    write(&top, "top.txt", "top\n");
    write(&top, "proj/src/lib.rs", "fn a() {}\n");
    write(&top, "proj/.baton/config.toml", "# config\n");
    write(&top, ".gitignore", "*.log\n");
    git(&top, &["add", "-A"]);
    git(&top, &["commit", "-qm", "init"]);
    let g = Git::open(&top.join("proj")).unwrap();
    (dir, top, g)
}

fn files(top: &Path, rev: &str) -> Vec<String> {
    let mut v: Vec<String> = git(top, &["ls-tree", "-r", "--name-only", rev])
        .lines()
        .map(str::to_string)
        .collect();
    v.sort();
    v
}

/// Waits long enough for every file written so far to be older than
/// any index git writes next (so it trusts their stat data, and so may
/// we), then takes a first snapshot: the one after it can be told
/// apart by stat data (the folders' are taken before git looks). Returns
/// the start snapshot of phase `refs/baton/t/01-a` taken after it.
fn settled_start(g: &Git) -> String {
    std::thread::sleep(std::time::Duration::from_millis(100));
    g.checkpoint("refs/baton/warm/00-w/start", "warm-up", false)
        .unwrap();
    g.checkpoint("refs/baton/t/01-a/start", "start", false)
        .unwrap()
        .snapshot
        .unwrap()
}

#[test]
fn head_and_branch_are_read_as_git_reads_them() {
    let (_d, top, g) = repo();
    let head = git(&top, &["rev-parse", "HEAD"]);
    assert_eq!(
        g.read_head().unwrap().commit.as_deref(),
        Some(head.as_str())
    );
    assert_eq!(g.branch().as_deref(), Some("main"));
    git(&top, &["pack-refs", "--all"]);
    assert!(!top.join(".git/refs/heads/main").exists());
    assert_eq!(g.read_head().unwrap().branch.as_deref(), Some("main"));
    assert_eq!(g.head(), Some(head.clone()));
    git(&top, &["checkout", "-q", "--detach"]);
    assert_eq!(g.branch(), None);
    assert_eq!(g.head(), Some(head));
    git(&top, &["checkout", "-q", "--orphan", "fresh"]);
    assert_eq!(g.branch().as_deref(), Some("fresh"));
    assert_eq!(g.head(), None);
}

#[test]
fn a_snapshot_holds_untracked_files_but_not_baton_nor_ignored_ones() {
    let (_d, top, g) = repo();
    write(&top, "notes.txt", "untracked\n");
    write(&top, "proj/new.rs", "new\n");
    write(&top, "debug.log", "ignored\n");
    write(&top, "proj/.baton/tasks/t/state.json", "{}\n");
    let cp = g
        .checkpoint("refs/baton/t/01-a/start", "start", false)
        .unwrap();
    let snap = cp.snapshot.unwrap();
    assert_eq!(
        files(&top, &snap),
        [
            ".gitignore",
            "notes.txt",
            "proj/new.rs",
            "proj/src/lib.rs",
            "top.txt"
        ]
    );
    assert_eq!(git(&top, &["rev-parse", "refs/baton/t/01-a/start"]), snap);
    assert_eq!(
        git(&top, &["rev-parse", &format!("{snap}^")]),
        cp.head.unwrap()
    );
    // The repository's own index is left alone.
    assert_eq!(
        git(&top, &["status", "--porcelain", "--", "notes.txt"]),
        "?? notes.txt"
    );
}

#[test]
fn an_unchanged_tree_is_the_same_snapshot_and_no_files_changed() {
    let (_d, top, g) = repo();
    let start = settled_start(&g);
    // The next ones are told apart by stat data alone.
    assert!(g.last.lock().unwrap().as_ref().unwrap().watch.is_some());
    let changed = g
        .end_snapshot(&start, "refs/baton/t/01-a/end", "end")
        .unwrap();
    assert!(changed.is_empty(), "{changed:?}");
    assert_eq!(git(&top, &["rev-parse", "refs/baton/t/01-a/end"]), start);
    let next = g
        .checkpoint("refs/baton/t/02-b/start", "start", false)
        .unwrap();
    assert_eq!(next.snapshot.as_deref(), Some(start.as_str()));
    // Another process (a fresh value) finds the same tree.
    let other = Git::open(&top.join("proj")).unwrap();
    let again = other
        .checkpoint("refs/baton/u/01-a/start", "start", false)
        .unwrap();
    let tree = |c: &str| git(&top, &["rev-parse", &format!("{c}^{{tree}}")]);
    assert_eq!(tree(again.snapshot.as_deref().unwrap()), tree(&start));
}

#[test]
fn the_next_process_starts_from_the_saved_snapshot_and_still_sees_changes() {
    let (_d, top, g) = repo();
    let start = settled_start(&g);
    // A new process: the very same snapshot commit, from the saved state
    // (a rebuilt one would be a new commit, with this new message).
    let fresh = || Git::open(&top.join("proj")).unwrap();
    let again = fresh()
        .checkpoint("refs/baton/u/01-a/start", "another message", false)
        .unwrap();
    assert_eq!(again.snapshot.as_deref(), Some(start.as_str()));
    // A change made between two processes is in the next one's snapshot.
    write(&top, "top.txt", "TOP\n");
    let changed = fresh()
        .checkpoint("refs/baton/v/01-a/start", "start", false)
        .unwrap()
        .snapshot
        .unwrap();
    assert_ne!(changed, start);
    assert_eq!(git(&top, &["show", &format!("{changed}:top.txt")]), "TOP");
    // A damaged saved state is ignored, not trusted.
    let saved = top.join(".git/baton-snapshot-state.json");
    assert!(saved.is_file());
    std::fs::write(&saved, "{ not json").unwrap();
    write(&top, "top.txt", "top\n");
    let back = fresh()
        .checkpoint("refs/baton/w/01-a/start", "start", false)
        .unwrap()
        .snapshot
        .unwrap();
    assert_eq!(git(&top, &["show", &format!("{back}:top.txt")]), "top");
}

#[test]
fn a_changed_tree_is_a_new_snapshot_with_the_files_that_changed() {
    let (_d, top, g) = repo();
    let start = settled_start(&g);
    // Same size, so only the stat times tell.
    write(&top, "top.txt", "TOP\n");
    write(&top, "proj/added.rs", "added\n");
    std::fs::remove_file(top.join("proj/src/lib.rs")).unwrap();
    // In a folder no staged file is in, two levels down.
    write(&top, "empty/deeper/found.txt", "x\n");
    let mut changed = g
        .end_snapshot(&start, "refs/baton/t/01-a/end", "end")
        .unwrap();
    changed.sort();
    assert_eq!(
        changed,
        [
            "empty/deeper/found.txt",
            "proj/added.rs",
            "proj/src/lib.rs",
            "top.txt"
        ]
    );
    let end = git(&top, &["rev-parse", "refs/baton/t/01-a/end"]);
    assert_ne!(end, start);
    assert_eq!(git(&top, &["show", &format!("{end}:top.txt")]), "TOP");
}

#[test]
fn inotify_sees_the_work_tree_change_but_not_baton_nor_git() {
    let (_d, top, g) = repo();
    let start = settled_start(&g);
    let notify = g
        .last
        .lock()
        .unwrap()
        .as_ref()
        .and_then(|k| k.watch.as_ref()?.notify.clone())
        .expect("the work tree is watched with inotify");
    assert!(notify.quiet());
    // baton's own folder and git's are not the work tree.
    write(&top, "proj/.baton/tasks/t/state.json", "{}\n");
    write(&top, "proj/.baton/x.txt", "x\n");
    git(&top, &["update-ref", "refs/heads/other", "HEAD"]);
    assert!(notify.quiet(), "baton's and git's writes are not changes");
    // A read is not a change either.
    std::fs::read(top.join("top.txt")).unwrap();
    assert!(notify.quiet());
    let changed = g
        .end_snapshot(&start, "refs/baton/t/01-a/end", "end")
        .unwrap();
    assert!(changed.is_empty(), "{changed:?}");
    // Any change to a file or an entry of a watched folder is seen.
    let touched = std::fs::File::options()
        .write(true)
        .open(top.join("proj/src/lib.rs"))
        .unwrap();
    touched.set_modified(std::time::SystemTime::now()).unwrap();
    assert!(!notify.quiet(), "a new modification time is an event");
    std::fs::rename(top.join("top.txt"), top.join("moved.txt")).unwrap();
    assert!(!notify.quiet(), "a rename is an event");
    let mut changed = g
        .end_snapshot(&start, "refs/baton/t/01-a/end", "end")
        .unwrap();
    changed.sort();
    assert_eq!(changed, ["moved.txt", "top.txt"]);
}

#[test]
fn new_files_are_seen_in_folders_without_staged_files_but_not_in_ignored_ones() {
    let (_d, top, g) = repo();
    std::fs::create_dir_all(top.join("empty/deeper")).unwrap();
    write(&top, "logs/old.log", "ignored\n");
    write(&top, "target/x/y.rs", "ignored folder\n");
    write(&top, ".gitignore", "*.log\ntarget/\n");
    git(&top, &["commit", "-qam", "ignore target"]);
    let start = settled_start(&g);
    let watch = g
        .last
        .lock()
        .unwrap()
        .as_ref()
        .unwrap()
        .watch
        .clone()
        .unwrap();
    let watched: Vec<&Path> = watch.dirs.iter().map(|w| w.path.as_path()).collect();
    assert!(watched.contains(&Path::new("empty/deeper")), "{watched:?}");
    assert!(watched.contains(&Path::new("logs")), "{watched:?}");
    assert!(!watched.contains(&Path::new("target")), "{watched:?}");
    write(&top, "target/x/z.rs", "still ignored\n");
    let changed = g
        .end_snapshot(&start, "refs/baton/t/01-a/end", "end")
        .unwrap();
    assert!(changed.is_empty(), "{changed:?}");
    write(&top, "logs/readme.md", "not ignored\n");
    write(&top, "empty/deeper/x.txt", "x\n");
    let mut changed = g
        .end_snapshot(&start, "refs/baton/t/01-a/end", "end")
        .unwrap();
    changed.sort();
    assert_eq!(changed, ["empty/deeper/x.txt", "logs/readme.md"]);
}

#[test]
fn ignore_rules_and_head_are_followed_as_a_fresh_snapshot_would() {
    let (_d, top, g) = repo();
    // An ignored file HEAD tracks is in every snapshot while it exists.
    write(&top, "kept.log", "tracked though ignored\n");
    git(&top, &["add", "-f", "kept.log"]);
    git(&top, &["commit", "-qm", "kept"]);
    write(&top, "build.out", "untracked\n");
    let has = |g: &Git, name: &str, f: &str| {
        let cp = g
            .checkpoint(&format!("refs/baton/t/{name}/start"), "s", false)
            .unwrap();
        files(&top, cp.snapshot.as_deref().unwrap()).contains(&f.to_string())
    };
    assert!(has(&g, "a", "kept.log"));
    assert!(has(&g, "b", "build.out"));
    std::fs::remove_file(top.join("kept.log")).unwrap();
    assert!(!has(&g, "c", "kept.log"));
    write(&top, "kept.log", "back\n");
    assert!(has(&g, "d", "kept.log"));
    // A file newly ignored leaves the snapshot, as from a fresh index.
    write(&top, ".gitignore", "*.log\nbuild.out\n");
    assert!(!has(&g, "e", "build.out"));
    // A commit made in between is the next snapshot's parent.
    write(&top, "c.txt", "c\n");
    git(&top, &["add", "c.txt"]);
    git(&top, &["commit", "-qm", "c"]);
    let cp = g.checkpoint("refs/baton/t/f/start", "s", false).unwrap();
    let snap = cp.snapshot.unwrap();
    assert_eq!(
        git(&top, &["rev-parse", &format!("{snap}^")]),
        git(&top, &["rev-parse", "HEAD"])
    );
}

#[test]
fn the_index_reader_reads_what_git_writes() {
    let (_d, top, _g) = repo();
    let entries = parse_index(&std::fs::read(top.join(".git/index")).unwrap()).unwrap();
    let mut paths: Vec<String> = entries
        .iter()
        .map(|e| e.path.display().to_string())
        .collect();
    paths.sort();
    assert_eq!(
        paths,
        [
            ".gitignore",
            "proj/.baton/config.toml",
            "proj/src/lib.rs",
            "top.txt"
        ]
    );
    let lib = entries
        .iter()
        .find(|e| e.path == Path::new("proj/src/lib.rs"))
        .unwrap();
    assert_eq!(
        Some(&lib.stat),
        EntryStat::of(&top.join("proj/src/lib.rs")).as_ref()
    );
    assert!(
        parse_index(b"DIRC\0\0\0\x04\0\0\0\0").is_none(),
        "version 4 is not read"
    );
}

#[test]
fn snapshot_refs_are_refs_git_reads_in_files_and_reftable_repositories() {
    for format in ["files", "reftable"] {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path();
        git(
            top,
            &[
                "init",
                "-q",
                "-b",
                "main",
                &format!("--ref-format={format}"),
            ],
        );
        write(top, "a.txt", "a\n");
        git(top, &["add", "-A"]);
        git(top, &["commit", "-qm", "a"]);
        let g = Git::open(top).unwrap();
        assert_eq!(g.files_refs, format == "files");
        let start = g
            .checkpoint("refs/baton/t/01-a.i0.a1/start", "start", false)
            .unwrap()
            .snapshot
            .unwrap();
        g.end_snapshot(&start, "refs/baton/t/01-a.i0.a1/end", "end")
            .unwrap();
        let refs = git(
            top,
            &[
                "for-each-ref",
                "--format=%(refname) %(objectname)",
                "refs/baton",
            ],
        );
        assert_eq!(
            refs,
            format!("refs/baton/t/01-a.i0.a1/end {start}\nrefs/baton/t/01-a.i0.a1/start {start}"),
            "{format}"
        );
        assert!(
            !top.join(".git/refs/baton/t/01-a.i0.a1/start.lock").exists(),
            "{format}: no lock left"
        );
        git(top, &["fsck", "--no-dangling"]);
        // Deleting them is git's business, and works.
        git(top, &["update-ref", "-d", "refs/baton/t/01-a.i0.a1/start"]);
        assert!(!git(top, &["for-each-ref", "refs/baton"]).contains("/start"));
    }
}

/// A repository with a local bare remote, `main` pushed, and a worktree
/// `wt` on branch `feature` with one commit of its own.
fn repo_with_worktree() -> (tempfile::TempDir, PathBuf, PathBuf, Git) {
    let (d, top, g) = repo();
    let bare = d.path().join("remote.git");
    git(
        d.path(),
        &["init", "-q", "--bare", "-b", "main", "remote.git"],
    );
    git(
        &top,
        &["remote", "add", "origin", &bare.display().to_string()],
    );
    git(&top, &["push", "-q", "origin", "main"]);
    let wt = d.path().join("wt");
    git(
        &top,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "feature",
            &wt.display().to_string(),
            "main",
        ],
    );
    write(&wt, "feature.txt", "feature\n");
    git(&wt, &["add", "feature.txt"]);
    git(&wt, &["commit", "-qm", "feature"]);
    (d, top, wt, g)
}

#[test]
fn work_not_committed_or_not_pushed_keeps_the_worktree_and_branch() {
    let (_d, top, wt, g) = repo_with_worktree();
    // Told of the agents' run files, as the engine opens it.
    let g = g.knowing_run_files(baton_agents::run_files::as_committed);
    // A commit on no other branch or remote.
    assert_eq!(
        g.held_by(&wt, "feature", "main").unwrap(),
        Held::Unpushed(1)
    );
    assert_eq!(
        g.remove_if_nothing_held(&wt, "feature", "main").unwrap(),
        Held::Unpushed(1)
    );
    assert!(wt.is_dir());
    assert!(g.resolve("refs/heads/feature").is_some());
    // Pushed: held by the remote; but a file not committed, then an
    // untracked one, keep it all the same.
    git(&wt, &["push", "-q", "origin", "feature"]);
    write(&wt, "feature.txt", "changed\n");
    let held = g.remove_if_nothing_held(&wt, "feature", "main").unwrap();
    assert_eq!(held, Held::Uncommitted(vec!["feature.txt".into()]));
    assert!(held.reason().contains("feature.txt"), "{}", held.reason());
    git(&wt, &["checkout", "-q", "--", "feature.txt"]);
    write(&wt, "notes/new.md", "draft\n");
    assert_eq!(
        g.held_by(&wt, "feature", "main").unwrap(),
        Held::Uncommitted(vec!["notes/new.md".into()])
    );
    std::fs::remove_dir_all(wt.join("notes")).unwrap();
    // What a crashed run left of baton's own is not work; what the agent
    // wrote beside it is.
    let server = serde_json::json!({"command": "baton"});
    let mcp = baton_agents::folder_mcp::with_baton_server(None, false, server).unwrap();
    write(&wt, ".factory/mcp.json", &mcp);
    let claude = baton_agents::by_name("claude").unwrap();
    baton_agents::memory::write_brief(claude, &wt, "the brief").unwrap();
    assert_eq!(g.held_by(&wt, "feature", "main").unwrap(), Held::Nothing);
    let brief = std::fs::read_to_string(wt.join("CLAUDE.md")).unwrap();
    write(&wt, "CLAUDE.md", &format!("{brief}\nThe agent's notes.\n"));
    assert_eq!(
        g.held_by(&wt, "feature", "main").unwrap(),
        Held::Uncommitted(vec!["CLAUDE.md".into()])
    );
    baton_agents::run_files::undo(&wt).unwrap();
    std::fs::remove_file(wt.join("CLAUDE.md")).unwrap();
    // An ignored file is not work.
    write(&wt, "debug.log", "noise\n");
    assert_eq!(
        g.remove_if_nothing_held(&wt, "feature", "main").unwrap(),
        Held::Nothing
    );
    assert!(!wt.exists());
    assert!(g.resolve("refs/heads/feature").is_none());
    // Its commits are still on the remote.
    assert!(git(&top, &["branch", "-r"]).contains("origin/feature"));
}

#[test]
fn a_branch_merged_squashed_or_rebased_into_the_base_is_removed() {
    for how in ["merge", "squash", "rebase"] {
        let (_d, top, wt, g) = repo_with_worktree();
        write(&wt, "second.txt", "second\n");
        git(&wt, &["add", "second.txt"]);
        git(&wt, &["commit", "-qm", "second"]);
        assert_eq!(
            g.held_by(&wt, "feature", "main").unwrap(),
            Held::Unpushed(2),
            "{how}"
        );
        match how {
            "merge" => {
                git(&top, &["merge", "-q", "--no-ff", "-m", "merge", "feature"]);
            }
            "squash" => {
                git(&top, &["merge", "-q", "--squash", "feature"]);
                git(&top, &["commit", "-qm", "feature, squashed"]);
            }
            _ => {
                git(&top, &["cherry-pick", "main..feature"]);
            }
        }
        // The base moves on after it.
        write(&top, "later.txt", "later\n");
        git(&top, &["add", "later.txt"]);
        git(&top, &["commit", "-qm", "later"]);
        assert_eq!(
            g.remove_if_nothing_held(&wt, "feature", "main").unwrap(),
            Held::Nothing,
            "{how}"
        );
        assert!(!wt.exists(), "{how}");
        assert!(g.resolve("refs/heads/feature").is_none(), "{how}");
    }
}

#[test]
fn work_added_after_a_squash_merge_is_still_kept() {
    let (_d, top, wt, g) = repo_with_worktree();
    git(&top, &["merge", "-q", "--squash", "feature"]);
    git(&top, &["commit", "-qm", "feature, squashed"]);
    write(&wt, "more.txt", "after the merge\n");
    git(&wt, &["add", "more.txt"]);
    git(&wt, &["commit", "-qm", "more"]);
    assert_eq!(
        g.remove_if_nothing_held(&wt, "feature", "main").unwrap(),
        Held::Unpushed(2)
    );
    assert!(wt.join("more.txt").is_file());
}

#[test]
fn a_commit_during_a_run_holds_the_users_files_without_batons_run_files() {
    let (_d, top, _) = repo();
    write(&top, "AGENTS.md", "House rules.\n");
    git(&top, &["add", "AGENTS.md"]);
    git(&top, &["commit", "-qm", "rules"]);
    let g = Git::open(&top)
        .unwrap()
        .knowing_run_files(baton_agents::run_files::as_committed);
    // A run goes on: baton's brief in the memory file, its MCP server in
    // droid's file, and the agent's own work.
    let codex = baton_agents::by_name("codex").unwrap();
    baton_agents::memory::write_brief(codex, &top, "the brief").unwrap();
    let server = serde_json::json!({"command": "baton"});
    let mcp = baton_agents::folder_mcp::with_baton_server(None, false, server).unwrap();
    write(&top, ".factory/mcp.json", &mcp);
    write(&top, "work.txt", "done\n");
    g.commit_worktree("the agent's work").unwrap();
    assert!(files(&top, "HEAD").contains(&"work.txt".to_string()));
    assert!(!files(&top, "HEAD").contains(&".factory/mcp.json".to_string()));
    assert_eq!(git(&top, &["show", "HEAD:AGENTS.md"]), "House rules.");
    // The run still has them, and git says the run files differ from HEAD.
    assert!(
        std::fs::read_to_string(top.join("AGENTS.md"))
            .unwrap()
            .contains("the brief")
    );
    assert!(top.join(".factory/mcp.json").is_file());
    baton_agents::run_files::undo(&top).unwrap();
    assert_eq!(git(&top, &["status", "--porcelain"]), "");
}

/// A worktree folder deleted from under baton: the error says the folder
/// is gone, not that git cannot be run (issue 34).
#[test]
fn a_deleted_folder_is_said_gone_not_blamed_on_git() {
    let (dir, _, _) = repo();
    let wt = dir.path().join("wt");
    git(
        dir.path(),
        &["worktree", "add", "-q", "-b", "side", wt.to_str().unwrap()],
    );
    let g = Git::open(&wt).expect("a worktree");
    std::fs::remove_dir_all(&wt).unwrap();
    let e = g.run(&["status"], &[]).unwrap_err();
    assert!(e.stderr.contains("is gone"), "{}", e.stderr);
    assert!(!e.stderr.contains("cannot run git"), "{}", e.stderr);
}
