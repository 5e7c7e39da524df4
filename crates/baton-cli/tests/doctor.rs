//! `baton doctor --fix` rebuilding a lost store from the rendered files,
//! and living with `clean`.

use baton_testkit::TestProject;

const WF: &str = r#"
name = "m"
[[phase]]
id = "a"
run = "echo one > a.txt; echo a-summary > \"$BATON_SUMMARY_FILE\""
[[phase]]
id = "b"
run = "echo two >> a.txt; echo b-summary > \"$BATON_SUMMARY_FILE\""
[[phase]]
id = "gate"
wait = { human = "Ship it?" }
"#;

fn lose_the_store(p: &TestProject) {
    for f in ["baton.db", "baton.db-wal", "baton.db-shm"] {
        let _ = std::fs::remove_file(p.root().join(".baton").join(f));
    }
}

fn ids(p: &TestProject) -> Vec<String> {
    let (_, out, _) = p.run(&["ls", "--all", "--json"]);
    serde_json::from_str::<Vec<serde_json::Value>>(&out)
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_deleted_store_is_noticed_and_rebuilt_with_waits_and_checkpoints() {
    let p = TestProject::new();
    p.workflow("m", WF);
    assert_eq!(p.run(&["run", "m", "x", "--id", "w1"]).0, 4);
    lose_the_store(&p);
    // A fresh, empty store opens; doctor sees the rendered task it lacks.
    let (code, out, _) = p.run(&["doctor"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("task w1 is rendered in .baton/tasks/ but missing from the store"),
        "{out}"
    );
    let (code, out, err) = p.run(&["doctor", "--fix"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("rebuilt task w1"), "{out}");
    // Still waiting for the same thing, with its summaries.
    let st = p.state("w1");
    assert_eq!(st["status"], "WAITING", "{st:#}");
    assert_eq!(st["waiting"]["for"], "a human answer to \"Ship it?\"");
    assert_eq!(st["completed_phases"][1]["summary"], "b-summary");
    // The checkpoints came back from their refs: --from restores files.
    std::fs::write(p.root().join("a.txt"), "edited\n").unwrap();
    let (code, _, err) = p.run(&["resume", "w1", "--from", "b"]);
    assert_eq!(code, 4, "{err}");
    assert!(
        err.contains("restored the work tree to the start of b"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(p.root().join("a.txt")).unwrap(),
        "one\ntwo\n"
    );
    // A second doctor finds nothing left to do.
    let (code, out, _) = p.run(&["doctor"]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn cleaned_tasks_stay_cleaned_and_keep_their_checkpoints() {
    let p = TestProject::new();
    p.workflow(
        "q",
        "name = \"q\"\n[[phase]]\nid = \"a\"\nrun = \"echo a\"\n",
    );
    assert_eq!(p.run(&["run", "q", "x", "--id", "done1"]).0, 0);
    assert_eq!(p.run(&["clean", "--yes"]).0, 0);
    assert!(ids(&p).is_empty());
    assert!(
        p.root().join(".baton/tasks/done1/01-a.md").exists(),
        "clean keeps outputs"
    );
    // doctor neither complains about the refs nor resurrects the task.
    let refs = p.git(&["for-each-ref", "refs/baton/done1/"]);
    assert!(!refs.is_empty());
    let (code, out, _) = p.run(&["doctor", "--fix"]);
    assert_eq!(code, 0, "{out}");
    assert!(ids(&p).is_empty(), "a cleaned task came back");
    assert_eq!(
        p.git(&["for-each-ref", "refs/baton/done1/"]),
        refs,
        "checkpoints deleted"
    );
    let (code, out, _) = p.run(&["doctor"]);
    assert_eq!(code, 0, "{out}");
    // Reusing the id makes it a live record again, rebuilt if the store is lost.
    assert_eq!(p.run(&["run", "q", "x", "--id", "done1"]).0, 0);
    lose_the_store(&p);
    assert_eq!(p.run(&["doctor", "--fix"]).0, 0);
    assert_eq!(ids(&p), vec!["done1"]);
}
