//! Phase processes: each runs in its own process group with stdout and
//! stderr going to log files, so a timeout or a cancel kills everything it
//! started, and an orphan left by a crashed baton can be found and killed.

use baton_core::state::ProcessRef;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::ffi::{OsStr, OsString};
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

mod posix;

/// What to start.
#[derive(Debug, Clone)]
pub struct Spec {
    pub program: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    pub stdout: PathBuf,
    pub stderr: PathBuf,
}

pub struct Running {
    pub pid: u32,
    pub start_time: u64,
    rx: Receiver<std::io::Result<ExitStatus>>,
    gate: Option<std::fs::File>,
}

/// The shell line that holds the real program until baton has journaled
/// the process (`Running::release`): it waits for one line on stdin, a pipe
/// from baton. If baton dies first the pipe closes, the read fails and the
/// program never starts, so a crash can never leave an unrecorded phase
/// process running next to the re-run.
const GATE: &str = "IFS= read -r _ || exit 125; exec \"$0\" \"$@\" </dev/null";

/// The gate of a `sh -c SCRIPT` program: the same wait, then the script
/// runs in the gate's own shell (`$1`; `shift` first, so it sees no
/// arguments, as under `sh -c`) instead of in a second `sh` exec'd for it.
const GATE_SCRIPT: &str = "IFS= read -r _ || exit 125; exec </dev/null; eval \"shift\n$1\"";

/// Why waiting stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    Cancelled,
    LeaseLost,
    /// baton itself got SIGINT, SIGTERM or SIGHUP.
    Interrupted,
}

#[derive(Debug)]
pub enum Waited {
    Exited(ExitStatus),
    TimedOut,
    Stopped(Stop),
    WaitFailed(std::io::Error),
}

/// Starts the phase process held at the gate, in a new session (its own
/// process group, no controlling terminal). Fails at once when the program
/// cannot be found or is not executable.
pub fn spawn(spec: &Spec) -> std::io::Result<Running> {
    let path = spec
        .env
        .iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_str());
    find(&spec.program, &spec.cwd, path)?;
    let sh = find("sh", &spec.cwd, path)?;
    let stdout = OwnedFd::from(std::fs::File::create(&spec.stdout)?);
    let stderr = OwnedFd::from(std::fs::File::create(&spec.stderr)?);
    let (gate_in, gate_out) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    let mut argv: Vec<OsString> = vec!["sh".into(), "-c".into()];
    match spec.args.as_slice() {
        [c, script] if spec.program == "sh" && c == "-c" => {
            argv.extend([GATE_SCRIPT.into(), "sh".into(), script.into()]);
        }
        args => {
            argv.extend([GATE.into(), OsString::from(&spec.program)]);
            argv.extend(args.iter().map(OsString::from));
        }
    }
    // baton's environment, with the spec's variables over it.
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(k, _)| !spec.env.iter().any(|(s, _)| OsStr::new(s) == k))
        .collect();
    for (i, (k, v)) in spec.env.iter().enumerate() {
        if !spec.env[i + 1..].iter().any(|(later, _)| later == k) {
            env.push((k.into(), v.into()));
        }
    }
    let pid = posix::spawn(&posix::Start {
        program: &sh,
        argv: &argv,
        env: &env,
        cwd: &spec.cwd,
        stdin: &gate_in,
        stdout: &stdout,
        stderr: &stderr,
    })
    .inspect_err(|e| {
        tracing::debug!(program = %spec.program, error = %e, "phase process could not be spawned");
    })?;
    drop((gate_in, stdout, stderr));
    let start_time = crate::host::process_start_time(pid).unwrap_or(0);
    tracing::debug!(
        program = %spec.program,
        argc = spec.args.len() + 1,
        argv_bytes = spec.args.iter().map(String::len).sum::<usize>(),
        cwd = %spec.cwd.display(),
        pid,
        start_time,
        "phase process spawned, held at the gate"
    );
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let _ = tx.send(posix::wait(pid));
    });
    Ok(Running {
        pid,
        start_time,
        rx,
        gate: Some(std::fs::File::from(gate_out)),
    })
}

/// Checks that `program` can be executed, as `exec` would look for it in
/// `path` (default: baton's own PATH).
pub fn resolve(program: &str, cwd: &std::path::Path, path: Option<&str>) -> std::io::Result<()> {
    find(program, cwd, path).map(|_| ())
}

