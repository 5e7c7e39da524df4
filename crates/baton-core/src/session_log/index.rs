//! The rows of `.baton/index.toon`, the compact index of all session logs
//! (what `baton session query` answers from), and the filters a query
//! applies. Encoding is the engine's (TOON); the rules are here.

use super::{SessionLog, phases};
use serde::{Deserialize, Serialize};

/// The index file's version: a file of another is rebuilt.
pub const VERSION: u32 = 1;

/// One session in the index. Lists are space-separated words, so the
/// index stays one TOON table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexRow {
    pub id: String,
    pub status: String,
    pub started: String,
    pub ended: String,
    pub workflow: String,
    pub phases: String,
    pub agents: String,
    pub tokens: u64,
    pub open_items: u64,
    pub title: String,
}

/// The whole index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Index {
    pub version: u32,
    pub sessions: Vec<IndexRow>,
}

/// The fields of a row, in the order of the file's table header.
pub const FIELDS: &str = "id,status,started,ended,workflow,phases,agents,tokens,open_items,title";

/// Reads the index as baton writes it (`version: 1`, then the table
/// `sessions[N]{…}:` and one comma-separated row per line, quoted where
/// TOON quotes) without a general TOON decoder: a query over 10,000
/// sessions reads 10,000 rows. `None` when the text is shaped otherwise
/// (the caller then decodes it as any TOON document).
pub fn read_table(text: &str) -> Option<Index> {
    let mut lines = text.lines();
    let version: u32 = lines
        .next()?
        .strip_prefix("version: ")?
        .trim()
        .parse()
        .ok()?;
    let header = lines.next()?;
    let n: usize = if header == "sessions[0]:" || header == "sessions: []" {
        0
    } else {
        let rest = header.strip_prefix("sessions[")?;
        let (n, rest) = rest.split_once(']')?;
        if rest != format!("{{{FIELDS}}}:") {
            return None;
        }
        n.parse().ok()?
    };
    let mut sessions = Vec::with_capacity(n);
    for line in lines {
        if line.trim().is_empty() {
            continue;
        }
        let mut f = fields(line.strip_prefix("  ")?)?.into_iter();
        let mut next = || f.next();
        sessions.push(IndexRow {
            id: next()?,
            status: next()?,
            started: next()?,
            ended: next()?,
            workflow: next()?,
            phases: next()?,
            agents: next()?,
            tokens: next()?.parse().ok()?,
            open_items: next()?.parse().ok()?,
            title: next()?,
        });
        if next().is_some() {
            return None;
        }
    }
    (sessions.len() == n).then_some(Index { version, sessions })
}

/// A row's fields: split at the commas outside quotes, quotes and TOON's
/// escapes undone.
fn fields(line: &str) -> Option<Vec<String>> {
    let mut out = Vec::with_capacity(10);
    let mut chars = line.chars().peekable();
    loop {
        let mut v = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next()? {
                    '"' => break,
                    '\\' => v.push(match chars.next()? {
                        'n' => '\n',
                        'r' => '\r',
                        't' => '\t',
                        'u' => {
                            let hex: String = (0..4).filter_map(|_| chars.next()).collect();
                            char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?
                        }
                        c @ ('"' | '\\') => c,
                        _ => return None,
                    }),
                    c => v.push(c),
                }
            }
            out.push(v);
            match chars.next() {
                None => return Some(out),
                Some(',') => {}
                Some(_) => return None,
            }
        } else {
            loop {
                match chars.next() {
                    None => {
                        out.push(v);
                        return Some(out);
                    }
                    Some(',') => break,
                    Some(c) => v.push(c),
                }
            }
            out.push(v);
        }
    }
}

