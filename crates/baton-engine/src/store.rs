//! Which store a project uses: the SQLite file `.baton/baton.db` by default,
//! PostgreSQL when `BATON_DATABASE_URL` or `store` in config.toml names one.

use crate::error::{Error, Result};
use crate::project::Project;
use baton_store::{PgStore, SqliteStore, Store, Synchronous};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How long an operation keeps reconnecting to a PostgreSQL server that went
/// away before it gives up (a restart takes seconds).
pub const RECONNECT_FOR: Duration = Duration::from_secs(120);

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    Sqlite { path: PathBuf, sync: Synchronous },
    Postgres { url: String },
}

impl Location {
    /// The project's store: `BATON_DATABASE_URL`, else `store` in
    /// config.toml, else `.baton/baton.db`.
    pub fn of(project: &Project) -> Result<Location> {
        if let Ok(url) = std::env::var("BATON_DATABASE_URL")
            && !url.trim().is_empty()
        {
            return Location::postgres(url.trim(), "BATON_DATABASE_URL");
        }
        if let Some(url) = &project.config.store.url {
            return Location::postgres(url, "store in .baton/config.toml");
        }
        Ok(Location::Sqlite {
            path: project.db_path(),
            sync: project.config.synchronous()?,
        })
    }

    /// A `--to` target: a PostgreSQL URL, or a path to an SQLite file.
    pub fn parse(target: &str, project: &Project) -> Result<Location> {
        if target.contains("://") {
            return Location::postgres(target, "--to");
        }
        let path = std::path::absolute(target)?;
        Ok(Location::Sqlite {
            path,
            sync: project.config.synchronous()?,
        })
    }

    fn postgres(url: &str, from: &str) -> Result<Location> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Ok(Location::Postgres { url: url.into() })
        } else {
            Err(
                Error::bad_input(format!("{from}: {:?} is not a PostgreSQL URL", redact(url)))
                    .hint("write it as postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE"),
            )
        }
    }

    /// Opens (creating and migrating if needed) the store.
    pub fn open(&self) -> Result<Arc<dyn Store>> {
        Ok(match self {
            Location::Sqlite { path, sync } => Arc::new(SqliteStore::open(path, *sync)?),
            Location::Postgres { url } => Arc::new(PgStore::connect(url, RECONNECT_FOR)?),
        })
    }

    /// Whether two locations are the same store (paths compared after
    /// resolving `..` and links).
    pub fn same_as(&self, other: &Location) -> bool {
        match (self, other) {
            (Location::Sqlite { path: a, .. }, Location::Sqlite { path: b, .. }) => {
                let canon = |p: &std::path::Path| {
                    let parent = p.parent().and_then(|d| std::fs::canonicalize(d).ok());
                    parent.map(|d| d.join(p.file_name().unwrap_or_default()))
                };
                a == b || (canon(a).is_some() && canon(a) == canon(b))
            }
            (a, b) => a == b,
        }
    }

    /// For messages: the file, or the URL without its password.
    pub fn describe(&self) -> String {
        match self {
            Location::Sqlite { path, .. } => path.display().to_string(),
            Location::Postgres { url } => redact(url),
        }
    }

    pub fn is_postgres(&self) -> bool {
        matches!(self, Location::Postgres { .. })
    }
}

/// What `baton store copy` did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CopyReport {
    pub tasks: usize,
    /// Tasks the target already held, identical (a copy run again).
    pub already_there: usize,
    pub events: u64,
    pub definitions: usize,
    /// Agent instances and their journal's records.
    pub instances: usize,
    pub instance_events: u64,
    /// Webhook deliveries (so a redelivery is still recognised),
    /// repositories' progress records, tasks' stage records, plays and
    /// workspace records.
    pub deliveries: usize,
    pub progress: usize,
    pub task_stages: usize,
    pub plays: usize,
    pub workspaces: usize,
    /// Teams (their journal, mailbox and acknowledgements; a team the
    /// target has already is left as it is).
    pub teams: usize,
    /// Inbox items with their answers, a person's comments on tasks' and
    /// instances' work (with where they reached the agent), and linked
    /// tasks (with how they started or ended).
    pub inbox_items: usize,
    pub comments: usize,
    pub links: usize,
}

