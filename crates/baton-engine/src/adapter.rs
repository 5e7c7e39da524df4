//! The built-in agent CLI adapters: how each CLI is invoked headless (a new
//! session, a session id chosen up front, its own session continued), what
//! its permission modes map to, which memory file it reads, its version.
//! Verified against the real CLIs: docs/dev/agent-clis.md.

use crate::config::{AgentConfig, Permission};
use baton_core::agent_stream::Cli;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

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

/// The argv template (`{{prompt}}` still in it) of `agent` for `how`.
/// A generic agent (`command = [...]`) is its command, whatever `how` is.
pub fn argv(agent: &AgentConfig, how: Invocation<'_>) -> Vec<String> {
    let Some(cli) = agent.cli else {
        return agent.command.clone();
    };
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let permission = agent.permission.unwrap_or_default();
    let mut argv = match cli {
        Cli::Claude => s(&[
            "claude",
            "-p",
            "{{prompt}}",
            "--output-format",
            "stream-json",
            "--verbose",
            "--permission-mode",
            match permission {
                Permission::Edit => "acceptEdits",
                Permission::ReadOnly => "plan",
                Permission::Full => "bypassPermissions",
            },
        ]),
        Cli::Codex => s(&[
            "codex",
            "exec",
            "--json",
            "-s",
            match permission {
                Permission::Edit => "workspace-write",
                Permission::ReadOnly => "read-only",
                Permission::Full => "danger-full-access",
            },
            "--skip-git-repo-check",
        ]),
        Cli::Gemini => {
            let mut a = s(&["gemini", "-p", "{{prompt}}", "-o", "stream-json"]);
            a.extend(s(match permission {
                Permission::Edit => &["--approval-mode", "auto_edit"],
                Permission::ReadOnly => &["--approval-mode", "plan"],
                Permission::Full => &["--yolo"],
            }));
            a.push("--skip-trust".into());
            a
        }
        Cli::Qwen => {
            let mut a = s(&["qwen", "-o", "stream-json"]);
            a.extend(s(match permission {
                Permission::Edit => &["--approval-mode", "auto-edit"],
                Permission::ReadOnly => &["--approval-mode", "plan"],
                Permission::Full => &["--yolo"],
            }));
            a
        }
        Cli::Opencode => s(&["opencode", "run", "--format", "json"]),
        // Read-only denies the write and shell tools (reading needs no
        // permission); edit allows file writes, which Copilot keeps inside
        // the working folder (and the temp folder); full allows every
        // tool, path and URL.
        Cli::Copilot => {
            let mut a = s(&["copilot", "-p", "{{prompt}}", "--output-format", "json"]);
            a.extend(s(match permission {
                Permission::Edit => &["--allow-tool=write"],
                Permission::ReadOnly => &["--deny-tool=write", "--deny-tool=shell"],
                Permission::Full => &["--allow-all"],
            }));
            a
        }
        // droid's autonomy levels. Without `--auto` it withholds its file
        // tools but runs any command the model itself rates low risk.
        Cli::Droid => {
            let mut a = s(&["droid", "exec", "-o", "stream-json"]);
            a.extend(s(match permission {
                Permission::Edit => &["--auto", "low"],
                Permission::ReadOnly => &[],
                Permission::Full => &["--skip-permissions-unsafe"],
            }));
            a
        }
    };
    if let Some(m) = &agent.model {
        argv.push(
            match cli {
                Cli::Claude | Cli::Copilot => "--model",
                _ => "-m",
            }
            .into(),
        );
        argv.push(m.clone());
    }
    argv.extend(agent.args.iter().cloned());
    match how {
        Invocation::New { session: Some(id) } if cli.chooses_session_id() => {
            argv.extend(["--session-id".to_string(), id.to_string()]);
        }
        Invocation::New { .. } => {}
        Invocation::Resume { native_id, dir } => match cli {
            Cli::Claude | Cli::Gemini | Cli::Qwen => {
                argv.extend(["--resume".to_string(), native_id.to_string()]);
            }
            // Its value is optional: joined, so nothing else is taken for it.
            Cli::Copilot => argv.push(format!("--resume={native_id}")),
            // Offline `-s ID` cannot load a session (it asks Factory's
            // service first); `--fork ID` continues it under a new id.
            Cli::Droid => argv.extend(["--fork".to_string(), native_id.to_string()]),
            // `exec`'s own flags stay before `resume`.
            Cli::Codex => argv.extend(["resume".to_string(), native_id.to_string()]),
            Cli::Opencode => {
                argv.extend(["--session".to_string(), native_id.to_string()]);
                // Resumed from another folder it hangs unless told where
                // the session ran.
                if let Some(d) = dir {
                    argv.extend(["--dir".to_string(), d.to_string()]);
                }
            }
        },
    }
    // The prompt as the last word where the CLI takes it positionally.
    if matches!(cli, Cli::Codex | Cli::Qwen | Cli::Opencode | Cli::Droid) {
        argv.push("{{prompt}}".into());
    }
    argv
}

