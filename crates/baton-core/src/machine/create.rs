//! Creating a task: the first event of its journal, with the flags given
//! checked against (and converted to) the types the workflow declares.

use super::{RuleError, refuse};
use crate::event::Event;
use crate::ids::TaskId;
use crate::workflow::Workflow;
use std::collections::BTreeMap;

/// Everything needed to create a task.
#[derive(Debug, Clone)]
pub struct NewTask {
    pub task_id: TaskId,
    pub description: String,
    pub project_name: String,
    pub flags: BTreeMap<String, serde_json::Value>,
    pub labels: BTreeMap<String, String>,
    pub tech_stack: serde_json::Value,
}

/// The first event of a task; flags given override the workflow's defaults
/// and must be of the declared flag's type (see [`flag_value`]).
pub fn create(wf: &Workflow, new: NewTask) -> Result<Event, RuleError> {
    let mut flags = wf.flags.clone();
    for (k, v) in new.flags {
        let Some(declared) = wf.flags.get(&k) else {
            let known: Vec<&str> = wf.flags.keys().map(String::as_str).collect();
            return refuse(format!(
                "workflow {:?} has no flag {k:?} (its flags: {})",
                wf.name,
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ));
        };
        let v = flag_value(&k, declared, v)?;
        flags.insert(k, v);
    }
    let mut labels = new.labels;
    labels
        .entry("task-id".into())
        .or_insert_with(|| new.task_id.to_string());
    labels
        .entry("workflow-type".into())
        .or_insert_with(|| wf.name.clone());
    labels
        .entry("repository".into())
        .or_insert_with(|| new.project_name.clone());
    Ok(Event::TaskCreated {
        workflow: wf.name.clone(),
        definition_hash: wf.hash(),
        description: new.description,
        project_name: new.project_name,
        flags,
        labels,
        tech_stack: new.tech_stack,
        phases: wf.phases.iter().map(|p| p.id.clone()).collect(),
    })
}

/// The type of a declared flag, as users write it.
pub fn flag_type(declared: &serde_json::Value) -> &'static str {
    match declared {
        serde_json::Value::Bool(_) => "boolean",
        serde_json::Value::Number(_) => "integer",
        _ => "string",
    }
}

/// Checks a given flag value against the type of the declared flag (the
/// type of its default): a boolean flag takes only `true`/`false`, an
/// integer flag only integers, a string flag anything (kept as text). A
/// value given as text (`--flag K=V`) is converted to that type.
pub fn flag_value(
    name: &str,
    declared: &serde_json::Value,
    given: serde_json::Value,
) -> Result<serde_json::Value, RuleError> {
    use serde_json::Value as V;
    let text = match &given {
        V::String(s) => s.clone(),
        other => other.to_string(),
    };
    let wrong = |expected: &str| {
        refuse(format!(
            "flag {name:?} is {expected}, so {text:?} is not a valid value for it"
        ))
    };
    match declared {
        V::Bool(_) => match text.as_str() {
            "true" => Ok(V::Bool(true)),
            "false" => Ok(V::Bool(false)),
            _ => wrong("a boolean (true or false)"),
        },
        V::Number(_) => match text.trim().parse::<i64>() {
            Ok(i) => Ok(V::from(i)),
            Err(_) => wrong("an integer"),
        },
        _ => Ok(V::String(text)),
    }
}
