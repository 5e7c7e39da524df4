//! The session log's rules: render → parse → render is the same text for
//! any log (a property), hand edits are read, broken files are refused
//! with their line.

use super::*;
use proptest::prelude::*;

/// Text an agent might write: markdown with headings, callouts, fences,
/// escapes, tool-call look-alikes, odd spacing.
fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9 ,.:;!?'\"()\\[\\]{}<>/_*`~#>@|\\\\-]{0,40}",
        Just("## Plan".to_string()),
        Just("# title".to_string()),
        Just("> [!error] not mine".to_string()),
        Just(">[!note]".to_string()),
        Just("> quoted".to_string()),
        Just("**Tool calls:**".to_string()),
        Just("- `x` → y".to_string()),
        Just("```".to_string()),
        Just("```rust".to_string()),
        Just("~~~".to_string()),
        Just("\\# escaped".to_string()),
        Just("\\\\".to_string()),
        Just("---".to_string()),
        Just("  indented".to_string()),
        Just(String::new()),
        Just("  ".to_string()),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(line(), 0..8).prop_map(|l| l.join("\n"))
}

fn word() -> impl Strategy<Value = String> {
    "[a-z0-9][a-z0-9_.-]{0,10}"
}

fn any_scalar() -> impl Strategy<Value = String> {
    "[ -~]{0,20}"
}

fn block() -> impl Strategy<Value = Block> {
    prop_oneof![
        text().prop_map(Block::Prose),
        prop::collection::vec(
            (any_scalar(), prop::option::of(any_scalar()), any::<bool>())
                .prop_map(|(call, result, ok)| ToolLine { call, result, ok }),
            0..4
        )
        .prop_map(Block::ToolCalls),
        (
            "[a-z_]{0,12}",
            any_scalar(),
            prop::collection::vec(line(), 0..5)
        )
            .prop_map(|(kind, title, body)| Block::Callout(Callout { kind, title, body })),
    ]
}

fn section() -> impl Strategy<Value = Section> {
    (
        any_scalar(),
        prop::option::of(word()),
        prop::option::of(word()),
        prop::collection::vec(block(), 0..6),
    )
        .prop_map(|(name, agent, channel, blocks)| Section {
            name,
            agent,
            channel,
            blocks,
        })
}

fn front() -> impl Strategy<Value = Front> {
    (
        any_scalar().prop_filter("an id", |s| !s.trim().is_empty()),
        prop::option::of(any_scalar()),
        prop::option::of(any_scalar()),
        prop::sample::select(vec![
            LogStatus::Active,
            LogStatus::Completed,
            LogStatus::Failed,
            LogStatus::Paused,
            LogStatus::Crashed,
        ]),
        prop::collection::vec(any_scalar(), 0..3),
        any::<u64>(),
        prop::collection::vec(
            (word(), word(), prop::option::of(any_scalar()), any::<u32>()).prop_map(
                |(session, agent, model, tokens)| Subagent {
                    session,
                    agent,
                    model,
                    tokens: tokens.into(),
                },
            ),
            0..3,
        ),
        prop::option::of(any_scalar()),
        (
            prop::collection::vec((any_scalar(), any_scalar()), 0..3),
            prop::collection::vec(
                (
                    word(),
                    prop_oneof![
                        any_scalar(),
                        Just("true".to_string()),
                        Just("-12".to_string())
                    ],
                ),
                0..3,
            ),
        ),
    )
        .prop_map(
            |(
                session_id,
                workflow,
                channel,
                status,
                participants,
                tokens_used,
                subagents,
                resume_point,
                (labels, flags),
            )| Front {
                session_id,
                workflow,
                started: Some("2025-12-05T14:32:15Z".into()),
                ended: None,
                status,
                channel,
                participants,
                model: None,
                tokens_used,
                subagents,
                resume_point,
                labels,
                flags,
                extra: Vec::new(),
            },
        )
}

