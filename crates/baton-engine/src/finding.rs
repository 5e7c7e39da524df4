//! What a check found (`baton doctor`, and the accounting of the
//! features it checks, such as agent instances'): ok, a problem with what
//! to do, what was fixed, or what is kept on purpose.

/// One finding, as `baton doctor` prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// `ok`, `problem`, `fixed` or `kept` (left as it is on purpose,
    /// holding work: said, never a problem).
    pub level: &'static str,
    pub message: String,
    pub hint: Option<String>,
}

impl Finding {
    pub fn ok(m: impl Into<String>) -> Self {
        Finding {
            level: "ok",
            message: m.into(),
            hint: None,
        }
    }
    pub fn problem(m: impl Into<String>, hint: impl Into<String>) -> Self {
        Finding {
            level: "problem",
            message: m.into(),
            hint: Some(hint.into()),
        }
    }
    /// Something baton keeps on purpose (a worktree holding work): said,
    /// with what the user may do, but no problem (`doctor` does not fail
    /// over it, and `--fix` never removes it).
    pub fn kept(m: impl Into<String>, hint: impl Into<String>) -> Self {
        Finding {
            level: "kept",
            message: m.into(),
            hint: Some(hint.into()),
        }
    }
    /// A repair made (`doctor --fix`): each is a crash point, numbered in
    /// the order they are made.
    pub fn fixed(m: impl Into<String>) -> Self {
        crate::crash_point::counted("doctor-repaired");
        Finding {
            level: "fixed",
            message: m.into(),
            hint: None,
        }
    }
}
