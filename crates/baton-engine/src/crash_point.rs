//! The crash points of `baton_core::crash::POINTS`, as the process meets
//! them. In a test build (debug assertions on), a point that
//! `BATON_TEST_CRASH_AT` names (`POINT` or `POINT:KEY`) kills the process
//! with SIGKILL there; the first time the process reaches one that
//! `BATON_TEST_HOLD_AT` names, it writes the file `BATON_TEST_HOLD_FILE`
//! and waits (at most two minutes) until a test removes it, so the test
//! can act on the world at that exact moment (cut the store's connection,
//! restart the database) before the process goes on. A release build has
//! neither.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

struct Wanted {
    crash: Option<String>,
    hold: Option<(String, std::path::PathBuf)>,
}

fn wanted() -> &'static Wanted {
    static W: OnceLock<Wanted> = OnceLock::new();
    W.get_or_init(|| Wanted {
        crash: std::env::var("BATON_TEST_CRASH_AT").ok(),
        hold: std::env::var("BATON_TEST_HOLD_AT")
            .ok()
            .zip(std::env::var_os("BATON_TEST_HOLD_FILE").map(Into::into)),
    })
}

/// Point `point` reached with `key` (a phase, a team, an event's kind…).
pub fn at(point: &str, key: &str) {
    debug_assert!(
        baton_core::crash::known(point),
        "crash point {point} is not in baton_core::crash::POINTS"
    );
    if !cfg!(debug_assertions) {
        return;
    }
    let w = wanted();
    if w.crash
        .as_deref()
        .is_some_and(|c| baton_core::crash::matches(c, point, key))
    {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::this(), nix::sys::signal::Signal::SIGKILL);
    }
    static HELD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if let Some((h, file)) = &w.hold
        && baton_core::crash::matches(h, point, key)
        && !HELD.swap(true, Ordering::SeqCst)
        && std::fs::write(file, format!("{point}:{key}")).is_ok()
    {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while file.exists() && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

/// A point reached once per thing done in order (each repair of `doctor
/// --fix`): its key is how many times it was reached in this process,
/// from 1.
pub fn counted(point: &str) {
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::SeqCst) + 1;
    at(point, &n.to_string());
}
