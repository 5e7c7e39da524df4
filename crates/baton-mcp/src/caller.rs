//! Who calls: the agent baton started, known from the environment baton
//! set for it (and wrote into its CLI's MCP configuration).

use baton_core::instance::InstanceId;
use std::path::PathBuf;

#[derive(Debug, Clone, Default)]
pub struct Caller {
    /// `BATON_INSTANCE`: the coding or review instance the agent is.
    pub instance: Option<InstanceId>,
    /// `BATON_SUMMARY_FILE`: where the running phase attempt's reports go.
    pub summary_file: Option<PathBuf>,
    /// `BATON_TASK_ID` and `BATON_PHASE`, for messages.
    pub task: Option<String>,
    pub phase: Option<String>,
}

impl Caller {
    pub fn from_env() -> Caller {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        Caller {
            instance: var("BATON_INSTANCE").and_then(|s| InstanceId::parse(&s).ok()),
            summary_file: var("BATON_SUMMARY_FILE").map(PathBuf::from),
            task: var("BATON_TASK_ID"),
            phase: var("BATON_PHASE"),
        }
    }
}
