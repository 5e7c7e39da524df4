//! The store watcher: four times a second it looks at what the server
//! shows and what it filters by. When a task or a delivery changed (a hash
//! of each task's status, phase and last change, and of the newest
//! deliveries), it bumps a version every dashboard stream sends on. It
//! also keeps what the stored workflows' wait phases expect: the event
//! names (a delivery of any other name is for no task, and is recorded as
//! ignored as it arrives, without a hand-over) and the payload paths their
//! conditions read (kept of each delivery's body, with what baton always
//! judges on).

use baton_engine::Awaited;
use baton_engine::Engine;
use std::collections::HashMap;
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
    /// `None` until first read (then nothing is filtered).
    awaited: Arc<RwLock<Option<Awaited>>>,
}

impl Watched {
    /// Whether some task may wait for an event of this name.
    pub fn awaited(&self, name: &str) -> bool {
        match &*self.awaited.read().unwrap_or_else(|p| p.into_inner()) {
            Some(a) => a.names.contains(name),
            None => true,
        }
    }

    /// The payload paths the stored workflows' conditions read.
    pub fn paths(&self) -> std::collections::BTreeSet<String> {
        self.awaited
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(|a| a.paths.clone())
            .unwrap_or_default()
    }
}

/// Starts the watcher; it ends when `stop` is set, and with it every
/// open stream.
pub fn start(eng: Arc<Engine>, stop: Arc<AtomicBool>) -> Watched {
    let (tx, rx) = watch::channel(0u64);
    let awaited: Arc<RwLock<Option<Awaited>>> = Arc::default();
    let w = Watched {
        changes: rx,
        awaited: awaited.clone(),
    };
    // Read once before serving, so the first deliveries are filtered too.
    let mut of_hash: HashMap<String, Awaited> = HashMap::new();
    refresh_awaited(&eng, &awaited, &mut of_hash);
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
                refresh_awaited(&eng, &awaited, &mut of_hash);
                std::thread::sleep(Duration::from_millis(250));
            }
        })
        .expect("a thread starts");
    w
}

/// What every stored definition awaits (each definition read once: they
/// never change under their hash).
fn refresh_awaited(
    eng: &Engine,
    awaited: &RwLock<Option<Awaited>>,
    of_hash: &mut HashMap<String, Awaited>,
) {
    let Ok(defs) = eng.store.definitions() else {
        return;
    };
    for d in &defs {
        of_hash
            .entry(d.hash.clone())
            .or_insert_with(|| Awaited::of(std::iter::once(d.json.as_str())));
    }
    let mut all = Awaited::default();
    for a in of_hash.values() {
        all.extend(a);
    }
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
