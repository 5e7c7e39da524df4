//! Reading session logs: the list of `.baton/sessions/*.md` (what their
//! frontmatter says), one log by id or path, and a task's log rendered
//! from the store (for a task whose file is missing, and `doctor --fix`).
//! Before a list or a log is read, the logs no runner can bring up to
//! date are settled from the store: a CRASHED task's (its runner is dead),
//! and any task's that is missing or says another status than the task's.

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::render;
use baton_core::TaskId;
use baton_core::lease::{DisplayStatus, Liveness};
use baton_core::session_log::{self, LogStatus, SessionLog};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// One line of `baton session ls`.
#[derive(Debug, Clone, Serialize)]
pub struct SessionRow {
    pub session_id: String,
    pub title: String,
    pub status: String,
    pub workflow: Option<String>,
    pub started: Option<String>,
    pub ended: Option<String>,
    pub participants: Vec<String>,
    pub tokens_used: u64,
    pub resume_point: Option<String>,
    pub phases: Vec<String>,
    pub path: PathBuf,
}

impl SessionRow {
    pub fn of(log: &SessionLog, path: PathBuf) -> SessionRow {
        SessionRow {
            session_id: log.front.session_id.clone(),
            title: log.title.clone(),
            status: log.front.status.as_str().into(),
            workflow: log.front.workflow.clone(),
            started: log.front.started.clone(),
            ended: log.front.ended.clone(),
            participants: log.front.participants.clone(),
            tokens_used: log.front.tokens_used,
            resume_point: log.front.resume_point.clone(),
            phases: session_log::phases(log)
                .into_iter()
                .map(|p| p.name)
                .collect(),
            path,
        }
    }
}

/// Whether a task shown as `shown` needs its log rendered again from the
/// store, its log saying `said` (`None`: it has none): missing, or saying
/// another status than the task's (each status's one word: `LogStatus`'s
/// `From<DisplayStatus>`). A running task's log is its
/// runner's to write.
pub fn log_is_stale(shown: DisplayStatus, said: Option<&str>) -> bool {
    if shown == DisplayStatus::Running {
        return said.is_none();
    }
    said != Some(LogStatus::from(shown).as_str())
}

/// Reads and parses the log at `path`; an error names the file and line.
pub fn read_log(path: &Path) -> Result<SessionLog> {
    let text = fs_err::read_to_string(path).map_err(|e| {
        Error::bad_input(format!(
            "cannot read the session log {}: {e}",
            path.display()
        ))
        .hint("give the path of a session log, or a session id from `baton session ls`")
    })?;
    session_log::parse(&text).map_err(|e| {
        Error::bad_input(format!("{}:{}: {}", path.display(), e.line, e.message))
            .hint("fix that line of the log (its frontmatter is YAML between `---` lines)")
    })
}

impl Engine {
    /// Every log under `.baton/sessions`, newest first (running and
    /// crashed tasks' too, settled first); a file that does not read is
    /// reported, not fatal.
    pub fn sessions(&self) -> Result<Vec<SessionRow>> {
        let dir = self.project.sessions_dir();
        let mut rows = self.session_rows(&dir);
        let statuses: std::collections::HashMap<String, String> = rows
            .iter()
            .map(|r| (r.session_id.clone(), r.status.clone()))
            .collect();
        let settled = self.settle_session_logs(|id| statuses.get(id).cloned())?;
        if !settled.is_empty() {
            rows.retain(|r| !settled.contains(&r.session_id));
            for id in &settled {
                let path = dir.join(format!("{id}.md"));
                if let Ok(log) = read_log(&path) {
                    rows.push(SessionRow::of(&log, path));
                }
            }
        }
        rows.sort_by(|a, b| {
            b.started
                .cmp(&a.started)
                .then_with(|| a.session_id.cmp(&b.session_id))
        });
        Ok(rows)
    }

    fn session_rows(&self, dir: &Path) -> Vec<SessionRow> {
        let mut rows = Vec::new();
        let Ok(entries) = fs_err::read_dir(dir) else {
            return rows;
        };
        for e in entries.flatten() {
            let path = e.path();
            if path.extension().is_none_or(|x| x != "md") {
                continue;
            }
            match read_log(&path) {
                Ok(log) => rows.push(SessionRow::of(&log, path)),
                Err(e) => self.observer().info(&format!("skipped: {e}")),
            }
        }
        rows
    }

