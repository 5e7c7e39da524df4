//! `[server]` of `.baton/config.toml`: `baton serve`, where it listens,
//! how webhooks are authenticated, the API's bearer token (judged for
//! strength), the names it answers to, and the limits of its HTTP stack.

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
    /// The API's bearer token (`BATON_SERVER_TOKEN` wins, then this, then
    /// `.baton/server.token`); required when listening on anything but
    /// loopback; at least 32 random bytes' worth.
    pub token: Option<String>,
    /// `Host` names the server answers to besides loopback names and IP
    /// addresses: the name a reverse proxy or GitHub reaches it by.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// Connections open at once (default 1024); more wait to be accepted.
    pub max_connections: Option<usize>,
    /// How long a client may take to send a request's headers, and how
    /// long an idle connection is kept (default "10s").
    pub header_timeout: Option<String>,
    /// How long a request may take until its answer starts (default "30s").
    pub request_timeout: Option<String>,
    /// A signed body received again within this window, under any
    /// delivery id, is a redelivery (default "7d").
    pub replay_window: Option<String>,
    /// How long a delivery that came before the stage it is for is kept
    /// for that stage (default "7d").
    pub buffer_ttl: Option<String>,
}

const BUFFER_TTL: &str = "7d";

impl ServerConfig {
    /// How long an early delivery is kept, in milliseconds (checked when
    /// the config is read).
    pub fn buffer_ttl_ms(&self) -> i64 {
        let text = self.buffer_ttl.as_deref().unwrap_or(BUFFER_TTL);
        baton_core::workflow::parse_duration(text)
            .or_else(|_| baton_core::workflow::parse_duration(BUFFER_TTL))
            .map(|ms| ms as i64)
            .unwrap_or(7 * 24 * 3600 * 1000)
    }
}

/// `[server]` resolved: defaults filled in, the environment added, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSettings {
    pub addr: SocketAddr,
    pub secrets: Vec<String>,
    pub max_body: usize,
    pub branch_pattern: String,
    pub token: Option<String>,
    /// Names besides loopback names and IP addresses (lower case, as
    /// written: `name` or `name:port`).
    pub allowed_hosts: Vec<String>,
    pub max_connections: usize,
    pub header_timeout: std::time::Duration,
    pub request_timeout: std::time::Duration,
    pub replay_window_ms: i64,
}

pub const DEFAULT_ADDR: &str = "127.0.0.1:7777";

/// Where `baton serve --new-token` keeps the token it made, readable by
/// its owner only.
pub const TOKEN_FILE: &str = "server.token";

