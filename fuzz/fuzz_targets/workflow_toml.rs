//! Workflow loading (`baton_core::workflow::Workflow::parse`: TOML read
//! with spans, then the phase graph validated). It never panics. An error
//! is located at a `file:line:column` that lies in the source. A workflow
//! it accepts keeps every promise of the validation (a name equal to the
//! file's, at least one phase, unique phase ids, `needs` naming other
//! existing phases without a cycle, `loop_to` one of the phases a phase
//! needs, known template variables and flags, no key that has no effect
//! on its kind of phase, positive attempts and timeouts); it reads back
//! from its pinned JSON form to itself with the same hash; and written
//! back as TOML it loads to the same workflow. Every duration it reads is
//! the milliseconds humantime reads, refused rather than cut when it does
//! not fit a timestamp (`i64` ms).

#![no_main]

use baton_core::condition::Condition;
use baton_core::workflow::{PhaseKind, WaitSpec, Workflow, is_known_variable, parse_duration};
use libfuzzer_sys::fuzz_target;
use std::collections::{BTreeMap, HashSet};

const FILE: &str = ".baton/workflows/fuzz.toml";

/// A prompt file's text: any `*.md` inside `.baton/` exists.
fn read_prompt(rel: &str) -> Result<String, String> {
    if rel.ends_with(".md") {
        Ok(format!("The prompt in {rel}: {{{{task}}}}, {{{{brief}}}}"))
    } else {
        Err("no such file".into())
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(source) = std::str::from_utf8(data) else {
        return;
    };
    // The name the file says, so the name check does not stop everything.
    let table = toml::from_str::<toml::Table>(source).ok();
    let stem = table
        .as_ref()
        .and_then(|t| t.get("name"))
        .and_then(toml::Value::as_str)
        .unwrap_or("fuzz")
        .to_string();
    if let Some(t) = &table {
        durations_are_whole(&toml::Value::Table(t.clone()));
    }
    match Workflow::parse(source, FILE, &stem, &read_prompt) {
        Err(e) => {
            assert_eq!(e.file, FILE);
            assert!(!e.message.trim().is_empty(), "{e}");
            let lines: Vec<&str> = source.split('\n').collect();
            assert!(
                e.line >= 1 && e.line <= lines.len(),
                "{e}: line out of the source"
            );
            let width = lines[e.line - 1].chars().count();
            assert!(
                e.column >= 1 && e.column <= width + 1,
                "{e}: column out of line {}",
                e.line
            );
            assert_eq!(
                e.to_string(),
                format!("{FILE}:{}:{}: {}", e.line, e.column, e.message)
            );
        }
        Ok(wf) => {
            valid(&wf, &stem);
            // The pinned form (JSON) reads back to the same definition.
            let json = serde_json::to_string(&wf).expect("JSON");
            let back: Workflow = serde_json::from_str(&json).expect("the pinned form reads back");
            assert_eq!(back, wf);
            assert_eq!(back.hash(), wf.hash());
            // Written as TOML, it loads to the same workflow.
            let text = to_toml(&wf);
            match Workflow::parse(&text, FILE, &stem, &read_prompt) {
                Ok(again) => assert_eq!(again, wf, "written back:\n{text}"),
                Err(e) => panic!("written back, it does not load: {e}\n{text}"),
            }
            // Under another file name it is refused at its name.
            if let Err(e) = Workflow::parse(source, FILE, &format!("{stem}-other"), &read_prompt) {
                assert!(e.message.contains("must equal the file name"), "{e}");
            } else {
                panic!("a workflow loaded under another file name");
            }
        }
    }
});

