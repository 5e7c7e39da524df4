//! Secrets baton makes: random bytes from the kernel (never a fallback to
//! the clock: without randomness no secret is made), the API token
//! `baton serve --new-token` keeps in `.baton/server.token` (created
//! readable by its owner only, and refused when others can read it), and
//! capability tokens for the agents baton starts.

use crate::error::{Error, Result};
use crate::project::Project;
use std::io::{Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::PathBuf;

/// 32 bytes from `/dev/urandom`.
pub fn random32() -> Result<[u8; 32]> {
    let mut b = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .map_err(|e| {
            Error::op(format!("cannot read random bytes from /dev/urandom: {e}"))
                .hint("baton makes no secret without the kernel's randomness")
        })?;
    Ok(b)
}

/// A new capability token (and its random source's errors).
pub fn new_capability() -> Result<String> {
    Ok(baton_core::token::capability_token(&random32()?))
}

pub fn token_file(project: &Project) -> PathBuf {
    project.baton_dir().join(crate::config::TOKEN_FILE)
}

/// The token `--new-token` saved, if there is one. A file others can read
/// is refused (as ssh refuses such a key), since the token opens the API.
pub fn saved_token(project: &Project) -> Result<Option<String>> {
    let path = token_file(project);
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::op(format!("cannot read {}: {e}", path.display()))),
    };
    if !meta.is_file() {
        return Err(
            Error::bad_input(format!("{} is not a regular file", path.display()))
                .hint("delete it and run `baton serve --new-token` again"),
        );
    }
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(Error::bad_input(format!(
            "{} can be read by other users (mode {:o})",
            path.display(),
            meta.permissions().mode() & 0o777
        ))
        .hint(format!(
            "run `chmod 600 {}`, or `baton serve --new-token` for a new one",
            path.display()
        )));
    }
    let text = fs_err::read_to_string(&path)?;
    Ok(Some(text.trim().to_string()).filter(|t| !t.is_empty()))
}

/// Makes a new API token and saves it in `.baton/server.token`, created
/// with mode 0600 and put in place by rename (an old token stops working).
pub fn write_new_token(project: &Project) -> Result<(String, PathBuf)> {
    let token: String = random32()?.iter().map(|b| format!("{b:02x}")).collect();
    let path = token_file(project);
    let tmp = path.with_extension("token.tmp");
    let _ = std::fs::remove_file(&tmp);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| Error::op(format!("cannot create {}: {e}", tmp.display())))?;
    f.write_all(format!("{token}\n").as_bytes())?;
    f.sync_all()?;
    fs_err::rename(&tmp, &path)?;
    keep_out_of_git(project)?;
    Ok((token, path))
}

/// Projects made before the token file existed: `.baton/.gitignore`
/// learns to ignore it, so no commit carries it.
fn keep_out_of_git(project: &Project) -> Result<()> {
    let ignore = project.baton_dir().join(".gitignore");
    let text = std::fs::read_to_string(&ignore).unwrap_or_default();
    if text.lines().any(|l| l.trim() == crate::config::TOKEN_FILE) {
        return Ok(());
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&ignore)?;
    let sep = if text.is_empty() || text.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    f.write_all(format!("{sep}{}\n", crate::config::TOKEN_FILE).as_bytes())?;
    Ok(())
}
