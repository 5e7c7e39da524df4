//! baton's agent CLI adapters: one module per CLI in [`clis`], each an
//! implementation of [`AgentCli`], plus the generic `command = [...]`
//! adapter in [`generic`].
//!
//! An adapter says how its CLI is invoked headless (a new session, a
//! session id chosen up front or read from the stream, its own session
//! continued), what baton's permission modes map to, the environment it
//! needs, how its JSON Lines stream reads into the common event model
//! ([`AgentEvent`]), how its failures are told apart, which memory file it
//! reads, and where and how its own transcripts are kept (for `baton
//! import`). The parsers are pure; the IO lives in [`tail`] (reading a
//! growing stream), [`locate`] (finding a transcript on disk),
//! [`memory`] (the brief section in a memory file), [`folder_mcp`] (an MCP
//! servers file in the working folder), [`run_files`] (both, undone when a
//! run ends), [`subagents`] (the files of subagents that run in sessions
//! of their own) and [`version`].
//!
//! The engine and the CLI speak only [`AgentCli`]; adding a CLI is one new
//! file in `src/clis/` and one line in [`clis::ALL`] (see ARCHITECTURE.md).

pub mod clis;
pub mod failure;
pub mod folder_mcp;
pub mod generic;
mod json;
pub mod locate;
pub mod memory;
pub mod native;
pub mod run_files;
pub mod stream;
pub mod subagents;
pub mod tail;
pub mod version;

pub use baton_core::agent_stream::{AgentEvent, FailureKind};
pub use native::NativeTranscript;
pub use stream::StreamParser;

use serde::Deserialize;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// A built-in CLI adapter. Every one is a unit struct in [`clis`], so this
/// is a plain `&'static` reference, cheap to copy and compare by
/// [`AgentCli::name`].
pub type Cli = &'static dyn AgentCli;

/// Reads an environment variable (`HOME`, `CLAUDE_CONFIG_DIR`, …): the
/// caller decides which environment (the process's, an agent's).
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// One agent CLI, as baton drives it. See the module docs.
pub trait AgentCli: Send + Sync {
    // --- who it is -------------------------------------------------------

    /// Its name in `cli = "…"`, in the journal and on the command line.
    fn name(&self) -> &'static str;
    /// Its name for people ("Claude Code").
    fn title(&self) -> &'static str;
    /// The npm package that installs it and the version baton is tested
    /// with (`./scripts/test` installs exactly these).
    fn package(&self) -> Package;

    // --- how it is run ---------------------------------------------------

    /// Whether baton gives the session id up front or reads it from the
    /// stream.
    fn session_ids(&self) -> SessionIds;
    /// The headless argv for `how` (`{{prompt}}` still in it, where the CLI
    /// takes the prompt), permission mode, model and extra arguments
    /// included.
    fn argv(&self, o: &Options<'_>, how: Invocation<'_>) -> Vec<String>;
    /// The argv of its own terminal UI, for a person to watch and join in
    /// tmux (`baton agent spawn --interactive`): `{{prompt}}` where it
    /// takes a first message that it sends at once, `o`'s permission mode,
    /// model and extra arguments, and the session flags of `how`. `None`:
    /// baton does not run its terminal UI.
    fn tui_argv(&self, _o: &Options<'_>, _how: Invocation<'_>) -> Option<Vec<String>> {
        None
    }
    /// Files its terminal UI is given (file name, text), written into the
    /// instance's folder before it starts; `{{state_dir}}` in
    /// [`AgentCli::tui_argv`] names that folder.
    fn tui_files(&self, _o: &Options<'_>) -> Vec<(&'static str, String)> {
        Vec::new()
    }
    /// Environment the CLI needs to run headless in `o`'s permission mode;
    /// set unless the agent's own `env` sets it.
    fn env(&self, _o: &Options<'_>) -> Vec<(String, String)> {
        Vec::new()
    }
    /// Its knobs for an unattended run (no self-update under a running
    /// session); defaults, set only where neither the agent's `env` nor the
    /// user's environment sets them.
    fn unattended_env(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }
    /// Whether a session that ran in `ran_in` can be continued from `cwd`
    /// (some CLIs keep sessions per folder).
    fn resumes_from(&self, _ran_in: &str, _cwd: &Path) -> bool {
        true
    }
    /// Whether continuing a session keeps its id; `false`: it goes on
    /// under a new id, read from the stream (a fork).
    fn resume_keeps_id(&self) -> bool {
        true
    }
    /// Why the native session `native_id` (run in `cwd`) is known to be
    /// gone, for a CLI that would not say so itself when asked to continue
    /// it (it silently starts an empty session); `None`: it may be there.
    fn missing_session(&self, _native_id: &str, _cwd: &str, _env: Env<'_>) -> Option<String> {
        None
    }
    /// For a CLI whose stream carries no token counts: the arguments that
    /// make it write them to `file` when the run ends.
    fn usage_file_args(&self, _file: &Path) -> Option<Vec<String>> {
        None
    }
    /// The tokens in that file's text (pure).
    fn usage_from_file(&self, _text: &str) -> Option<AgentEvent> {
        None
    }
    /// The memory file it reads from its working folder (where a handoff
    /// brief goes).
    fn memory_file(&self) -> &'static str;
    /// How it is told about baton's MCP server for one run, given the
    /// run's environment `env` (a setting there is kept and added to);
    /// `None`: baton does not configure it for this CLI yet.
    fn mcp_wiring(&self, _server: &McpServer<'_>, _env: Env<'_>) -> Option<McpWiring> {
        None
    }

