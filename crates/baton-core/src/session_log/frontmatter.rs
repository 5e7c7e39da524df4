//! The frontmatter: the subset of YAML baton writes (`key: value`, flow
//! lists `[a, b]`, flow maps `{k: v}`, a block list of flow maps for
//! `subagents`), read back with the line of anything it cannot read, and
//! the block style people write by hand (`- a` items under a key, `k: v`
//! lines indented under it, `- k: v` items with more pairs under them).
//! Values that plain YAML would misread are written as JSON strings,
//! which YAML reads the same.

use super::{Front, LogStatus, ParseError, Subagent};

/// The frontmatter's lines, without the `---` fences.
pub(super) fn render(f: &Front) -> String {
    let mut s = String::from("type: session\n");
    let mut line = |k: &str, v: &str| push_line(&mut s, k, v);
    line("session_id", &scalar(&f.session_id));
    if let Some(w) = &f.workflow {
        line("workflow", &scalar(w));
    }
    if let Some(t) = &f.started {
        line("started", &scalar(t));
    }
    if let Some(t) = f.ended.as_ref().filter(|v| !v.is_empty()) {
        line("ended", &scalar(t));
    }
    line("status", f.status.as_str());
    if let Some(c) = f.channel.as_ref().filter(|v| !v.is_empty()) {
        line("channel", &scalar(c));
    }
    line("participants", &list(&f.participants));
    if let Some(m) = f.model.as_ref().filter(|v| !v.is_empty()) {
        line("model", &scalar(m));
    }
    line("tokens_used", &f.tokens_used.to_string());
    if f.subagents.is_empty() {
        line("subagents", "[]");
    } else {
        s.push_str("subagents:\n");
        for a in &f.subagents {
            let mut pairs = vec![
                ("session".to_string(), a.session.clone()),
                ("agent".to_string(), a.agent.clone()),
            ];
            if let Some(m) = &a.model {
                pairs.push(("model".into(), m.clone()));
            }
            pairs.push(("tokens".into(), a.tokens.to_string()));
            s.push_str("  - ");
            s.push_str(&map(&pairs));
            s.push('\n');
        }
    }
    let mut line = |k: &str, v: &str| push_line(&mut s, k, v);
    if let Some(r) = f.resume_point.as_ref().filter(|v| !v.is_empty()) {
        line("resume_point", &scalar(r));
    }
    if !f.labels.is_empty() {
        line("labels", &map(&f.labels));
    }
    if !f.flags.is_empty() {
        line("flags", &flag_map(&f.flags));
    }
    for (k, v) in &f.extra {
        line(k, v);
    }
    s
}

fn push_line(s: &mut String, k: &str, v: &str) {
    s.push_str(k);
    s.push(':');
    if !v.is_empty() {
        s.push(' ');
        s.push_str(v);
    }
    s.push('\n');
}

