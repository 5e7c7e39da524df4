//! Teams, with their IO: the pure rules (`baton_core::team`) applied to
//! the store, the store's clock and the project's files.
//!
//! Every change goes through [`Teams::step`]: load the team, decide,
//! commit at the journal position decided from, and decide again when
//! another process got there first (two leads attaching at once: one
//! wins, the other is refused as the rules say). Every operation of a
//! member is also its heartbeat, and a member's operation notices a lead
//! silent past `[teams] lead_timeout` and records it (zombie mode: the
//! teammates go on, their messages to the lead wait in the mailbox).
//!
//! What lives where: the lead re-attaching (`baton team resume`) and the
//! read-only probe in `teams/attach.rs`; the task list, checkpoints and
//! reassigning in `teams/work.rs`; the mailbox in `teams/mail.rs`;
//! zombie mode's choices in `teams/zombie.rs`; consolidation (merging the
//! teammates' branches) in `teams/consolidate.rs`; teammates baton starts
//! in `teams/start.rs`; the git copy in `teams/gitcopy.rs`.

mod attach;
mod consolidate;
mod gitcopy;
mod mail;
mod start;
mod work;
mod zombie;

pub use attach::{Attached, MemberView, Probe};
pub use consolidate::{Conflict, Consolidate, Consolidated};
pub use gitcopy::{BRANCH as COPY_BRANCH, Synced};
pub use start::teammate_prompt;
pub use work::CheckpointOptions;
pub use zombie::Resolved;

use crate::config::TeamSettings;
use crate::engine::Engine;
use crate::error::{Error, Result};
use baton_core::Timestamp;
use baton_core::team::{
    self, Input, Lead, NewTask, NewTeammate, Presence, Record, Team, TeamError, TeamId,
};
use std::collections::BTreeMap;

/// How many times a step decides again when other processes keep
/// committing first.
const STEP_TRIES: usize = 50;

impl From<TeamError> for Error {
    fn from(e: TeamError) -> Self {
        let kind = if e.transient {
            baton_core::ErrorKind::Operational
        } else {
            baton_core::ErrorKind::BadInput
        };
        Error::new(kind, e.message).hint(e.hint)
    }
}

/// The teams of one project.
pub struct Teams<'e> {
    eng: &'e Engine,
    settings: TeamSettings,
}

/// `baton team create`.
#[derive(Debug, Clone, Default)]
pub struct CreateOptions {
    pub id: String,
    pub teammates: Vec<NewTeammate>,
    pub tasks: Vec<NewTask>,
    /// Files whose content the team takes as facts (checked on resume).
    pub facts: Vec<String>,
    /// The lead's session (default: [`default_session`]).
    pub session: Option<String>,
}

/// The lead's session when none is given: `BATON_LEAD_SESSION`, else this
/// user on this host (so the same person re-attaching from another shell
/// is the same lead).
pub fn default_session() -> String {
    if let Ok(s) = std::env::var("BATON_LEAD_SESSION")
        && !s.is_empty()
    {
        return s;
    }
    let user = std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .unwrap_or_else(|_| "user".into());
    format!("{user}@{}", baton_sys::host::this_owner().host)
}

impl Engine {
    pub fn teams(&self) -> Result<Teams<'_>> {
        Ok(Teams {
            eng: self,
            settings: self.project.config.teams.settings()?,
        })
    }
}