/// Environment a built-in CLI needs for the agent's permission mode
/// (set only where the agent's own `env` does not set it).
pub fn env(agent: &AgentConfig) -> Vec<(String, String)> {
    let permission = agent.permission.unwrap_or_default();
    match agent.cli {
        Some(Cli::Opencode) if !agent.env.contains_key("OPENCODE_PERMISSION") => {
            let p = match permission {
                Permission::Edit => r#"{"edit":"allow","external_directory":"deny"}"#,
                Permission::ReadOnly => r#"{"edit":"deny","bash":"deny"}"#,
                Permission::Full => {
                    r#"{"edit":"allow","bash":"allow","external_directory":"allow"}"#
                }
            };
            vec![("OPENCODE_PERMISSION".into(), p.into())]
        }
        _ => Vec::new(),
    }
}

/// Whether the CLI can continue a session that ran in `ran_in` from
/// `cwd`: Claude Code, Gemini CLI and Qwen Code keep sessions per folder.
/// (Copilot and droid continue one from anywhere, in its own folder.)
pub fn resumes_from(cli: Cli, ran_in: &str, cwd: &Path) -> bool {
    match cli {
        Cli::Claude | Cli::Gemini | Cli::Qwen => Path::new(ran_in) == cwd,
        Cli::Codex | Cli::Opencode | Cli::Copilot | Cli::Droid => true,
    }
}

/// The memory file the CLI reads from its working folder.
pub fn memory_file(cli: Cli) -> &'static str {
    match cli {
        Cli::Claude => "CLAUDE.md",
        Cli::Codex | Cli::Opencode | Cli::Copilot | Cli::Droid => "AGENTS.md",
        Cli::Gemini => "GEMINI.md",
        Cli::Qwen => "QWEN.md",
    }
}

/// For a CLI whose stream has no token counts, the file it writes them to
/// when the run ends (beside its stream `stdout`), and the arguments that
/// ask for it: Copilot's `--usage-output-file`.
pub fn usage_file(cli: Cli, stdout: &Path) -> Option<(std::path::PathBuf, Vec<String>)> {
    match cli {
        Cli::Copilot => {
            let mut name = stdout.file_name()?.to_os_string();
            name.push(".usage.json");
            let file = stdout.with_file_name(name);
            let args = vec!["--usage-output-file".into(), file.display().to_string()];
            Some((file, args))
        }
        _ => None,
    }
}

/// The tokens in the file [`usage_file`] named, once the run ended.
pub fn read_usage_file(cli: Cli, file: &Path) -> Option<baton_core::agent_stream::AgentEvent> {
    let text = std::fs::read_to_string(file).ok()?;
    match cli {
        Cli::Copilot => baton_core::agent_stream::copilot_usage(&text),
        _ => None,
    }
}

const BEGIN: &str = "<!-- baton:handoff-brief begin: written by baton, replaced on every handoff; edit outside this section -->";
const END: &str = "<!-- baton:handoff-brief end -->";

/// `existing` (a memory file's text, or none) with baton's fenced brief
/// section set to `brief`: replaced where it is, else appended after the
/// user's own content, which is left as it was.
pub fn with_brief_section(existing: Option<&str>, brief: &str) -> String {
    let section = format!("{BEGIN}\n{}\n{END}\n", brief.trim_end());
    let Some(text) = existing.filter(|t| !t.is_empty()) else {
        return section;
    };
    if let Some(start) = text.find(BEGIN)
        && let Some(len) = text[start..].find(END)
    {
        let mut end = start + len + END.len();
        if text[end..].starts_with('\n') {
            end += 1;
        }
        return format!("{}{section}{}", &text[..start], &text[end..]);
    }
    let sep = if text.ends_with("\n\n") {
        ""
    } else if text.ends_with('\n') {
        "\n"
    } else {
        "\n\n"
    };
    format!("{text}{sep}{section}")
}

