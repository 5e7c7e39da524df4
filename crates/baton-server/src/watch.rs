//! The store watcher: four times a second it looks at what the server
//! shows and what it filters by. When a task or a delivery changed (a hash
//! of each task's status, phase and last change, and of the newest
//! deliveries), it bumps a version every dashboard stream sends on. It
//! also keeps the event names some stored workflow's wait phase expects:
//! a delivery of any other name is for no task, and is recorded as
//! ignored as it arrives, without its body or a hand-over.

use baton_engine::Engine;
use std::collections::{BTreeSet, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::watch;

/// What the watcher keeps up to date.
#[derive(Clone)]
pub struct Watched {
    /// Bumped when a task or a delivery changed.
    pub changes: watch::Receiver<u64>,
    /// The awaited event names; `None` until first read (then nothing is
    /// filtered).
    awaited: Arc<RwLock<Option<BTreeSet<String>>>>,
}

impl Watched {
    /// Whether some task may wait for an event of this name.
    pub fn awaited(&self, name: &str) -> bool {
        match &*self.awaited.read().unwrap_or_else(|p| p.into_inner()) {
            Some(names) => names.contains(name),
            None => true,
        }
    }
}

/// Starts the watcher; it ends when `stop` is set, and with it every
/// open stream.
pub fn start(eng: Arc<Engine>, stop: Arc<AtomicBool>) -> Watched {
    let (tx, rx) = watch::channel(0u64);
    let awaited: Arc<RwLock<Option<BTreeSet<String>>>> = Arc::default();
    let w = Watched {
        changes: rx,
        awaited: awaited.clone(),
    };
    // Read once before serving, so the first deliveries are filtered too.
    let mut names_of: HashMap<String, BTreeSet<String>> = HashMap::new();
    refresh_awaited(&eng, &awaited, &mut names_of);
    std::thread::Builder::new()
        .name("baton-watch".into())
        .spawn(move || {
            let mut last = None;
            while !stop.load(Ordering::SeqCst) {
                if let Ok(now) = fingerprint(&eng)
                    && last != Some(now)
                {
                    last = Some(now);
                    tx.send_modify(|v| *v += 1);
                }
                refresh_awaited(&eng, &awaited, &mut names_of);
                std::thread::sleep(Duration::from_millis(250));
            }
        })
        .expect("a thread starts");
    w
}

/// The awaited names of every stored definition (each definition read
/// once: they never change under their hash).
fn refresh_awaited(
    eng: &Engine,
    awaited: &RwLock<Option<BTreeSet<String>>>,
    names_of: &mut HashMap<String, BTreeSet<String>>,
) {
    let Ok(defs) = eng.store.definitions() else {
        return;
    };
    for d in &defs {
        names_of
            .entry(d.hash.clone())
            .or_insert_with(|| baton_engine::awaited_events(std::iter::once(d.json.as_str())));
    }
    let all: BTreeSet<String> = names_of.values().flatten().cloned().collect();
    *awaited.write().unwrap_or_else(|p| p.into_inner()) = Some(all);
}

/// What the dashboard shows, hashed.
fn fingerprint(eng: &Engine) -> Result<u64, baton_engine::Error> {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for (t, status) in eng.list()? {
        (
            t.id.as_str(),
            status.as_str(),
            &t.last_phase,
            t.updated_at.millis(),
        )
            .hash(&mut h);
    }
    for d in eng.store.deliveries(20)? {
        (d.id, d.decision, d.settled_at.map(|t| t.millis())).hash(&mut h);
    }
    Ok(h.finish())
}