/// What the validation promises of an accepted workflow.
fn valid(wf: &Workflow, stem: &str) {
    assert_eq!(wf.name, stem);
    assert!(!wf.phases.is_empty());
    let ids: HashSet<&str> = wf.phases.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids.len(), wf.phases.len(), "phase ids are unique");
    let d = &wf.defaults;
    assert!(d.max_attempts >= 1);
    assert_ne!(d.timeout_ms, Some(0));
    for p in &wf.phases {
        let id = p.id.as_str();
        for n in &p.needs {
            assert!(ids.contains(n.as_str()), "{id} needs unknown {n:?}");
            assert_ne!(n.as_str(), id, "{id} needs itself");
        }
        if let Some(l) = &p.loop_to {
            assert!(ids.contains(l.as_str()));
            assert!(
                wf.ancestors(&p.id).contains(l),
                "{id} loops to {l:?}, which it does not need"
            );
        } else {
            assert_eq!(p.max_iterations, 3, "{id}: max_iterations without loop_to");
        }
        assert!(p.max_attempts >= 1);
        assert_ne!(p.timeout_ms, Some(0));
        if let Some(c) = &p.when {
            flags_known(c, wf);
        }
        if let Some(inst) = &p.instance {
            assert!(matches!(p.kind, PhaseKind::Prompt { .. }), "{id}: instance");
            assert!(!(inst.require_review == Some(true) && inst.max_reviews == Some(0)));
            assert_ne!(inst.timeout_ms, Some(0));
        }
        match &p.kind {
            PhaseKind::Run { command } => {
                templates_known(command, wf);
                assert_eq!(p.agent, d.agent, "{id}: a command phase's agent");
            }
            PhaseKind::Prompt { template, file } => {
                templates_known(template, wf);
                if let Some(f) = file {
                    assert!(!f.starts_with('/') && !f.split('/').any(|c| c == ".."));
                    assert_eq!(Ok(template.clone()), read_prompt(f));
                }
            }
            PhaseKind::Wait(w) => {
                assert_eq!(p.agent, d.agent);
                assert_eq!(p.max_attempts, d.max_attempts);
                assert_eq!(p.on_failure, d.on_failure);
                assert_eq!(p.timeout_ms, d.timeout_ms);
                assert!(p.loop_to.is_none());
                if let WaitSpec::Event { matches, .. } = w {
                    for v in matches.values() {
                        templates_known(v, wf);
                    }
                }
            }
        }
    }
    // No cycle: the phases can be ordered so that each comes after what
    // it needs.
    let mut done: HashSet<&str> = HashSet::new();
    while done.len() < wf.phases.len() {
        let before = done.len();
        for p in &wf.phases {
            if !done.contains(p.id.as_str()) && p.needs.iter().all(|n| done.contains(n.as_str())) {
                done.insert(p.id.as_str());
            }
        }
        assert!(done.len() > before, "the needs make a cycle");
    }
}

fn templates_known(t: &str, wf: &Workflow) {
    let vars = baton_core::template::variables(t).expect("a checked template parses");
    for v in vars {
        assert!(is_known_variable(v, &wf.flags), "unknown variable {v:?}");
    }
}

fn flags_known(c: &Condition, wf: &Workflow) {
    match c {
        Condition::Const(_) => {}
        Condition::Flag(f) => assert!(wf.flags.contains_key(f), "unknown flag {f:?}"),
        Condition::Not(c) => flags_known(c, wf),
        Condition::And(cs) | Condition::Or(cs) => cs.iter().for_each(|c| flags_known(c, wf)),
    }
}

/// Every `timeout` and `duration` text in the file reads as the whole
/// milliseconds humantime reads, or is refused.
fn durations_are_whole(v: &toml::Value) {
    match v {
        toml::Value::Table(t) => {
            for (k, x) in t {
                if let (true, toml::Value::String(s)) = (k == "timeout" || k == "duration", x) {
                    let exact = humantime::parse_duration(s).map(|d| d.as_millis());
                    match (parse_duration(s), exact) {
                        (Ok(ms), Ok(exact)) => {
                            assert_eq!(u128::from(ms), exact, "{k} = {s:?}");
                            assert!(i64::try_from(ms).is_ok(), "{k} = {s:?}: past a timestamp");
                        }
                        (Ok(ms), Err(e)) => panic!("{k} = {s:?} read as {ms} ms: {e}"),
                        (Err(_), Ok(exact)) => {
                            assert!(exact > i64::MAX as u128, "{k} = {s:?} refused")
                        }
                        (Err(_), Err(_)) => {}
                    }
                }
                durations_are_whole(x);
            }
        }
        toml::Value::Array(a) => a.iter().for_each(durations_are_whole),
        _ => {}
    }
}

