//! What a GitHub webhook delivery says, and whether it is the event a
//! waiting task expects (pure; the server and the engine do the IO).
//!
//! A delivery is named `github.<X-GitHub-Event>[.<action>]`
//! (`github.pull_request.opened`). It is matched to tasks by labels, never
//! by names: it carries a `repository` label (`owner/name`) and the
//! `task-id`s it names, read from the pull request's labels (`task-5`), its
//! head branch (`baton/<task-id>`, or a configured pattern) and a marker in
//! its body (`baton-task: <id>`). A `wait = { event, match, payload }`
//! phase expects it when the event names agree, every `match` label has
//! its value among the delivery's, and every `payload` path has its value.

pub mod judged;

use crate::ids::PhaseId;
use crate::state::{PhaseStatus, TaskState};
use crate::workflow::{PhaseKind, WaitSpec, Workflow};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// The head-branch pattern baton's own branches follow.
pub const DEFAULT_BRANCH_PATTERN: &str = "baton/{task-id}";
/// The marker a pull request's body may carry.
pub const BODY_MARKER: &str = "baton-task:";

/// One delivery: its `X-GitHub-Event` header and its JSON body.
#[derive(Debug, Clone, Copy)]
pub struct Delivery<'a> {
    pub event: &'a str,
    pub payload: &'a Value,
}

