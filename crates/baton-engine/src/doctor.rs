//! `baton doctor`: checks the store, the rendered files, leases, orphaned
//! processes and hidden git refs, and repairs them with `--fix`. When the
//! store itself is lost, it is rebuilt from the rendered `state.json` files
//! and phase outputs instead of starting blank, and what was kept beside
//! the tasks is salvaged from the damaged file (`salvage`).

use crate::engine::{CLEANED, Engine, Observer, Silent, SystemClock};
use crate::error::Result;
use crate::project::Project;
use crate::render;
use baton_core::lease::{DisplayStatus, Liveness};
use baton_core::state::{PhaseState, PhaseStatus, TaskStatus};
use baton_core::{Clock, Event, EventRecord, PhaseId, TaskId, TaskState, Timestamp, machine};
use baton_store::{SqliteStore, Store};
use baton_sys::process;
use std::collections::BTreeMap;
use std::sync::Arc;

mod salvage;

pub use crate::finding::Finding;

/// What a finding about a read-only store says (no repair can be made
/// where doctor runs).
pub const READ_ONLY: &str = "is read-only (its folder or mount cannot be written)";

pub fn run(project: &Project, fix: bool, observer: Arc<dyn Observer>) -> Result<Vec<Finding>> {
    let mut out = Vec::new();
    let location = crate::store::Location::of(project)?;
    if location.is_postgres() {
        // A server's database is never set aside or rebuilt by doctor: it
        // reports what the consistency check finds and goes on.
        let store = location.open()?;
        let problems = store.check()?;
        if problems.is_empty() {
            out.push(Finding::ok(format!(
                "store {} is reachable and passes its consistency check",
                location.describe()
            )));
        } else {
            for p in problems {
                out.push(Finding::problem(
                    format!("store {}: {p}", location.describe()),
                    "restore the database from a backup, or copy the project's history again with `baton store copy`",
                ));
            }
        }
        let clock = crate::clock::for_store(&store)?;
        let eng = Engine::with_store(project.clone(), store, clock, observer)?;
        out.extend(check_tasks(&eng, fix, true)?);
        return Ok(out);
    }
    let db = project.db_path();
    let opened = SqliteStore::open(&db, project.config.synchronous()?).and_then(|s| {
        let problems = s.check()?;
        if problems.is_empty() {
            Ok(s)
        } else {
            Err(baton_store::Error::Corrupt(problems.join("; ")))
        }
    });
    let mut fix = fix;
    let store = match opened {
        Ok(s) => {
            out.push(Finding::ok(format!(
                "store {} opens and passes its integrity check",
                db.display()
            )));
            if s.is_read_only() {
                // A read-only folder or mount: checked, never written.
                out.push(Finding::problem(
                    format!(
                        "the store {} {READ_ONLY}{}",
                        db.display(),
                        if fix { ": nothing was repaired" } else { "" }
                    ),
                    "run doctor where the project can be written to repair what it finds",
                ));
                fix = false;
            }
            s
        }
        Err(e @ baton_store::Error::NewerSchema { .. }) => {
            out.push(Finding::problem(
                e.to_string(),
                "use that newer baton, or upgrade this one; the store is fine and doctor leaves it alone",
            ));
            return Ok(out);
        }
        // Not damage (a folder that cannot be read or written, a file
        // system gone): nothing to set aside, and doctor never does.
        Err(e @ baton_store::Error::Open { .. }) => {
            out.push(Finding::problem(
                format!("the store cannot be opened: {e}"),
                "check that .baton/ and .baton/baton.db can be read and written by you; doctor leaves the store as it is",
            ));
            return Ok(out);
        }
        Err(e) if !fix => {
            out.push(Finding::problem(
                format!("the store cannot be used: {e}"),
                "run `baton doctor --fix` to set it aside and rebuild it from .baton/tasks/*/state.json",
            ));
            return Ok(out);
        }
        Err(e) => {
            let stamp = SystemClock.now().millis();
            let mut aside = None;
            for suffix in ["", "-wal", "-shm"] {
                let from = std::path::PathBuf::from(format!("{}{suffix}", db.display()));
                if from.exists() {
                    let to = format!("{}.damaged-{stamp}{suffix}", db.display());
                    fs_err::rename(&from, &to)?;
                    if suffix.is_empty() {
                        aside = Some(std::path::PathBuf::from(to));
                    }
                }
            }
            out.push(Finding::fixed(format!(
                "set the damaged store aside as baton.db.damaged-{stamp} ({e})"
            )));
            let s = SqliteStore::open(&db, project.config.synchronous()?)?;
            let eng = Engine::with_store(
                project.clone(),
                Arc::new(s),
                Arc::new(SystemClock),
                Arc::new(Silent),
            )?;
            out.extend(rebuild_missing(&eng, true)?);
            let s = SqliteStore::open(&db, project.config.synchronous()?)?;
            // What was kept beside the tasks comes back from the damaged
            // file itself, as far as it can be read.
            if let Some(aside) = aside {
                out.extend(salvage::salvage(&s, &aside));
            }
            s
        }
    };
    let eng = Engine::with_store(
        project.clone(),
        Arc::new(store),
        Arc::new(SystemClock),
        observer,
    )?;
    out.extend(check_tasks(&eng, fix, false)?);
    Ok(out)
}

