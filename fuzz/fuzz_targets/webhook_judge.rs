//! The webhook body judge (`baton_core::webhook::judged::parse`), which
//! checks a whole body as JSON but builds only the fields a delivery is
//! judged on. It never panics; it refuses a body exactly when a whole
//! `serde_json` parse does, but for what judged.rs says it takes in the
//! fields it skips (a number beyond `f64`, an unpaired surrogate escape,
//! a nesting deeper than serde_json's limit: the grammar allows them, a
//! `Value` cannot be read from them); and for a body `serde_json` reads,
//! every field judged, and all that is derived from them (the delivery's
//! name, action, repository, facts, task ids, essentials, the value at each
//! payload path), equals what the whole body gives.

#![no_main]

use baton_core::webhook::{DEFAULT_BRANCH_PATTERN, Delivery, judged};
use libfuzzer_sys::fuzz_target;
use serde::de::IgnoredAny;
use serde_json::Value;
use std::collections::BTreeSet;

/// Payload conditions as workflows write them (through arrays too).
const PATHS: [&str; 8] = [
    "review.state",
    "pull_request.merged",
    "pull_request.user.login",
    "sender.login",
    "commits.0.id",
    "check_suite.conclusion",
    "comment.body",
    "issue.labels",
];

/// How a whole parse may refuse what the judge takes in a skipped field
/// (serde_json's own messages).
const SKIPPED_ONLY: [&str; 4] = [
    "number out of range",
    "lone leading surrogate in hex escape",
    "unexpected end of hex escape",
    "recursion limit exceeded",
];

fuzz_target!(|data: &[u8]| {
    let whole = serde_json::from_slice::<Value>(data);
    let mut paths: BTreeSet<String> = PATHS.iter().map(|p| p.to_string()).collect();
    if let Ok(v) = &whole {
        // Conditions on the body's own fields, so names the fixed ones
        // never reach are built and compared too.
        paths.extend(paths_in(v, data.len()));
    }
    let judged = judged::parse(data, &paths);
    // What the grammar allows: UTF-8, and JSON read without building it.
    let grammar = std::str::from_utf8(data)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str::<IgnoredAny>(t).map_err(|e| e.to_string()));
    match (&whole, &judged) {
        (Ok(_), Err(e)) => panic!("serde_json reads the body, the judge refuses it: {e}"),
        (Err(w), Ok(_)) => {
            assert!(
                grammar.is_ok(),
                "the judge takes what is no JSON: {w}; {grammar:?}"
            );
            let why = w.to_string();
            assert!(
                SKIPPED_ONLY.iter().any(|s| why.starts_with(s)),
                "the judge takes a body serde_json refuses for another reason: {why}"
            );
        }
        (Err(_), Err(_)) => {}
        (Ok(w), Ok(j)) => same_judgement(w, j, &paths),
    }
    if grammar.is_err() {
        assert!(judged.is_err(), "no JSON, yet judged: {grammar:?}");
    }
});

/// Everything a delivery is judged on agrees between the whole body and
/// the judged part.
fn same_judgement(whole: &Value, judged: &Value, paths: &BTreeSet<String>) {
    assert_eq!(whole.is_object(), judged.is_object(), "object or not");
    for event in ["pull_request", "ping"] {
        let (w, j) = (
            Delivery {
                event,
                payload: whole,
            },
            Delivery {
                event,
                payload: judged,
            },
        );
        assert_eq!(w.name(), j.name());
        assert_eq!(w.action(), j.action());
        assert_eq!(w.repository(), j.repository());
        assert_eq!(w.facts(), j.facts());
        for pattern in [DEFAULT_BRANCH_PATTERN, "{task-id}"] {
            assert_eq!(w.task_ids(pattern), j.task_ids(pattern));
        }
        assert_eq!(w.essentials(paths), j.essentials(paths), "essentials");
        for p in paths {
            assert_eq!(w.value_at(p), j.value_at(p), "the value at {p:?}");
        }
    }
    assert_eq!(whole.get("zen"), judged.get("zen"), "zen");
    // The judged part is what is stored: it prints as JSON that reads back.
    let text = judged.to_string();
    assert_eq!(
        serde_json::from_str::<Value>(&text).ok().as_ref(),
        Some(judged)
    );
}

/// A few dotted paths to fields of `v` (objects' keys, arrays' first
/// elements by index), picked by `salt` so runs see different ones.
fn paths_in(v: &Value, salt: usize) -> Vec<String> {
    let mut all = Vec::new();
    walk(v, String::new(), 0, &mut all);
    if all.is_empty() {
        return all;
    }
    let step = 1 + salt % 7;
    all.into_iter()
        .skip(salt % 3)
        .step_by(step)
        .take(6)
        .collect()
}

fn walk(v: &Value, at: String, depth: usize, out: &mut Vec<String>) {
    if depth == 4 || out.len() > 64 {
        return;
    }
    let join = |k: &str| {
        if at.is_empty() {
            k.to_string()
        } else {
            format!("{at}.{k}")
        }
    };
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = join(k);
                out.push(p.clone());
                walk(x, p, depth + 1, out);
            }
        }
        Value::Array(a) => {
            if let Some(x) = a.first() {
                let p = join("0");
                out.push(p.clone());
                walk(x, p, depth + 1, out);
            }
        }
        _ => {}
    }
}