    // --- its stream ------------------------------------------------------

    /// The events of one line of its JSON stream, given what the stream
    /// said before ([`Seen`]).
    fn parse_line(&self, v: &Value, seen: &Seen<'_>) -> Vec<AgentEvent>;
    /// Whether its assistant text comes in pieces to be joined (Gemini).
    fn text_in_deltas(&self) -> bool {
        false
    }

    // --- its failures ----------------------------------------------------

    /// Whether `text` (stderr tail and stream errors) or the exit code says
    /// the session to continue is unknown to it.
    fn stale_session(&self, exit_code: Option<i32>, text: &str) -> bool;
    /// Whether the exit code alone says authentication failed.
    fn authentication_exit(&self, _exit_code: Option<i32>) -> bool {
        false
    }

    // --- its own transcripts, for `baton import` -------------------------

    /// What its session file is and where it is, for messages.
    fn native_file(&self) -> &'static str;
    /// Whether one JSON record (a line, or a whole-file document) looks
    /// like its session file.
    fn recognizes(&self, record: &Map<String, Value>) -> Recognition;
    /// Why a text whose first line is (`json`) or is not JSON is not its
    /// session file.
    fn not_native_because(&self, json: bool) -> &'static str {
        if json {
            "line 1 has no sessionId"
        } else {
            "line 1 is not JSON"
        }
    }
    /// The command that prints the transcript of session `id`, for a CLI
    /// that keeps no file per session; `None`: look for its file.
    fn export_command(&self, _id: &str) -> Option<Vec<String>> {
        None
    }
    /// Reads its session file into `t` (pure).
    fn parse_native(&self, text: &str, t: &mut NativeTranscript) -> Result<(), String>;
    /// Whether the subagents it starts run in sessions of their own (its
    /// stream says at most that one started, with an
    /// [`AgentEvent::Subagent`] holding a `SessionStarted`), read by baton
    /// from their files ([`crate::subagents`]): Codex.
    fn subagents_apart(&self) -> bool {
        false
    }
    /// One such session file's text read into the model it ran and what
    /// it did, without what it inherited from its parent (pure).
    fn parse_subagent(&self, _text: &str) -> (Option<String>, Vec<AgentEvent>) {
        (None, Vec::new())
    }
    /// The subagents its own session file (its text) says the latest run
    /// started, where its stream leaves them out (Codex with
    /// `multi_agent_v2`): the call, its result, the
    /// [`AgentEvent::Subagent`] naming the session (pure).
    fn spawns_in_session(&self, _text: &str) -> Vec<AgentEvent> {
        Vec::new()
    }
    /// The session file of the session with exactly the id `id`, searched
    /// in the CLI's own folders (IO).
    fn locate_native(&self, id: &str, env: Env<'_>) -> Result<PathBuf, String>;
}

impl std::fmt::Debug for dyn AgentCli {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Two adapters are the same CLI when they have the same name.
impl PartialEq for dyn AgentCli {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

/// What a stream said before the line being read.
#[derive(Debug, Clone, Copy)]
pub struct Seen<'a> {
    /// The assistant's latest message (for a final event that lacks it).
    pub last_text: &'a str,
    /// The tool calls still without their result: (id, "name summary").
    pub open_calls: &'a [(String, String)],
}

impl Seen<'_> {
    /// "name summary" of the open call `id`.
    pub fn call(&self, id: &str) -> Option<&str> {
        self.open_calls
            .iter()
            .find(|(c, _)| c == id)
            .map(|(_, what)| what.as_str())
    }
}

/// How sure an adapter is that a record is from its CLI's session file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recognition {
    No,
    /// It could be (a field many CLIs write): taken when no adapter is sure.
    Loose,
    Sure,
}

