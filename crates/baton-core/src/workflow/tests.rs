use super::*;

fn parse(src: &str) -> Result<Workflow, WorkflowError> {
    Workflow::parse(src, "wf.toml", "wf", &|p| {
        if p == "prompts/x.md" {
            Ok("Do {{task}}".into())
        } else {
            Err("no such file".into())
        }
    })
}

#[test]
fn parses_spec_example() {
    let wf = parse(
        r#"
name = "wf"
[defaults]
agent = "claude"
timeout = "30m"
max_attempts = 2
[flags]
security = false
[[phase]]
id = "analyze"
prompt = "Analyze {{task}}\n{{brief}}"
[[phase]]
id = "execute"
prompt_file = "prompts/x.md"
agent = "codex"
[[phase]]
id = "validate"
run = "cargo test"
loop_to = "execute"
max_iterations = 3
[[phase]]
id = "security"
when = "flags.security"
run = "true"
[[phase]]
id = "approve"
wait = { human = "Ship it?", options = ["yes", "no"] }
"#,
    )
    .unwrap();
    assert_eq!(wf.phases.len(), 5);
    assert_eq!(wf.phases[1].needs[0].as_str(), "analyze");
    assert_eq!(wf.phases[1].agent.as_deref(), Some("codex"));
    assert_eq!(wf.phases[0].agent.as_deref(), Some("claude"));
    assert_eq!(wf.phases[2].timeout_ms, Some(1_800_000));
    assert_eq!(wf.phases[2].max_attempts, 2);
    assert!(
        matches!(&wf.phases[1].kind, PhaseKind::Prompt { template, .. } if template == "Do {{task}}")
    );
}

fn err(src: &str) -> WorkflowError {
    parse(src).expect_err("should be invalid")
}

#[test]
fn unknown_key_has_line_and_column() {
    let e = err("name = \"wf\"\n[[phase]]\nid = \"a\"\nrun = \"true\"\nrnu = 1\n");
    assert_eq!((e.line, e.column), (5, 1), "{e}");
    assert!(e.message.contains("unknown field `rnu`"), "{e}");
}

#[test]
fn unknown_needs_and_loop_to() {
    let e = err("name = \"wf\"\n[[phase]]\nid = \"a\"\nrun = \"true\"\nneeds = [\"zz\"]\n");
    assert_eq!(e.line, 5);
    assert!(e.message.contains("unknown phase \"zz\""));
    let e = err(
        "name = \"wf\"\n[[phase]]\nid = \"a\"\nrun = \"true\"\n[[phase]]\nid = \"b\"\nrun = \"x\"\nloop_to = \"c\"\n",
    );
    assert_eq!(e.line, 8);
}

#[test]
fn cycles_duplicates_and_templates() {
    let e = err(
        "name = \"wf\"\n[[phase]]\nid = \"a\"\nrun = \"true\"\nneeds = [\"b\"]\n[[phase]]\nid = \"b\"\nrun = \"true\"\nneeds = [\"a\"]\n",
    );
    assert!(e.message.contains("cycle"), "{e}");
    let e = err(
        "name = \"wf\"\n[[phase]]\nid = \"a\"\nrun = \"true\"\n[[phase]]\nid = \"a\"\nrun = \"true\"\n",
    );
    assert!(e.message.contains("duplicate phase id"), "{e}");
    assert_eq!(e.line, 6);
    let e = err("name = \"wf\"\n[[phase]]\nid = \"a\"\nprompt = \"hi {{nope}}\"\n");
    assert!(
        e.message.contains("unknown template variable {{nope}}"),
        "{e}"
    );
    assert_eq!((e.line, e.column), (4, 10));
    let e = err("name = \"wf\"\n[[phase]]\nid = \"a\"\nrun = \"echo {{flags.x}}\"\n");
    assert!(e.message.contains("flags.x"), "{e}");
}

#[test]
fn loop_to_must_be_an_ancestor() {
    let e = err(
        "name = \"wf\"\n[[phase]]\nid = \"a\"\nrun = \"true\"\nloop_to = \"b\"\n[[phase]]\nid = \"b\"\nrun = \"true\"\n",
    );
    assert!(e.message.contains("not one of the phases it needs"), "{e}");
}

#[test]
fn name_must_match_and_phase_ids_are_safe() {
    let e = err("name = \"other\"\n[[phase]]\nid = \"a\"\nrun = \"true\"\n");
    assert!(e.message.contains("must equal the file name"));
    let e = err("name = \"wf\"\n[[phase]]\nid = \"../x\"\nrun = \"true\"\n");
    assert!(e.message.contains("invalid phase id"), "{e}");
    let e = err("name = \"wf\"\n[[phase]]\nid = \"a\"\nprompt_file = \"../../etc/passwd\"\n");
    assert!(e.message.contains("inside .baton"), "{e}");
}

