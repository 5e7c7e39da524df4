//! The generic adapter: any CLI that takes a prompt, configured as
//! `command = ["aider", "--message-file", "{{prompt_file}}"]`. baton runs
//! the command as written with `{{prompt}}` and `{{prompt_file}}` filled
//! in; its output is not parsed (no native session, no stream events), so
//! its stdout tail is the phase's output. Presets for CLIs baton has no
//! built-in adapter for (Factory droid's older builds, Cursor agent, Amp,
//! Crush, Aider) are in docs/config.md.

use std::path::Path;

/// What a run of a generic agent is journaled as in place of a built-in
/// CLI's name (`AgentSession.cli`): it has no native session to continue.
pub const CLI: &str = "command";

/// `argv` (a built-in adapter's or a generic command) with the prompt and
/// the prompt file's path filled in.
pub fn fill(argv: &[String], prompt: &str, prompt_file: &Path) -> Vec<String> {
    let pf = prompt_file.display().to_string();
    argv.iter()
        .map(|a| {
            a.replace("{{prompt_file}}", &pf)
                .replace("{{prompt}}", prompt)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_and_its_file_are_filled_in_where_the_command_names_them() {
        let argv = vec![
            "aider".to_string(),
            "--message-file".into(),
            "{{prompt_file}}".into(),
            "--say={{prompt}}".into(),
        ];
        assert_eq!(
            fill(&argv, "hi", Path::new("/t/p.md")),
            ["aider", "--message-file", "/t/p.md", "--say=hi"]
        );
    }
}