impl Teams<'_> {
    pub fn settings(&self) -> &TeamSettings {
        &self.settings
    }

    /// This machine's clock, what a member says its time is (moved by the
    /// tests' `BATON_TEST_CLOCK_OFFSET_MS`, as the store's is).
    pub fn local_now(&self) -> Timestamp {
        self.eng
            .now()
            .plus_millis(baton_store::teams::test_offset_ms())
    }

    /// The store's time.
    pub fn now(&self) -> Result<Timestamp> {
        Ok(self.eng.store.store_now()?)
    }

    fn id(id: &str) -> Result<TeamId> {
        TeamId::parse(id).map_err(|e| {
            Error::bad_input(format!("{id:?} is not a team name: {}", e.reason))
                .hint("use letters, digits, '-', '_' and '.' (at most 64)")
        })
    }

    /// The team `id`, or "team not found".
    pub fn get(&self, id: &str) -> Result<Team> {
        self.eng.store.team(id)?.ok_or_else(|| {
            Error::bad_input(format!("team not found: {id}"))
                .hint("list the teams with `baton team ls`")
        })
    }

    pub fn list(&self) -> Result<Vec<Team>> {
        Ok(self.eng.store.teams()?)
    }

    /// Team `id`'s whole journal, oldest first.
    pub fn journal(&self, id: &str) -> Result<Vec<Record>> {
        Ok(self.eng.store.team_records(id, 0, usize::MAX)?)
    }

    /// How many messages team `id`'s mailbox holds (a change to sync).
    pub fn message_count(&self, id: &str) -> Result<u64> {
        Ok(self.eng.store.message_count(id)?)
    }

    /// Decides what `input` (made from the team as loaded and the store's
    /// time) causes and commits it; decides again when another process
    /// committed first. The team after it, and the records written.
    pub fn step(
        &self,
        id: &str,
        input: impl Fn(&Team, Timestamp) -> Result<Input>,
    ) -> Result<(Team, Vec<Record>)> {
        for _ in 0..STEP_TRIES {
            let team = self.get(id)?;
            let now = self.now()?;
            let events = team::decide(Some(&team), input(&team, now)?, now)?;
            if events.is_empty() {
                return Ok((team, Vec::new()));
            }
            let records: Vec<Record> = events
                .into_iter()
                .enumerate()
                .map(|(k, event)| Record {
                    seq: team.last_seq + 1 + k as u64,
                    ts: now,
                    event: self.eng.redacted(event),
                })
                .collect();
            let after = records
                .iter()
                .try_fold(team.clone(), |t, r| team::apply(Some(t), &team.id, r))
                .expect("a team stays a team");
            match self.eng.store.commit_team(team.last_seq, &after, &records) {
                Ok(()) => {
                    if let Some(last) = records.last() {
                        self.eng.crash_point("team-committed", &last.event.kind());
                    }
                    self.eng.team_changed(&after);
                    return Ok((after, records));
                }
                Err(baton_store::Error::TeamChanged { .. }) => {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(Error::busy(format!(
            "team {id} kept changing under this command ({STEP_TRIES} tries)"
        ))
        .hint("try again"))
    }

    /// `baton team create`: the team, its teammates and tasks, with this
    /// process as its lead.
    pub fn create(&self, opts: CreateOptions) -> Result<Team> {
        let id = Self::id(&opts.id)?;
        for m in &opts.teammates {
            if let Some(a) = &m.agent
                && !self.eng.project.config.agents.contains_key(a)
            {
                return Err(Error::bad_input(format!(
                    "teammate {}: agent {a:?} is not defined in .baton/config.toml",
                    m.name
                ))
                .hint(format!(
                    "add [agents.{a}] (docs/config.md), or leave the agent out and run {} yourself",
                    m.name
                )));
            }
        }
        let now = self.now()?;
        let facts = self.fact_sums(&opts.facts)?;
        let lead = Lead {
            session_id: opts.session.unwrap_or_else(default_session),
            owner: self.eng.owner().describe(),
            attached_at: now,
        };
        let events = team::decide(
            None,
            Input::Create {
                lead,
                teammates: opts.teammates,
                tasks: opts.tasks,
                facts,
            },
            now,
        )?;
        let records: Vec<Record> = events
            .into_iter()
            .enumerate()
            .map(|(k, event)| Record {
                seq: k as u64 + 1,
                ts: now,
                event,
            })
            .collect();
        let t = team::replay(&id, &records).expect("created");
        if !self.eng.store.create_team(&t, &records)? {
            return Err(
                Error::bad_input(format!("a team {id} already exists")).hint(format!(
                    "re-attach to it with `baton team resume {id}`, or pick another name"
                )),
            );
        }
        self.eng
            .store
            .heartbeat(id.as_str(), team::LEAD, None, Some(self.local_now()))?;
        self.eng.team_changed(&t);
        Ok(t)
    }

    /// `name`'s heartbeat (its sequence number and clock, when it says
    /// them), after which a lead silent too long is recorded as timed out.
    pub fn heartbeat(
        &self,
        id: &str,
        name: &str,
        seq: Option<u64>,
        sent_at: Option<Timestamp>,
    ) -> Result<Presence> {
        let t = self.get(id)?;
        if name != team::LEAD && !t.teammates.contains_key(name) {
            let names: Vec<&str> = t.teammates.keys().map(String::as_str).collect();
            return Err(
                Error::bad_input(format!("team {id} has no teammate {name:?}")).hint(format!(
                    "its teammates are: {} (and `lead`)",
                    names.join(", ")
                )),
            );
        }
        let p = self
            .eng
            .store
            .heartbeat(id, name, seq, sent_at.or(Some(self.local_now())))?;
        if name != team::LEAD {
            self.notice_lead_timeout(&t)?;
        }
        Ok(p)
    }

    /// Records a lead silent past `[teams] lead_timeout` (once).
    fn notice_lead_timeout(&self, t: &Team) -> Result<()> {
        if t.lead_timeout_detected_at.is_some()
            || !matches!(
                t.status,
                team::TeamStatus::Active | team::TeamStatus::Pending
            )
        {
            return Ok(());
        }
        let lead = self.presence(&t.id, team::LEAD)?;
        let now = self.now()?;
        // Silent since its last heartbeat here, or since the team came into
        // this store (`team import`): a lead never heard from in a store it
        // was just copied into is not silent yet, only unknown.
        let since = lead
            .as_ref()
            .map(|p| p.received_at)
            .into_iter()
            .chain(t.imported_at)
            .max();
        let silent = since.map(|at| now.millis() - at.millis());
        if silent.is_none_or(|s| s > self.settings.thresholds.lead_timeout_ms) {
            let last_seen = lead.map(|p| p.received_at);
            self.step(t.id.as_str(), |_, _| Ok(Input::LeadTimedOut { last_seen }))?;
        }
        Ok(())
    }

    fn presence(&self, id: &TeamId, name: &str) -> Result<Option<Presence>> {
        Ok(self
            .eng
            .store
            .presences(id.as_str())?
            .into_iter()
            .find(|p| p.name == name))
    }

    /// The SHA-256 of each fact file (relative to the project).
    fn fact_sums(&self, files: &[String]) -> Result<BTreeMap<String, String>> {
        files
            .iter()
            .map(|f| {
                let sum = sha256_of(&self.eng.project.root.join(f)).ok_or_else(|| {
                    Error::bad_input(format!("fact {f}: no such file in the project"))
                        .hint("name files relative to the project's folder")
                })?;
                Ok((f.clone(), sum))
            })
            .collect()
    }

    /// `baton team complete`: read-only from now on. Refused while tasks
    /// are open unless `force`; the team and the tasks left open.
    pub fn complete(&self, id: &str, by: &str, force: bool) -> Result<(Team, Vec<String>)> {
        self.touch(id, by)?;
        let (t, records) = self.step(id, |_, _| Ok(Input::Finish { force }))?;
        let open = records
            .iter()
            .find_map(|r| match &r.event {
                team::Event::Completed { open } => Some(open.clone()),
                _ => None,
            })
            .unwrap_or_default();
        Ok((t, open))
    }

    /// Counts an operation of `by` as its heartbeat.
    pub fn touch(&self, id: &str, by: &str) -> Result<()> {
        self.heartbeat(id, by, None, None).map(|_| ())
    }
}

/// A file's SHA-256, hex.
pub(crate) fn sha256_of(path: &std::path::Path) -> Option<String> {
    use sha2::Digest;
    let bytes = std::fs::read(path).ok()?;
    Some(
        sha2::Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
    )
}
