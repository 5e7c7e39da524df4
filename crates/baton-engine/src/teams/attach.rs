//! The lead re-attaching (`baton team resume`) and what it is shown, the
//! read-only part of which is `baton team probe`: the team's status, its
//! lead, each member's liveness by the store's clock (and any clock skew;
//! the lead's `timed_out` past `[teams] lead_timeout` or in zombie mode),
//! the tasks by status, whether the files the team took as facts changed,
//! the last messages, and when the teammates checkpoint next. Nothing here
//! replays the journal: the projection, the presences and the newest
//! messages are read, so a team with a long history attaches as fast as a
//! new one.

use super::Teams;
use crate::error::{Error, Result};
use baton_core::Timestamp;
use baton_core::team::{self, Input, Lead, Liveness, Message, Presence, Team, TeamStatus};
use baton_store::MessageQuery;
use serde::Serialize;

/// How many of the newest messages a probe shows.
const LAST_MESSAGES: usize = 5;
/// Unread messages are counted up to this many.
const UNREAD_COUNTED: u64 = 1000;

/// A member (teammate or lead) as a probe sees it.
#[derive(Debug, Clone, Serialize)]
pub struct MemberView {
    pub name: String,
    pub role: String,
    pub agent: Option<String>,
    pub liveness: Liveness,
    pub last_seen: Option<Timestamp>,
    /// Milliseconds since its last heartbeat reached the store.
    pub silent_ms: Option<i64>,
    pub heartbeat_seq: Option<u64>,
    /// Its clock's distance from the store's (positive: ahead), when past
    /// the threshold.
    pub clock_skew_ms: Option<i64>,
    pub current_task: Option<String>,
    /// Its current task's latest checkpoint.
    pub checkpoint: Option<team::Checkpoint>,
    pub context_usage_percent: Option<u8>,
}

/// What a probe finds.
#[derive(Debug, Clone, Serialize)]
pub struct Probe {
    pub team: Team,
    /// The store's time of the probe.
    pub now: Timestamp,
    pub lead: MemberView,
    pub teammates: Vec<MemberView>,
    pub tasks_by_status: std::collections::BTreeMap<&'static str, usize>,
    /// Fact files whose content is not what the team recorded (`None`: the
    /// file is gone).
    pub facts_changed: Vec<(String, Option<String>)>,
    pub last_messages: Vec<Message>,
    pub messages: u64,
    /// Messages to the lead it has not acknowledged (counted up to 1,000).
    pub unread_for_lead: u64,
    /// There are more than `unread_for_lead`.
    pub unread_for_lead_more: bool,
    pub last_activity: Timestamp,
    /// When the teammates' next checkpoint is due.
    pub next_checkpoint: Option<Timestamp>,
}

/// What `baton team resume` did.
#[derive(Debug, Clone, Serialize)]
pub struct Attached {
    /// `same` (the lead's own session: the fast path), `attached` (no lead
    /// was attached) or `replaced` (a lead silent too long).
    pub how: &'static str,
    pub replaced: Option<String>,
    /// When the lead's timeout had been noticed (zombie mode), if it was.
    pub timeout_detected_at: Option<Timestamp>,
    pub probe: Probe,
}

