//! `[server]` of `.baton/config.toml`: `baton serve`, where it listens,
//! how webhooks are authenticated, and the API's bearer token.

use crate::error::{Error, Result};
use serde::Deserialize;
use std::net::SocketAddr;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// Where to listen (default "127.0.0.1:7777"; `--addr` wins).
    pub addr: Option<String>,
    /// Webhook secrets: a delivery signed with any of them is accepted, so
    /// a secret can be rotated (`BATON_WEBHOOK_SECRET` is added to them).
    #[serde(default)]
    pub webhook_secrets: Vec<String>,
    /// The largest webhook body accepted (default "5MiB"; GitHub caps
    /// payloads at 25 MB).
    pub max_body: Option<String>,
    /// How a task id is read from a pull request's head branch (default
    /// "baton/{task-id}").
    pub branch_pattern: Option<String>,
    /// The API's bearer token (`BATON_SERVER_TOKEN` wins); required when
    /// listening on anything but loopback.
    pub token: Option<String>,
}

/// `[server]` resolved: defaults filled in, the environment added, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSettings {
    pub addr: SocketAddr,
    pub secrets: Vec<String>,
    pub max_body: usize,
    pub branch_pattern: String,
    pub token: Option<String>,
}

pub const DEFAULT_ADDR: &str = "127.0.0.1:7777";

impl ServerConfig {
    /// The settings, with `addr` (from `--addr`) over the file's, and the
    /// environment's secret and token.
    pub fn settings(
        &self,
        addr: Option<&str>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<ServerSettings> {
        let bad = |key: &str, what: String, hint: &str| {
            Error::bad_input(format!(".baton/config.toml: [server] {key}: {what}"))
                .hint(format!("in .baton/config.toml under [server], {hint}"))
        };
        let text = addr.or(self.addr.as_deref()).unwrap_or(DEFAULT_ADDR);
        let addr: SocketAddr = text.parse().map_err(|_| {
            let e = Error::bad_input(format!("{text:?} is not an address to listen on"))
                .hint("write IP:PORT, e.g. 127.0.0.1:7777, or 0.0.0.0:7777 for every interface");
            if addr.is_some() {
                e
            } else {
                bad(
                    "addr",
                    format!("{text:?} is not IP:PORT"),
                    "write e.g. addr = \"127.0.0.1:7777\"",
                )
            }
        })?;
        let mut secrets: Vec<String> = self
            .webhook_secrets
            .iter()
            .filter(|s| !s.is_empty())
            .cloned()
            .collect();
        if let Some(s) = env("BATON_WEBHOOK_SECRET").filter(|s| !s.is_empty()) {
            secrets.push(s);
        }
        let max_body = match &self.max_body {
            None => 5 << 20,
            Some(t) => parse_size(t).ok_or_else(|| {
                bad(
                    "max_body",
                    format!("{t:?} is not a size"),
                    "write e.g. max_body = \"5MiB\" (B, KiB, MiB; at least 1KiB)",
                )
            })?,
        };
        let branch_pattern = self
            .branch_pattern
            .clone()
            .unwrap_or_else(|| baton_core::webhook::DEFAULT_BRANCH_PATTERN.to_string());
        if !branch_pattern.contains("{task-id}") {
            return Err(bad(
                "branch_pattern",
                format!("{branch_pattern:?} has no {{task-id}}"),
                "write e.g. branch_pattern = \"baton/{task-id}\"",
            ));
        }
        let token = env("BATON_SERVER_TOKEN")
            .or_else(|| self.token.clone())
            .filter(|t| !t.is_empty());
        if token.is_none() && !addr.ip().is_loopback() {
            return Err(Error::bad_input(format!(
                "baton serve would listen on {addr}, beyond this machine, with no API token"
            ))
            .hint("set BATON_SERVER_TOKEN (or token = \"…\" under [server] in .baton/config.toml); webhooks stay authenticated by their signature"));
        }
        Ok(ServerSettings {
            addr,
            secrets,
            max_body,
            branch_pattern,
            token,
        })
    }
}

/// `[supervisor]`: what `baton serve` restarts by itself.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SupervisorConfig {
    /// Automatic restarts of one task within `window` (default 3).
    pub max_restarts: Option<u32>,
    /// Default "1h".
    pub window: Option<String>,
    /// The wait after an automatic restart before the next, doubled with
    /// each further one (default "5s").
    pub backoff: Option<String>,
    /// Also run queued tasks (default false: they are left to `baton worker`).
    pub run_queued: Option<bool>,
}

