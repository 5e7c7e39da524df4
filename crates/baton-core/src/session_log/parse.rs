//! Markdown back into a [`SessionLog`]. What baton rendered reads back
//! exactly; a hand-edited log is read as far as it makes sense (a stray
//! heading level is prose, a list that is not a tool call is prose, a
//! `---` between sections is a separator); a frontmatter or callout that
//! cannot be read is refused with its line.

use super::render::{ESCAPABLE, TOOL_CALLS, fence_end, is_break, is_callout_start};
use super::{Block, Callout, Section, SessionLog, ToolLine, frontmatter};

/// What is wrong with a log, and on which line (1-based).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct ParseError {
    pub line: usize,
    pub message: String,
}

impl ParseError {
    pub(super) fn at(line: usize, message: impl Into<String>) -> ParseError {
        ParseError {
            line,
            message: message.into(),
        }
    }
}

/// Reads a session log.
pub fn parse(text: &str) -> Result<SessionLog, ParseError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let lines: Vec<&str> = text.lines().collect();
    let mut i = lines
        .iter()
        .position(|l| !l.trim().is_empty())
        .unwrap_or(lines.len());
    if lines.get(i).map(|l| l.trim_end()) != Some("---") {
        return Err(ParseError::at(
            i + 1,
            "a session log starts with its frontmatter: a `---` line, `type: session`, `session_id: …`, and `---`",
        ));
    }
    let open = i;
    let Some(close) = lines[open + 1..]
        .iter()
        .position(|l| l.trim_end() == "---")
        .map(|c| c + open + 1)
    else {
        return Err(ParseError::at(
            open + 1,
            "the frontmatter opened here is never closed with a `---` line",
        ));
    };
    let front = frontmatter::parse(&lines[open + 1..close], open + 2)?;
    i = close + 1;
    let mut log = SessionLog {
        front,
        ..SessionLog::default()
    };
    // The title: the first `# ` line before any section.
    while i < lines.len() && lines[i].trim().is_empty() {
        i += 1;
    }
    if let Some(t) = lines.get(i).and_then(|l| l.strip_prefix("# ")) {
        log.title = t.trim().to_string();
        i += 1;
    } else {
        log.title = log.front.session_id.clone();
    }
    let mut blocks: Vec<Block> = Vec::new();
    let mut current: Option<Section> = None;
    while i < lines.len() {
        let l = lines[i];
        if let Some(h) = l.strip_prefix("## ") {
            flush(&mut log, &mut current, &mut blocks);
            current = Some(section(h));
            i += 1;
        } else if l.trim().is_empty() || separates(&lines, i) {
            i += 1;
        } else if is_callout_start(l) {
            let (c, next) = callout(&lines, i)?;
            blocks.push(Block::Callout(c));
            i = next;
        } else if l.trim_end() == TOOL_CALLS {
            i += 1;
            let mut calls = Vec::new();
            while i < lines.len() && lines[i].starts_with("- ") {
                calls.push(tool_line(&lines[i][2..]));
                i += 1;
            }
            blocks.push(Block::ToolCalls(calls));
        } else {
            let (text, next) = prose(&lines, i);
            match blocks.last_mut() {
                Some(Block::Prose(p)) => {
                    p.push_str("\n\n");
                    p.push_str(&text);
                }
                _ => blocks.push(Block::Prose(text)),
            }
            i = next;
        }
    }
    flush(&mut log, &mut current, &mut blocks);
    Ok(log)
}

fn flush(log: &mut SessionLog, current: &mut Option<Section>, blocks: &mut Vec<Block>) {
    let blocks = std::mem::take(blocks);
    match current.take() {
        Some(mut s) => {
            s.blocks = blocks;
            log.sections.push(s);
        }
        None => log.intro.extend(blocks),
    }
}

/// `name @agent #channel`.
fn section(h: &str) -> Section {
    let mut words: Vec<&str> = h.split_whitespace().collect();
    let take = |mark: char, words: &mut Vec<&str>| -> Option<String> {
        let last = words.last()?;
        if words.len() > 1 && last.len() > 1 && last.starts_with(mark) {
            let v = last[1..].to_string();
            words.pop();
            Some(v)
        } else {
            None
        }
    };
    let channel = take('#', &mut words);
    let agent = take('@', &mut words);
    Section {
        name: words.join(" "),
        agent,
        channel,
        blocks: Vec::new(),
    }
}