fn log() -> impl Strategy<Value = SessionLog> {
    (
        front(),
        any_scalar(),
        prop::collection::vec(block(), 0..3),
        prop::collection::vec(section(), 0..6),
    )
        .prop_map(|(front, title, intro, sections)| SessionLog {
            front,
            title,
            intro,
            sections,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]
    #[test]
    fn render_parse_render_is_the_same_text(log in log()) {
        let first = render(&log);
        let parsed = parse(&first).map_err(|e| TestCaseError::fail(format!("{e}\n{first}")))?;
        let second = render(&parsed);
        prop_assert_eq!(&first, &second);
        // And it stays so.
        prop_assert_eq!(parse(&second).unwrap(), parsed);
    }

    #[test]
    fn any_text_parses_or_is_refused_without_panicking(s in "(---\ntype: session\nsession_id: x\n---\n)?[ -~\n]{0,300}") {
        let _ = parse(&s);
    }
}

const SAMPLE: &str = "---
type: session
session_id: 2025-12-05-feature-impl
started: 2025-12-05T14:32:15Z
status: paused
channel: dev
participants: [orchestrator@1.0, researcher@1.2]
tokens_used: 12400
subagents:
  - {session: 2025-12-05-research-subtask, agent: researcher@1.2, model: haiku, tokens: 3200}
resume_point: phase-2
mood: cheerful
---
# Add the login form

## phase-1 @orchestrator #dev
Looked at the code.

**Tool calls:**
- `Read src/login.rs` → 120 lines
- `Bash cargo test` → **failed:** exit 101
- `Edit src/login.rs`

> [!decision] use the existing session store
> because it already has expiry

> [!summary] passed
> The form is planned.

## phase-2 @researcher
";

#[test]
fn a_log_reads_into_its_parts() {
    let log = parse(SAMPLE).unwrap();
    assert_eq!(log.front.session_id, "2025-12-05-feature-impl");
    assert_eq!(log.front.status, LogStatus::Paused);
    assert_eq!(
        log.front.participants,
        ["orchestrator@1.0", "researcher@1.2"]
    );
    assert_eq!(log.front.subagents[0].tokens, 3200);
    assert_eq!(log.front.subagents[0].model.as_deref(), Some("haiku"));
    assert_eq!(log.front.resume_point.as_deref(), Some("phase-2"));
    assert_eq!(log.front.extra, [("mood".into(), "cheerful".into())]);
    assert_eq!(log.title, "Add the login form");
    let s = &log.sections[0];
    assert_eq!(
        (s.name.as_str(), s.agent.as_deref(), s.channel.as_deref()),
        ("phase-1", Some("orchestrator"), Some("dev"))
    );
    let Block::ToolCalls(calls) = &s.blocks[1] else {
        panic!("{:?}", s.blocks)
    };
    assert_eq!(calls[0].result.as_deref(), Some("120 lines"));
    assert!(!calls[1].ok);
    assert_eq!(calls[2].result, None);
    assert_eq!(summary_of(s).as_deref(), Some("The form is planned."));
    assert_eq!(log.sections[1].agent.as_deref(), Some("researcher"));
    // What baton renders of it reads back the same.
    assert_eq!(render(&parse(&render(&log)).unwrap()), render(&log));
}

#[test]
fn hand_edits_are_read_as_far_as_they_make_sense() {
    let edited = "\n---\ntype: session\nsession_id: 'by hand'\n---\n\n## plan\nI did it myself.\n\n### a sub-heading\n- a list\n\n## build @codex\n> [!NOTE]- folded\n> text\n";
    let log = parse(edited).unwrap();
    assert_eq!(log.front.session_id, "by hand");
    assert_eq!(log.title, "by hand", "no title: the id stands in");
    assert_eq!(log.sections.len(), 2);
    assert_eq!(
        summary_of(&log.sections[0]).as_deref(),
        Some("I did it myself.\n\n### a sub-heading\n- a list")
    );
    assert_eq!(
        log.sections[1].callouts("NOTE").next().unwrap().title,
        "folded"
    );
}

#[test]
fn broken_logs_are_refused_with_their_line() {
    let cases = [
        ("# no frontmatter\n", 1, "starts with its frontmatter"),
        ("---\ntype: session\nsession_id: x\n", 1, "never closed"),
        ("---\ntype: session\n---\n", 2, "no `session_id`"),
        ("---\nsession_id: x\n---\n", 2, "no `type: session`"),
        (
            "---\ntype: session\nsession_id: x\nstatus: done\n---\n",
            4,
            "none of active",
        ),
        (
            "---\ntype: session\nsession_id: x\ntokens_used: lots\n---\n",
            4,
            "whole number",
        ),
        ("---\ntype: session\nsession_id: \"x\n---\n", 3, "broken"),
        (
            "---\ntype: session\nsession_id: x\nparticipants: [a, \"b]\n---\n",
            4,
            "not closed",
        ),
        (
            "---\ntype: session\nsession_id: x\njust words\n---\n",
            4,
            "not `key: value`",
        ),
        (
            "---\ntype: session\nsession_id: x\n---\n# t\n\n## p\n> [!bad kind] x\n",
            8,
            "should be a word",
        ),
    ];
    for (text, line, says) in cases {
        let e = parse(text).unwrap_err();
        assert_eq!(e.line, line, "{text:?}: {e}");
        assert!(e.message.contains(says), "{text:?}: {e}");
    }
}

#[test]
fn phases_merge_retries_and_see_loops() {
    let mut log = SessionLog::default();
    for name in ["plan", "build", "build", "test", "build", "test", "ship"] {
        log.sections.push(Section {
            name: name.into(),
            ..Section::default()
        });
    }
    let p = phases(&log);
    let names: Vec<&str> = p.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["plan", "build", "test", "ship"]);
    assert_eq!(p[1].sections, [1, 2, 4]);
    assert_eq!(p[2].loops_to.as_deref(), Some("build"));
    assert_eq!(p[1].loops_to, None);
}

