//! Launching an agent phase: which agent, which native session to continue
//! (this phase's interrupted one, or the one the task was imported from),
//! the brief when that cannot be done or on a handoff, and the runs of the
//! agent's CLI (a second one, with the brief, when the session it was to
//! continue is refused).

use super::launch::{self, Launch, Launched};
use super::{Attempt, MAX_ARG_BYTES, attempt_var};
use crate::config::AgentConfig;
use crate::engine::{Engine, Held};
use crate::error::{Error, Result};
use baton_agents::{Cli, FailureKind};
use baton_core::machine::{self, Input};
use baton_core::state::{AgentSession, SessionStart};
use baton_core::{TaskState, brief, template};
use baton_sys::process::{self, Waited};
use std::path::PathBuf;

/// The variable an agent's CLI reads its MCP capability from.
pub const MCP_TOKEN_VAR: &str = "BATON_MCP_TOKEN";

/// What the runs of one agent phase's CLI share.
struct AgentRun<'a> {
    name: String,
    agent: &'a AgentConfig,
    cli: Option<Cli>,
    cwd: PathBuf,
    env: Vec<(String, String)>,
    version: launch::VersionProbe,
    /// The session to continue, if one can be.
    resumable: Option<AgentSession>,
}

impl Engine {
    /// How `cli` is told about `baton mcp` for a run in `cwd` with `env`
    /// (the attempt's `BATON_*` variables, which the server is given), or,
    /// with an `[mcp] url`, about that endpoint: the run then gets a
    /// capability of its own for the attempt (or instance) `env` names, in
    /// `BATON_MCP_TOKEN`, which its CLI sends as its bearer token.
    pub(crate) fn mcp_wiring(
        &self,
        cli: Cli,
        cwd: &std::path::Path,
        env: &[(String, String)],
    ) -> Option<baton_agents::McpWiring> {
        let http = match self.mcp_endpoint() {
            Some(url) => match Engine::scope_of_env(env).map(|s| self.grant(&s)) {
                Some(Ok(token)) => Some((url, token)),
                Some(Err(e)) => {
                    self.observer.info(&format!(
                        "warning: no MCP capability could be made ({}); the agent starts `baton mcp` over stdio instead",
                        e.message
                    ));
                    None
                }
                None => None,
            },
            None => None,
        };
        let exe = std::env::current_exe().ok()?.display().to_string();
        let args = vec![
            "--project".to_string(),
            self.project.root.display().to_string(),
            "mcp".to_string(),
        ];
        let mut server_env: Vec<(String, String)> = env
            .iter()
            .filter(|(k, _)| {
                matches!(
                    k.as_str(),
                    "BATON_PROJECT"
                        | "BATON_TASK_ID"
                        | "BATON_PHASE"
                        | "BATON_SUMMARY_FILE"
                        | "BATON_INSTANCE"
                        | "BATON_TEAM"
                        | "BATON_TEAMMATE"
                )
            })
            .cloned()
            .collect();
        if let Ok(url) = std::env::var("BATON_DATABASE_URL")
            && !url.is_empty()
        {
            server_env.push(("BATON_DATABASE_URL".into(), url));
        }
        let lookup = |k: &str| {
            env.iter()
                .rev()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.clone())
                .or_else(|| std::env::var(k).ok())
        };
        let scratch = env
            .iter()
            .find(|(k, _)| k == "BATON_STATE_DIR")
            .map(|(_, v)| std::path::PathBuf::from(v).join("mcp"))?;
        let private = private_dirs(&scratch);
        let mut wiring = cli.mcp_wiring(
            &baton_agents::McpServer {
                command: &exe,
                args: &args,
                env: &server_env,
                scratch: &scratch,
                private: &private,
                cwd,
                http: http.as_ref().map(|(url, _)| baton_agents::McpHttp {
                    url,
                    token_var: MCP_TOKEN_VAR,
                }),
            },
            &lookup,
        )?;
        if let Some((_, token)) = http {
            wiring.env.push((MCP_TOKEN_VAR.into(), token));
        }
        wiring.write_files().ok()?;
        prune_private(&private, &wiring);
        Some(wiring)
    }

    /// The `[mcp] url` agents are wired to (`BATON_MCP_URL` wins), if any.
    pub(crate) fn mcp_endpoint(&self) -> Option<String> {
        self.project
            .config
            .mcp
            .url(std::env::var("BATON_MCP_URL").ok())
            .ok()
            .flatten()
    }

    /// Launches the agent CLI of a prompt phase and waits for it. `None`:
    /// the attempt failed before its process could start (journaled).
    pub(super) fn launch_prompt(
        &self,
        held: &mut Held,
        at: &Attempt,
        t: &str,
    ) -> Result<Option<(Launched, Launch)>> {
        let Attempt {
            phase,
            def,
            ps,
            brief_text,
            ..
        } = at;
        let vars = |v: &str| attempt_var(&held.state, at, v);
        let mut env = at.env.clone();
        let mut prompt = template::render(t, vars);
        // A person's comments are in the brief; the prompt carries them
        // too when its template leaves the brief out.
        if !at.comments.is_empty() && !t.contains("{{brief}}") {
            prompt.push_str("\n\n");
            prompt.push_str(&baton_core::comment::section(&at.comments));
        }
        let name = held
            .state
            .agent
            .clone()
            .or(def.agent.clone())
            .or(self.project.config.defaults.agent.clone())
            .unwrap_or_default();
        let agent = self.project.config.agents.get(&name).ok_or_else(|| {
            Error::bad_input(format!(
                "agent {name:?} is not defined in .baton/config.toml"
            ))
        })?;
        for (k, v) in agent.cli_env() {
            env.push((k, v));
        }
        for (k, v) in &agent.env {
            env.push((k.clone(), v.clone()));
        }
        env.push(("BATON_AGENT".into(), name.clone()));
        let cli = agent.cli;
        let cwd = held.ws.cwd.clone();
        let version = match cli {
            Some(_) => {
                launch::VersionProbe::start(agent.argv()[0].clone(), env.clone(), cwd.clone())
            }
            None => launch::VersionProbe::none(),
        };
        // The interrupted session of this phase, if there is one.
        let interrupted = ps.agent_session.clone().filter(|_| ps.interrupted);
        // The session the task was imported from, until an agent ran (a
        // generic agent's run has no session to go on from).
        let imported = held
            .state
            .imported
            .clone()
            .filter(|s| s.cli != baton_agents::generic::CLI)
            .filter(|_| held.state.agent_runs().is_empty());
        let resumable = cli
            .and_then(|c| launch::invocation_for(ps, &name, c, &cwd))
            .cloned()
            .or_else(|| {
                let c = cli?;
                imported
                    .clone()
                    .filter(|s| s.cli == c.name() && c.resumes_from(&s.cwd, &cwd))
            });
        let resumable = self.still_resumable(held, phase, resumable, &env)?;
        let handoff = held.state.handoff_pending;
        // With {{brief}} in the template, a fuller brief goes there.
        let uses_brief = t.contains("{{brief}}");
        let brief_prompt = |state: &TaskState, extra: &str| {
            let full = format!("{brief_text}\n{extra}");
            let rendered = uses_brief.then(|| {
                template::render(t, |v| match v {
                    "brief" => Some(full.clone()),
                    _ => machine::value_of(state, phase, v),
                })
            });
            launch::with_brief(&prompt, &full, rendered)
        };
        let progress = |held: &Held| match (&interrupted, &imported) {
            (Some(s), _) => {
                let events = self.interrupted_progress(held, ps);
                brief::progress_section(&s.cli, &s.native_id, &events)
            }
            (None, Some(s)) => {
                let events = self.imported_events(held);
                brief::imported_section(&s.cli, &s.native_id, &events)
            }
            (None, None) => String::new(),
        };
        // The first run: the interrupted session continued, a new
        // session told what the interrupted one did, or a new one
        // (with the brief on a handoff).
        // An agent instance's next turn continues its session with the
        // turn's prompt (a review's feedback) as it is.
        let next_turn = interrupted.is_none()
            && held
                .state
                .labels
                .contains_key(crate::builtin::INSTANCE_LABEL);
        let (start, text) = match (&resumable, &interrupted) {
            (Some(_), _) if next_turn => (SessionStart::Resumed, prompt.clone()),
            (Some(_), _) => (SessionStart::Resumed, launch::resumed_prompt(&prompt)),
            (None, Some(_)) if cli.is_some() => (
                SessionStart::Brief,
                brief_prompt(&held.state, &progress(held)),
            ),
            _ if imported.is_some() => (
                SessionStart::Brief,
                brief_prompt(&held.state, &progress(held)),
            ),
            _ if handoff && cli.is_some() => (SessionStart::New, brief_prompt(&held.state, "")),
            _ => (SessionStart::New, prompt.clone()),
        };
        if handoff && let Some(c) = cli {
            let memory = baton_agents::memory::write_brief(c, &cwd, brief_text)?;
            self.observer.info(&format!(
                "handed off to {name}: the brief is in {} and in the prompt",
                memory.display()
            ));
        }
        let run = AgentRun {
            name,
            agent,
            cli,
            cwd,
            env,
            version,
            resumable,
        };
        self.run_agent(held, at, run, (start, text), &brief_prompt, &progress)
    }

    /// Runs the agent's CLI for the first plan; again, with the brief, if
    /// the session it was to continue cannot be found or is refused.
    fn run_agent(
        &self,
        held: &mut Held,
        at: &Attempt,
        run: AgentRun<'_>,
        first: (SessionStart, String),
        brief_prompt: &dyn Fn(&TaskState, &str) -> String,
        progress: &dyn Fn(&Held) -> String,
    ) -> Result<Option<(Launched, Launch)>> {
        let Attempt {
            phase, dir, label, ..
        } = at;
        let (started, timeout) = (at.started, at.timeout);
        let AgentRun {
            name,
            agent,
            cli,
            cwd,
            env,
            mut version,
            resumable,
        } = run;
        let mut runs = 0;
        let mut plan = first;
        let (launched, l) = loop {
            runs += 1;
            let (start, text) = plan.clone();
            let suffix = if runs == 1 {
                String::new()
            } else {
                format!(".r{runs}")
            };
            let prompt_file = dir.join("prompts").join(format!("{label}{suffix}.md"));
            fs_err::write(&prompt_file, &text)?;
            let mut env = env.clone();
            env.push((
                "BATON_PROMPT_FILE".into(),
                prompt_file.display().to_string(),
            ));
            let new_id = cli
                .filter(|c| c.session_ids() == baton_agents::SessionIds::Chosen)
                .map(|_| new_uuid());
            let how = match (&resumable, start) {
                (Some(s), SessionStart::Resumed) => baton_agents::Invocation::Resume {
                    native_id: &s.native_id,
                    dir: (s.cwd != cwd.display().to_string()).then_some(s.cwd.as_str()),
                },
                _ => baton_agents::Invocation::New {
                    session: new_id.as_deref(),
                },
            };
            let mut argv = launch::argv_for(agent, how, &text, &prompt_file);
            // The CLI is told about baton's MCP server, which learns the
            // attempt (and instance) from the environment passed to it.
            let mut run_env = env.clone();
            if let Some(w) = cli
                .filter(|_| agent.mcp.unwrap_or(true))
                .and_then(|c| self.mcp_wiring(c, &cwd, &env))
            {
                if let (Some(why), 1) = (&w.unseen, runs) {
                    self.observer.info(why);
                    self.decide_commit(
                        held,
                        Input::Note {
                            phase: Some(phase.clone()),
                            text: why.clone(),
                        },
                    )?;
                }
                argv.splice(1..1, w.args);
                run_env.extend(w.env);
            }
            if let Some(big) = argv.iter().find(|a| a.len() > MAX_ARG_BYTES) {
                let message = format!(
                    "an argument of agent {name:?} is {} bytes (the prompt is {}), more than the {MAX_ARG_BYTES} bytes one argument may have; use {{{{prompt_file}}}} instead of {{{{prompt}}}} in [agents.{name}] command in .baton/config.toml",
                    big.len(),
                    text.len()
                );
                return self.fail_unstarted(held, phase, started, message);
            }
            // Known before it starts: the session continued, or the
            // id baton chose. A generic agent has no native session, but
            // its run is journaled all the same (by its name), so the log,
            // `cli_history` and a handoff know who ran.
            let generic = cli.is_none().then(|| AgentSession {
                agent: name.clone(),
                cli: baton_agents::generic::CLI.into(),
                native_id: String::new(),
                cwd: cwd.display().to_string(),
                version: None,
                start: SessionStart::New,
            });
            let session = generic.or_else(|| {
                let c = cli?;
                let native_id = match (&resumable, start) {
                    (Some(s), SessionStart::Resumed) if c.resume_keeps_id() => s.native_id.clone(),
                    // A fork: the new id shows in the stream.
                    (Some(_), SessionStart::Resumed) => return None,
                    _ => new_id.clone()?,
                };
                Some(AgentSession {
                    agent: name.clone(),
                    cli: c.name().into(),
                    native_id,
                    cwd: cwd.display().to_string(),
                    version: None,
                    start,
                })
            });
            let l = launch::Launch {
                program: argv[0].clone(),
                args: argv[1..].to_vec(),
                env: run_env,
                stdout: dir.join("logs").join(format!("{label}{suffix}.out")),
                stderr: dir.join("logs").join(format!("{label}{suffix}.err")),
                cli,
                session,
                agent: name.clone(),
                start,
                forks: match (&resumable, start) {
                    (Some(s), SessionStart::Resumed)
                        if cli.is_some_and(|c| !c.resume_keeps_id()) =>
                    {
                        Some(s.native_id.clone())
                    }
                    _ => None,
                },
            };
            let left = timeout.map(|t| t.saturating_sub(started.elapsed()));
            let launched = self.launch(held, phase, &l, left, &mut version)?;
            // A continued session the CLI cannot find, or rejects:
            // a new one, told what the interrupted one did.
            if start == SessionStart::Resumed
                && let (Some(c), Ok(Waited::Exited(st))) = (cli, &launched.waited)
                && let Err((why, kind)) = launch::judge(
                    c,
                    st.code(),
                    &launched.events,
                    &process::read_tail(&l.stderr, 4000),
                )
                && matches!(kind, FailureKind::StaleSession | FailureKind::Other)
            {
                self.starting_over(held, phase, &format!("the {} session", c.name()), &why)?;
                plan = (
                    SessionStart::Brief,
                    brief_prompt(&held.state, &progress(held)),
                );
                continue;
            }
            break (launched, l);
        };
        Ok(Some((launched, l)))
    }
}

