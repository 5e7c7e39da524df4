//! Workflow definitions (`.baton/workflows/NAME.toml`, docs/workflow.md):
//! parsing with exact error locations, and validation of the phase graph.

use crate::condition::Condition;
use crate::ids::PhaseId;
use crate::template;
use serde::{Deserialize, Serialize};
use serde_spanned::Spanned;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Range;

/// A validated workflow. Serialized as JSON it is the pinned definition a
/// task keeps (prompt files are inlined, so editing them changes the hash).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Workflow {
    pub name: String,
    pub description: String,
    pub defaults: Defaults,
    pub flags: BTreeMap<String, serde_json::Value>,
    pub phases: Vec<Phase>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Defaults {
    pub agent: Option<String>,
    pub timeout_ms: Option<u64>,
    pub max_attempts: u32,
    pub on_failure: OnFailure,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnFailure {
    Halt,
    Skip,
    Retry,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Phase {
    pub id: PhaseId,
    pub needs: Vec<PhaseId>,
    pub when: Option<Condition>,
    pub kind: PhaseKind,
    pub agent: Option<String>,
    pub loop_to: Option<PhaseId>,
    pub max_iterations: u32,
    pub max_attempts: u32,
    pub on_failure: OnFailure,
    pub timeout_ms: Option<u64>,
    /// An agent phase run as a coding agent instance (its own worktree,
    /// the bounded review loop): `instance = { require_review = true }`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<InstanceSpec>,
}

/// `instance = { … }` on an agent phase: what the coding instance is
/// given; the rest comes from `[instances]` in config.toml.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstanceSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require_review: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_reviews: Option<u32>,
    /// The branch the work starts from (default: the checked-out one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// Its execution timeout (default `[instances.coding]`'s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Run the agent's terminal UI in tmux instead of headless turns.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interactive: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PhaseKind {
    /// A shell command; exit 0 is PASS.
    Run { command: String },
    /// An agent phase; `template` is the prompt (inlined from `prompt_file`
    /// when `file` is set).
    Prompt {
        template: String,
        file: Option<String>,
    },
    /// Waits for an external event, a human, or a durable timer.
    Wait(WaitSpec),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitSpec {
    Event {
        event: String,
        matches: BTreeMap<String, String>,
        /// Conditions on the event's payload: a dotted path and the value
        /// it must have (`"review.state" = "approved"`).
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        payload: BTreeMap<String, String>,
    },
    Human {
        question: String,
        options: Vec<String>,
    },
    Duration {
        millis: u64,
    },
}

impl WaitSpec {
    /// A sentence saying what the phase waits for.
    pub fn describe(&self) -> String {
        match self {
            WaitSpec::Event {
                event,
                matches,
                payload,
            } => {
                let mut s = format!("the event {event}");
                if !matches.is_empty() {
                    let m: Vec<String> = matches.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    s.push_str(&format!(" matching {}", m.join(", ")));
                }
                if !payload.is_empty() {
                    let m: Vec<String> =
                        payload.iter().map(|(k, v)| format!("{k} = {v}")).collect();
                    s.push_str(&format!(" where {}", m.join(", ")));
                }
                s
            }
            WaitSpec::Human { question, options } if options.is_empty() => {
                format!("a human answer to {question:?}")
            }
            WaitSpec::Human { question, options } => {
                format!("a human answer to {question:?} ({})", options.join("/"))
            }
            WaitSpec::Duration { millis } => {
                format!("a timer of {}", crate::time::human_millis(*millis as i64))
            }
        }
    }
}

impl Phase {
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            PhaseKind::Run { .. } => "command",
            PhaseKind::Prompt { .. } => "agent",
            PhaseKind::Wait(_) => "wait",
        }
    }
}