/// Writes the brief into the CLI's memory file in `dir` (see
/// [`with_brief_section`]), atomically. Returns the file's path.
pub fn write_memory_file(cli: Cli, dir: &Path, brief: &str) -> std::io::Result<std::path::PathBuf> {
    let path = dir.join(memory_file(cli));
    let existing = match std::fs::read_to_string(&path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    let text = with_brief_section(existing.as_deref(), brief);
    crate::render::atomic_write(&path, text.as_bytes())?;
    Ok(path)
}

/// The CLI's version (`PROGRAM --version`, first line), asked once per
/// program and PATH in this process; none when it cannot say.
pub fn version(program: &str, env: &[(String, String)], cwd: &Path) -> Option<String> {
    static SEEN: Mutex<Option<HashMap<String, Option<String>>>> = Mutex::new(None);
    let path = env
        .iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| std::env::var("PATH").unwrap_or_default());
    let key = format!("{program}\0{path}");
    if let Some(v) = SEEN.lock().ok()?.get_or_insert_with(HashMap::new).get(&key) {
        return v.clone();
    }
    let out = std::process::Command::new(program)
        .arg("--version")
        .current_dir(cwd)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok();
    let v = out.filter(|o| o.status.success()).and_then(|o| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(|l| baton_core::agent_stream::shorten(l, 80))
    });
    SEEN.lock()
        .ok()?
        .get_or_insert_with(HashMap::new)
        .insert(key, v.clone());
    v
}

/// A CLI's JSON stream read while it is written: complete lines only,
/// the last partial line when the CLI has ended.
pub struct Tail {
    path: std::path::PathBuf,
    offset: u64,
    partial: Vec<u8>,
    parser: baton_core::agent_stream::StreamParser,
}

impl Tail {
    pub fn new(cli: Cli, path: &Path) -> Tail {
        Tail {
            path: path.to_path_buf(),
            offset: 0,
            partial: Vec::new(),
            parser: baton_core::agent_stream::StreamParser::new(cli),
        }
    }

