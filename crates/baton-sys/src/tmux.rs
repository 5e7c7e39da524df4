//! tmux on baton's own socket (one per project, so baton never touches the
//! user's own sessions): sessions that run an agent's terminal UI, a person
//! attaching to one, text typed into its pane as if pasted, the pane
//! captured before the session ends, and its whole process group ended.

use sha2::{Digest, Sha256};
use std::path::Path;
use std::process::{Command, Stdio};

/// baton's tmux server for one project.
#[derive(Debug, Clone)]
pub struct Tmux {
    socket: String,
}

impl Tmux {
    /// The socket of the project at `root`: `baton-<hash of its path>`.
    pub fn for_project(root: &Path) -> Tmux {
        let digest = Sha256::digest(root.display().to_string().as_bytes());
        let hex: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
        Tmux {
            socket: format!("baton-{hex}"),
        }
    }

    pub fn socket(&self) -> &str {
        &self.socket
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new("tmux");
        c.arg("-L")
            .arg(&self.socket)
            .args(args)
            .env_remove("TMUX")
            .stdin(Stdio::null());
        c
    }

    fn run(&self, args: &[&str]) -> Result<String, String> {
        let out = self.cmd(args).output().map_err(|e| {
            format!("cannot run tmux: {e} (install it, e.g. `apt-get install tmux`)")
        })?;
        if !out.status.success() {
            return Err(format!(
                "tmux {}: {}",
                args.first().unwrap_or(&""),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// A detached session `name` running `argv` in `cwd` with `env` set;
    /// its pane stays after the program exits, so what it printed can
    /// still be read.
    pub fn new_session(
        &self,
        name: &str,
        cwd: &Path,
        argv: &[String],
        env: &[(String, String)],
    ) -> Result<(), String> {
        let cwd = cwd.display().to_string();
        let mut args: Vec<String> = [
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            name,
            "-c",
            &cwd,
            "-x",
            "200",
            "-y",
            "50",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        // tmux (3.2 and later) gives a new session's program the PATH of
        // the client that asked for it, whatever `-e` says: PATH goes on
        // the program's command line instead (the rest, secrets among
        // them, stays out of it), with PWD, which some CLIs take their
        // project folder from (OpenCode).
        let mut path = None;
        for (k, v) in env {
            if k == "PATH" || k == "PWD" {
                path = path.or((k == "PATH").then_some(v));
                continue;
            }
            args.push("-e".into());
            args.push(format!("{k}={v}"));
        }
        args.push("env".into());
        args.push(format!("PWD={cwd}"));
        if let Some(p) = path {
            args.push(format!("PATH={p}"));
        }
        // Held until remain-on-exit is set, so even a program that ends at
        // once leaves its pane to read.
        args.push("sh".into());
        args.push("-c".into());
        args.push("read _ </dev/tty 2>/dev/null || true; exec \"$@\"".into());
        args.push("baton-agent".into());
        args.extend(argv.iter().cloned());
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        self.run(&refs)?;
        self.run(&["set-option", "-t", &pane(name), "remain-on-exit", "on"])?;
        self.run(&["send-keys", "-t", &pane(name), "Enter"])?;
        Ok(())
    }

    pub fn has_session(&self, name: &str) -> bool {
        self.cmd(&["has-session", "-t", &format!("={name}")])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// The pid of the program in the session's pane, and whether it ended.
    pub fn pane(&self, name: &str) -> Option<(u32, bool)> {
        let out = self
            .run(&[
                "display-message",
                "-p",
                "-t",
                &pane(name),
                "#{pane_pid} #{pane_dead}",
            ])
            .ok()?;
        let mut it = out.split_whitespace();
        let pid = it.next()?.parse().ok()?;
        Some((pid, it.next() == Some("1")))
    }

    /// Everything the pane shows and has scrolled away.
    pub fn capture(&self, name: &str) -> Result<String, String> {
        self.run(&["capture-pane", "-p", "-J", "-S", "-", "-t", &pane(name)])
    }

    /// Types `text` into the pane as a paste (bracketed where the program
    /// asked for it, so a terminal UI takes several lines as one message),
    /// then Enter.
    pub fn type_text(&self, name: &str, text: &str) -> Result<(), String> {
        let buffer = format!("baton-{name}");
        let mut child = self
            .cmd(&["load-buffer", "-b", &buffer, "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run tmux: {e}"))?;
        {
            use std::io::Write;
            let mut stdin = child.stdin.take().expect("piped");
            stdin
                .write_all(text.trim_end().as_bytes())
                .map_err(|e| format!("tmux load-buffer: {e}"))?;
        }
        let out = child
            .wait_with_output()
            .map_err(|e| format!("tmux load-buffer: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "tmux load-buffer: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let target = pane(name);
        self.run(&["paste-buffer", "-p", "-d", "-b", &buffer, "-t", &target])?;
        // A terminal UI that tells pastes from typing by their speed (Codex)
        // takes an Enter right behind the text as a newline in it.
        std::thread::sleep(std::time::Duration::from_millis(300));
        self.run(&["send-keys", "-t", &target, "Enter"])?;
        Ok(())
    }

    /// Ends the session: its program's whole process group first, then
    /// the session.
    pub fn kill(&self, name: &str) -> Result<(), String> {
        if let Some((pid, false)) = self.pane(name) {
            crate::process::kill_group(pid, std::time::Duration::from_secs(2));
        }
        if self.has_session(name)
            && let Err(e) = self.run(&["kill-session", "-t", &format!("={name}")])
            // Gone all the same (its server ended with its last program).
            && self.has_session(name)
        {
            return Err(e);
        }
        Ok(())
    }

    /// `tmux attach` to session `name`, for a person's terminal.
    pub fn attach_command(&self, name: &str) -> Command {
        let mut c = Command::new("tmux");
        c.arg("-L")
            .arg(&self.socket)
            .args(["attach-session", "-t", &format!("={name}")])
            .env_remove("TMUX");
        c
    }
}

/// The target of a session's (first) pane: `=NAME:` (exact name; a bare
/// `=NAME` names a session only where a session is expected).
fn pane(name: &str) -> String {
    format!("={name}:")
}
