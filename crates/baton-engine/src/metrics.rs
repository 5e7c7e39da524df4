//! What `/metrics` says, in the Prometheus text format (OpenMetrics,
//! through the `prometheus-client` crate): what this process did, counted
//! as it happens by [`Metered`], an [`Observer`] wrapped around the one a
//! worker reports through (phases running and their durations, agent
//! tokens by CLI, claims and their latency, lease renewals that failed),
//! and what the store holds, read at each scrape (tasks by status, the
//! queue's depth, deliveries by decision). Counters are this process's
//! own, as Prometheus expects: a fleet's totals are the sum over its pods.

use crate::engine::{Engine, Observer};
use crate::error::Result;
use baton_core::TaskId;
use baton_core::lease::DisplayStatus;
use baton_core::state::{PhaseStatus, Usage};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The content type of [`Metrics::render`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabel {
    status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PhaseLabels {
    workflow: String,
    phase: String,
    /// `pass` or `failed`.
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DecisionLabel {
    decision: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TokenLabels {
    cli: String,
    /// `input` or `output`.
    kind: String,
}

/// The metrics of one process.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    tasks: Family<StatusLabel, Gauge>,
    queue_depth: Gauge,
    deliveries: Family<DecisionLabel, Gauge>,
    phases_running: Gauge,
    phase_duration: Family<PhaseLabels, Histogram>,
    claims: Counter,
    claim_duration: Histogram,
    renewals_failed: Counter,
    tokens: Family<TokenLabels, Counter>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("baton");
        let tasks = Family::<StatusLabel, Gauge>::default();
        registry.register(
            "tasks",
            "Tasks in the store by status, as `baton ls` shows them",
            tasks.clone(),
        );
        let queue_depth = Gauge::default();
        registry.register(
            "queue_depth",
            "Queued tasks a worker could claim now",
            queue_depth.clone(),
        );
        let deliveries = Family::<DecisionLabel, Gauge>::default();
        registry.register(
            "deliveries",
            "Webhook deliveries in the store by decision",
            deliveries.clone(),
        );
        let phases_running = Gauge::default();
        registry.register(
            "phases_running",
            "Phases this process runs now",
            phases_running.clone(),
        );
        let phase_duration = Family::<PhaseLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.1, 2.0, 16))
        });
        registry.register_with_unit(
            "phase_duration",
            "Phases this process ran, by workflow, phase and outcome",
            Unit::Seconds,
            phase_duration.clone(),
        );
        let claims = Counter::default();
        registry.register("claims", "Tasks this process claimed", claims.clone());
        let claim_duration = Histogram::new(exponential_buckets(0.0005, 2.0, 14));
        registry.register_with_unit(
            "claim_duration",
            "How long a claim took, whether it found a task or not",
            Unit::Seconds,
            claim_duration.clone(),
        );
        let renewals_failed = Counter::default();
        registry.register(
            "lease_renewals_failed",
            "Lease renewals of this process that the store did not answer",
            renewals_failed.clone(),
        );
        let tokens = Family::<TokenLabels, Counter>::default();
        registry.register(
            "agent_tokens",
            "Tokens the agent runs of this process used, by CLI and kind",
            tokens.clone(),
        );
        Metrics {
            registry,
            tasks,
            queue_depth,
            deliveries,
            phases_running,
            phase_duration,
            claims,
            claim_duration,
            renewals_failed,
            tokens,
        }
    }

    /// A claim that took `took`, and found a task or not.
    pub fn claimed(&self, took: Duration, found: bool) {
        self.claim_duration.observe(took.as_secs_f64());
        if found {
            self.claims.inc();
        }
    }

    /// The text of `/metrics`: the store's figures read now through
    /// `eng`, then everything counted so far.
    pub fn render(&self, eng: &Engine) -> Result<String> {
        let mut by_status: HashMap<&'static str, i64> = HashMap::new();
        for (_, status) in eng.list()? {
            *by_status.entry(status.as_str()).or_default() += 1;
        }
        let count = |s: DisplayStatus| by_status.get(s.as_str()).copied().unwrap_or(0);
        // Each status of `baton ls`, reported even when no task has it.
        for s in DisplayStatus::ALL {
            self.tasks
                .get_or_create(&StatusLabel {
                    status: s.as_str().into(),
                })
                .set(count(s));
        }
        self.queue_depth.set(count(DisplayStatus::Queued));
        for (decision, n) in eng.store.delivery_counts()? {
            self.deliveries
                .get_or_create(&DecisionLabel { decision })
                .set(n);
        }
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)
            .expect("writing to a String does not fail");
        Ok(text)
    }
}

