//! The real agent CLIs for tests, run offline against the
//! [`ModelServer`](crate::model_server::ModelServer).
//!
//! `./scripts/test` installs pinned versions with npm into the build output
//! and sets `BATON_AGENT_CLIS` to their `node_modules/.bin`. A test that
//! needs a CLI that is not there fails, naming what to do: it never skips.
//!
//! [`Run::command`] builds the headless invocation that was verified for
//! each CLI (docs/dev/agent-clis.md), with its own config home under the
//! run's folder so nothing of the user's is read or touched, stdin closed,
//! and every side lookup turned off.

use crate::model_server::ModelServer;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The pinned versions `./scripts/test` installs.
/// droid's launcher `@factory/cli` 0.225.1 pins a platform package version
/// the registry does not have (npm then skips it silently and `droid` has
/// no binary): its platform package is named, with the version that exists.
pub const PINNED: [(&str, &str); 8] = [
    ("@anthropic-ai/claude-code", "2.1.330"),
    ("@openai/codex", "0.169.0"),
    ("@google/gemini-cli", "0.61.0"),
    ("@qwen-code/qwen-code", "0.15.10"),
    ("opencode-ai", "1.18.33"),
    ("@github/copilot", "1.0.102"),
    ("@factory/cli", "0.225.1"),
    ("@factory/cli-linux-x64", "0.225.2"),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    Claude,
    Codex,
    Gemini,
    Qwen,
    Opencode,
    Copilot,
    Droid,
}

impl Agent {
    /// Every CLI, in the order the tests list them.
    pub const ALL: [Agent; 7] = [
        Agent::Claude,
        Agent::Codex,
        Agent::Gemini,
        Agent::Qwen,
        Agent::Opencode,
        Agent::Copilot,
        Agent::Droid,
    ];

    pub fn program(self) -> &'static str {
        match self {
            Agent::Claude => "claude",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
            Agent::Qwen => "qwen",
            Agent::Opencode => "opencode",
            Agent::Copilot => "copilot",
            Agent::Droid => "droid",
        }
    }

    /// The pinned package whose version `PROGRAM --version` prints (for
    /// droid its platform package, which holds the binary).
    pub fn package(self) -> &'static str {
        match self {
            Agent::Claude => "@anthropic-ai/claude-code",
            Agent::Codex => "@openai/codex",
            Agent::Gemini => "@google/gemini-cli",
            Agent::Qwen => "@qwen-code/qwen-code",
            Agent::Opencode => "opencode-ai",
            Agent::Copilot => "@github/copilot",
            Agent::Droid => "@factory/cli-linux-x64",
        }
    }

    /// The version of [`Agent::package`] in [`PINNED`].
    pub fn pinned_version(self) -> &'static str {
        PINNED
            .iter()
            .find(|(p, _)| *p == self.package())
            .map(|(_, v)| *v)
            .expect("every agent's package is pinned")
    }

    /// Whether baton (or a test) chooses the session id up front.
    pub fn takes_session_id(self) -> bool {
        matches!(
            self,
            Agent::Claude | Agent::Gemini | Agent::Qwen | Agent::Copilot
        )
    }

    /// The CLI's executable; panics, saying how to install it, when missing.
    pub fn bin(self) -> PathBuf {
        let dir = std::env::var_os("BATON_AGENT_CLIS").map(PathBuf::from);
        let found = dir
            .as_ref()
            .map(|d| d.join(self.program()))
            .filter(|p| p.is_file());
        found.unwrap_or_else(|| {
            panic!(
                "the real `{}` CLI is not installed for the tests (BATON_AGENT_CLIS={:?}); run ./scripts/test, which installs the pinned CLIs with npm into the build output",
                self.program(),
                dir
            )
        })
    }

    /// The name of its write-a-file tool and the arguments for `path`,
    /// `content`, as the CLI offers it to the model.
    pub fn write_tool(self, path: &Path, content: &str) -> (&'static str, serde_json::Value) {
        let p = path.display().to_string();
        match self {
            Agent::Claude => (
                "Write",
                serde_json::json!({ "file_path": p, "content": content }),
            ),
            // A custom provider's unknown model gets Codex's shell tool.
            Agent::Codex => (
                "exec_command",
                serde_json::json!({ "cmd": format!("printf '%s' '{content}' > '{p}'") }),
            ),
            Agent::Gemini | Agent::Qwen => (
                "write_file",
                serde_json::json!({ "file_path": p, "content": content }),
            ),
            Agent::Opencode => (
                "write",
                serde_json::json!({ "filePath": p, "content": content }),
            ),
            // Copilot's `create` refuses an existing path: the scripted
            // server turns it into a `bash` write when the file is there.
            Agent::Copilot => (
                "create",
                serde_json::json!({ "path": p, "file_text": content }),
            ),
            Agent::Droid => (
                "Create",
                serde_json::json!({ "file_path": p, "content": content }),
            ),
        }
    }
}

