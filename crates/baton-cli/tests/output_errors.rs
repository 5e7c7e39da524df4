//! Output that cannot be written: stdout on a full device (`/dev/full`)
//! is an error (exit 1, `error: cannot write to standard output: …` and a
//! hint), never a silent success; stdout into a pipe whose reader has gone
//! (`baton … | head -1`) ends the output quietly, with the command's own
//! exit code, nothing on stderr and no panic.

use baton_testkit::TestProject;
use std::process::{Command, Stdio};

/// A project with one task waiting for a person (shown by `ls`, with a
/// journal and a state document).
fn project() -> TestProject {
    let p = TestProject::new();
    p.workflow(
        "w",
        "name = \"w\"\n[[phase]]\nid = \"a\"\nrun = \"echo a\"\n[[phase]]\nid = \"b\"\nrun = \"echo b\"\n[[phase]]\nid = \"gate\"\nwait = { human = \"Ship it?\" }\n",
    );
    assert_eq!(p.run(&["run", "w", "x", "--id", "t1"]).0, 4);
    p
}

const COMMANDS: [&[&str]; 5] = [
    &["show", "t1", "--json"],
    &["ls"],
    &["log", "t1"],
    &["completions", "zsh"],
    &["man"],
];

#[test]
fn a_full_disk_is_an_error() {
    let p = project();
    for args in COMMANDS {
        let out = p
            .baton(args)
            .stdout(fs_err::File::create("/dev/full").unwrap().into_parts().0)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("error: cannot write to standard output: No space left on device"),
            "{args:?}: {err}"
        );
        assert!(err.contains("hint: "), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn a_pipe_closed_before_the_first_write_ends_the_output_quietly() {
    let p = project();
    for args in COMMANDS {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = p.baton(args).stdout(writer).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert_eq!(err, "", "{args:?}");
    }
}

#[test]
fn a_pipe_closed_after_one_line_ends_the_output_quietly() {
    let p = project();
    for args in COMMANDS {
        // As a shell runs `baton … | head -1`; PIPESTATUS has baton's exit.
        let line = format!(
            "'{}' {} | head -1 >/dev/null; echo \"exit=${{PIPESTATUS[0]}}\" >&2",
            baton_testkit::baton_bin().display(),
            args.join(" ")
        );
        let mut cmd = Command::new("bash");
        cmd.arg("-c").arg(&line).stdin(Stdio::null());
        // The project's hermetic environment.
        let env = p.baton(&[]);
        for (k, v) in env.get_envs() {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        let out = cmd.current_dir(p.root()).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err, "exit=0\n", "{args:?}");
    }
}

/// `log --follow` of a task that goes on running stops once nobody reads.
#[test]
fn log_follow_stops_when_its_reader_goes() {
    let p = TestProject::new();
    p.workflow(
        "slow",
        "name = \"slow\"\n[[phase]]\nid = \"a\"\nrun = \"sleep 30\"\n",
    );
    let (code, out, err) = p.run(&["run", "slow", "x", "--id", "s1", "--detach"]);
    assert_eq!(code, 0, "{out}{err}");
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let started = std::time::Instant::now();
    let out = p
        .baton(&["log", "s1", "--follow"])
        .stdout(writer)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "it stopped following"
    );
    assert_eq!(p.run(&["cancel", "s1"]).0, 0);
}
