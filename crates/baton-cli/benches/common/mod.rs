//! What the benchmarks share: the [`Driver`] that pushes one task through a
//! [`Store`] exactly as the engine does, and small helpers.
//!
//! Each bench (`durability.rs`, `scale.rs`, `agents.rs`, `phases.rs`) compiles this module on its own
//! (`mod common;`), so what one of them leaves unused is not dead code.
#![allow(dead_code)]

use baton_core::lease::{Lease, LeaseOwner};
use baton_core::machine::{self, Input, NewTask};
use baton_core::{Clock, Event, EventRecord, PhaseId, TaskId, TaskState, Timestamp, Workflow};
use baton_engine::engine::SystemClock;
use baton_store::{PhaseWrites, Store, StoredDefinition};
use std::collections::BTreeMap;

pub fn now() -> Timestamp {
    SystemClock.now()
}

pub fn bench_owner() -> LeaseOwner {
    LeaseOwner {
        host: "bench-host".into(),
        boot_id: "bench-boot".into(),
        pid: std::process::id(),
        start_time: 0,
        pid_ns: String::new(),
    }
}

pub fn tempdir() -> tempfile::TempDir {
    // /tmp: on this machine the same disk as the project; and not inside a
    // git work tree, so the engine takes no git checkpoints.
    tempfile::Builder::new()
        .prefix("baton-bench-")
        .tempdir()
        .expect("tempdir")
}

pub fn phase_id(i: usize) -> String {
    format!("p{i:04}")
}

pub fn workflow_toml(name: &str, phases: usize) -> String {
    let mut s = format!("name = \"{name}\"\ndescription = \"benchmark workflow\"\n");
    for i in 0..phases {
        s.push_str(&format!(
            "\n[[phase]]\nid = \"{}\"\nrun = \"true\"\n",
            phase_id(i)
        ));
    }
    s
}

pub fn parse_workflow(name: &str, toml: &str) -> Workflow {
    Workflow::parse(
        toml,
        &format!(".baton/workflows/{name}.toml"),
        name,
        &|_| Err("no prompt files in the benchmark".into()),
    )
    .expect("benchmark workflow parses")
}

/// Drives one task through the Store API the way the engine does: the pure
/// machine decides, events are applied to the in-memory state, and
/// `Store::commit` gets the phase rows `Engine::commit` would write.
/// Without a store it does everything but the store's work.
pub struct Driver<'a> {
    store: Option<&'a dyn Store>,
    owner: LeaseOwner,
    wf: Workflow,
    pub state: TaskState,
    /// Staged, not yet committed.
    records: Vec<EventRecord>,
    touched: Option<Vec<PhaseId>>,
}

