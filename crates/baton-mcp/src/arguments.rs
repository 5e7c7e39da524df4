//! A tool call's arguments judged before the tool runs: each against the
//! tool's own input schema (the names, the types, what is required), and
//! every text against a size limit, so that an agent's mistake comes back
//! as a tool error it can read and correct (`isError`, its text
//! `WORKFLOW_INVALID_ARGUMENTS: …` with a `hint:`), as MCP asks of input
//! validation, and a 3 MB note is refused instead of stored and printed.
//! Pure: the schema and the arguments in, what is wrong out.

use serde_json::{Map, Value};

/// The longest text one argument may carry (summaries, notes, messages,
/// questions): 64 KiB.
pub const MAX_TEXT_BYTES: usize = 64 << 10;

/// The most a whole call's arguments may weigh, as JSON: 256 KiB.
pub const MAX_ARGUMENTS_BYTES: usize = 256 << 10;

/// What is wrong with `args` for a tool whose input schema is `schema`:
/// the message and the hint, or `None`.
pub fn judge(
    tool: &str,
    schema: &Map<String, Value>,
    args: &Map<String, Value>,
) -> Option<(String, String)> {
    if let Some(at) = too_long(&Value::Object(args.clone()), String::new()) {
        return Some((
            format!("{at} of {tool} is more than {MAX_TEXT_BYTES} bytes of text"),
            "say it shorter, or write the long part to a file in the repository and name the file"
                .into(),
        ));
    }
    let weight = serde_json::to_string(args).map(|s| s.len()).unwrap_or(0);
    if weight > MAX_ARGUMENTS_BYTES {
        return Some((
            format!(
                "the arguments of {tool} weigh {weight} bytes, more than the {MAX_ARGUMENTS_BYTES} a call may carry"
            ),
            "say it shorter, or write the long part to a file in the repository and name the file"
                .into(),
        ));
    }
    let props = schema.get("properties").and_then(Value::as_object);
    for name in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if args.get(name).is_none_or(Value::is_null) {
            return Some((format!("{tool} needs `{name}`"), hint_for(tool, props)));
        }
    }
    let props = props?;
    for (name, v) in args {
        let Some(want) = props.get(name) else {
            continue;
        };
        if let Some(what) = mismatch(want, v) {
            return Some((
                format!("`{name}` of {tool} must be {what}, not {}", kind(v)),
                hint_for(tool, Some(props)),
            ));
        }
    }
    None
}

/// The first text over the limit, as a path (`summary`, `files_changed[3]`).
fn too_long(v: &Value, at: String) -> Option<String> {
    match v {
        Value::String(s) if s.len() > MAX_TEXT_BYTES => Some(if at.is_empty() {
            "a value".into()
        } else {
            format!("`{at}`")
        }),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .find_map(|(i, x)| too_long(x, format!("{at}[{i}]"))),
        Value::Object(o) => o.iter().find_map(|(k, x)| {
            too_long(
                x,
                if at.is_empty() {
                    k.clone()
                } else {
                    format!("{at}.{k}")
                },
            )
        }),
        _ => None,
    }
}

/// Whether `v` fits the property schema `want` (its `type`, and for an
/// array its `items`); what it should be when not. Schemas this does not
/// read (`$ref`, `anyOf`, …) accept anything: the tool checks those.
fn mismatch(want: &Value, v: &Value) -> Option<String> {
    let types: Vec<&str> = match want.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => return None,
    };
    let fits = |t: &str| match t {
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "integer" => v.as_i64().is_some() || v.as_u64().is_some(),
        "number" => v.is_number(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        "null" => v.is_null(),
        _ => true,
    };
    if !types.iter().any(|t| fits(t)) {
        let named: Vec<String> = types
            .iter()
            .filter(|t| **t != "null")
            .map(|t| article(t))
            .collect();
        return Some(named.join(" or "));
    }
    if let (Value::Array(items), Some(item)) = (v, want.get("items")) {
        for x in items {
            if let Some(what) = mismatch(item, x) {
                return Some(format!("a list of which each is {what}"));
            }
        }
    }
    None
}

fn article(t: &str) -> String {
    match t {
        "integer" => "an integer".into(),
        "array" => "a list".into(),
        "object" => "an object".into(),
        "boolean" => "true or false".into(),
        other => format!("a {other}"),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "true or false",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The tool's arguments, named with their types.
fn hint_for(tool: &str, props: Option<&Map<String, Value>>) -> String {
    let names: Vec<String> = props
        .map(|p| {
            p.iter()
                .map(|(k, v)| {
                    let t = match v.get("type") {
                        Some(Value::String(t)) => t.clone(),
                        Some(Value::Array(ts)) => ts
                            .iter()
                            .filter_map(Value::as_str)
                            .filter(|t| *t != "null")
                            .collect::<Vec<_>>()
                            .join("|"),
                        _ => "value".into(),
                    };
                    format!("{k}: {t}")
                })
                .collect()
        })
        .unwrap_or_default();
    format!(
        "{tool} takes {{{}}} (its schema is in tools/list)",
        names.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Map<String, Value> {
        json!({
            "type": "object",
            "properties": {
                "summary": {"type": "string"},
                "files_changed": {"type": "array", "items": {"type": "string"}},
                "draft": {"type": "boolean"},
                "title": {"type": ["string", "null"]}
            },
            "required": ["summary"]
        })
        .as_object()
        .unwrap()
        .clone()
    }

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn wrong_types_and_missing_arguments_are_named() {
        let s = schema();
        assert_eq!(
            judge("t", &s, &args(json!({"summary": "ok", "title": null}))),
            None
        );
        let (m, h) = judge("phase_complete", &s, &args(json!({"summary": 3}))).unwrap();
        assert_eq!(
            m,
            "`summary` of phase_complete must be a string, not a number"
        );
        assert!(h.contains("summary: string"), "{h}");
        let (m, _) = judge("t", &s, &args(json!({}))).unwrap();
        assert_eq!(m, "t needs `summary`");
        let (m, _) = judge(
            "t",
            &s,
            &args(json!({"summary": "x", "files_changed": ["a", 1]})),
        )
        .unwrap();
        assert!(m.contains("a list of which each is a string"), "{m}");
        let (m, _) = judge("t", &s, &args(json!({"summary": "x", "draft": "yes"}))).unwrap();
        assert!(m.contains("must be true or false"), "{m}");
    }

    #[test]
    fn long_texts_are_refused_by_name() {
        let s = schema();
        let big = "x".repeat(MAX_TEXT_BYTES + 1);
        let (m, _) = judge("t", &s, &args(json!({"summary": big}))).unwrap();
        assert!(m.starts_with("`summary` of t is more than"), "{m}");
        let (m, _) = judge(
            "t",
            &s,
            &args(json!({"summary": "x", "files_changed": ["a", big]})),
        )
        .unwrap();
        assert!(m.starts_with("`files_changed[1]`"), "{m}");
        let many: Vec<String> = (0..10).map(|_| "y".repeat(MAX_TEXT_BYTES - 10)).collect();
        let (m, _) = judge(
            "t",
            &s,
            &args(json!({"summary": "x", "files_changed": many})),
        )
        .unwrap();
        assert!(m.contains("weigh"), "{m}");
    }
}