/// Reads the frontmatter's lines; `first` is the line number of the first.
/// Lists and maps are read in YAML's flow style (`[a, b]`, `{k: v}`) as
/// baton writes them, and in its block style as people write them by
/// hand (`- a` items under the key, `k: v` lines indented under it).
pub(super) fn parse(lines: &[&str], first: usize) -> Result<Front, ParseError> {
    let mut f = Front::default();
    let mut seen_type = false;
    let mut seen_id = false;
    let mut i = 0;
    while i < lines.len() {
        let n = first + i;
        let raw = lines[i];
        i += 1;
        if raw.trim().is_empty() || raw.trim_start().starts_with('#') {
            continue;
        }
        let Some((key, value)) = raw.split_once(':') else {
            return Err(ParseError::at(
                n,
                format!("the frontmatter line {raw:?} is not `key: value`"),
            ));
        };
        if key.starts_with(' ') {
            return Err(ParseError::at(
                n,
                format!("the frontmatter line {raw:?} is indented but follows no list"),
            ));
        }
        let key = key.trim();
        let value = value.trim();
        // A block value: the lines under the key that are indented, or
        // that are `- ` items (YAML lets a list start at its key's column).
        let mut block: Vec<(usize, &str)> = Vec::new();
        if value.is_empty() {
            while i < lines.len() && in_block(lines[i]) {
                block.push((first + i, lines[i]));
                i += 1;
            }
            // Blank lines after the block belong to what follows.
            while block.last().is_some_and(|(_, l)| l.trim().is_empty()) {
                block.pop();
            }
        }
        match key {
            "type" => {
                if unquote(value, n)? != "session" {
                    return Err(ParseError::at(
                        n,
                        format!("`type: {value}`: this is not a session log (`type: session`)"),
                    ));
                }
                seen_type = true;
            }
            "session_id" => {
                f.session_id = unquote(value, n)?;
                seen_id = !f.session_id.is_empty();
            }
            "workflow" => f.workflow = Some(unquote(value, n)?),
            "started" => f.started = Some(unquote(value, n)?),
            "ended" => f.ended = non_empty(unquote(value, n)?),
            "status" => {
                let s = unquote(value, n)?;
                f.status = LogStatus::parse(&s).ok_or_else(|| {
                    ParseError::at(n, format!("status {s:?} is none of {}", LogStatus::NAMES))
                })?;
            }
            "channel" => f.channel = non_empty(unquote(value, n)?),
            "participants" => f.participants = list_value(value, &block, n)?,
            "model" => f.model = non_empty(unquote(value, n)?),
            "tokens_used" => f.tokens_used = number(value, n, "tokens_used")?,
            "subagents" => {
                if !value.is_empty() {
                    if flow_list(value, n)?.is_empty() {
                        continue;
                    }
                    return Err(ParseError::at(
                        n,
                        "subagents are written as a list of `- {session: …, agent: …}` lines",
                    ));
                }
                for (line, item) in items(&block)? {
                    f.subagents.push(subagent(&item, line)?);
                }
            }
            "resume_point" => f.resume_point = non_empty(unquote(value, n)?),
            "labels" => f.labels = map_value(value, &block, n)?,
            "flags" => f.flags = map_value(value, &block, n)?,
            _ => {
                // Kept as written when it is a plain key with a value on
                // its line (a hand edit's own field); anything else is not
                // ours to keep.
                let plain = key
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                    && key
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
                if plain && block.is_empty() {
                    f.extra.push((key.to_string(), value.to_string()));
                }
            }
        }
    }
    if !seen_type {
        return Err(ParseError::at(
            first,
            "the frontmatter has no `type: session`: this is not a session log",
        ));
    }
    if !seen_id {
        return Err(ParseError::at(
            first,
            "the frontmatter has no `session_id`: add `session_id: <id>`",
        ));
    }
    Ok(f)
}

/// A line that belongs to the block value of the key above it.
fn in_block(l: &str) -> bool {
    l.starts_with(' ')
        || l.starts_with('\t')
        || l.starts_with("- ")
        || l == "-"
        || l.trim().is_empty()
}

/// The items of a block list, each with its line: `- a` gives `a`; an
/// item's further lines (indented under its dash) are joined to it as
/// `k: v` pairs of a flow map (`- session: x` then `  agent: y` gives
/// `{session: x, agent: y}`).
fn items(block: &[(usize, &str)]) -> Result<Vec<(usize, String)>, ParseError> {
    let mut out: Vec<(usize, String, Vec<String>)> = Vec::new();
    let mut dash: Option<usize> = None;
    for &(n, l) in block {
        let t = l.trim_start();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let indent = l.len() - t.len();
        let is_item = t == "-" || t.starts_with("- ");
        match dash {
            Some(d) if is_item && indent == d => {}
            Some(d) if indent > d => match out.last_mut() {
                Some((_, _, more)) => {
                    more.push(t.trim().to_string());
                    continue;
                }
                None => unreachable!("an item came first"),
            },
            None if is_item => dash = Some(indent),
            _ => {
                return Err(ParseError::at(
                    n,
                    format!("{:?} should be a `- ` item of the list above it", l.trim()),
                ));
            }
        }
        out.push((n, t[1..].trim().to_string(), Vec::new()));
    }
    Ok(out
        .into_iter()
        .map(|(n, head, more)| {
            if more.is_empty() {
                return (n, head);
            }
            let mut pairs: Vec<String> = Some(head).filter(|h| !h.is_empty()).into_iter().collect();
            pairs.extend(more);
            (n, format!("{{{}}}", pairs.join(", ")))
        })
        .collect())
}

