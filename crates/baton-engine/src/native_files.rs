//! Finding an agent CLI's own session file on disk, for `baton import`.
//!
//! The user names either the file itself or the CLI's session id; an id is
//! looked up in that CLI's session folder, honouring the variables the CLI
//! itself honours (verified in the pinned versions, docs/dev/agent-clis.md):
//!
//! * Claude Code: `$CLAUDE_CONFIG_DIR` (default `~/.claude`)
//!   `/projects/<project>/<id>.jsonl`.
//! * Codex: `$CODEX_HOME` (default `~/.codex`)
//!   `/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`, or the same under
//!   `archived_sessions/`.
//! * Gemini CLI: `$GEMINI_CLI_HOME` (default `$HOME`)
//!   `/.gemini/tmp/<project>/chats/session-<time>-<first 8 of id>.jsonl`
//!   (older versions: `.json`): the file name holds only part of the id, so
//!   the session id inside the file decides.
//! * Qwen Code: `$QWEN_RUNTIME_DIR`, else `$QWEN_HOME` (default `~/.qwen`)
//!   `/projects/<project>/chats/<id>.jsonl`.
//! * OpenCode keeps sessions in SQLite (`$XDG_DATA_HOME/opencode/opencode.db`,
//!   default `~/.local/share`): there is no file per session. An id is
//!   refused with [`OPENCODE_EXPORT`] in the message: the caller runs
//!   `opencode export <id>` and parses what it prints (see
//!   [`opencode_session_id`]).
//! * GitHub Copilot CLI: `$COPILOT_HOME` (default `~/.copilot`)
//!   `/session-state/<id>/events.jsonl`.
//! * Factory droid: `$FACTORY_HOME_OVERRIDE/.factory` (default
//!   `~/.factory`) `/sessions/<project>/<id>.jsonl`, the project being the
//!   folder with `/` as `-`.
//!
//! Only an exact id match is ever taken, never "the newest session".

use baton_core::agent_stream::Cli;
use std::path::{Path, PathBuf};

/// Said in the error for an OpenCode session id: the command that gives
/// its transcript.
pub const OPENCODE_EXPORT: &str = "opencode export";