/// An invalid workflow file, located at `file:line:column`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}:{column}: {message}")]
pub struct WorkflowError {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl Workflow {
    /// Parses and validates a workflow. `file` is the path shown in errors,
    /// `stem` the file name without `.toml` (the `name` must equal it), and
    /// `read_prompt` loads a `prompt_file` (relative to `.baton/`).
    pub fn parse(
        source: &str,
        file: &str,
        stem: &str,
        read_prompt: &dyn Fn(&str) -> Result<String, String>,
    ) -> Result<Workflow, WorkflowError> {
        let src = Source { text: source, file };
        let raw: RawWorkflow = toml::from_str(source).map_err(|e| {
            let msg = e.message().trim().to_string();
            src.at(e.span(), msg)
        })?;
        if raw.name.get_ref() != stem {
            return Err(src.at(
                Some(raw.name.span()),
                format!(
                    "name {:?} must equal the file name {stem:?}",
                    raw.name.get_ref()
                ),
            ));
        }
        let flags = parse_flags(raw.flags.unwrap_or_default(), &src)?;
        let defaults = parse_defaults(raw.defaults.unwrap_or_default(), &src)?;
        if raw.phase.is_empty() {
            return Err(src.at(None, "a workflow needs at least one [[phase]]".into()));
        }
        // Ids first, so `needs` and `loop_to` can point forward.
        let ids = phase_ids(&raw.phase, &src)?;
        let cx = PhaseContext {
            src: &src,
            ids: &ids,
            flags: &flags,
            defaults: &defaults,
            read_prompt,
        };
        let mut phases = Vec::with_capacity(raw.phase.len());
        let mut need_spans: Vec<Vec<Range<usize>>> = Vec::new();
        let mut loop_spans: Vec<Option<Range<usize>>> = Vec::new();
        for (i, sp) in raw.phase.iter().enumerate() {
            let previous = i
                .checked_sub(1)
                .map(|j| raw.phase[j].get_ref().id.get_ref().as_str());
            let parsed = parse_phase(sp.get_ref(), previous, &cx)?;
            phases.push(parsed.phase);
            need_spans.push(parsed.need_spans);
            loop_spans.push(parsed.loop_span);
        }
        let wf = Workflow {
            name: raw.name.into_inner(),
            description: raw.description.unwrap_or_default(),
            defaults,
            flags,
            phases,
        };
        wf.refuse_need_cycle(&need_spans, &src)?;
        wf.refuse_loops_outside_needs(&loop_spans, &src)?;
        Ok(wf)
    }

    /// Refuses `needs` that go round in a circle, pointing at the need that
    /// closes it.
    fn refuse_need_cycle(
        &self,
        need_spans: &[Vec<Range<usize>>],
        src: &Source,
    ) -> Result<(), WorkflowError> {
        if let Some((i, j)) = self.find_cycle() {
            let span = need_spans[i].get(j).cloned();
            return Err(src.at(
                span,
                format!(
                    "phase {:?} needing {:?} makes a cycle",
                    self.phases[i].id.as_str(),
                    self.phases[i].needs[j].as_str()
                ),
            ));
        }
        Ok(())
    }

