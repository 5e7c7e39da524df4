//! The session log parser never panics, whatever the bytes; and what it
//! reads renders to text it reads back to the same log.

#![no_main]

use baton_core::session_log::{parse, render};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(log) = parse(text) {
        let once = render(&log);
        let again = parse(&once).expect("a rendered log reads back");
        assert_eq!(render(&again), once, "render → parse → render is the same text");
    }
});
