//! A CLI's `--version`, asked once per program and PATH in this process.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

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