#[test]
fn errors_and_corrections_become_learning_cases() {
    let log = parse("---\ntype: session\nsession_id: s\n---\n# t\n\n## build @cc\nRan the tests.\n\n**Tool calls:**\n- `Bash cargo test` → **failed:** exit 101\n\n> [!error] attempt 1 failed\n> 3 tests failed\n\n> [!user] ana answered\n> mock the clock, do not sleep\n\n## build @cc\n\n> [!summary] passed\n> all green\n\n## review\n> [!user] bo\n> name it parse_line\n").unwrap();
    let c = corrections(&log);
    assert_eq!(c.len(), 2, "{c:?}");
    assert_eq!(c[0].phase, "build");
    assert_eq!(
        c[0].context,
        "Ran the tests.\ncalled Bash cargo test → failed: exit 101"
    );
    assert_eq!(
        c[0].error.as_deref(),
        Some("attempt 1 failed\n3 tests failed")
    );
    assert_eq!(
        c[0].correction.as_deref(),
        Some("ana answered\nmock the clock, do not sleep")
    );
    assert_eq!(
        c[0].outcome.as_deref(),
        Some("all green"),
        "the phase's end, after the retry"
    );
    assert_eq!(c[1].error, None);
    assert_eq!(c[1].correction.as_deref(), Some("bo\nname it parse_line"));
}

/// Found by the fuzz target: a frontmatter key of odd characters with no
/// value swallowed the line after it on the second reading.
#[test]
fn odd_keys_by_hand_do_not_swallow_what_follows() {
    let text = "---\ntype: session\nsession_id: s\n\"odd:\n sub: x\nworkflow: w\n-s: done\nmood:\nnote: kept\n---\n# t\n";
    let log = parse(text).unwrap();
    assert_eq!(log.front.workflow.as_deref(), Some("w"));
    assert_eq!(
        log.front.extra,
        [
            ("mood".to_string(), String::new()),
            ("note".to_string(), "kept".to_string())
        ]
    );
    let once = render(&log);
    assert_eq!(render(&parse(&once).unwrap()), once);
}

/// baton's own child sessions (a review's turn) are listed with the tokens
/// their agent used, and linked or embedded at the end of the log.
#[test]
fn child_sessions_are_listed_with_their_tokens() {
    use journal::{ChildSession, SubagentMode, with_children};
    let child = ChildSession {
        session: "c1-r1-t1".into(),
        agent: "review".into(),
        title: "review 1 of c1".into(),
        tokens: 4210,
        blocks: Vec::new(),
    };
    let log = with_children(
        parse(SAMPLE).unwrap(),
        std::slice::from_ref(&child),
        SubagentMode::Embed,
    );
    let text = render(&log);
    assert!(
        text.contains("  - {session: c1-r1-t1, agent: review, tokens: 4210}"),
        "{text}"
    );
    assert!(
        text.ends_with("> [!subagent] @review (review 1 of c1)\n> ![[c1-r1-t1]]\n"),
        "{text}"
    );
    // Listed once, however often the log is rendered with it.
    let again = with_children(log, std::slice::from_ref(&child), SubagentMode::Embed);
    assert_eq!(render(&again), text);
    // Inline: what its log says is in the callout, with the link.
    let said = ChildSession {
        blocks: vec![
            Block::Prose("The diff is fine.".into()),
            Block::ToolCalls(vec![ToolLine {
                call: "git diff".into(),
                result: Some("2 files".into()),
                ok: true,
            }]),
        ],
        ..child
    };
    let text = render(&with_children(
        parse(SAMPLE).unwrap(),
        &[said],
        SubagentMode::Inline,
    ));
    assert!(
        text.ends_with("> [!subagent] @review (review 1 of c1)\n> The diff is fine.\n>\n> - `git diff` → 2 files\n>\n> [[c1-r1-t1]]\n"),
        "{text}"
    );
}

