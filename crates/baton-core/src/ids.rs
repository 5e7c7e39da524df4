//! Task and phase identifiers, validated so they are always safe as file names.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {what} {value:?}: {reason}")]
pub struct IdError {
    pub what: &'static str,
    pub value: String,
    pub reason: &'static str,
}

/// A task id such as `01-add-auth-middleware`: letters, digits, `-`, `_`, `.`,
/// starting with a letter or digit, at most 64 characters, never `..`, not
/// ending in `.` or `.lock` (git cannot name refs so).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TaskId(String);

/// A phase id: `[a-z0-9][a-z0-9-]*`, at most 64 characters.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct PhaseId(String);

/// The checks both id kinds share: not empty, at most 64 bytes, a first
/// byte `first` accepts, every byte `rest` accepts. `charset` says which.
fn check(
    what: &'static str,
    s: &str,
    first: fn(u8) -> bool,
    first_rule: &'static str,
    rest: fn(u8) -> bool,
    charset: &'static str,
) -> Result<(), IdError> {
    let reason = if s.is_empty() {
        "it is empty"
    } else if s.len() > 64 {
        "it is longer than 64 characters"
    } else if !first(s.as_bytes()[0]) {
        first_rule
    } else if !s.bytes().all(rest) {
        charset
    } else {
        return Ok(());
    };
    Err(IdError {
        what,
        value: s.to_string(),
        reason,
    })
}

impl TaskId {
    pub fn parse(s: &str) -> Result<Self, IdError> {
        check(
            "task id",
            s,
            |b| b.is_ascii_alphanumeric(),
            "it must start with a letter or a digit",
            |b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.',
            "only letters, digits, '-', '_' and '.' are allowed",
        )?;
        let err = |reason| {
            Err(IdError {
                what: "task id",
                value: s.to_string(),
                reason,
            })
        };
        if s.contains("..") {
            return err("it contains '..'");
        }
        // Task ids name git refs (refs/baton/<id>/…), which cannot end so.
        if s.ends_with('.') {
            return err("it must not end with '.'");
        }
        if s.ends_with(".lock") {
            return err("it must not end with '.lock'");
        }
        Ok(TaskId(s.to_string()))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl PhaseId {
    pub fn parse(s: &str) -> Result<Self, IdError> {
        check(
            "phase id",
            s,
            |b| b.is_ascii_lowercase() || b.is_ascii_digit(),
            "it must start with a lowercase letter or a digit",
            |b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-',
            "only lowercase letters, digits and '-' are allowed",
        )?;
        Ok(PhaseId(s.to_string()))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

macro_rules! id_impls {
    ($t:ty) => {
        impl TryFrom<String> for $t {
            type Error = IdError;
            fn try_from(s: String) -> Result<Self, IdError> {
                <$t>::parse(&s)
            }
        }
        impl From<$t> for String {
            fn from(id: $t) -> String {
                id.0
            }
        }
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }
        impl std::borrow::Borrow<str> for $t {
            fn borrow(&self) -> &str {
                &self.0
            }
        }
    };
}
id_impls!(TaskId);
id_impls!(PhaseId);

/// Turns a free-text description into a task-id slug: `Add auth middleware` →
/// `add-auth-middleware`, prefixed by a two-digit sequence number.
pub fn slugify(seq: u32, description: &str) -> String {
    let mut slug = String::new();
    let mut dash = false;
    for c in description.chars() {
        if c.is_ascii_alphanumeric() {
            if dash && !slug.is_empty() {
                slug.push('-');
            }
            dash = false;
            slug.push(c.to_ascii_lowercase());
        } else {
            dash = true;
        }
        if slug.len() >= 40 {
            break;
        }
    }
    if slug.is_empty() {
        slug.push_str("task");
    }
    format!("{seq:02}-{slug}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_path_traversal() {
        for bad in ["../x", "/abs", "a/b", "x\0y", "..", "", ".hidden", "a..b"] {
            assert!(TaskId::parse(bad).is_err(), "{bad:?} accepted");
            assert!(PhaseId::parse(bad).is_err(), "{bad:?} accepted");
        }
        assert!(TaskId::parse("01-add-auth.v2_x").is_ok());
        assert!(PhaseId::parse("run-tests").is_ok());
        assert!(PhaseId::parse("Run").is_err());
    }

    #[test]
    fn refuses_what_git_cannot_name_refs_after() {
        for bad in ["x.", "fix.lock", "a.b.lock", "1."] {
            let e = TaskId::parse(bad).expect_err(bad);
            assert!(e.to_string().contains("must not end with"), "{e}");
        }
        for ok in ["x.lockx", "lock", "v1.2", "x-lock"] {
            assert!(TaskId::parse(ok).is_ok(), "{ok:?} refused");
        }
    }

    #[test]
    fn slugs() {
        assert_eq!(slugify(1, "Add auth middleware!"), "01-add-auth-middleware");
        assert_eq!(slugify(12, "  ***  "), "12-task");
    }
}