/// An [`Observer`] that counts into [`Metrics`] what it sees and passes
/// everything on to `inner`.
pub struct Metered {
    inner: Arc<dyn Observer>,
    metrics: Arc<Metrics>,
    /// The workflow of each task this process runs, and the phases it
    /// runs now.
    workflows: Mutex<HashMap<TaskId, String>>,
    running: Mutex<HashSet<(TaskId, String)>>,
}

impl Metered {
    pub fn new(inner: Arc<dyn Observer>, metrics: Arc<Metrics>) -> Metered {
        Metered {
            inner,
            metrics,
            workflows: Mutex::default(),
            running: Mutex::default(),
        }
    }
}

impl Observer for Metered {
    fn task_started(&self, task: &TaskId, workflow: &str) {
        self.workflows
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(task.clone(), workflow.to_string());
        self.inner.task_started(task, workflow);
    }

    fn phase_started(&self, task: &TaskId, phase: &str, attempt: u32, kind: &str) {
        let new = self
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert((task.clone(), phase.to_string()));
        if new {
            self.metrics.phases_running.inc();
        }
        self.inner.phase_started(task, phase, attempt, kind);
    }

    fn phase_finished(
        &self,
        task: &TaskId,
        phase: &str,
        status: PhaseStatus,
        elapsed_ms: i64,
        detail: &str,
    ) {
        let ran = self
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&(task.clone(), phase.to_string()));
        if ran {
            self.metrics.phases_running.dec();
            let outcome = match status {
                PhaseStatus::Pass => Some("pass"),
                PhaseStatus::Failed => Some("failed"),
                _ => None,
            };
            if let Some(outcome) = outcome {
                let workflow = self
                    .workflows
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get(task)
                    .cloned()
                    .unwrap_or_default();
                self.metrics
                    .phase_duration
                    .get_or_create(&PhaseLabels {
                        workflow,
                        phase: phase.to_string(),
                        outcome: outcome.into(),
                    })
                    .observe(elapsed_ms.max(0) as f64 / 1000.0);
            }
        }
        self.inner
            .phase_finished(task, phase, status, elapsed_ms, detail);
    }

    fn info(&self, message: &str) {
        self.inner.info(message);
    }

    fn phase_progress(&self, task: &TaskId, phase: &str, elapsed_ms: i64, last_line: &str) {
        self.inner
            .phase_progress(task, phase, elapsed_ms, last_line);
    }

    fn agent_ended(&self, task: &TaskId, cli: &str, usage: &Usage) {
        for (kind, n) in [
            ("input", usage.input_tokens),
            ("output", usage.output_tokens),
        ] {
            self.metrics
                .tokens
                .get_or_create(&TokenLabels {
                    cli: cli.into(),
                    kind: kind.into(),
                })
                .inc_by(n);
        }
        self.inner.agent_ended(task, cli, usage);
    }

    fn lease_renewal_failed(&self, task: &TaskId) {
        self.metrics.renewals_failed.inc();
        self.inner.lease_renewal_failed(task);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_are_counted_once_and_only_those_that_ran() {
        let m = Arc::new(Metrics::new());
        let o = Metered::new(Arc::new(crate::engine::Silent), m.clone());
        let t = TaskId::parse("t1").unwrap();
        o.task_started(&t, "build");
        o.phase_started(&t, "compile", 1, "run");
        assert_eq!(m.phases_running.get(), 1);
        o.phase_finished(&t, "compile", PhaseStatus::Pass, 1500, "");
        // A skipped phase never started: not counted, not a duration.
        o.phase_finished(&t, "docs", PhaseStatus::Skipped, 0, "");
        assert_eq!(m.phases_running.get(), 0);
        o.agent_ended(
            &t,
            "claude",
            &Usage {
                input_tokens: 10,
                output_tokens: 3,
                cost_usd: None,
            },
        );
        o.lease_renewal_failed(&t);
        m.claimed(Duration::from_millis(2), true);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &m.registry).unwrap();
        assert!(
            text.contains(
                r#"baton_phase_duration_seconds_count{workflow="build",phase="compile",outcome="pass"} 1"#
            ),
            "{text}"
        );
        assert!(!text.contains(r#"phase="docs""#), "{text}");
        assert!(
            text.contains(r#"baton_agent_tokens_total{cli="claude",kind="input"} 10"#),
            "{text}"
        );
        assert!(
            text.contains("baton_lease_renewals_failed_total 1"),
            "{text}"
        );
        assert!(text.contains("baton_claims_total 1"), "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
    }
}