/// Copies the records kept beside the tasks: deliveries (those the target
/// has are left as they are), repositories' progress records, tasks'
/// stage records, plays and workspace records (the source's win).
fn copy_records(from: &dyn Store, to: &dyn Store, report: &mut CopyReport) -> Result<()> {
    let unsettled = from.unsettled_deliveries()?;
    let mut deliveries: Vec<baton_store::NewDelivery> = from
        .deliveries(usize::MAX)?
        .into_iter()
        .filter(|d| d.settled_at.is_some())
        .map(|d| baton_store::NewDelivery {
            settled: Some(baton_store::Settlement {
                at: d.settled_at.expect("filtered"),
                decision: d.decision,
                why: d.why,
                tasks: d.tasks,
            }),
            id: d.id,
            received_at: d.received_at,
            event: d.event,
            action: d.action,
            repository: d.repository,
            payload: String::new(),
            essentials: None,
            body: None,
        })
        .chain(unsettled)
        .collect();
    deliveries.sort_by_key(|d| d.received_at);
    for chunk in deliveries.chunks(500) {
        to.record_deliveries(chunk)?;
    }
    report.deliveries = deliveries.len();
    let progress = from.progress(None)?;
    for p in &progress {
        to.put_progress(p)?;
    }
    report.progress = progress.len();
    // After the repositories' records, which write their tasks' too: each
    // task's own record as the source has it.
    let stages = from.task_stages(None)?;
    for p in &stages {
        to.put_task_stage(p)?;
    }
    report.task_stages = stages.len();
    let plays = from.plays()?;
    for p in &plays {
        to.put_play(p)?;
    }
    report.plays = plays.len();
    let workspaces = from.workspaces()?;
    for w in &workspaces {
        to.put_workspace(w)?;
    }
    report.workspaces = workspaces.len();
    for t in from.teams()? {
        let id = t.id.to_string();
        if to.team(&id)?.is_some() {
            continue;
        }
        let records = from.team_records(&id, 0, usize::MAX)?;
        let rebuilt = baton_core::team::replay(&t.id, &records).ok_or_else(|| {
            Error::op(format!(
                "team {id}'s journal does not start with its creation"
            ))
        })?;
        to.create_team(&rebuilt, &records)?;
        let messages = from.messages(
            &id,
            &baton_store::MessageQuery {
                limit: usize::MAX >> 1,
                ..Default::default()
            },
        )?;
        to.import_messages(&id, &messages)?;
        report.teams += 1;
    }
    copy_people(from, to, report)
}

/// Copies what people and agents add beside the tasks: the inbox items
/// and their answers, the comments on tasks' and instances' work and
/// their deliveries, and the linked tasks and their starts. What the
/// target has already is left as it is (a copy run again), and then the
/// target must show the same as the source.
fn copy_people(from: &dyn Store, to: &dyn Store, report: &mut CopyReport) -> Result<()> {
    let items = from.inbox_items(false)?;
    for i in &items {
        let open = baton_core::inbox::InboxItem {
            answer: None,
            ..i.clone()
        };
        to.raise_item(&open)?;
        if let Some(a) = &i.answer {
            to.answer_item(&i.id, a)?;
        }
    }
    report.inbox_items = items.len();
    let targets: Vec<String> = from
        .list()?
        .iter()
        .map(|t| baton_core::comment::task_target(t.id.as_str()))
        .chain(
            from.instances()?
                .by_id
                .keys()
                .map(|i| baton_core::comment::instance_target(i.as_str())),
        )
        .collect();
    for target in &targets {
        let there: std::collections::HashSet<String> =
            to.comments(target)?.into_iter().map(|c| c.id).collect();
        for c in from.comments(target)? {
            report.comments += 1;
            if there.contains(&c.id) {
                continue;
            }
            to.add_comment(&baton_core::comment::Comment {
                delivered: None,
                ..c.clone()
            })?;
            if let Some(d) = &c.delivered {
                to.deliver_comments(target, std::slice::from_ref(&c.id), d)?;
            }
        }
        let json = |s: &dyn Store| serde_json::to_value(s.comments(target).ok()?).ok();
        if json(from) != json(to) {
            return Err(Error::bad_input(format!(
                "the comments on {target} differ in the target after the copy"
            ))
            .hint("copy into an empty database"));
        }
    }
    let links = from.links(false)?;
    for l in &links {
        to.add_link(&baton_core::link::Link {
            started: None,
            ..l.clone()
        })?;
        if let Some(s) = &l.started {
            to.start_link(&l.id, s)?;
        }
    }
    report.links = links.len();
    let same = |a: &dyn Store, b: &dyn Store| -> Result<bool> {
        Ok(serde_json::to_value(a.inbox_items(false)?).ok()
            == serde_json::to_value(b.inbox_items(false)?).ok()
            && serde_json::to_value(a.links(false)?).ok()
                == serde_json::to_value(b.links(false)?).ok())
    };
    if !same(from, to)? {
        return Err(Error::bad_input(
            "the target's inbox or linked tasks differ from the source's after the copy: it held others before",
        )
        .hint("copy into an empty database"));
    }
    Ok(())
}

/// The whole instances' journal of a store, in order.
pub(crate) fn all_instance_events(store: &dyn Store) -> Result<Vec<baton_core::instance::Record>> {
    let mut out: Vec<baton_core::instance::Record> = Vec::new();
    loop {
        let after = out.last().map_or(0, |r| r.seq);
        let page = store.instance_events(after, 10_000)?;
        if page.is_empty() {
            return Ok(out);
        }
        out.extend(page);
    }
}

