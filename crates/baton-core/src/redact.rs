//! Secrets taken out of text before baton writes it anywhere a person or
//! another agent reads it (phase output files, `baton log`, the
//! dashboard): API keys and tokens in their common formats (Anthropic,
//! OpenAI, GitHub, AWS, Google, Slack, JWT), private key blocks,
//! `password=`-style pairs, and the values of the environment variables
//! baton passed to an agent whose names look secret. Each is replaced by
//! `[REDACTED:<kind>]`. Pure: the caller says which values are secret.

use regex::Regex;
use std::borrow::Cow;
use std::sync::OnceLock;

/// The patterns, most specific first (an Anthropic key is also shaped
/// like an OpenAI one).
fn patterns() -> &'static [(&'static str, Regex)] {
    static P: OnceLock<Vec<(&'static str, Regex)>> = OnceLock::new();
    P.get_or_init(|| {
        let r = |s: &str| Regex::new(s).expect("a valid pattern");
        vec![
            (
                "private-key",
                r(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----"),
            ),
            ("anthropic-key", r(r"\bsk-ant-[A-Za-z0-9_\-]{20,}")),
            ("openai-key", r(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}")),
            ("github-token", r(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})")),
            ("aws-access-key", r(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
            ("baton-capability", r(r"\bbatoncap_[0-9a-f]{64}\b")),
            ("google-api-key", r(r"\bAIza[0-9A-Za-z_\-]{35}")),
            ("slack-token", r(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}")),
            (
                "jwt",
                r(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
            ),
        ]
    })
}

/// `password=…`, `"api_key": "…"`, `AWS_SECRET_ACCESS_KEY=…`: the name is
/// kept, the value goes.
fn pairs() -> &'static Regex {
    static P: OnceLock<Regex> = OnceLock::new();
    P.get_or_init(|| {
        Regex::new(
            r#"(?i)(\b[A-Za-z0-9_\-]*(?:password|passwd|secret|token|api[_\-]?key|access[_\-]?key|private[_\-]?key|credential)[A-Za-z0-9_\-]*"?\s*[=:]\s*)("[^"\s]{4,}"|'[^'\s]{4,}'|[^\s"',;]{4,})"#,
        )
        .expect("a valid pattern")
    })
}

/// A URL's user and password (`scheme://user:PASSWORD@`): the password
/// goes, the rest of the URL stays.
fn url_credentials() -> &'static Regex {
    static P: OnceLock<Regex> = OnceLock::new();
    P.get_or_init(|| {
        Regex::new(r"(\b[A-Za-z][A-Za-z0-9+.\-]*://[^/\s:@]+:)[^@\s/]{3,}@")
            .expect("a valid pattern")
    })
}

/// The password in `text` when it is a URL with one.
fn url_password(text: &str) -> Option<&str> {
    let (_, rest) = text.split_once("://")?;
    let userinfo = rest.split(['/', '?', '#']).next()?.rsplit_once('@')?.0;
    let (_, password) = userinfo.split_once(':')?;
    (!password.is_empty()).then_some(password)
}

/// Every pattern and the pairs, in one set: whether a text holds any of
/// them is one pass over it (a phase's output may be gigabytes).
fn any_pattern() -> &'static regex::RegexSet {
    static P: OnceLock<regex::RegexSet> = OnceLock::new();
    P.get_or_init(|| {
        regex::RegexSet::new(
            patterns()
                .iter()
                .map(|(_, re)| re.as_str())
                .chain([pairs().as_str(), url_credentials().as_str()]),
        )
        .expect("valid patterns")
    })
}

/// Whether an environment variable's name says its value is secret.
pub fn secret_name(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    [
        "KEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "AUTH",
    ]
    .iter()
    .any(|w| n.contains(w))
}

/// What to take out of text.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// Values known to be secret (an agent's `ANTHROPIC_API_KEY`, …).
    values: Vec<String>,
}

impl Redactor {
    /// The values of `env` whose names look secret (values shorter than 6
    /// characters are left: they would take out ordinary words).
    pub fn with_env<'a>(env: impl IntoIterator<Item = (&'a str, &'a str)>) -> Redactor {
        let mut values = Vec::new();
        for (k, v) in env {
            if secret_name(k) && v.len() >= 6 {
                values.push(v.to_string());
            }
            // A URL's password, whatever the variable is called
            // (`BATON_DATABASE_URL=postgres://user:PASSWORD@host/db`).
            if let Some(p) = url_password(v).filter(|p| p.len() >= 4) {
                values.push(p.to_string());
            }
        }
        // The longest first, so one that contains another goes whole.
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        values.dedup();
        Redactor { values }
    }

    /// `text` without the secrets in it.
    pub fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let mut out = Cow::Borrowed(text);
        for v in &self.values {
            if out.contains(v.as_str()) {
                out = Cow::Owned(out.replace(v.as_str(), "[REDACTED:env]"));
            }
        }
        for (kind, re) in patterns() {
            if re.is_match(&out) {
                out = Cow::Owned(
                    re.replace_all(&out, format!("[REDACTED:{kind}]"))
                        .into_owned(),
                );
            }
        }
        if url_credentials().is_match(&out) {
            out = Cow::Owned(
                url_credentials()
                    .replace_all(&out, "${1}[REDACTED:url-password]@")
                    .into_owned(),
            );
        }
        if pairs().is_match(&out) {
            out = Cow::Owned(
                pairs()
                    .replace_all(&out, |c: &regex::Captures| {
                        if c[2].contains("[REDACTED:") {
                            c[0].to_string()
                        } else {
                            format!("{}[REDACTED:value]", &c[1])
                        }
                    })
                    .into_owned(),
            );
        }
        out
    }
}

impl Redactor {
    /// Whether `text` may hold something to take out (a cheap first look:
    /// one pass over it for every pattern at once).
    pub fn may_hold(&self, text: &str) -> bool {
        self.values.iter().any(|v| text.contains(v.as_str())) || any_pattern().is_match(text)
    }

    /// Every string in `v`, redacted.
    pub fn value(&self, v: &mut serde_json::Value) {
        match v {
            serde_json::Value::String(s) => {
                if let Cow::Owned(r) = self.redact(s) {
                    *s = r;
                }
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(|x| self.value(x)),
            serde_json::Value::Object(o) => o.values_mut().for_each(|x| self.value(x)),
            _ => {}
        }
    }

    /// `item` (an event, a message) with the secrets in its strings taken
    /// out; as it is when it holds none.
    pub fn item<T: serde::Serialize + serde::de::DeserializeOwned>(&self, item: T) -> T {
        let Ok(text) = serde_json::to_string(&item) else {
            return item;
        };
        if !self.may_hold(&text) {
            return item;
        }
        let Ok(mut v) = serde_json::from_str::<serde_json::Value>(&text) else {
            return item;
        };
        self.value(&mut v);
        serde_json::from_value(v).unwrap_or(item)
    }
}

/// The first and last line of a private key block.
fn key_begin() -> &'static Regex {
    static P: OnceLock<Regex> = OnceLock::new();
    P.get_or_init(|| Regex::new(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----").expect("a valid pattern"))
}
fn key_end() -> &'static Regex {
    static P: OnceLock<Regex> = OnceLock::new();
    P.get_or_init(|| Regex::new(r"-----END [A-Z0-9 ]*PRIVATE KEY-----").expect("a valid pattern"))
}

/// A file redacted one line at a time, so a file of any size is read in
/// bounded memory: a line that is JSON has the strings in it redacted (a
/// JSON Lines stream stays one), any other line as text; a private key
/// block, which spans lines, goes whole from its `BEGIN` line to its `END`
/// line (to the end of the file when it has none: a cut key is a secret
/// too).
#[derive(Debug)]
pub struct Lines<'r> {
    r: &'r Redactor,
    in_key: bool,
}

impl<'r> Lines<'r> {
    /// Whether `line` may hold something to take out, or the file is in a
    /// key block (a cheap first look).
    pub fn holds(&self, line: &str) -> bool {
        self.in_key || self.r.may_hold(line) || key_begin().is_match(line)
    }

    /// `line` (without its line end) redacted; `None` when the whole line
    /// goes (inside a key block).
    pub fn line<'t>(&mut self, line: &'t str) -> Option<Cow<'t, str>> {
        if self.in_key {
            let end = key_end().find(line)?;
            self.in_key = false;
            let rest = &line[end.end()..];
            return (!rest.trim().is_empty()).then(|| Cow::Owned(self.text(rest).into_owned()));
        }
        if let Some(begin) = key_begin().find(line)
            && !key_end().is_match(&line[begin.end()..])
        {
            self.in_key = true;
            let before = self.text(&line[..begin.start()]);
            return Some(Cow::Owned(format!("{before}[REDACTED:private-key]")));
        }
        Some(self.text(line))
    }

    fn text<'t>(&self, line: &'t str) -> Cow<'t, str> {
        if !self.r.may_hold(line) {
            return Cow::Borrowed(line);
        }
        match serde_json::from_str::<serde_json::Value>(line) {
            Ok(mut v) if line.trim_start().starts_with(['{', '[']) => {
                self.r.value(&mut v);
                Cow::Owned(serde_json::to_string(&v).unwrap_or_else(|_| line.to_string()))
            }
            _ => self.r.redact(line),
        }
    }
}