/// Where `exec` would find `program`: in `cwd` when it names a path,
/// else the first executable file of that name in `path` (default:
/// baton's own PATH). The result is absolute.
fn find(
    program: &str,
    cwd: &std::path::Path,
    path: Option<&str>,
) -> std::io::Result<std::path::PathBuf> {
    use std::io::{Error, ErrorKind};
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let path = cwd.join(program);
        if !path.exists() {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!("{} does not exist", path.display()),
            ));
        }
        if !executable(&path) {
            return Err(Error::new(
                ErrorKind::PermissionDenied,
                format!("{} is not executable", path.display()),
            ));
        }
        return Ok(path);
    }
    let path = match path {
        Some(p) => OsString::from(p),
        None => std::env::var_os("PATH").unwrap_or_default(),
    };
    let found = std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| executable(p))
        .ok_or_else(|| Error::new(ErrorKind::NotFound, "not found on PATH"))?;
    // A relative PATH entry is relative to baton's folder, not the phase's.
    if found.is_absolute() {
        Ok(found)
    } else {
        Ok(std::env::current_dir()?.join(found))
    }
}

impl Running {
    /// Lets the program start (after its pid is journaled).
    pub fn release(&mut self) {
        if let Some(mut g) = self.gate.take() {
            use std::io::Write;
            let written = g.write_all(b"go\n");
            tracing::debug!(
                pid = self.pid,
                ok = written.is_ok(),
                "phase process released from the gate"
            );
        }
    }

    pub fn process_ref(&self) -> ProcessRef {
        ProcessRef {
            pid: self.pid,
            start_time: self.start_time,
            pid_ns: crate::host::pid_namespace().to_string(),
        }
    }

    /// Waits for the process to exit, the timeout to pass, or `stop` to
    /// say so (polled every 100 ms). On timeout or stop the whole process
    /// group is killed before returning.
    pub fn wait(self, timeout: Option<Duration>, stop: &mut dyn FnMut() -> Option<Stop>) -> Waited {
        let started = Instant::now();
        loop {
            let slice = match timeout {
                Some(t) => {
                    let left = t.saturating_sub(started.elapsed());
                    if left.is_zero() {
                        tracing::debug!(
                            pid = self.pid,
                            timeout = ?t,
                            "phase timed out; killing its group"
                        );
                        self.kill();
                        return Waited::TimedOut;
                    }
                    left.min(Duration::from_millis(100))
                }
                None => Duration::from_millis(100),
            };
            match self.rx.recv_timeout(slice) {
                Ok(Ok(status)) => {
                    tracing::debug!(
                        pid = self.pid,
                        status = %describe(&status),
                        elapsed_ms = started.elapsed().as_millis() as u64,
                        "phase process exited"
                    );
                    // The leader exited; anything it left behind in its
                    // group goes with it.
                    kill_group(self.pid, Duration::from_millis(0));
                    return Waited::Exited(status);
                }
                Ok(Err(e)) => return Waited::WaitFailed(e),
                Err(RecvTimeoutError::Disconnected) => {
                    return Waited::WaitFailed(std::io::Error::other("waiter thread vanished"));
                }
                Err(RecvTimeoutError::Timeout) => {
                    if let Some(s) = stop() {
                        tracing::debug!(
                            pid = self.pid,
                            reason = ?s,
                            "phase stopped; killing its group"
                        );
                        self.kill();
                        return Waited::Stopped(s);
                    }
                }
            }
        }
    }

    fn kill(&self) {
        kill_group(self.pid, Duration::from_secs(2));
        let _ = self.rx.recv_timeout(Duration::from_secs(5));
    }
}

/// Whether any process of the group is still alive. Zombies do not count:
/// members of an orphaned group become zombies that nobody may reap.
fn group_alive(pgid: u32) -> bool {
    if killpg(Pid::from_raw(pgid as i32), None).is_err() {
        return false;
    }
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return true;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(rest) = stat.rfind(')').and_then(|i| stat.get(i + 2..)) else {
            continue;
        };
        // After the command name: state, ppid, pgrp, ...
        let mut fields = rest.split_whitespace();
        let state = fields.next();
        let pgrp = fields.nth(1).and_then(|p| p.parse::<u32>().ok());
        if pgrp == Some(pgid) && !matches!(state, Some("Z") | Some("X")) {
            return true;
        }
    }
    false
}

/// Whether `p`'s process still runs: the same pid and start time, in this
/// PID namespace (a pid of another container names some other process).
pub fn leader_lives(p: &ProcessRef) -> bool {
    crate::host::same_pid_namespace(&p.pid_ns)
        && crate::host::process_start_time(p.pid) == Some(p.start_time)
}