impl ServerConfig {
    /// The settings, with `addr` (from `--addr`) over the file's, and the
    /// environment's secret and token; `saved_token` is what
    /// `.baton/server.token` holds, the last place a token is looked for.
    pub fn settings(
        &self,
        addr: Option<&str>,
        env: impl Fn(&str) -> Option<String>,
        saved_token: Option<String>,
    ) -> Result<ServerSettings> {
        let bad = |key: &str, what: String, hint: &str| {
            Error::bad_input(format!(".baton/config.toml: [server] {key}: {what}"))
                .hint(format!("in .baton/config.toml under [server], {hint}"))
        };
        let text = addr.or(self.addr.as_deref()).unwrap_or(DEFAULT_ADDR);
        let addr = listen_addr(text).map_err(|why| {
            let e = Error::bad_input(format!("{text:?} is not an address to listen on: {why}"))
                .hint("write HOST:PORT, e.g. localhost:7777 or 127.0.0.1:7777, or 0.0.0.0:7777 for every interface");
            if addr.is_some() {
                e
            } else {
                bad(
                    "addr",
                    format!("{text:?} is not HOST:PORT: {why}"),
                    "write e.g. addr = \"127.0.0.1:7777\" or \"localhost:7777\"",
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
        let (token, from) = match env("BATON_SERVER_TOKEN") {
            Some(t) => (Some(t), "BATON_SERVER_TOKEN"),
            None => match &self.token {
                Some(t) => (Some(t.clone()), "[server] token"),
                None => (saved_token, ".baton/server.token"),
            },
        };
        if let Some(t) = &token
            && let Err(why) = baton_core::token::judge(t)
        {
            return Err(Error::bad_input(format!(
                "the API token in {from} is too weak: {why}"
            ))
            .hint("make one with `baton serve --new-token` (kept in .baton/server.token, readable by you only), or set BATON_SERVER_TOKEN=$(openssl rand -hex 32)"));
        }
        if token.is_none() && !addr.ip().is_loopback() {
            return Err(Error::bad_input(format!(
                "baton serve would listen on {addr}, beyond this machine, with no API token"
            ))
            .hint("run `baton serve --new-token` once, or set BATON_SERVER_TOKEN=$(openssl rand -hex 32); webhooks stay authenticated by their signature"));
        }
        let mut allowed_hosts = Vec::new();
        for h in &self.allowed_hosts {
            let name = h.trim().to_ascii_lowercase();
            let valid = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'));
            if !valid {
                return Err(bad(
                    "allowed_hosts",
                    format!("{h:?} is not a host name"),
                    "write the names clients reach the server by, e.g. allowed_hosts = [\"baton.example.com\"]",
                ));
            }
            allowed_hosts.push(name);
        }
        // The name it was told to listen by is one clients reach it by.
        if let Some((host, _)) = text.rsplit_once(':')
            && text.parse::<SocketAddr>().is_err()
        {
            let host = host.to_ascii_lowercase();
            if !allowed_hosts.contains(&host) {
                allowed_hosts.push(host);
            }
        }
        let duration =
            |key: &str, v: &Option<String>, default: &str| -> Result<std::time::Duration> {
                let text = v.as_deref().unwrap_or(default);
                baton_core::workflow::parse_duration(text)
                    .ok()
                    .filter(|ms| *ms > 0)
                    .map(std::time::Duration::from_millis)
                    .ok_or_else(|| {
                        bad(
                            key,
                            format!("{text:?} is not a duration"),
                            &format!("write e.g. {key} = \"{default}\""),
                        )
                    })
            };
        let header_timeout = duration("header_timeout", &self.header_timeout, "10s")?;
        let request_timeout = duration("request_timeout", &self.request_timeout, "30s")?;
        let replay_window = duration("replay_window", &self.replay_window, "7d")?;
        duration("buffer_ttl", &self.buffer_ttl, BUFFER_TTL)?;
        let max_connections = self.max_connections.unwrap_or(1024);
        if max_connections == 0 {
            return Err(bad(
                "max_connections",
                "0 would accept nobody".into(),
                "write e.g. max_connections = 1024",
            ));
        }
        Ok(ServerSettings {
            addr,
            secrets,
            max_body,
            branch_pattern,
            token,
            allowed_hosts,
            max_connections,
            header_timeout,
            request_timeout,
            replay_window_ms: replay_window.as_millis() as i64,
        })
    }
}

/// Where to listen, from `IP:PORT` or `HOST:PORT` (`localhost:7777`): a
/// host name is resolved, and of its addresses the first IPv4 one is
/// taken (the first of any kind when it has none), so `localhost` is
/// loopback as `127.0.0.1` is.
fn listen_addr(text: &str) -> std::result::Result<SocketAddr, String> {
    if let Ok(a) = text.parse::<SocketAddr>() {
        return Ok(a);
    }
    let Some((host, port)) = text.rsplit_once(':') else {
        return Err("no port (write HOST:PORT)".into());
    };
    let port: u16 = port
        .parse()
        .map_err(|_| format!("{port:?} is not a port number"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err("no host (write HOST:PORT)".into());
    }
    use std::net::ToSocketAddrs;
    let found: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("{host:?} does not resolve: {e}"))?
        .collect();
    found
        .iter()
        .find(|a| a.is_ipv4())
        .or(found.first())
        .copied()
        .ok_or_else(|| format!("{host:?} resolves to no address"))
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
        let s = ServerConfig::default().settings(None, none, None).unwrap();
        assert_eq!(s.addr.to_string(), "127.0.0.1:7777");
        assert_eq!(s.max_body, 5 << 20);
        assert_eq!(s.branch_pattern, "baton/{task-id}");
        assert!(s.secrets.is_empty());
    }

    #[test]
    fn beyond_loopback_a_token_is_required() {
        let e = ServerConfig::default()
            .settings(Some("0.0.0.0:7777"), none, None)
            .unwrap_err();
        assert!(e.message.contains("no API token"), "{}", e.message);
        let s = ServerConfig::default()
            .settings(
                Some("0.0.0.0:7777"),
                |k| (k == "BATON_SERVER_TOKEN").then(|| STRONG.to_string()),
                None,
            )
            .unwrap();
        assert_eq!(s.token.as_deref(), Some(STRONG));
    }

    const STRONG: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

    #[test]
    fn weak_tokens_are_refused_with_how_to_make_one() {
        for weak in [" ", "t0k", "s3cret-s3cret-s3cret"] {
            let e = ServerConfig::default()
                .settings(
                    Some("0.0.0.0:7777"),
                    |k| (k == "BATON_SERVER_TOKEN").then(|| weak.to_string()),
                    None,
                )
                .unwrap_err();
            assert!(e.message.contains("too weak"), "{}", e.message);
            assert!(e.hints[0].contains("--new-token"), "{:?}", e.hints);
        }
        // The saved token counts, after the environment and the file.
        let s = ServerConfig::default()
            .settings(None, none, Some(STRONG.into()))
            .unwrap();
        assert_eq!(s.token.as_deref(), Some(STRONG));
    }

    #[test]
    fn secrets_from_the_file_and_the_environment_all_count() {
        let cfg = ServerConfig {
            webhook_secrets: vec!["old".into(), "new".into()],
            ..Default::default()
        };
        let s = cfg
            .settings(
                None,
                |k| (k == "BATON_WEBHOOK_SECRET").then(|| "env".into()),
                None,
            )
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
        let e = cfg.settings(None, none, None).unwrap_err();
        assert!(e.message.contains("[server] max_body"), "{}", e.message);
        let e = ServerConfig::default()
            .settings(Some("localhost"), none, None)
            .unwrap_err();
        assert!(e.message.contains("not an address"), "{}", e.message);
        assert!(e.message.contains("no port"), "{}", e.message);
        // A host name that resolves is an address: localhost is loopback.
        let s = ServerConfig::default()
            .settings(Some("localhost:7777"), none, None)
            .unwrap();
        assert!(
            s.addr.ip().is_loopback() && s.addr.port() == 7777,
            "{}",
            s.addr
        );
        let e = ServerConfig::default()
            .settings(Some("no-such-host.invalid:7777"), none, None)
            .unwrap_err();
        assert!(e.message.contains("does not resolve"), "{}", e.message);
    }
}