impl<'a> Driver<'a> {
    /// `Engine::create`: pins the definition and stores the task with its
    /// `task_created` event (and the events of `first`), holding the lease.
    /// The engine then commits `claimed` in a commit of its own.
    pub fn create(
        store: Option<&'a dyn Store>,
        wf: &Workflow,
        id: &str,
        first: &[Input],
    ) -> Driver<'a> {
        if let Some(store) = store {
            put_definition(store, wf);
        }
        let owner = bench_owner();
        let id = TaskId::parse(id).expect("task id");
        let created = machine::create(
            wf,
            NewTask {
                task_id: id.clone(),
                description: format!("benchmark task {id}"),
                project_name: "bench".into(),
                flags: BTreeMap::new(),
                labels: BTreeMap::new(),
                tech_stack: serde_json::Value::Null,
            },
        )
        .expect("create");
        let t = now();
        let rec = EventRecord {
            seq: 1,
            ts: t,
            event: created,
        };
        let state = machine::initial(id, &rec).expect("initial state");
        let mut d = Driver {
            store,
            owner,
            wf: wf.clone(),
            state,
            records: vec![rec],
            touched: Some(Vec::new()),
        };
        for input in first {
            d.stage_input(input.clone());
        }
        let lease = Lease {
            owner: d.owner.clone(),
            acquired_at: t,
            expires_at: t.plus_millis(3_600_000),
        };
        let records = std::mem::take(&mut d.records);
        d.touched = Some(Vec::new());
        if let Some(store) = store {
            store
                .create_task(&d.state, &records, baton_store::Holder::Lease(&lease))
                .expect("create_task");
        }
        d
    }

    /// Decides `input` on the current state and stages its events.
    pub fn stage_input(&mut self, input: Input) {
        let events =
            machine::decide(&self.state, &self.wf, input, now()).expect("the rules accept");
        self.stage(events);
    }

    /// The first half of `Engine::commit`: note the touched phases (read
    /// before applying), number, stamp and apply each event.
    pub fn stage(&mut self, events: Vec<Event>) {
        let ts = now();
        for ev in events {
            match (machine::touched(&self.state, &ev), &mut self.touched) {
                (Some(ids), Some(all)) => all.extend(ids),
                _ => self.touched = None,
            }
            let rec = EventRecord {
                seq: self.state.last_seq + 1,
                ts,
                event: ev,
            };
            machine::apply(&mut self.state, &rec);
            self.records.push(rec);
        }
    }

    /// The second half of `Engine::commit`: the phase rows to rewrite, then
    /// one transaction with the events and the projection.
    pub fn flush(&mut self) {
        if self.records.is_empty() {
            return;
        }
        let writes = match self.touched.take() {
            None => PhaseWrites::All,
            Some(ids) => {
                let mut ix: Vec<usize> = ids
                    .iter()
                    .filter_map(|id| self.state.phases.iter().position(|p| &p.id == id))
                    .collect();
                ix.sort_unstable();
                ix.dedup();
                PhaseWrites::Changed(ix)
            }
        };
        match self.store {
            Some(store) => store
                .commit(
                    &self.owner,
                    &self.state,
                    &writes,
                    &self.records,
                    baton_store::Durability::Disk,
                )
                .expect("commit"),
            None => {
                std::hint::black_box((&writes, &self.state));
            }
        }
        self.records.clear();
        self.touched = Some(Vec::new());
    }

    /// `Engine::decide_commit`.
    pub fn decide_commit(&mut self, input: Input) {
        self.stage_input(input);
        self.flush();
    }

    pub fn release(&self) {
        if let Some(store) = self.store {
            store
                .release(&self.state.task_id, &self.owner)
                .expect("release");
        }
    }
}

pub fn put_definition(store: &dyn Store, wf: &Workflow) {
    store
        .put_definition(&StoredDefinition {
            hash: wf.hash(),
            name: wf.name.clone(),
            json: serde_json::to_string(wf).expect("workflow serializes"),
        })
        .expect("put_definition");
}

pub fn claim() -> Input {
    Input::Claim {
        owner: "bench".into(),
        command: "baton bench".into(),
    }
}

pub fn pid(i: usize) -> PhaseId {
    PhaseId::parse(&phase_id(i)).expect("phase id")
}

pub fn start(i: usize) -> Input {
    Input::Start {
        phase: pid(i),
        checkpoint: None,
    }
}

pub fn pass(i: usize, summary: &str) -> Input {
    Input::Pass {
        phase: pid(i),
        summary: summary.to_string(),
        output: String::new(),
        files_changed: Vec::new(),
    }
}

pub fn text(len: usize, seed: usize) -> String {
    let base = format!("phase {seed} summary: all checks passed, nothing else to report. ");
    base.chars().cycle().take(len).collect()
}

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs a git command set up by the caller; panics with its stderr if it fails.
pub fn git_ok(cmd: &mut std::process::Command, args: &[&str]) {
    let out = cmd.output().expect("spawn git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The git identity and config isolation the engine's git calls get (the
/// machine's and the user's git configuration left out); whatever a bench
/// runs next to baton gets it too, so both sides see the same git.
pub fn git_env(c: &mut std::process::Command) -> &mut std::process::Command {
    c.env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Bench")
        .env("GIT_AUTHOR_EMAIL", "bench@localhost")
        .env("GIT_COMMITTER_NAME", "Bench")
        .env("GIT_COMMITTER_EMAIL", "bench@localhost")
}

/// The machine's load average (1, 5, 15 minutes), as printed with every
/// figure: on a shared 2-core box it says how much the figures can be trusted.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}
