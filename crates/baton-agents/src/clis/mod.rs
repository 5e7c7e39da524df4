//! The built-in agent CLIs, one module each. To add one: a new module here
//! implementing [`crate::AgentCli`], a line in [`ALL`] and [`NAMES`], and
//! its test setup in baton-testkit's `agents.rs` (see ARCHITECTURE.md).

mod claude;
mod codex;
mod copilot;
mod droid;
mod gemini;
mod opencode;
mod qwen;

#[cfg(test)]
mod locate_tests;

pub use claude::Claude;
pub use codex::Codex;
pub use copilot::Copilot;
pub use droid::Droid;
pub use gemini::Gemini;
pub use opencode::Opencode;
pub use qwen::Qwen;

use crate::Cli;

/// Every built-in CLI, in the order they are listed to users.
pub static ALL: &[Cli] = &[&Claude, &Codex, &Gemini, &Qwen, &Opencode, &Copilot, &Droid];

/// Their names, in the same order (for configuration errors).
pub const NAMES: &[&str] = &[
    "claude", "codex", "gemini", "qwen", "opencode", "copilot", "droid",
];

/// The names for a sentence: "claude, codex, … or opencode".
pub fn listed() -> String {
    match NAMES.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_names_are_those_of_the_adapters_and_unique() {
        let names: Vec<&str> = ALL.iter().map(|c| c.name()).collect();
        assert_eq!(names, NAMES);
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len());
    }
}