fn callout(lines: &[&str], start: usize) -> Result<(Callout, usize), ParseError> {
    let first = lines[start][1..].trim_start();
    let rest = &first[2..];
    let Some(end) = rest.find(']') else {
        return Err(ParseError::at(
            start + 1,
            format!("the callout {:?} has no `]` after its kind", lines[start]),
        ));
    };
    let kind = &rest[..end];
    if kind.is_empty()
        || !kind
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(ParseError::at(
            start + 1,
            format!("the callout kind {kind:?} should be a word, as in `> [!decision]`"),
        ));
    }
    // Obsidian's folding marks (`[!note]-`, `[!note]+`) are read and dropped.
    let title = rest[end + 1..].trim_start_matches(['-', '+']).trim();
    let mut body = Vec::new();
    let mut i = start + 1;
    while let Some(l) = lines.get(i).and_then(|l| l.strip_prefix('>')) {
        if is_callout_start(lines[i]) {
            break;
        }
        let l = l.strip_prefix(' ').unwrap_or(l);
        body.push(l.strip_prefix('\\').unwrap_or(l).to_string());
        i += 1;
    }
    Ok((
        Callout {
            kind: kind.to_string(),
            title: title.to_string(),
            body,
        },
        i,
    ))
}

/// `` `call` → result ``, `` `call` → **failed:** result `` or `` `call` ``.
fn tool_line(l: &str) -> ToolLine {
    let ticks = l.chars().take_while(|c| *c == '`').count();
    let (call, rest) = if ticks == 0 {
        match l.split_once(" → ") {
            Some((c, r)) => (c.trim().to_string(), r),
            None => (l.trim().to_string(), ""),
        }
    } else {
        let fence = "`".repeat(ticks);
        let body = &l[ticks..];
        match closing(body, ticks) {
            Some(at) => {
                let inner = &body[..at];
                let inner = if inner.len() >= 2
                    && inner.starts_with(' ')
                    && inner.ends_with(' ')
                    && !inner.trim().is_empty()
                {
                    &inner[1..inner.len() - 1]
                } else {
                    inner
                };
                (inner.to_string(), &body[at + ticks..])
            }
            None => (format!("{fence}{body}"), ""),
        }
    };
    let rest = rest.trim();
    let rest = rest.strip_prefix('→').map(str::trim).unwrap_or(rest);
    let (ok, result) = match rest.strip_prefix("**failed:**") {
        Some(r) => (false, r.trim()),
        None => (true, rest),
    };
    ToolLine {
        call,
        result: (!result.is_empty()).then(|| result.to_string()),
        ok,
    }
}

/// Where a run of exactly `n` backticks starts in `s`.
fn closing(s: &str, n: usize) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'`' {
            let run = b[i..].iter().take_while(|c| **c == b'`').count();
            if run == n {
                return Some(i);
            }
            i += run;
        } else {
            i += 1;
        }
    }
    None
}

/// Line `i` is a thematic break (`---`) with nothing but blank lines
/// between it and the next section or the end: a separator people put
/// between phases, not part of what the phase said.
fn separates(lines: &[&str], i: usize) -> bool {
    is_break(lines[i])
        && lines[i + 1..]
            .iter()
            .find(|l| !l.trim().is_empty())
            .is_none_or(|l| l.starts_with("## "))
}

/// Prose from `start` to the next structure (a section, a callout, the
/// tool calls), blank lines at its end left out; fenced code is taken as
/// it is, escapes are undone.
fn prose(lines: &[&str], start: usize) -> (String, usize) {
    let mut out: Vec<String> = Vec::new();
    let mut i = start;
    while i < lines.len() {
        let l = lines[i];
        if l.starts_with("## ")
            || is_callout_start(l)
            || l.trim_end() == TOOL_CALLS
            || separates(lines, i)
        {
            break;
        }
        if let Some(close) = fence_end(l, &lines[i + 1..]) {
            out.extend(lines[i..=i + 1 + close].iter().map(|l| l.to_string()));
            i += close + 2;
            continue;
        }
        let unescaped = match l.strip_prefix('\\') {
            Some(r) if r.starts_with(ESCAPABLE) => r,
            _ => l,
        };
        out.push(unescaped.to_string());
        i += 1;
    }
    while out.last().is_some_and(|l| l.trim().is_empty()) {
        out.pop();
    }
    (out.join("\n"), i)
}
