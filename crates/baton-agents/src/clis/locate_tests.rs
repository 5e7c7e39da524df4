//! `locate` against each agent CLI's own session folders: the adapters
//! name where their sessions live, `locate` finds one by its exact id.

use crate::AgentCli;
use crate::clis::{Claude, Codex, Copilot, Droid, Gemini, Opencode, Qwen};
use crate::locate::*;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

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
    for cli in crate::all().iter().copied() {
        assert_eq!(locate(cli, f.to_str().unwrap(), &env).unwrap(), f);
    }
    let err = locate(&Claude, tmp.path().to_str().unwrap(), &env).unwrap_err();
    assert!(err.contains("is a folder"), "{err}");
    let err = locate(&Claude, "/no/such/file.jsonl", &env).unwrap_err();
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
    assert_eq!(locate(&Claude, ID, &env).unwrap(), want);
    let env = env_of(&[("HOME", &home)]);
    assert_eq!(
        locate(&Claude, ID, &env).unwrap(),
        home.join(format!(".claude/projects/-x/{ID}.jsonl"))
    );
    // Never a prefix, never the newest: an unknown id is an error
    // naming the folder and what to pass.
    let err = locate(&Claude, "5e551011", &env).unwrap_err();
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
    assert_eq!(locate(&Codex, id, &env).unwrap(), want);
    let archived = put(
        &ch.join("archived_sessions/rollout-2026-01-01T00-00-00-01a20000-aaaa-7f41-ba43-d3198e740954.jsonl"),
        "{}",
    );
    assert_eq!(
        locate(&Codex, "01a20000-aaaa-7f41-ba43-d3198e740954", &env).unwrap(),
        archived
    );
    let err = locate(&Codex, "d3198e740954", &env).unwrap_err();
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
    assert_eq!(locate(&Gemini, ID, &env).unwrap(), want);
    // GEMINI_CLI_HOME stands for HOME.
    let gh = tmp.path().join("gh");
    let old = put(
        &gh.join(".gemini/tmp/p/chats/session-2026-01-01T00-00-5e551011.json"),
        &format!("{{\n  \"sessionId\": \"{ID}\",\n  \"messages\": []\n}}"),
    );
    let env = env_of(&[("HOME", &home), ("GEMINI_CLI_HOME", &gh)]);
    assert_eq!(locate(&Gemini, ID, &env).unwrap(), old);
    let err = locate(&Gemini, "5e551011", &env).unwrap_err();
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
    assert_eq!(locate(&Qwen, ID, &env).unwrap(), want);
    let qh = tmp.path().join("qh");
    let env = env_of(&[("HOME", &home), ("QWEN_HOME", &qh)]);
    let err = locate(&Qwen, ID, &env).unwrap_err();
    assert!(
        err.contains(&qh.join("projects").display().to_string()),
        "{err}"
    );
    let rt = tmp.path().join("rt");
    let in_rt = put(&rt.join(format!("projects/-w/chats/{ID}.jsonl")), "{}");
    let env = env_of(&[("QWEN_HOME", &qh), ("QWEN_RUNTIME_DIR", &rt)]);
    assert_eq!(locate(&Qwen, ID, &env).unwrap(), in_rt);
}

#[test]
fn two_sessions_with_the_id_are_not_guessed_between() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("cfg");
    put(&cfg.join(format!("projects/-a/{ID}.jsonl")), "{}");
    put(&cfg.join(format!("projects/-b/{ID}.jsonl")), "{}");
    let env = env_of(&[("CLAUDE_CONFIG_DIR", &cfg)]);
    let err = locate(&Claude, ID, &env).unwrap_err();
    assert!(err.starts_with("2 claude sessions have the id"), "{err}");
}

#[test]
fn an_opencode_id_asks_for_opencode_export() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    put(&data.join("opencode/opencode.db"), "");
    let env = env_of(&[("XDG_DATA_HOME", &data)]);
    let err = locate(&Opencode, "ses_dfea60f4fffebEcbJsStaHiMbx", &env).unwrap_err();
    assert!(
        err.contains("run `opencode export ses_dfea60f4fffebEcbJsStaHiMbx`")
            && err.contains(&data.join("opencode/opencode.db").display().to_string()),
        "{err}"
    );
    assert_eq!(
        Opencode.export_command("ses_dfea60f4fffebEcbJsStaHiMbx"),
        Some(vec![
            "opencode".to_string(),
            "export".into(),
            "ses_dfea60f4fffebEcbJsStaHiMbx".into()
        ])
    );
    assert_eq!(Opencode.export_command("../x.json"), None);
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
    assert_eq!(locate(&Copilot, ID, &env).unwrap(), want);
    // COPILOT_HOME wins over HOME.
    let ch = tmp.path().join("ch");
    let in_ch = put(&ch.join(format!("session-state/{ID}/events.jsonl")), "{}");
    let env = env_of(&[("HOME", &home), ("COPILOT_HOME", &ch)]);
    assert_eq!(locate(&Copilot, ID, &env).unwrap(), in_ch);
    // A folder without its events is no session.
    std::fs::create_dir_all(ch.join(format!("session-state/{OTHER}"))).unwrap();
    let err = locate(&Copilot, OTHER, &env).unwrap_err();
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
    assert_eq!(locate(&Droid, ID, &env).unwrap(), want);
    assert_eq!(Droid.missing_session(ID, "/w/repo.d", &env), None);
    let why = Droid.missing_session(OTHER, "/w/repo.d", &env).unwrap();
    assert!(why.contains(&format!("-w-repo.d/{OTHER}.jsonl")), "{why}");
    // FACTORY_HOME_OVERRIDE moves the .factory folder.
    let over = tmp.path().join("over");
    let env = env_of(&[("HOME", &home), ("FACTORY_HOME_OVERRIDE", &over)]);
    let err = locate(&Droid, ID, &env).unwrap_err();
    assert!(
        err.contains(&over.join(".factory/sessions").display().to_string()),
        "{err}"
    );
    assert_eq!(Droid.missing_session(ID, "/w", &env_of(&[])), None);
}

#[test]
fn no_home_means_no_folder_to_search() {
    let err = locate(&Qwen, ID, &env_of(&[])).unwrap_err();
    assert!(err.contains("HOME is not set"), "{err}");
}
