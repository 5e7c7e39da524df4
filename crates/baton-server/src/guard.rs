//! What keeps a browser from being turned against the person running
//! `baton serve` (docs/security.md): on every route, the `Host` must be a
//! name this server answers to (DNS rebinding), an `Origin` must be this
//! server's own (cross-site requests), and a request that may change state
//! must carry a JSON content type or an `Authorization` header, which a
//! page on another site cannot send without a CORS preflight this server
//! never grants. Every answer carries the headers that keep the dashboard
//! out of frames and its type from being sniffed.

use crate::views::ApiError;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// The names a request's `Host` may carry: loopback names and IP
/// addresses always (a page can only send an IP as `Host` when it was
/// itself loaded from that address, which is no rebinding), plus the
/// configured ones (a reverse proxy's public name).
#[derive(Clone)]
pub struct Hosts {
    configured: Arc<Vec<String>>,
    /// Names already warned about in the server's log (at most 64 kept).
    warned: Arc<Mutex<HashSet<String>>>,
    observer: Arc<dyn baton_engine::Observer>,
}

impl Hosts {
    pub fn new(configured: Vec<String>, observer: Arc<dyn baton_engine::Observer>) -> Hosts {
        Hosts {
            configured: Arc::new(configured),
            warned: Arc::default(),
            observer,
        }
    }

    /// Whether `authority` (a `Host` header: `name`, `name:port`,
    /// `[v6]:port`) is this server's.
    pub fn allows(&self, authority: &str) -> bool {
        let Some((host, port)) = split_authority(authority) else {
            return false;
        };
        if host == "localhost" || host.parse::<std::net::IpAddr>().is_ok() {
            return true;
        }
        self.configured.iter().any(|c| match split_authority(c) {
            Some((name, None)) => name == host,
            Some((name, p)) => name == host && p == port,
            None => false,
        })
    }

    fn warn_once(&self, host: &str) {
        let mut seen = self.warned.lock().unwrap_or_else(|p| p.into_inner());
        if seen.len() < 64 && seen.insert(host.to_string()) {
            self.observer.info(&format!(
                "baton serve: refused a request for Host {host:?}; if clients reach this server by that name, add it to allowed_hosts under [server] in .baton/config.toml"
            ));
        }
    }
}

/// `name[:port]` lower-cased, brackets of an IPv6 address removed.
fn split_authority(a: &str) -> Option<(String, Option<u16>)> {
    let a = a.trim().to_ascii_lowercase();
    if a.is_empty() || a.contains(['/', '@', ' ', '?', '#']) {
        return None;
    }
    if let Some(rest) = a.strip_prefix('[') {
        let (v6, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => Some(p.parse().ok()?),
            None if after.is_empty() => None,
            None => return None,
        };
        return Some((v6.to_string(), port));
    }
    match a.rsplit_once(':') {
        // A bare IPv6 address without brackets.
        Some((h, _)) if h.contains(':') => Some((a.clone(), None)),
        Some((h, p)) => Some((h.to_string(), Some(p.parse().ok()?))),
        None => Some((a, None)),
    }
}

/// Whether `origin` (`scheme://host[:port]`) is the same origin as a
/// request for `host` (its `Host` header).
fn same_origin(origin: &str, host: &str) -> bool {
    let Some((scheme, rest)) = origin.split_once("://") else {
        return false;
    };
    let default = match scheme.to_ascii_lowercase().as_str() {
        "http" => 80,
        "https" => 443,
        _ => return false,
    };
    let (Some((oh, op)), Some((hh, hp))) = (split_authority(rest), split_authority(host)) else {
        return false;
    };
    let op = op.unwrap_or(default);
    oh == hh && hp.is_none_or(|hp| hp == op)
}

fn refuse(status: StatusCode, code: &str, message: String, hint: &str) -> Response {
    ApiError::new(status, code, message, hint).into_response()
}

/// The checks, in order: `Host`, `Origin`, then what a state change needs.
pub async fn check(State(hosts): State<Hosts>, req: Request, next: Next) -> Response {
    let h = req.headers();
    let Some(host) = h.get(header::HOST).and_then(|v| v.to_str().ok()) else {
        return refuse(
            StatusCode::BAD_REQUEST,
            "MISSING_HOST",
            "the request has no Host header".into(),
            "send HTTP/1.1 with a Host header",
        );
    };
    if !hosts.allows(host) {
        hosts.warn_once(host);
        return refuse(
            StatusCode::FORBIDDEN,
            "FORBIDDEN_HOST",
            format!("this server does not answer to Host {host:?}"),
            "reach it by a loopback name or an IP address, or add the name to allowed_hosts under [server] in .baton/config.toml",
        );
    }
    if let Some(origin) = h.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        if !same_origin(origin, host) {
            return refuse(
                StatusCode::FORBIDDEN,
                "FORBIDDEN_ORIGIN",
                format!("a page from {origin:?} may not call this server"),
                "only baton's own dashboard, served from this address, may call it from a browser",
            );
        }
    }
    if !matches!(*req.method(), Method::GET | Method::HEAD) && !json_or_authorized(h) {
        return refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "JSON_REQUIRED",
            format!(
                "a {} request must be sent as Content-Type: application/json (or carry an Authorization header)",
                req.method()
            ),
            "send Content-Type: application/json (an empty body is fine where none is needed); GitHub webhooks: set the webhook's Content type to application/json",
        );
    }
    next.run(req).await
}

/// A JSON body or an `Authorization` header: neither can a page on another
/// site send without a preflight.
fn json_or_authorized(h: &HeaderMap) -> bool {
    if h.contains_key(header::AUTHORIZATION) {
        return true;
    }
    h.get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            let media = v
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            media == "application/json"
                || (media.starts_with("application/") && media.ends_with("+json"))
        })
        .unwrap_or(false)
}

/// The headers every answer carries, unless it set its own.
pub fn security_headers() -> [(header::HeaderName, HeaderValue); 4] {
    [
        (
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static("default-src 'none'; frame-ancestors 'none'"),
        ),
        (header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
        (
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ),
        (
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(configured: &[&str]) -> Hosts {
        Hosts::new(
            configured.iter().map(|s| s.to_string()).collect(),
            Arc::new(baton_engine::engine::Silent),
        )
    }

    #[test]
    fn loopback_names_and_addresses_pass_other_names_need_configuring() {
        let h = hosts(&["baton.example.com", "ci.example.com:8443"]);
        for ok in [
            "127.0.0.1:7777",
            "localhost:7777",
            "LOCALHOST",
            "[::1]:7777",
            "10.0.0.5:7777",
            "baton.example.com",
            "baton.example.com:443",
            "ci.example.com:8443",
        ] {
            assert!(h.allows(ok), "{ok}");
        }
        for no in [
            "attacker.example:7777",
            "localhost.attacker.example",
            "ci.example.com:8444",
            "ci.example.com",
            "",
            "a b",
            "user@localhost",
            "localhost:notaport",
        ] {
            assert!(!h.allows(no), "{no}");
        }
    }

    #[test]
    fn origins_must_be_the_servers_own() {
        assert!(same_origin("http://127.0.0.1:7777", "127.0.0.1:7777"));
        assert!(same_origin(
            "https://baton.example.com",
            "baton.example.com"
        ));
        assert!(same_origin("http://localhost", "localhost"));
        assert!(!same_origin("https://evil.example", "127.0.0.1:7777"));
        assert!(!same_origin("http://127.0.0.1:8080", "127.0.0.1:7777"));
        assert!(!same_origin("null", "127.0.0.1:7777"));
        assert!(!same_origin("file://", "127.0.0.1:7777"));
    }
}