/// A random (version 4) UUID, for the CLIs that take a session id.
impl Engine {
    /// `resumable`, unless its CLI would not really continue it: a CLI
    /// that starts an empty session (or fails without a word) for a
    /// session it no longer has is asked first whether it is gone
    /// ([`baton_agents::AgentCli::missing_session`]); when it is, the run
    /// starts over with the brief, and the journal says why.
    fn still_resumable(
        &self,
        held: &mut Held,
        phase: &baton_core::PhaseId,
        resumable: Option<AgentSession>,
        env: &[(String, String)],
    ) -> Result<Option<AgentSession>> {
        let Some(s) = resumable else {
            return Ok(None);
        };
        let var = |k: &str| {
            env.iter()
                .rev()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
                .or_else(|| std::env::var(k).ok())
        };
        let Some(why) = baton_agents::by_name(&s.cli)
            .and_then(|c| c.missing_session(&s.native_id, &s.cwd, &var))
        else {
            return Ok(Some(s));
        };
        let session = format!("the {} session {}", s.cli, s.native_id);
        self.starting_over(held, phase, &session, &why)?;
        Ok(None)
    }

    /// Says (and journals) that `session` of `phase` could not be
    /// continued, and that a new session gets the brief.
    fn starting_over(
        &self,
        held: &mut Held,
        phase: &baton_core::PhaseId,
        session: &str,
        why: &str,
    ) -> Result<()> {
        self.observer.info(&format!(
            "could not continue {session} of phase {phase} ({why}); starting a new one with the brief"
        ));
        self.decide_commit(
            held,
            Input::Note {
                phase: Some(phase.clone()),
                text: format!(
                    "the native session could not be continued ({why}); a new session gets the brief"
                ),
            },
        )
    }
}