/// A team's log: the lead's part, each teammate's tasks (a blocked one as
/// an error), its turns linked with their tokens, and the newest messages
/// with a pointer to the earlier ones; it reads back to itself.
#[test]
fn a_teams_log_links_its_teammates_turns() {
    use crate::team::{
        self, Event, Lead, Message, MessageType, NewTask, NewTeammate, Record, Role, TeamId,
    };
    use crate::time::Timestamp;
    use journal::{ChildSession, SubagentMode};
    let id = TeamId::parse("crew").unwrap();
    let events = [
        Event::Created {
            lead: Lead {
                session_id: "lead-1".into(),
                owner: "pid 1 on vm".into(),
                attached_at: Timestamp(0),
            },
            teammates: vec![
                NewTeammate {
                    name: "ana".into(),
                    role: Role::Engineer,
                    agent: Some("cc".into()),
                },
                NewTeammate {
                    name: "bo".into(),
                    role: Role::Tester,
                    agent: None,
                },
            ],
            tasks: ["Schema", "Tests", "Docs"]
                .iter()
                .enumerate()
                .map(|(n, t)| NewTask {
                    id: format!("t{}", n + 1),
                    title: t.to_string(),
                    dependencies: Vec::new(),
                })
                .collect(),
            facts: Default::default(),
        },
        Event::TeammateStarted {
            name: "ana".into(),
            instance: "crew-ana".into(),
        },
        Event::TaskAssigned {
            task: "t1".into(),
            to: "ana".into(),
        },
        Event::TaskCompleted {
            task: "t1".into(),
            by: "ana".into(),
        },
        Event::TaskAssigned {
            task: "t2".into(),
            to: "bo".into(),
        },
        Event::TaskBlocked {
            task: "t2".into(),
            by: "bo".into(),
            reason: "the schema has no index".into(),
        },
    ];
    let records: Vec<Record> = events
        .into_iter()
        .enumerate()
        .map(|(n, event)| Record {
            seq: n as u64 + 1,
            ts: Timestamp(n as i64 * 1000),
            event,
        })
        .collect();
    let t = team::replay(&id, &records).unwrap();
    let turn = |session: &str, tokens| ChildSession {
        session: session.into(),
        agent: "ana".into(),
        title: "You are ana".into(),
        tokens,
        blocks: Vec::new(),
    };
    let messages: Vec<Message> = (51..=60)
        .map(|seq| Message {
            msg_id: format!("m{seq}"),
            seq,
            from: "bo".into(),
            to: "lead".into(),
            ts_ms: 0,
            kind: MessageType::Question,
            subject: "t2".into(),
            body: "one index\nor two?".into(),
            acked_by: Vec::new(),
        })
        .collect();
    let links = super::team::TeamLinks {
        turns: vec![(
            "ana".into(),
            vec![turn("crew-ana", 1200), turn("crew-ana-t2", 300)],
        )],
        messages,
        message_count: 60,
    };
    let log = super::team::of_team(&t, &links, SubagentMode::Link);
    let text = render(&log);
    assert_eq!(super::team::team_of(&log), Some("crew"));
    assert_eq!(log.front.session_id, "team@crew");
    assert_eq!(log.front.tokens_used, 1500);
    let names: Vec<&str> = log.sections.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["lead", "ana", "bo", "mailbox"]);
    for want in [
        "  - {session: crew-ana-t2, agent: ana, tokens: 300}",
        "Not assigned yet:\n- t3 Docs: pending",
        "- t1 Schema: completed",
        "> [!subagent] @ana (engineer, turn 2)\n> You are ana\n> [[crew-ana-t2]]",
        "The tester, run by hand.\n\n- t2 Tests: blocked",
        "> [!error] t2 is blocked\n> the schema has no index",
        "50 earlier message(s) are in the mailbox: `baton team msg ls crew --limit 60`.",
        "bo → lead (question) t2: one index or two?",
    ] {
        assert!(text.contains(want), "{want:?} not in:\n{text}");
    }
    assert_eq!(render(&parse(&text).unwrap()), text);
}