impl Delivery<'_> {
    /// `github.<event>.<action>`, or `github.<event>` without an action.
    pub fn name(&self) -> String {
        match self.action() {
            Some(a) => format!("github.{}.{a}", self.event),
            None => format!("github.{}", self.event),
        }
    }

    pub fn action(&self) -> Option<&str> {
        self.payload.get("action").and_then(Value::as_str)
    }

    /// `repository.full_name`.
    pub fn repository(&self) -> Option<&str> {
        self.payload
            .pointer("/repository/full_name")
            .and_then(Value::as_str)
    }

    /// The pull request the event is about (`pull_request`, or an issue
    /// comment's issue when it is one).
    fn pull_request(&self) -> Option<&Value> {
        self.payload.get("pull_request")
    }

    /// What the event says that later phases may use, as labels:
    /// `pr-number`, `pr-url`, `pr-branch`, `pr-merged`, `merge-commit`,
    /// `review-state`, `reviewer`.
    pub fn facts(&self) -> BTreeMap<String, String> {
        let mut f = BTreeMap::new();
        let mut put = |k: &str, v: Option<&Value>| {
            let text = match v {
                Some(Value::String(s)) => s.clone(),
                Some(v @ (Value::Number(_) | Value::Bool(_))) => v.to_string(),
                _ => return,
            };
            f.insert(k.to_string(), text);
        };
        if let Some(pr) = self.pull_request() {
            put("pr-number", pr.get("number"));
            put("pr-url", pr.get("html_url"));
            put("pr-branch", pr.pointer("/head/ref"));
            if self.action() == Some("closed") {
                put("pr-merged", pr.get("merged"));
                put("merge-commit", pr.get("merge_commit_sha"));
            }
        }
        if let Some(r) = self.payload.get("review") {
            put("review-state", r.get("state"));
            put("reviewer", r.pointer("/user/login"));
        }
        f
    }

    /// The task ids the delivery names: the pull request's (or issue's)
    /// labels `task-<id>`, its head branch read with `branch_pattern`
    /// (`{task-id}` where the id is), and `baton-task: <id>` in its body.
    pub fn task_ids(&self, branch_pattern: &str) -> BTreeSet<String> {
        let mut ids = BTreeSet::new();
        let item = self
            .pull_request()
            .or_else(|| self.payload.get("issue"))
            .unwrap_or(&Value::Null);
        for l in item
            .get("labels")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(id) = l
                .get("name")
                .and_then(Value::as_str)
                .and_then(|n| n.strip_prefix("task-"))
                .filter(|id| !id.is_empty())
            {
                ids.insert(id.to_string());
            }
        }
        if let Some(head) = item.pointer("/head/ref").and_then(Value::as_str)
            && let Some(id) = id_in_branch(head, branch_pattern)
        {
            ids.insert(id);
        }
        if let Some(body) = item.get("body").and_then(Value::as_str) {
            for line in body.lines() {
                if let Some(at) = line.find(BODY_MARKER) {
                    let id = line[at + BODY_MARKER.len()..].trim();
                    let id = id.split_whitespace().next().unwrap_or("");
                    if !id.is_empty() {
                        ids.insert(id.to_string());
                    }
                }
            }
        }
        ids
    }

    /// The part of the payload baton judges a delivery on, all that is
    /// stored of it: the action, the repository, the pull request's (or
    /// issue's) number, URL, head branch, label names, merge state and the
    /// `baton-task:` lines of its body, the review's state and reviewer,
    /// and the value at each of `paths` (the `payload` conditions of the
    /// stored workflows). Judged on this, a delivery is judged as on the
    /// whole body; it is a few hundred bytes where the body is tens of KB.
    pub fn essentials(&self, paths: &BTreeSet<String>) -> Value {
        let mut out = serde_json::Map::new();
        let keep = |out: &mut serde_json::Map<String, Value>, path: &[&str]| {
            let mut v = self.payload;
            for part in path {
                match v.get(part) {
                    Some(next) => v = next,
                    None => return,
                }
            }
            set(out, path, v.clone());
        };
        keep(&mut out, &["action"]);
        keep(&mut out, &["repository", "full_name"]);
        for item in ["pull_request", "issue"] {
            for field in ["number", "html_url", "merged", "merge_commit_sha"] {
                keep(&mut out, &[item, field]);
            }
            keep(&mut out, &[item, "head", "ref"]);
        }
        keep(&mut out, &["review", "state"]);
        keep(&mut out, &["review", "user", "login"]);
        for item in ["pull_request", "issue"] {
            let Some(it) = self.payload.get(item) else {
                continue;
            };
            if let Some(labels) = it.get("labels").and_then(Value::as_array) {
                let names: Vec<Value> = labels
                    .iter()
                    .filter_map(|l| l.get("name").cloned())
                    .map(|n| serde_json::json!({ "name": n }))
                    .collect();
                set(&mut out, &[item, "labels"], Value::Array(names));
            }
            if let Some(body) = it.get("body").and_then(Value::as_str) {
                let marked: Vec<&str> = body.lines().filter(|l| l.contains(BODY_MARKER)).collect();
                set(&mut out, &[item, "body"], Value::String(marked.join("\n")));
            }
        }
        for path in paths {
            let parts: Vec<&str> = path.split('.').collect();
            // Through an array: keep the array whole.
            let cut = parts
                .iter()
                .position(|p| p.parse::<usize>().is_ok())
                .unwrap_or(parts.len());
            keep(&mut out, &parts[..cut]);
        }
        Value::Object(out)
    }

    /// The value at a dotted path of the payload, as text (`review.state`).
    pub fn value_at(&self, path: &str) -> Option<String> {
        let mut v = self.payload;
        for part in path.split('.') {
            v = match v {
                Value::Array(a) => a.get(part.parse::<usize>().ok()?)?,
                other => other.get(part)?,
            };
        }
        match v {
            Value::String(s) => Some(s.clone()),
            Value::Null => None,
            other => Some(other.to_string()),
        }
    }
}

/// Puts `v` at `path` in `out`, making the objects on the way.
fn set(out: &mut serde_json::Map<String, Value>, path: &[&str], v: Value) {
    let Some((last, on_the_way)) = path.split_last() else {
        return;
    };
    let mut at = out;
    for part in on_the_way {
        let next = at
            .entry(part.to_string())
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        if !next.is_object() {
            *next = Value::Object(serde_json::Map::new());
        }
        at = next.as_object_mut().expect("made an object");
    }
    at.insert(last.to_string(), v);
}