/// An npm package and the pinned version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Package {
    pub name: &'static str,
    pub version: &'static str,
}

/// Who names a new session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionIds {
    /// baton gives a fresh UUID (`--session-id`), known before it starts.
    Chosen,
    /// The CLI names it in its stream.
    FromStream,
}

/// How one run of a built-in CLI begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Invocation<'a> {
    /// A new session; `session` is its id where the CLI lets baton choose.
    New { session: Option<&'a str> },
    /// The CLI's own session `native_id`, continued. `dir` is the folder it
    /// ran in, for the CLIs that need it named when resumed elsewhere.
    Resume {
        native_id: &'a str,
        dir: Option<&'a str>,
    },
}

/// baton's MCP server (`baton mcp`) as an agent CLI starts it: the
/// program, its arguments and the environment it must be given (the
/// instance, the project, the attempt's summary file, the store).
#[derive(Debug, Clone)]
pub struct McpServer<'a> {
    pub command: &'a str,
    pub args: &'a [String],
    pub env: &'a [(String, String)],
    /// A folder of this run's own, for settings files a CLI reads.
    pub scratch: &'a Path,
    /// Folders of this run's own outside the project, under the user's
    /// private state, best first: for a CLI that reads a settings file
    /// only where nobody else may write, all the way up (Gemini CLI), when
    /// `scratch` is not such a place (a project below /tmp).
    pub private: &'a [PathBuf],
    /// The folder the CLI runs in.
    pub cwd: &'a Path,
    /// Reach baton's tools over Streamable HTTP instead, where the CLI can
    /// (a CLI that cannot starts `command` as before).
    pub http: Option<McpHttp<'a>>,
}

/// baton's MCP tools at a `baton serve`'s `/mcp`: the URL, and the
/// environment variable holding the run's capability token, sent as
/// `Authorization: Bearer …`. The token itself is never written into an
/// argument or a file: each CLI reads it from its environment.
#[derive(Debug, Clone, Copy)]
pub struct McpHttp<'a> {
    pub url: &'a str,
    pub token_var: &'a str,
}

impl McpHttp<'_> {
    /// `{"Authorization": "Bearer ${VAR}"}`, the variable written the way
    /// the CLI expands it in its configuration (`${VAR}`, `{env:VAR}`).
    pub fn headers(&self, reference: impl Fn(&str) -> String) -> Value {
        serde_json::json!({"Authorization": format!("Bearer {}", reference(self.token_var))})
    }
}

/// `${VAR}`: how most CLIs expand an environment variable in an MCP
/// configuration.
pub(crate) fn dollar_braces(var: &str) -> String {
    format!("${{{var}}}")
}

impl McpServer<'_> {
    /// `{"mcpServers": {"baton": {…}}}`, the shape most CLIs read: the
    /// server's `command`, `args` and `env`, plus `extra` keys (its `type`,
    /// whether it is trusted, which tools).
    pub fn mcp_servers_json(&self, extra: Value) -> Value {
        let mut entry = serde_json::json!({
            "command": self.command,
            "args": self.args,
            "env": self.json_env(),
        });
        if let (Some(e), Value::Object(more)) = (entry.as_object_mut(), extra) {
            e.extend(more);
        }
        serde_json::json!({ "mcpServers": { "baton": entry } })
    }

    /// The server's environment as a JSON object.
    pub fn json_env(&self) -> Map<String, Value> {
        self.env
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect()
    }
}

