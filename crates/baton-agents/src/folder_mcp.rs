//! An MCP servers file in the agent's working folder, for a CLI that takes
//! MCP settings from nowhere else (droid reads `.factory/mcp.json` there;
//! its command line and environment name no MCP configuration). baton's
//! server is added for one run and taken out when the run ends, as the
//! handoff brief is from a memory file: the user's own servers and text
//! are never lost, and the change never lands in a commit.
//!
//! The file says itself how to undo the change (a `batonRun` key: the
//! user's text as it was, or that baton created the file and maybe its
//! folder), so a later run undoes it exactly even after a crash. droid
//! ignores keys it does not know (verified with 0.225.2).

use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

/// The key holding what baton changed.
const MARK: &str = "batonRun";
const NOTE: &str = "baton's MCP server, added for one run and taken out when it ends; edit outside mcpServers.baton";

/// What to undo, as the file keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Undo {
    /// The user's text; `None`: baton created the file.
    original: Option<String>,
    /// baton created the folder too.
    created_folder: bool,
}

impl Undo {
    fn of(v: &Map<String, Value>) -> Option<Self> {
        let m = v.get(MARK)?;
        Some(Self {
            original: m.get("original").and_then(Value::as_str).map(String::from),
            created_folder: m["createdFolder"].as_bool().unwrap_or(false),
        })
    }
}

fn parse(text: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(o)) => Ok(o),
        Ok(_) => Err("it is not a JSON object".into()),
        Err(e) => Err(format!("it is not valid JSON ({e})")),
    }
}

/// The file's text with `mcpServers.baton` set to `server` (over any
/// server of that name), given its text now (`None`: there is no file)
/// and whether its folder is there. The user's other keys and servers
/// stay; a text baton already changed keeps what undoes it.
pub fn with_baton_server(
    existing: Option<&str>,
    folder_exists: bool,
    server: Value,
) -> Result<String, String> {
    let (mut doc, undo) = match existing {
        None => (
            Map::new(),
            Undo {
                original: None,
                created_folder: !folder_exists,
            },
        ),
        Some(text) => {
            let doc = parse(text)?;
            let undo = Undo::of(&doc).unwrap_or(Undo {
                original: Some(text.to_string()),
                created_folder: false,
            });
            (doc, undo)
        }
    };
    let servers = doc
        .entry("mcpServers")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(servers) = servers else {
        return Err("its mcpServers is not an object".into());
    };
    servers.insert("baton".into(), server);
    doc.insert(
        MARK.into(),
        json!({
            "note": NOTE,
            "original": undo.original,
            "createdFolder": undo.created_folder,
        }),
    );
    Ok(serde_json::to_string_pretty(&Value::Object(doc)).expect("JSON") + "\n")
}

/// What the file at `text` is without baton's change: `None`: baton did
/// not change it; `Some(None)`: the file was not there.
pub fn without_baton_server(text: &str) -> Option<Option<String>> {
    let doc = parse(text).ok()?;
    Undo::of(&doc).map(|u| u.original)
}

/// Undoes baton's change to the file `rel` under `dir`: the user's text
/// back, or the file (and the folder baton made for it) gone. Returns the
/// path when it changed something.
pub fn undo(dir: &Path, rel: &str) -> std::io::Result<Option<PathBuf>> {
    let path = dir.join(rel);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let Ok(doc) = parse(&text) else {
        return Ok(None);
    };
    let Some(u) = Undo::of(&doc) else {
        return Ok(None);
    };
    match u.original {
        Some(t) => crate::memory::replace(&path, &t)?,
        None => {
            std::fs::remove_file(&path)?;
            if u.created_folder
                && let Some(folder) = path.parent()
            {
                // Only if nothing else was put there since.
                let _ = std::fs::remove_dir(folder);
            }
        }
    }
    Ok(Some(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn baton() -> Value {
        json!({"type": "stdio", "command": "baton", "args": ["mcp"]})
    }

    #[test]
    fn a_users_servers_stay_and_their_text_comes_back_exactly() {
        let user = "{ \"mcpServers\": {\"mine\": {\"command\": \"x\"}},\n  \"other\": 1 }";
        let with = with_baton_server(Some(user), true, baton()).unwrap();
        let v: Value = serde_json::from_str(&with).unwrap();
        assert_eq!(v["mcpServers"]["mine"]["command"], "x");
        assert_eq!(v["mcpServers"]["baton"]["command"], "baton");
        assert_eq!(v["other"], 1);
        // A second run over a crashed one still knows the user's text.
        let again = with_baton_server(Some(&with), true, baton()).unwrap();
        assert_eq!(without_baton_server(&again), Some(Some(user.to_string())));
        assert_eq!(without_baton_server(user), None, "not baton's change");
    }

    #[test]
    fn a_file_baton_created_goes_with_its_folder() {
        let dir = tempfile::tempdir().unwrap();
        let rel = ".factory/mcp.json";
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, with_baton_server(None, false, baton()).unwrap()).unwrap();
        assert_eq!(
            without_baton_server(&std::fs::read_to_string(&path).unwrap()),
            Some(None)
        );
        assert_eq!(undo(dir.path(), rel).unwrap(), Some(path.clone()));
        assert!(!path.parent().unwrap().exists());
        assert_eq!(undo(dir.path(), rel).unwrap(), None);
        // A folder that was there stays.
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, with_baton_server(None, true, baton()).unwrap()).unwrap();
        undo(dir.path(), rel).unwrap();
        assert!(!path.exists() && path.parent().unwrap().is_dir());
    }

    #[test]
    fn a_file_that_is_not_json_is_refused_untouched() {
        let err = with_baton_server(Some("{ nope"), true, baton()).unwrap_err();
        assert!(err.contains("not valid JSON"), "{err}");
        let err = with_baton_server(Some("{\"mcpServers\": []}"), true, baton()).unwrap_err();
        assert!(err.contains("mcpServers is not an object"), "{err}");
    }
}