/// What people write by hand, as YAML and markdown let them: block lists
/// and maps in the frontmatter, `---` between phases.
#[test]
fn block_yaml_and_separators_are_read_as_written_by_hand() {
    let text = "---\ntype: session\nsession_id: by-hand\nstatus: paused\nparticipants:\n  - orchestrator@1.0\n  - researcher@1.2\nsubagents:\n  - session: sub-1\n    agent: researcher@1.2\n    tokens: 3200\n  - {session: sub-2, agent: x}\nlabels:\n  channel: dev\n  pr: \"7\"\nflags:\n  tests: true\nresume_point: phase-2\n---\n# Add the login form\n\n## Research @orchestrator\nThe form is in src/login.rs.\n\n---\n\n## Write it @researcher\n\n***\n";
    let log = parse(text).unwrap();
    assert_eq!(
        log.front.participants,
        ["orchestrator@1.0", "researcher@1.2"]
    );
    assert_eq!(log.front.subagents.len(), 2);
    assert_eq!(log.front.subagents[0].session, "sub-1");
    assert_eq!(log.front.subagents[0].tokens, 3200);
    assert_eq!(log.front.subagents[1].agent, "x");
    assert_eq!(
        log.front.labels,
        [("channel".into(), "dev".into()), ("pr".into(), "7".into())]
    );
    assert_eq!(log.front.flags, [("tests".into(), "true".into())]);
    assert_eq!(
        summary_of(&log.sections[0]).as_deref(),
        Some("The form is in src/login.rs."),
        "the separator is no part of the phase"
    );
    assert!(log.sections[1].blocks.is_empty(), "{:?}", log.sections[1]);
    // A list at its key's column, and an empty one.
    let log =
        parse("---\ntype: session\nsession_id: s\nparticipants:\n- a\n- b\nsubagents:\n---\n")
            .unwrap();
    assert_eq!(log.front.participants, ["a", "b"]);
    // What does not read is refused with its line.
    let e =
        parse("---\ntype: session\nsession_id: s\nparticipants:\n  - a\n  b\n---\n").unwrap_err();
    assert_eq!(e.line, 6, "{e}");
    // A `---` in an agent's text stays its text.
    let mut log = SessionLog::default();
    log.front.session_id = "s".into();
    log.sections.push(Section {
        name: "p".into(),
        blocks: vec![Block::Prose("a rule ends it\n---".into())],
        ..Section::default()
    });
    let once = render(&log);
    assert!(once.contains("\n\\---\n"), "{once}");
    assert_eq!(parse(&once).unwrap().sections, log.sections);
}