impl Agent {
    /// A `[agents.NAME]` table for `.baton/config.toml`: baton's built-in
    /// adapter for this CLI, pointed at `server`, with its config home in
    /// `home` (the files it needs are written there) and the CLIs' folder
    /// on its PATH.
    pub fn baton_config(self, name: &str, server: &ModelServer, home: &Path) -> String {
        let Setup { env, model, args } = self.setup(server, home);
        let cli = self.program();
        // TOML literal strings: none of these values holds a single quote.
        let lit = |v: &str| format!("'{v}'");
        let mut t = format!("\n[agents.{name}]\ncli = \"{cli}\"\n");
        if let Some(m) = model {
            t.push_str(&format!("model = {}\n", lit(m)));
        }
        if !args.is_empty() {
            let a: Vec<String> = args.iter().map(|a| lit(a)).collect();
            t.push_str(&format!("args = [{}]\n", a.join(", ")));
        }
        t.push_str(&format!("[agents.{name}.env]\n"));
        for (k, v) in env {
            t.push_str(&format!("{k} = {}\n", lit(&v)));
        }
        t
    }

    /// What running this CLI against `server` with its config home in
    /// `home` takes: the files it reads (written there now), its
    /// environment, model and extra arguments. One source for baton's
    /// `[agents.NAME]` tables and for [`Run::command`].
    pub fn setup(self, server: &ModelServer, home: &Path) -> Setup {
        let url = server.base_url();
        let bin = self.bin();
        let path = format!(
            "{}:{}",
            bin.parent().expect("bin dir").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let h = home.display();
        let mut env: Vec<(String, String)> = vec![
            ("PATH".into(), path),
            ("HOME".into(), h.to_string()),
            ("XDG_CONFIG_HOME".into(), format!("{h}/.config")),
            ("XDG_DATA_HOME".into(), format!("{h}/.local/share")),
            ("XDG_STATE_HOME".into(), format!("{h}/.local/state")),
        ];
        let (model, args): (Option<&'static str>, Vec<String>) = match self {
            Agent::Claude => {
                env.extend([
                    ("ANTHROPIC_BASE_URL".into(), url.clone()),
                    ("ANTHROPIC_API_KEY".into(), "scripted".into()),
                    ("CLAUDE_CONFIG_DIR".into(), format!("{h}/.claude")),
                    (
                        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(),
                        "1".into(),
                    ),
                    ("DISABLE_AUTOUPDATER".into(), "1".into()),
                ]);
                (Some("claude-sonnet-4-5"), vec![])
            }
            Agent::Codex => {
                let codex_home = home.join(".codex");
                std::fs::create_dir_all(&codex_home).expect("codex home");
                std::fs::write(
                    codex_home.join("config.toml"),
                    format!(
                        "model = \"gpt-5-codex\"\nmodel_provider = \"scripted\"\n[model_providers.scripted]\nname = \"scripted\"\nbase_url = \"{url}/v1\"\nwire_api = \"responses\"\nenv_key = \"SCRIPTED_API_KEY\"\n"
                    ),
                )
                .expect("codex config");
                env.extend([
                    ("CODEX_HOME".into(), codex_home.display().to_string()),
                    ("SCRIPTED_API_KEY".into(), "scripted".into()),
                ]);
                let args = ["-c", "analytics.enabled=false", "--disable", "plugins"];
                (None, args.iter().map(|a| a.to_string()).collect())
            }
            Agent::Gemini => {
                std::fs::create_dir_all(home.join(".gemini")).expect("gemini home");
                std::fs::write(
                    home.join(".gemini/settings.json"),
                    r#"{"security":{"auth":{"selectedType":"gemini-api-key"}},"privacy":{"usageStatisticsEnabled":false}}"#,
                )
                .expect("gemini settings");
                env.extend([
                    ("GOOGLE_GEMINI_BASE_URL".into(), url.clone()),
                    ("GEMINI_API_KEY".into(), "scripted".into()),
                ]);
                (Some("gemini-2.5-flash"), vec![])
            }
            Agent::Qwen => {
                std::fs::create_dir_all(home.join(".qwen")).expect("qwen home");
                std::fs::write(
                    home.join(".qwen/settings.json"),
                    r#"{"privacy":{"usageStatisticsEnabled":false},"memory":{"enableManagedAutoMemory":false}}"#,
                )
                .expect("qwen settings");
                let args = [
                    "--auth-type".to_string(),
                    "openai".into(),
                    "--openai-base-url".into(),
                    format!("{url}/v1"),
                    "--openai-api-key".into(),
                    "scripted".into(),
                ];
                (Some("scripted-model"), args.to_vec())
            }
            Agent::Opencode => {
                let config = serde_json::json!({
                    "$schema": "https://opencode.ai/config.json",
                    "provider": { "scripted": {
                        "npm": "@ai-sdk/openai-compatible", "name": "Scripted",
                        "options": { "baseURL": format!("{url}/v1"), "apiKey": "scripted" },
                        "models": { "scripted-model": { "name": "scripted-model" } } } },
                    "model": "scripted/scripted-model",
                    "permission": { "edit": "allow", "bash": "allow" },
                    "autoupdate": false, "share": "disabled"
                });
                let cache = std::env::var("BATON_AGENT_CLIS_CACHE")
                    .unwrap_or_else(|_| format!("{h}/.cache"));
                env.extend([
                    ("OPENCODE_CONFIG_CONTENT".into(), config.to_string()),
                    ("XDG_CACHE_HOME".into(), cache),
                    ("OPENCODE_DISABLE_AUTOUPDATE".into(), "1".into()),
                    ("OPENCODE_DISABLE_MODELS_FETCH".into(), "1".into()),
                    ("OPENCODE_DISABLE_DEFAULT_PLUGINS".into(), "1".into()),
                    ("OPENCODE_DISABLE_LSP_DOWNLOAD".into(), "1".into()),
                    ("OPENCODE_DISABLE_SHARE".into(), "1".into()),
                ]);
                let args = ["--title", "baton test"];
                (
                    Some("scripted/scripted-model"),
                    args.iter().map(|a| a.to_string()).collect(),
                )
            }
            Agent::Copilot => {
                // Its first start unpacks about 235 MB into
                // $XDG_CACHE_HOME/copilot: one cache for every run.
                let cache = std::env::var("BATON_AGENT_CLIS_CACHE")
                    .unwrap_or_else(|_| format!("{h}/.cache"));
                env.extend([
                    ("XDG_CACHE_HOME".into(), cache),
                    ("COPILOT_HOME".into(), format!("{h}/.copilot")),
                    ("COPILOT_PROVIDER_BASE_URL".into(), format!("{url}/v1")),
                    ("COPILOT_PROVIDER_TYPE".into(), "openai".into()),
                    // Copilot masks the key's value wherever it shows in its
                    // output ("scripted-model" became "******-model").
                    ("COPILOT_PROVIDER_API_KEY".into(), "baton-test-key".into()),
                    ("COPILOT_MODEL".into(), "scripted-model".into()),
                    // No GitHub login, telemetry, web tools or update checks.
                    ("COPILOT_OFFLINE".into(), "true".into()),
                    ("COPILOT_AUTO_UPDATE".into(), "false".into()),
                ]);
                (Some("scripted-model"), vec![])
            }
            Agent::Droid => {
                // A BYOK model; airgap mode keeps droid off Factory's
                // service (feature flags, telemetry, session sync).
                std::fs::create_dir_all(home.join(".factory")).expect("droid home");
                let settings = serde_json::json!({ "customModels": [{
                    "model": "scripted-model", "displayName": "Scripted",
                    "baseUrl": format!("{url}/v1"), "apiKey": "scripted",
                    "provider": "generic-chat-completion-api", "maxOutputTokens": 8192 }] });
                std::fs::write(home.join(".factory/settings.json"), settings.to_string())
                    .expect("droid settings");
                env.push(("FACTORY_AIRGAP_ENABLED".into(), "true".into()));
                (Some("custom:Scripted-0"), vec![])
            }
        };
        Setup { env, model, args }
    }
}

/// See [`Agent::setup`].
pub struct Setup {
    pub env: Vec<(String, String)>,
    pub model: Option<&'static str>,
    pub args: Vec<String>,
}

/// One headless run of a CLI in `workdir`, against `server`.
pub struct Run<'a> {
    pub agent: Agent,
    pub server: &'a ModelServer,
    pub workdir: &'a Path,
    /// Where the CLI's config home lives (made fresh by the caller).
    pub home: &'a Path,
}

