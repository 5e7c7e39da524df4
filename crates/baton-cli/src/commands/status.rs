//! `baton status`: the registry of active sessions, live in the terminal
//! (ratatui), with the inbox count; `--line` prints it as one line for a
//! tmux status bar, `--json` once as JSON. What the sessions said (titles,
//! last lines) is escaped before it is drawn.

use super::{Result, engine};
use crate::cli::StatusArgs;
use crate::printer::{Printer, cell};
use baton_core::Exit;
use baton_engine::registry::{Active, status_line};
use baton_engine::{Engine, Error, Project};
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, List, ListItem, ListState, Paragraph, Wrap};
use std::sync::Arc;
use std::time::Duration;

pub fn run(project: &Project, args: StatusArgs, printer: &Arc<Printer>) -> Result<Exit> {
    let eng = engine(project, printer)?;
    if args.line {
        let active = eng.registry()?;
        let inbox = eng.inbox().open_count()?;
        printer.data(&cell(&status_line(&active, inbox)));
        return Ok(Exit::Done);
    }
    if args.json {
        let active = eng.registry()?;
        let inbox = eng.inbox().open_count()?;
        printer.json(&serde_json::json!({"sessions": active, "inbox": inbox}).to_string());
        return Ok(Exit::Done);
    }
    if !std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        return Err(
            Error::bad_input("baton status draws on a terminal, and stdout is not one")
                .hint("use `baton status --line` or `baton status --json` in scripts"),
        );
    }
    live(&eng)
}

/// The live view until `q`.
fn live(eng: &Engine) -> Result<Exit> {
    let mut term = ratatui::init();
    let mut list = ListState::default();
    list.select(Some(0));
    let result = loop {
        let active = eng.registry().unwrap_or_default();
        let inbox = eng.inbox().open_count().unwrap_or(0);
        if let Some(i) = list.selected()
            && i >= active.len()
        {
            list.select(Some(active.len().saturating_sub(1)));
        }
        if let Err(e) = term.draw(|f| draw(f, &active, inbox, &mut list)) {
            break Err(Error::op(format!("cannot draw: {e}")));
        }
        match event::poll(Duration::from_secs(1)) {
            Ok(true) => {}
            Ok(false) => continue,
            Err(e) => break Err(Error::op(format!("cannot read the keyboard: {e}"))),
        }
        let Ok(Event::Key(k)) = event::read() else {
            continue;
        };
        if k.kind != KeyEventKind::Press {
            continue;
        }
        match k.code {
            KeyCode::Char('q') | KeyCode::Esc => break Ok(Exit::Done),
            KeyCode::Down | KeyCode::Char('j') => list.select_next(),
            KeyCode::Up | KeyCode::Char('k') => list.select_previous(),
            KeyCode::Char(c @ '1'..='9') => {
                list.select(Some(c as usize - '1' as usize));
            }
            KeyCode::Enter => {
                let tmux = list
                    .selected()
                    .and_then(|i| active.get(i))
                    .and_then(|a| a.tmux.clone());
                if let Some(t) = tmux {
                    ratatui::restore();
                    attach(&t);
                    term = ratatui::init();
                }
            }
            _ => {}
        }
    };
    ratatui::restore();
    result
}

/// Attaches to `socket:session` until the user detaches.
fn attach(target: &str) {
    let Some((socket, session)) = target.split_once(':') else {
        return;
    };
    let _ = std::process::Command::new("tmux")
        .args(["-L", socket, "attach-session", "-t", session])
        .env_remove("TMUX")
        .status();
}

fn draw(f: &mut ratatui::Frame, active: &[Active], inbox: usize, list: &mut ListState) {
    let [head, body, foot] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(f.area());
    f.render_widget(
        Paragraph::new(Line::from(vec![
            Span::styled("baton status", Style::new().add_modifier(Modifier::BOLD)),
            Span::raw(format!("  {} active  ·  {inbox} inbox", active.len())),
        ])),
        head,
    );
    let [left, right] =
        Layout::horizontal([Constraint::Percentage(45), Constraint::Percentage(55)]).areas(body);
    let items: Vec<ListItem> = if active.is_empty() {
        vec![ListItem::new("no active sessions")]
    } else {
        active
            .iter()
            .enumerate()
            .map(|(n, a)| {
                ListItem::new(format!(
                    "[{}] {}  {}/{}  {}",
                    n + 1,
                    cell(&a.session_id),
                    cell(a.branch.as_deref().unwrap_or("-")),
                    cell(a.agent.as_deref().or(a.cli.as_deref()).unwrap_or("-")),
                    cell(a.phase.as_deref().unwrap_or(&a.status))
                ))
            })
            .collect()
    };
    f.render_stateful_widget(
        List::new(items)
            .block(Block::new().borders(Borders::ALL).title(" sessions "))
            .highlight_style(Style::new().add_modifier(Modifier::REVERSED)),
        left,
        list,
    );
    let detail = match list.selected().and_then(|i| active.get(i)) {
        Some(a) => {
            let mut lines = vec![
                Line::from(cell(&a.title)),
                Line::from(format!("status: {}", cell(&a.status))),
                Line::from(format!("worktree: {}", cell(&a.worktree))),
                Line::from(format!(
                    "tmux: {}",
                    cell(a.tmux.as_deref().unwrap_or("none (runs headless)"))
                )),
                Line::from(""),
            ];
            lines.extend(
                a.last_lines
                    .iter()
                    .map(|l| Line::from(format!("› {}", cell(l)))),
            );
            lines
        }
        None => vec![Line::from("")],
    };
    f.render_widget(
        Paragraph::new(detail)
            .wrap(Wrap { trim: true })
            .block(Block::new().borders(Borders::ALL).title(" last lines ")),
        right,
    );
    f.render_widget(
        Paragraph::new("↑/↓ or 1-9 move · enter opens its tmux pane · q quits"),
        foot,
    );
}
