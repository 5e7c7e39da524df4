//! A [`SessionLog`] as markdown. Blocks are separated by one blank line;
//! prose lines that would read as the log's own structure (a heading, a
//! callout, a `**Tool calls:**` line, a code fence never closed) get a
//! `\` in front, which markdown shows as the character itself and
//! [`super::parse`] takes off again; so does a thematic break (`---`) that
//! ends a text, which would read as a separator between sections.

use super::{Block, Callout, SessionLog, ToolLine, clean, frontmatter, one_line, trimmed_lines};

pub const TOOL_CALLS: &str = "**Tool calls:**";

/// The log's markdown.
pub fn render(log: &SessionLog) -> String {
    let mut out = String::with_capacity(4096);
    out.push_str("---\n");
    out.push_str(&frontmatter::render(&log.front));
    out.push_str("---\n# ");
    out.push_str(&one_line(&log.title));
    out.push('\n');
    blocks(&mut out, &log.intro);
    for s in &log.sections {
        out.push_str(&section(s));
    }
    out
}

/// One section alone, as it is in the log.
pub fn section(s: &super::Section) -> String {
    let mut out = String::from("\n## ");
    out.push_str(&heading(&s.name, s.agent.as_deref(), s.channel.as_deref()));
    out.push('\n');
    blocks(&mut out, &s.blocks);
    out
}

/// `name @agent #channel`.
pub(super) fn heading(name: &str, agent: Option<&str>, channel: Option<&str>) -> String {
    let mut h = one_line(name);
    if h.is_empty() {
        h.push_str("phase");
    }
    for (mark, v) in [('@', agent), ('#', channel)] {
        if let Some(v) = v.map(one_line).filter(|v| !v.is_empty()) {
            h.push(' ');
            h.push(mark);
            h.push_str(&v.replace(' ', "-"));
        }
    }
    h
}

fn blocks(out: &mut String, blocks: &[Block]) {
    let mut i = 0;
    while i < blocks.len() {
        match &blocks[i] {
            Block::Prose(_) => {
                // Neighbouring prose is one text: a fence opened in one
                // and closed in the next must read the same both ways.
                let mut text = String::new();
                while let Some(Block::Prose(p)) = blocks.get(i) {
                    if !text.is_empty() {
                        text.push_str("\n\n");
                    }
                    text.push_str(p);
                    i += 1;
                }
                prose(out, &text);
                continue;
            }
            Block::ToolCalls(calls) => tool_calls(out, calls),
            Block::Callout(c) => callout(out, c),
        }
        i += 1;
    }
}

fn prose(out: &mut String, text: &str) {
    let lines = trimmed_lines(&clean(text));
    if lines.is_empty() {
        return;
    }
    out.push('\n');
    let mut i = 0;
    while i < lines.len() {
        let l = &lines[i];
        if let Some(close) = fence_end(l, &lines[i + 1..]) {
            // A fenced block, kept as it is.
            for l in &lines[i..=i + 1 + close] {
                out.push_str(l);
                out.push('\n');
            }
            i += close + 2;
            continue;
        }
        // A break ending the text would read as a separator between
        // sections, which the parser leaves out.
        if needs_escape(l) || (i + 1 == lines.len() && is_break(l)) {
            out.push('\\');
        }
        out.push_str(l);
        out.push('\n');
        i += 1;
    }
}

/// When `line` opens a code fence closed in `rest`: the closing line's
/// index in `rest`.
pub(super) fn fence_end<S: AsRef<str>>(line: &str, rest: &[S]) -> Option<usize> {
    let ch = line.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let run = line.chars().take_while(|c| *c == ch).count();
    if run < 3 || (ch == '`' && line[run..].contains('`')) {
        return None;
    }
    rest.iter().position(|r| {
        let r = r.as_ref().trim_end();
        r.len() >= run && r.chars().all(|c| c == ch)
    })
}

/// The characters a `\` in front of a line protects.
pub(super) const ESCAPABLE: &[char] = &['#', '>', '*', '`', '~', '\\', '-', '_'];

/// A thematic break (`---`, `***`, `___`, spaced or not) at the start of
/// a line: between phases, people write one as a separator.
pub(super) fn is_break(l: &str) -> bool {
    let Some(c) = l.chars().next().filter(|c| matches!(c, '-' | '*' | '_')) else {
        return false;
    };
    let marks = l.chars().filter(|x| *x == c).count();
    marks >= 3 && l.chars().all(|x| x == c || x == ' ' || x == '\t')
}

fn needs_escape(l: &str) -> bool {
    l.starts_with('#')
        || is_callout_start(l)
        || l.starts_with(TOOL_CALLS)
        || l.starts_with(['`', '~'])
            && l.chars()
                .take_while(|c| *c == l.as_bytes()[0] as char)
                .count()
                >= 3
        || (l.starts_with('\\') && l[1..].starts_with(ESCAPABLE))
}

/// `> [!kind]`, the first line of a callout.
pub(super) fn is_callout_start(l: &str) -> bool {
    l.strip_prefix('>')
        .is_some_and(|r| r.trim_start().starts_with("[!"))
}

fn tool_calls(out: &mut String, calls: &[ToolLine]) {
    out.push('\n');
    out.push_str(TOOL_CALLS);
    out.push('\n');
    for c in calls {
        out.push_str("- ");
        out.push_str(&code_span(&one_line(&c.call)));
        if let Some(r) = c.result.as_deref().map(one_line).filter(|r| !r.is_empty()) {
            out.push_str(" → ");
            if !c.ok {
                out.push_str("**failed:** ");
            }
            out.push_str(&r);
        }
        out.push('\n');
    }
}

/// `` `s` ``, with as many backticks as it takes.
fn code_span(s: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in s.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let ticks = "`".repeat(longest + 1);
    let pad = s.is_empty()
        || s.starts_with('`')
        || s.ends_with('`')
        || (s.starts_with(' ') && s.ends_with(' ') && !s.trim().is_empty());
    if pad {
        format!("{ticks} {s} {ticks}")
    } else {
        format!("{ticks}{s}{ticks}")
    }
}

fn callout(out: &mut String, c: &Callout) {
    out.push_str("\n> [!");
    let kind: String = c
        .kind
        .chars()
        .filter(|ch| ch.is_ascii_alphanumeric() || *ch == '_' || *ch == '-')
        .collect();
    out.push_str(if kind.is_empty() { "note" } else { &kind });
    out.push(']');
    let title = one_line(&c.title);
    if !title.is_empty() {
        out.push(' ');
        out.push_str(&title);
    }
    out.push('\n');
    for l in &c.body {
        for l in clean(l).split('\n') {
            out.push('>');
            if !l.is_empty() {
                out.push(' ');
                // A line that would open a callout of its own, or that
                // starts with the escape, gets one.
                if l.starts_with('\\') || l.trim_start().starts_with("[!") {
                    out.push('\\');
                }
                out.push_str(l);
            }
            out.push('\n');
        }
    }
}