/// The event names and payload paths the wait phases of `wf` expect.
pub fn awaited_by(
    wf: &crate::Workflow,
    names: &mut BTreeSet<String>,
    paths: &mut BTreeSet<String>,
) {
    for p in &wf.phases {
        if let PhaseKind::Wait(WaitSpec::Event { event, payload, .. }) = &p.kind {
            names.insert(event.clone());
            paths.extend(payload.keys().cloned());
        }
    }
}

/// The task id in head branch `head` under `pattern` (`baton/{task-id}`).
pub fn id_in_branch(head: &str, pattern: &str) -> Option<String> {
    let (before, after) = pattern.split_once("{task-id}")?;
    let id = head.strip_prefix(before)?.strip_suffix(after)?;
    (!id.is_empty()).then(|| id.to_string())
}

/// What a delivery means for one task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The task waits in `phase` for exactly this: pass it with the facts.
    Resume { phase: PhaseId },
    /// The delivery is for a wait phase of this task that it has not
    /// reached yet (it is at an earlier stage): keep it for that phase,
    /// to pass it when the task gets there, never before.
    Buffer { phase: PhaseId, reason: String },
    /// The delivery is for this task, but nothing can come of it (the
    /// task is past that stage or has ended, or a condition of the wait is
    /// not met): untouched.
    Skip { reason: String },
}

/// How a wait phase judges a delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    /// Another event, or another task's.
    Not,
    /// This event for this task, but a payload condition is not met:
    /// which (`review.user.login is "bob", not "cleo[bot]"`).
    Unmet(String),
    Yes,
}

/// Whether a `match` key or payload path names something GitHub compares
/// without case: a repository (`owner/name`), an owner or a login. A remote
/// typed `github.com/Acme/App` labels tasks `Acme/App`; GitHub sends
/// `acme/app` when the repository was made so, and a reviewer's login in
/// any case a person typed it.
pub fn compares_without_case(key: &str) -> bool {
    let last = key.rsplit('.').next().unwrap_or(key);
    matches!(
        key,
        "repository" | "reviewer" | "repository.name" | "repository.full_name"
    ) || last == "login"
}

/// `got` is `want`, compared as GitHub compares what `key` names.
fn same_value(key: &str, got: &str, want: &str) -> bool {
    if compares_without_case(key) {
        got.eq_ignore_ascii_case(want)
    } else {
        got == want
    }
}

/// Whether the wait phase `spec` (its `match` values filled in with the
/// task's labels) expects the delivery.
pub fn expects(
    spec: &WaitSpec,
    state: &TaskState,
    phase: &PhaseId,
    d: &Delivery<'_>,
    branch_pattern: &str,
) -> Expect {
    let WaitSpec::Event {
        event,
        matches,
        payload,
    } = spec
    else {
        return Expect::Not;
    };
    if *event != d.name() {
        return Expect::Not;
    }
    let ids = d.task_ids(branch_pattern);
    let repository = d.repository();
    let labels_agree = matches.iter().all(|(k, template)| {
        let want = crate::template::render(template, |name| {
            crate::machine::value_of(state, phase, name)
        });
        match k.as_str() {
            "task-id" => ids.contains(&want),
            "repository" => repository.is_some_and(|r| same_value(k, r, &want)),
            other => d
                .facts()
                .get(other)
                .is_some_and(|g| same_value(k, g, &want)),
        }
    });
    if !labels_agree {
        return Expect::Not;
    }
    for (path, want) in payload {
        let got = d.value_at(path);
        if !got.as_deref().is_some_and(|g| same_value(path, g, want)) {
            return Expect::Unmet(match got {
                Some(g) => format!("{path} is {g:?}, not {want:?}"),
                None => format!("it has no {path} (wanted {want:?})"),
            });
        }
    }
    Expect::Yes
}

