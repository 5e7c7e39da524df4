//! Small helpers for reading the CLIs' JSON, shared by the stream and
//! transcript parsers.

use serde_json::{Map, Value};

pub(crate) fn str_of<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

pub(crate) fn num(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// The first of `keys` that holds something, as text.
pub(crate) fn first_of(v: &Value, keys: &[&str]) -> String {
    keys.iter()
        .map(|k| &v[*k])
        .find(|x| !x.is_null())
        .map(content_text)
        .unwrap_or_default()
}

/// Text of a content value: a string, an array of `{text}` blocks, or JSON.
pub(crate) fn content_text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|i| match i {
                Value::String(s) => s.clone(),
                other => other
                    .get("text")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .unwrap_or_else(|| other.to_string()),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Object(o) => o
            .get("message")
            .or_else(|| o.get("text"))
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| v.to_string()),
        other => other.to_string(),
    }
}

/// The JSON objects of a JSON Lines text; every other non-blank line is a
/// warning.
pub(crate) fn objects(text: &str, warnings: &mut usize) -> Vec<Map<String, Value>> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(o)) => out.push(o),
            _ => *warnings += 1,
        }
    }
    out
}

/// Text of a content value: a string, or the `text` of each block.
pub(crate) fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .filter_map(|i| match i {
                Value::String(s) => Some(s.clone()),
                other => other.get("text").and_then(Value::as_str).map(String::from),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other
            .get("text")
            .or_else(|| other.get("output"))
            .and_then(Value::as_str)
            .map(String::from)
            .unwrap_or_else(|| other.to_string()),
    }
}

pub(crate) fn set_once(slot: &mut Option<String>, v: &Value) {
    if slot.is_none()
        && let Some(s) = v.as_str().filter(|s| !s.is_empty())
    {
        *slot = Some(s.to_string());
    }
}