    /// Refuses a `loop_to` that does not point at one of the phases its
    /// phase needs, directly or through others.
    fn refuse_loops_outside_needs(
        &self,
        loop_spans: &[Option<Range<usize>>],
        src: &Source,
    ) -> Result<(), WorkflowError> {
        for (i, p) in self.phases.iter().enumerate() {
            if let Some(l) = &p.loop_to
                && !self.ancestors(&p.id).contains(l)
            {
                return Err(src.at(
                    loop_spans[i].clone(),
                    format!(
                        "phase {:?} loops to {:?}, which is not one of the phases it needs (directly or through others)",
                        p.id.as_str(),
                        l.as_str()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The SHA-256 of the canonical JSON form: the definition's identity.
    pub fn hash(&self) -> String {
        let json = serde_json::to_vec(self).expect("workflow serializes");
        let digest = Sha256::digest(&json);
        digest.iter().map(|b| format!("{b:02x}")).collect()
    }

    pub fn phase(&self, id: &str) -> Option<&Phase> {
        self.phases.iter().find(|p| p.id.as_str() == id)
    }

    pub fn index_of(&self, id: &str) -> Option<usize> {
        self.phases.iter().position(|p| p.id.as_str() == id)
    }

    /// Every phase `id` needs, directly or through others.
    pub fn ancestors(&self, id: &PhaseId) -> HashSet<PhaseId> {
        let mut seen = HashSet::new();
        let mut stack = vec![id.clone()];
        while let Some(cur) = stack.pop() {
            if let Some(p) = self.phase(cur.as_str()) {
                for n in &p.needs {
                    if seen.insert(n.clone()) {
                        stack.push(n.clone());
                    }
                }
            }
        }
        seen
    }

    /// `id` and every phase that needs it, directly or through others.
    pub fn descendants(&self, id: &PhaseId) -> HashSet<PhaseId> {
        let mut seen = HashSet::new();
        seen.insert(id.clone());
        let mut changed = true;
        while changed {
            changed = false;
            for p in &self.phases {
                if !seen.contains(&p.id) && p.needs.iter().any(|n| seen.contains(n)) {
                    seen.insert(p.id.clone());
                    changed = true;
                }
            }
        }
        seen
    }

    /// A (phase index, needs index) that closes a cycle, if any.
    fn find_cycle(&self) -> Option<(usize, usize)> {
        // 0 = unvisited, 1 = on stack, 2 = done
        let mut mark = vec![0u8; self.phases.len()];
        fn visit(wf: &Workflow, i: usize, mark: &mut [u8]) -> Option<(usize, usize)> {
            mark[i] = 1;
            for (j, n) in wf.phases[i].needs.iter().enumerate() {
                let k = wf.index_of(n.as_str()).expect("validated");
                if mark[k] == 1 {
                    return Some((i, j));
                }
                if mark[k] == 0
                    && let Some(c) = visit(wf, k, mark)
                {
                    return Some(c);
                }
            }
            mark[i] = 2;
            None
        }
        for i in 0..self.phases.len() {
            if mark[i] == 0
                && let Some(c) = visit(self, i, &mut mark)
            {
                return Some(c);
            }
        }
        None
    }
}

// ---------------------------------------------------------------------------
// Parsing, section by section
// ---------------------------------------------------------------------------

/// The workflow file's text and path, to locate an error.
struct Source<'a> {
    text: &'a str,
    file: &'a str,
}

impl Source<'_> {
    /// The error `message` at `span` (the start of the file without one).
    fn at(&self, span: Option<Range<usize>>, message: String) -> WorkflowError {
        let (line, column) = line_col(self.text, span.map(|s| s.start).unwrap_or(0));
        WorkflowError {
            file: self.file.to_string(),
            line,
            column,
            message,
        }
    }
}

/// `[flags]`: each a boolean, an integer or a string.
fn parse_flags(
    raw: BTreeMap<String, Spanned<toml::Value>>,
    src: &Source,
) -> Result<BTreeMap<String, serde_json::Value>, WorkflowError> {
    let mut flags = BTreeMap::new();
    for (k, v) in raw {
        let v = match v.into_inner() {
            toml::Value::Boolean(b) => serde_json::Value::Bool(b),
            toml::Value::Integer(i) => serde_json::Value::from(i),
            toml::Value::String(s) => serde_json::Value::String(s),
            other => {
                return Err(src.at(
                    None,
                    format!(
                        "flag {k:?} must be a boolean, an integer or a string, not a {}",
                        other.type_str()
                    ),
                ));
            }
        };
        flags.insert(k, v);
    }
    Ok(flags)
}

/// `[defaults]`, with what a phase gets when neither says.
fn parse_defaults(d: RawDefaults, src: &Source) -> Result<Defaults, WorkflowError> {
    Ok(Defaults {
        agent: d.agent,
        timeout_ms: match &d.timeout {
            Some(t) => Some(parse_timeout(t.get_ref()).map_err(|m| src.at(Some(t.span()), m))?),
            None => None,
        },
        max_attempts: match &d.max_attempts {
            Some(m) if *m.get_ref() == 0 => {
                return Err(src.at(Some(m.span()), "max_attempts must be at least 1".into()));
            }
            Some(m) => *m.get_ref(),
            None => 1,
        },
        on_failure: match &d.on_failure {
            Some(o) => parse_on_failure(o.get_ref()).map_err(|m| src.at(Some(o.span()), m))?,
            None => OnFailure::Halt,
        },
    })
}

/// Each phase id (valid, given once) and its index.
fn phase_ids(
    raw: &[Spanned<RawPhase>],
    src: &Source,
) -> Result<HashMap<String, usize>, WorkflowError> {
    let mut ids: HashMap<String, usize> = HashMap::new();
    for (i, p) in raw.iter().enumerate() {
        let id = p.get_ref().id.get_ref();
        PhaseId::parse(id).map_err(|e| src.at(Some(p.get_ref().id.span()), e.to_string()))?;
        if ids.insert(id.clone(), i).is_some() {
            return Err(src.at(
                Some(p.get_ref().id.span()),
                format!("duplicate phase id {id:?}"),
            ));
        }
    }
    Ok(ids)
}

/// What a phase is parsed against: the file, every phase id, the flags and
/// the defaults.
struct PhaseContext<'a> {
    src: &'a Source<'a>,
    ids: &'a HashMap<String, usize>,
    flags: &'a BTreeMap<String, serde_json::Value>,
    defaults: &'a Defaults,
    read_prompt: &'a dyn Fn(&str) -> Result<String, String>,
}

impl PhaseContext<'_> {
    /// Refuses a template with unknown variables, at the template.
    fn check_template(&self, t: &Spanned<String>) -> Result<(), WorkflowError> {
        check_template(t.get_ref(), self.flags).map_err(|m| self.src.at(Some(t.span()), m))
    }
}

/// A parsed phase, with where its `needs` and `loop_to` were written (to
/// locate the graph's errors once every phase is known).
struct ParsedPhase {
    phase: Phase,
    need_spans: Vec<Range<usize>>,
    loop_span: Option<Range<usize>>,
}

/// One `[[phase]]`; `previous` is the id of the phase before it, which it
/// needs when it says nothing.
fn parse_phase(
    p: &RawPhase,
    previous: Option<&str>,
    cx: &PhaseContext,
) -> Result<ParsedPhase, WorkflowError> {
    let src = cx.src;
    let id = PhaseId::parse(p.id.get_ref()).expect("checked above");
    let (needs, need_spans) = phase_needs(p, &id, previous, cx)?;
    let kind = phase_kind(p, &id, cx)?;
    refuse_ignored_keys(p, &id, &kind, src)?;
    let when = match &p.when {
        Some(w) => Some(
            Condition::parse(w.get_ref(), |f| cx.flags.contains_key(f))
                .map_err(|m| src.at(Some(w.span()), m))?,
        ),
        None => None,
    };
    let loop_to = phase_loop_to(p, &id, cx)?;
    let instance = match &p.instance {
        None => None,
        Some(i) => Some(phase_instance(i, &id, src)?),
    };
    let max_attempts = match &p.max_attempts {
        Some(m) if *m.get_ref() == 0 => {
            return Err(src.at(Some(m.span()), "max_attempts must be at least 1".into()));
        }
        Some(m) => *m.get_ref(),
        None => cx.defaults.max_attempts,
    };
    let phase = Phase {
        id,
        needs,
        when,
        kind,
        agent: p
            .agent
            .as_ref()
            .map(|a| a.get_ref().clone())
            .or_else(|| cx.defaults.agent.clone()),
        loop_to,
        max_iterations: p.max_iterations.unwrap_or(3),
        max_attempts,
        on_failure: match &p.on_failure {
            Some(o) => parse_on_failure(o.get_ref()).map_err(|m| src.at(Some(o.span()), m))?,
            None => cx.defaults.on_failure,
        },
        timeout_ms: match &p.timeout {
            Some(t) => Some(parse_timeout(t.get_ref()).map_err(|m| src.at(Some(t.span()), m))?),
            None => cx.defaults.timeout_ms,
        },
        instance,
    };
    Ok(ParsedPhase {
        phase,
        need_spans,
        loop_span: p.loop_to.as_ref().map(|l| l.span()),
    })
}

/// A phase's `needs`, each a known phase other than itself; without
/// `needs`, the phase before it. With where each was written.
fn phase_needs(
    p: &RawPhase,
    id: &PhaseId,
    previous: Option<&str>,
    cx: &PhaseContext,
) -> Result<(Vec<PhaseId>, Vec<Range<usize>>), WorkflowError> {
    let mut needs = Vec::new();
    let mut spans = Vec::new();
    match &p.needs {
        Some(list) => {
            for n in list {
                if !cx.ids.contains_key(n.get_ref()) {
                    return Err(cx.src.at(
                        Some(n.span()),
                        format!("phase \"{id}\" needs unknown phase {:?}", n.get_ref()),
                    ));
                }
                if n.get_ref() == id.as_str() {
                    return Err(cx
                        .src
                        .at(Some(n.span()), format!("phase \"{id}\" cannot need itself")));
                }
                needs.push(PhaseId::parse(n.get_ref()).expect("known id"));
                spans.push(n.span());
            }
        }
        None => {
            if let Some(prev) = previous {
                needs.push(PhaseId::parse(prev).expect("known id"));
                spans.push(p.id.span());
            }
        }
    }
    Ok((needs, spans))
}

/// What a phase does: exactly one of `run`, `prompt`, `prompt_file` (a
/// path inside `.baton/`, read and inlined) or `wait`, templates checked.
fn phase_kind(p: &RawPhase, id: &PhaseId, cx: &PhaseContext) -> Result<PhaseKind, WorkflowError> {
    let src = cx.src;
    let set = [
        p.run.is_some(),
        p.prompt.is_some(),
        p.prompt_file.is_some(),
        p.wait.is_some(),
    ]
    .iter()
    .filter(|b| **b)
    .count();
    if set != 1 {
        return Err(src.at(
            Some(p.id.span()),
            format!(
                "phase \"{id}\" must have exactly one of `prompt`, `prompt_file`, `run` or `wait` (it has {set})"
            ),
        ));
    }
    if let Some(run) = &p.run {
        cx.check_template(run)?;
        Ok(PhaseKind::Run {
            command: run.get_ref().clone(),
        })
    } else if let Some(prompt) = &p.prompt {
        cx.check_template(prompt)?;
        Ok(PhaseKind::Prompt {
            template: prompt.get_ref().clone(),
            file: None,
        })
    } else if let Some(pf) = &p.prompt_file {
        let rel = pf.get_ref();
        if rel.starts_with('/') || rel.split('/').any(|c| c == "..") {
            return Err(src.at(
                Some(pf.span()),
                format!("prompt_file {rel:?} must be a path inside .baton/"),
            ));
        }
        let text = (cx.read_prompt)(rel).map_err(|m| {
            src.at(
                Some(pf.span()),
                format!("cannot read prompt_file {rel:?}: {m}"),
            )
        })?;
        cx.check_template(&Spanned::new(pf.span(), text.clone()))
            .map_err(|e| WorkflowError {
                message: format!("in {rel}: {}", e.message),
                ..e
            })?;
        Ok(PhaseKind::Prompt {
            template: text,
            file: Some(rel.clone()),
        })
    } else {
        let w = p.wait.as_ref().expect("counted above");
        Ok(PhaseKind::Wait(
            parse_wait(w.get_ref(), cx.flags).map_err(|m| src.at(Some(w.span()), m))?,
        ))
    }
}

/// Refuses keys that do nothing for this kind of phase, so nobody believes
/// a wait has a timeout or a command an agent.
fn refuse_ignored_keys(
    p: &RawPhase,
    id: &PhaseId,
    kind: &PhaseKind,
    src: &Source,
) -> Result<(), WorkflowError> {
    let ignored: Vec<(&str, Option<Range<usize>>)> = match kind {
        PhaseKind::Wait(_) => vec![
            ("timeout", p.timeout.as_ref().map(|t| t.span())),
            ("max_attempts", p.max_attempts.as_ref().map(|m| m.span())),
            ("on_failure", p.on_failure.as_ref().map(|o| o.span())),
            ("agent", p.agent.as_ref().map(|a| a.span())),
            ("loop_to", p.loop_to.as_ref().map(|l| l.span())),
            ("instance", p.instance.as_ref().map(|i| i.span())),
        ],
        PhaseKind::Run { .. } => vec![
            ("agent", p.agent.as_ref().map(|a| a.span())),
            ("instance", p.instance.as_ref().map(|i| i.span())),
        ],
        PhaseKind::Prompt { .. } => Vec::new(),
    };
    if let Some((key, span)) = ignored.into_iter().find(|(_, s)| s.is_some()) {
        let what = match kind {
            PhaseKind::Wait(_) => "a wait phase",
            _ => "a `run` (command) phase",
        };
        return Err(src.at(
            span,
            format!("phase \"{id}\": `{key}` has no effect on {what}; remove it"),
        ));
    }
    Ok(())
}

/// A phase's `loop_to`, a known phase; `max_iterations` only goes with it.
fn phase_loop_to(
    p: &RawPhase,
    id: &PhaseId,
    cx: &PhaseContext,
) -> Result<Option<PhaseId>, WorkflowError> {
    let loop_to = match &p.loop_to {
        Some(l) => {
            if !cx.ids.contains_key(l.get_ref()) {
                return Err(cx.src.at(
                    Some(l.span()),
                    format!("phase \"{id}\" loops to unknown phase {:?}", l.get_ref()),
                ));
            }
            Some(PhaseId::parse(l.get_ref()).expect("known id"))
        }
        None => None,
    };
    if p.max_iterations.is_some() && loop_to.is_none() {
        return Err(cx.src.at(
            Some(p.id.span()),
            format!("phase \"{id}\" sets max_iterations without loop_to"),
        ));
    }
    Ok(loop_to)
}

/// A phase's `instance = { … }`: a review required must be allowed at
/// least once, and its timeout is a duration.
fn phase_instance(
    i: &Spanned<RawInstance>,
    id: &PhaseId,
    src: &Source,
) -> Result<InstanceSpec, WorkflowError> {
    let r = i.get_ref();
    if r.require_review == Some(true) && r.max_reviews == Some(0) {
        return Err(src.at(
            Some(i.span()),
            format!("phase \"{id}\": instance requires a review but allows max_reviews = 0"),
        ));
    }
    Ok(InstanceSpec {
        require_review: r.require_review,
        max_reviews: r.max_reviews,
        base: r.base.clone(),
        timeout_ms: match &r.timeout {
            Some(t) => Some(
                parse_timeout(t)
                    .map_err(|m| src.at(Some(i.span()), format!("instance timeout: {m}")))?,
            ),
            None => None,
        },
        interactive: r.interactive.unwrap_or(false),
    })
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(source.len());
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// Parses `30m`, `2h`, `1h 30m`, `500ms` into milliseconds. At most
/// `i64::MAX` ms (some 292 million years), as deadlines are timestamps of
/// that type: longer is refused, never cut to fewer bits (which made
/// `"18446744073709552s"` 384 ms, and a longer wait one that had passed).
pub fn parse_duration(s: &str) -> Result<u64, String> {
    let d = humantime::parse_duration(s).map_err(|e| {
        format!("invalid duration {s:?}: {e} (write e.g. \"30s\", \"10m\", \"2h\")")
    })?;
    i64::try_from(d.as_millis())
        .map(|ms| ms as u64)
        .map_err(|_| format!("invalid duration {s:?}: too long (at most {} ms)", i64::MAX))
}

/// A `timeout`: a duration of more than 0.
fn parse_timeout(s: &str) -> Result<u64, String> {
    match parse_duration(s)? {
        0 => Err(format!(
            "timeout {s:?} must be more than 0 (leave `timeout` out for no limit)"
        )),
        ms => Ok(ms),
    }
}

fn parse_on_failure(s: &str) -> Result<OnFailure, String> {
    match s {
        "halt" => Ok(OnFailure::Halt),
        "skip" => Ok(OnFailure::Skip),
        "retry" => Ok(OnFailure::Retry),
        other => Err(format!(
            "on_failure must be \"halt\", \"skip\" or \"retry\", not {other:?}"
        )),
    }
}

/// Refuses templates with unknown variables.
fn check_template(t: &str, flags: &BTreeMap<String, serde_json::Value>) -> Result<(), String> {
    let vars = template::variables(t).map_err(|e| e.to_string())?;
    for v in vars {
        if !is_known_variable(v, flags) {
            return Err(format!(
                "unknown template variable {{{{{v}}}}} (known: task, task_id, phase, brief, flags.NAME, labels.NAME)"
            ));
        }
    }
    Ok(())
}

pub fn is_known_variable(v: &str, flags: &BTreeMap<String, serde_json::Value>) -> bool {
    match v {
        "task" | "task_id" | "phase" | "brief" => true,
        _ => {
            if let Some(f) = v.strip_prefix("flags.") {
                flags.contains_key(f)
            } else if let Some(l) = v.strip_prefix("labels.") {
                !l.is_empty()
            } else {
                false
            }
        }
    }
}

fn parse_wait(
    w: &RawWait,
    flags: &BTreeMap<String, serde_json::Value>,
) -> Result<WaitSpec, String> {
    let kinds = [w.event.is_some(), w.human.is_some(), w.duration.is_some()]
        .iter()
        .filter(|b| **b)
        .count();
    if kinds != 1 {
        return Err("wait must have exactly one of `event`, `human` or `duration`".into());
    }
    if (w.r#match.is_some() || w.payload.is_some()) && w.event.is_none() {
        return Err("wait `match` and `payload` only go with `event`".into());
    }
    if w.options.is_some() && w.human.is_none() {
        return Err("wait `options` only go with `human`".into());
    }
    if let Some(event) = &w.event {
        let matches = w.r#match.clone().unwrap_or_default();
        for v in matches.values() {
            check_template(v, flags)?;
        }
        let payload = w
            .payload
            .iter()
            .flatten()
            .map(|(k, v)| match v {
                serde_json::Value::String(s) => Ok((k.clone(), s.clone())),
                serde_json::Value::Bool(_) | serde_json::Value::Number(_) => {
                    Ok((k.clone(), v.to_string()))
                }
                _ => Err(format!(
                    "wait `payload` {k:?}: a string, number or boolean to compare the event's value with"
                )),
            })
            .collect::<Result<_, String>>()?;
        Ok(WaitSpec::Event {
            event: event.clone(),
            matches,
            payload,
        })
    } else if let Some(q) = &w.human {
        Ok(WaitSpec::Human {
            question: q.clone(),
            options: w.options.clone().unwrap_or_default(),
        })
    } else {
        Ok(WaitSpec::Duration {
            millis: parse_duration(w.duration.as_deref().expect("counted"))?,
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkflow {
    name: Spanned<String>,
    description: Option<String>,
    defaults: Option<RawDefaults>,
    flags: Option<BTreeMap<String, Spanned<toml::Value>>>,
    #[serde(default)]
    phase: Vec<Spanned<RawPhase>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawDefaults {
    agent: Option<String>,
    timeout: Option<Spanned<String>>,
    max_attempts: Option<Spanned<u32>>,
    on_failure: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPhase {
    id: Spanned<String>,
    needs: Option<Vec<Spanned<String>>>,
    when: Option<Spanned<String>>,
    run: Option<Spanned<String>>,
    prompt: Option<Spanned<String>>,
    prompt_file: Option<Spanned<String>>,
    agent: Option<Spanned<String>>,
    loop_to: Option<Spanned<String>>,
    max_iterations: Option<u32>,
    max_attempts: Option<Spanned<u32>>,
    on_failure: Option<Spanned<String>>,
    timeout: Option<Spanned<String>>,
    wait: Option<Spanned<RawWait>>,
    instance: Option<Spanned<RawInstance>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawInstance {
    require_review: Option<bool>,
    max_reviews: Option<u32>,
    base: Option<String>,
    timeout: Option<String>,
    interactive: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWait {
    event: Option<String>,
    r#match: Option<BTreeMap<String, String>>,
    payload: Option<BTreeMap<String, serde_json::Value>>,
    human: Option<String>,
    options: Option<Vec<String>>,
    duration: Option<String>,
}

#[cfg(test)]
mod tests;