#[test]
fn zero_timeouts_are_refused() {
    let e = err("name = \"wf\"\n[[phase]]\nid = \"a\"\nrun = \"true\"\ntimeout = \"0s\"\n");
    assert_eq!((e.line, e.column), (5, 11), "{e}");
    assert!(e.message.contains("must be more than 0"), "{e}");
    let e = err(
        "name = \"wf\"\n[defaults]\ntimeout = \"0ms\"\n[[phase]]\nid = \"a\"\nrun = \"true\"\n",
    );
    assert_eq!(e.line, 3, "{e}");
    assert!(e.message.contains("must be more than 0"), "{e}");
    let wf =
        parse("name = \"wf\"\n[[phase]]\nid = \"a\"\nrun = \"true\"\ntimeout = \"1s\"\n").unwrap();
    assert_eq!(wf.phases[0].timeout_ms, Some(1000));
}

#[test]
fn keys_without_effect_on_the_phase_kind_are_refused() {
    let head = "name = \"wf\"\n[[phase]]\nid = \"a\"\nrun = \"true\"\n[[phase]]\nid = \"w\"\nwait = { human = \"ok?\" }\n";
    for (key, line) in [
        ("timeout = \"5m\"", "timeout"),
        ("max_attempts = 2", "max_attempts"),
        ("on_failure = \"skip\"", "on_failure"),
        ("agent = \"claude\"", "agent"),
        ("loop_to = \"a\"", "loop_to"),
    ] {
        let e = err(&format!("{head}{key}\n"));
        assert_eq!((e.line, e.column), (8, line.len() + 4), "{key}: {e}");
        assert!(
            e.message
                .contains(&format!("`{line}` has no effect on a wait phase")),
            "{key}: {e}"
        );
        assert!(e.message.contains("\"w\""), "{e}");
    }
    let e = err("name = \"wf\"\n[[phase]]\nid = \"a\"\nrun = \"true\"\nagent = \"claude\"\n");
    assert_eq!((e.line, e.column), (5, 9), "{e}");
    assert!(
        e.message
            .contains("`agent` has no effect on a `run` (command) phase"),
        "{e}"
    );
    // Defaults still apply to every phase without complaint, and agent
    // phases take all of these keys.
    parse(
        "name = \"wf\"\n[defaults]\nagent = \"claude\"\ntimeout = \"5m\"\nmax_attempts = 2\non_failure = \"skip\"\n[[phase]]\nid = \"a\"\nrun = \"true\"\ntimeout = \"1m\"\nmax_attempts = 3\n[[phase]]\nid = \"p\"\nprompt = \"x\"\nagent = \"codex\"\ntimeout = \"1m\"\nloop_to = \"a\"\n[[phase]]\nid = \"w\"\nwait = { duration = \"1s\" }\n",
    )
    .unwrap();
}

/// Found by fuzz/fuzz_targets/workflow_toml.rs: a duration longer than
/// 64 bits of milliseconds was cut (a timeout of 584 million years
/// became 384 ms), and one past `i64::MAX` ms made a wait's deadline
/// one that had already passed.
#[test]
fn durations_too_long_for_a_timestamp_are_refused() {
    assert_eq!(
        parse_duration("9223372036854775s 807ms"),
        Ok(i64::MAX as u64)
    );
    for s in [
        "9223372036854775s 808ms",
        "18446744073709552s",
        "1000000000000000000s",
    ] {
        let e = parse_duration(s).unwrap_err();
        assert!(e.contains("too long"), "{s}: {e}");
    }
    let e = err(
        "name = \"wf\"\n[[phase]]\nid = \"a\"\nrun = \"true\"\ntimeout = \"18446744073709552s\"\n",
    );
    assert_eq!((e.line, e.column), (5, 11), "{e}");
    let e =
        err("name = \"wf\"\n[[phase]]\nid = \"w\"\nwait = { duration = \"9223372036854776s\" }\n");
    assert!(e.message.contains("too long"), "{e}");
}

#[test]
fn hash_changes_with_content() {
    let a = parse("name = \"wf\"\n[[phase]]\nid = \"a\"\nrun = \"true\"\n").unwrap();
    let b = parse("name = \"wf\"\n[[phase]]\nid = \"a\"\nrun = \"false\"\n").unwrap();
    assert_ne!(a.hash(), b.hash());
    assert_eq!(a.hash(), a.clone().hash());
}

#[test]
fn an_agent_phase_may_run_as_a_coding_instance() {
    let wf = parse(
        "name = \"wf\"\n[[phase]]\nid = \"a\"\nprompt = \"x\"\ninstance = { require_review = true, max_reviews = 2, timeout = \"2h\" }\n",
    )
    .unwrap();
    let spec = wf.phases[0].instance.clone().unwrap();
    assert_eq!(spec.require_review, Some(true));
    assert_eq!(spec.max_reviews, Some(2));
    assert_eq!(spec.timeout_ms, Some(7_200_000));
    let e =
        parse("name = \"wf\"\n[[phase]]\nid = \"a\"\nprompt = \"x\"\ninstance = { reviews = 2 }\n")
            .unwrap_err();
    assert!(e.message.contains("unknown field `reviews`"), "{e}");
    // Definitions pinned before `instance` existed keep their hash.
    let plain = parse("name = \"wf\"\n[[phase]]\nid = \"a\"\nprompt = \"x\"\n").unwrap();
    let json = serde_json::to_string(&plain).unwrap();
    assert!(!json.contains("instance"), "{json}");
}
