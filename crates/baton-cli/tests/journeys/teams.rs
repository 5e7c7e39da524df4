//! Journeys through teams: consolidation with its checks, teammates'
//! branches (their own and those baton gives its agent teammates),
//! rollbacks, zombie mode, imports into a fresh clone, the mailbox and
//! completing a team. Time is moved with `BATON_TEST_CLOCK_OFFSET_MS` and
//! crashes placed with `BATON_TEST_CRASH_AT`, so nothing waits for minutes
//! and no race is left to chance.

use baton_testkit::{TestProject, on_both_backends, wait_for};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

use baton_testkit::teams::{at, crew, ok};

/// The same, expected to fail with `code`; its stderr.
fn refused(p: &TestProject, minutes: i64, args: &[&str], code: i32) -> String {
    let (got, out, err) = at(p, minutes, args);
    assert_eq!(got, code, "team {args:?}:\n{out}\n{err}");
    err
}

/// git in `dir` (a teammate's worktree), committing as the teammate.
fn git_in(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=mate", "-c", "user.email=mate@localhost"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A teammate's own worktree on a new branch `branch`, outside the
/// project's folder.
fn worktree(p: &TestProject, holder: &tempfile::TempDir, branch: &str) -> PathBuf {
    let wt = holder.path().join(branch.replace('/', "-"));
    p.git(&["worktree", "add", "-q", "-b", branch, wt.to_str().unwrap()]);
    wt
}

/// Writes `file` in `wt` and commits it; the new HEAD.
fn commit_file(wt: &Path, file: &str, text: &str) -> String {
    fs_err::write(wt.join(file), text).unwrap();
    git_in(wt, &["add", "-A"]);
    git_in(wt, &["commit", "-qm", file]);
    git_in(wt, &["rev-parse", "HEAD"]).trim().to_string()
}

fn head(p: &TestProject) -> String {
    p.git(&["rev-parse", "HEAD"]).trim().to_string()
}

fn parents(p: &TestProject, rev: &str) -> Vec<String> {
    p.git(&["log", "-1", "--format=%P", rev])
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

on_both_backends! {
    /// A lead whose consolidation check fails fixes the work and retries: the retry runs the check again and takes a new message.
    ///
    /// Crosses a teammate's branch, consolidation and its checks: the
    /// branch is merged into the project before the check runs, a failed
    /// check commits nothing however often it is retried, and the commit
    /// that finally lands has the teammate's branch as a parent.
    fn a_failed_check_is_run_again_on_retry_and_a_new_message_is_taken() {
        let p = TestProject::new();
        crew(&p);
        let holder = tempfile::tempdir().unwrap();
        let wt = worktree(&p, &holder, "team/ana");
        let base = head(&p);
        ok(&p, 0, &["task", "start", "crew", "t1", "--as", "ana"]);
        let tip = commit_file(&wt, "schema.sql", "create table t;\n");
        ok(&p, 1, &["task", "checkpoint", "crew", "t1", "--as", "ana", "--status", "green", "--branch", "team/ana", "--head", &tip]);
        ok(&p, 1, &["task", "complete", "crew", "t1", "--as", "ana"]);

        // The check needs a file the work lacks: it fails, nothing committed.
        let err = refused(&p, 2, &["consolidate", "crew", "--check", "test -f VERSION"], 1);
        assert!(err.contains("check \"test -f VERSION\" failed; nothing was committed"), "{err}");
        assert!(err.contains("--retry` (it runs the checks again"), "{err}");
        assert_eq!(head(&p), base);
        // The branch was merged into the work tree, for the check to see.
        assert_eq!(fs_err::read_to_string(p.root().join("schema.sql")).unwrap(), "create table t;\n");
        // Retried without a fix: the check runs again and fails again.
        let err = refused(&p, 3, &["consolidate", "crew", "--retry"], 1);
        assert!(err.contains("check \"test -f VERSION\" failed"), "{err}");
        assert_eq!(head(&p), base, "a retry never commits what the checks refuse");
        assert_eq!(ok(&p, 3, &["probe", "crew"])["team"]["status"], "consolidating");

        // Fixed, and retried with a new message: the check runs and passes.
        fs_err::write(p.root().join("VERSION"), "1\n").unwrap();
        let c = ok(&p, 4, &["consolidate", "crew", "--retry", "-m", "crew: schema, versioned"]);
        assert_eq!(c["outcome"], "committed", "{c}");
        assert_eq!(p.git(&["log", "-1", "--format=%s"]).trim(), "crew: schema, versioned");
        assert_eq!(p.git(&["show", "HEAD:schema.sql"]), "create table t;\n");
        assert_eq!(p.git(&["show", "HEAD:VERSION"]), "1\n");
        assert_eq!(parents(&p, "HEAD"), [base.clone(), tip.clone()], "the branch is merged, not copied");
        assert_eq!(c["merged"][0]["branch"], "team/ana");
        assert_eq!(c["merged"][0]["teammate"], "ana");
        assert_eq!(status(&p), "", "nothing left behind");
        assert_eq!(p.git(&["rev-parse", "team/ana"]).trim(), tip, "the teammate's branch is not moved");
        let probe = ok(&p, 4, &["probe", "crew"]);
        assert_eq!(probe["team"]["status"], "active");
        assert_eq!(probe["team"]["last_good_commit"], head(&p));
        // The next consolidation has nothing of ana's left to merge.
        let again = ok(&p, 5, &["consolidate", "crew"]);
        assert_eq!(again["outcome"], "unchanged", "{again}");
    }

    /// A lead consolidates a team whose teammate is an agent baton started: the work on the branch baton gave it lands in the project, and its uncommitted work is kept by `resolve … commit`.
    ///
    /// Crosses agent instances (the teammate's own worktree and branch
    /// `baton/crew-cy`), zombie mode's choices and consolidation.
    fn an_agent_teammates_branch_is_merged_by_consolidation() {
        let p = TestProject::new();
        let cfg = p.root().join(".baton/config.toml");
        let mut text = fs_err::read_to_string(&cfg).unwrap();
        text.push_str(concat!(
            "\n[instances]\nworktree_base = \".wt\"\n\n",
            "[agents.mate]\n",
            "command = [\"sh\", \"-c\", '''echo \"work of $BATON_TEAMMATE\" > \"$BATON_TEAMMATE.txt\"; ",
            "git add \"$BATON_TEAMMATE.txt\" && git -c user.email=a@a -c user.name=agent commit -qm \"$BATON_TEAMMATE: work\"; ",
            "echo \"notes of $BATON_TEAMMATE\" > \"notes-$BATON_TEAMMATE.txt\"; echo done''', \"agent\", \"{{prompt_file}}\"]\n",
        ));
        fs_err::write(&cfg, text).unwrap();
        fs_err::write(p.root().join(".git/info/exclude"), ".wt/\n").unwrap();
        p.git(&["add", "-A"]);
        p.git(&["commit", "-qm", "baton settings"]);
        let base = head(&p);
        let (code, _, err) = at(&p, 0, &["create", "crew", "--teammate", "cy:engineer:mate", "--task", "Schema"]);
        assert_eq!(code, 0, "{err}");
        assert!(err.contains("started teammate cy as agent instance crew-cy"), "{err}");
        // Its turn ends with a commit on its branch and notes not committed.
        let wt = wait_for("cy's turn to end", || {
            let (code, out, _) = p.run(&["agent", "show", "crew-cy", "--json"]);
            let v: Value = serde_json::from_str(&out).ok()?;
            (code == 0 && v["turn"]["status"] != "RUNNING" && v["turn"]["status"].is_string())
                .then(|| PathBuf::from(v["resources"]["worktree_path"].as_str().unwrap()))
        });
        assert!(wt.join("notes-cy.txt").exists(), "{}", wt.display());
        let tip = p.git(&["rev-parse", "baton/crew-cy"]).trim().to_string();
        assert_ne!(tip, base);

        // The lead goes silent; the teammate's heartbeat notices it.
        ok(&p, 6, &["heartbeat", "crew", "cy"]);
        assert_eq!(ok(&p, 6, &["probe", "crew"])["team"]["status"], "suspended");
        ok(&p, 7, &["resume", "crew"]);
        // cy checkpointed no branch: the one baton gave it is the one.
        let r = ok(&p, 7, &["resolve", "crew", "cy", "commit"]);
        assert_eq!(r["branch"], "baton/crew-cy", "{r}");
        let kept = p.git(&["rev-parse", "baton/crew-cy"]).trim().to_string();
        assert_eq!(r["head"], kept.as_str());
        assert_eq!(p.git(&["show", "baton/crew-cy:notes-cy.txt"]), "notes of cy\n");

        let c = ok(&p, 8, &["consolidate", "crew"]);
        assert_eq!(c["outcome"], "committed", "{c}");
        assert_eq!(c["merged"][0]["branch"], "baton/crew-cy");
        assert_eq!(c["merged"][0]["teammate"], "cy");
        assert_eq!(p.git(&["show", "HEAD:cy.txt"]), "work of cy\n");
        assert_eq!(p.git(&["show", "HEAD:notes-cy.txt"]), "notes of cy\n");
        assert_eq!(parents(&p, "HEAD"), [base, kept]);
        assert!(!p.git(&["ls-tree", "-r", "--name-only", "HEAD"]).contains(".wt/"));
    }

    /// Two teammates changed the same lines on their branches: consolidation names the branch and the file, changes nothing, and commits both once the lead resolved it.
    ///
    /// Crosses teammates' branches, the project's own uncommitted work,
    /// consolidation and a merge done by hand in git.
    fn conflicting_branches_are_reported_and_nothing_is_lost() {
        let p = TestProject::new();
        crew(&p);
        let holder = tempfile::tempdir().unwrap();
        let ana_wt = worktree(&p, &holder, "team/ana");
        let bo_wt = worktree(&p, &holder, "team/bo");
        let base = head(&p);
        ok(&p, 0, &["task", "start", "crew", "t1", "--as", "ana"]);
        ok(&p, 0, &["task", "start", "crew", "t2", "--as", "bo"]);
        let ana_tip = commit_file(&ana_wt, "api.txt", "GET /ana\n");
        let bo_tip = commit_file(&bo_wt, "api.txt", "GET /bo\n");
        commit_file(&bo_wt, "tests.txt", "bo's tests\n");
        let bo_tip2 = git_in(&bo_wt, &["rev-parse", "HEAD"]).trim().to_string();
        assert_ne!(bo_tip, bo_tip2);
        ok(&p, 1, &["task", "checkpoint", "crew", "t1", "--as", "ana", "--branch", "team/ana", "--status", "green"]);
        ok(&p, 1, &["task", "checkpoint", "crew", "t2", "--as", "bo", "--branch", "team/bo", "--status", "green"]);
        // The lead's own work, not committed yet.
        fs_err::write(p.root().join("lead.txt"), "the lead's notes\n").unwrap();

        let (code, _, err) = at(&p, 2, &["consolidate", "crew"]);
        assert_eq!(code, 1, "{err}");
        assert!(err.contains("nothing was merged or committed"), "{err}");
        assert!(err.contains("team/bo (bo): api.txt"), "{err}");
        assert!(!err.contains("team/ana (ana)"), "ana's merges cleanly: {err}");
        assert!(err.contains("git merge team/bo"), "{err}");
        // Nothing moved: HEAD, both branches, the work tree, the index.
        assert_eq!(head(&p), base);
        assert_eq!(p.git(&["rev-parse", "team/ana"]).trim(), ana_tip);
        assert_eq!(p.git(&["rev-parse", "team/bo"]).trim(), bo_tip2);
        assert!(!p.root().join("api.txt").exists());
        assert_eq!(fs_err::read_to_string(p.root().join("lead.txt")).unwrap(), "the lead's notes\n");
        assert_eq!(p.git(&["diff", "--cached", "--name-only"]).trim(), "");
        assert_eq!(ok(&p, 2, &["probe", "crew"])["team"]["status"], "consolidating");

        // The lead merges bo's branch by hand; then ana's conflicts with
        // it, and the lead resolves that too.
        p.git(&["merge", "-q", "--no-edit", "team/bo"]);
        let (code, out, err) = at(&p, 3, &["consolidate", "crew", "--retry", "--json"]);
        assert_eq!(code, 1, "{err}");
        let c: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(c["outcome"], "conflicts", "{c}");
        assert_eq!(c["conflicts"][0]["branch"], "team/ana");
        assert_eq!(c["conflicts"][0]["files"], serde_json::json!(["api.txt"]));
        assert!(!git_ok(&p, &["merge", "-q", "--no-edit", "team/ana"]), "a real conflict");
        fs_err::write(p.root().join("api.txt"), "GET /ana\nGET /bo\n").unwrap();
        p.git(&["add", "api.txt"]);
        p.git(&["commit", "-q", "--no-edit"]);
        let c = ok(&p, 4, &["consolidate", "crew", "--retry"]);
        assert_eq!(c["outcome"], "committed", "{c}");
        assert_eq!(p.git(&["show", "HEAD:api.txt"]), "GET /ana\nGET /bo\n");
        assert_eq!(p.git(&["show", "HEAD:tests.txt"]), "bo's tests\n");
        assert_eq!(p.git(&["show", "HEAD:lead.txt"]), "the lead's notes\n");
        for tip in [&ana_tip, &bo_tip2] {
            assert!(git_ok(&p, &["merge-base", "--is-ancestor", tip, "HEAD"]), "{tip} is in the consolidated history");
        }
    }

    /// A lead killed while consolidating the teammates' branches re-attaches, retries, and gets exactly one commit with every branch in it.
    ///
    /// Crosses a lead dying mid-consolidation (after the merges are laid
    /// down but before they are journaled, then after staging), `team
    /// resume` and the retry.
    fn a_lead_killed_mid_consolidation_retries_into_one_commit() {
        let mut t = baton_testkit::crash::Tally::default();
        for point in ["consolidate-merged", "consolidate-staged", "consolidate-committed"] {
            let p = TestProject::new();
            crew(&p);
            let holder = tempfile::tempdir().unwrap();
            let ana_wt = worktree(&p, &holder, "team/ana");
            let bo_wt = worktree(&p, &holder, "team/bo");
            let base = head(&p);
            ok(&p, 0, &["task", "start", "crew", "t1", "--as", "ana"]);
            ok(&p, 0, &["task", "start", "crew", "t2", "--as", "bo"]);
            let ana_tip = commit_file(&ana_wt, "schema.sql", "create table t;\n");
            let bo_tip = commit_file(&bo_wt, "api.txt", "GET /t\n");
            ok(&p, 1, &["task", "checkpoint", "crew", "t1", "--as", "ana", "--branch", "team/ana", "--status", "green"]);
            ok(&p, 1, &["task", "checkpoint", "crew", "t2", "--as", "bo", "--branch", "team/bo", "--status", "green"]);
            ok(&p, 1, &["task", "complete", "crew", "t1", "--as", "ana"]);
            ok(&p, 1, &["task", "complete", "crew", "t2", "--as", "bo"]);
            let crash = format!("{point}:crew");
            t.crash(baton_testkit::teams::command(&p, 2, &["consolidate", "crew", "--check", "test -f schema.sql"]), &crash);
            let status_now = ok(&p, 3, &["probe", "crew"])["team"]["status"].clone();
            t.check(status_now == "consolidating", || format!("{point}: the team is {status_now}, not consolidating"));
            let (code, _, err) = at(&p, 3, &["resume", "crew"]);
            t.recovered(&crash, "team resume", code, 0, &err);
            t.check(err.contains("team crew was consolidating when it stopped"), || format!("{point}: resume does not say so: {err}"));
            let (code, out, err) = at(&p, 4, &["consolidate", "crew", "--retry", "--json"]);
            t.recovered(&crash, "team consolidate --retry", code, 0, &err);
            let c: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
            t.check(c["outcome"] == "committed", || format!("{point}: {c}"));
            let made: Vec<String> = p.git(&["log", "--format=%s", &format!("{base}..HEAD"), "--first-parent"]).lines().map(str::to_string).collect();
            t.check(made == ["team crew: t1 Schema; t2 API"], || format!("{point}: not one commit: {made:?}"));
            let got = parents(&p, "HEAD");
            t.check(got == [base.clone(), ana_tip.clone(), bo_tip.clone()], || format!("{point}: a teammate's commit is lost: {got:?}"));
            t.check(p.git(&["show", "HEAD:schema.sql"]) == "create table t;\n" && p.git(&["show", "HEAD:api.txt"]) == "GET /t\n", || format!("{point}: the files differ"));
            t.check(status(&p).is_empty(), || format!("{point}: the work tree is not clean"));
            let journal = ok(&p, 4, &["review", "crew"])["journal"].clone();
            let kinds: Vec<&str> = journal.as_array().unwrap().iter().map(|r| r["event"]["kind"].as_str().unwrap()).collect();
            let merged = kinds.iter().filter(|k| **k == "consolidation_merged").count();
            let committed = kinds.iter().filter(|k| **k == "consolidation_committed").count();
            t.check(committed == 1 && merged == 1, || format!("{point}: journaled {merged} merges, {committed} commits: {kinds:?}"));
            let (code, _, err) = at(&p, 5, &["consolidate", "crew", "--retry"]);
            t.recovered(&crash, "team consolidate --retry (nothing under way)", code, 2, &err);
        }
        t.report("consolidation");
    }

    /// After the lead rolls a zombie teammate's work back, the task's new owner is told to go on from the good commit, and consolidation brings in only that.
    ///
    /// Crosses zombie mode, `resolve … rollback`, reassigning with its
    /// message, and consolidation of the rolled-back branch.
    fn a_rolled_back_task_is_reassigned_from_the_good_commit() {
        let p = TestProject::new();
        crew(&p);
        let holder = tempfile::tempdir().unwrap();
        let wt = worktree(&p, &holder, "team/ana");
        ok(&p, 0, &["task", "start", "crew", "t1", "--as", "ana"]);
        let good = commit_file(&wt, "schema.sql", "create table t;\n");
        ok(&p, 1, &["task", "checkpoint", "crew", "t1", "--as", "ana", "--status", "green", "--branch", "team/ana", "--head", &good, "--file", "schema.sql"]);
        // The lead goes silent; ana goes on and breaks things.
        let bad = commit_file(&wt, "schema.sql", "drop everything;\n");
        ok(&p, 20, &["task", "checkpoint", "crew", "t1", "--as", "ana", "--status", "red", "--branch", "team/ana", "--head", &bad]);
        assert_eq!(ok(&p, 20, &["probe", "crew"])["team"]["status"], "suspended");
        ok(&p, 40, &["resume", "crew"]);
        let r = ok(&p, 40, &["resolve", "crew", "ana", "rollback"]);
        assert_eq!(r["head"], good.as_str());
        let saved = r["saved"].as_str().unwrap().to_string();
        assert_eq!(p.git(&["show", &format!("{saved}:schema.sql")]), "drop everything;\n", "the discarded work is kept");
        let t1 = &ok(&p, 40, &["probe", "crew"])["team"]["tasks"][0];
        assert_eq!(t1["checkpoint"]["head"], good.as_str(), "{t1}");
        assert_eq!(t1["checkpoint"]["rolled_back"], saved.as_str());

        // ana is gone for good: bo takes the task, and is told where from.
        let moved = ok(&p, 52, &["reassign", "crew", "t1", "--to", "bo"]);
        assert_eq!(moved["tasks"][0]["assigned_to"], "bo");
        let inbox = ok(&p, 52, &["msg", "ls", "crew", "--inbox", "bo"]);
        let body = inbox[0]["body"].as_str().unwrap();
        assert!(body.contains(&format!("HEAD {good}")), "{body}");
        assert!(!body.contains(&bad), "never the discarded commit: {body}");
        assert!(body.contains("was discarded") && body.contains("do not build on it"), "{body}");

        ok(&p, 53, &["task", "complete", "crew", "t1", "--as", "bo"]);
        let c = ok(&p, 54, &["consolidate", "crew"]);
        assert_eq!(c["outcome"], "committed", "{c}");
        assert_eq!(p.git(&["show", "HEAD:schema.sql"]), "create table t;\n");
        assert_eq!(c["merged"][0]["commit"], good.as_str());
    }

    /// While the team is in zombie mode `team show` says the lead timed out, never "online", until the lead re-attaches.
    ///
    /// Crosses liveness, zombie mode noticed by a teammate's command, and
    /// re-attaching.
    fn zombie_mode_shows_the_lead_timed_out_until_it_reattaches() {
        let p = TestProject::new();
        crew(&p);
        ok(&p, 0, &["task", "start", "crew", "t1", "--as", "ana"]);
        // Four minutes: within its timeout, online.
        let (_, out, _) = at(&p, 4, &["show", "crew"]);
        assert!(out.contains("lead: online, last seen 4m"), "{out}");
        // Six minutes, nobody noticed yet: past its timeout all the same.
        let (_, out, _) = at(&p, 6, &["show", "crew"]);
        assert!(out.contains("lead: timed out, last seen 6m"), "{out}");
        // A teammate notices: zombie mode.
        ok(&p, 6, &["task", "checkpoint", "crew", "t1", "--as", "ana", "--status", "green"]);
        let (code, out, _) = at(&p, 7, &["show", "crew"]);
        assert_eq!(code, 0);
        assert!(out.contains("team crew  suspended"), "{out}");
        assert!(out.contains("lead: timed out, last seen 7m"), "{out}");
        assert!(!out.contains("lead: online"), "{out}");
        assert!(out.contains("zombie mode since"), "{out}");
        let probe = ok(&p, 7, &["probe", "crew"]);
        assert_eq!(probe["lead"]["liveness"], "timed_out");
        // A teammate's heartbeat does not make the lead look alive.
        ok(&p, 8, &["heartbeat", "crew", "bo"]);
        assert_eq!(ok(&p, 8, &["probe", "crew"])["lead"]["liveness"], "timed_out");
        // The lead is back.
        let (code, _, err) = at(&p, 9, &["resume", "crew"]);
        assert_eq!(code, 0, "{err}");
        let (_, out, _) = at(&p, 9, &["show", "crew"]);
        assert!(out.contains("team crew  active"), "{out}");
        assert!(out.contains("lead: online, last seen"), "{out}");
    }

    /// A team copied to git and imported into a fresh clone keeps working there: the hint's commands work, and a teammate's first command does not put it in zombie mode.
    ///
    /// Crosses `team sync` and `push`, a fresh clone with its own empty
    /// store, `team import` (with its hint followed to the letter), a
    /// teammate's command, the lead's timeout and re-attaching.
    fn a_team_imported_into_a_fresh_clone_keeps_working() {
        let p = TestProject::new();
        crew(&p);
        ok(&p, 0, &["task", "start", "crew", "t1", "--as", "ana"]);
        ok(&p, 0, &["msg", "send", "crew", "--to", "lead", "--as", "ana", "--id", "q1", "one table or two?"]);
        let (code, _, err) = at(&p, 1, &["sync", "crew"]);
        assert_eq!(code, 0, "{err}");
        assert!(err.contains("git push origin baton-teams"), "sync says how to share it: {err}");
        let remote = tempfile::tempdir().unwrap();
        let bare = Command::new("git")
            .args(["init", "-q", "--bare", "-b", "main"])
            .arg(remote.path())
            .status()
            .unwrap();
        assert!(bare.success());
        p.git(&["remote", "add", "origin", remote.path().to_str().unwrap()]);
        p.git(&["push", "-q", "origin", "main", "baton-teams"]);

        // A clone that has not fetched the copy yet: the hint says how.
        let other = TestProject::bare();
        other.git(&["init", "-q", "-b", "main"]);
        other.git(&["remote", "add", "origin", remote.path().to_str().unwrap()]);
        other.git(&["pull", "-q", "origin", "main"]);
        assert!(other.baton(&["init"]).output().unwrap().status.success());
        let err = refused(&other, 2, &["import"], 2);
        let fetch = err
            .split('`')
            .find(|s| s.starts_with("git fetch"))
            .unwrap_or_else(|| panic!("no fetch command in the hint: {err}"));
        let words: Vec<&str> = fetch.split_whitespace().skip(1).collect();
        other.git(&words);
        let imported = ok(&other, 2, &["import"]);
        assert_eq!(imported, serde_json::json!(["crew"]));

        // A fresh `git clone` has origin/baton-teams already.
        let fresh = TestProject::bare();
        fresh.git(&["clone", "-q", remote.path().to_str().unwrap(), "."]);
        assert!(fresh.baton(&["init"]).output().unwrap().status.success());
        let (code, _, err) = at(&fresh, 2, &["import"]);
        assert_eq!(code, 0, "{err}");
        assert!(err.contains("imported team(s) crew from origin/baton-teams"), "{err}");
        assert!(err.contains("baton team resume crew"), "{err}");

        for clone in [&other, &fresh] {
            // The teammate goes on at once: the team stays active.
            ok(clone, 3, &["task", "checkpoint", "crew", "t1", "--as", "ana", "--status", "green"]);
            let probe = ok(clone, 3, &["probe", "crew"]);
            assert_eq!(probe["team"]["status"], "active", "{probe}");
            assert_eq!(probe["lead"]["liveness"], "unseen");
            assert_eq!(probe["team"]["lead_timeout_detected_at"], Value::Null);
            assert_eq!(probe["last_messages"][0]["body"], "one table or two?");
            // Past the lead's timeout since the import: zombie mode.
            ok(clone, 8, &["heartbeat", "crew", "bo"]);
            assert_eq!(ok(clone, 8, &["probe", "crew"])["team"]["status"], "suspended");
            // The lead re-attaches in the clone and the team is active again.
            let attached = ok(clone, 9, &["resume", "crew"]);
            assert_eq!(attached["how"], "same");
            assert_eq!(attached["probe"]["team"]["status"], "active");
            assert_eq!(attached["probe"]["lead"]["liveness"], "online");
        }
        // The import is on record, after the copied journal.
        let here = ok(&p, 9, &["review", "crew"])["journal"].as_array().unwrap().clone();
        let there = ok(&fresh, 9, &["review", "crew"])["journal"].as_array().unwrap().clone();
        assert_eq!(there[..here.len()], here[..]);
        assert_eq!(there[here.len()]["event"]["kind"], "imported");
        assert_eq!(there[here.len()]["event"]["from"], "origin/baton-teams");
    }

    /// A teammate can acknowledge only the messages addressed to it: the task message the lead sent to its new owner cannot be cleared by the old one.
    ///
    /// Crosses reassigning (which sends the new owner a message) and the
    /// mailbox's acknowledgements.
    fn only_its_recipient_acknowledges_a_message() {
        let p = TestProject::new();
        crew(&p);
        ok(&p, 0, &["task", "start", "crew", "t1", "--as", "ana"]);
        ok(&p, 0, &["msg", "send", "crew", "--to", "*", "--id", "all-1", "standup at 10"]);
        ok(&p, 12, &["reassign", "crew", "t1", "--to", "bo"]);
        let inbox = ok(&p, 12, &["msg", "ls", "crew", "--inbox", "bo"]);
        let handover = inbox.as_array().unwrap().iter().find(|m| m["subject"] == "task t1 is yours now").unwrap().clone();
        let seq = handover["seq"].to_string();
        // ana, back, tries to clear bo's message: refused, nothing acknowledged.
        let err = refused(&p, 13, &["msg", "ack", "crew", "1", &seq, "--as", "ana"], 2);
        assert!(err.contains(&format!("message #{seq} is addressed to bo, not ana: only bo can acknowledge it")), "{err}");
        assert!(err.contains("nothing was acknowledged"), "{err}");
        assert!(err.contains("baton team msg ls crew --inbox ana"), "{err}");
        let all = ok(&p, 13, &["msg", "ls", "crew", "--after", "0"]);
        assert!(all.as_array().unwrap().iter().all(|m| m["acked_by"] == serde_json::json!([])), "{all}");
        // The lead cannot either; a message that does not exist is named.
        let err = refused(&p, 13, &["msg", "ack", "crew", &seq], 2);
        assert!(err.contains("addressed to bo, not lead"), "{err}");
        let err = refused(&p, 13, &["msg", "ack", "crew", "99", "--as", "bo"], 2);
        assert!(err.contains("team crew has no message #99"), "{err}");
        // Each acknowledges what is theirs.
        assert_eq!(ok(&p, 13, &["msg", "ack", "crew", "1", "--as", "ana"])["acknowledged"], 1);
        assert_eq!(ok(&p, 14, &["msg", "ack", "crew", "1", &seq, "--as", "bo"])["acknowledged"], 2);
        assert_eq!(ok(&p, 14, &["msg", "ls", "crew", "--inbox", "bo"]), serde_json::json!([]));
        // ana sends to everyone; she cannot acknowledge her own.
        let sent = ok(&p, 15, &["msg", "send", "crew", "--to", "*", "--as", "ana", "t1 is bo's now"]);
        let own = sent["message"]["seq"].to_string();
        let err = refused(&p, 15, &["msg", "ack", "crew", &own, "--as", "ana"], 2);
        assert!(err.contains("is ana's own"), "{err}");
    }

    /// Completing a team with tasks still open is refused, naming them, until they are done or the lead insists.
    ///
    /// Crosses the task list, consolidation and completion: the team is
    /// completed once its work is consolidated; `--force` completes one
    /// with an abandoned task, says so, and records it.
    fn completing_a_team_with_open_tasks_says_what_is_open() {
        let p = TestProject::new();
        crew(&p);
        ok(&p, 0, &["task", "start", "crew", "t1", "--as", "ana"]);
        let err = refused(&p, 1, &["complete", "crew"], 2);
        assert!(err.contains("team crew has 2 open task(s): t1 Schema (in_progress, ana), t2 API (pending)"), "{err}");
        assert!(err.contains("baton team complete crew --force"), "{err}");
        assert_eq!(ok(&p, 1, &["probe", "crew"])["team"]["status"], "active", "nothing changed");
        fs_err::write(p.root().join("schema.sql"), "create table t;\n").unwrap();
        ok(&p, 2, &["task", "complete", "crew", "t1", "--as", "ana"]);
        ok(&p, 2, &["consolidate", "crew"]);
        let err = refused(&p, 3, &["complete", "crew"], 2);
        assert!(err.contains("1 open task(s): t2 API (pending)"), "{err}");
        // The lead drops t2 on purpose.
        let (code, _, err) = at(&p, 3, &["complete", "crew", "--force"]);
        assert_eq!(code, 0, "{err}");
        assert!(err.contains("warning: completed with 1 task(s) left open, which nobody can finish now: t2"), "{err}");
        assert!(err.contains("team crew is completed and read-only"), "{err}");
        let review = ok(&p, 3, &["review", "crew"]);
        assert_eq!(review["team"]["status"], "completed");
        let last = review["journal"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(last["event"], serde_json::json!({"kind": "completed", "open": ["t2"]}));
        assert_eq!(p.git(&["show", "HEAD:schema.sql"]), "create table t;\n");
        let err = refused(&p, 4, &["task", "start", "crew", "t2", "--as", "bo"], 2);
        assert!(err.contains("completed and read-only"), "{err}");
    }
}

/// Whether `git ARGS` succeeds in the project (as its test identity).
fn git_ok(p: &TestProject, args: &[&str]) -> bool {
    Command::new("git")
        .args(["-c", "user.name=lead", "-c", "user.email=lead@localhost"])
        .args(args)
        .current_dir(p.root())
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap()
        .status
        .success()
}

/// `git status --porcelain` without baton's own folder.
fn status(p: &TestProject) -> String {
    p.git(&["status", "--porcelain"])
        .lines()
        .filter(|l| !l.contains(".baton/"))
        .collect::<Vec<_>>()
        .join("\n")
}
