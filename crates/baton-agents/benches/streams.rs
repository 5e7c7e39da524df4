//! Stream parsing must never be the bottleneck: each adapter's parser on a
//! ~100 MB stream built from output recorded from the real CLI, next to
//! plain `serde_json` line parsing (`Value`) of the same bytes.
//!
//! `cargo bench -p baton-agents --bench streams`

use baton_agents::clis::{Claude, Codex, Copilot, Droid, Gemini, Opencode, Qwen};
use baton_agents::{Cli, StreamParser};

const CLAUDE_: Cli = &Claude;
const CODEX_: Cli = &Codex;
const GEMINI_: Cli = &Gemini;
const QWEN_: Cli = &Qwen;
const OPENCODE_: Cli = &Opencode;
const COPILOT_: Cli = &Copilot;
const DROID_: Cli = &Droid;
use std::time::Instant;

const TARGET_BYTES: usize = 100 << 20;

/// The recorded stream repeated (ids varied) to about 100 MB.
fn stream(file: &str) -> String {
    let one = match file {
        "claude-2.1.330-write.jsonl" => {
            include_str!("../tests/fixtures/streams/claude-2.1.330-write.jsonl")
        }
        "codex-0.169.0-write.jsonl" => {
            include_str!("../tests/fixtures/streams/codex-0.169.0-write.jsonl")
        }
        "gemini-0.61.0-write.jsonl" => {
            include_str!("../tests/fixtures/streams/gemini-0.61.0-write.jsonl")
        }
        "qwen-0.15.10-write.jsonl" => {
            include_str!("../tests/fixtures/streams/qwen-0.15.10-write.jsonl")
        }
        "opencode-1.18.33-write.jsonl" => {
            include_str!("../tests/fixtures/streams/opencode-1.18.33-write.jsonl")
        }
        "copilot-1.0.102-write.jsonl" => {
            include_str!("../tests/fixtures/streams/copilot-1.0.102-write.jsonl")
        }
        "droid-0.225.2-write.jsonl" => {
            include_str!("../tests/fixtures/streams/droid-0.225.2-write.jsonl")
        }
        other => panic!("no fixture {other}"),
    };
    let mut out = String::with_capacity(TARGET_BYTES + one.len());
    let mut i = 0u64;
    while out.len() < TARGET_BYTES {
        out.push_str(&one.replace("hello.txt", &format!("hello-{i}.txt")));
        if !out.ends_with('\n') {
            out.push('\n');
        }
        i += 1;
    }
    out
}

fn mb_per_s(bytes: usize, f: impl Fn() -> usize) -> (f64, usize) {
    // Best of 3: the fastest run is the least disturbed by the machine.
    let mut best = f64::MAX;
    let mut n = 0;
    for _ in 0..3 {
        let t = Instant::now();
        n = std::hint::black_box(f());
        best = best.min(t.elapsed().as_secs_f64());
    }
    (bytes as f64 / (1 << 20) as f64 / best, n)
}

fn main() {
    let started = Instant::now();
    println!("baton stream parsing benchmark (same machine, same run; best of 3)");
    for (cli, file) in [
        (CLAUDE_, "claude-2.1.330-write.jsonl"),
        (CODEX_, "codex-0.169.0-write.jsonl"),
        (GEMINI_, "gemini-0.61.0-write.jsonl"),
        (QWEN_, "qwen-0.15.10-write.jsonl"),
        (OPENCODE_, "opencode-1.18.33-write.jsonl"),
        (COPILOT_, "copilot-1.0.102-write.jsonl"),
        (DROID_, "droid-0.225.2-write.jsonl"),
    ] {
        let text = stream(file);
        let (baton, events) = mb_per_s(text.len(), || {
            let mut p = StreamParser::new(cli);
            text.lines().map(|l| p.line(l).len()).sum()
        });
        let (plain, values) = mb_per_s(text.len(), || {
            text.lines()
                .filter(|l| serde_json::from_str::<serde_json::Value>(l).is_ok())
                .count()
        });
        let ratio = baton / plain;
        println!(
            "{:<8} {:>5.1} MB: baton {:>6.1} MB/s ({events} events)   serde_json Value {:>6.1} MB/s ({values} lines)   ratio {:.2} (goal >= 0.7: {})",
            cli.name(),
            text.len() as f64 / (1 << 20) as f64,
            baton,
            plain,
            ratio,
            if ratio >= 0.7 { "ok" } else { "MISSED" }
        );
    }
    println!("total bench time {:.0}s", started.elapsed().as_secs_f64());
}