impl Redactor {
    /// A file's lines, redacted one at a time ([`Lines`]).
    pub fn lines(&self) -> Lines<'_> {
        Lines {
            r: self,
            in_key: false,
        }
    }

    /// A file's text redacted ([`Lines`], over the whole text). `None`
    /// when there was nothing to take out.
    pub fn text_file(&self, text: &str) -> Option<String> {
        let mut lines = self.lines();
        if !text.split('\n').any(|l| lines.holds(l)) {
            return None;
        }
        let mut out = String::with_capacity(text.len());
        for line in text.split_inclusive('\n') {
            let (body, end) = match line.strip_suffix('\n') {
                Some(b) => (b, "\n"),
                None => (line, ""),
            };
            if let Some(l) = lines.line(body) {
                out.push_str(&l);
                out.push_str(end);
            }
        }
        Some(out)
    }
}

/// [`Redactor::redact`] with the patterns alone.
pub fn redact(text: &str) -> Cow<'_, str> {
    static R: OnceLock<Redactor> = OnceLock::new();
    R.get_or_init(Redactor::default).redact(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One planted secret of every kind: none survives.
    pub const PLANTED: &[(&str, &str)] = &[
        (
            "anthropic-key",
            "sk-ant-api03-Abc123Def456Ghi789Jkl012Mno345Pqr678",
        ),
        ("openai-key", "sk-proj-Zyx987Wvu654Tsr321Qpo098Nml765"),
        ("github-token", "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"),
        (
            "baton-capability",
            "batoncap_00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
        ),
        (
            "github-token",
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
        ),
        ("aws-access-key", "AKIAIOSFODNN7EXAMPLE"),
        ("google-api-key", "AIzaSyA1234567890abcdefghijklmnopqrstuv"),
        ("slack-token", "xoxb-1234567890-0987654321-abcdefABCDEF"),
        (
            "jwt",
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        ),
    ];

    #[test]
    fn every_planted_kind_is_taken_out_and_the_text_around_it_kept() {
        for (kind, secret) in PLANTED {
            let text = format!("before {secret} after");
            let out = redact(&text);
            assert_eq!(out, format!("before [REDACTED:{kind}] after"), "{kind}");
        }
        let key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7\nabc\n-----END RSA PRIVATE KEY-----";
        assert_eq!(
            redact(&format!("x\n{key}\ny")),
            "x\n[REDACTED:private-key]\ny"
        );
    }

    #[test]
    fn a_secret_pairs_value_goes_its_name_stays() {
        for (text, want) in [
            ("password=hunter22 next", "password=[REDACTED:value] next"),
            (
                "DB_PASSWORD: 's3cr3t!' ok",
                "DB_PASSWORD: [REDACTED:value] ok",
            ),
            (
                r#"{"api_key": "abcd1234"}"#,
                r#"{"api_key": [REDACTED:value]}"#,
            ),
            (
                "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG",
                "AWS_SECRET_ACCESS_KEY=[REDACTED:value]",
            ),
        ] {
            assert_eq!(redact(text), want, "{text}");
        }
        // Ordinary prose is left alone.
        for text in ["the token count rose", "a password is needed", "sk-short"] {
            assert_eq!(redact(text), text);
        }
    }

    #[test]
    fn an_events_strings_are_redacted_and_its_shape_kept() {
        use crate::event::Event;
        let e = Event::Note {
            phase: None,
            text: format!("used {}", PLANTED[0].1),
        };
        match Redactor::default().item(e) {
            Event::Note { text, .. } => assert_eq!(text, "used [REDACTED:anthropic-key]"),
            other => panic!("{other:?}"),
        }
        let clean = Event::Note {
            phase: None,
            text: "nothing secret".into(),
        };
        assert_eq!(Redactor::default().item(clean.clone()), clean);
    }

    #[test]
    fn a_json_lines_file_stays_json_lines() {
        let r = Redactor::default();
        let text = format!(
            "{{\"type\":\"tool\",\"input\":{{\"password\":\"hunter22\",\"k\":\"{}\"}}}}\nplain password=hunter22\n",
            PLANTED[2].1
        );
        let out = r.text_file(&text).unwrap();
        let first: serde_json::Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
        assert_eq!(first["input"]["k"], "[REDACTED:github-token]");
        assert_eq!(out.lines().nth(1), Some("plain password=[REDACTED:value]"));
        assert!(out.ends_with('\n'));
        assert_eq!(r.text_file("nothing\n"), None);
    }

    /// A key block spans lines: it goes whole, the text around it stays;
    /// one that never ends goes to the end (a cut key is a secret too).
    #[test]
    fn a_private_key_block_goes_whole_line_by_line() {
        let r = Redactor::default();
        let text = "before\nkey: -----BEGIN RSA PRIVATE KEY-----\nMIIEow\nAAAA\n-----END RSA PRIVATE KEY----- after\nlast\n";
        let out = r.text_file(text).unwrap();
        assert_eq!(out, "before\nkey: [REDACTED:private-key]\n after\nlast\n");
        let one = "x -----BEGIN PRIVATE KEY-----abc-----END PRIVATE KEY----- y\n";
        assert_eq!(r.text_file(one).unwrap(), "x [REDACTED:private-key] y\n");
        let cut = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\nmore\n";
        assert_eq!(r.text_file(cut).unwrap(), "[REDACTED:private-key]\n");
    }

    /// Issue 35, first part: a URL's password went into every file baton
    /// writes (`BATON_DATABASE_URL=postgres://user:PASSWORD@…`), whatever
    /// the variable is called; in text, any URL's password goes and the
    /// rest of the URL stays.
    #[test]
    fn a_urls_password_goes_and_the_url_stays() {
        let r = Redactor::with_env([(
            "BATON_DATABASE_URL",
            "postgres://ana:Pa55-w0rd@db:5432/baton",
        )]);
        assert_eq!(r.redact("connect: Pa55-w0rd"), "connect: [REDACTED:env]");
        assert_eq!(
            redact("at https://bob:hunter2x@example.com/x and postgresql://u:p%40ss@h/db"),
            "at https://bob:[REDACTED:url-password]@example.com/x and postgresql://u:[REDACTED:url-password]@h/db"
        );
        assert!(matches!(
            redact("https://example.com/a:b@c"),
            Cow::Borrowed(_)
        ));
        assert_eq!(url_password("postgres://u:secret@h/db"), Some("secret"));
        assert_eq!(url_password("postgres://u@h/db"), None);
        assert_eq!(url_password("not a url"), None);
    }

    #[test]
    fn values_of_secret_looking_variables_go_wherever_they_appear() {
        let r = Redactor::with_env([
            ("MY_SERVICE_TOKEN", "tok-very-private-1"),
            ("HOME", "/home/ana"),
            ("SHORT_KEY", "abc"),
        ]);
        assert_eq!(
            r.redact("curl -H tok-very-private-1 /home/ana abc"),
            "curl -H [REDACTED:env] /home/ana abc"
        );
        assert!(matches!(r.redact("nothing here"), Cow::Borrowed(_)));
    }
}