/// What a run of a CLI gets so that it finds baton's MCP server:
/// arguments right after its program name, environment variables, and
/// files baton writes before the run (paths in [`McpServer::scratch`], or
/// a [`run_files`] file in the working folder).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpWiring {
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub files: Vec<(PathBuf, String)>,
    /// Why the CLI will not see the server after all (said in the task's
    /// log; the run goes on without it).
    pub unseen: Option<String>,
}

impl McpWiring {
    /// Writes [`McpWiring::files`], each atomically (a file in the working
    /// folder may be the user's own, with baton's server added).
    /// Folders made on the way are the user's alone (0700), as a CLI
    /// that checks who may write above its settings file wants.
    pub fn write_files(&self) -> std::io::Result<()> {
        use std::os::unix::fs::DirBuilderExt;
        for (path, text) in &self.files {
            if let Some(dir) = path.parent() {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(dir)?;
            }
            memory::replace(path, text)?;
        }
        Ok(())
    }
}

/// Gemini CLI and Qwen Code: a system settings file (which their own
/// settings files are merged under) holding `mcpServers.baton`, named by
/// the CLI's `…_SYSTEM_SETTINGS_PATH` variable; the server trusted, so its
/// tools run without asking in a headless run.
pub(crate) fn settings_file_wiring(
    server: &McpServer<'_>,
    var: &str,
    http_settings: Value,
) -> McpWiring {
    settings_file_wiring_in(server.scratch, server, var, http_settings)
}

/// [`settings_file_wiring`] with the file in `dir`.
pub(crate) fn settings_file_wiring_in(
    dir: &Path,
    server: &McpServer<'_>,
    var: &str,
    http_settings: Value,
) -> McpWiring {
    let file = dir.join(format!("{}-settings.json", var.to_ascii_lowercase()));
    let settings = match server.http {
        // Streamable HTTP; the token expanded from the environment.
        Some(h) => {
            let mut v = serde_json::json!({"mcpServers": {"baton": {
                "httpUrl": h.url,
                "headers": h.headers(dollar_braces),
                "trust": true,
            }}});
            if let (Some(o), Value::Object(more)) = (v.as_object_mut(), http_settings) {
                o.extend(more);
            }
            v
        }
        None => server.mcp_servers_json(serde_json::json!({"trust": true})),
    };
    McpWiring {
        args: Vec::new(),
        env: vec![(var.to_string(), file.display().to_string())],
        files: vec![(file, settings.to_string())],
        unseen: None,
    }
}

/// What an agent's configuration says about one run.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options<'a> {
    pub model: Option<&'a str>,
    pub args: &'a [String],
    pub permission: Permission,
}

/// What a built-in CLI may do. Default: edit files in its working folder
/// (the task's worktree), nothing beyond it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Permission {
    #[default]
    Edit,
    /// Read and plan only: no edits, no commands that change anything.
    ReadOnly,
    /// Everything, without asking (the CLI's own "yolo"/bypass mode).
    Full,
}

/// `words` as owned strings (argv pieces).
pub(crate) fn words(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

/// The built-in CLI called `name`.
pub fn by_name(name: &str) -> Option<Cli> {
    clis::ALL.iter().copied().find(|c| c.name() == name)
}

/// Every built-in CLI, in the order they are listed to users.
pub fn all() -> &'static [Cli] {
    clis::ALL
}

/// `cli = "…"` in a configuration: one of [`clis::NAMES`].
#[derive(Clone, Copy)]
pub struct BuiltIn(pub Cli);

impl std::fmt::Debug for BuiltIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl<'de> Deserialize<'de> for BuiltIn {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<BuiltIn, D::Error> {
        let name = String::deserialize(d)?;
        by_name(&name)
            .map(BuiltIn)
            .ok_or_else(|| serde::de::Error::unknown_variant(&name, clis::NAMES))
    }
}
