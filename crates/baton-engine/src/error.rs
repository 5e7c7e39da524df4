//! The engine's error: a kind (which picks the exit code), a message, and
//! `hint:` lines telling the user what to do.

use baton_core::ErrorKind;
use baton_core::instance::{ErrorCode, InstanceError};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
    pub hints: Vec<String>,
    /// The review loop's typed code (`WORKFLOW_*`), for errors of agent
    /// instances; the message starts with it too.
    pub code: Option<ErrorCode>,
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            hints: Vec::new(),
            code: None,
        }
    }
    /// An error of the review loop: `CODE: message`, with the exit code
    /// its kind gives (a refused request is bad input, exit 2; what failed
    /// while doing it is operational, exit 1).
    pub fn coded(code: ErrorCode, message: impl Into<String>) -> Self {
        let kind = match code {
            ErrorCode::InvalidConfiguration
            | ErrorCode::InstanceNotFound
            | ErrorCode::InvalidState
            | ErrorCode::ParentNotFound
            | ErrorCode::ParentInvalidState
            | ErrorCode::MaxReviewsExceeded
            | ErrorCode::ReviewInProgress
            | ErrorCode::InvalidArguments => ErrorKind::BadInput,
            ErrorCode::ResourceAllocationFailed
            | ErrorCode::ExecutionTimeout
            | ErrorCode::CleanupFailed
            | ErrorCode::ForkFailed
            | ErrorCode::MergeConflict
            | ErrorCode::PrCreationFailed
            | ErrorCode::ReviewTimeout
            | ErrorCode::ParentUpdateFailed => ErrorKind::Operational,
        };
        let mut e = Self::new(kind, format!("{code}: {}", message.into()));
        e.code = Some(code);
        e
    }
    pub fn bad_input(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::BadInput, message)
    }
    pub fn busy(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Busy, message)
    }
    pub fn op(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Operational, message)
    }
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hints.push(hint.into());
        self
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<baton_store::Error> for Error {
    fn from(e: baton_store::Error) -> Self {
        use baton_store::Error as S;
        match &e {
            S::NotFound(id) => Error::bad_input(format!("no task {id}"))
                .hint("run `baton ls --all` to see the tasks"),
            S::AlreadyExists(id) => Error::bad_input(format!("a task {id} already exists"))
                .hint(format!("continue it with `baton resume {id}`, or pick another --id")),
            S::LeaseLost { task, holder } => Error::busy(match holder {
                Some(l) => format!(
                    "task {task} was taken over by {} while this process ran it",
                    l.owner.describe()
                ),
                None => format!("the lease of task {task} was released while this process ran it"),
            }),
            S::NewerSchema { .. } => Error::op(e.to_string())
                .hint("use that newer baton (or upgrade this one); the store is fine and was not changed"),
            S::InvalidUrl { .. } => Error::bad_input(e.to_string())
                .hint("write it as postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE; nothing was written"),
            S::TransactionPooling { .. } => Error::bad_input(e.to_string()).hint(
                "give baton's database pool_mode = session in pgbouncer.ini (a [databases] entry may set its own pool_mode), or connect to PostgreSQL directly; nothing was written",
            ),
            S::Connect { .. } => Error::op(e.to_string()).hint(
                "check the URL in BATON_DATABASE_URL or `store` in .baton/config.toml (postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE) and that the server runs; nothing was written",
            ),
            _ if e.is_read_only() => Error::op(
                "the store is read-only (its folder or mount cannot be written), and this command writes to it",
            )
            .hint("`baton ls`, `show` and `log` read it as it is; run this where the project can be written"),
            // Not damage: nothing a rebuild would mend (a folder that
            // cannot be read, a file system that is gone).
            S::Open { .. } => Error::op(e.to_string()).hint(
                "check that the folder .baton/ and its baton.db can be read (and, to change anything, written) by you; `baton doctor` says what it finds",
            ),
            S::Corrupt(_) => Error::op(e.to_string())
                .hint("run `baton doctor` to check the store, and `baton doctor --fix` to rebuild it from the rendered files"),
            _ => Error::op(e.to_string()),
        }
    }
}

impl From<InstanceError> for Error {
    fn from(e: InstanceError) -> Self {
        Error::coded(e.code, e.message).hint(e.hint)
    }
}

impl From<baton_core::machine::RuleError> for Error {
    fn from(e: baton_core::machine::RuleError) -> Self {
        Error::bad_input(e.0)
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::op(e.to_string())
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
