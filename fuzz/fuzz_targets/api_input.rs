//! The API's input (`baton_server::input`): query strings read as a task
//! filter, a journal page or a "newest" count, and JSON bodies read as a
//! person's answer. The input's first line is the query, the rest the
//! body. Nothing panics. Every error is an `ApiError` in the documented
//! shape: status 400 (413 is the body limit's, outside these functions),
//! its stable upper-case code (`BAD_QUERY`, `BAD_FILTER`, `BAD_BODY`), a
//! message and a hint. A filter that checks has one of the seven task
//! statuses (the one named, in any case) and a label with a non-empty key
//! that is the text before its first `=`. A new task's body (`NewTask`)
//! is read the same way. What is read agrees with the
//! query's pairs and the body's JSON read on their own: known names, each
//! once, values of their type; and read again after being written again.

#![no_main]

use baton_core::lease::DisplayStatus;
use baton_server::input::{Answer, NewTask, Newest, Page, TaskFilter, parse_json, parse_query};
use baton_server::views::ApiError;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use std::collections::BTreeMap;

const STATUSES: [DisplayStatus; 7] = [
    DisplayStatus::Running,
    DisplayStatus::Queued,
    DisplayStatus::Waiting,
    DisplayStatus::Crashed,
    DisplayStatus::Failed,
    DisplayStatus::Complete,
    DisplayStatus::Cancelled,
];

fuzz_target!(|data: &[u8]| {
    let (query, body) = match data.iter().position(|b| *b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &data[..0]),
    };
    if let Ok(q) = std::str::from_utf8(query) {
        let q = q.strip_prefix('?').unwrap_or(q);
        filter(q);
        numbers::<Page>(q, &["after", "limit"], |p| vec![p.after, p.limit]);
        numbers::<Newest>(q, &["limit"], |n| vec![n.limit]);
    }
    answer(body);
    new_task(body);
    // The whole input as a body too: a query line is rarely JSON.
    answer(data);
    new_task(data);
});

/// The pairs of a query as its reader decodes them (`+` is a space,
/// `%XX` a byte), when every name is one of `names` and said once.
fn pairs(q: &str, names: &[&str]) -> Option<BTreeMap<String, String>> {
    let all: Vec<(String, String)> = serde_urlencoded::from_str(q).expect("pairs always read");
    let mut out = BTreeMap::new();
    for (k, v) in all {
        if !names.contains(&k.as_str()) || out.insert(k, v).is_some() {
            return None;
        }
    }
    Some(out)
}

fn filter(q: &str) {
    let read = parse_query::<TaskFilter>(q);
    let want = pairs(q, &["status", "workflow", "label"]);
    assert_eq!(
        read.is_ok(),
        want.is_some(),
        "{q:?}: {:?}",
        read.as_ref().err()
    );
    let f = match read {
        Err(e) => return shape(&e, "BAD_QUERY"),
        Ok(f) => f,
    };
    let want = want.expect("agreed");
    assert_eq!(f.status.as_ref(), want.get("status"));
    assert_eq!(f.workflow.as_ref(), want.get("workflow"));
    assert_eq!(f.label.as_ref(), want.get("label"));
    // Written again, it reads the same.
    let again: Vec<(&str, &String)> = [
        ("status", &f.status),
        ("workflow", &f.workflow),
        ("label", &f.label),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.as_ref().map(|v| (k, v)))
    .collect();
    let text = serde_urlencoded::to_string(&again).expect("encodes");
    let g = parse_query::<TaskFilter>(&text).expect("a written filter reads");
    assert_eq!(
        (&g.status, &g.workflow, &g.label),
        (&f.status, &f.workflow, &f.label)
    );
    let (status, workflow, label) = (f.status.clone(), f.workflow.clone(), f.label.clone());
    match f.check() {
        Err(e) => {
            shape(&e, "BAD_FILTER");
            let status_ok = status
                .as_ref()
                .is_none_or(|s| STATUSES.iter().any(|d| d.as_str().eq_ignore_ascii_case(s)));
            let label_ok = label
                .as_ref()
                .is_none_or(|l| l.split_once('=').is_some_and(|(k, _)| !k.is_empty()));
            assert!(!(status_ok && label_ok), "a good filter refused: {e:?}");
        }
        Ok(c) => {
            match (&c.status, &status) {
                (Some(d), Some(s)) => {
                    assert!(STATUSES.contains(d));
                    assert!(d.as_str().eq_ignore_ascii_case(s), "{s:?} read as {d:?}");
                }
                (None, None) => {}
                other => panic!("status {other:?}"),
            }
            assert_eq!(c.workflow, workflow);
            match (&c.label, &label) {
                (Some((k, v)), Some(l)) => {
                    assert!(!k.is_empty(), "a label with an empty key");
                    assert!(!k.contains('='), "the key is the text before the first =");
                    assert_eq!(format!("{k}={v}"), *l);
                }
                (None, None) => {}
                other => panic!("label {other:?}"),
            }
        }
    }
}