    /// Renders from the store the logs of tasks no live runner keeps
    /// current whose log is missing or says another status than the task
    /// has (`status_of` tells what a log says now, `None`: no log): a
    /// CRASHED task's says `crashed`, at the phase that was running. A
    /// live runner's task is left to it, unless it has no log yet. The
    /// ids rendered.
    pub fn settle_session_logs(
        &self,
        status_of: impl Fn(&str) -> Option<String>,
    ) -> Result<Vec<String>> {
        let mut done = Vec::new();
        for t in self.store.list()? {
            let live = self.liveness(t.lease.as_ref());
            let shown = DisplayStatus::of_task(t.status, &live, t.queued);
            if log_is_stale(shown, status_of(t.id.as_str()).as_deref())
                && self.render_session(&t.id).is_ok()
            {
                done.push(t.id.to_string());
            }
        }
        Ok(done)
    }
    /// The log named by `arg`: a file path, or a session id (its file,
    /// else the task of that id rendered from the store).
    pub fn session_log(&self, arg: &str) -> Result<(SessionLog, Option<PathBuf>)> {
        let as_path = Path::new(arg);
        if arg.ends_with(".md") || as_path.components().count() > 1 {
            return Ok((read_log(as_path)?, Some(as_path.to_path_buf())));
        }
        let file = self.project.sessions_dir().join(format!("{arg}.md"));
        if let Ok(id) = TaskId::parse(arg) {
            // A crashed task's log, or one lost, is settled first.
            let said = read_log(&file)
                .ok()
                .map(|l| l.front.status.as_str().to_string());
            // Where it cannot be written again (a read-only folder), the
            // log is rendered from the store for this reading alone.
            if self.settle_session_log(&id, said).is_err() && self.store.load(&id)?.is_some() {
                return Ok((self.task_log(&id)?, None));
            }
        }
        if file.exists() {
            return Ok((read_log(&file)?, Some(file)));
        }
        if let Ok(id) = TaskId::parse(arg)
            && self.store.load(&id)?.is_some()
        {
            return Ok((self.task_log(&id)?, None));
        }
        if let Some(team) = arg.strip_prefix("team@")
            && let Some(t) = self.store.team(team)?
        {
            return Ok((self.team_log(&t)?, None));
        }
        Err(Error::bad_input(format!("no session log {arg}"))
            .hint("`baton session ls` lists them; a path to a log copied from elsewhere works too"))
    }

    /// How subagents show in the logs (`[sessions] subagents`, checked
    /// when the config was read).
    pub(crate) fn subagent_mode(&self) -> session_log::journal::SubagentMode {
        self.project
            .config
            .sessions
            .subagent_mode()
            .unwrap_or_default()
    }

    /// [`Engine::settle_session_logs`] for one task (when the store has
    /// it), whose log says `said`.
    fn settle_session_log(&self, id: &TaskId, said: Option<String>) -> Result<()> {
        let Some(snap) = self.store.load(id)? else {
            return Ok(());
        };
        let live = self.liveness(snap.lease.as_ref());
        let shown = DisplayStatus::of_task(snap.state.status, &live, snap.queued);
        if log_is_stale(shown, said.as_deref()) {
            self.render_session(id)?;
        }
        Ok(())
    }

    /// Task `id`'s log, rendered from the store: a task whose runner died
    /// while it ran says so (CRASHED).
    pub fn task_log(&self, id: &TaskId) -> Result<SessionLog> {
        let snap = self.load(id)?;
        let wf = self.pinned(&snap.state.definition_hash).ok();
        let records = self.store.events(id, 0, usize::MAX)?;
        let items = self.store.inbox_items(false)?;
        let comments = crate::render::comments_of(self.store.as_ref(), &snap.state)?;
        let mode = self.subagent_mode();
        let log = session_log::journal::of_task(
            &snap.state,
            &records,
            wf.as_ref(),
            &items,
            &comments,
            mode,
        );
        let children = crate::render::children_of(self.store.as_ref(), &snap.state, mode);
        let mut log = session_log::journal::with_children(log, &children, mode);
        log.front.model = crate::render::model_of(&log, &self.project.config.agent_models());
        crate::render::subagents_counted(&mut log, &snap.state, &records);
        let live = self.liveness(snap.lease.as_ref());
        let shown = DisplayStatus::of_task(snap.state.status, &live, snap.queued);
        log.front.status = LogStatus::from(shown);
        if shown == DisplayStatus::Crashed {
            let why = match &live {
                Liveness::Dead(w) => w.clone(),
                Liveness::Expired => "its runner's lease expired".into(),
                _ => "nobody is running it".into(),
            };
            session_log::journal::crashed(&mut log, &snap.state, &why);
        }
        Ok(log)
    }

    /// Writes task `id`'s log from the store when the file is missing or
    /// says something else; whether it wrote.
    pub fn render_session(&self, id: &TaskId) -> Result<bool> {
        let log = self.task_log(id)?;
        let md = session_log::render(&log);
        let path = self.project.sessions_dir().join(format!("{id}.md"));
        if std::fs::read_to_string(&path).ok().as_deref() == Some(md.as_str()) {
            return Ok(false);
        }
        render::derived_write(&path, md.as_bytes())?;
        let open = self
            .inbox()
            .items(true)?
            .iter()
            .filter(|i| i.session.as_deref() == Some(id.as_str()))
            .count();
        self.session_index()
            .upsert(session_log::index::row_of(&log, open as u64))?;
        Ok(true)
    }
}
