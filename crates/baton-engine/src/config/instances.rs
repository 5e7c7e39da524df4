//! `[instances]` of `.baton/config.toml`: coding and review agent
//! instances (issue 10): how many at once, where their worktrees go, what
//! cleanup does, and the defaults of each kind.

use crate::error::{Error, Result};
use baton_core::instance::{ErrorCode, ReviewConfig};
use serde::Deserialize;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstancesConfig {
    /// Instances alive at once (default 5).
    pub max_concurrent_instances: Option<u32>,
    /// Where worktrees go, relative to the repository's top (default
    /// `../<repository>-worktrees`).
    pub worktree_base: Option<String>,
    /// "auto" (default): an ended instance's worktree and branch are
    /// removed when that loses nothing; "manual": kept until `doctor --fix`.
    pub cleanup_policy: Option<String>,
    #[serde(default)]
    pub coding: CodingDefaults,
    #[serde(default)]
    pub review: ReviewDefaults,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodingDefaults {
    pub require_review: Option<bool>,
    pub max_reviews: Option<u32>,
    /// e.g. "24h" (the default).
    pub execution_timeout: Option<String>,
    /// Standing instructions for every coding agent, ahead of its work.
    pub system_prompt: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewDefaults {
    pub review_prompt: Option<String>,
    pub preserve_changes: Option<bool>,
    pub timeout_minutes: Option<u32>,
}

/// What removing an ended instance's resources does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CleanupPolicy {
    Auto,
    Manual,
}

/// `[instances]` with its defaults filled in and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceSettings {
    pub max_concurrent_instances: u32,
    pub worktree_base: PathBuf,
    pub cleanup_policy: CleanupPolicy,
    pub require_review: bool,
    pub max_reviews: u32,
    pub execution_timeout_ms: u64,
    pub system_prompt: Option<String>,
    pub review: ReviewConfig,
}

fn invalid(what: String, hint: &str) -> Error {
    Error::coded(
        ErrorCode::InvalidConfiguration,
        format!(".baton/config.toml: [instances] {what}"),
    )
    .hint(format!(
        "in .baton/config.toml, {hint} (see docs/config.md)"
    ))
}

