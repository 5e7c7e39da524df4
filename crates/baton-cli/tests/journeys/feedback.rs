//! Journeys through what a user sees while work runs and after it
//! ended: a long phase's signs of life (on a terminal, in a CI log, in
//! `log --follow`, on the dashboard), and messages that say what happened
//! (plays, doctor, instances' times, `serve --addr`, prompts too long,
//! saved work trees, learning cases), and Gemini CLI told about baton's
//! MCP server wherever the project lives.
//!
//! Nothing waits on a clock to be right: a phase that must be seen
//! running waits for a file the test creates once it has seen what it
//! wanted (`go`, `go1`, `go2`).

use crate::common::instances::{ok, project, settled, show};
use baton_testkit::{TestProject, Tmux, baton_bin, on_both_backends, wait_child, wait_for};
use serde_json::Value;
use std::io::Read;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

/// A build that prints a line, waits for `go1`, prints a line holding a
/// terminal escape (clear the screen), waits for `go2`, and ends.
const BUILD: &str = r#"name = "build"
[[phase]]
id = "build"
run = '''echo 'Compiling step-one'; while [ ! -f go1 ]; do sleep 0.05; done; printf 'Compiling step-two \033[2J\n'; while [ ! -f go2 ]; do sleep 0.05; done; echo built'''
"#;

fn touch(p: &TestProject, file: &str) {
    fs_err::write(p.root().join(file), "").unwrap();
}

/// What a child writes to a pipe, gathered by a thread as it comes.
fn gather(mut from: impl Read + Send + 'static) -> Arc<Mutex<String>> {
    let seen = Arc::new(Mutex::new(String::new()));
    let into = seen.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 {
                break;
            }
            into.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    seen
}

fn text_of(seen: &Arc<Mutex<String>>) -> String {
    seen.lock().unwrap().clone()
}

/// The line of `screen` holding `text`.
fn line_with<'a>(screen: &'a str, text: &str) -> &'a str {
    screen
        .lines()
        .find(|l| l.contains(text))
        .unwrap_or_else(|| panic!("no line holds {text:?}:\n{screen}"))
}