/// Kills the group of an earlier attempt only if its leader is provably
/// that process (same pid and start time): for old records a group whose
/// leader is gone may by now be someone else's.
pub fn kill_if_leader_lives(p: &ProcessRef) -> bool {
    let ours = leader_lives(p);
    if ours {
        kill_group(p.pid, Duration::from_secs(2));
    }
    ours
}

/// SIGTERM to the group, then SIGKILL if it is still there after `grace`.
pub fn kill_group(pgid: u32, grace: Duration) {
    if pgid <= 1 || !group_alive(pgid) {
        return;
    }
    let g = Pid::from_raw(pgid as i32);
    let started = Instant::now();
    if !grace.is_zero() {
        let sent = killpg(g, Signal::SIGTERM);
        tracing::debug!(pgid, ?grace, ok = sent.is_ok(), "SIGTERM to process group");
        let until = Instant::now() + grace;
        while Instant::now() < until {
            if !group_alive(pgid) {
                tracing::debug!(
                    pgid,
                    elapsed_ms = started.elapsed().as_millis() as u64,
                    "process group gone after SIGTERM"
                );
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let sent = killpg(g, Signal::SIGKILL);
    tracing::debug!(pgid, ok = sent.is_ok(), "SIGKILL to process group");
}

/// Kills what a crashed run left behind: the group of `p` if its leader is
/// still the same process, or if the leader is gone but the group lives on
/// (Linux never hands out a pid that is still a process group id). Returns
/// whether anything was found.
pub fn kill_orphan(p: &ProcessRef) -> bool {
    // A pid of another PID namespace (another container) is some other
    // process here: never signalled.
    if !crate::host::same_pid_namespace(&p.pid_ns) {
        tracing::debug!(pid = p.pid, pid_ns = %p.pid_ns, "orphan of another PID namespace left alone");
        return false;
    }
    let leader = crate::host::process_start_time(p.pid);
    let ours = match leader {
        Some(st) => st == p.start_time,
        None => group_alive(p.pid),
    };
    tracing::debug!(
        pid = p.pid,
        start_time = p.start_time,
        leader_start_time = ?leader,
        ours,
        "looking for an orphaned phase process"
    );
    if ours {
        kill_group(p.pid, Duration::from_secs(2));
    }
    ours
}

/// How a process ended, in words: `exit status 3`, `killed by signal 9`.
pub fn describe(status: &ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        _ => "ended".into(),
    }
}

/// The last `max` bytes of `s`, cut at a character boundary.
pub fn tail(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut start = s.len() - max;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// The last `max` bytes of a file, as text (the partial first line of a
/// file longer than that dropped).
pub fn read_tail(path: &std::path::Path, max: usize) -> String {
    let Some(t) = read_text_tail(path, max) else {
        return String::new();
    };
    if t.cut {
        match t.text.find('\n') {
            Some(i) => t.text[i + 1..].to_string(),
            None => t.text,
        }
    } else {
        t.text
    }
}

/// Opens a file a phase wrote (its output, its summary and reports) for
/// reading, if it is a regular file: never blocking on a FIFO put in its
/// place, never reading a device (`/dev/zero`) or a folder a symlink
/// names. `Ok(None)`: missing, or not a regular file.
pub fn open_regular(path: &std::path::Path) -> std::io::Result<Option<std::fs::File>> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    Ok(f.metadata()?.is_file().then_some(f))
}

/// The end of a file read as text, in bounded memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextTail {
    pub text: String,
    /// The file was longer: only its last bytes were read.
    pub cut: bool,
    /// Bytes that were not UTF-8 were replaced with U+FFFD.
    pub lossy: bool,
}

/// The last `max` bytes of a file (however long it is, or grows while it
/// is read), decoded lossily; `None` when it cannot be opened.
pub fn read_text_tail(path: &std::path::Path, max: usize) -> Option<TextTail> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = open_regular(path).ok()??;
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(max as u64)));
    let mut buf = Vec::with_capacity(max.min(len as usize));
    let _ = f.take(max as u64).read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf);
    let lossy = matches!(text, std::borrow::Cow::Owned(_));
    Some(TextTail {
        text: text.into_owned(),
        cut: len > max as u64,
        lossy,
    })
}

