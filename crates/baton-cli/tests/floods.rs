//! What the outside world sends is read in bounded memory (issue 34): a
//! phase that prints hundreds of megabytes, lines a gigabyte long, secrets
//! deep in a flood, a summary file with bytes that are not UTF-8.

use baton_testkit::{TestProject, on_both_backends, wait_child, wait_for};
use std::process::Stdio;

/// The peak resident set (`VmHWM`, KiB) of a live process.
fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no VmHWM in {status}"))
}

/// Runs workflow `wf` as task `id`, held once the task completed (before
/// the process exits), and returns baton's peak RSS then, in MB.
fn peak_mb_of_run(p: &TestProject, wf: &str, id: &str) -> u64 {
    let hold = p.root().join("hold");
    let mut child = p
        .baton(&["run", wf, "flood", "--id", id])
        .env("BATON_TEST_HOLD_AT", "journal-committed:task_completed")
        .env("BATON_TEST_HOLD_FILE", &hold)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the task to complete", || hold.exists().then_some(()));
    let kib = peak_kib(child.id());
    std::fs::remove_file(&hold).unwrap();
    assert!(wait_child(&mut child, "baton run").success());
    kib / 1024
}

on_both_backends! {
    /// The input of issue 34, at 300 MB: baton read the whole output when
    /// the phase ended (its RSS grew past the size printed, and under a
    /// memory limit it was killed after the work was done, on every
    /// resume). Now a flood costs what a quiet phase does.
    fn a_phase_that_prints_hundreds_of_megabytes_costs_baton_a_few() {
        let p = TestProject::new();
        p.workflow(
            "flood",
            "name = \"flood\"\n[[phase]]\nid = \"build\"\nrun = \"yes 'a chatty build line' | head -c 300000000; echo; echo last-line\"\n",
        );
        p.workflow("quiet", "name = \"quiet\"\n[[phase]]\nid = \"build\"\nrun = \"echo last-line\"\n");
        let quiet = peak_mb_of_run(&p, "quiet", "q1");
        let flood = peak_mb_of_run(&p, "flood", "f1");
        assert!(flood < quiet + 64, "a 300 MB flood: {flood} MB, a quiet run: {quiet} MB");
        let doc = p.state("f1");
        assert_eq!(doc["completed_phases"][0]["summary"], "last-line");
        let log = p.root().join(".baton/tasks/f1/logs/01-build.i0.a1.out");
        assert!(std::fs::metadata(log).unwrap().len() > 300_000_000, "the output is kept whole");
    }
}

/// Secrets deep in a large output and in a line far longer than any
/// buffer are taken out; everything else is kept byte for byte, bytes
/// that are not UTF-8 included.
#[test]
fn secrets_in_a_flood_are_taken_out_and_every_other_byte_kept() {
    let p = TestProject::new();
    let script = concat!(
        "yes 'plain build line' | head -c 5000000; ",
        "printf 'odd \\377 byte, no secret\\n'; ",
        "echo 'password=hunter22-hunter22'; ",
        "echo '-----BEGIN RSA PRIVATE KEY-----'; echo MIIEowIBAAKCAQEA; echo '-----END RSA PRIVATE KEY-----'; ",
        "head -c 3000000 /dev/zero | tr '\\0' x; echo ' ghp_0123456789abcdefghijklmnopqrstuvwxyzAB'; ",
        "echo last-line",
    );
    p.workflow(
        "leaky",
        &format!("name = \"leaky\"\n[[phase]]\nid = \"build\"\nrun = '''{script}'''\n"),
    );
    let (code, _, err) = p.run(&["run", "leaky", "x", "--id", "l1"]);
    assert_eq!(code, 0, "{err}");
    let out = std::fs::read(p.root().join(".baton/tasks/l1/logs/01-build.i0.a1.out")).unwrap();
    let text = String::from_utf8_lossy(&out);
    for secret in ["hunter22", "MIIEowIBAAKCAQEA", "ghp_0123456789"] {
        assert!(!text.contains(secret), "{secret} is still in the output");
    }
    assert!(text.contains("password=[REDACTED:value]"));
    assert!(text.contains("[REDACTED:private-key]"));
    assert!(text.contains("[REDACTED:github-token]"));
    // The line that is not UTF-8 held no secret: kept as it was written.
    assert!(
        out.windows(b"odd \xff byte".len())
            .any(|w| w == b"odd \xff byte"),
        "the byte 0xff was kept"
    );
    let plain = b"plain build line\n".len();
    assert!(
        out.len() > 5_000_000 - plain + 3_000_000,
        "{} bytes",
        out.len()
    );
}

on_both_backends! {
    /// A summary file holding a byte that is not UTF-8 was dropped without
    /// a word, and the last output line used instead. It is kept, the byte
    /// shown as U+FFFD, and the journal says so.
    fn a_summary_that_is_not_utf8_is_kept_and_the_journal_says_so() {
        let p = TestProject::new();
        p.workflow(
            "w",
            "name = \"w\"\n[[phase]]\nid = \"a\"\nrun = '''printf 'built it \\377 fine\\n' > \"$BATON_SUMMARY_FILE\"; echo other-line'''\n",
        );
        let (code, _, err) = p.run(&["run", "w", "x", "--id", "s1"]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(p.state("s1")["completed_phases"][0]["summary"], "built it \u{fffd} fine");
        let notes: Vec<String> = p
            .journal("s1")
            .iter()
            .filter(|e| e["kind"] == "note")
            .map(|e| e["text"].as_str().unwrap().to_string())
            .collect();
        assert!(notes.iter().any(|n| n.contains("not UTF-8")), "{notes:?}");
    }
}

on_both_backends! {
    /// Hostile files in the summary's place: a FIFO wedged baton for good
    /// (its open blocked, SIGTERM and `cancel` too, and every resume), a
    /// symlink to /dev/zero spun for ever. Neither is read: the journal
    /// says so, and the output's last line is the summary.
    fn a_summary_file_that_is_not_a_file_is_never_read() {
        let p = TestProject::new();
        p.workflow(
            "fifo",
            "name = \"fifo\"\n[[phase]]\nid = \"a\"\nrun = '''rm -f \"$BATON_SUMMARY_FILE\"; mkfifo \"$BATON_SUMMARY_FILE\"; echo fifo-last'''\n",
        );
        p.workflow(
            "zero",
            "name = \"zero\"\n[[phase]]\nid = \"a\"\nrun = '''rm -f \"$BATON_SUMMARY_FILE\"; ln -s /dev/zero \"$BATON_SUMMARY_FILE\"; echo zero-last'''\n",
        );
        for (wf, last) in [("fifo", "fifo-last"), ("zero", "zero-last")] {
            let mut child = p
                .baton(&["run", wf, "x", "--id", wf])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            assert!(wait_child(&mut child, "baton run").success(), "{wf}");
            assert_eq!(p.state(wf)["completed_phases"][0]["summary"], last);
            let noted = p.journal(wf).iter().any(|e| {
                e["kind"] == "note" && e["text"].as_str().unwrap_or("").contains("not a regular file")
            });
            assert!(noted, "{wf}: the journal says why the summary was not read");
        }
    }
}