/// `shared`: the store serves several machines, so a task that was never
/// rendered here (it ran elsewhere) is not a problem.
fn check_tasks(eng: &Engine, fix: bool, shared: bool) -> Result<Vec<Finding>> {
    let mut out = Vec::new();
    let tasks = eng.store.list()?;
    let mut known = std::collections::HashSet::new();
    for t in &tasks {
        known.insert(t.id.to_string());
        if !check_projection(eng, &t.id, fix, &mut out)? {
            continue;
        }
        let Some(snap) = eng.store.load(&t.id)? else {
            continue;
        };
        check_rendered(eng, &snap, fix, shared, &mut out)?;
        check_restore_finished(eng, &snap, &mut out)?;
        check_crashed(eng, &snap, fix, &mut out);
    }
    out.push(Finding::ok(format!("{} task(s) checked", tasks.len())));
    check_temporary_files(eng, fix, &mut out);
    out.extend(rebuild_missing(eng, fix)?);
    out.extend(check_sessions(eng, fix, shared)?);
    if let Some(git) = eng.git() {
        check_removed_tasks_refs(eng, git, &known, fix, &mut out)?;
        // Agent instances, before the prune: a worktree they lost is
        // accounted for first.
        if let Ok(agents) = eng.agents() {
            out.extend(agents.reconcile(fix));
        }
        check_worktree_records(git, fix, &mut out);
        check_task_worktrees(eng, git, fix, &mut out);
    }
    Ok(out)
}

/// Temporary files of atomic writes (`.NAME.tmp-PID`) whose writer is
/// gone: a write cut short (a full disk, a kill) before its rename. They
/// hold nothing the file they were for does not; removed with `fix`.
fn check_temporary_files(eng: &Engine, fix: bool, out: &mut Vec<Finding>) {
    let baton = eng.project.baton_dir();
    let mut dirs = vec![baton.clone(), eng.project.sessions_dir()];
    if let Ok(tasks) = std::fs::read_dir(eng.project.tasks_dir()) {
        dirs.extend(tasks.flatten().map(|e| e.path()).filter(|p| p.is_dir()));
    }
    let left: Vec<std::path::PathBuf> = dirs
        .iter()
        .flat_map(|d| render::stale_temporaries(d, ""))
        .collect();
    if left.is_empty() {
        return;
    }
    if fix {
        let removed = left
            .iter()
            .filter(|p| std::fs::remove_file(p).is_ok())
            .count();
        // Tidying, not a repair of any record (what a killed runner
        // leaves or not is chance): said, and no crash point.
        out.push(Finding::ok(format!(
            "removed {removed} temporary file(s) a write cut short left (e.g. {})",
            left[0].display()
        )));
    } else {
        out.push(Finding::problem(
            format!(
                "{} temporary file(s) a write cut short left (e.g. {})",
                left.len(),
                left[0].display()
            ),
            "run `baton doctor --fix` to remove them; they hold nothing the files they were for do not",
        ));
    }
}