/// Copies the agent instances (their journal and rows) into an empty
/// target, or finds them there already (a copy run again), then checks
/// that the target's journal and rows equal the source's.
fn copy_instances(from: &dyn Store, to: &dyn Store, report: &mut CopyReport) -> Result<()> {
    let records = all_instance_events(from)?;
    let source = from.instances()?;
    let there = all_instance_events(to)?;
    let json = |r: &[baton_core::instance::Record]| serde_json::to_value(r).ok();
    if there.is_empty() && !records.is_empty() {
        let all = baton_core::instance::replay(&records);
        let rows: Vec<&baton_core::instance::Instance> = all.by_id.values().collect();
        to.commit_instances(0, &records, &rows)?;
    } else if json(&there) != json(&records) {
        return Err(Error::bad_input(format!(
            "the target already holds a different journal of agent instances ({} record(s)); the tasks were copied",
            there.len()
        ))
        .hint("copy into an empty database"));
    }
    let copied = to.instances()?;
    if copied != source || json(&all_instance_events(to)?) != json(&records) {
        return Err(Error::op(
            "the agent instances differ after the copy: the target store lost or changed data",
        )
        .hint("do not switch to the target; report this as a bug"));
    }
    report.instances = source.by_id.len();
    report.instance_events = records.len() as u64;
    Ok(())
}

/// Every journal event of a task, in order.
fn all_events(store: &dyn Store, id: &baton_core::TaskId) -> Result<Vec<baton_core::EventRecord>> {
    let mut out: Vec<baton_core::EventRecord> = Vec::new();
    loop {
        let after = out.last().map_or(0, |r| r.seq);
        let page = store.events(id, after, 10_000)?;
        if page.is_empty() {
            return Ok(out);
        }
        out.extend(page);
    }
}

/// Copies a project's whole history from one store to another and checks,
/// task by task, that the target's journal and projection equal the
/// source's. Each task is copied in one transaction; a task the target
/// already holds identically is skipped (so an interrupted copy can be run
/// again), and one it holds differently stops the copy before it is touched.
pub fn copy(from: &dyn Store, to: &dyn Store) -> Result<CopyReport> {
    let mut report = CopyReport {
        tasks: 0,
        already_there: 0,
        events: 0,
        definitions: 0,
        instances: 0,
        instance_events: 0,
        deliveries: 0,
        progress: 0,
        task_stages: 0,
        plays: 0,
        workspaces: 0,
        teams: 0,
        inbox_items: 0,
        comments: 0,
        links: 0,
    };
    let defs = from.definitions()?;
    for d in &defs {
        to.put_definition(d)?;
    }
    report.definitions = defs.len();
    let same = |a: &baton_store::TaskSnapshot,
                ae: &[baton_core::EventRecord],
                b: &baton_store::TaskSnapshot,
                be: &[baton_core::EventRecord]| {
        serde_json::to_value(&a.state).ok() == serde_json::to_value(&b.state).ok()
            && a.queued == b.queued
            && serde_json::to_value(ae).ok() == serde_json::to_value(be).ok()
    };
    for t in from.list()? {
        // Read projection and journal until they agree (a live runner may
        // commit in between).
        let (snap, events) = loop {
            let Some(snap) = from.load(&t.id)? else {
                break (None, Vec::new());
            };
            let events = all_events(from, &t.id)?;
            if events.last().map_or(0, |r| r.seq) == snap.state.last_seq {
                break (Some(snap), events);
            }
        };
        let Some(snap) = snap else { continue };
        if let Some(there) = to.load(&t.id)? {
            if same(&snap, &events, &there, &all_events(to, &t.id)?) {
                report.already_there += 1;
                report.tasks += 1;
                report.events += events.len() as u64;
                continue;
            }
            return Err(Error::bad_input(format!(
                "the target already holds a different task {}; {} task(s) were copied before it",
                t.id, report.tasks
            ))
            .hint("copy into an empty database (tasks copied before stay there; running the same copy again skips them)"));
        }
        to.import_task(&snap, &events)?;
        let copied = to
            .load(&t.id)?
            .ok_or_else(|| Error::op(format!("task {} is missing after the copy", t.id)))?;
        if !same(&snap, &events, &copied, &all_events(to, &t.id)?) {
            return Err(Error::op(format!(
                "task {} differs after the copy: the target store lost or changed data",
                t.id
            ))
            .hint("do not switch to the target; report this as a bug"));
        }
        report.tasks += 1;
        report.events += events.len() as u64;
        crate::crash_point::at("task-copied", t.id.as_str());
    }
    copy_instances(from, to, &mut report)?;
    copy_records(from, to, &mut report)?;
    Ok(report)
}

/// A URL with its password replaced by `***`.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (auth, host) = match rest.split_once('@') {
        Some(parts) => parts,
        None => return url.to_string(),
    };
    match auth.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn passwords_never_reach_messages() {
        assert_eq!(
            redact("postgres://bob:s3cret@db.example:5432/baton"),
            "postgres://bob:***@db.example:5432/baton"
        );
        assert_eq!(
            redact("postgres://bob@db.example/baton"),
            "postgres://bob@db.example/baton"
        );
    }
}
