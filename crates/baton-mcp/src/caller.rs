//! Who calls: the agent baton started, known from the environment baton
//! set for it (and wrote into its CLI's MCP configuration), or, over
//! Streamable HTTP (`baton serve`'s `/mcp`), from the same facts as
//! request headers: `Baton-Instance`, `Baton-Task`, `Baton-Phase`,
//! `Baton-Summary-File`, `Baton-Team`, `Baton-Teammate`.

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
    /// `BATON_TEAM` and `BATON_TEAMMATE`: the team the agent is a member of,
    /// and its name there.
    pub team: Option<String>,
    pub teammate: Option<String>,
}

impl Caller {
    pub fn from_headers(h: &http::HeaderMap) -> Caller {
        let var = |k: &str| {
            h.get(k)
                .and_then(|v| v.to_str().ok())
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_string)
        };
        Caller {
            instance: var("baton-instance").and_then(|s| InstanceId::parse(&s).ok()),
            summary_file: var("baton-summary-file").map(PathBuf::from),
            task: var("baton-task"),
            phase: var("baton-phase"),
            team: var("baton-team"),
            teammate: var("baton-teammate"),
        }
    }

    pub fn from_env() -> Caller {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        Caller {
            instance: var("BATON_INSTANCE").and_then(|s| InstanceId::parse(&s).ok()),
            summary_file: var("BATON_SUMMARY_FILE").map(PathBuf::from),
            task: var("BATON_TASK_ID"),
            phase: var("BATON_PHASE"),
            team: var("BATON_TEAM"),
            teammate: var("BATON_TEAMMATE"),
        }
    }
}