impl Run<'_> {
    /// Where the CLI writes its token usage when the run ends, for those
    /// whose stream has none (Copilot: `--usage-output-file`).
    pub fn usage_file(&self) -> Option<PathBuf> {
        (self.agent == Agent::Copilot).then(|| self.home.join("copilot-usage.json"))
    }

    /// The command: `prompt` to a new session, or (with `resume`) to the
    /// native session of that id (droid forks it: the conversation goes on
    /// under a new id). `session` chooses the id up front where the CLI
    /// allows it.
    pub fn command(&self, prompt: &str, session: Option<&str>, resume: Option<&str>) -> Command {
        let Setup { env, model, args } = self.agent.setup(self.server, self.home);
        let mut c = Command::new(self.agent.bin());
        // OpenCode takes its project folder from $PWD, which a changed
        // working directory does not update.
        c.current_dir(self.workdir)
            .env("PWD", self.workdir)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .envs(env);
        let model = model.map(|m| m.to_string());
        match self.agent {
            Agent::Claude | Agent::Gemini => {
                c.args(["-p", prompt]);
                c.args(match self.agent {
                    Agent::Claude => vec![
                        "--output-format",
                        "stream-json",
                        "--verbose",
                        "--permission-mode",
                        "acceptEdits",
                        "--model",
                    ],
                    _ => vec!["-o", "stream-json", "--yolo", "--skip-trust", "-m"],
                });
                c.args(model).args(&args);
                match (resume, session) {
                    (Some(r), _) => c.args(["--resume", r]),
                    (None, Some(s)) => c.args(["--session-id", s]),
                    _ => &mut c,
                };
            }
            Agent::Qwen => {
                c.args(["-o", "stream-json", "--yolo", "-m"])
                    .args(model)
                    .args(&args);
                match (resume, session) {
                    (Some(r), _) => c.args(["--resume", r]),
                    (None, Some(s)) => c.args(["--session-id", s]),
                    _ => &mut c,
                };
                c.arg(prompt);
            }
            Agent::Codex => {
                c.args([
                    "exec",
                    "--json",
                    "-s",
                    "workspace-write",
                    "--skip-git-repo-check",
                ])
                .args(&args);
                if let Some(r) = resume {
                    c.args(["resume", r]);
                }
                c.arg(prompt);
            }
            Agent::Opencode => {
                c.args(["run", "--format", "json", "-m"])
                    .args(model)
                    .args(&args);
                if let Some(r) = resume {
                    c.args(["--session", r]);
                }
                c.arg(prompt);
            }
            Agent::Copilot => {
                c.args(["-p", prompt, "--output-format", "json", "--allow-all-tools"])
                    .arg("--model")
                    .args(model)
                    .args(&args)
                    .arg("--usage-output-file")
                    .arg(self.usage_file().expect("copilot's usage file"));
                match (resume, session) {
                    (Some(r), _) => c.arg(format!("--resume={r}")),
                    (None, Some(s)) => c.args(["--session-id", s]),
                    _ => &mut c,
                };
            }
            // Offline (airgap), `-s ID` cannot load a session: `--fork ID`
            // continues it under a new id.
            Agent::Droid => {
                c.args(["exec", "-o", "stream-json", "--auto", "low", "-m"])
                    .args(model)
                    .args(&args);
                if let Some(r) = resume {
                    c.args(["--fork", r]);
                }
                c.arg(prompt);
            }
        }
        c
    }
}

