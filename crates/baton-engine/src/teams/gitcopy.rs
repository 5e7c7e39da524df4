//! The git-backed copy of a team (the seed's primary persistence in git):
//! `baton team sync` writes `.team-state/<team>/` to the branch
//! `baton-teams` through git's plumbing alone (no worktree or index of
//! yours is touched), so the team's state is auditable and travels with
//! the repository; `baton team import REV` rebuilds a team from it in a
//! store that does not have it (a remote's `baton-teams` will do, as a
//! fresh clone has it), recording the import in its journal.
//!
//! The copy: `metadata.json` (`schema_version` and the team as its journal
//! leaves it), `journal.jsonl` (every journal record, which rebuilds it
//! exactly), `mailbox.jsonl` (every message with who acknowledged it),
//! `teammates.json` (the teammates and their last heartbeats) and
//! `checkpoints/<task>.json` (each task's latest and last green
//! checkpoint). Schema 1 is the first; a copy with a newer schema is
//! refused, an older one would be upgraded by the rules listed in
//! docs/cli.md.

use super::Teams;
use crate::error::{Error, Result};
use baton_core::team::{self, Message, Record, SCHEMA_VERSION, Team, TeamId};
use baton_store::MessageQuery;
use serde::{Deserialize, Serialize};

/// The branch the copies are on.
pub const BRANCH: &str = "baton-teams";
/// The folder of the copies on it.
pub const FOLDER: &str = ".team-state";

/// What `team sync` wrote.
#[derive(Debug, Clone, Serialize)]
pub struct Synced {
    pub branch: String,
    pub commit: String,
    pub files: usize,
    pub messages: usize,
    pub records: usize,
}

#[derive(Serialize, Deserialize)]
struct Metadata {
    schema_version: u32,
    team: Team,
}

#[derive(Serialize, Deserialize)]
struct Members {
    teammates: Vec<team::Teammate>,
    presences: Vec<team::Presence>,
}

fn jsonl<T: Serialize>(items: &[T]) -> Vec<u8> {
    let mut out = Vec::new();
    for i in items {
        out.extend(serde_json::to_vec(i).expect("JSON"));
        out.push(b'\n');
    }
    out
}