/// Queued tasks' worktrees (`.baton/worktrees/<id>`) whose task ended or
/// is gone: a worker removes one when its task completes, and so does
/// `resume`; one left (a task cancelled or removed, a crash just then) is
/// said, and removed with `fix` when it holds nothing (git refuses a
/// worktree with changes: that one is kept, and said so).
fn check_task_worktrees(
    eng: &Engine,
    git: &baton_sys::git::Git,
    fix: bool,
    out: &mut Vec<Finding>,
) {
    let dir = eng.project.baton_dir().join("worktrees");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let path = e.path();
        let ended = match TaskId::parse(&name).ok().map(|id| eng.store.load(&id)) {
            Some(Ok(Some(snap))) => matches!(
                eng.status_of(&snap),
                DisplayStatus::Complete | DisplayStatus::Cancelled
            )
            .then(|| format!("task {name} is {}", eng.status_of(&snap).as_str())),
            Some(Ok(None)) => Some(format!("no task {name} is in the store")),
            _ => None,
        };
        let Some(why) = ended else { continue };
        if !fix {
            out.push(Finding::problem(
                format!("the worktree {} is left over: {why}", path.display()),
                "run `baton doctor --fix` to remove it (one with changes is kept)",
            ));
            continue;
        }
        match git.run(&["worktree", "remove", &path.display().to_string()], &[]) {
            Ok(_) => out.push(Finding::fixed(format!(
                "removed the worktree {} ({why})",
                path.display()
            ))),
            Err(e) => out.push(Finding::problem(
                format!(
                    "the worktree {} is left over ({why}) and holds changes: {e}",
                    path.display()
                ),
                format!(
                    "look at it, then remove it with `git worktree remove --force {}`",
                    path.display()
                ),
            )),
        }
    }
}

/// The projection must equal the journal folded from the start (rebuilt
/// from it with `fix`). A task with a live runner is moving: it is not
/// compared, and never rewritten (the store refuses while anyone holds
/// the lease). Whether the task's other checks apply (not running, its
/// journal replayed).
fn check_projection(eng: &Engine, id: &TaskId, fix: bool, out: &mut Vec<Finding>) -> Result<bool> {
    let loaded = eng.store.load(id);
    if let Ok(Some(snap)) = &loaded
        && eng.liveness(snap.lease.as_ref()).is_live()
    {
        out.push(Finding::ok(format!(
            "task {id} is running; its projection was not checked"
        )));
        return Ok(false);
    }
    let seen_lease = loaded
        .as_ref()
        .ok()
        .and_then(|s| s.as_ref())
        .and_then(|s| s.lease.clone());
    let events = eng.store.events(id, 0, usize::MAX)?;
    let replayed = machine::replay(id, &events);
    match (loaded, replayed) {
        (Ok(Some(snap)), Some(r)) if snap.state == r => {}
        (_, Some(r)) => {
            if fix {
                match eng.store.replace_projection(&r, seen_lease.as_ref()) {
                    Ok(()) => out.push(Finding::fixed(format!(
                        "task {id}: rebuilt its projection from its journal ({} events)",
                        events.len()
                    ))),
                    Err(e) => out.push(Finding::problem(
                        format!("task {id}: its projection was not rebuilt: {e}"),
                        "run `baton doctor --fix` again when no process runs the task",
                    )),
                }
            } else {
                out.push(Finding::problem(
                    format!("task {id}: its projection does not match its journal"),
                    "run `baton doctor --fix`",
                ));
            }
        }
        (loaded, None) => {
            let e = loaded
                .err()
                .map(|e| e.to_string())
                .unwrap_or_else(|| "no task_created event".into());
            out.push(Finding::problem(
                format!("task {id}: its journal cannot be replayed: {e}"),
                format!("inspect it with `baton log {id}`, or delete it with `baton rm {id}`"),
            ));
            return Ok(false);
        }
    }
    Ok(true)
}