on_both_backends! {
    /// As a developer running a ten-minute build on my terminal, I see one line that says which phase runs, for how long, and what it printed last, redrawn in place, with no escape of the build's reaching my terminal.
    fn a_long_build_on_a_terminal_shows_its_last_line_and_time_in_place() {
        let p = TestProject::new();
        p.workflow("build", BUILD);
        let t = Tmux::start(&format!(
            "cd '{}' && env {} '{}' run build 'the release build' --id rel; echo EXIT=$?; sleep 60",
            p.root().display(),
            p.env_words().join(" "),
            baton_bin().display()
        ));
        let screen = t.wait_for("Compiling step-one", 30);
        let line = line_with(&screen, "Compiling step-one");
        assert!(line.contains("build (command) "), "the phase and its time: {line}");
        let elapsed = line
            .split_whitespace()
            .any(|w| w.strip_suffix('s').is_some_and(|n| n.parse::<u32>().is_ok()));
        assert!(elapsed, "its elapsed time: {line}");

        touch(&p, "go1");
        let screen = t.wait_for("Compiling step-two", 30);
        assert!(
            !screen.contains("Compiling step-one"),
            "one line, redrawn in place:\n{screen}"
        );
        let line = line_with(&screen, "Compiling step-two");
        assert!(line.contains(r"\x1b[2J"), "the escape is shown, not obeyed: {line}");
        assert!(line.contains("build (command) "), "{line}");
        assert_eq!(
            screen.matches("task rel (workflow build)").count(),
            1,
            "the screen was not cleared:\n{screen}"
        );

        touch(&p, "go2");
        let screen = t.wait_for("EXIT=", 30);
        assert!(screen.contains("EXIT=0"), "{screen}");
        assert!(screen.contains("PASS    build"), "{screen}");
        assert!(screen.contains("— built"), "{screen}");
        assert!(
            !screen.contains("Compiling step-two"),
            "the running line is gone once the phase ended:\n{screen}"
        );
        assert_eq!(p.state("rel")["status"], "COMPLETE");
    }

    /// As a CI user reading a log file, a phase that prints thousands of lines shows its last line and elapsed time now and then, never a flood, and `--quiet` shows none of it.
    fn in_a_ci_log_a_long_phase_says_it_is_alive_now_and_then_never_a_flood() {
        let p = TestProject::new();
        p.workflow(
            "tests",
            r#"name = "tests"
[[phase]]
id = "test"
run = '''seq 1 5000 | sed 's/^/test case /'; printf 'running 40%%\r' >&2; printf 'running 60%%\r' >&2; while [ ! -f go ]; do sleep 0.05; done; echo 'all 5000 passed' '''
"#,
        );
        let started = std::time::Instant::now();
        let mut child = p
            .baton(&["run", "tests", "the test suite", "--id", "ci"])
            .env("BATON_PROGRESS_INTERVAL", "300ms")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let err = gather(child.stderr.take().unwrap());
        // The last line, where a carriage return starts it anew, as on a
        // terminal.
        wait_for("a progress line with the last output line", || {
            let e = text_of(&err);
            e.lines()
                .any(|l| l.contains("test running") && l.ends_with("— running 60%"))
                .then_some(())
        });
        let e = text_of(&err);
        assert!(!e.contains("running 40%"), "{e}");
        touch(&p, "go");
        assert!(wait_child(&mut child, "the run").success(), "{}", text_of(&err));
        let ran = started.elapsed().as_millis() as usize;
        let e = text_of(&err);
        let progress = e.lines().filter(|l| l.contains("test running")).count();
        assert!(
            progress <= ran / 300 + 1,
            "at most one line per interval: {progress} in {ran} ms:\n{e}"
        );
        assert!(
            e.lines().count() < progress + 8,
            "the phase's own 5000 lines never reach stderr:\n{e}"
        );
        assert!(!e.contains("test case 17"), "{e}");
        assert!(e.contains("PASS    test"), "{e}");

        // --quiet: no progress at all, however long the phase runs.
        fs_err::remove_file(p.root().join("go")).unwrap();
        let mut child = p
            .baton(&["--quiet", "run", "tests", "again", "--id", "quiet"])
            .env("BATON_PROGRESS_INTERVAL", "100ms")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let err = gather(child.stderr.take().unwrap());
        wait_for("the quiet run's phase to start", || {
            let (code, out, _) = p.run(&["show", "quiet", "--json"]);
            let v: Value = serde_json::from_str(&out).ok().filter(|_| code == 0)?;
            (v["current_phase"]["status"] == "IN_PROGRESS").then_some(())
        });
        std::thread::sleep(std::time::Duration::from_millis(800));
        touch(&p, "go");
        assert!(wait_child(&mut child, "the quiet run").success());
        assert_eq!(text_of(&err), "", "--quiet prints nothing for a task that passes");
    }

    /// As a developer who ran a build in the background, `baton log --follow` shows its output lines as they come, escaped, each before the event that ended its phase, and ends with the task.
    fn log_follow_streams_a_background_builds_output_until_it_ends() {
        let p = TestProject::new();
        p.workflow(
            "build",
            r#"name = "build"
[[phase]]
id = "build"
run = '''echo 'first line'; printf 'evil \033]52;c;aGk=\007\n' >&2; while [ ! -f go ]; do sleep 0.05; done; echo 'last line' '''
[[phase]]
id = "check"
run = "echo checked"
"#,
        );
        let (code, out, err) = p.run(&["run", "build", "in the background", "--id", "bg", "--detach"]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(out.trim(), "bg");
        let mut follow = p
            .baton(&["log", "bg", "--follow"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let seen = gather(follow.stdout.take().unwrap());
        wait_for("the running phase's output", || {
            let s = text_of(&seen);
            (s.contains("stdout             build: first line") && s.contains("evil")).then_some(())
        });
        let s = text_of(&seen);
        assert!(s.contains(r"stderr             build: evil \x1b]52;c;aGk=\x07"), "escaped:\n{s}");
        assert!(!s.contains('\x1b'), "no raw escape reaches the reader");
        assert!(!s.contains("last line") && !s.contains("phase_passed"), "{s}");

        touch(&p, "go");
        assert!(wait_child(&mut follow, "log --follow").success());
        let s = text_of(&seen);
        let at = |needle: &str| {
            s.find(needle)
                .unwrap_or_else(|| panic!("{needle:?} missing:\n{s}"))
        };
        assert!(at("build: last line") < at("phase_passed       build"), "{s}");
        assert!(at("phase_passed       build") < at("check: checked"), "{s}");
        assert!(at("check: checked") < at("phase_passed       check"), "{s}");
        assert!(s.trim_end().ends_with("task_completed"), "{s}");
        assert_eq!(s.matches("build: first line").count(), 1, "each line once:\n{s}");
        // --json stays the journal: every line has a seq.
        for line in p.journal("bg") {
            assert!(line["seq"].is_u64(), "{line}");
        }
    }

    /// As a teammate watching the dashboard, the running phase of a task shows its output live, through an API that keeps the server's token rule, with no reload.
    fn the_dashboard_streams_a_running_phases_output_behind_its_token() {
        use baton_testkit::serve::{Server, TOKEN, http};
        let p = TestProject::new();
        p.workflow(
            "build",
            r#"name = "build"
[[phase]]
id = "build"
run = '''echo 'step 1 of 3'; while [ ! -f go1 ]; do sleep 0.05; done; echo 'step 2 of 3 <b>bold</b>'; while [ ! -f go2 ]; do sleep 0.05; done; echo 'step 3 of 3' '''
"#,
        );
        let server = Server::start(&p, &[("BATON_SERVER_TOKEN", TOKEN)]);
        assert_eq!(p.run(&["run", "build", "watched", "--id", "w", "--detach"]).0, 0);
        let url = format!("{}/api/v1/tasks/w/output", server.url);
        let get = |query: &str, token: bool| -> (u16, Value) {
            let mut req = http().get(&format!("{url}{query}"));
            if token {
                req = req.header("Authorization", &format!("Bearer {TOKEN}"));
            }
            let mut r = req.call().unwrap();
            let status = r.status().as_u16();
            let text = r.body_mut().read_to_string().unwrap();
            (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
        };
        let (status, body) = get("", false);
        assert_eq!(status, 401, "the token rule holds here too: {body}");
        let first = wait_for("the first line through the API", || {
            let (status, body) = get("", true);
            assert_eq!(status, 200, "{body}");
            (body["lines"].as_array()?.len() == 1).then_some(body)
        });
        assert_eq!(first["running"], "build");
        assert_eq!(first["lines"][0]["text"], "step 1 of 3");
        assert_eq!(first["lines"][0]["stream"], "stdout");
        let cursor = first["cursor"].as_str().unwrap().to_string();
        let (_, again) = get(&format!("?after={cursor}"), true);
        assert_eq!(again["lines"], serde_json::json!([]), "nothing new after the cursor");
        let (status, bad) = get("?after=..%2F..%2Fetc%2Fpasswd-x.i0.a1%3A0%3A0", true);
        assert_eq!(status, 400, "{bad}");
        assert_eq!(bad["code"], "BAD_CURSOR");

        let b = baton_testkit::browser::Browser::start(1280, 860);
        // The token, given once to the front page (the board), serves
        // the task list too.
        b.goto(&format!("{}/#token={TOKEN}", server.url));
        b.wait_text("[data-column=running]", "w", 30);
        b.click(r#"nav a[href="/tasks"]"#);
        b.wait_text(r#"tr[data-task="w"] td.status"#, "RUNNING", 30);
        b.click(r#"tr[data-task="w"]"#);
        b.wait_text(r#"li[data-phase="build"] #output"#, "step 1 of 3", 30);
        b.js("window.__sameLoad = true; return null;", serde_json::json!([]));
        touch(&p, "go1");
        let shown = b.wait_text("#output", "step 2 of 3", 30);
        assert!(shown.contains("step 1 of 3\nstep 2 of 3 <b>bold</b>"), "text, not markup: {shown:?}");
        assert_eq!(
            b.js("return document.querySelectorAll('#output b').length;", serde_json::json!([])),
            serde_json::json!(0)
        );
        assert_eq!(
            b.js("return window.__sameLoad === true;", serde_json::json!([])),
            Value::Bool(true),
            "streamed live, not by reloading"
        );
        touch(&p, "go2");
        b.wait_text(r#"tr[data-task="w"] td.status"#, "COMPLETE", 30);
        let (_, last) = get(&format!("?after={cursor}"), true);
        let texts: Vec<&str> = last["lines"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|l| l["text"].as_str())
            .collect();
        assert_eq!(texts, ["step 2 of 3 <b>bold</b>", "step 3 of 3"], "{last}");
        assert_eq!(last["running"], Value::Null);
        assert_eq!(server.stop().code(), Some(0));
    }

    /// As a lead running a sprint's tasks as a play, a task that fails stops the play with words (not Rust debug text), and a play started part way never claims tasks it did not run are complete.
    fn a_play_started_part_way_says_which_tasks_it_did_not_run() {
        let p = TestProject::new();
        p.workflow(
            "step",
            "name = \"step\"\n[[phase]]\nid = \"work\"\nrun = \"test ! -f fail-{{labels.task-id}}\"\nmax_attempts = 1\n",
        );
        fs_err::write(
            p.root().join("sprint.toml"),
            "[[task]]\nid = \"t1\"\n[[task]]\nid = \"t2\"\n[[task]]\nid = \"t3\"\n[[task]]\nid = \"t4\"\n",
        )
        .unwrap();
        touch(&p, "fail-t2");
        let (code, _, err) = p.run(&["play", "sprint.toml", "--workflow", "step"]);
        assert_eq!(code, 1, "{err}");
        assert!(
            err.contains("play sprint stopped: task 2 of 4 (t2) failed: phase work failed 1 time(s): exit status 1"),
            "{err}"
        );
        assert!(!err.contains("Failed(\""), "no Rust debug text: {err}");
        assert!(err.contains("hint: fix the cause, then continue the play with `baton play --resume`"), "{err}");
        // The stop is a failure: --quiet still says it.
        let (code, _, err) = p.run(&["--quiet", "play", "--resume"]);
        assert_eq!(code, 1);
        assert!(err.contains("play sprint stopped: task 2 of 4 (t2) failed"), "{err}");

        // Going on past it, from task 3.
        let (code, _, err) = p.run(&["play", "sprint.toml", "--workflow", "step", "--start-from-task", "3"]);
        assert_eq!(code, 0, "{err}");
        assert!(!err.contains("all 4 tasks complete"), "{err}");
        assert!(
            err.contains("play sprint: reached its end; 2 of 4 tasks ran and are complete (t3, t4)"),
            "{err}"
        );
        assert!(
            err.contains("not run by this play (it started at task 3): t1 (COMPLETE), t2 (FAILED)"),
            "{err}"
        );
        assert!(err.contains("hint: t2 is FAILED: `baton resume t2` goes on with it"), "{err}");
        assert_eq!(p.state("t2")["status"], "FAILED");

        // Once the failed one is fixed and resumed, a whole play says all.
        fs_err::remove_file(p.root().join("fail-t2")).unwrap();
        assert_eq!(p.run(&["resume", "t2"]).0, 0);
        fs_err::write(p.root().join("next.toml"), "[[task]]\nid = \"n1\"\n[[task]]\nid = \"n2\"\n").unwrap();
        let (code, _, err) = p.run(&["play", "next.toml", "--workflow", "step"]);
        assert_eq!(code, 0, "{err}");
        assert!(err.contains("play next: all 2 tasks complete"), "{err}");
        assert!(!err.contains("not run by this play"), "{err}");
    }

    /// As an operator, `doctor` says which ended agent's worktree it keeps because it holds work, and passes (before and after `--fix`), while `agent show --json` gives its times as RFC 3339 like every other JSON baton prints.
    fn doctor_passes_over_worktrees_it_keeps_and_instances_give_rfc3339_times() {
        let (p, _remote) = project();
        ok(&p, &["agent", "spawn", "x", "--id", "keeps", "--agent", "committer"]);
        settled(&p, "keeps");
        let k: Value = serde_json::from_str(&ok(&p, &["agent", "kill", "keeps", "--json"])).unwrap();
        assert!(k["kept"][0]["detail"].as_str().unwrap().contains("commit"), "{k}");

        for fix in [false, true, false] {
            let mut args = vec!["doctor"];
            if fix {
                args.push("--fix");
            }
            let (code, out, err) = p.run(&args);
            assert_eq!(code, 0, "kept on purpose is no problem ({args:?}):\n{out}\n{err}");
            let line = line_with(&out, "agent instance keeps");
            assert!(line.starts_with("kept"), "{line}");
            assert!(line.contains("its branch has 1 commit on no other branch"), "{line}");
            assert!(out.contains("hint: push or merge that work"), "{out}");
            assert!(!out.contains("problem"), "{out}");
        }
        let (code, out, _) = p.run(&["doctor", "--json"]);
        assert_eq!(code, 0);
        let findings: Value = serde_json::from_str(&out).unwrap();
        let kept: Vec<&Value> = findings
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["level"] == "kept")
            .collect();
        assert_eq!(kept.len(), 1, "{findings}");
        assert!(p.root().join(".wt/keeps/mine.txt").is_file(), "the work is still there");

        // The instance's times, as docs/cli.md says every JSON time is.
        let v = show(&p, "keeps");
        let ls: Value = serde_json::from_str(&ok(&p, &["agent", "ls", "--all", "--json"])).unwrap();
        let listed = &ls.as_array().unwrap()[0];
        for (what, t) in [
            ("started_at", &v["started_at"]),
            ("updated_at", &v["updated_at"]),
            ("terminated_at", &v["terminated_at"]),
            ("ls started_at", &listed["started_at"]),
        ]
        .into_iter()
        .chain(
            Some(("state.last_activity", &v["state"]["last_activity"]))
                .filter(|(_, t)| !t.is_null()),
        ) {
            let t = t.as_str().unwrap_or_else(|| panic!("{what} is not text: {v}"));
            assert!(
                t.len() == 24 && t.as_bytes()[10] == b'T' && t.ends_with('Z'),
                "{what} {t:?} is not RFC 3339 UTC"
            );
        }
        let task: Value = serde_json::from_str(&ok(&p, &["ls", "--all", "--json"])).unwrap();
        let created = task[0]["created_at"].as_str().unwrap();
        assert_eq!(created.len(), v["started_at"].as_str().unwrap().len(), "the same shape as a task's");
    }

    /// As a user of `baton serve` on my laptop, `--addr localhost:PORT` listens on loopback (no token needed, as for 127.0.0.1) and answers by that name, while a name that does not resolve or an address without a port is refused with how to write it.
    fn serve_listens_by_a_host_name_that_resolves() {
        let p = TestProject::new();
        let port = baton_testkit::free_port();
        let log = p.root().join("serve.log");
        let mut child = p
            .baton(&["serve", "--addr", &format!("localhost:{port}")])
            .stdout(Stdio::null())
            .stderr(fs_err::File::create(&log).unwrap().into_parts().0)
            .spawn()
            .unwrap();
        let health = wait_for("serve on localhost to answer", || {
            if let Some(s) = child.try_wait().unwrap() {
                panic!("serve exited ({s}): {}", fs_err::read_to_string(&log).unwrap());
            }
            baton_testkit::serve::http()
                .get(&format!("http://localhost:{port}/healthz"))
                .call()
                .ok()
                .filter(|r| r.status() == 200)
        });
        assert_eq!(health.status(), 200);
        // The API, reached by that name (its Host header), lists the tasks.
        let mut tasks = baton_testkit::serve::http()
            .get(&format!("http://localhost:{port}/api/v1/tasks"))
            .call()
            .unwrap();
        assert_eq!(tasks.status(), 200);
        assert_eq!(tasks.body_mut().read_to_string().unwrap(), "[]");
        let said = fs_err::read_to_string(&log).unwrap();
        assert!(said.contains(&format!("listening on http://127.0.0.1:{port}")), "{said}");
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        )
        .unwrap();
        assert!(wait_child(&mut child, "serve after SIGTERM").success());

        let (code, _, err) = p.run(&["serve", "--addr", "no-such-host.invalid:7777"]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("\"no-such-host.invalid\" does not resolve"), "{err}");
        assert!(err.contains("hint: write HOST:PORT, e.g. localhost:7777"), "{err}");
        let (code, _, err) = p.run(&["serve", "--addr", "localhost"]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("no port"), "{err}");
    }

    /// As a user pasting a long spec as the task description, an agent that would get it through `{{prompt}}` on its command line is refused before any task exists, with the fix; with `{{prompt_file}}` the same run works.
    fn a_prompt_too_long_for_the_command_line_is_refused_before_the_task_exists() {
        let p = TestProject::new();
        let cfg = p.root().join(".baton/config.toml");
        let mut text = fs_err::read_to_string(&cfg).unwrap();
        text.push_str("\n[agents.echo]\ncommand = [\"sh\", \"-c\", \"printf %s \\\"$0\\\" | wc -c\", \"{{prompt}}\"]\n");
        fs_err::write(&cfg, &text).unwrap();
        p.workflow(
            "spec",
            "name = \"spec\"\n[[phase]]\nid = \"prepare\"\nrun = \"echo prepared > prepared.txt\"\n[[phase]]\nid = \"plan\"\nagent = \"echo\"\nprompt = \"Plan this: {{task}}\"\n",
        );
        let spec = "a requirement. ".repeat(8_000);
        for detach in [false, true] {
            let mut args = vec!["run", "spec", spec.as_str(), "--id", "long"];
            if detach {
                args.push("--detach");
            }
            let (code, out, err) = p.run(&args);
            assert_eq!(code, 2, "{out}\n{err}");
            assert!(
                err.contains("phase plan would give agent \"echo\" an argument of 120011 bytes"),
                "{err}"
            );
            assert!(err.contains("hint: use {{prompt_file}} instead of {{prompt}} in [agents.echo] command"), "{err}");
            assert!(err.contains("nothing was created"), "{err}");
            let (_, ls, _) = p.run(&["ls", "--all", "--json"]);
            assert_eq!(ls.trim(), "[]", "no task");
            assert!(!p.root().join(".baton/tasks/long").exists());
            assert!(!p.root().join("prepared.txt").exists(), "no phase ran");
        }
        // A short one goes through {{prompt}} as before.
        assert_eq!(p.run(&["run", "spec", "short", "--id", "short"]).0, 0);
        fs_err::write(
            &cfg,
            text.replace("printf %s \\\"$0\\\" | wc -c\", \"{{prompt}}\"", "wc -c < \\\"$0\\\"\", \"{{prompt_file}}\""),
        )
        .unwrap();
        let (code, _, err) = p.run(&["run", "spec", &spec, "--id", "long"]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(p.state("long")["status"], "COMPLETE");
    }

    /// As a developer rewinding and forking tasks, a restore that would lose nothing leaves no `refs/baton-saved/…` behind, says so, and one that replaces my work still saves it.
    fn a_restore_saves_the_work_tree_only_when_it_replaces_something() {
        let p = TestProject::new();
        p.workflow(
            "two",
            "name = \"two\"\n[[phase]]\nid = \"lint\"\nrun = \"true\"\n[[phase]]\nid = \"test\"\nrun = \"true\"\n",
        );
        p.git(&["add", "-A"]);
        p.git(&["commit", "-qm", "the workflow"]);
        let saved = || p.git(&["for-each-ref", "--format=%(refname)", "refs/baton-saved/"]);
        assert_eq!(p.run(&["run", "two", "x", "--id", "t"]).0, 0);
        let (code, _, err) = p.run(&["resume", "t", "--from", "lint"]);
        assert_eq!(code, 0, "{err}");
        assert!(err.contains("nothing there needed saving"), "{err}");
        let (code, _, err) = p.run(&["fork", "t", "--from", "test", "--id", "f"]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(saved(), "", "nothing was replaced, nothing saved");
        let notes: Vec<String> = p
            .journal("t")
            .iter()
            .filter_map(|e| e["text"].as_str().map(str::to_string))
            .filter(|t| t.starts_with("restoring the work tree"))
            .collect();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("nothing there needs saving"), "{notes:?}");
        let (code, out, _) = p.run(&["doctor"]);
        assert_eq!(code, 0, "{out}");

        // My own work in the tree: the restore keeps it in a saved ref.
        fs_err::write(p.root().join("mine.txt"), "my work\n").unwrap();
        let (code, _, err) = p.run(&["resume", "t", "--from", "lint"]);
        assert_eq!(code, 0, "{err}");
        let refs = saved();
        assert_eq!(refs.lines().count(), 1, "{refs}");
        assert!(err.contains(&format!("what was there is saved at {}", refs.trim())), "{err}");
        let files = p.git(&["ls-tree", "--name-only", refs.trim()]);
        assert!(files.lines().any(|f| f == "mine.txt"), "{files}");
    }

    /// As someone turning past sessions into training data, a phase that failed the same way on each retry gives one learning case that says how often it came, next to the different error that is a case of its own.
    fn session_learn_gives_one_case_per_error_however_often_it_was_retried() {
        let p = TestProject::new();
        p.workflow(
            "b",
            r#"name = "b"
[[phase]]
id = "build"
run = '''n=$(cat n 2>/dev/null || echo 0); echo $((n+1)) > n; if [ $n -lt 3 ]; then echo "error: the build broke at src/lib.rs:1$n (attempt $n)" >&2; exit 1; fi; echo built'''
max_attempts = 5
[[phase]]
id = "deploy"
run = '''if [ ! -f deployed ]; then touch deployed; echo 'error: the registry refused the image' >&2; exit 1; fi; echo deployed'''
max_attempts = 2
"#,
        );
        let (code, _, err) = p.run(&["run", "b", "Ship it", "--id", "ship"]);
        assert_eq!(code, 0, "{err}");
        let (code, out, err) = p.run(&["session", "learn", "ship"]);
        assert_eq!(code, 0, "{err}");
        let cases: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(cases.len(), 2, "{out}");
        assert_eq!(cases[0]["phase"], "build");
        assert_eq!(cases[0]["occurrences"], 3, "{out}");
        assert!(cases[0]["what_went_wrong"].as_str().unwrap().contains("the build broke"));
        assert_eq!(cases[0]["outcome"], "built");
        assert_eq!(cases[1]["phase"], "deploy");
        assert_eq!(cases[1]["occurrences"], 1);
        let (_, chat, _) = p.run(&["session", "learn", "ship", "--format", "chat"]);
        assert_eq!(chat.lines().count(), 2);
        assert!(chat.lines().next().unwrap().contains("This happened 3 times."), "{chat}");
    }

    /// As a developer whose projects live below /tmp (as the test suite's do), Gemini CLI is still told about baton's MCP server and its call reaches the task's journal: baton keeps that run's settings in a private folder of its own.
    fn gemini_cli_calls_baton_wherever_the_project_lives() {
        use baton_testkit::agents::Agent;
        use baton_testkit::model_server::{ModelServer, Reply};
        let server = ModelServer::start(vec![
            Reply::tool("mcp_baton_checkpoint", serde_json::json!({"note": "half way there"})),
            Reply::text("all done"),
        ]);
        let home = tempfile::tempdir().unwrap();
        let p = TestProject::new();
        assert!(
            p.root().starts_with(std::env::temp_dir()),
            "the project lives below the system temp folder"
        );
        let cfg = p.root().join(".baton/config.toml");
        let mut text = fs_err::read_to_string(&cfg).unwrap();
        text.push_str(&Agent::Gemini.baton_config("gem", &server, home.path()));
        fs_err::write(&cfg, text).unwrap();
        p.workflow(
            "w",
            "name = \"w\"\n[[phase]]\nid = \"work\"\nagent = \"gem\"\nmax_attempts = 1\nprompt = \"Work on {{task}}\"\n[[phase]]\nid = \"after\"\nrun = \"echo after\"\n",
        );
        p.git(&["add", "-A"]);
        p.git(&["commit", "-qm", "the agent and its workflow"]);
        let (code, out, err) = p.run(&["run", "w", "the thing", "--id", "g"]);
        assert_eq!(code, 0, "{out}\n{err}");
        assert!(!err.contains("not told about baton mcp"), "{err}");
        let notes: Vec<String> = p
            .journal("g")
            .iter()
            .filter(|e| e["kind"] == "note")
            .filter_map(|e| e["text"].as_str().map(str::to_string))
            .collect();
        assert!(
            notes.iter().any(|n| n == "checkpoint: half way there"),
            "Gemini CLI did not call baton's checkpoint: {notes:?}"
        );
        // Its settings were not in the project (Gemini CLI would skip them
        // there), and nothing of it is left in the work tree.
        assert!(
            !p.root()
                .join(".baton/tasks/g/mcp/gemini_cli_system_settings_path-settings.json")
                .exists()
        );
        let status = p.git(&["status", "--porcelain", "--untracked-files=all"]);
        assert_eq!(status, "", "nothing left in the work tree");
    }
}
