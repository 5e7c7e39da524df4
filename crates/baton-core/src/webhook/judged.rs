//! Reading a delivery's body for only what it is judged on. A webhook
//! body is tens of KB of JSON of which baton reads a few fields
//! ([`Delivery::essentials`](super::Delivery::essentials)); building the
//! whole tree costs several times what checking its syntax does. This
//! reads the body once, checks all of it as `serde_json` does, and builds
//! only the fields the essentials read (plus `zen`, which a `ping`
//! answers), so the essentials of what it returns are those of the whole
//! body.

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// The parts of a JSON value to build: all of it (`whole`), or the named
/// fields of an object (applied to each element of an array).
#[derive(Debug, Default)]
struct Want {
    whole: bool,
    fields: BTreeMap<String, Want>,
}

impl Want {
    fn add(&mut self, path: &[&str]) {
        match path.split_first() {
            None => self.whole = true,
            Some((first, rest)) => self.fields.entry(first.to_string()).or_default().add(rest),
        }
    }
}

/// What the essentials read, with the payload condition `paths` (cut where
/// they go through an array, which is kept whole).
fn wanted(paths: &BTreeSet<String>) -> Want {
    let mut w = Want::default();
    for fixed in [
        "action",
        "zen",
        "repository.full_name",
        "review.state",
        "review.user.login",
    ] {
        w.add(&fixed.split('.').collect::<Vec<_>>());
    }
    for item in ["pull_request", "issue"] {
        for field in [
            "number",
            "html_url",
            "merged",
            "merge_commit_sha",
            "head.ref",
            "labels.name",
            "body",
        ] {
            let mut path = vec![item];
            path.extend(field.split('.'));
            w.add(&path);
        }
    }
    for p in paths {
        let parts: Vec<&str> = p.split('.').collect();
        let cut = parts
            .iter()
            .position(|p| p.parse::<usize>().is_ok())
            .unwrap_or(parts.len());
        w.add(&parts[..cut]);
    }
    w
}

/// The body parsed for what it is judged on: an object with the fields
/// the essentials read (any other JSON value as `null`, an array as the
/// judged parts of its elements: either way not an object). An error for
/// a body that is not JSON (RFC 8259) or not UTF-8, as a whole parse
/// gives; in the fields it skips it takes what the grammar allows but a
/// `serde_json::Value` cannot be read from (a number beyond `f64`, an
/// unpaired surrogate escape, arrays or objects nested deeper than
/// serde_json's 128 levels: skipping needs no stack).
pub fn parse(body: &[u8], paths: &BTreeSet<String>) -> serde_json::Result<Value> {
    let want = wanted(paths);
    // Skipped strings are not decoded: the text is checked as a whole.
    let text = std::str::from_utf8(body).map_err(|e| {
        <serde_json::Error as de::Error>::custom(format!(
            "invalid UTF-8 at byte {}",
            e.valid_up_to()
        ))
    })?;
    let mut de = serde_json::Deserializer::from_str(text);
    let v = (&want).deserialize(&mut de)?;
    de.end()?;
    Ok(v.unwrap_or(Value::Null))
}