/// `state.json` and the phase outputs say what the store says
/// (re-rendered with `fix`); on a shared store a task never rendered here
/// is rendered on demand by any command on it.
fn check_rendered(
    eng: &Engine,
    snap: &baton_store::TaskSnapshot,
    fix: bool,
    shared: bool,
    out: &mut Vec<Finding>,
) -> Result<()> {
    let id = &snap.state.task_id;
    let good = eng.rendered_is_current(snap);
    if !good && shared && !eng.task_dir(id).exists() {
        // Rendered on demand by any command on it.
    } else if !good {
        if fix {
            eng.repair_rendered(snap)?;
            out.push(Finding::fixed(format!(
                "task {id}: re-rendered state.json and phase outputs from the store"
            )));
        } else {
            out.push(Finding::problem(
                format!("task {id}: state.json is missing, damaged or stale"),
                "run `baton doctor --fix` (or any command on the task) to re-render it",
            ));
        }
    } else if fix {
        let n = render::phase_outputs(&eng.task_dir(id), &snap.state)?;
        if n > 0 {
            out.push(Finding::fixed(format!(
                "task {id}: re-rendered {n} phase output file(s) from the store"
            )));
        }
    } else {
        let stale: Vec<String> = snap
            .state
            .phases
            .iter()
            .enumerate()
            .filter(|(_, p)| p.status == PhaseStatus::Pass)
            .filter(|(i, p)| {
                let file = eng
                    .task_dir(id)
                    .join(baton_core::document::output_file_name(*i, p.id.as_str()));
                std::fs::read_to_string(file).ok() != Some(render::phase_markdown(&snap.state, *i))
            })
            .map(|(i, p)| baton_core::document::output_file_name(i, p.id.as_str()))
            .collect();
        if !stale.is_empty() {
            out.push(Finding::problem(
                format!(
                    "task {id}: phase output(s) missing or stale: {}",
                    stale.join(", ")
                ),
                "run `baton doctor --fix` (or any command on the task) to re-render them",
            ));
        }
    }
    Ok(())
}