impl Teams<'_> {
    fn repository(&self) -> Result<baton_sys::git::Git> {
        self.eng.git().cloned().ok_or_else(|| {
            Error::bad_input(
                "a team's copy is kept in git, but the project is not a git repository",
            )
            .hint("run `git init` and commit first")
        })
    }

    /// `baton team sync`: the team's copy on branch `baton-teams`.
    pub fn sync(&self, id: &str) -> Result<Synced> {
        let git = self.repository()?;
        let t = self.get(id)?;
        let records = self.eng.store.team_records(id, 0, usize::MAX)?;
        let messages = self.eng.store.messages(
            id,
            &MessageQuery {
                limit: usize::MAX >> 1,
                ..Default::default()
            },
        )?;
        let presences = self.eng.store.presences(id)?;
        let mut files: Vec<(String, Vec<u8>)> = vec![
            (
                "metadata.json".into(),
                serde_json::to_vec_pretty(&Metadata {
                    schema_version: SCHEMA_VERSION,
                    team: t.clone(),
                })
                .expect("JSON"),
            ),
            ("journal.jsonl".into(), jsonl(&records)),
            ("mailbox.jsonl".into(), jsonl(&messages)),
            (
                "teammates.json".into(),
                serde_json::to_vec_pretty(&Members {
                    teammates: t.teammates.values().cloned().collect(),
                    presences,
                })
                .expect("JSON"),
            ),
        ];
        for x in &t.tasks {
            if x.checkpoint.is_some() || x.last_green.is_some() {
                files.push((
                    format!("checkpoints/{}.json", x.id),
                    serde_json::to_vec_pretty(&serde_json::json!({
                        "task": x.id,
                        "checkpoint": x.checkpoint,
                        "last_green": x.last_green,
                    }))
                    .expect("JSON"),
                ));
            }
        }
        let commit = git
            .commit_files(
                BRANCH,
                &format!("{FOLDER}/{id}"),
                &files,
                &format!("team {id}: state at journal record {}", t.last_seq),
            )
            .map_err(|e| {
                Error::op(format!(
                    "cannot write team {id}'s copy to branch {BRANCH}: {e}"
                ))
            })?;
        Ok(Synced {
            branch: BRANCH.into(),
            commit,
            files: files.len(),
            messages: messages.len(),
            records: records.len(),
        })
    }

    /// `baton team import REV`: rebuilds the teams copied on `rev` (a
    /// branch or commit, else a remote's branch of that name, as a fresh
    /// clone or `git fetch origin baton-teams` leaves it; only `only` when
    /// given) in this store, which must not have them. The teams imported,
    /// and the revision they came from. Each one's journal records the
    /// import: its lead's timeout counts from then.
    pub fn import(&self, rev: &str, only: Option<&str>) -> Result<(Vec<String>, String)> {
        let git = self.repository()?;
        let Some(rev) = copy_rev(&git, rev) else {
            return Err(Error::bad_input(format!(
                "{rev:?} is not a branch or commit of this repository, nor a remote's branch"
            ))
            .hint(format!(
                "the copies are on branch {BRANCH}, written by `baton team sync NAME` and shared with `git push origin {BRANCH}`; `git fetch origin {BRANCH}` brings it here"
            )));
        };
        let rev = rev.as_str();
        let all = git
            .read_files(rev, FOLDER)
            .map_err(|e| Error::op(format!("cannot read {FOLDER} at {rev}: {e}")))?;
        let mut ids: Vec<String> = all
            .iter()
            .filter_map(|(p, _)| p.split_once('/').map(|(id, _)| id.to_string()))
            .collect();
        ids.sort();
        ids.dedup();
        if let Some(o) = only {
            ids.retain(|i| i == o);
        }
        if ids.is_empty() {
            return Err(Error::bad_input(format!(
                "{rev} holds no team copy{}",
                only.map(|o| format!(" of {o}")).unwrap_or_default()
            ))
            .hint(format!(
                "`baton team sync NAME` writes one to branch {BRANCH}"
            )));
        }
        let file = |id: &str, name: &str| -> Result<&[u8]> {
            all.iter()
                .find(|(p, _)| p == &format!("{id}/{name}"))
                .map(|(_, b)| b.as_slice())
                .ok_or_else(|| {
                    Error::bad_input(format!("the copy of team {id} at {rev} has no {name}"))
                        .hint("it is damaged: sync it again from a store that has the team")
                })
        };
        for id in &ids {
            if self.eng.store.team(id)?.is_some() {
                return Err(
                    Error::bad_input(format!("this store already has a team {id}"))
                        .hint("import into a store without it; nothing was imported"),
                );
            }
            let meta: serde_json::Value = serde_json::from_slice(file(id, "metadata.json")?)
                .map_err(|e| Error::bad_input(format!("team {id}'s metadata.json: {e}")))?;
            let version = meta["schema_version"].as_u64().ok_or_else(|| {
                Error::bad_input(format!("team {id}'s metadata.json has no schema_version"))
                    .hint("it is not a copy baton wrote")
            })?;
            if version > u64::from(SCHEMA_VERSION) {
                return Err(Error::bad_input(format!(
                    "team {id}'s copy was written by a newer baton (schema {version}; this baton knows up to {SCHEMA_VERSION})"
                ))
                .hint("import it with that newer baton; nothing was imported"));
            }
        }
        for id in &ids {
            self.import_one(
                id,
                rev,
                file(id, "journal.jsonl")?,
                file(id, "mailbox.jsonl")?,
            )?;
        }
        Ok((ids, rev.to_string()))
    }

    fn import_one(&self, id: &str, rev: &str, journal: &[u8], mailbox: &[u8]) -> Result<()> {
        let tid = TeamId::parse(id).map_err(|e| Error::bad_input(e.to_string()))?;
        let lines = |bytes: &[u8]| -> Vec<String> {
            String::from_utf8_lossy(bytes)
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(str::to_string)
                .collect()
        };
        let records: Vec<Record> = lines(journal)
            .iter()
            .map(|l| serde_json::from_str(l))
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| Error::bad_input(format!("team {id}'s journal.jsonl: {e}")))?;
        let t = team::replay(&tid, &records).ok_or_else(|| {
            Error::bad_input(format!(
                "team {id}'s journal.jsonl does not start with its creation"
            ))
        })?;
        if !self.eng.store.create_team(&t, &records)? {
            return Err(Error::bad_input(format!(
                "this store already has a team {id}"
            )));
        }
        let messages: Vec<Message> = lines(mailbox)
            .iter()
            .map(|l| serde_json::from_str(l))
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| Error::bad_input(format!("team {id}'s mailbox.jsonl: {e}")))?;
        self.eng.store.import_messages(id, &messages)?;
        if t.status != team::TeamStatus::Completed {
            self.step(id, |_, _| {
                Ok(team::Input::Imported {
                    from: rev.to_string(),
                })
            })?;
        }
        Ok(())
    }
}

/// `rev` if it names a commit here, else a remote's branch `rev` (origin's
/// first).
fn copy_rev(git: &baton_sys::git::Git, rev: &str) -> Option<String> {
    if git.resolve(rev).is_some() {
        return Some(rev.to_string());
    }
    let remote = git
        .run(
            &[
                "for-each-ref",
                "--format=%(refname)",
                &format!("refs/remotes/*/{rev}"),
            ],
            &[],
        )
        .ok()?;
    let mut found: Vec<&str> = remote
        .lines()
        .map(str::trim)
        .filter(|r| r.ends_with(&format!("/{rev}")))
        .collect();
    found.sort_by_key(|r| !r.starts_with("refs/remotes/origin/"));
    found
        .first()
        .and_then(|r| r.strip_prefix("refs/remotes/"))
        .map(str::to_string)
}
