//! After a damaged SQLite store is set aside and the tasks are rebuilt from
//! their rendered files, the records kept beside the tasks (webhook
//! deliveries, inbox items, teams, agent instances, repositories'
//! progress records and tasks' stage records, plays, workspace records,
//! …) are salvaged from the damaged file into
//! the new store ([`SqliteStore::salvage`]). This says what came back, by
//! kind, and names each record that did not, with what to do about it.

use super::Finding;
use baton_store::SqliteStore;
use baton_store::sqlite::salvage::{Lost, LostRows, Salvage, TableSalvage};
use std::path::Path;

/// How a table's rows are spoken of, and what to do when one is lost.
struct Kind {
    one: &'static str,
    many: &'static str,
    /// The table whose records these rows belong to, in the summary.
    under: Option<&'static str>,
    hint: &'static str,
}

fn kind(table: &str) -> Kind {
    const KEPT: &str = "the damaged file {file} is kept";
    let (one, many, under, hint) = match table {
        "deliveries" => (
            "delivery",
            "deliveries",
            None,
            "GitHub can send it again from the webhook's Recent Deliveries page; until then a redelivery of it is handled as new. The damaged file {file} is kept",
        ),
        "delivery_bodies" => (
            "signed body digest",
            "signed body digests",
            Some("deliveries"),
            "a replay of that signed body under a new delivery id is no longer recognised as a redelivery; the damaged file {file} is kept",
        ),
        "inbox" => (
            "inbox item",
            "inbox items",
            None,
            "its agent asks again when it next needs the answer; the damaged file {file} is kept",
        ),
        "teams" | "team_events" | "team_messages" | "team_acks" | "team_presence" => {
            let (one, many) = match table {
                "teams" => ("team", "teams"),
                "team_events" => ("journal record", "journal records"),
                "team_messages" => ("message", "messages"),
                "team_acks" => ("acknowledgement", "acknowledgements"),
                _ => ("member presence", "member presences"),
            };
            let hint = if table == "teams" {
                "the team is gone, and its journal, tasks and mailbox with it: create it again (`baton team create`); the damaged file {file} is kept"
            } else {
                "`baton team show NAME` shows what the team still holds; a lost message can be sent again (`baton team msg send`); the damaged file {file} is kept"
            };
            (one, many, (table != "teams").then_some("teams"), hint)
        }
        "instances" => (
            "agent instance",
            "agent instances",
            None,
            "`baton agent ls --all` shows the instances that remain; the damaged file {file} is kept",
        ),
        "instance_events" => (
            "journal record",
            "journal records",
            Some("instances"),
            "`baton agent ls --all` shows the instances that remain; the damaged file {file} is kept",
        ),
        "progress" => (
            "progress record",
            "progress records",
            None,
            "it is written again as its repository's next task moves on (`baton progress`); the damaged file {file} is kept",
        ),
        "task_stages" => (
            "task's stage record",
            "tasks' stage records",
            Some("progress"),
            "the task's record is written again when it next moves on; a task already deleted and created again now starts over (`baton progress` lists what remains); the damaged file {file} is kept",
        ),
        "plays" => ("play", "plays", None, KEPT),
        "workspaces" => (
            "workspace record",
            "workspace records",
            None,
            "`baton workspace ls` shows the records that remain; the damaged file {file} is kept",
        ),
        "capabilities" => ("capability", "capabilities", None, KEPT),
        _ => ("row", "rows", None, KEPT),
    };
    Kind {
        one,
        many,
        under,
        hint,
    }
}

/// The order kinds are told in: what people act on first.
const ORDER: [&str; 15] = [
    "deliveries",
    "delivery_bodies",
    "inbox",
    "teams",
    "team_messages",
    "team_events",
    "team_acks",
    "team_presence",
    "instances",
    "instance_events",
    "progress",
    "task_stages",
    "plays",
    "workspaces",
    "capabilities",
];

fn rank(t: &TableSalvage) -> usize {
    ORDER
        .iter()
        .position(|n| *n == t.table)
        .unwrap_or(ORDER.len())
}

fn count(n: usize, k: &Kind) -> String {
    format!("{n} {}", if n == 1 { k.one } else { k.many })
}