/// `[supervisor]` resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SupervisorSettings {
    pub policy: baton_core::supervisor::Policy,
    pub run_queued: bool,
}

impl SupervisorConfig {
    pub fn settings(&self) -> Result<SupervisorSettings> {
        let default = baton_core::supervisor::Policy::default();
        let duration = |key: &str,
                        v: &Option<String>,
                        default: i64,
                        example: &str|
         -> Result<i64> {
            match v {
                None => Ok(default),
                Some(t) => baton_core::workflow::parse_duration(t)
                    .map(|ms| ms as i64)
                    .map_err(|m| {
                        Error::bad_input(format!(".baton/config.toml: [supervisor] {key}: {m}"))
                            .hint(format!(
                                "in .baton/config.toml under [supervisor], write e.g. {key} = \"{example}\""
                            ))
                    }),
            }
        };
        Ok(SupervisorSettings {
            policy: baton_core::supervisor::Policy {
                max_restarts: self.max_restarts.unwrap_or(default.max_restarts),
                window_ms: duration("window", &self.window, default.window_ms, "1h")?,
                backoff_ms: duration("backoff", &self.backoff, default.backoff_ms, "5s")?,
            },
            run_queued: self.run_queued.unwrap_or(false),
        })
    }
}

/// "5MiB", "512KiB", "1048576" (bytes); at least 1 KiB.
fn parse_size(t: &str) -> Option<usize> {
    let t = t.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (n, unit) = t.split_at(split);
    let n: usize = n.parse().ok()?;
    let mult = match unit.trim() {
        "" | "B" => 1,
        "KiB" | "KB" | "K" => 1 << 10,
        "MiB" | "MB" | "M" => 1 << 20,
        _ => return None,
    };
    n.checked_mul(mult).filter(|b| *b >= 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn defaults_listen_on_loopback_with_a_5_mib_limit() {
        let s = ServerConfig::default().settings(None, none).unwrap();
        assert_eq!(s.addr.to_string(), "127.0.0.1:7777");
        assert_eq!(s.max_body, 5 << 20);
        assert_eq!(s.branch_pattern, "baton/{task-id}");
        assert!(s.secrets.is_empty());
    }

    #[test]
    fn beyond_loopback_a_token_is_required() {
        let e = ServerConfig::default()
            .settings(Some("0.0.0.0:7777"), none)
            .unwrap_err();
        assert!(e.message.contains("no API token"), "{}", e.message);
        let s = ServerConfig::default()
            .settings(Some("0.0.0.0:7777"), |k| {
                (k == "BATON_SERVER_TOKEN").then(|| "t0k".to_string())
            })
            .unwrap();
        assert_eq!(s.token.as_deref(), Some("t0k"));
    }

    #[test]
    fn secrets_from_the_file_and_the_environment_all_count() {
        let cfg = ServerConfig {
            webhook_secrets: vec!["old".into(), "new".into()],
            ..Default::default()
        };
        let s = cfg
            .settings(None, |k| {
                (k == "BATON_WEBHOOK_SECRET").then(|| "env".into())
            })
            .unwrap();
        assert_eq!(s.secrets, ["old", "new", "env"]);
    }

    #[test]
    fn sizes_and_bad_values_are_explained() {
        assert_eq!(parse_size("5MiB"), Some(5 << 20));
        assert_eq!(parse_size("2048"), Some(2048));
        assert_eq!(parse_size("64 KiB"), Some(64 << 10));
        assert_eq!(parse_size("12"), None);
        assert_eq!(parse_size("5 parsecs"), None);
        let cfg = ServerConfig {
            max_body: Some("lots".into()),
            ..Default::default()
        };
        let e = cfg.settings(None, none).unwrap_err();
        assert!(e.message.contains("[server] max_body"), "{}", e.message);
        let e = ServerConfig::default()
            .settings(Some("localhost"), none)
            .unwrap_err();
        assert!(e.message.contains("not an address"), "{}", e.message);
    }
}