/// The process groups of the phases a worker runs now, kept in a file that
/// a watchdog outside the worker reads: when the worker dies (SIGKILL, OOM
/// killer), the watchdog kills those groups within half a second, so no
/// phase of a dead worker goes on next to its re-run on another machine.
pub struct PhaseGroups {
    file: PathBuf,
    groups: std::sync::Mutex<std::collections::BTreeSet<u32>>,
}

impl PhaseGroups {
    /// Starts the watchdog of this process (a tiny `sh` in its own
    /// session, stdio closed). `BATON_TEST_NO_WATCHDOG` skips it, for the
    /// tests of what happens when even the watchdog is gone.
    pub fn start() -> std::io::Result<PhaseGroups> {
        let me = std::process::id();
        let file = std::env::temp_dir().join(format!(
            "baton-worker-{me}-{}.groups",
            crate::host::process_start_time(me).unwrap_or(0)
        ));
        std::fs::write(&file, "")?;
        if std::env::var_os("BATON_TEST_NO_WATCHDOG").is_none() {
            use std::os::unix::process::CommandExt;
            use std::process::{Command, Stdio};
            Command::new("sh")
                .arg("-c")
                .arg(
                    "while kill -0 \"$1\" 2>/dev/null; do sleep 0.5; done; \
                     if [ -f \"$2\" ]; then while read -r g; do kill -KILL -\"$g\" 2>/dev/null; done < \"$2\"; rm -f \"$2\"; fi",
                )
                .arg("baton-watchdog")
                .arg(me.to_string())
                .arg(&file)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .process_group(0)
                .spawn()?;
        }
        Ok(PhaseGroups {
            file,
            groups: Default::default(),
        })
    }

    pub fn add(&self, pgid: u32) {
        self.update(|g| {
            g.insert(pgid);
        });
    }

    pub fn remove(&self, pgid: u32) {
        self.update(|g| {
            g.remove(&pgid);
        });
    }

    fn update(&self, f: impl FnOnce(&mut std::collections::BTreeSet<u32>)) {
        let mut g = self.groups.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut g);
        let text: String = g.iter().map(|p| format!("{p}\n")).collect();
        let tmp = self.file.with_extension("tmp");
        if std::fs::write(&tmp, text).is_ok() {
            let _ = std::fs::rename(&tmp, &self.file);
        }
    }
}

impl Drop for PhaseGroups {
    /// A worker that stops normally has no phase left: the watchdog finds
    /// no file and ends.
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(dir: &std::path::Path, script: &str) -> Spec {
        Spec {
            program: "sh".into(),
            args: vec!["-c".into(), script.into()],
            env: vec![],
            cwd: dir.to_path_buf(),
            stdout: dir.join("out"),
            stderr: dir.join("err"),
        }
    }

    /// Polls `f` every 10 ms until it returns `Some`, or panics after `secs`.
    fn wait_for<T>(what: &str, secs: u64, mut f: impl FnMut() -> Option<T>) -> T {
        let until = Instant::now() + Duration::from_secs(secs);
        loop {
            if let Some(v) = f() {
                return v;
            }
            assert!(Instant::now() < until, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Whether `pid` is gone: no such process, or a zombie nobody reaped.
    fn gone(pid: u32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(stat) => {
                let state = stat
                    .rfind(')')
                    .and_then(|i| stat[i + 1..].split_whitespace().next());
                matches!(state, Some("Z") | Some("X") | None)
            }
        }
    }

    /// Waits (at most 5 s) for `pid` to be gone; panics naming `what`.
    fn wait_gone(pid: u32, what: &str) {
        wait_for(&format!("{what} (pid {pid}) to be gone"), 5, || {
            gone(pid).then_some(())
        });
    }

    #[test]
    fn timeout_kills_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        // The shell starts a grandchild that would outlive a plain kill. It
        // writes the pid to a temporary name and renames it, so the file
        // is never seen half written.
        let mut r = spawn(&spec(
            dir.path(),
            "sleep 30 & echo $! > child.tmp; mv child.tmp child; wait",
        ))
        .unwrap();
        r.release();
        let pgid = r.pid;
        // The timeout counts from `wait`, so wait for the grandchild first:
        // on a loaded machine the shell may take a while to get there.
        let child: u32 = wait_for("the grandchild's pid", 30, || {
            std::fs::read_to_string(dir.path().join("child"))
                .ok()?
                .trim()
                .parse()
                .ok()
        });
        assert!(!gone(child), "the grandchild should be running");
        let started = Instant::now();
        let w = r.wait(Some(Duration::from_secs(2)), &mut || None);
        assert!(matches!(w, Waited::TimedOut), "{w:?}");
        assert!(
            started.elapsed() >= Duration::from_secs(2),
            "returned before the timeout"
        );
        wait_gone(child, "the grandchild");
        wait_gone(pgid, "the group leader");
        assert!(!group_alive(pgid));
    }

    #[test]
    fn exit_status_and_output_files() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = spawn(&spec(dir.path(), "echo hello; echo oops >&2; exit 3")).unwrap();
        r.release();
        match r.wait(None, &mut || None) {
            Waited::Exited(s) => assert_eq!(describe(&s), "exit status 3"),
            other => panic!("{other:?}"),
        }
        assert_eq!(read_tail(&dir.path().join("out"), 100), "hello\n");
        assert_eq!(read_tail(&dir.path().join("err"), 100), "oops\n");
    }