/// `id = 'd-77'`, `team_id = 'crew', seq = 5`.
fn key_text(key: &[(String, String)]) -> String {
    key.iter()
        .map(|(c, v)| format!("{c} = {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Salvages into `store` what the damaged store at `damaged` still holds
/// beside the tasks, and says how it went.
pub(super) fn salvage(store: &SqliteStore, damaged: &Path) -> Vec<Finding> {
    let file = damaged
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| damaged.display().to_string());
    match store.salvage(damaged) {
        Ok(report) => findings(&report, &file),
        // The new store could not be written: the salvage's one
        // transaction left nothing half done.
        Err(e) => vec![Finding::problem(
            format!(
                "could not salvage the records kept beside the tasks from {file} into the new store: {e}"
            ),
            format!("the damaged file {file} is kept; nothing of it was copied"),
        )],
    }
}

fn findings(report: &Salvage, file: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(why) = &report.unreadable {
        out.push(Finding::problem(
            format!("could not salvage anything from {file}: {why}"),
            format!(
                "the deliveries, inbox items, teams and agent instances it held are lost with it (GitHub can send a webhook delivery again from Recent Deliveries; agents ask their questions again); the damaged file {file} is kept"
            ),
        ));
        return out;
    }
    let mut tables: Vec<&TableSalvage> = report.tables.iter().collect();
    tables.sort_by_key(|t| rank(t));
    let mut parts = Vec::new();
    for t in tables.iter().filter(|t| kind(&t.table).under.is_none()) {
        let k = kind(&t.table);
        let children: Vec<String> = tables
            .iter()
            .filter(|c| kind(&c.table).under == Some(t.table.as_str()) && c.copied > 0)
            .map(|c| count(c.copied, &kind(&c.table)))
            .collect();
        if t.copied == 0 && children.is_empty() {
            continue;
        }
        // A table this baton has no words for is named as it is.
        let mut part = if k.one == "row" {
            format!("{} of table {}", count(t.copied, &k), t.table)
        } else {
            count(t.copied, &k)
        };
        if !children.is_empty() {
            part.push_str(&format!(" ({})", children.join(", ")));
        }
        parts.push(part);
    }
    let present: usize = report.tables.iter().map(|t| t.present).sum();
    let schemas = report
        .schemas
        .map(|(theirs, ours)| {
            format!(
                " (it was at schema {theirs}, this baton's is {ours}: the columns both have were copied)"
            )
        })
        .unwrap_or_default();
    let kept = if present > 0 {
        format!("; {present} record(s) the new store held already were kept as they are")
    } else {
        String::new()
    };
    if !parts.is_empty() {
        out.push(Finding::fixed(format!(
            "salvaged {} from {file}{schemas}{kept}",
            parts.join(", ")
        )));
    } else if report
        .tables
        .iter()
        .all(|t| t.lost.is_empty() && t.refused.is_none())
    {
        out.push(Finding::ok(format!(
            "{file} held no records beside the tasks to salvage{schemas}{kept}"
        )));
    }
    for t in tables {
        out.extend(table_findings(t, file));
    }
    out
}

fn table_findings(t: &TableSalvage, file: &str) -> Vec<Finding> {
    let k = kind(&t.table);
    let hint = k.hint.replace("{file}", file);
    let table = &t.table;
    let mut out = Vec::new();
    if let Some(why) = &t.refused {
        out.push(Finding::problem(
            format!(
                "could not salvage the {} (table {table}) from {file}: {why}",
                k.many
            ),
            hint.clone(),
        ));
    }
    for Lost { rows, reason } in &t.lost {
        let message = match rows {
            LostRows::Key(key) => format!(
                "could not salvage {} {} (table {table}) from {file}: {reason}",
                k.one,
                key_text(key)
            ),
            LostRows::Rowids { column, after, to } => {
                let which = match (after, to) {
                    (None, None) => format!("any of the {}", k.many),
                    (Some(a), Some(b)) if a.saturating_add(1) == *b => {
                        format!("the {} with {column} {b}", k.one)
                    }
                    (Some(a), Some(b)) => {
                        format!("the {} with {column} from {} to {b}", k.many, a + 1)
                    }
                    (Some(a), None) => format!("the {} with {column} above {a}", k.many),
                    (None, Some(b)) => format!("the {} with {column} up to {b}", k.many),
                };
                format!("could not salvage {which} (table {table}) from {file}: {reason}")
            }
            LostRows::After(key) if key.is_empty() => {
                format!(
                    "could not salvage any of the {} (table {table}) from {file}: {reason}",
                    k.many
                )
            }
            LostRows::After(key) => format!(
                "could not salvage the {} after {} {} (table {table}) from {file}: {reason}",
                k.many,
                k.one,
                key_text(key)
            ),
            LostRows::WithOwner { owner, key, rows } => {
                let o = kind(owner);
                format!(
                    "could not salvage the {} (table {table}) of {} {} from {file}: {reason}",
                    count(*rows, &k),
                    o.one,
                    key_text(key)
                )
            }
        };
        out.push(Finding::problem(message, hint.clone()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(name: &str, copied: usize) -> TableSalvage {
        TableSalvage {
            table: name.into(),
            copied,
            ..Default::default()
        }
    }

    #[test]
    fn the_summary_names_each_kind_with_its_rows_under_it() {
        let report = Salvage {
            tables: vec![
                table("deliveries", 12),
                table("inbox", 3),
                table("teams", 1),
                table("team_messages", 40),
                table("plays", 0),
                table("mystery", 2),
            ],
            ..Default::default()
        };
        let f = findings(&report, "baton.db.damaged-1");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].level, "fixed");
        assert_eq!(
            f[0].message,
            "salvaged 12 deliveries, 3 inbox items, 1 team (40 messages), 2 rows of table mystery from baton.db.damaged-1"
        );
    }

    #[test]
    fn each_record_lost_is_a_problem_with_a_hint() {
        let mut d = table("deliveries", 1);
        d.lost.push(Lost {
            rows: LostRows::Key(vec![("id".into(), "'d-7'".into())]),
            reason: "database disk image is malformed".into(),
        });
        let mut m = table("team_messages", 0);
        m.lost.push(Lost {
            rows: LostRows::Rowids {
                column: "rowid".into(),
                after: Some(4),
                to: Some(9),
            },
            reason: "database disk image is malformed".into(),
        });
        let report = Salvage {
            tables: vec![d, m],
            ..Default::default()
        };
        let f = findings(&report, "x.db");
        let messages: Vec<&str> = f.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(
            messages,
            [
                "salvaged 1 delivery from x.db",
                "could not salvage delivery id = 'd-7' (table deliveries) from x.db: database disk image is malformed",
                "could not salvage the messages with rowid from 5 to 9 (table team_messages) from x.db: database disk image is malformed",
            ]
        );
        assert!(f[1].hint.as_deref().unwrap().contains("Recent Deliveries"));
        assert!(f[1].hint.as_deref().unwrap().contains("x.db is kept"));
    }
}