/// What the delivery means for the task `state` of workflow `wf`: `None`
/// when no phase of it waits for such a delivery; else whether it resumes
/// the task (its current phase is the wait phase that expects it), is
/// kept for a wait phase the task has not reached yet, or is skipped,
/// saying why.
pub fn judge(
    state: &TaskState,
    wf: &Workflow,
    d: &Delivery<'_>,
    branch_pattern: &str,
) -> Option<Verdict> {
    let mut expecting: Vec<&PhaseId> = Vec::new();
    let mut unmet: Option<(&PhaseId, String)> = None;
    for p in &wf.phases {
        if let PhaseKind::Wait(spec) = &p.kind {
            match expects(spec, state, &p.id, d, branch_pattern) {
                Expect::Yes => expecting.push(&p.id),
                Expect::Unmet(why) if unmet.is_none() => unmet = Some((&p.id, why)),
                _ => {}
            }
        }
    }
    let id = &state.task_id;
    if expecting.is_empty() {
        let (phase, why) = unmet?;
        return Some(Verdict::Skip {
            reason: format!("task {id} waits at {phase} for {}, but {why}", d.name()),
        });
    }
    let waiting = state
        .phases
        .iter()
        .find(|p| p.status == PhaseStatus::Waiting);
    if let Some(w) = waiting
        && expecting.contains(&&w.id)
    {
        return Some(Verdict::Resume {
            phase: w.id.clone(),
        });
    }
    let stage = waiting
        .or_else(|| {
            state
                .phases
                .iter()
                .find(|p| p.status == PhaseStatus::InProgress)
        })
        .or_else(|| state.phases.iter().find(|p| !p.status.is_done()))
        .map(|p| p.id.to_string())
        .unwrap_or_else(|| state.status.as_str().to_string());
    let expected: Vec<String> = expecting.iter().map(|p| p.to_string()).collect();
    let ended = matches!(
        state.status,
        crate::state::TaskStatus::Complete | crate::state::TaskStatus::Cancelled
    );
    // The first expecting phase the task has still to pass.
    let ahead = state
        .phases
        .iter()
        .find(|p| expecting.contains(&&p.id) && !p.status.is_done());
    match ahead {
        Some(p) if !ended => Some(Verdict::Buffer {
            phase: p.id.clone(),
            reason: format!("task {id} is at {stage}; kept until it waits at {}", p.id),
        }),
        _ if ended => Some(Verdict::Skip {
            reason: format!(
                "task {id} has ended ({}), this event is for {}",
                state.status.as_str(),
                expected.join(" or ")
            ),
        }),
        _ => Some(Verdict::Skip {
            reason: format!(
                "task {id} is at {stage}, past {}, which this event is for",
                expected.join(" or ")
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Event, EventRecord};
    use crate::ids::TaskId;
    use crate::machine::{Input, NewTask, apply, create, decide, initial};
    use crate::time::Timestamp;

    /// A real payload GitHub sends (octokit/webhooks' examples).
    fn fixture(path: &str) -> Value {
        let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../baton-testkit/fixtures/github-webhooks")
            .join(path);
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap()
    }

    const FLOW: &str = r#"name = "wf"
[[phase]]
id = "implementation"
run = "true"
[[phase]]
id = "wait-pr"
wait = { event = "github.pull_request.opened", match = { "task-id" = "{{labels.task-id}}", "repository" = "Codertocat/Hello-World" } }
[[phase]]
id = "wait-approval"
wait = { event = "github.pull_request_review.submitted", match = { "task-id" = "{{labels.task-id}}" }, payload = { "review.state" = "approved", "review.user.login" = "cleo[bot]" } }
[[phase]]
id = "wait-merge"
wait = { event = "github.pull_request.closed", match = { "task-id" = "{{labels.task-id}}" }, payload = { "pull_request.merged" = true } }
"#;

    /// What is stored of a delivery judges exactly as its whole body: the
    /// name, repository, facts, task ids and every condition path, for
    /// each of GitHub's real payloads; and it is a small part of it.
    #[test]
    fn the_essentials_judge_as_the_whole_body() {
        let paths: BTreeSet<String> = [
            "review.state",
            "review.user.login",
            "pull_request.merged",
            "pull_request.user.login",
            "sender.login",
            "commits.0.id",
        ]
        .into_iter()
        .map(String::from)
        .collect();
        for (event, file) in [
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
        ] {
            let mut whole = fixture(file);
            // A body with a marker line among others.
            if let Some(pr) = whole.get_mut("pull_request") {
                pr["body"] = "Fixes the widget.\n\nbaton-task: t-7\nThanks".into();
                pr["labels"] =
                    serde_json::json!([{"name": "task-9", "color": "f00"}, {"name": "bug"}]);
            }
            let full = Delivery {
                event,
                payload: &whole,
            };
            let small = full.essentials(&paths);
            let kept = Delivery {
                event,
                payload: &small,
            };
            assert_eq!(kept.name(), full.name(), "{file}");
            assert_eq!(kept.repository(), full.repository(), "{file}");
            assert_eq!(kept.facts(), full.facts(), "{file}");
            for pattern in ["baton/{task-id}", "{task-id}"] {
                assert_eq!(kept.task_ids(pattern), full.task_ids(pattern), "{file}");
            }
            for p in &paths {
                assert_eq!(kept.value_at(p), full.value_at(p), "{file} {p}");
            }
            let (a, b) = (small.to_string().len(), whole.to_string().len());
            assert!(a * 4 < b, "{file}: {a} of {b} bytes kept");
        }
    }

    /// The fixtures' pull request comes from branch `changes`.
    const PATTERN: &str = "{task-id}";

    struct Task {
        wf: Workflow,
        state: TaskState,
    }

    impl Task {
        fn new(id: &str) -> Task {
            let wf = Workflow::parse(FLOW, "wf.toml", "wf", &|_| Err("none".into())).unwrap();
            let new = NewTask {
                task_id: TaskId::parse(id).unwrap(),
                description: "d".into(),
                project_name: "p".into(),
                flags: Default::default(),
                labels: Default::default(),
                tech_stack: Value::Null,
            };
            let rec = EventRecord {
                seq: 1,
                ts: Timestamp(0),
                event: create(&wf, new).unwrap(),
            };
            let state = initial(TaskId::parse(id).unwrap(), &rec).unwrap();
            Task { wf, state }
        }
        fn input(&mut self, input: Input) -> Vec<Event> {
            let events = decide(&self.state, &self.wf, input, Timestamp(0)).unwrap();
            for e in &events {
                let rec = EventRecord {
                    seq: self.state.last_seq + 1,
                    ts: Timestamp(0),
                    event: e.clone(),
                };
                apply(&mut self.state, &rec);
            }
            events
        }
        fn wait_in(&mut self, phase: &str) {
            let p = PhaseId::parse(phase).unwrap();
            if phase == "wait-pr" {
                let a = PhaseId::parse("implementation").unwrap();
                self.input(Input::Start {
                    phase: a.clone(),
                    checkpoint: None,
                });
                self.input(Input::Pass {
                    phase: a,
                    summary: "ok".into(),
                    output: String::new(),
                    files_changed: Vec::new(),
                });
            }
            self.input(Input::Wait { phase: p });
        }
        fn judge(&self, event: &str, payload: &Value) -> Option<Verdict> {
            let d = Delivery { event, payload };
            judge(&self.state, &self.wf, &d, PATTERN)
        }
    }

    #[test]
    fn a_delivery_says_its_name_repository_facts_and_task_ids() {
        let opened = fixture("pull_request/opened.payload.json");
        let d = Delivery {
            event: "pull_request",
            payload: &opened,
        };
        assert_eq!(d.name(), "github.pull_request.opened");
        assert_eq!(d.repository(), Some("Codertocat/Hello-World"));
        let f = d.facts();
        assert_eq!(f["pr-number"], "2");
        assert_eq!(f["pr-branch"], "changes");
        assert!(f["pr-url"].ends_with("/pull/2"), "{f:?}");
        assert!(!f.contains_key("pr-merged"), "only a closed PR says");
        assert_eq!(d.task_ids(PATTERN), BTreeSet::from(["changes".into()]));
        // baton's own branch pattern does not read `changes` as an id.
        assert!(d.task_ids(DEFAULT_BRANCH_PATTERN).is_empty());
        // A label task-<id> and a body marker are read too.
        let mut named = opened.clone();
        named["pull_request"]["labels"][0]["name"] = "task-5".into();
        named["pull_request"]["body"] = "Fixes it.\n\nbaton-task: t-9\n".into();
        named["pull_request"]["head"]["ref"] = "baton/t-7".into();
        let d = Delivery {
            event: "pull_request",
            payload: &named,
        };
        assert_eq!(
            d.task_ids(DEFAULT_BRANCH_PATTERN),
            BTreeSet::from(["5".into(), "t-9".into(), "t-7".into()])
        );
        let ping = fixture("ping/payload.json");
        let d = Delivery {
            event: "ping",
            payload: &ping,
        };
        assert_eq!(d.name(), "github.ping");
    }

    #[test]
    fn an_opened_pr_resumes_the_task_waiting_for_it_and_skips_one_at_another_stage() {
        let opened = fixture("pull_request/opened.payload.json");
        let mut t = Task::new("changes");
        // Still in implementation: kept for the stage it is for.
        assert_eq!(
            t.judge("pull_request", &opened),
            Some(Verdict::Buffer {
                phase: PhaseId::parse("wait-pr").unwrap(),
                reason: "task changes is at implementation; kept until it waits at wait-pr".into()
            })
        );
        t.wait_in("wait-pr");
        let Some(Verdict::Resume { phase }) = t.judge("pull_request", &opened) else {
            panic!("not resumed");
        };
        assert_eq!(phase.as_str(), "wait-pr");
        // Another task, another repository, another event: not for it.
        let mut other = Task::new("other");
        other.wait_in("wait-pr");
        assert_eq!(other.judge("pull_request", &opened), None);
        let mut elsewhere = opened.clone();
        elsewhere["repository"]["full_name"] = "someone/else".into();
        assert_eq!(t.judge("pull_request", &elsewhere), None);
        let issue = fixture("issues/opened.payload.json");
        assert_eq!(t.judge("issues", &issue), None);
        // It passes with the event's facts as labels.
        let d = Delivery {
            event: "pull_request",
            payload: &opened,
        };
        let events = t.input(Input::EventArrived {
            phase: phase.clone(),
            event: d.name(),
            delivery: "d-1".into(),
            facts: d.facts(),
        });
        assert_eq!(events.len(), 3, "{events:?}");
        assert_eq!(t.state.labels["pr-number"], "2");
        assert_eq!(t.state.phase("wait-pr").unwrap().status, PhaseStatus::Pass);
        // The same event again finds it past that stage.
        assert_eq!(
            t.judge("pull_request", &opened),
            Some(Verdict::Skip {
                reason: "task changes is at wait-approval, past wait-pr, which this event is for"
                    .into()
            })
        );
        assert!(
            decide(
                &t.state,
                &t.wf,
                Input::EventArrived {
                    phase,
                    event: d.name(),
                    delivery: "d-1".into(),
                    facts: d.facts(),
                },
                Timestamp(0)
            )
            .is_err(),
            "one event passes a phase once"
        );
    }

    #[test]
    fn only_the_configured_bots_approval_and_only_a_merge_resume() {
        let mut t = Task::new("changes");
        t.wait_in("wait-pr");
        let opened = fixture("pull_request/opened.payload.json");
        let d = Delivery {
            event: "pull_request",
            payload: &opened,
        };
        t.input(Input::EventArrived {
            phase: PhaseId::parse("wait-pr").unwrap(),
            event: d.name(),
            delivery: "d-1".into(),
            facts: d.facts(),
        });
        t.wait_in("wait-approval");
        // The fixture is a comment by Codertocat; the variants are
        // derived from it.
        let review = fixture("pull_request_review/submitted.payload.json");
        assert!(matches!(
            t.judge("pull_request_review", &review),
            Some(Verdict::Skip { .. }) | None
        ));
        let mut by_someone = review.clone();
        by_someone["review"]["state"] = "approved".into();
        // Another reviewer's approval is for this task and this stage, but
        // not what it waits for: said so, not "no task waits".
        assert_eq!(
            t.judge("pull_request_review", &by_someone),
            Some(Verdict::Skip {
                reason: "task changes waits at wait-approval for github.pull_request_review.submitted, but review.user.login is \"Codertocat\", not \"cleo[bot]\"".into()
            })
        );
        let mut by_bot = by_someone.clone();
        by_bot["review"]["user"]["login"] = "cleo[bot]".into();
        assert_eq!(
            t.judge("pull_request_review", &by_bot),
            Some(Verdict::Resume {
                phase: PhaseId::parse("wait-approval").unwrap()
            })
        );
        let d = Delivery {
            event: "pull_request_review",
            payload: &by_bot,
        };
        assert_eq!(d.facts()["reviewer"], "cleo[bot]");
        t.input(Input::EventArrived {
            phase: PhaseId::parse("wait-approval").unwrap(),
            event: d.name(),
            delivery: "d-2".into(),
            facts: d.facts(),
        });
        t.wait_in("wait-merge");
        let closed = fixture("pull_request/closed.payload.json");
        assert_eq!(closed["pull_request"]["merged"], false);
        assert!(
            matches!(t.judge("pull_request", &closed), Some(Verdict::Skip { reason }) if reason.contains("pull_request.merged is \"false\", not \"true\"")),
            "closed unmerged"
        );
        let mut merged = closed.clone();
        merged["pull_request"]["merged"] = true.into();
        assert!(matches!(
            t.judge("pull_request", &merged),
            Some(Verdict::Resume { .. })
        ));
    }

    /// Issue 34: GitHub compares repository names, owners and logins
    /// without case; a remote typed `Acme/App` and a delivery saying
    /// `acme/app` are one repository. Other values keep their case.
    #[test]
    fn repositories_and_logins_compare_as_github_compares_them() {
        let mut t = Task::new("changes");
        t.wait_in("wait-pr");
        let mut opened = fixture("pull_request/opened.payload.json");
        opened["repository"]["full_name"] = "CODERTOCAT/hello-world".into();
        assert!(matches!(
            t.judge("pull_request", &opened),
            Some(Verdict::Resume { .. })
        ));
        let d = Delivery {
            event: "pull_request",
            payload: &opened,
        };
        t.input(Input::EventArrived {
            phase: PhaseId::parse("wait-pr").unwrap(),
            event: d.name(),
            delivery: "d-1".into(),
            facts: d.facts(),
        });
        t.wait_in("wait-approval");
        let mut review = fixture("pull_request_review/submitted.payload.json");
        review["review"]["state"] = "approved".into();
        review["review"]["user"]["login"] = "Cleo[Bot]".into();
        assert!(matches!(
            t.judge("pull_request_review", &review),
            Some(Verdict::Resume { .. })
        ));
        // A review state is not a name: its case counts.
        review["review"]["state"] = "APPROVED".into();
        assert!(matches!(
            t.judge("pull_request_review", &review),
            Some(Verdict::Skip { .. })
        ));
        assert!(compares_without_case("repository"));
        assert!(compares_without_case("pull_request.user.login"));
        assert!(!compares_without_case("review.state"));
        assert!(!compares_without_case("pr-branch"));
    }

    #[test]
    fn a_head_branch_is_read_with_the_pattern() {
        assert_eq!(
            id_in_branch("baton/t1", DEFAULT_BRANCH_PATTERN).as_deref(),
            Some("t1")
        );
        assert_eq!(id_in_branch("feature/t1", DEFAULT_BRANCH_PATTERN), None);
        assert_eq!(id_in_branch("baton/", DEFAULT_BRANCH_PATTERN), None);
        assert_eq!(
            id_in_branch("agent-t1-wip", "agent-{task-id}-wip").as_deref(),
            Some("t1")
        );
    }
}
