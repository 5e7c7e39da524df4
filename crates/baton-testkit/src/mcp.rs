//! The official MCP SDK clients (`mcp-clients/client.py` with PyPI `mcp`,
//! `mcp-clients/client.mjs` with npm `@modelcontextprotocol/sdk`) run
//! against `baton mcp`, as an agent baton started would run it. Their
//! packages are installed by `./scripts/test` (`MCP_PY`, `MCP_TS_MODULES`);
//! a test that needs them fails loudly when they are missing.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Which client, and for Python which handshake.
#[derive(Debug, Clone, Copy)]
pub enum McpClient {
    /// Python SDK, `mode="auto"`: `server/discover` (2026-07-28) first.
    PythonAuto,
    /// Python SDK, `mode="legacy"`: `initialize`.
    PythonLegacy,
    /// TypeScript SDK: `initialize` (2025-11-25), and structured results
    /// checked against each tool's output schema.
    TypeScript,
}

fn clients_dir() -> PathBuf {
    crate::testkit_dir().join("mcp-clients")
}

/// Runs `client` against `baton mcp` started in `cwd` with `env` (and
/// `BATON_DATABASE_URL` as given), making `calls` in order. Returns the
/// client's JSON report; panics if the client itself fails.
pub fn run(
    client: McpClient,
    baton: &Path,
    cwd: &Path,
    env: &[(&str, &str)],
    calls: &serde_json::Value,
) -> serde_json::Value {
    // The SDKs pass only a few variables to a stdio server; `env` sets ours.
    let mut server: Vec<String> = vec!["env".into()];
    for (k, v) in env {
        server.push(format!("{k}={v}"));
    }
    server.push(baton.display().to_string());
    server.push("mcp".into());
    let mut cmd = match client {
        McpClient::PythonAuto | McpClient::PythonLegacy => {
            let py = std::env::var("MCP_PY").expect(
                "MCP_PY is not set: run the tests with ./scripts/test, which installs the Python MCP SDK",
            );
            let mut c = Command::new(py);
            c.arg(clients_dir().join("client.py")).arg(match client {
                McpClient::PythonAuto => "auto",
                _ => "legacy",
            });
            c
        }
        McpClient::TypeScript => {
            let modules = std::env::var("MCP_TS_MODULES").expect(
                "MCP_TS_MODULES is not set: run the tests with ./scripts/test, which installs the TypeScript MCP SDK",
            );
            let mut c = Command::new("node");
            c.arg(clients_dir().join("client.mjs"))
                .env("MCP_TS_MODULES", modules);
            c
        }
    };
    let out = cmd
        .arg(calls.to_string())
        .arg("--")
        .args(&server)
        .current_dir(cwd)
        .output()
        .expect("the MCP client could not be started");
    let text = String::from_utf8_lossy(&out.stdout);
    let v: serde_json::Value = serde_json::from_str(text.trim()).unwrap_or_else(|e| {
        panic!(
            "the {client:?} client printed no report ({e}): {text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(
        out.status.success() && v.get("failure").is_none(),
        "the {client:?} client failed: {v}"
    );
    v
}

/// Runs the official conformance suite (`mcp-conformance/run.sh`, both
/// pinned versions) with `args` (`BATON_BIN PROJECT` for `baton mcp` over
/// stdio, or `--url URL`) and `env`, and checks that every check that
/// applies passed. Needs `MCP_CONFORMANCE_MODULES` (`./scripts/test` sets it).
pub fn run_conformance(args: &[&std::ffi::OsStr], env: &[(&str, &str)]) {
    let modules = std::env::var("MCP_CONFORMANCE_MODULES").expect(
        "MCP_CONFORMANCE_MODULES is not set: run the tests with ./scripts/test, which installs the conformance suite",
    );
    let script = crate::testkit_dir().join("mcp-conformance/run.sh");
    let out_dir = tempfile::tempdir().unwrap();
    let out = Command::new("bash")
        .arg(script)
        .args(args)
        .arg(out_dir.path())
        .env("MCP_CONFORMANCE_MODULES", modules)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_conformance(&text);
}

/// Checks the output of `mcp-conformance/run.sh`: for both pinned suite
/// versions, every scenario that applies to a tools-only server has a
/// result line with checks passed and none failed.
fn assert_conformance(text: &str) {
    for suite in ["0.1.16", "0.2.0-alpha.12"] {
        for scenario in ["server-initialize", "ping", "tools-list"] {
            let line = text
                .lines()
                .find(|l| l.starts_with(&format!("{suite} {scenario}: ")))
                .unwrap_or_else(|| panic!("no result for {suite} {scenario}:\n{text}"));
            assert!(line.contains(" 0 failed"), "{line}");
            assert!(!line.contains(": 0 passed"), "{line}");
        }
    }
}