/// The log says how each phase was defined where its story would not:
/// the command it runs, its `when`, a wait; codify turns that back into
/// the workflow the session ran.
#[test]
fn codify_keeps_commands_conditions_and_skips() {
    use crate::state::{PhaseState, TaskState};
    let wf = crate::workflow::Workflow::parse(
        "name = \"w\"\n[flags]\nsecurity = false\nmvp = true\n[[phase]]\nid = \"build\"\nrun = \"\"\"set -e\ncargo build\"\"\"\n[[phase]]\nid = \"security\"\nwhen = \"flags.security\"\nprompt = \"Look.\"\n[[phase]]\nid = \"review\"\nwhen = \"!flags.mvp || flags.security\"\nrun = \"echo reviewed\"\n[[phase]]\nid = \"soak\"\nwait = { duration = \"2s\" }\n",
        "w.toml",
        "w",
        &|_| Err("none".into()),
    )
    .unwrap();
    let ts = crate::Timestamp::from_millis(1_700_000_000_000);
    let mut state = TaskState {
        task_id: crate::TaskId::parse("t").unwrap(),
        workflow: "w".into(),
        definition_hash: String::new(),
        description: "Do it".into(),
        project_name: "p".into(),
        created_at: ts,
        updated_at: ts,
        status: crate::state::TaskStatus::Running,
        flags: [
            ("security".to_string(), serde_json::json!(false)),
            ("mvp".to_string(), serde_json::json!(true)),
        ]
        .into(),
        labels: Default::default(),
        tech_stack: serde_json::Value::Null,
        phases: wf
            .phases
            .iter()
            .map(|p| PhaseState::new(p.id.clone()))
            .collect(),
        iteration_counts: Default::default(),
        blockers: Vec::new(),
        resume_note: None,
        failure: None,
        agent: None,
        handoff_pending: false,
        imported: None,
        auto_restarts: Vec::new(),
        last_seq: 0,
    };
    let rec = |seq: u64, event: crate::Event| crate::EventRecord { seq, ts, event };
    let records = vec![
        rec(
            1,
            crate::Event::PhaseStarted {
                phase: crate::PhaseId::parse("build").unwrap(),
                attempt: 1,
                iteration: 0,
                checkpoint: None,
            },
        ),
        rec(
            2,
            crate::Event::PhasePassed {
                phase: crate::PhaseId::parse("build").unwrap(),
                attempt: 1,
                summary: "built".into(),
                output: "built".into(),
                files_changed: Vec::new(),
            },
        ),
        rec(
            3,
            crate::Event::PhaseSkipped {
                phase: crate::PhaseId::parse("security").unwrap(),
                reason: "its `when` condition is false".into(),
            },
        ),
        rec(
            4,
            crate::Event::PhaseSkipped {
                phase: crate::PhaseId::parse("review").unwrap(),
                reason: "its `when` condition is false".into(),
            },
        ),
    ];
    let log = journal::of_task(
        &state,
        &records,
        Some(&wf),
        &[],
        &[],
        journal::SubagentMode::Link,
    );
    let md = render(&log);
    assert!(
        md.contains(
            "\n## build\n\n> [!command]\n> set -e\n> cargo build\n\n> [!summary] passed\n> built\n"
        ),
        "{md}"
    );
    assert!(md.contains("\n## security\n\n> [!when] flags.security\n\n_Skipped: its `when` condition is false._\n"), "{md}");
    assert!(md.contains("flags: {mvp: true, security: false}\n"), "{md}");
    let back = parse(&md).unwrap();
    let draft = codify::draft(&back, "again");
    let toml = codify::to_toml(&draft, &[]);
    assert!(
        toml.contains("[flags]\nmvp = true\nsecurity = false\n"),
        "{toml}"
    );
    assert!(
        toml.contains("id = \"build\"\nrun = '''\nset -e\ncargo build'''\n"),
        "{toml}"
    );
    assert!(
        toml.contains("id = \"security\"\nwhen = \"flags.security\"\nprompt = "),
        "{toml}"
    );
    assert!(
        toml.contains(
            "id = \"review\"\nwhen = \"!flags.mvp || flags.security\"\nrun = \"echo reviewed\"\n"
        ),
        "{toml}"
    );
    let again =
        crate::workflow::Workflow::parse(&toml, "again.toml", "again", &|_| Err("none".into()))
            .unwrap();
    assert_eq!(
        again.phases.len(),
        3,
        "soak never started: the log tells nothing of it"
    );

    // The runner died in the next phase: the log says so at that phase.
    state.phases[0].status = crate::state::PhaseStatus::Pass;
    state.phases[1].status = crate::state::PhaseStatus::Skipped;
    state.phases[2].status = crate::state::PhaseStatus::Skipped;
    state.phases[3].status = crate::state::PhaseStatus::InProgress;
    state.phases[3].attempt = 1;
    let mut log = journal::of_task(
        &state,
        &records,
        Some(&wf),
        &[],
        &[],
        journal::SubagentMode::Link,
    );
    assert_eq!(log.front.resume_point.as_deref(), Some("soak"));
    journal::crashed(&mut log, &state, "pid 7 on vm has exited");
    let md = render(&log);
    assert!(md.contains("status: crashed\n"), "{md}");
    assert!(md.contains("\n## soak\n\n> [!error] the runner died while attempt 1 ran\n> pid 7 on vm has exited\n>\n> The task is CRASHED: `baton resume t` runs soak again from its start.\n"), "{md}");
    assert_eq!(parse(&md).unwrap().front.status, LogStatus::Crashed);
}
