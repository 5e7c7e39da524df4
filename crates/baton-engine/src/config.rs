//! `.baton/config.toml`: project settings. Every key is documented in
//! docs/config.md; unknown keys are refused so a typo never goes unnoticed.

use crate::error::{Error, Result};
use baton_store::Synchronous;
use serde::Deserialize;
use std::collections::BTreeMap;

mod instances;
mod server;
mod sessions;
mod teams;

pub use instances::{CleanupPolicy, InstanceSettings, InstancesConfig};
pub use server::{ServerConfig, ServerSettings, SupervisorConfig, SupervisorSettings, TOKEN_FILE};
pub use sessions::{SessionsConfig, SubagentMode};
pub use teams::{TeamSettings, TeamsConfig};

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// `store = "postgres://…"`, or a `[store]` table.
    #[serde(default, deserialize_with = "store_setting")]
    pub store: StoreConfig,
    #[serde(default)]
    pub workers: WorkersConfig,
    #[serde(default)]
    pub lease: LeaseConfig,
    #[serde(default)]
    pub defaults: DefaultsConfig,
    #[serde(default)]
    pub agents: BTreeMap<String, AgentConfig>,
    #[serde(default)]
    pub instances: InstancesConfig,
    #[serde(default)]
    pub github: GithubConfig,
    #[serde(default)]
    pub server: ServerConfig,
    #[serde(default)]
    pub supervisor: SupervisorConfig,
    #[serde(default)]
    pub workspaces: WorkspacesConfig,
    #[serde(default)]
    pub teams: TeamsConfig,
    #[serde(default)]
    pub sessions: SessionsConfig,
    #[serde(default)]
    pub mcp: McpConfig,
    #[serde(default)]
    pub worktrees: WorktreesConfig,
}

/// `[worktrees]`: what a new worktree (an agent instance's, a queued
/// task's) gets of the checkout's heavy ignored folders, so it does not
/// build or install from nothing.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorktreesConfig {
    /// "symlink" (default: instant, and what the worktree writes there the
    /// original gets), "reflink" (a copy-on-write clone, where the
    /// filesystem makes one) or "none".
    pub share: Option<baton_sys::git::Share>,
    /// The folder names shared, at any depth (default: node_modules,
    /// target, .venv, venv).
    pub shared: Option<Vec<String>>,
}

impl WorktreesConfig {
    pub fn share(&self) -> baton_sys::git::Share {
        self.share.unwrap_or(baton_sys::git::Share::Symlink)
    }

    pub fn shared(&self) -> Vec<String> {
        self.shared.clone().unwrap_or_else(|| {
            ["node_modules", "target", ".venv", "venv"]
                .map(String::from)
                .to_vec()
        })
    }
}

/// `[mcp]`: how the agents baton starts reach its MCP tools.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpConfig {
    /// The Streamable HTTP endpoint of a `baton serve` on this project's
    /// store (`BATON_MCP_URL` wins), e.g. "http://127.0.0.1:7777/mcp":
    /// each agent is wired to it with a capability of its own instead of
    /// starting `baton mcp` over stdio. Default: none (stdio).
    pub url: Option<String>,
}

impl McpConfig {
    /// The endpoint, from `env_url` (`BATON_MCP_URL`) or the file; checked.
    pub fn url(&self, env_url: Option<String>) -> Result<Option<String>> {
        let Some(url) = env_url
            .filter(|u| !u.trim().is_empty())
            .or(self.url.clone())
        else {
            return Ok(None);
        };
        let url = url.trim().to_string();
        let ok = (url.starts_with("http://") || url.starts_with("https://"))
            && !url.contains(char::is_whitespace);
        if !ok {
            return Err(Error::bad_input(format!(
                "the MCP endpoint {url:?} is not an http(s) URL"
            ))
            .hint("write e.g. url = \"http://127.0.0.1:7777/mcp\" under [mcp] (or BATON_MCP_URL), the /mcp of a running `baton serve`"));
        }
        Ok(Some(url))
    }
}

/// `[workspaces]`: where the workspaces of agents with a `role` are made
/// (see `crate::role_workspaces`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkspacesConfig {
    /// The folder they are made in (default ".baton/workspaces"; a relative
    /// path is under the project folder).
    pub base: Option<String>,
    /// The service they are named after (default: the name of the GitHub
    /// repository, else of the project folder).
    pub service: Option<String>,
}