/// A restore of the work tree that started but never finished (the
/// process died in the middle): say where the old work tree is.
fn check_restore_finished(
    eng: &Engine,
    snap: &baton_store::TaskSnapshot,
    out: &mut Vec<Finding>,
) -> Result<()> {
    let id = &snap.state.task_id;
    let recent = eng
        .store
        .events(id, snap.state.last_seq.saturating_sub(50), 50)?;
    let notes: Vec<&str> = recent
        .iter()
        .filter_map(|r| match &r.event {
            baton_core::Event::Note { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    if let Some(last) = notes.last()
        && last.starts_with("restoring the work tree")
    {
        out.push(Finding::problem(
            format!("task {id}: a restore of the work tree did not finish ({last})"),
            "compare the work tree with that saved ref (`git diff REF`), take back what you need, then `baton resume` the task again with --from",
        ));
    }
    Ok(())
}

/// A CRASHED task is said, with how to go on, and its phase's process
/// group still running with no baton watching it is killed with `fix`.
fn check_crashed(
    eng: &Engine,
    snap: &baton_store::TaskSnapshot,
    fix: bool,
    out: &mut Vec<Finding>,
) {
    let id = &snap.state.task_id;
    let live = eng.liveness(snap.lease.as_ref());
    // The one status `ls` shows: a queued task nobody runs is QUEUED,
    // waiting for a worker, never CRASHED.
    if eng.status_of(snap) != DisplayStatus::Crashed {
        return;
    }
    let why = match &live {
        Liveness::Dead(w) => w.clone(),
        Liveness::Expired => "its runner's lease expired".into(),
        _ => "nobody is running it".into(),
    };
    out.push(Finding::problem(
        format!(
            "task {id} is CRASHED at {}: {why}",
            baton_store::last_phase(&snap.state).unwrap_or_else(|| "its start".into())
        ),
        format!("continue it with `baton resume {id}`"),
    ));
    // Only a runner whose pids mean something here (this host, boot and
    // PID namespace) can have left a process to probe or kill.
    if let Some(p) = snap.state.in_progress().and_then(|p| p.process.clone())
        && eng.ran_here(snap)
    {
        let alive = process::leader_lives(&p);
        if alive {
            if fix {
                process::kill_orphan(&p);
                out.push(Finding::fixed(format!(
                    "task {id}: killed its orphaned phase process group {}",
                    p.pid
                )));
            } else {
                out.push(Finding::problem(format!("task {id}: its phase process {} is still running with no baton watching it", p.pid), "run `baton doctor --fix` to kill it, or `baton resume` (which kills it first)"));
            }
        }
    }
}

/// Hidden refs of tasks that are gone for good: no record and no
/// rendered folder (a cleaned or not-yet-rebuilt task keeps its refs);
/// deleted with `fix`.
fn check_removed_tasks_refs(
    eng: &Engine,
    git: &baton_sys::git::Git,
    known: &std::collections::HashSet<String>,
    fix: bool,
    out: &mut Vec<Finding>,
) -> Result<()> {
    for t in git.ref_tasks() {
        if known.contains(&t) || eng.project.tasks_dir().join(&t).is_dir() {
            continue;
        }
        if fix {
            let n = git
                .delete_refs(&format!("refs/baton/{t}/"))
                .map_err(|e| crate::Error::op(e.to_string()))?;
            out.push(Finding::fixed(format!(
                "deleted {n} checkpoint ref(s) of the removed task {t}"
            )));
        } else {
            out.push(Finding::problem(
                format!("checkpoint refs remain for the removed task {t} (refs/baton/{t}/)"),
                "run `baton doctor --fix` to delete them",
            ));
        }
    }
    Ok(())
}

/// git's records of worktrees whose folder is gone (pruned with `fix`).
fn check_worktree_records(git: &baton_sys::git::Git, fix: bool, out: &mut Vec<Finding>) {
    let Ok(prunable) = git.run(&["worktree", "prune", "--dry-run", "-v"], &[]) else {
        return;
    };
    let lines: Vec<&str> = prunable.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return;
    }
    if fix {
        let _ = git.run(&["worktree", "prune"], &[]);
        out.push(Finding::fixed(format!(
            "pruned {} stale git worktree record(s)",
            lines.len()
        )));
    } else {
        out.push(Finding::problem(
            format!("{} stale git worktree record(s)", lines.len()),
            "run `baton doctor --fix` to prune them",
        ));
    }
}

/// Tasks rendered in `.baton/tasks/*/state.json` that the store does not
/// hold (a lost store, or a deleted `baton.db`), except those `clean`
/// removed on purpose (they carry a `cleaned` marker). With `fix`, each is
/// rebuilt from its `state.json`, its phase outputs and its checkpoint refs.
/// Every task here has its session log, so has every team, and
/// `.baton/index.toon` says what the logs say.
fn check_sessions(eng: &Engine, fix: bool, shared: bool) -> Result<Vec<Finding>> {
    let mut out = Vec::new();
    for t in eng.store.list()? {
        let log = eng.project.sessions_dir().join(format!("{}.md", t.id));
        // Written without waiting for the disk: after a power cut a log
        // may be empty or cut short, which re-rendering mends.
        let said = std::fs::read_to_string(&log)
            .ok()
            .and_then(|text| baton_core::session_log::parse(&text).ok())
            .map(|l| l.front.status);
        if shared && !eng.task_dir(&t.id).exists() {
            continue;
        }
        // A CRASHED task's log says so (its runner could not); any other
        // task's says its status, unless its live runner keeps it.
        let shown = DisplayStatus::of_task(t.status, &eng.liveness(t.lease.as_ref()), t.queued);
        // A task queued a moment ago has no log yet: its worker writes it
        // (and `session ls` renders it, saying queued, until then).
        if shown == DisplayStatus::Queued && said.is_none() {
            continue;
        }
        if let Some(s) = said {
            if !crate::sessions::log_is_stale(shown, Some(s.as_str())) {
                continue;
            }
            if fix {
                eng.render_session(&t.id)?;
                out.push(Finding::fixed(format!(
                    "task {}: rendered its session log again ({} said {}, the task is {})",
                    t.id,
                    log.display(),
                    s.as_str(),
                    shown.as_str()
                )));
            } else {
                out.push(Finding::problem(
                    format!(
                        "task {}: its session log says {} but the task is {}",
                        t.id,
                        s.as_str(),
                        shown.as_str()
                    ),
                    "run `baton doctor --fix` (or `baton session ls`) to render it from the store",
                ));
            }
            continue;
        }
        if fix {
            eng.render_session(&t.id)?;
            out.push(Finding::fixed(format!(
                "task {}: rendered its session log from the store",
                t.id
            )));
        } else {
            out.push(Finding::problem(
                format!(
                    "task {}: its session log {} is missing",
                    t.id,
                    log.display()
                ),
                "run `baton doctor --fix` to render it from the store",
            ));
        }
    }
    for t in eng.store.teams()? {
        let id = baton_core::session_log::team::log_id(t.id.as_str());
        let log = eng.project.sessions_dir().join(format!("{id}.md"));
        let reads = std::fs::read_to_string(&log)
            .is_ok_and(|text| baton_core::session_log::parse(&text).is_ok());
        if reads {
            continue;
        }
        if fix {
            out.push(match eng.render_team_log(&t) {
                Ok(_) => Finding::fixed(format!(
                    "team {}: rendered its session log from the store",
                    t.id
                )),
                Err(e) => Finding::problem(
                    format!(
                        "team {}: its session log cannot be rendered: {}",
                        t.id, e.message
                    ),
                    "see `baton team show` for the team; the log is derived and can wait",
                ),
            });
        } else {
            out.push(Finding::problem(
                format!(
                    "team {}: its session log {} is missing",
                    t.id,
                    log.display()
                ),
                "run `baton doctor --fix` to render it from the store",
            ));
        }
    }
    let index = eng.session_index();
    if !index.is_current()? {
        if fix {
            let n = index.rebuild()?;
            out.push(Finding::fixed(format!(
                "rebuilt {} from {n} session log(s)",
                index.path().display()
            )));
        } else {
            out.push(Finding::problem(
                format!("{} is missing or out of date", index.path().display()),
                "run `baton doctor --fix` to rebuild it from .baton/sessions",
            ));
        }
    }
    Ok(out)
}

fn rebuild_missing(eng: &Engine, fix: bool) -> Result<Vec<Finding>> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(eng.project.tasks_dir()) else {
        return Ok(out);
    };
    let known: std::collections::HashSet<String> = eng
        .store
        .list()?
        .into_iter()
        .map(|t| t.id.to_string())
        .collect();
    let mut missing: Vec<_> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.join("state.json").is_file() && !p.join(CLEANED).exists())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| !known.contains(n.to_string_lossy().as_ref()))
        })
        .collect();
    missing.sort();
    for path in missing {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !fix {
            out.push(Finding::problem(
                format!("task {name} is rendered in .baton/tasks/ but missing from the store"),
                "run `baton doctor --fix` to rebuild it from its rendered files",
            ));
            continue;
        }
        match rebuild_one(eng, &path) {
            Ok((id, note)) => out.push(Finding::fixed(format!(
                "rebuilt task {id} from its rendered files{note}"
            ))),
            Err(e) => out.push(Finding::problem(
                format!("cannot rebuild task {name}: {e}"),
                "its rendered files and checkpoints stay; start it again with `baton run`",
            )),
        }
    }
    Ok(out)
}