    /// The events of the lines written since the last call.
    pub fn poll(&mut self) -> Vec<baton_core::agent_stream::AgentEvent> {
        use std::io::{Read, Seek, SeekFrom};
        let Ok(mut f) = std::fs::File::open(&self.path) else {
            return Vec::new();
        };
        if f.seek(SeekFrom::Start(self.offset)).is_err() {
            return Vec::new();
        }
        let mut buf = Vec::new();
        let Ok(n) = f.read_to_end(&mut buf) else {
            return Vec::new();
        };
        self.offset += n as u64;
        self.partial.extend_from_slice(&buf);
        let mut out = Vec::new();
        while let Some(nl) = self.partial.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=nl).collect();
            out.extend(self.parser.line(&String::from_utf8_lossy(&line[..nl])));
        }
        out
    }

    /// The rest, the CLI having ended: a last line without its newline too.
    pub fn finish(&mut self) -> Vec<baton_core::agent_stream::AgentEvent> {
        let mut out = self.poll();
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            out.extend(self.parser.line(&String::from_utf8_lossy(&line)));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_brief_section_is_replaced_and_the_users_text_kept() {
        let user = "# My rules\n\nUse tabs.\n";
        let once = with_brief_section(Some(user), "brief one");
        assert!(once.starts_with(user));
        assert!(once.contains("brief one"));
        let twice = with_brief_section(Some(&once), "brief two");
        assert!(twice.starts_with(user));
        assert!(twice.contains("brief two"));
        assert!(!twice.contains("brief one"), "{twice}");
        assert_eq!(twice.matches(BEGIN).count(), 1);
        // The user edits after the section: kept on the next handoff.
        let edited = format!("{twice}\nMore rules.\n");
        let third = with_brief_section(Some(&edited), "brief three");
        assert!(third.contains("More rules."));
        assert!(third.starts_with(user));
        assert_eq!(
            with_brief_section(None, "b"),
            format!("{BEGIN}\nb\n{END}\n")
        );
    }

    #[test]
    fn a_stream_is_read_line_by_line_as_it_grows() {
        use baton_core::agent_stream::AgentEvent;
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("out");
        let mut t = Tail::new(Cli::Codex, &f);
        assert!(t.poll().is_empty(), "no file yet");
        std::fs::write(
            &f,
            "{\"type\":\"thread.started\",\"thread_id\":\"th-1\"}\n{\"type\":\"tu",
        )
        .unwrap();
        assert_eq!(
            t.poll(),
            vec![AgentEvent::SessionStarted {
                native_id: "th-1".into()
            }]
        );
        assert!(t.poll().is_empty(), "the partial line waits");
        let mut all = std::fs::read(&f).unwrap();
        all.extend_from_slice(b"rn.started\"}");
        std::fs::write(&f, all).unwrap();
        // The CLI ended without a last newline: that line still counts.
        let rest = t.finish();
        assert!(
            rest.iter()
                .all(|e| !matches!(e, AgentEvent::Warning { .. })),
            "{rest:?}"
        );
    }

    #[test]
    fn resume_arguments_follow_each_clis_rules() {
        let agent = |cli| AgentConfig {
            command: vec![],
            cli: Some(cli),
            model: Some("m".into()),
            args: vec!["--x".into()],
            env: Default::default(),
            permission: None,
        };
        let r = Invocation::Resume {
            native_id: "S",
            dir: Some("/w"),
        };
        assert_eq!(
            argv(&agent(Cli::Codex), r)[5..].join(" "),
            "--skip-git-repo-check -m m --x resume S {{prompt}}"
        );
        assert!(argv(&agent(Cli::Claude), r).ends_with(&["--resume".into(), "S".into()]));
        assert!(
            argv(&agent(Cli::Opencode), r)
                .join(" ")
                .ends_with("--session S --dir /w {{prompt}}")
        );
        assert!(
            argv(&agent(Cli::Copilot), r)
                .join(" ")
                .ends_with("--model m --x --resume=S")
        );
        assert!(
            argv(&agent(Cli::Droid), r)
                .join(" ")
                .ends_with("-m m --x --fork S {{prompt}}")
        );
        let n = Invocation::New { session: Some("U") };
        assert!(
            argv(&agent(Cli::Qwen), n)
                .join(" ")
                .ends_with("--session-id U {{prompt}}")
        );
        assert!(!argv(&agent(Cli::Codex), n).contains(&"U".to_string()));
        assert_eq!(
            argv(&agent(Cli::Copilot), n).join(" "),
            "copilot -p {{prompt}} --output-format json --allow-tool=write --model m --x --session-id U"
        );
        assert!(!argv(&agent(Cli::Droid), n).contains(&"U".to_string()));
    }

    #[test]
    fn permission_modes_map_per_cli() {
        let agent = |cli, p| AgentConfig {
            command: vec![],
            cli: Some(cli),
            model: None,
            args: vec![],
            env: Default::default(),
            permission: Some(p),
        };
        let new = Invocation::New { session: None };
        let words = |cli, p| argv(&agent(cli, p), new)[1..].join(" ");
        assert!(words(Cli::Copilot, Permission::Edit).ends_with("json --allow-tool=write"));
        assert!(
            words(Cli::Copilot, Permission::ReadOnly)
                .ends_with("json --deny-tool=write --deny-tool=shell")
        );
        assert!(words(Cli::Copilot, Permission::Full).ends_with("json --allow-all"));
        assert_eq!(
            words(Cli::Droid, Permission::Edit),
            "exec -o stream-json --auto low {{prompt}}"
        );
        assert_eq!(
            words(Cli::Droid, Permission::ReadOnly),
            "exec -o stream-json {{prompt}}"
        );
        assert_eq!(
            words(Cli::Droid, Permission::Full),
            "exec -o stream-json --skip-permissions-unsafe {{prompt}}"
        );
    }

    #[test]
    fn copilots_tokens_come_from_a_file_beside_its_stream() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("write.2.out");
        let (file, args) = usage_file(Cli::Copilot, &out).unwrap();
        assert_eq!(file, dir.path().join("write.2.out.usage.json"));
        assert_eq!(args, ["--usage-output-file", file.to_str().unwrap()]);
        assert!(usage_file(Cli::Droid, &out).is_none());
        assert_eq!(read_usage_file(Cli::Copilot, &file), None, "not written");
        std::fs::write(
            &file,
            r#"{"modelMetrics":{"m":{"usage":{"inputTokens":3,"outputTokens":2}}}}"#,
        )
        .unwrap();
        assert!(matches!(
            read_usage_file(Cli::Copilot, &file),
            Some(baton_core::agent_stream::AgentEvent::Usage {
                input_tokens: 3,
                output_tokens: 2,
                ..
            })
        ));
    }
}
