//! What the agent-instance tests share: a project with scripted agents
//! (shell scripts run as generic agents, calling `baton agent …` from
//! inside their turn as a real agent's shell tool would), its settings
//! committed and pushed to a bare remote, and small helpers.
#![allow(dead_code)]

use baton_testkit::{TestProject, baton_bin, wait_for};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The scripted agents: each reads its prompt file and acts like an agent
/// would, committing with git and calling baton from its "shell tool".
pub fn agents_config(baton: &Path) -> String {
    let b = baton.display();
    let script = |body: &str| {
        format!(
            "command = [\"sh\", \"-c\", '''prompt=$(cat \"$1\"); {body}''', \"agent\", \"{{{{prompt_file}}}}\"]\n"
        )
    };
    let commit = "git add -A && git -c user.email=a@a -c user.name=agent commit -qm";
    let mut s = String::from("\n[instances]\nworktree_base = \".wt\"\n\n");
    // Codes; asks for a review on its first turn; on a feedback turn
    // does what the feedback says (writes the file it names).
    s.push_str("[agents.coder]\n");
    s.push_str(&script(&format!(
        "case \"$prompt\" in *\"reviewer's feedback\"*) f=$(printf '%s' \"$prompt\" | sed -n 's/.*please write \\([a-z.]*\\).*/\\1/p' | head -n1); echo \"$prompt\" > \"$f\"; {commit} \"wrote $f\"; echo handled;; *) echo work > work.txt; {commit} work; {b} agent review --agent reviewer; echo coded;; esac"
    )));
    // Reviews: commits a fix and merges back with feedback.
    s.push_str("[agents.reviewer]\n");
    s.push_str(&script(&format!(
        "echo \"checked by $BATON_INSTANCE\" >> REVIEW.md; {commit} 'review fix'; {b} agent merge-back --feedback \"please write tests.txt\"; echo reviewed"
    )));
    // Does nothing and ends its turn.
    s.push_str("[agents.idle]\n");
    s.push_str(&script("echo idle"));
    // Works on and on.
    s.push_str("[agents.sleeper]\n");
    s.push_str(&script(
        "echo $$ > \"$BATON_STATE_DIR/agent.pid\"; sleep 60",
    ));
    // Commits work nobody else has.
    s.push_str("[agents.committer]\n");
    s.push_str(&script(&format!(
        "echo \"mine of $BATON_INSTANCE\" > mine.txt; {commit} mine"
    )));
    // Leaves changes uncommitted.
    s.push_str("[agents.dirty]\n");
    s.push_str(&script("echo draft > draft.txt; echo left it"));
    s
}

/// A project with the scripted agents, its settings committed and pushed
/// to a bare remote.
pub fn project() -> (TestProject, tempfile::TempDir) {
    project_in(TestProject::new())
}

fn project_in(p: TestProject) -> (TestProject, tempfile::TempDir) {
    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    text.push_str(&agents_config(&baton_bin()));
    fs_err::write(&cfg, text).unwrap();
    fs_err::write(p.root().join(".git/info/exclude"), ".wt/\n").unwrap();
    let remote = tempfile::tempdir().unwrap();
    let ok = Command::new("git")
        .args(["init", "-q", "--bare", "-b", "main"])
        .arg(remote.path())
        .status()
        .unwrap();
    assert!(ok.success());
    p.git(&["remote", "add", "origin", remote.path().to_str().unwrap()]);
    p.git(&["add", "-A"]);
    p.git(&["commit", "-qm", "baton settings"]);
    p.git(&["push", "-q", "origin", "main"]);
    (p, remote)
}

pub fn ok(p: &TestProject, args: &[&str]) -> String {
    let (code, out, err) = p.run(args);
    assert_eq!(code, 0, "baton {args:?} failed:\n{out}\n{err}");
    out
}

pub fn show(p: &TestProject, id: &str) -> Value {
    serde_json::from_str(&ok(p, &["agent", "show", id, "--json"])).unwrap()
}

/// Waits until `id`'s latest turn has ended (its task is no longer
/// running) and returns the instance.
pub fn settled(p: &TestProject, id: &str) -> Value {
    wait_for(&format!("the turn of {id} to end"), || {
        let v = show(p, id);
        let status = v["turn"]["status"].as_str()?.to_string();
        (status != "RUNNING").then_some(v)
    })
}

pub fn branch_exists(p: &TestProject, branch: &str) -> bool {
    Command::new("git")
        .args([
            "rev-parse",
            "--verify",
            "-q",
            &format!("refs/heads/{branch}"),
        ])
        .current_dir(p.root())
        .output()
        .unwrap()
        .status
        .success()
}

pub fn log_of(p: &TestProject, branch: &str) -> String {
    p.git(&["log", "--format=%s", branch])
}

pub fn worktree(v: &Value) -> PathBuf {
    PathBuf::from(v["resources"]["worktree_path"].as_str().unwrap())
}

/// Runs baton and expects a refusal: exit `code` and `WORKFLOW_…` in the
/// message, with a hint.
pub fn refused(p: &TestProject, args: &[&str], exit: i32, code: &str) -> String {
    let (got, out, err) = p.run(args);
    assert_eq!(got, exit, "baton {args:?}: {out}\n{err}");
    assert!(
        err.contains(&format!("error: {code}: ")),
        "baton {args:?} should fail with {code}: {err}"
    );
    assert!(err.contains("hint: "), "no hint: {err}");
    err
}

/// Writes `text` to `file` in the worktree `dir` and commits it there, as
/// an agent working in it would.
pub fn commit_file(dir: &Path, file: &str, text: &str) {
    fs_err::write(dir.join(file), text).unwrap();
    for args in [&["add", "-A"][..], &["commit", "-qm", text][..]] {
        let s = Command::new("git")
            .args(["-c", "user.email=t@t", "-c", "user.name=t"])
            .args(args)
            .current_dir(dir)
            .status()
            .unwrap();
        assert!(s.success(), "git {args:?} in {}", dir.display());
    }
}
