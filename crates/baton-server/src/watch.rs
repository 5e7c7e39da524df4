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
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// What the watcher keeps up to date.
#[derive(Clone)]
pub struct Watched {
    /// Bumped when a task or a delivery changed.
    pub changes: watch::Receiver<u64>,
    /// `None` until first read (then nothing is filtered).
    awaited: Arc<RwLock<Option<Awaited>>>,
    reader: Arc<Reader>,
}

/// Reads what the stored workflows await: each definition once (they
/// never change under their hash), the others only when new hashes
/// appear.
struct Reader {
    eng: Arc<Engine>,
    /// What each definition read awaits, and when the last read began.
    known: Mutex<(HashMap<String, Awaited>, Option<Instant>)>,
}

impl Watched {
    /// Whether some task may wait for an event of this name.
    pub fn awaited(&self, name: &str) -> bool {
        match &*self.awaited.read().unwrap_or_else(|p| p.into_inner()) {
            Some(a) => a.names.contains(name),
            None => true,
        }
    }

    /// Whether some task may wait for an event of this name, by the
    /// stored workflows as they are at `arrived` or later: a name the
    /// last look did not see is looked for again (once for all that
    /// arrived before a look began), so a delivery that comes right
    /// after its task's workflow was stored is never taken for one no
    /// task waits for. Blocks on the store.
    pub fn awaited_since(&self, name: &str, arrived: Instant) -> bool {
        if self.awaited(name) {
            return true;
        }
        self.reader.refresh(&self.awaited, arrived);
        self.awaited(name)
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
    let w = Watched {
        changes: rx,
        awaited: Arc::default(),
        reader: Arc::new(Reader {
            eng: eng.clone(),
            known: Mutex::default(),
        }),
    };
    // Read once before serving, so the first deliveries are filtered too.
    w.reader.refresh(&w.awaited, Instant::now());
    let (awaited, reader) = (w.awaited.clone(), w.reader.clone());
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
                reader.refresh(&awaited, Instant::now());
                std::thread::sleep(Duration::from_millis(250));
            }
        })
        .expect("a thread starts");
    w
}

impl Reader {
    /// Reads the stored definitions again unless a read that began at or
    /// after `since` has already been done, and publishes what they await.
    fn refresh(&self, awaited: &RwLock<Option<Awaited>>, since: Instant) {
        let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        if known.1.is_some_and(|began| began >= since) {
            return;
        }
        known.1 = Some(Instant::now());
        let Ok(hashes) = self.eng.definition_hashes() else {
            // Looked at again on the next read.
            known.1 = None;
            return;
        };
        let of_hash = &mut known.0;
        let before = of_hash.len();
        for h in hashes {
            if of_hash.contains_key(&h) {
                continue;
            }
            if let Ok(Some(a)) = self.eng.awaited_by(&h) {
                of_hash.insert(h, a);
            }
        }
        let mut slot = awaited.write().unwrap_or_else(|p| p.into_inner());
        if slot.is_some() && of_hash.len() == before {
            return;
        }
        let mut all = Awaited::default();
        for a in of_hash.values() {
            all.extend(a);
        }
        *slot = Some(all);
    }
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
    for d in eng.deliveries(20)? {
        (d.id, d.decision, d.settled_at.map(|t| t.millis())).hash(&mut h);
    }
    Ok(h.finish())
}