/// `path` with its `.` and `..` folded away (as written, without asking
/// the file system), so the worktrees' paths read as the user expects.
fn lexical(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

impl InstancesConfig {
    /// The settings for the repository whose work tree's top is `top`.
    pub fn settings(&self, top: &Path) -> Result<InstanceSettings> {
        let max_concurrent_instances = self.max_concurrent_instances.unwrap_or(5);
        if max_concurrent_instances == 0 {
            return Err(invalid(
                "max_concurrent_instances is 0: no instance could start".into(),
                "write max_concurrent_instances = 5 (or any number from 1) under [instances]",
            ));
        }
        let worktree_base = match self.worktree_base.as_deref().map(str::trim) {
            Some("") => {
                return Err(invalid(
                    "worktree_base is empty".into(),
                    "write worktree_base = \"../worktrees\" (a folder, relative to the repository's top) under [instances], or leave it out",
                ));
            }
            Some(b) => lexical(&top.join(b)),
            None => {
                let name = top
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "repository".into());
                lexical(&top.join("..").join(format!("{name}-worktrees")))
            }
        };
        let cleanup_policy = match self.cleanup_policy.as_deref() {
            None | Some("auto") => CleanupPolicy::Auto,
            Some("manual") => CleanupPolicy::Manual,
            Some(other) => {
                return Err(invalid(
                    format!("cleanup_policy must be \"auto\" or \"manual\", not {other:?}"),
                    "write cleanup_policy = \"auto\" (remove what loses nothing) or \"manual\" under [instances]",
                ));
            }
        };
        let c = &self.coding;
        let require_review = c.require_review.unwrap_or(false);
        let max_reviews = c.max_reviews.unwrap_or(3);
        if require_review && max_reviews == 0 {
            return Err(invalid(
                "coding.require_review is set but coding.max_reviews is 0: no review could ever happen".into(),
                "set max_reviews to 1 or more, or require_review = false, under [instances.coding]",
            ));
        }
        let timeout_hint = "write e.g. execution_timeout = \"24h\" (the default; at least 1m) under [instances.coding]";
        let execution_timeout_ms = match c.execution_timeout.as_deref() {
            None => 24 * 3_600_000,
            Some(t) => {
                let ms = baton_core::workflow::parse_duration(t)
                    .map_err(|m| invalid(format!("coding.execution_timeout: {m}"), timeout_hint))?;
                if ms < 60_000 {
                    return Err(invalid(
                        format!("coding.execution_timeout must be at least 1m, not {t:?}"),
                        timeout_hint,
                    ));
                }
                ms
            }
        };
        let r = &self.review;
        let timeout_minutes = r.timeout_minutes.unwrap_or(30);
        if timeout_minutes == 0 {
            return Err(invalid(
                "review.timeout_minutes is 0: every review would time out at once".into(),
                "write timeout_minutes = 30 (the default; at least 1) under [instances.review]",
            ));
        }
        Ok(InstanceSettings {
            max_concurrent_instances,
            worktree_base,
            cleanup_policy,
            require_review,
            max_reviews,
            execution_timeout_ms,
            system_prompt: c.system_prompt.clone().filter(|s| !s.trim().is_empty()),
            review: ReviewConfig {
                review_prompt: r.review_prompt.clone(),
                preserve_changes: r.preserve_changes.unwrap_or(false),
                timeout_ms: u64::from(timeout_minutes) * 60_000,
                agent: None,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn settings(toml: &str) -> Result<InstanceSettings> {
        let cfg = Config::parse(toml, "config.toml")?;
        cfg.instances.settings(Path::new("/src/app"))
    }

    #[test]
    fn the_defaults_are_those_of_the_issue() {
        let s = settings("").unwrap();
        assert_eq!(s.max_concurrent_instances, 5);
        assert_eq!(s.worktree_base, Path::new("/src/app-worktrees"));
        assert_eq!(s.cleanup_policy, CleanupPolicy::Auto);
        assert_eq!((s.require_review, s.max_reviews), (false, 3));
        assert_eq!(s.execution_timeout_ms, 24 * 3_600_000);
        assert_eq!(s.review.timeout_ms, 30 * 60_000);
        assert!(!s.review.preserve_changes);
    }

    #[test]
    fn every_key_is_read() {
        let s = settings(
            r#"[instances]
max_concurrent_instances = 2
worktree_base = "../wt"
cleanup_policy = "manual"
[instances.coding]
require_review = true
max_reviews = 1
execution_timeout = "2h"
system_prompt = "You write small, tested changes."
[instances.review]
review_prompt = "check the tests"
preserve_changes = true
timeout_minutes = 45
"#,
        )
        .unwrap();
        assert_eq!(s.max_concurrent_instances, 2);
        assert_eq!(s.worktree_base, Path::new("/src/wt"));
        assert_eq!(s.cleanup_policy, CleanupPolicy::Manual);
        assert_eq!((s.require_review, s.max_reviews), (true, 1));
        assert_eq!(s.execution_timeout_ms, 2 * 3_600_000);
        assert_eq!(
            s.system_prompt.as_deref(),
            Some("You write small, tested changes.")
        );
        assert_eq!(s.review.review_prompt.as_deref(), Some("check the tests"));
        assert!(s.review.preserve_changes);
        assert_eq!(s.review.timeout_ms, 45 * 60_000);
    }

    #[test]
    fn bad_values_are_refused_at_parse_time_with_the_code_and_a_fix() {
        for (toml, says) in [
            (
                "[instances]\nmax_concurrent_instances = 0\n",
                "max_concurrent_instances is 0",
            ),
            (
                "[instances]\nworktree_base = \" \"\n",
                "worktree_base is empty",
            ),
            ("[instances]\ncleanup_policy = \"never\"\n", "\"never\""),
            (
                "[instances.coding]\nrequire_review = true\nmax_reviews = 0\n",
                "no review could ever happen",
            ),
            (
                "[instances.coding]\nexecution_timeout = \"soon\"\n",
                "execution_timeout",
            ),
            (
                "[instances.coding]\nexecution_timeout = \"10s\"\n",
                "at least 1m",
            ),
            (
                "[instances.review]\ntimeout_minutes = 0\n",
                "timeout_minutes is 0",
            ),
        ] {
            let e = Config::parse(toml, "config.toml").expect_err(toml);
            let text = e.to_string();
            assert!(text.contains("WORKFLOW_INVALID_CONFIGURATION"), "{text}");
            assert!(text.contains(says), "{toml}: {text}");
            assert_eq!(e.kind, baton_core::ErrorKind::BadInput);
            assert!(
                e.hints.iter().any(|h| h.contains("docs/config.md")),
                "{:?}",
                e.hints
            );
        }
        let e = Config::parse("[instances]\nmax_instances = 3\n", "config.toml").unwrap_err();
        assert!(e.to_string().contains("unknown field"), "{e}");
    }
}