impl Teams<'_> {
    /// `baton team probe`: reads, changes nothing.
    pub fn probe(&self, id: &str) -> Result<Probe> {
        let t = self.get(id)?;
        let now = self.now()?;
        let presences = self.eng.store.presences(id)?;
        self.probe_of(t, now, &presences)
    }

    fn probe_of(&self, t: Team, now: Timestamp, presences: &[Presence]) -> Result<Probe> {
        let th = &self.settings.thresholds;
        let find = |name: &str| presences.iter().find(|p| p.name == name);
        let member =
            |name: &str, role: &str, agent: Option<String>, current: Option<String>, usage| {
                let p = find(name);
                MemberView {
                    name: name.to_string(),
                    role: role.to_string(),
                    agent,
                    liveness: team::liveness(p, now, th),
                    last_seen: p.map(|p| p.received_at),
                    silent_ms: p.map(|p| now.millis() - p.received_at.millis()),
                    heartbeat_seq: p.map(|p| p.seq),
                    clock_skew_ms: p.and_then(|p| team::skew_ms(p, th)),
                    checkpoint: current
                        .as_deref()
                        .and_then(|c| t.task(c))
                        .and_then(|x| x.checkpoint.clone()),
                    current_task: current,
                    context_usage_percent: usage,
                }
            };
        let mut lead = member(team::LEAD, "lead", None, None, None);
        // The lead goes by its own, shorter timeout, and is never online in
        // zombie mode.
        lead.liveness = team::lead_liveness(
            find(team::LEAD),
            now,
            th,
            t.lead_timeout_detected_at.is_some(),
        );
        let teammates: Vec<MemberView> = t
            .teammates
            .values()
            .map(|m| {
                member(
                    &m.name,
                    m.role.as_str(),
                    m.agent.clone(),
                    m.current_task.clone(),
                    m.context_usage_percent,
                )
            })
            .collect();
        let facts_changed = t
            .facts
            .iter()
            .filter_map(|(f, sum)| {
                let now_sum = super::sha256_of(&self.eng.project.root.join(f));
                (now_sum.as_deref() != Some(sum.as_str())).then(|| (f.clone(), now_sum))
            })
            .collect();
        let last_messages = self.eng.store.messages(
            t.id.as_str(),
            &MessageQuery {
                limit: LAST_MESSAGES,
                newest: true,
                ..Default::default()
            },
        )?;
        let unread = self
            .eng
            .store
            .unread_count(t.id.as_str(), team::LEAD, UNREAD_COUNTED + 1)?;
        let last_activity = [Some(t.updated_at)]
            .into_iter()
            .chain(last_messages.last().map(|m| Some(Timestamp(m.ts_ms))))
            .chain(presences.iter().map(|p| Some(p.received_at)))
            .flatten()
            .max()
            .unwrap_or(t.updated_at);
        let next_checkpoint = t
            .tasks
            .iter()
            .filter(|x| x.status == team::TaskStatus::InProgress)
            .map(|x| {
                x.checkpoint
                    .as_ref()
                    .map_or(x.started_at.unwrap_or(x.updated_at), |c| c.last_progress_at)
                    .plus_millis(self.settings.checkpoint_every_ms)
            })
            .min();
        Ok(Probe {
            tasks_by_status: t.task_counts(),
            messages: self.eng.store.message_count(t.id.as_str())?,
            team: t,
            now,
            lead,
            teammates,
            facts_changed,
            last_messages,
            unread_for_lead: unread.min(UNREAD_COUNTED),
            unread_for_lead_more: unread > UNREAD_COUNTED,
            last_activity,
            next_checkpoint,
        })
    }

    /// `baton team resume`: the lead (re-)attaches. Its own session
    /// attaches at once; another lead is refused while the attached one
    /// was seen within `[teams] lead_replace`; a completed team is
    /// refused. Then the probe.
    pub fn resume(&self, id: &str, session: Option<String>) -> Result<Attached> {
        let before = self.get(id)?;
        if before.status == TeamStatus::Completed {
            return Err(
                Error::bad_input(format!("team {id} is completed and read-only"))
                    .hint(format!("read what it did with `baton team review {id}`")),
            );
        }
        let session = session.unwrap_or_else(super::default_session);
        let replace_after_ms = self.settings.thresholds.lead_replace_ms;
        let owner = self.eng.owner().describe();
        let (after, records) = self.step(id, |t, now| {
            // Seen: its last heartbeat, or its attaching (a lead that
            // attached a moment ago is live before its first heartbeat).
            let heard = self
                .eng
                .store
                .presences(t.id.as_str())?
                .into_iter()
                .find(|p| p.name == team::LEAD)
                .map(|p| p.received_at);
            let lead_seen = heard
                .into_iter()
                .chain(t.lead.as_ref().map(|l| l.attached_at))
                .max()
                .map(|at| now.millis() - at.millis());
            Ok(Input::Attach {
                lead: Lead {
                    session_id: session.clone(),
                    owner: owner.clone(),
                    attached_at: now,
                },
                lead_silent_ms: lead_seen,
                replace_after_ms,
            })
        })?;
        let replaced = records.iter().find_map(|r| match &r.event {
            team::Event::LeadAttached { replaced, .. } => replaced.clone(),
            _ => None,
        });
        let how = match (&before.lead, &replaced) {
            (_, Some(_)) => "replaced",
            (Some(l), None) if l.session_id == session => "same",
            _ => "attached",
        };
        self.eng
            .store
            .heartbeat(id, team::LEAD, None, Some(self.local_now()))?;
        let now = self.now()?;
        let presences = self.eng.store.presences(id)?;
        Ok(Attached {
            how,
            replaced,
            timeout_detected_at: before.lead_timeout_detected_at,
            probe: self.probe_of(after, now, &presences)?,
        })
    }
}