/// The workflow written as a workflow file: defaults as they are, every
/// phase's own keys (those a kind of phase takes), durations in ms.
fn to_toml(wf: &Workflow) -> String {
    use toml::Value as V;
    let mut t = toml::Table::new();
    t.insert("name".into(), V::String(wf.name.clone()));
    t.insert("description".into(), V::String(wf.description.clone()));
    if !wf.flags.is_empty() {
        let mut f = toml::Table::new();
        for (k, v) in &wf.flags {
            let v = match v {
                serde_json::Value::Bool(b) => V::Boolean(*b),
                serde_json::Value::Number(n) => V::Integer(n.as_i64().expect("an integer flag")),
                serde_json::Value::String(s) => V::String(s.clone()),
                other => panic!("a flag of {other}"),
            };
            f.insert(k.clone(), v);
        }
        t.insert("flags".into(), V::Table(f));
    }
    let d = &wf.defaults;
    let mut defaults = toml::Table::new();
    if let Some(a) = &d.agent {
        defaults.insert("agent".into(), V::String(a.clone()));
    }
    if let Some(ms) = d.timeout_ms {
        defaults.insert("timeout".into(), V::String(format!("{ms}ms")));
    }
    defaults.insert("max_attempts".into(), V::Integer(d.max_attempts.into()));
    defaults.insert("on_failure".into(), V::String(on_failure(d.on_failure)));
    t.insert("defaults".into(), V::Table(defaults));
    let mut phases = Vec::new();
    for p in &wf.phases {
        let mut x = toml::Table::new();
        x.insert("id".into(), V::String(p.id.as_str().into()));
        x.insert(
            "needs".into(),
            V::Array(
                p.needs
                    .iter()
                    .map(|n| V::String(n.as_str().into()))
                    .collect(),
            ),
        );
        if let Some(c) = &p.when {
            x.insert("when".into(), V::String(condition(c)));
        }
        match &p.kind {
            PhaseKind::Run { command } => {
                x.insert("run".into(), V::String(command.clone()));
            }
            PhaseKind::Prompt {
                template,
                file: None,
            } => {
                x.insert("prompt".into(), V::String(template.clone()));
            }
            PhaseKind::Prompt { file: Some(f), .. } => {
                x.insert("prompt_file".into(), V::String(f.clone()));
            }
            PhaseKind::Wait(w) => {
                x.insert("wait".into(), V::Table(wait(w)));
            }
        }
        if !matches!(p.kind, PhaseKind::Wait(_)) {
            x.insert("max_attempts".into(), V::Integer(p.max_attempts.into()));
            x.insert("on_failure".into(), V::String(on_failure(p.on_failure)));
            if let Some(ms) = p.timeout_ms {
                x.insert("timeout".into(), V::String(format!("{ms}ms")));
            }
            if let Some(l) = &p.loop_to {
                x.insert("loop_to".into(), V::String(l.as_str().into()));
                x.insert("max_iterations".into(), V::Integer(p.max_iterations.into()));
            }
        }
        if matches!(p.kind, PhaseKind::Prompt { .. }) {
            if let Some(a) = &p.agent {
                x.insert("agent".into(), V::String(a.clone()));
            }
            if let Some(i) = &p.instance {
                let mut it = toml::Table::new();
                if let Some(r) = i.require_review {
                    it.insert("require_review".into(), V::Boolean(r));
                }
                if let Some(m) = i.max_reviews {
                    it.insert("max_reviews".into(), V::Integer(m.into()));
                }
                if let Some(b) = &i.base {
                    it.insert("base".into(), V::String(b.clone()));
                }
                if let Some(ms) = i.timeout_ms {
                    it.insert("timeout".into(), V::String(format!("{ms}ms")));
                }
                it.insert("interactive".into(), V::Boolean(i.interactive));
                x.insert("instance".into(), V::Table(it));
            }
        }
        phases.push(V::Table(x));
    }
    t.insert("phase".into(), V::Array(phases));
    toml::to_string(&t).expect("TOML")
}

fn wait(w: &WaitSpec) -> toml::Table {
    use toml::Value as V;
    let strings = |m: &BTreeMap<String, String>| {
        V::Table(
            m.iter()
                .map(|(k, v)| (k.clone(), V::String(v.clone())))
                .collect(),
        )
    };
    let mut t = toml::Table::new();
    match w {
        WaitSpec::Event {
            event,
            matches,
            payload,
        } => {
            t.insert("event".into(), V::String(event.clone()));
            t.insert("match".into(), strings(matches));
            if !payload.is_empty() {
                t.insert("payload".into(), strings(payload));
            }
        }
        WaitSpec::Human { question, options } => {
            t.insert("human".into(), V::String(question.clone()));
            t.insert(
                "options".into(),
                V::Array(options.iter().map(|o| V::String(o.clone())).collect()),
            );
        }
        WaitSpec::Duration { millis } => {
            t.insert("duration".into(), V::String(format!("{millis}ms")));
        }
    }
    t
}

fn condition(c: &Condition) -> String {
    match c {
        Condition::Const(b) => b.to_string(),
        Condition::Flag(f) => format!("flags.{f}"),
        Condition::Not(c) => format!("!{}", condition(c)),
        Condition::And(cs) => cs.iter().map(condition).collect::<Vec<_>>().join(" && "),
        Condition::Or(cs) => cs.iter().map(condition).collect::<Vec<_>>().join(" || "),
    }
}

fn on_failure(o: baton_core::workflow::OnFailure) -> String {
    serde_json::to_value(o)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .expect("halt, skip or retry")
}