/// A list: `[a, b]`, a block of `- a` items, one bare value, or nothing.
fn list_value(
    value: &str,
    block: &[(usize, &str)],
    line: usize,
) -> Result<Vec<String>, ParseError> {
    if value.starts_with('[') {
        return flow_list(value, line);
    }
    if !value.is_empty() {
        return Ok(vec![unquote(value, line)?]);
    }
    items(block)?
        .into_iter()
        .map(|(n, item)| {
            if item.starts_with(['[', '{']) {
                return Err(ParseError::at(
                    n,
                    format!("{item:?}: an item of this list is one value"),
                ));
            }
            unquote(&item, n)
        })
        .filter(|v| !v.as_ref().is_ok_and(String::is_empty))
        .collect()
}

/// A map: `{k: v, …}`, or `k: v` lines indented under its key.
fn map_value(
    value: &str,
    block: &[(usize, &str)],
    line: usize,
) -> Result<Vec<(String, String)>, ParseError> {
    if !value.is_empty() {
        return flow_map(value, line);
    }
    let mut out = Vec::new();
    let mut indent: Option<usize> = None;
    for &(n, l) in block {
        let t = l.trim_start();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let at = l.len() - t.len();
        let (k, v) = split_key(t.trim_end())
            .filter(|_| indent.is_none_or(|i| i == at) && at > 0)
            .ok_or_else(|| {
                ParseError::at(
                    n,
                    format!("{:?} should be a `key: value` line of the map above it", t),
                )
            })?;
        indent = Some(at);
        out.push((unquote(k, n)?, unquote(v, n)?));
    }
    Ok(out)
}

fn non_empty(s: String) -> Option<String> {
    (!s.is_empty()).then_some(s)
}

fn number(v: &str, line: usize, key: &str) -> Result<u64, ParseError> {
    unquote(v, line)?
        .replace('_', "")
        .parse()
        .map_err(|_| ParseError::at(line, format!("{key}: {v:?} is not a whole number")))
}

fn subagent(item: &str, line: usize) -> Result<Subagent, ParseError> {
    // `- session: x` alone is a map of one pair.
    let pairs = match item.starts_with('{') {
        true => flow_map(item, line)?,
        false => flow_map(&format!("{{{item}}}"), line)?,
    };
    let get = |k: &str| pairs.iter().find(|(p, _)| p == k).map(|(_, v)| v.clone());
    Ok(Subagent {
        session: get("session")
            .ok_or_else(|| ParseError::at(line, "a subagent needs its `session: <id>`"))?,
        agent: get("agent").unwrap_or_default(),
        model: get("model"),
        tokens: match get("tokens") {
            Some(t) => number(&t, line, "tokens")?,
            None => 0,
        },
    })
}

/// A plain scalar when YAML reads it back as the same string, else a
/// JSON (double-quoted) string.
pub(super) fn scalar(s: &str) -> String {
    let plain = !s.is_empty()
        && s.trim() == s
        && s.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '/')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || " _./@+:-".contains(c))
        && !s.contains(": ")
        && !s.ends_with(':')
        && !matches!(
            s,
            "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "True" | "False" | "Null"
        );
    if plain {
        s.to_string()
    } else {
        serde_json::to_string(s).expect("a string")
    }
}

fn list(items: &[String]) -> String {
    let parts: Vec<String> = items.iter().map(|s| scalar(s)).collect();
    format!("[{}]", parts.join(", "))
}

fn map(pairs: &[(String, String)]) -> String {
    let parts: Vec<String> = pairs
        .iter()
        .map(|(k, v)| {
            let key = if k.contains(':') {
                serde_json::to_string(k).expect("a string")
            } else {
                scalar(k)
            };
            format!("{key}: {}", scalar(v))
        })
        .collect();
    format!("{{{}}}", parts.join(", "))
}

