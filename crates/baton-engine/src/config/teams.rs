//! `[teams]` of `.baton/config.toml`: when a teammate (or the lead) counts
//! as online, idle, suspended or stale, when a silent lead is timed out and
//! when it may be replaced, and how often teammates checkpoint.

use crate::error::{Error, Result};
use baton_core::team::Thresholds;
use serde::Deserialize;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TeamsConfig {
    /// Online while its last heartbeat is younger than this (default "10m").
    pub online: Option<String>,
    /// Idle until this (default "30m").
    pub idle: Option<String>,
    /// Suspended until this, stale beyond (default "60m").
    pub suspended: Option<String>,
    /// A lead silent this long is timed out: zombie mode (default "5m").
    pub lead_timeout: Option<String>,
    /// A lead silent this long may be replaced by another (default "30m").
    pub lead_replace: Option<String>,
    /// How often teammates are asked to checkpoint (default "30s").
    pub checkpoint_every: Option<String>,
    /// Commands a consolidation runs before it commits (e.g. the test
    /// suite); each must exit 0.
    #[serde(default)]
    pub checks: Vec<String>,
}

/// `[teams]` resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeamSettings {
    pub thresholds: Thresholds,
    pub checkpoint_every_ms: i64,
    pub checks: Vec<String>,
}

impl TeamsConfig {
    pub fn settings(&self) -> Result<TeamSettings> {
        let d = Thresholds::default();
        let get = |key: &str, v: &Option<String>, default: i64| -> Result<i64> {
            match v {
                None => Ok(default),
                Some(t) => baton_core::workflow::parse_duration(t)
                    .map(|ms| ms as i64)
                    .map_err(|m| {
                        Error::bad_input(format!(".baton/config.toml: [teams] {key}: {m}")).hint(
                            format!(
                                "in .baton/config.toml under [teams], write e.g. {key} = \"10m\""
                            ),
                        )
                    }),
            }
        };
        let thresholds = Thresholds {
            online_ms: get("online", &self.online, d.online_ms)?,
            idle_ms: get("idle", &self.idle, d.idle_ms)?,
            suspended_ms: get("suspended", &self.suspended, d.suspended_ms)?,
            lead_timeout_ms: get("lead_timeout", &self.lead_timeout, d.lead_timeout_ms)?,
            lead_replace_ms: get("lead_replace", &self.lead_replace, d.lead_replace_ms)?,
            skew_ms: d.skew_ms,
        };
        if !(thresholds.online_ms < thresholds.idle_ms
            && thresholds.idle_ms < thresholds.suspended_ms)
        {
            return Err(Error::bad_input(
                ".baton/config.toml: [teams] online, idle and suspended must grow in that order",
            )
            .hint("e.g. online = \"10m\", idle = \"30m\", suspended = \"60m\""));
        }
        Ok(TeamSettings {
            thresholds,
            checkpoint_every_ms: get("checkpoint_every", &self.checkpoint_every, 30_000)?,
            checks: self.checks.clone(),
        })
    }
}