    /// Runs `s` to its end; its exit code and stdout.
    fn run(s: &Spec) -> (Option<i32>, String) {
        let mut r = spawn(s).unwrap();
        r.release();
        match r.wait(Some(Duration::from_secs(20)), &mut || None) {
            Waited::Exited(st) => (st.code(), read_tail(&s.stdout, 10_000)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_run_script_gets_what_sh_c_would_give_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = spec(
            dir.path(),
            r#"echo "args $# 0=$0"; pwd; echo "env $BATON_X"
               read -r line || echo "stdin empty"
               [ "$(ps -o sid= -p $$ | tr -d ' ')" = "$$" ] && echo "own session"
               grep '^SigIgn' /proc/$$/status
               exit 7"#,
        );
        s.env = vec![
            ("BATON_X".into(), "first".into()),
            ("BATON_X".into(), "x y".into()),
        ];
        let (code, out) = run(&s);
        assert_eq!(code, Some(7), "{out}");
        let canon = std::fs::canonicalize(dir.path()).unwrap();
        let (said, masks) = out.split_at(out.find("SigIgn").expect("ignored signals"));
        assert_eq!(
            said,
            format!(
                "args 0 0=sh\n{}\nenv x y\nstdin empty\nown session\n",
                canon.display()
            )
        );
        // None of the standard signals ignored (baton ignores SIGPIPE;
        // glibc leaves its own two, 32 and 33, ignored in any child it
        // spawns).
        let ignored = masks.split_whitespace().nth(1).unwrap();
        let ignored = u64::from_str_radix(ignored, 16).unwrap();
        assert_eq!(ignored & 0x7fff_ffff, 0, "{masks}");
        // A syntax error fails as under `sh -c`, before anything runs.
        let (code, out) = run(&spec(dir.path(), "echo ran; if then"));
        assert_eq!((code, out.as_str()), (Some(2), ""));
    }

    #[test]
    fn another_program_gets_its_arguments_as_they_are() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = spec(dir.path(), "");
        s.program = "printf".into();
        s.args = vec!["<%s>".into(), "a b".into(), "$HOME".into(), "".into()];
        assert_eq!(run(&s), (Some(0), "<a b><$HOME><>".to_string()));
    }

    #[test]
    fn the_program_waits_at_the_gate_and_never_runs_if_baton_dies() {
        let dir = tempfile::tempdir().unwrap();
        let r = spawn(&spec(dir.path(), "touch ran")).unwrap();
        let pid = r.pid;
        std::thread::sleep(Duration::from_millis(200));
        assert!(
            !dir.path().join("ran").exists(),
            "ran before the gate opened"
        );
        drop(r); // baton "dies": the pipe closes
        let until = Instant::now() + Duration::from_secs(5);
        while crate::host::process_start_time(pid).is_some() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!dir.path().join("ran").exists(), "ran without baton");
    }

    #[test]
    fn missing_programs_fail_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut missing = spec(dir.path(), "");
        missing.program = "no-such-program-xyz".into();
        let err = spawn(&missing).err().expect("spawned a missing program");
        assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    }

    #[test]
    fn stop_kills() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = spawn(&spec(dir.path(), "sleep 30")).unwrap();
        r.release();
        let pid = r.pid;
        let w = r.wait(None, &mut || Some(Stop::Cancelled));
        assert!(matches!(w, Waited::Stopped(Stop::Cancelled)), "{w:?}");
        // `wait` returns only once the group is dead (or SIGKILLed).
        wait_gone(pid, "the stopped process");
        assert!(!group_alive(pid), "the stopped group lives on");
    }
}
