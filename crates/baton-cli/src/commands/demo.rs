//! `baton demo`: a throw-away git repository, a 5-phase workflow, a real
//! SIGKILL in the middle, `baton ls` showing it CRASHED, and a resume that
//! completes it.

use super::Result;
use crate::cli::DemoArgs;
use crate::printer::Printer;
use baton_core::Exit;
use baton_engine::Error;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const WORKFLOW: &str = r#"name = "demo"
description = "Five phases; the demo kills baton during `execute`"

[[phase]]
id = "analyze"
run = "sleep 0.5; echo 'README.md is the only file' > \"$BATON_SUMMARY_FILE\""

[[phase]]
id = "plan"
run = "sleep 0.5; printf 'Add greet.sh\n\nAcceptance criteria:\n- greet.sh prints hello\n' > \"$BATON_SUMMARY_FILE\""

[[phase]]
id = "execute"
run = "sleep 3; printf '#!/bin/sh\necho hello\n' > greet.sh; chmod +x greet.sh; echo 'wrote greet.sh'"

[[phase]]
id = "validate"
run = "./greet.sh | grep -q hello && echo 'greet.sh prints hello'"

[[phase]]
id = "review"
run = "sleep 0.5; echo \"reviewed $(cat $BATON_BRIEF_FILE | wc -l) lines of brief\""
"#;

fn sh(dir: &Path, program: &str, args: &[&str]) -> Result<()> {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()?;
    if !out.status.success() {
        return Err(Error::op(format!(
            "{program} {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

pub fn run(args: DemoArgs, printer: &Printer) -> Result<Exit> {
    let exe = std::env::current_exe()?;
    let tmp = tempfile::Builder::new().prefix("baton-demo-").tempdir()?;
    let dir = tmp.path().to_path_buf();
    let baton = |extra: &[&str]| {
        let mut c = Command::new(&exe);
        c.arg("--project")
            .arg(&dir)
            .args(extra)
            .stdin(Stdio::null());
        c
    };
    let step = |s: &str| printer.info(&format!("\n== {s}"));

    step(&format!("a throw-away git repository in {}", dir.display()));
    sh(&dir, "git", &["init", "-q", "-b", "main"])?;
    fs_err::write(dir.join("README.md"), "# demo\n")?;
    sh(&dir, "git", &["add", "."])?;
    sh(
        &dir,
        "git",
        &[
            "-c",
            "user.name=baton demo",
            "-c",
            "user.email=demo@localhost",
            "commit",
            "-qm",
            "start",
        ],
    )?;
    let st = baton(&["-q", "init"]).status()?;
    if !st.success() {
        return Err(Error::op("baton init failed"));
    }
    fs_err::write(dir.join(".baton/workflows/demo.toml"), WORKFLOW)?;

    step("baton run demo — and a SIGKILL while `execute` runs");
    let mut child =
        baton(&["run", "demo", "Add a greeting script", "--id", "demo-task"]).spawn()?;
    let state = dir.join(".baton/tasks/demo-task/state.json");
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        if Instant::now() > until {
            let _ = child.kill();
            return Err(Error::op("the demo task never reached `execute`"));
        }
        if let Ok(bytes) = std::fs::read(&state)
            && let Ok(doc) = serde_json::from_slice::<serde_json::Value>(&bytes)
            && doc["current_phase"]["id"] == "execute"
            && doc["current_phase"]["status"] == "IN_PROGRESS"
        {
            break;
        }
        if let Some(status) = child.try_wait()? {
            return Err(Error::op(format!("baton run ended early ({status})")));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(700));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .map_err(|e| Error::op(e.to_string()))?;
    let _ = child.wait();
    printer.info(&format!(
        "killed baton (pid {}) with SIGKILL in the middle of `execute`",
        child.id()
    ));

    step("baton ls — the task is CRASHED and resumable");
    baton(&["ls"]).status()?;

    step("baton resume demo-task — re-runs `execute` from its start, then the rest");
    let resumed = baton(&["resume", "demo-task"]).status()?;

    step("baton ls --all — COMPLETE");
    baton(&["ls", "--all"]).status()?;
    step("baton log demo-task — the journal");
    baton(&["log", "demo-task"]).status()?;

    if args.keep {
        let kept = tmp.keep();
        printer.info(&format!(
            "\nthe demo repository is kept in {}",
            kept.display()
        ));
    }
    if !resumed.success() {
        return Err(Error::op("the resumed demo task did not complete"));
    }
    // Check what the demo claims, from the journal itself.
    let log = baton(&["log", "demo-task", "--json"]).output()?;
    let mut passes: std::collections::BTreeMap<String, usize> = Default::default();
    for line in String::from_utf8_lossy(&log.stdout).lines() {
        let e: serde_json::Value =
            serde_json::from_str(line).map_err(|e| Error::op(e.to_string()))?;
        if e["kind"] == "phase_passed" {
            *passes
                .entry(e["phase"].as_str().unwrap_or("?").to_string())
                .or_default() += 1;
        }
    }
    let once = passes.len() == 5 && passes.values().all(|n| *n == 1);
    let counts: Vec<String> = passes.iter().map(|(p, n)| format!("{p} {n}")).collect();
    if !once {
        return Err(Error::op(format!(
            "expected one PASS per phase, the journal has: {}",
            counts.join(", ")
        )));
    }
    printer.info(&format!(
        "\nthe demo crashed mid-phase and resumed to COMPLETE; PASS events per phase in the journal: {}",
        counts.join(", ")
    ));
    Ok(Exit::Done)
}