impl<'de> DeserializeSeed<'de> for &Want {
    /// `None`: nothing of it is wanted.
    type Value = Option<Value>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        if self.whole {
            return serde::Deserialize::deserialize(d).map(Some);
        }
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for &Want {
    type Value = Option<Value>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = serde_json::Map::new();
        while let Some(key) = map.next_key_seed(Key(&self.fields))? {
            match key {
                Some((name, want)) => match map.next_value_seed(want)? {
                    Some(v) => {
                        out.insert(name.clone(), v);
                    }
                    // Skipped: an earlier value of the same key goes too,
                    // as the last one wins in a whole parse.
                    None => {
                        out.remove(name);
                    }
                },
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Some(Value::Object(out)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(self)? {
            out.push(v.unwrap_or(Value::Null));
        }
        Ok(Some(Value::Array(out)))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// An object's key, looked up among the wanted fields without copying it.
struct Key<'w>(&'w BTreeMap<String, Want>);

impl<'de, 'w> DeserializeSeed<'de> for Key<'w> {
    type Value = Option<(&'w String, &'w Want)>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'w> Visitor<'_> for Key<'w> {
    type Value = Option<(&'w String, &'w Want)>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
        Ok(self.0.get_key_value(s))
    }
}

#[cfg(test)]
mod tests {
    use super::super::Delivery;
    use super::*;

    fn body(path: &str) -> Vec<u8> {
        std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../baton-testkit/fixtures/github-webhooks")
                .join(path),
        )
        .unwrap()
    }

    const FILES: [(&str, &str); 7] = [
        ("pull_request", "pull_request/opened.payload.json"),
        ("pull_request", "pull_request/closed.payload.json"),
        (
            "pull_request_review",
            "pull_request_review/submitted.payload.json",
        ),
        (
            "pull_request_review",
            "pull_request_review/dismissed.payload.json",
        ),
        ("issues", "issues/opened.payload.json"),
        ("push", "push/payload.json"),
        ("ping", "ping/payload.json"),
    ];

    fn paths() -> BTreeSet<String> {
        [
            "review.state",
            "pull_request.merged",
            "pull_request.user.login",
            "sender.login",
            "commits.0.id",
        ]
        .into_iter()
        .map(String::from)
        .collect()
    }

    /// For each of GitHub's real payloads, what is built judges exactly
    /// as the whole body, and is stored the same.
    #[test]
    fn the_judged_part_has_the_essentials_of_the_whole_body() {
        let paths = paths();
        for (event, file) in FILES {
            let bytes = body(file);
            let whole: Value = serde_json::from_slice(&bytes).unwrap();
            let judged = parse(&bytes, &paths).unwrap();
            let (a, b) = (
                Delivery {
                    event,
                    payload: &whole,
                },
                Delivery {
                    event,
                    payload: &judged,
                },
            );
            assert_eq!(a.essentials(&paths), b.essentials(&paths), "{file}");
            assert_eq!(a.name(), b.name(), "{file}");
            assert_eq!(a.repository(), b.repository(), "{file}");
            assert_eq!(whole.get("zen"), judged.get("zen"), "{file}");
            assert!(
                judged.to_string().len() * 2 < bytes.len(),
                "{file}: only part of it is built"
            );
        }
    }

    /// Refused exactly where a whole parse refuses: every cut of a real
    /// body, bodies with bytes flipped, and JSON that is not an object;
    /// in a field it builds, also what only a `Value` refuses.
    #[test]
    fn it_refuses_what_a_whole_parse_refuses() {
        let paths = paths();
        let bytes = body("pull_request_review/submitted.payload.json");
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut cases: Vec<Vec<u8>> = (0..bytes.len())
            .step_by(97)
            .map(|n| bytes[..n].to_vec())
            .collect();
        for _ in 0..300 {
            let mut b = bytes.clone();
            let at = (next() % b.len() as u64) as usize;
            b[at] = b"{}[]\",:\\ 0aZ\x00\xff"[(next() % 14) as usize];
            cases.push(b);
        }
        for text in [
            "[1,2]",
            "\"x\"",
            "3",
            "null",
            "{\"a\":1} x",
            "{\"a\":1}",
            r#"{"a":"\u00zz"}"#,
            "{\"a\":\"\u{1}\"}",
            r#"{"a":-}"#,
            r#"{"action":1e999}"#,
            r#"{"action":"\ud800"}"#,
        ] {
            cases.push(text.as_bytes().to_vec());
        }
        // In a field it skips, what the grammar allows is taken (the
        // nesting too, as fuzz/fuzz_targets/webhook_judge.rs checks).
        let deep = format!("{{\"a\":{}{}}}", "[".repeat(200), "]".repeat(200));
        for text in [r#"{"a":1e999}"#, r#"{"a":"\ud800"}"#, &deep] {
            assert!(serde_json::from_str::<Value>(text).is_err());
            assert!(parse(text.as_bytes(), &paths).is_ok());
        }
        // In one it builds, refused as a whole parse refuses it.
        cases.push(deep.replace("\"a\"", "\"action\"").into_bytes());
        for case in cases {
            let whole = serde_json::from_slice::<Value>(&case);
            let judged = parse(&case, &paths);
            assert_eq!(
                whole.is_ok(),
                judged.is_ok(),
                "{:?}",
                String::from_utf8_lossy(&case)
            );
            if let (Ok(w), Ok(j)) = (whole, judged) {
                assert_eq!(w.is_object(), j.is_object());
            }
        }
    }

    /// A repeated key: the last one counts, as in a whole parse.
    #[test]
    fn the_last_of_a_repeated_key_counts() {
        let paths = BTreeSet::new();
        let j = parse(br#"{"action":"opened","action":"closed"}"#, &paths).unwrap();
        assert_eq!(j["action"], "closed");
        let j = parse(br#"{"review":{"state":"approved"},"review":3}"#, &paths).unwrap();
        assert_eq!(j.get("review"), None);
        let whole: Value =
            serde_json::from_slice(br#"{"review":{"state":"approved"},"review":3}"#).unwrap();
        assert_eq!(
            Delivery {
                event: "e",
                payload: &whole
            }
            .essentials(&paths),
            Delivery {
                event: "e",
                payload: &j
            }
            .essentials(&paths)
        );
    }
}