/// The session file `file_or_id` names for `cli`: an existing path as it
/// is, else the file of the session with exactly that id in the CLI's
/// session folder. `env` reads environment variables (`HOME`,
/// `CLAUDE_CONFIG_DIR`, `CODEX_HOME`, `GEMINI_CLI_HOME`, `QWEN_HOME`,
/// `QWEN_RUNTIME_DIR`, `XDG_DATA_HOME`, `COPILOT_HOME`,
/// `FACTORY_HOME_OVERRIDE`).
pub fn locate(
    cli: Cli,
    file_or_id: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<PathBuf, String> {
    let given = Path::new(file_or_id);
    if given.is_file() {
        return Ok(given.to_path_buf());
    }
    if given.exists() {
        return Err(format!(
            "{file_or_id} is a folder, not a session file; pass the session file or its id"
        ));
    }
    let id = file_or_id.trim();
    if id.is_empty() || id.contains('/') || id.contains('\\') || id.starts_with('.') {
        return Err(format!(
            "there is no file {file_or_id}; pass an existing session file or a session id"
        ));
    }
    let var = |k: &str| env(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    let home = || var("HOME");
    let under_home = |rel: &str| -> Result<PathBuf, String> {
        home().map(|h| h.join(rel)).ok_or_else(|| {
            "HOME is not set, so the session folder is unknown; pass the session file instead"
                .to_string()
        })
    };
    match cli {
        Cli::Claude => {
            let root = match var("CLAUDE_CONFIG_DIR") {
                Some(d) => d,
                None => under_home(".claude")?,
            };
            let projects = root.join("projects");
            let name = format!("{id}.jsonl");
            let found = in_subfolders(&projects, &[], &|f| file_name(f) == name);
            one_of(
                cli,
                id,
                &projects,
                found,
                "every project's <session-id>.jsonl",
                "the session id `claude --resume` shows",
            )
        }
        Cli::Codex => {
            let root = match var("CODEX_HOME") {
                Some(d) => d,
                None => under_home(".codex")?,
            };
            let suffix = format!("-{id}.jsonl");
            let is_it = |f: &Path| {
                let n = file_name(f);
                n.starts_with("rollout-") && n.ends_with(&suffix)
            };
            let sessions = root.join("sessions");
            let mut found = in_subfolders(&sessions, &["*", "*", "*"], &is_it);
            found.extend(in_subfolders(&root.join("archived_sessions"), &[], &is_it));
            one_of(
                cli,
                id,
                &sessions,
                found,
                "YYYY/MM/DD/rollout-<time>-<thread-id>.jsonl and archived_sessions/",
                "the thread id (the `thread.started` id of `codex exec --json`)",
            )
        }
        Cli::Gemini => {
            let base = match var("GEMINI_CLI_HOME").or_else(home) {
                Some(h) => h.join(".gemini").join("tmp"),
                None => under_home(".gemini/tmp")?,
            };
            let short: String = id.chars().take(8).collect();
            let found = in_subfolders(&base, &["*", "chats"], &|f| {
                let n = file_name(f);
                n.starts_with("session-")
                    && (n.ends_with(&format!("-{short}.jsonl"))
                        || n.ends_with(&format!("-{short}.json")))
                    && gemini_session_id(f).as_deref() == Some(id)
            });
            one_of(
                cli,
                id,
                &base,
                found,
                "<project>/chats/session-*.jsonl holding that sessionId",
                "the full session id (`gemini --list-sessions` shows them)",
            )
        }
        Cli::Qwen => {
            let root = match var("QWEN_RUNTIME_DIR").or_else(|| var("QWEN_HOME")) {
                Some(d) => d,
                None => under_home(".qwen")?,
            };
            let projects = root.join("projects");
            let name = format!("{id}.jsonl");
            let found = in_subfolders(&projects, &["*", "chats"], &|f| file_name(f) == name);
            one_of(
                cli,
                id,
                &projects,
                found,
                "<project>/chats/<session-id>.jsonl",
                "the session id (`qwen --resume` lists them)",
            )
        }
        Cli::Copilot => {
            let root = match var("COPILOT_HOME") {
                Some(d) => d,
                None => under_home(".copilot")?,
            };
            let states = root.join("session-state");
            let file = states.join(id).join("events.jsonl");
            let found = if file.is_file() { vec![file] } else { vec![] };
            one_of(
                cli,
                id,
                &states,
                found,
                "<session-id>/events.jsonl",
                "the session id (`copilot --resume` lists them)",
            )
        }
        Cli::Droid => {
            let sessions = droid_sessions(&var("FACTORY_HOME_OVERRIDE"), &home())
                .ok_or_else(|| {
                    "HOME is not set, so the session folder is unknown; pass the session file instead"
                        .to_string()
                })?;
            let name = format!("{id}.jsonl");
            let found = in_subfolders(&sessions, &["*"], &|f| file_name(f) == name);
            one_of(
                cli,
                id,
                &sessions,
                found,
                "<project>/<session-id>.jsonl",
                "the session id (the `session_id` of `droid exec -o stream-json`)",
            )
        }
        Cli::Opencode => {
            let data = match var("XDG_DATA_HOME") {
                Some(d) => d,
                None => under_home(".local/share")?,
            };
            let db = data.join("opencode").join("opencode.db");
            Err(format!(
                "OpenCode keeps its sessions in a database ({}{}), not one file per session: \
                 run `{OPENCODE_EXPORT} {id}` and import what it prints, or pass a file holding that export",
                db.display(),
                if db.is_file() { "" } else { ", not found" }
            ))
        }
    }
}

/// droid's sessions folder: `$FACTORY_HOME_OVERRIDE/.factory/sessions`,
/// else `$HOME/.factory/sessions`.
fn droid_sessions(over: &Option<PathBuf>, home: &Option<PathBuf>) -> Option<PathBuf> {
    Some(
        over.as_ref()
            .or(home.as_ref())?
            .join(".factory")
            .join("sessions"),
    )
}

/// Whether droid still has session `id`'s transcript, which it needs to
/// continue it (`--fork`): droid keeps it as
/// `<sessions>/<folder, / as ->/<id>.jsonl`, for the folder the session
/// ran in. None when it cannot tell (no HOME).
pub fn droid_transcript(
    id: &str,
    ran_in: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<(PathBuf, bool)> {
    let var = |k: &str| env(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    let sessions = droid_sessions(&var("FACTORY_HOME_OVERRIDE"), &var("HOME"))?;
    let file = sessions
        .join(ran_in.replace('/', "-"))
        .join(format!("{id}.jsonl"));
    let there = file.is_file();
    Some((file, there))
}

/// The OpenCode session id `file_or_id` names when it is not a file: the
/// caller gets its transcript with `opencode export <id>` (which prints the
/// JSON [`baton_core::native::parse_transcript`] reads for OpenCode).
pub fn opencode_session_id(file_or_id: &str) -> Option<&str> {
    let id = file_or_id.trim();
    (!Path::new(file_or_id).exists()
        && !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'))
    .then_some(id)
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The files matching `is_it` in `dir`, going down through one folder per
/// element of `levels` (`"*"`: every folder, else that name). With no
/// levels, every subfolder at any depth is searched.
fn in_subfolders(dir: &Path, levels: &[&str], is_it: &dyn Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    let mut entries: Vec<_> = rd.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            match levels.split_first() {
                Some((level, rest)) if *level == "*" || file_name(&p) == *level => {
                    out.extend(in_subfolders(&p, rest, is_it))
                }
                Some(_) => {}
                None => out.extend(in_subfolders(&p, &[], is_it)),
            }
        } else if levels.is_empty() && is_it(&p) {
            out.push(p);
        }
    }
    out
}

/// The `sessionId` of a Gemini CLI session file (its first line, or the
/// whole document in the older `.json` form).
fn gemini_session_id(f: &Path) -> Option<String> {
    use std::io::BufRead;
    let file = std::fs::File::open(f).ok()?;
    let mut first = String::new();
    std::io::BufReader::new(file).read_line(&mut first).ok()?;
    let v: serde_json::Value = match serde_json::from_str(first.trim()) {
        Ok(v) => v,
        Err(_) => serde_json::from_str(&std::fs::read_to_string(f).ok()?).ok()?,
    };
    v.get("sessionId")?.as_str().map(String::from)
}

fn one_of(
    cli: Cli,
    id: &str,
    searched: &Path,
    mut found: Vec<PathBuf>,
    pattern: &str,
    what_id: &str,
) -> Result<PathBuf, String> {
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(format!(
            "no {} session {id} in {} (searched {pattern}); pass the session file's path instead, or {what_id}",
            cli.as_str(),
            searched.display(),
        )),
        _ => Err(format!(
            "{} {} sessions have the id {id}: {}; pass the one to import by its path",
            found.len(),
            cli.as_str(),
            found
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    const ID: &str = "5e551011-0000-4000-8000-00000000beef";
    const OTHER: &str = "5e551011-0000-4000-8000-0000000000aa";

    fn env_of(vars: &[(&str, &Path)]) -> impl Fn(&str) -> Option<String> + use<> {
        let m: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.display().to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    fn put(path: &Path, text: &str) -> PathBuf {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
        path.to_path_buf()
    }

    #[test]
    fn an_existing_file_is_taken_as_it_is_for_every_cli() {
        let tmp = tempfile::tempdir().unwrap();
        let f = put(&tmp.path().join("anything.jsonl"), "{}");
        let env = env_of(&[]);
        for cli in [
            Cli::Claude,
            Cli::Codex,
            Cli::Gemini,
            Cli::Qwen,
            Cli::Opencode,
            Cli::Copilot,
            Cli::Droid,
        ] {
            assert_eq!(locate(cli, f.to_str().unwrap(), &env).unwrap(), f);
        }
        let err = locate(Cli::Claude, tmp.path().to_str().unwrap(), &env).unwrap_err();
        assert!(err.contains("is a folder"), "{err}");
        let err = locate(Cli::Claude, "/no/such/file.jsonl", &env).unwrap_err();
        assert!(
            err.contains("there is no file /no/such/file.jsonl"),
            "{err}"
        );
    }

    #[test]
    fn a_claude_id_is_found_in_any_project_of_the_config_dir() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = tmp.path().join("cfg");
        put(&cfg.join(format!("projects/-w-a/{OTHER}.jsonl")), "{}");
        let want = put(&cfg.join(format!("projects/-w-b/{ID}.jsonl")), "{}");
        // CLAUDE_CONFIG_DIR wins over HOME.
        let home = tmp.path().join("home");
        put(&home.join(format!(".claude/projects/-x/{ID}.jsonl")), "{}");
        let env = env_of(&[("CLAUDE_CONFIG_DIR", &cfg), ("HOME", &home)]);
        assert_eq!(locate(Cli::Claude, ID, &env).unwrap(), want);
        let env = env_of(&[("HOME", &home)]);
        assert_eq!(
            locate(Cli::Claude, ID, &env).unwrap(),
            home.join(format!(".claude/projects/-x/{ID}.jsonl"))
        );
        // Never a prefix, never the newest: an unknown id is an error
        // naming the folder and what to pass.
        let err = locate(Cli::Claude, "5e551011", &env).unwrap_err();
        assert!(
            err.contains(&home.join(".claude/projects").display().to_string())
                && err.contains("pass the session file's path"),
            "{err}"
        );
    }

    #[test]
    fn a_codex_thread_is_found_by_its_rollout_name_in_sessions_or_archived() {
        let tmp = tempfile::tempdir().unwrap();
        let ch = tmp.path().join("codex");
        let id = "01a20159-bb6a-7f41-ba43-d3198e740954";
        let want = put(
            &ch.join(format!(
                "sessions/2026/11/22/rollout-2026-11-22T03-43-07-{id}.jsonl"
            )),
            "{}",
        );
        put(
            &ch.join("sessions/2026/11/23/rollout-2026-11-23T00-00-00-01a20159-0000-7f41-ba43-d3198e740954.jsonl"),
            "{}",
        );
        let env = env_of(&[("CODEX_HOME", &ch)]);
        assert_eq!(locate(Cli::Codex, id, &env).unwrap(), want);
        let archived = put(
            &ch.join("archived_sessions/rollout-2026-01-01T00-00-00-01a20000-aaaa-7f41-ba43-d3198e740954.jsonl"),
            "{}",
        );
        assert_eq!(
            locate(Cli::Codex, "01a20000-aaaa-7f41-ba43-d3198e740954", &env).unwrap(),
            archived
        );
        let err = locate(Cli::Codex, "d3198e740954", &env).unwrap_err();
        assert!(
            err.contains(&ch.join("sessions").display().to_string()),
            "{err}"
        );
    }

    #[test]
    fn a_gemini_id_is_matched_by_the_session_id_inside_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        // Same first 8 characters, another session: the content decides.
        put(
            &home.join(".gemini/tmp/repo/chats/session-2026-11-22T03-40-5e551011.jsonl"),
            &format!("{{\"sessionId\":\"{OTHER}\",\"projectHash\":\"x\"}}\n"),
        );
        let want = put(
            &home.join(".gemini/tmp/other/chats/session-2026-11-22T03-43-5e551011.jsonl"),
            &format!("{{\"sessionId\":\"{ID}\",\"projectHash\":\"x\"}}\n{{\"$set\":{{}}}}\n"),
        );
        let env = env_of(&[("HOME", &home)]);
        assert_eq!(locate(Cli::Gemini, ID, &env).unwrap(), want);
        // GEMINI_CLI_HOME stands for HOME.
        let gh = tmp.path().join("gh");
        let old = put(
            &gh.join(".gemini/tmp/p/chats/session-2026-01-01T00-00-5e551011.json"),
            &format!("{{\n  \"sessionId\": \"{ID}\",\n  \"messages\": []\n}}"),
        );
        let env = env_of(&[("HOME", &home), ("GEMINI_CLI_HOME", &gh)]);
        assert_eq!(locate(Cli::Gemini, ID, &env).unwrap(), old);
        let err = locate(Cli::Gemini, "5e551011", &env).unwrap_err();
        assert!(
            err.contains(&gh.join(".gemini/tmp").display().to_string()),
            "{err}"
        );
    }

    #[test]
    fn a_qwen_id_is_found_under_the_runtime_dir() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let want = put(
            &home.join(format!(".qwen/projects/-w-repo/chats/{ID}.jsonl")),
            "{}",
        );
        let env = env_of(&[("HOME", &home)]);
        assert_eq!(locate(Cli::Qwen, ID, &env).unwrap(), want);
        let qh = tmp.path().join("qh");
        let env = env_of(&[("HOME", &home), ("QWEN_HOME", &qh)]);
        let err = locate(Cli::Qwen, ID, &env).unwrap_err();
        assert!(
            err.contains(&qh.join("projects").display().to_string()),
            "{err}"
        );
        let rt = tmp.path().join("rt");
        let in_rt = put(&rt.join(format!("projects/-w/chats/{ID}.jsonl")), "{}");
        let env = env_of(&[("QWEN_HOME", &qh), ("QWEN_RUNTIME_DIR", &rt)]);
        assert_eq!(locate(Cli::Qwen, ID, &env).unwrap(), in_rt);
    }

    #[test]
    fn two_sessions_with_the_id_are_not_guessed_between() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = tmp.path().join("cfg");
        put(&cfg.join(format!("projects/-a/{ID}.jsonl")), "{}");
        put(&cfg.join(format!("projects/-b/{ID}.jsonl")), "{}");
        let env = env_of(&[("CLAUDE_CONFIG_DIR", &cfg)]);
        let err = locate(Cli::Claude, ID, &env).unwrap_err();
        assert!(err.starts_with("2 claude sessions have the id"), "{err}");
    }

    #[test]
    fn an_opencode_id_asks_for_opencode_export() {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("data");
        put(&data.join("opencode/opencode.db"), "");
        let env = env_of(&[("XDG_DATA_HOME", &data)]);
        let err = locate(Cli::Opencode, "ses_dfea60f4fffebEcbJsStaHiMbx", &env).unwrap_err();
        assert!(
            err.contains("run `opencode export ses_dfea60f4fffebEcbJsStaHiMbx`")
                && err.contains(&data.join("opencode/opencode.db").display().to_string()),
            "{err}"
        );
        assert_eq!(
            opencode_session_id("ses_dfea60f4fffebEcbJsStaHiMbx"),
            Some("ses_dfea60f4fffebEcbJsStaHiMbx")
        );
        assert_eq!(opencode_session_id("../x.json"), None);
    }

    #[test]
    fn a_copilot_id_is_its_session_state_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let want = put(
            &home.join(format!(".copilot/session-state/{ID}/events.jsonl")),
            "{}",
        );
        let env = env_of(&[("HOME", &home)]);
        assert_eq!(locate(Cli::Copilot, ID, &env).unwrap(), want);
        // COPILOT_HOME wins over HOME.
        let ch = tmp.path().join("ch");
        let in_ch = put(&ch.join(format!("session-state/{ID}/events.jsonl")), "{}");
        let env = env_of(&[("HOME", &home), ("COPILOT_HOME", &ch)]);
        assert_eq!(locate(Cli::Copilot, ID, &env).unwrap(), in_ch);
        // A folder without its events is no session.
        std::fs::create_dir_all(ch.join(format!("session-state/{OTHER}"))).unwrap();
        let err = locate(Cli::Copilot, OTHER, &env).unwrap_err();
        assert!(
            err.contains(&ch.join("session-state").display().to_string()),
            "{err}"
        );
    }

    #[test]
    fn a_droid_id_is_found_in_any_project_and_checked_in_its_own() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let want = put(
            &home.join(format!(".factory/sessions/-w-repo.d/{ID}.jsonl")),
            "{}",
        );
        put(
            &home.join(format!(".factory/sessions/-w-repo.d/{ID}.settings.json")),
            "{}",
        );
        let env = env_of(&[("HOME", &home)]);
        assert_eq!(locate(Cli::Droid, ID, &env).unwrap(), want);
        assert_eq!(droid_transcript(ID, "/w/repo.d", &env), Some((want, true)));
        let (other, there) = droid_transcript(OTHER, "/w/repo.d", &env).unwrap();
        assert!(!there && other.ends_with(format!("-w-repo.d/{OTHER}.jsonl")));
        // FACTORY_HOME_OVERRIDE moves the .factory folder.
        let over = tmp.path().join("over");
        let env = env_of(&[("HOME", &home), ("FACTORY_HOME_OVERRIDE", &over)]);
        let err = locate(Cli::Droid, ID, &env).unwrap_err();
        assert!(
            err.contains(&over.join(".factory/sessions").display().to_string()),
            "{err}"
        );
        assert_eq!(droid_transcript(ID, "/w", &env_of(&[])), None);
    }

    #[test]
    fn no_home_means_no_folder_to_search() {
        let err = locate(Cli::Qwen, ID, &env_of(&[])).unwrap_err();
        assert!(err.contains("HOME is not set"), "{err}");
    }
}