pub fn new_uuid() -> String {
    use std::io::Read;
    let mut b = [0u8; 16];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b));
    if read.is_err() {
        let n = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
            ^ u128::from(std::process::id()) << 64;
        b = n.to_le_bytes();
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// Where baton keeps a run's settings files outside the project, for a
/// CLI that reads one only where nobody else may write (Gemini CLI),
/// best first: under `$XDG_STATE_HOME`, `~/.local/state`, and the home the
/// user database names (when `HOME` points elsewhere, e.g. below /tmp):
/// `…/baton/mcp/<a hash of the run's folder>`, one per task attempt's
/// folder (or instance), made 0700 when used.
fn private_dirs(scratch: &std::path::Path) -> Vec<std::path::PathBuf> {
    use sha2::{Digest, Sha256};
    let hash = Sha256::digest(scratch.as_os_str().as_encoded_bytes());
    let name: String = hash.iter().take(8).map(|b| format!("{b:02x}")).collect();
    let absolute =
        |v: Option<std::ffi::OsString>| v.map(std::path::PathBuf::from).filter(|p| p.is_absolute());
    let mut roots: Vec<std::path::PathBuf> = Vec::new();
    roots.extend(absolute(std::env::var_os("XDG_STATE_HOME")));
    roots.extend(absolute(std::env::var_os("HOME")).map(|h| h.join(".local/state")));
    if let Ok(Some(user)) = nix::unistd::User::from_uid(nix::unistd::geteuid()) {
        roots.push(user.dir.join(".local/state"));
    }
    let mut out: Vec<std::path::PathBuf> = Vec::new();
    for r in roots {
        let d = r.join("baton").join(PRIVATE_MCP).join(&name);
        if !out.contains(&d) {
            out.push(d);
        }
    }
    out
}

/// The folder under baton's private state that holds runs' settings
/// files.
const PRIVATE_MCP: &str = "mcp";

/// Runs' settings folders under the private state the wiring wrote to
/// that were not touched for a week go (a CLI reads its settings when it
/// starts; a folder is written again at each run).
fn prune_private(private: &[std::path::PathBuf], wiring: &baton_agents::McpWiring) {
    let week = std::time::Duration::from_secs(7 * 24 * 3600);
    for d in private {
        if !wiring.files.iter().any(|(f, _)| f.starts_with(d)) {
            continue;
        }
        let Some(all) = d.parent() else { continue };
        for e in std::fs::read_dir(all).into_iter().flatten().flatten() {
            let old = e
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > week);
            if old && e.path() != *d {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
}