/// A query of optional `u32`s (`Page`, `Newest`).
fn numbers<T: serde::de::DeserializeOwned>(
    q: &str,
    names: &[&str],
    values: impl Fn(&T) -> Vec<Option<u32>>,
) {
    let read = parse_query::<T>(q);
    let want = pairs(q, names).and_then(|m| {
        names
            .iter()
            .map(|n| {
                m.get(*n)
                    .map(|v| v.parse::<u32>().ok())
                    .map_or(Some(None), |v| v.map(Some))
            })
            .collect::<Option<Vec<Option<u32>>>>()
    });
    match (read, want) {
        (Ok(t), Some(w)) => {
            assert_eq!(values(&t), w, "{q:?}");
            let again: Vec<(&str, u32)> = names
                .iter()
                .zip(&w)
                .filter_map(|(n, v)| v.map(|v| (*n, v)))
                .collect();
            let text = serde_urlencoded::to_string(&again).expect("encodes");
            let t2 = parse_query::<T>(&text).expect("written numbers read");
            assert_eq!(values(&t2), w);
        }
        (Err(e), None) => shape(&e, "BAD_QUERY"),
        (Ok(t), None) => panic!("{q:?} read as {:?}", values(&t)),
        (Err(e), Some(w)) => panic!("{q:?} ({w:?}) refused: {e:?}"),
    }
}

fn answer(body: &[u8]) {
    let read = parse_json::<Answer>(body);
    // The body read on its own: an object of `answer` (text) and `by`
    // (text or null), nothing else.
    let json = serde_json::from_slice::<Value>(body).ok();
    let fits = json.as_ref().and_then(Value::as_object).and_then(|o| {
        let answer = o.get("answer")?.as_str()?.to_string();
        let by = match o.get("by") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return None,
        };
        o.keys()
            .all(|k| k == "answer" || k == "by")
            .then_some((answer, by))
    });
    match (&read, &fits) {
        (Ok(a), Some((answer, by))) => {
            assert_eq!((&a.answer, &a.by), (answer, by));
        }
        (Ok(a), None) => panic!("{:?} read as {a:?}", String::from_utf8_lossy(body)),
        (Err(e), Some(_)) => {
            // Only a name said twice (the first of its values may not even
            // fit), which a JSON value keeps once: written once, it reads.
            shape(e, "BAD_BODY");
            let again = serde_json::to_vec(json.as_ref().expect("read")).expect("JSON");
            parse_json::<Answer>(&again).expect("written once, it reads");
        }
        (Err(e), None) => shape(e, "BAD_BODY"),
    }
}

fn new_task(body: &[u8]) {
    let read = parse_json::<NewTask>(body);
    // The body read on its own: `workflow` (text) and the optional others
    // of their types (text, lists of text, a boolean), nothing else.
    let json = serde_json::from_slice::<Value>(body).ok();
    let texts = |v: &Value| {
        v.as_array()
            .and_then(|a| a.iter().map(|x| x.as_str().map(str::to_string)).collect::<Option<Vec<_>>>())
    };
    let fits = json.as_ref().and_then(Value::as_object).and_then(|o| {
        let workflow = o.get("workflow")?.as_str()?.to_string();
        let opt_text = |k: &str| match o.get(k) {
            None | Some(Value::Null) => Some(None),
            Some(Value::String(s)) => Some(Some(s.clone())),
            Some(_) => None,
        };
        let description = match o.get("description") {
            None => String::new(),
            Some(v) => v.as_str()?.to_string(),
        };
        let flags = o.get("flags").map_or(Some(vec![]), texts)?;
        let labels = o.get("labels").map_or(Some(vec![]), texts)?;
        let queue = o.get("queue").map_or(Some(false), Value::as_bool)?;
        let needs = o.get("needs").map_or(Some(vec![]), texts)?;
        let known = ["workflow", "description", "id", "flags", "labels", "agent", "queue", "needs"];
        o.keys().all(|k| known.contains(&k.as_str())).then_some(())?;
        Some((workflow, description, opt_text("id")?, flags, labels, opt_text("agent")?, queue, needs))
    });
    match (&read, &fits) {
        (Ok(t), Some(w)) => {
            let got = (&t.workflow, &t.description, &t.id, &t.flags, &t.labels, &t.agent, t.queue, &t.needs);
            assert_eq!(got, (&w.0, &w.1, &w.2, &w.3, &w.4, &w.5, w.6, &w.7));
        }
        (Ok(t), None) => panic!("{:?} read as {t:?}", String::from_utf8_lossy(body)),
        (Err(e), Some(_)) => {
            shape(e, "BAD_BODY");
            let again = serde_json::to_vec(json.as_ref().expect("read")).expect("JSON");
            parse_json::<NewTask>(&again).expect("written once, it reads");
        }
        (Err(e), None) => shape(e, "BAD_BODY"),
    }
}

/// The documented error shape.
fn shape(e: &ApiError, code: &str) {
    assert!(e.status == 400 || e.status == 413, "{e:?}");
    assert_eq!(e.code, code, "{e:?}");
    assert!(
        !e.code.is_empty()
            && e.code.bytes().all(|b| b.is_ascii_uppercase() || b == b'_')
            && !e.code.starts_with('_')
            && !e.code.ends_with('_'),
        "{e:?}"
    );
    assert!(!e.message.trim().is_empty(), "{e:?}");
    assert!(!e.hint.trim().is_empty(), "{e:?}");
    let v = serde_json::to_value(e).expect("JSON");
    let keys: Vec<&str> = v
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["code", "message", "hint"], "{v}");
}