/// `[github]`: where pull requests are opened.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GithubConfig {
    /// The REST API's base URL (default `$GITHUB_API_URL`, else
    /// https://api.github.com; GitHub Enterprise: https://HOST/api/v3).
    pub api_url: Option<String>,
    /// `owner/name` (default: read from the remote's URL).
    pub repository: Option<String>,
    /// The git remote branches are pushed to (default: `[workers] remote`,
    /// else `origin`).
    pub remote: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    /// A PostgreSQL URL; absent: the SQLite file `.baton/baton.db`.
    pub url: Option<String>,
    /// SQLite only: "full" (default) or "normal".
    pub synchronous: Option<String>,
}

/// `store` is either a URL string or a table.
fn store_setting<'de, D: serde::Deserializer<'de>>(d: D) -> Result<StoreConfig, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Setting {
        Url(String),
        Table(StoreConfig),
    }
    match Setting::deserialize(d) {
        Ok(Setting::Url(url)) => Ok(StoreConfig {
            url: Some(url),
            synchronous: None,
        }),
        Ok(Setting::Table(t)) => Ok(t),
        Err(_) => Err(serde::de::Error::custom(
            "store must be a PostgreSQL URL (store = \"postgres://USER@HOST/DB\") or a [store] table with url and synchronous",
        )),
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkersConfig {
    /// The git remote queued tasks' branches are pushed to (default "origin"
    /// when the repository has it; none: this machine only).
    pub remote: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeaseConfig {
    /// How long a lease lives without a heartbeat (default "30s").
    pub ttl: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DefaultsConfig {
    /// Agent for prompt phases whose workflow names none.
    pub agent: Option<String>,
}

/// An agent: a built-in CLI adapter (`cli = "claude"`), or a generic one
/// (`command`: any CLI that takes a prompt).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// Generic: argv; `{{prompt_file}}` and `{{prompt}}` are substituted.
    #[serde(default)]
    pub command: Vec<String>,
    /// Built-in: one of `baton_agents::clis::NAMES`, run headless with its
    /// JSON stream, which baton reads (summary, failures).
    #[serde(default, deserialize_with = "built_in")]
    pub cli: Option<baton_agents::Cli>,
    /// Built-in only: the model to ask for.
    pub model: Option<String>,
    /// Built-in only: more arguments, after baton's.
    #[serde(default)]
    pub args: Vec<String>,
    /// Extra environment for the agent process (the user's own environment
    /// is passed through untouched).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Built-in only: "edit" (default), "read-only" or "full".
    pub permission: Option<Permission>,
    /// Built-in only: tell the CLI about baton's MCP server (default true,
    /// for the CLIs baton configures: every built-in CLI but droid).
    pub mcp: Option<bool>,
    /// Its role: "implementation" agents share the service's workspace,
    /// an agent of any other role ("quality", "testing", …) works in its
    /// own. None: it works where the task does.
    pub role: Option<String>,
}

fn built_in<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<baton_agents::Cli>, D::Error> {
    Ok(Some(baton_agents::BuiltIn::deserialize(d)?.0))
}

pub use baton_agents::Permission;

impl AgentConfig {
    /// The argv template of a new session (`{{prompt}}` still in it).
    pub fn argv(&self) -> Vec<String> {
        self.argv_for(baton_agents::Invocation::New { session: None })
    }

    /// The argv template for `how`: the built-in adapter's, or the generic
    /// command as written (whatever `how` is).
    pub fn argv_for(&self, how: baton_agents::Invocation<'_>) -> Vec<String> {
        match self.cli {
            Some(cli) => cli.argv(&self.options(), how),
            None => self.command.clone(),
        }
    }

    /// The argv template of the agent's terminal UI for `how`: the
    /// built-in adapter's (`None` where baton runs none), or the generic
    /// command as written.
    pub fn tui_argv_for(&self, how: baton_agents::Invocation<'_>) -> Option<Vec<String>> {
        match self.cli {
            Some(cli) => cli.tui_argv(&self.options(), how),
            None => Some(self.command.clone()),
        }
    }

    /// The files the built-in adapter's terminal UI is given (see
    /// [`baton_agents::AgentCli::tui_files`]).
    pub fn tui_files(&self) -> Vec<(&'static str, String)> {
        self.cli
            .map(|cli| cli.tui_files(&self.options()))
            .unwrap_or_default()
    }

    /// The environment the built-in adapter needs: its permission mode
    /// unless the agent's own `env` sets it, and its unattended-run
    /// defaults unless the agent's `env` or the user's environment does.
    pub fn cli_env(&self) -> Vec<(String, String)> {
        let Some(cli) = self.cli else {
            return Vec::new();
        };
        let defaults = cli
            .unattended_env()
            .iter()
            .filter(|(k, _)| std::env::var_os(k).is_none())
            .map(|(k, v)| (k.to_string(), v.to_string()));
        cli.env(&self.options())
            .into_iter()
            .chain(defaults)
            .filter(|(k, _)| !self.env.contains_key(k))
            .collect()
    }

    fn options(&self) -> baton_agents::Options<'_> {
        baton_agents::Options {
            model: self.model.as_deref(),
            args: &self.args,
            permission: self.permission.unwrap_or_default(),
        }
    }
}

impl Config {
    /// `(agent, model)` for every agent whose model is set.
    pub fn agent_models(&self) -> Vec<(String, String)> {
        self.agents
            .iter()
            .filter_map(|(a, c)| c.model.clone().map(|m| (a.clone(), m)))
            .collect()
    }

    pub fn parse(source: &str, file: &str) -> Result<Config> {
        let cfg: Config = toml::from_str(source).map_err(|e| {
            let (line, col) =
                baton_core::workflow::line_col(source, e.span().map_or(0, |s| s.start));
            Error::bad_input(format!("{file}:{line}:{col}: {}", e.message().trim()))
                .hint("see docs/config.md for the keys config.toml accepts")
        })?;
        cfg.synchronous()?;
        cfg.lease_ttl_ms()?;
        cfg.instances.settings(std::path::Path::new("."))?;
        // The address is checked when `serve` starts (`--addr` may replace
        // it), and so is the token (the environment's wins): a weak one
        // stops the server, not every command.
        let keys = ServerConfig {
            token: None,
            ..cfg.server.clone()
        };
        keys.settings(Some(server::DEFAULT_ADDR), |_| None, None)?;
        cfg.supervisor.settings()?;
        cfg.teams.settings()?;
        cfg.sessions.subagent_mode()?;
        cfg.sessions.rules()?;
        cfg.mcp.url(None)?;
        if let Some(r) = &cfg.github.repository
            && crate::github::Repo::parse(r).is_none()
        {
            return Err(Error::coded(
                baton_core::instance::ErrorCode::InvalidConfiguration,
                format!("{file}: [github] repository = {r:?} is not of the form owner/name"),
            )
            .hint(format!(
                "in {file}, write e.g. repository = \"acme/app\" under [github]"
            )));
        }
        if let Some(u) = &cfg.github.api_url
            && !(u.starts_with("https://") || u.starts_with("http://"))
        {
            return Err(Error::coded(
                baton_core::instance::ErrorCode::InvalidConfiguration,
                format!("{file}: [github] api_url = {u:?} is not an http(s) URL"),
            )
            .hint(format!(
                "in {file}, write api_url = \"https://api.github.com\" (GitHub Enterprise: \"https://HOST/api/v3\") under [github]"
            )));
        }
        for (name, a) in &cfg.agents {
            if a.cli.is_some() && !a.command.is_empty() {
                return Err(Error::bad_input(format!(
                    "{file}: [agents.{name}] has both cli and command"
                ))
                .hint(format!(
                    "in {file}, keep cli = \"…\" for a built-in adapter, or command = [...] for any other CLI, under [agents.{name}]"
                )));
            }
            if a.cli.is_none()
                && (a.model.is_some()
                    || !a.args.is_empty()
                    || a.permission.is_some()
                    || a.mcp.is_some())
            {
                return Err(Error::bad_input(format!(
                    "{file}: [agents.{name}] model, args, permission and mcp go with a built-in cli"
                ))
                .hint(format!(
                    "in {file}, put them in command = [...], or set cli = \"NAME\" ({}) under [agents.{name}]",
                    baton_agents::clis::listed()
                )));
            }
            if let Some(role) = &a.role
                && (role.is_empty()
                    || !role
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'))
            {
                return Err(Error::bad_input(format!(
                    "{file}: [agents.{name}] role = {role:?} is not a role name"
                ))
                .hint(format!(
                    "in {file}, write role = \"implementation\" (shares the service's workspace) or another word of lower-case letters, digits and '-' such as \"quality\" or \"testing\" (a workspace of its own) under [agents.{name}]"
                )));
            }
            if a.cli.is_none() && a.command.is_empty() {
                return Err(Error::bad_input(format!(
                    "{file}: [agents.{name}] command is empty"
                ))
                .hint(format!(
                    "in {file}, write e.g. command = [\"{name}\", \"-p\", \"{{{{prompt}}}}\"] under [agents.{name}], or remove that table"
                )));
            }
        }
        Ok(cfg)
    }

    pub fn synchronous(&self) -> Result<Synchronous> {
        match self.store.synchronous.as_deref() {
            None | Some("full") | Some("FULL") => Ok(Synchronous::Full),
            Some("normal") | Some("NORMAL") => Ok(Synchronous::Normal),
            Some(other) => Err(Error::bad_input(format!(
                ".baton/config.toml: [store] synchronous must be \"full\" or \"normal\", not {other:?}"
            ))
            .hint(
                "in .baton/config.toml, write synchronous = \"full\" (the default: every transition on disk) or \"normal\" (faster) under [store]",
            )),
        }
    }

    pub fn lease_ttl_ms(&self) -> Result<i64> {
        match &self.lease.ttl {
            None => Ok(30_000),
            Some(t) => {
                let hint = "in .baton/config.toml, write e.g. ttl = \"30s\" (the default) under [lease]; it must be at least 1s";
                let ms = baton_core::workflow::parse_duration(t).map_err(|m| {
                    Error::bad_input(format!(".baton/config.toml: [lease] ttl: {m}")).hint(hint)
                })?;
                if ms < 1000 {
                    return Err(Error::bad_input(format!(
                        ".baton/config.toml: [lease] ttl must be at least 1s, not {t:?}"
                    ))
                    .hint(hint));
                }
                Ok(ms as i64)
            }
        }
    }
}

/// The config.toml `baton init` writes.
pub const INIT_CONFIG: &str = r#"# baton project settings. Every key is documented in baton's docs/config.md.

[store]
# "full": every transition is on disk before baton goes on (default).
# "normal": faster; a power cut may lose the last transitions, never corrupt them.
synchronous = "full"

[lease]
# A task whose runner stops renewing its lease for this long (on another
# machine) counts as CRASHED. On this machine a dead runner is seen at once.
ttl = "30s"

[defaults]
# Agent for prompt phases whose workflow names none.
agent = "claude"

# Agents. Built in (cli = ...): claude, codex, gemini, qwen, opencode,
# copilot, droid, run headless with your own environment; baton reads their
# stream, journals their native session and continues it after a crash.
# Add model = "...", args = [...], permission = "edit" | "read-only" |
# "full", and [agents.NAME.env].
[agents.claude]
cli = "claude"

[agents.codex]
cli = "codex"

[agents.gemini]
cli = "gemini"

# Any other CLI that takes a prompt: {{prompt_file}} is the path of a file
# holding the rendered prompt, {{prompt}} the prompt itself.
# [agents.aider]
# command = ["aider", "--yes-always", "--message-file", "{{prompt_file}}"]
"#;

impl Config {
    /// The git remote branches are pushed to: `[github] remote`, else
    /// `[workers] remote`, else `origin`.
    pub fn push_remote(&self) -> String {
        self.github
            .remote
            .clone()
            .or(self.workers.remote.clone())
            .unwrap_or_else(|| "origin".into())
    }

    /// The project's GitHub repository: `[github] repository`, else what
    /// the push remote's URL names; `None` when neither says.
    pub fn github_repository(&self, git: &baton_sys::git::Git) -> Option<crate::github::Repo> {
        if let Some(r) = &self.github.repository {
            return crate::github::Repo::parse(r);
        }
        let url = git
            .run(&["remote", "get-url", &self.push_remote()], &[])
            .ok()?;
        crate::github::Repo::of_remote_url(&url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(toml: &str) -> AgentConfig {
        let cfg = Config::parse(&format!("[agents.a]\n{toml}"), "config.toml").unwrap();
        cfg.agents["a"].clone()
    }

    #[test]
    fn a_built_in_cli_gets_its_permission_and_unattended_environment() {
        let env = agent("cli = \"opencode\"\npermission = \"read-only\"\n").cli_env();
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(
            get("OPENCODE_PERMISSION"),
            Some(r#"{"edit":"deny","bash":"deny"}"#)
        );
        assert_eq!(get("OPENCODE_DISABLE_AUTOUPDATE"), Some("1"));
        // The agent's own env wins over both.
        let env = agent(
            "cli = \"opencode\"\n[agents.a.env]\nOPENCODE_PERMISSION = \"{}\"\nOPENCODE_DISABLE_AUTOUPDATE = \"0\"\n",
        )
        .cli_env();
        assert!(env.is_empty(), "{env:?}");
        // A generic command gets nothing.
        assert!(agent("command = [\"aider\"]\n").cli_env().is_empty());
    }
}