/// The task's flags as a flow map: booleans and whole numbers as YAML
/// reads them, anything else a string.
fn flag_map(pairs: &[(String, String)]) -> String {
    let parts: Vec<String> = pairs
        .iter()
        .map(|(k, v)| {
            let key = if k.contains(':') {
                serde_json::to_string(k).expect("a string")
            } else {
                scalar(k)
            };
            let bare = matches!(v.as_str(), "true" | "false")
                || (!v.is_empty()
                    && v.trim_start_matches('-')
                        .chars()
                        .all(|c| c.is_ascii_digit())
                    && v != "-");
            format!("{key}: {}", if bare { v.clone() } else { scalar(v) })
        })
        .collect();
    format!("{{{}}}", parts.join(", "))
}

/// A scalar as written: plain, `"JSON"` or `'single'`.
fn unquote(v: &str, line: usize) -> Result<String, ParseError> {
    let v = v.trim();
    if v.starts_with('"') {
        serde_json::from_str(v)
            .map_err(|e| ParseError::at(line, format!("the quoted value {v} is broken: {e}")))
    } else if let Some(rest) = v.strip_prefix('\'') {
        let Some(inner) = rest.strip_suffix('\'') else {
            return Err(ParseError::at(
                line,
                format!("the quoted value {v} is not closed"),
            ));
        };
        Ok(inner.replace("''", "'"))
    } else {
        Ok(v.to_string())
    }
}

/// The items of `[a, "b", …]` (or of `{…}` when `open` is `{`), split at
/// the commas outside quotes.
fn flow_items(v: &str, line: usize, open: char, close: char) -> Result<Vec<String>, ParseError> {
    let v = v.trim();
    let Some(inner) = v.strip_prefix(open).and_then(|r| r.strip_suffix(close)) else {
        return Err(ParseError::at(
            line,
            format!("{v:?} should be written {open}…{close}"),
        ));
    };
    let mut items = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in inner.chars() {
        match quote {
            Some(q) => {
                cur.push(c);
                if escaped {
                    escaped = false;
                } else if c == '\\' && q == '"' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
            }
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                cur.push(c);
            }
            None if c == ',' => items.push(std::mem::take(&mut cur)),
            None => cur.push(c),
        }
    }
    if quote.is_some() {
        return Err(ParseError::at(
            line,
            format!("a quote in {v} is not closed"),
        ));
    }
    items.push(cur);
    let items: Vec<String> = items.into_iter().map(|s| s.trim().to_string()).collect();
    if items.len() == 1 && items[0].is_empty() {
        return Ok(Vec::new());
    }
    if items.iter().any(String::is_empty) {
        return Err(ParseError::at(line, format!("{v} has an empty item")));
    }
    Ok(items)
}

fn flow_list(v: &str, line: usize) -> Result<Vec<String>, ParseError> {
    flow_items(v, line, '[', ']')?
        .iter()
        .map(|s| unquote(s, line))
        .collect()
}

fn flow_map(v: &str, line: usize) -> Result<Vec<(String, String)>, ParseError> {
    flow_items(v, line, '{', '}')?
        .iter()
        .map(|item| {
            let (k, val) = split_key(item).ok_or_else(|| {
                ParseError::at(line, format!("{item:?} in {v} is not `key: value`"))
            })?;
            Ok((unquote(k, line)?, unquote(val, line)?))
        })
        .collect()
}

/// `key: value` split at the first `: ` outside quotes.
fn split_key(item: &str) -> Option<(&str, &str)> {
    if item.starts_with('"') {
        let mut escaped = false;
        for (i, c) in item.char_indices().skip(1) {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                let rest = item[i + 1..].trim_start().strip_prefix(':')?;
                return Some((&item[..=i], rest.trim()));
            }
        }
        return None;
    }
    let (k, v) = item.split_once(':')?;
    Some((k.trim(), v.trim()))
}
