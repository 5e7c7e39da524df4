//! Error kinds shared by every layer, each mapped to an exit code of docs/cli.md.

/// What kind of failure an error is; it picks the process exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Usage errors, invalid workflows, unknown tasks or phases: exit 2.
    BadInput,
    /// Another live process holds the task's lease: exit 3.
    Busy,
    /// Anything else that went wrong while operating: exit 1.
    Operational,
}

/// The exit codes of docs/cli.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Done = 0,
    Failed = 1,
    BadInput = 2,
    Busy = 3,
    Waiting = 4,
}

impl Exit {
    pub fn code(self) -> u8 {
        self as u8
    }
}

impl From<ErrorKind> for Exit {
    fn from(kind: ErrorKind) -> Self {
        match kind {
            ErrorKind::BadInput => Exit::BadInput,
            ErrorKind::Busy => Exit::Busy,
            ErrorKind::Operational => Exit::Failed,
        }
    }
}
