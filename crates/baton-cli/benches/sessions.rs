//! Session log benchmark.
//!
//! `cargo bench -p baton-cli --bench sessions`
//!
//! 1. **Render and parse a 50 MB log.** baton's renderer and parser on a
//!    log of about 50 MB (sections of agent prose with code, tool calls,
//!    callouts), in MB/s, next to reading the same text with pulldown-cmark
//!    alone (every event pulled) in the same run: the baseline a markdown
//!    reader cannot beat by much, since it does less (no model, no escapes).
//! 2. **`session query` from the TOON index.** A query over 10,000 session
//!    logs answered from `.baton/index.toon` (read, decoded, filtered), next
//!    to the same query answered by reading and parsing the 10,000
//!    markdown files (8 sections each, about 6 KB: a modest task), in the
//!    same run; the median of several runs each, the files in the page
//!    cache. Goal: the index at least 20x faster.

mod common;

use baton_core::session_log::index::{Query, row_of};
use baton_core::session_log::{
    Block, Callout, Front, LogStatus, Section, SessionLog, ToolLine, parse, render,
};
use baton_engine::render::SessionIndex;
use common::{median, tempdir};
use std::time::Instant;

const RUNS: usize = 5;
const SESSIONS: usize = 10_000;
/// Sections per session in the query benchmark: a modest task (a real
/// agent session's log is often longer).
const PHASES: usize = 8;

fn section(i: usize) -> Section {
    let prose = format!(
        "Looked at module {i} and the tests around it. The parser keeps a cursor per line;\n\
         the bug is that a heading inside a fenced block was read as structure.\n\n\
         ```rust\n## not a heading {i}\nfn parse_line(l: &str) -> Option<Heading> {{ l.strip_prefix(\"## \").map(Heading::new) }}\n```\n\n\
         - the fix keeps fences apart\n- the tests cover it"
    );
    Section {
        name: format!("phase-{}", i % 7),
        agent: Some(["claude", "codex", "gemini"][i % 3].into()),
        channel: Some("dev".into()),
        blocks: vec![
            Block::Prose(prose),
            Block::ToolCalls(
                (0..4)
                    .map(|k| ToolLine {
                        call: format!("Read src/module_{i}/part_{k}.rs"),
                        result: Some(format!("{} lines", 100 + k)),
                        ok: k != 3,
                    })
                    .collect(),
            ),
            Block::Callout(Callout::new(
                "decision",
                format!("keep fences apart in module {i}"),
                "because a heading in code is code\n\nand the tests say so",
            )),
            Block::Callout(Callout::new(
                "summary",
                "passed",
                &format!("module {i} fixed"),
            )),
        ],
    }
}

fn front(id: &str, status: LogStatus, agent: &str, day: usize) -> Front {
    Front {
        session_id: id.into(),
        workflow: Some("fix".into()),
        started: Some(format!(
            "2026-{:02}-{:02}T10:00:00Z",
            1 + (day / 7) % 12,
            1 + day % 28
        )),
        status,
        participants: vec![format!("{agent}@2.1.0")],
        tokens_used: 12_400,
        resume_point: Some("phase-3".into()),
        ..Front::default()
    }
}

fn main() {
    // 1. Render and parse ~50 MB.
    let mut log = SessionLog {
        front: front("big", LogStatus::Active, "claude", 0),
        title: "A very long session".into(),
        ..SessionLog::default()
    };
    let per = render(&SessionLog {
        sections: (0..100).map(section).collect(),
        ..SessionLog::default()
    })
    .len() as f64
        / 100.0;
    let count = (50.0 * 1024.0 * 1024.0 / per).ceil() as usize;
    log.sections = (0..count).map(section).collect();
    let text = render(&log);
    let mb = text.len() as f64 / (1024.0 * 1024.0);
    let mut render_s = Vec::new();
    let mut parse_s = Vec::new();
    let mut cmark_s = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        assert_eq!(render(&log).len(), text.len());
        render_s.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let parsed = parse(&text).expect("the log parses");
        parse_s.push(t.elapsed().as_secs_f64());
        assert_eq!(parsed.sections.len(), count);
        let t = Instant::now();
        let events = pulldown_cmark::Parser::new(&text).count();
        cmark_s.push(t.elapsed().as_secs_f64());
        assert!(events > count);
    }
    let (render_s, parse_s, cmark_s) = (median(render_s), median(parse_s), median(cmark_s));
    println!("session log of {mb:.1} MB ({count} sections; medians of 3):");
    println!("  render                 {:>8.1} MB/s", mb / render_s);
    println!("  parse (baton)          {:>8.1} MB/s", mb / parse_s);
    println!("  pulldown-cmark alone   {:>8.1} MB/s", mb / cmark_s);
    println!(
        "  parse / pulldown-cmark {:>8.2}  (1.0 = as fast as reading the markdown alone)",
        cmark_s / parse_s
    );

    // 2. A query over 10,000 sessions: the index next to the markdown.
    let dir = tempdir();
    let baton = dir.path().join(".baton");
    let sessions = baton.join("sessions");
    std::fs::create_dir_all(&sessions).expect("mkdir");
    for i in 0..SESSIONS {
        let status = [LogStatus::Completed, LogStatus::Failed, LogStatus::Paused][i % 3];
        let agent = ["claude", "codex", "gemini", "qwen"][i % 4];
        let log = SessionLog {
            front: front(&format!("s-{i:05}"), status, agent, i),
            title: format!("Fix issue {i} in the parser"),
            intro: Vec::new(),
            sections: (0..PHASES).map(|k| section(i * PHASES + k)).collect(),
        };
        std::fs::write(sessions.join(format!("s-{i:05}.md")), render(&log)).expect("write");
    }
    let index = SessionIndex::of(&baton);
    let t = Instant::now();
    index.rebuild().expect("index");
    let build_s = t.elapsed().as_secs_f64();
    let q = Query {
        status: Some("failed".into()),
        agent: Some("codex".into()),
        since: Some("2026-03-01".into()),
        until: Some("2026-09-30".into()),
        text: Some("parser".into()),
    };
    let mut from_index = Vec::new();
    let mut from_files = Vec::new();
    for _ in 0..RUNS {
        let t = Instant::now();
        let a: Vec<String> = index
            .read()
            .expect("index reads")
            .into_iter()
            .filter(|r| q.matches(r))
            .map(|r| r.id)
            .collect();
        from_index.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let mut b: Vec<String> = std::fs::read_dir(&sessions)
            .expect("dir")
            .filter_map(|e| {
                let text = std::fs::read_to_string(e.ok()?.path()).ok()?;
                let row = row_of(&parse(&text).ok()?, 0);
                q.matches(&row).then_some(row.id)
            })
            .collect();
        from_files.push(t.elapsed().as_secs_f64());
        b.sort();
        let mut a = a;
        a.sort();
        assert_eq!(a, b, "the index and the files answer the same");
        assert!(!a.is_empty());
    }
    let (idx, files) = (median(from_index), median(from_files));
    let size = std::fs::metadata(index.path()).expect("index").len();
    println!(
        "session query over {SESSIONS} sessions (status, agent, dates, text; index {} KB, built in {:.0} ms):",
        size / 1024,
        build_s * 1000.0
    );
    println!("  from .baton/index.toon  {:>8.1} ms", idx * 1000.0);
    println!("  scanning the markdown   {:>8.1} ms", files * 1000.0);
    println!(
        "  ratio                   {:>8.1}x  (goal: at least 20x)",
        files / idx
    );
}
