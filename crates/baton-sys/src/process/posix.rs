//! Starting a process with `posix_spawn(3)` in a new session.
//!
//! `std::process::Command` can put a child in a new session only through a
//! `pre_exec` hook, which makes it `fork` the whole of baton (page tables
//! copied, then copy-on-write faults in baton) instead of glibc's
//! `clone(CLONE_VM|CLONE_VFORK)`: about 0.7 ms more per phase on a 2-core
//! machine. glibc's `posix_spawn` does the session (`POSIX_SPAWN_SETSID`),
//! the folder (`addchdir_np`) and the descriptors itself, and reports a
//! failed `exec` as its own error.

use std::ffi::{CString, OsStr, OsString};
use std::io::{Error, ErrorKind, Result};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// A process to start: its program (a path, not looked up on PATH), its
/// arguments (`argv[0]` first), its whole environment, its folder and its
/// three standard descriptors.
pub(super) struct Start<'a> {
    pub program: &'a Path,
    pub argv: &'a [OsString],
    pub env: &'a [(OsString, OsString)],
    pub cwd: &'a Path,
    pub stdin: &'a OwnedFd,
    pub stdout: &'a OwnedFd,
    pub stderr: &'a OwnedFd,
}

fn c_string(s: &OsStr) -> Result<CString> {
    CString::new(s.as_bytes()).map_err(|_| {
        Error::new(
            ErrorKind::InvalidInput,
            format!("{} contains a NUL byte", s.to_string_lossy()),
        )
    })
}

/// A `posix_spawn` return value (an errno) as a result.
fn check(code: libc::c_int) -> Result<()> {
    if code == 0 {
        Ok(())
    } else {
        Err(Error::from_raw_os_error(code))
    }
}

/// Starts `s` in a new session (its own process group, no controlling
/// terminal), with every signal at its default action and none blocked.
/// Returns its pid once it has been executed.
#[expect(
    unsafe_code,
    reason = "posix_spawn(3) and its attribute and file-action objects are C APIs; every pointer passed lives until the call returns, and both objects are destroyed on every path"
)]
pub(super) fn spawn(s: &Start) -> Result<u32> {
    let program = c_string(s.program.as_os_str())?;
    let cwd = c_string(s.cwd.as_os_str())?;
    let argv: Vec<CString> = s.argv.iter().map(|a| c_string(a)).collect::<Result<_>>()?;
    let envp: Vec<CString> = s
        .env
        .iter()
        .map(|(k, v)| {
            let mut kv = k.clone();
            kv.push("=");
            kv.push(v);
            c_string(&kv)
        })
        .collect::<Result<_>>()?;
    let mut argv_p: Vec<*mut libc::c_char> = argv.iter().map(|a| a.as_ptr().cast_mut()).collect();
    argv_p.push(std::ptr::null_mut());
    let mut envp_p: Vec<*mut libc::c_char> = envp.iter().map(|e| e.as_ptr().cast_mut()).collect();
    envp_p.push(std::ptr::null_mut());

    // SAFETY: both objects are initialised before use and destroyed below;
    // the sets are plain values initialised by sigemptyset/sigfillset.
    unsafe {
        let mut attr: libc::posix_spawnattr_t = std::mem::zeroed();
        check(libc::posix_spawnattr_init(&mut attr))?;
        let mut actions: libc::posix_spawn_file_actions_t = std::mem::zeroed();
        if let Err(e) = check(libc::posix_spawn_file_actions_init(&mut actions)) {
            libc::posix_spawnattr_destroy(&mut attr);
            return Err(e);
        }
        let result = (|| {
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            let mut all: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            libc::sigdelset(&mut all, libc::SIGKILL);
            libc::sigdelset(&mut all, libc::SIGSTOP);
            check(libc::posix_spawnattr_setsigmask(&mut attr, &none))?;
            // Rust ignores SIGPIPE in baton; an ignored signal stays
            // ignored across exec unless reset.
            check(libc::posix_spawnattr_setsigdefault(&mut attr, &all))?;
            let flags = libc::POSIX_SPAWN_SETSID
                | libc::POSIX_SPAWN_SETSIGMASK as libc::c_short
                | libc::POSIX_SPAWN_SETSIGDEF as libc::c_short;
            check(libc::posix_spawnattr_setflags(&mut attr, flags))?;
            for (fd, to) in [(s.stdin, 0), (s.stdout, 1), (s.stderr, 2)] {
                check(libc::posix_spawn_file_actions_adddup2(
                    &mut actions,
                    fd.as_raw_fd(),
                    to,
                ))?;
            }
            check(libc::posix_spawn_file_actions_addchdir_np(
                &mut actions,
                cwd.as_ptr(),
            ))?;
            let mut pid: libc::pid_t = 0;
            check(libc::posix_spawn(
                &mut pid,
                program.as_ptr(),
                &actions,
                &attr,
                argv_p.as_ptr(),
                envp_p.as_ptr(),
            ))?;
            Ok(pid as u32)
        })();
        libc::posix_spawn_file_actions_destroy(&mut actions);
        libc::posix_spawnattr_destroy(&mut attr);
        result
    }
}

/// Waits for process `pid` (a child of this process) to end.
#[expect(unsafe_code, reason = "waitpid(2) with a pointer to a local status")]
pub(super) fn wait(pid: u32) -> Result<std::process::ExitStatus> {
    use std::os::unix::process::ExitStatusExt;
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: `status` is a valid, writable c_int for the whole call.
        let r = unsafe { libc::waitpid(pid as libc::pid_t, &mut status, 0) };
        if r == pid as libc::pid_t {
            return Ok(std::process::ExitStatus::from_raw(status));
        }
        let e = Error::last_os_error();
        if e.kind() != ErrorKind::Interrupted {
            return Err(e);
        }
    }
}