fn rebuild_one(eng: &Engine, path: &std::path::Path) -> Result<(TaskId, String), String> {
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path.join("state.json")).map_err(|e| e.to_string())?)
            .map_err(|e| format!("state.json: {e}"))?;
    let s = |k: &str| {
        doc.get(k)
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_string()
    };
    let ts = |v: Option<&serde_json::Value>| {
        v.and_then(|v| v.as_str())
            .and_then(Timestamp::parse_rfc3339)
    };
    let id = TaskId::parse(&s("task_id")).map_err(|e| e.to_string())?;
    let wf = eng.load_workflow(&s("workflow")).map_err(|e| e.message)?;
    let phases_doc = doc
        .get("phases")
        .and_then(|p| p.as_array())
        .cloned()
        .unwrap_or_default();
    let ids: Vec<String> = phases_doc
        .iter()
        .filter_map(|p| p.get("id").and_then(|i| i.as_str()).map(str::to_string))
        .collect();
    let wf_ids: Vec<String> = wf.phases.iter().map(|p| p.id.to_string()).collect();
    if ids != wf_ids {
        return Err(format!(
            "its phases ({}) differ from .baton/workflows/{}.toml now ({})",
            ids.join(", "),
            wf.name,
            wf_ids.join(", ")
        ));
    }
    let completed: BTreeMap<String, serde_json::Value> = doc
        .get("completed_phases")
        .and_then(|c| c.as_array())
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|c| Some((c.get("id")?.as_str()?.to_string(), c)))
        .collect();
    let mut phases = Vec::new();
    for (i, p) in phases_doc.iter().enumerate() {
        let pid = PhaseId::parse(&ids[i]).map_err(|e| e.to_string())?;
        let mut ps = PhaseState::new(pid.clone());
        ps.status = match p
            .get("status")
            .and_then(|s| s.as_str())
            .unwrap_or("PENDING")
        {
            "PASS" => PhaseStatus::Pass,
            "SKIPPED" => PhaseStatus::Skipped,
            "FAILED" => PhaseStatus::Failed,
            "WAITING" => PhaseStatus::Waiting,
            _ => PhaseStatus::Pending, // an IN_PROGRESS phase re-runs
        };
        ps.attempt = p.get("attempt").and_then(|a| a.as_u64()).unwrap_or(0) as u32;
        ps.iteration = p.get("iteration").and_then(|a| a.as_u64()).unwrap_or(0) as u32;
        ps.last_error = p
            .get("last_error")
            .and_then(|a| a.as_str())
            .map(str::to_string);
        if let Some(c) = completed.get(pid.as_str()) {
            ps.started_at = ts(c.get("started_at"));
            ps.completed_at = ts(c.get("completed_at"));
            ps.summary = c
                .get("summary")
                .and_then(|s| s.as_str())
                .map(str::to_string);
            ps.files_changed = c
                .get("files_changed")
                .and_then(|f| serde_json::from_value(f.clone()).ok())
                .unwrap_or_default();
        }
        if ps.status == PhaseStatus::Pass {
            let md = path.join(baton_core::document::output_file_name(i, pid.as_str()));
            if let Ok(text) = std::fs::read_to_string(md) {
                let (summary, output) = render::parse_phase_markdown(&text);
                if ps.summary.is_none() {
                    ps.summary = Some(summary);
                }
                ps.output = Some(output);
            }
        }
        if ps.status == PhaseStatus::Waiting {
            let w = doc.get("waiting").filter(|w| w["phase"] == pid.as_str());
            match w {
                Some(w) => {
                    ps.waiting = Some(baton_core::state::WaitState {
                        description: w["for"].as_str().unwrap_or("").to_string(),
                        due_at: ts(w.get("due_at")),
                    });
                }
                None => ps.status = PhaseStatus::Pending, // entered again
            }
        }
        let current = doc.get("current_phase").filter(|c| c["id"] == pid.as_str());
        if ps.started_at.is_none()
            && let Some(c) = current
        {
            ps.started_at = ts(c.get("started_at"));
        }
        // The checkpoint of the phase's last start, from its hidden ref.
        if ps.attempt > 0
            && let Some(git) = eng.git()
        {
            let stem = baton_core::document::output_file_name(i, pid.as_str());
            let stem = stem.trim_end_matches(".md");
            let refname = format!(
                "refs/baton/{}/{stem}.i{}.a{}/start",
                s("task_id"),
                ps.iteration,
                ps.attempt
            );
            if let Some(snap) = git.resolve(&refname) {
                ps.checkpoint = Some(baton_core::state::Checkpoint {
                    branch: doc["recovery_info"]["git_branch"]
                        .as_str()
                        .map(str::to_string),
                    head: git.resolve(&format!("{snap}^1")),
                    snapshot: Some(snap),
                    snapshot_ref: Some(refname),
                });
            }
        }
        phases.push(ps);
    }
    let status = match s("status").as_str() {
        "COMPLETE" => TaskStatus::Complete,
        "FAILED" => TaskStatus::Failed,
        "CANCELLED" => TaskStatus::Cancelled,
        "WAITING" if phases.iter().any(|p| p.status == PhaseStatus::Waiting) => TaskStatus::Waiting,
        _ => TaskStatus::Running,
    };
    fn map<T: serde::de::DeserializeOwned + Default>(doc: &serde_json::Value, k: &str) -> T {
        doc.get(k)
            .cloned()
            .and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or_default()
    }
    let created_at = ts(doc.get("created_at")).unwrap_or(Timestamp(0));
    let first = EventRecord {
        seq: 1,
        ts: created_at,
        event: Event::TaskCreated {
            workflow: wf.name.clone(),
            definition_hash: wf.hash(),
            description: s("task_description"),
            project_name: s("project_name"),
            flags: map(&doc, "flags"),
            labels: map(&doc, "labels"),
            tech_stack: doc.get("tech_stack").cloned().unwrap_or_default(),
            phases: wf.phases.iter().map(|p| p.id.clone()).collect(),
        },
    };
    let second = EventRecord {
        seq: 2,
        ts: SystemClock.now(),
        event: Event::Adopted {
            source: "rebuilt by `baton doctor --fix` from state.json and phase outputs".into(),
            phases,
            iteration_counts: map(&doc, "iteration_counts"),
            status,
            blockers: map(&doc, "blockers"),
            failure: doc["failure"].as_str().map(str::to_string),
        },
    };
    let events = vec![first, second];
    let state: TaskState = machine::replay(&id, &events).ok_or("cannot replay")?;
    eng.store
        .put_definition(&baton_store::StoredDefinition {
            hash: wf.hash(),
            name: wf.name.clone(),
            json: serde_json::to_string(&wf).map_err(|e| e.to_string())?,
        })
        .map_err(|e| e.to_string())?;
    let owner = baton_sys::host::this_owner();
    let lease = baton_core::lease::Lease {
        owner: owner.clone(),
        acquired_at: SystemClock.now(),
        expires_at: SystemClock.now(),
    };
    eng.store
        .create_task(&state, &events, baton_store::Holder::Lease(&lease))
        .map_err(|e| e.to_string())?;
    eng.store.release(&id, &owner).map_err(|e| e.to_string())?;
    if let Ok(Some(snap)) = eng.store.load(&id) {
        let _ = eng.repair_rendered(&snap);
    }
    let note = if doc["definition_hash"].as_str() == Some(wf.hash().as_str()) {
        String::new()
    } else {
        format!(
            " (its pinned workflow definition was lost with the store: it now uses .baton/workflows/{}.toml as it is)",
            wf.name
        )
    };
    Ok((id, note))
}