#[cfg(test)]
mod tests {
    /// Every built-in adapter's package is installed at the version it
    /// names, and has a test setup here.
    #[test]
    fn every_adapter_is_pinned_and_set_up() {
        for cli in baton_agents::all() {
            let pkg = cli.package();
            assert!(
                super::PINNED.contains(&(pkg.name, pkg.version)),
                "{} {}@{} is not in PINNED",
                cli.name(),
                pkg.name,
                pkg.version
            );
            assert!(
                super::Agent::ALL.iter().any(|a| a.program() == cli.name()),
                "no test setup for {}",
                cli.name()
            );
        }
    }

    #[test]
    fn the_test_script_installs_exactly_these_pins() {
        // Built in, so it is the script of this very source tree.
        let script = include_str!("../../../scripts/test");
        let line = script
            .lines()
            .find(|l| l.starts_with("pins="))
            .expect("a pins= line in scripts/test");
        let mut pins: Vec<String> = line
            .trim_start_matches("pins=")
            .trim_matches('"')
            .split_whitespace()
            .map(str::to_string)
            .collect();
        pins.sort();
        let mut ours: Vec<String> = super::PINNED
            .iter()
            .map(|(p, v)| format!("{p}@{v}"))
            .collect();
        ours.sort();
        assert_eq!(pins, ours);
    }
}
