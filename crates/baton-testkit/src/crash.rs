//! What a crash-point enumeration checked, as every suite that crashes
//! at `baton_core::crash::POINTS` counts it: the points reached, the
//! commands run (each crashed one and each recovery), the invariants
//! checked and the breaks found. Each suite prints its figures and, when
//! `BATON_FIGURES_DIR` is set (the test script sets it), writes them
//! there, where the script adds them up.

/// What an enumeration checked.
#[derive(Default)]
pub struct Tally {
    pub points: std::collections::BTreeSet<String>,
    pub runs: usize,
    pub invariants: usize,
    pub breaks: Vec<String>,
}

impl Tally {
    /// An invariant checked; a break when it does not hold.
    pub fn check(&mut self, ok: bool, what: impl FnOnce() -> String) {
        self.invariants += 1;
        if !ok {
            self.breaks.push(what());
        }
    }

    /// Runs `cmd` with `BATON_TEST_CRASH_AT=point` and checks it died
    /// there (SIGKILL, no exit code).
    pub fn crash(&mut self, mut cmd: std::process::Command, point: &str) {
        let out = cmd.env("BATON_TEST_CRASH_AT", point).output().unwrap();
        self.points
            .insert(point.split(':').next().unwrap_or(point).to_string());
        self.runs += 1;
        self.check(out.status.code().is_none(), || {
            format!(
                "{point}: baton was to die by SIGKILL there, it exited {:?}: {}",
                out.status.code(),
                String::from_utf8_lossy(&out.stderr)
            )
        });
    }

    /// A recovery command run: it counts as a command run.
    pub fn recovered(&mut self, point: &str, what: &str, code: i32, want: i32, err: &str) {
        self.runs += 1;
        self.check(code == want, || {
            format!("{point}: `{what}` exited {code}, not {want}: {err}")
        });
    }

    /// Prints the figures (and writes them for the test script), then
    /// fails on any break.
    pub fn report(self, name: &str) {
        let line = format!(
            "crash points: {} of {}; commands x points run: {}; invariants checked: {}; breaks found: {}",
            self.points.len(),
            baton_core::crash::POINTS.len(),
            self.runs,
            self.invariants,
            self.breaks.len()
        );
        println!("{name}: {line}");
        if let Ok(dir) = std::env::var("BATON_FIGURES_DIR") {
            let dir = std::path::Path::new(&dir);
            let _ = std::fs::create_dir_all(dir);
            let backend = match crate::backend() {
                crate::Backend::Sqlite => "sqlite",
                crate::Backend::Postgres => "postgres",
            };
            let points: Vec<&str> = self.points.iter().map(String::as_str).collect();
            let _ = std::fs::write(
                dir.join(format!("crash-{name}-{backend}.txt")),
                format!("{line}\npoints: {}\n", points.join(" ")),
            );
        }
        assert!(
            self.breaks.is_empty(),
            "{name}: breaks:\n{}",
            self.breaks.join("\n")
        );
    }
}