/// `log`'s row, with `open_items` inbox items waiting in it.
pub fn row_of(log: &SessionLog, open_items: u64) -> IndexRow {
    let words = |v: Vec<String>| {
        v.into_iter()
            .map(|w| w.split_whitespace().collect::<Vec<_>>().join("_"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    IndexRow {
        id: log.front.session_id.clone(),
        status: log.front.status.as_str().into(),
        started: log.front.started.clone().unwrap_or_default(),
        ended: log.front.ended.clone().unwrap_or_default(),
        workflow: log.front.workflow.clone().unwrap_or_default(),
        phases: words(phases(log).into_iter().map(|p| p.name).collect()),
        agents: words(log.front.participants.clone()),
        tokens: log.front.tokens_used,
        open_items,
        title: log.title.clone(),
    }
}

/// The questions a log shows as still open: its `decision_needed` and
/// `approval_required` callouts less the answers (`[!user] … answered`)
/// after them. What the index says of a log when the store is not asked.
pub fn open_in(log: &SessionLog) -> u64 {
    let mut open: u64 = 0;
    for s in &log.sections {
        for b in &s.blocks {
            if let super::Block::Callout(c) = b {
                match c.kind.as_str() {
                    super::kind::DECISION_NEEDED | super::kind::APPROVAL_REQUIRED => open += 1,
                    super::kind::USER if c.title.contains(" answered") => {
                        open = open.saturating_sub(1)
                    }
                    _ => {}
                }
            }
        }
    }
    open
}

/// What `baton session query` filters on; every given filter must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    pub status: Option<String>,
    /// An agent's name (`claude` matches `claude@2.1.0`).
    pub agent: Option<String>,
    /// Started at or after (an RFC 3339 time or a date).
    pub since: Option<String>,
    /// Started before the end of (an RFC 3339 time or a date).
    pub until: Option<String>,
    /// In the id, title, workflow or phases, any case.
    pub text: Option<String>,
}

impl Query {
    pub fn matches(&self, r: &IndexRow) -> bool {
        if self
            .status
            .as_ref()
            .is_some_and(|s| !r.status.eq_ignore_ascii_case(s))
        {
            return false;
        }
        if let Some(a) = &self.agent
            && !r.agents.split(' ').any(|p| {
                p.split('@')
                    .next()
                    .is_some_and(|n| n.eq_ignore_ascii_case(a))
            })
        {
            return false;
        }
        if self
            .since
            .as_ref()
            .is_some_and(|s| r.started.as_str() < s.as_str())
        {
            return false;
        }
        // A date (or any prefix) takes in all of that day: compare prefixes.
        if let Some(u) = &self.until
            && r.started.get(..u.len()).unwrap_or(&r.started) > u.as_str()
        {
            return false;
        }
        if let Some(t) = &self.text {
            let t = t.to_lowercase();
            let hay = [&r.id, &r.title, &r.workflow, &r.phases];
            if !hay.iter().any(|h| h.to_lowercase().contains(&t)) {
                return false;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, status: &str, started: &str, agents: &str) -> IndexRow {
        IndexRow {
            id: id.into(),
            status: status.into(),
            started: started.into(),
            ended: String::new(),
            workflow: "dev".into(),
            phases: "plan build".into(),
            agents: agents.into(),
            tokens: 1,
            open_items: 0,
            title: format!("Fix the {id} form"),
        }
    }

    #[test]
    fn every_filter_given_must_hold() {
        let a = row(
            "login",
            "completed",
            "2026-11-20T10:00:00Z",
            "claude@2.1.0 codex",
        );
        let b = row("signup", "failed", "2026-11-22T23:59:00Z", "gemini");
        let q = |f: fn(&mut Query)| {
            let mut q = Query::default();
            f(&mut q);
            [&a, &b]
                .iter()
                .filter(|r| q.matches(r))
                .map(|r| r.id.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(q(|_| {}), ["login", "signup"]);
        assert_eq!(q(|q| q.status = Some("FAILED".into())), ["signup"]);
        assert_eq!(q(|q| q.agent = Some("claude".into())), ["login"]);
        assert_eq!(q(|q| q.agent = Some("clau".into())), Vec::<String>::new());
        assert_eq!(q(|q| q.since = Some("2026-11-21".into())), ["signup"]);
        assert_eq!(
            q(|q| q.until = Some("2026-11-22".into())),
            ["login", "signup"]
        );
        assert_eq!(q(|q| q.until = Some("2026-11-21".into())), ["login"]);
        assert_eq!(q(|q| q.text = Some("SIGNUP form".into())), ["signup"]);
    }
}
