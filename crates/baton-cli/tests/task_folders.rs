//! A task id whose folder `.baton/tasks/ID/` is still there but which the
//! store does not know (the store was emptied or replaced) is never
//! reused: `run --id ID` is refused, naming the folder, with the way back
//! (`baton doctor --fix`); a generated id picks another; and `ls` says how
//! many task folders the store lacks instead of just "no tasks yet".

use baton_testkit::{TestProject, on_both_backends};

const WF: &str =
    "name = \"w\"\n[[phase]]\nid = \"a\"\nrun = \"echo a-summary > \\\"$BATON_SUMMARY_FILE\\\"\"\n";

/// An empty store in place of the project's: on SQLite its files are
/// deleted; on PostgreSQL the project gets a fresh database.
fn lose_the_store(p: &mut TestProject) {
    match &p.database_url {
        None => {
            for f in ["baton.db", "baton.db-wal", "baton.db-shm"] {
                let _ = std::fs::remove_file(p.root().join(".baton").join(f));
            }
        }
        Some(_) => {
            p.database_url = Some(baton_testkit::pg::shared().create_database());
        }
    }
}

on_both_backends! {
    /// The refused id keeps the task's folder and session log as they
    /// were; `doctor --fix` brings the task back.
    fn a_task_folder_the_store_does_not_know_keeps_its_id() {
        let mut p = TestProject::new();
        p.workflow("w", WF);
        let (code, _, err) = p.run(&["run", "w", "first", "--id", "t1"]);
        assert_eq!(code, 0, "{err}");
        let (code, _, err) = p.run(&["run", "w", "generated"]);
        assert_eq!(code, 0, "{err}");
        let state = p.root().join(".baton/tasks/t1/state.json");
        let log = p.root().join(".baton/sessions/t1.md");
        let (state_before, log_before) = (fs_err::read(&state).unwrap(), fs_err::read(&log).unwrap());
        let generated_before: Vec<_> = fs_err::read_dir(p.root().join(".baton/tasks"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != "t1" && n != "current")
            .collect();
        assert_eq!(generated_before.len(), 1, "{generated_before:?}");
        lose_the_store(&mut p);

        // ls: the store is empty, and says what it lacks.
        let (code, out, err) = p.run(&["ls"]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(out, "");
        assert!(!err.contains("no tasks yet"), "{err}");
        assert!(
            err.contains("2 task folder(s) in .baton/tasks/ hold tasks the store does not know"),
            "{err}"
        );
        assert!(err.contains("hint: `baton doctor --fix` rebuilds them"), "{err}");
        let (code, out, err) = p.run(&["ls", "--json"]);
        assert_eq!((code, out.trim()), (0, "[]"), "{err}");
        assert!(err.contains("2 task folder(s)"), "{err}");

        // run --id t1: refused, nothing overwritten.
        let (code, out, err) = p.run(&["run", "w", "second", "--id", "t1"]);
        assert_eq!(code, 2, "{out}{err}");
        assert!(
            err.contains(".baton/tasks/t1 holds task t1, which the store does not know"),
            "{err}"
        );
        assert!(err.contains("hint: `baton doctor --fix` rebuilds task t1 from its folder"), "{err}");
        assert!(err.contains("hint: or start the new task under another --id"), "{err}");
        assert_eq!(fs_err::read(&state).unwrap(), state_before);
        assert_eq!(fs_err::read(&log).unwrap(), log_before);
        // So is --queue.
        let (code, _, err) = p.run(&["run", "w", "second", "--id", "t1", "--queue"]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("which the store does not know"), "{err}");
        assert_eq!(fs_err::read(&state).unwrap(), state_before);

        // A generated id simply picks another (the description makes the
        // same slug as the lost task's).
        let (code, _, err) = p.run(&["run", "w", "generated"]);
        assert_eq!(code, 0, "{err}");
        let (_, out, _) = p.run(&["ls", "--all", "--json"]);
        let tasks: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
        assert_eq!(tasks.len(), 1, "{out}");
        let new_id = tasks[0]["id"].as_str().unwrap().to_string();
        assert!(!generated_before.contains(&new_id), "{new_id} reused {generated_before:?}");
        assert_eq!(fs_err::read(&state).unwrap(), state_before);

        // doctor --fix brings t1 back; its id is its own again.
        let (code, out, err) = p.run(&["doctor", "--fix"]);
        assert_eq!(code, 0, "{out}{err}");
        assert!(out.contains("rebuilt task t1"), "{out}");
        assert_eq!(p.state("t1")["completed_phases"][0]["summary"], "a-summary");
        let (code, _, err) = p.run(&["ls", "--all"]);
        assert_eq!(code, 0);
        assert!(!err.contains("does not know"), "{err}");
        let (code, _, err) = p.run(&["run", "w", "again", "--id", "t1"]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("already exists"), "{err}");
    }
}

/// A task `baton clean` removed from the store keeps its folder (marked
/// cleaned): its id may be taken again, as before.
#[test]
fn a_cleaned_tasks_id_may_be_taken_again() {
    let p = TestProject::new();
    p.workflow("w", WF);
    assert_eq!(p.run(&["run", "w", "x", "--id", "c1"]).0, 0);
    let (code, _, err) = p.run(&["clean", "--yes"]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = p.run(&["ls", "--all"]);
    assert_eq!(code, 0);
    assert!(!err.contains("does not know"), "{err}");
    let (code, _, err) = p.run(&["run", "w", "x", "--id", "c1"]);
    assert_eq!(code, 0, "{err}");
}
