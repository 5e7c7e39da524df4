//! Why an agent run failed, as far as baton can tell, and whether a run
//! that ended succeeded at all (a CLI may exit 0 after a refused write or
//! an API error: its stream says). Pure: exit code, stderr tail and stream
//! events in, a verdict out. The texts matched are those the real CLIs
//! print (docs/dev/agent-clis.md); each CLI's own ones are in its adapter
//! ([`crate::AgentCli::stale_session`]).

use crate::{AgentEvent, Cli, FailureKind};
use baton_core::agent_stream::shorten;

/// Classifies a failed run from its exit code, the tail of its stderr and
/// the events of its stream.
pub fn classify_failure(
    cli: Cli,
    exit_code: Option<i32>,
    stderr: &str,
    events: &[AgentEvent],
) -> FailureKind {
    if exit_code == Some(127) {
        return FailureKind::NotInstalled;
    }
    let mut text = stderr.to_string();
    for e in events {
        if let AgentEvent::Error { message } | AgentEvent::Warning { message } = e {
            text.push('\n');
            text.push_str(message);
        }
    }
    let has = |needles: &[&str]| needles.iter().any(|n| text.contains(n));
    if cli.stale_session(exit_code, &text) {
        FailureKind::StaleSession
    } else if has(&[
        " 401",
        "401 ",
        "authentication_failed",
        "Unauthorized",
        "UNAUTHENTICATED",
        "invalid x-api-key",
        "invalid_api_key",
        "Authentication failed",
    ]) || cli.authentication_exit(exit_code)
    {
        FailureKind::Authentication
    } else if has(&[
        "429",
        "rate_limit",
        "Too Many Requests",
        "RESOURCE_EXHAUSTED",
    ]) {
        FailureKind::RateLimit
    } else {
        FailureKind::Other
    }
}

/// A built-in CLI's finished run read from its stream: its last message
/// and a readable transcript, or why it failed (and what kind of failure)
/// even though it may have exited 0.
pub fn judge(
    cli: Cli,
    exit_code: Option<i32>,
    events: &[AgentEvent],
    stderr_tail: &str,
) -> Result<(String, String), (String, FailureKind)> {
    let mut transcript = Vec::new();
    let mut errors = Vec::new();
    let mut last: Option<(bool, String)> = None;
    for e in events {
        match e {
            AgentEvent::AssistantText { text } => transcript.push(text.clone()),
            AgentEvent::ToolCall { name, summary, .. } => {
                transcript.push(format!("→ {name} {summary}"))
            }
            AgentEvent::ToolResult {
                ok: false, summary, ..
            } => transcript.push(format!("  ✗ {summary}")),
            AgentEvent::Error { message } => errors.push(message.clone()),
            AgentEvent::Final { ok, text } => last = Some((*ok, text.clone())),
            _ => {}
        }
    }
    match last {
        Some((true, final_text)) if errors.is_empty() && exit_code == Some(0) => {
            Ok((final_text, transcript.join("\n")))
        }
        _ => {
            let kind = classify_failure(cli, exit_code, stderr_tail, events);
            let why = errors
                .first()
                .cloned()
                .or_else(|| {
                    stderr_tail
                        .lines()
                        .rev()
                        .find(|l| !l.trim().is_empty())
                        .map(|l| shorten(l, 300))
                })
                .unwrap_or_else(|| "its stream did not end with a successful result".into());
            let exited = match exit_code {
                Some(0) => "exited 0 but failed".to_string(),
                Some(c) => format!("exited {c}"),
                None => "was killed".to_string(),
            };
            let what = match kind {
                FailureKind::NotInstalled => format!(
                    "is not installed (install it with `npm install -g {}`)",
                    cli.package().name
                ),
                FailureKind::Authentication => "could not authenticate".into(),
                FailureKind::RateLimit => "was rate limited".into(),
                FailureKind::StaleSession => "has no such session".into(),
                FailureKind::Other => "failed".into(),
            };
            Err((format!("{} {exited}: {what}: {why}", cli.name()), kind))
        }
    }
}
