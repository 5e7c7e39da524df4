//! Which clock the engine reads: this machine's for a store on one machine
//! (SQLite), the store server's for one that machines share (PostgreSQL).
//!
//! A lease's expiry written by one machine is judged by another; with each
//! reading its own clock, a host 45 s ahead saw every task of the others
//! CRASHED and took it over while its phase still ran (issue 34). On a
//! shared store every lease, journal time and timer is therefore read from
//! the server's clock: read once, then followed with this process's
//! monotonic clock (immune to the wall clock being stepped), and read again
//! every [`REREAD`]. When the server does not answer, the last reading goes
//! on.

use baton_core::time::{Clock, Timestamp};
use baton_store::Store;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a reading of the server's clock is followed before it is read
/// again (the drift of two monotonic clocks over it is microseconds).
pub const REREAD: Duration = Duration::from_secs(30);

/// The clock for an engine on `store`: the server's when the store has one
/// ([`Store::server_now`]), else this machine's.
pub fn for_store(store: &Arc<dyn Store>) -> crate::error::Result<Arc<dyn Clock>> {
    let asked = Instant::now();
    Ok(match store.server_now()? {
        Some(now) => Arc::new(ServerClock {
            store: store.clone(),
            reading: Mutex::new(Reading::at(asked + asked.elapsed() / 2, now)),
        }),
        None => Arc::new(crate::engine::SystemClock),
    })
}

/// The store server's clock, followed between readings.
struct ServerClock {
    store: Arc<dyn Store>,
    reading: Mutex<Reading>,
}

#[derive(Clone, Copy)]
struct Reading {
    /// When it was read, on this process's monotonic clock.
    at: Instant,
    /// What the server said then.
    server: Timestamp,
}

impl Reading {
    fn at(at: Instant, server: Timestamp) -> Reading {
        Reading { at, server }
    }
    fn now(&self) -> Timestamp {
        let ms = i64::try_from(self.at.elapsed().as_millis()).unwrap_or(i64::MAX);
        self.server.plus_millis(ms)
    }
}

impl Clock for ServerClock {
    fn now(&self) -> Timestamp {
        let mut r = self.reading.lock().unwrap_or_else(|e| e.into_inner());
        if r.at.elapsed() >= REREAD {
            let asked = Instant::now();
            if let Ok(Some(server)) = self.store.server_now() {
                // The answer was made about halfway through the round trip.
                *r = Reading::at(asked + asked.elapsed() / 2, server);
            }
        }
        r.now()
    }
}
