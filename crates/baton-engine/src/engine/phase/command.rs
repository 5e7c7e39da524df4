//! Launching a `run` phase's command: `sh -c`, with each template value
//! passed in an environment variable, never as shell text.

use super::launch::{self, Launch, Launched};
use super::{Attempt, MAX_ARG_BYTES, attempt_var};
use crate::engine::{Engine, Held};
use crate::error::Result;
use baton_core::state::SessionStart;
use baton_core::template;

impl Engine {
    /// Launches the command of a `run` phase and waits for it. `None`: the
    /// attempt failed before its process could start (journaled).
    pub(super) fn launch_command(
        &self,
        held: &mut Held,
        at: &Attempt,
        command: &str,
    ) -> Result<Option<(Launched, Launch)>> {
        let Attempt {
            phase,
            stdout,
            stderr,
            ..
        } = at;
        let (started, timeout) = (at.started, at.timeout);
        let vars = |v: &str| attempt_var(&held.state, at, v);
        let mut env = at.env.clone();
        // Values never enter the shell text: each variable becomes
        // `${BATON_VAR_…}`, set in the environment, so a task
        // description like `$(rm -rf ~)` stays text.
        let (script, refs) = template::render_for_shell(command);
        let values: Vec<(String, String, String)> = refs
            .into_iter()
            .map(|(var, name)| {
                let value = vars(&var).unwrap_or_default();
                (var, name, value)
            })
            .collect();
        if let Some((var, _, value)) = values.iter().find(|(_, _, v)| v.len() > MAX_ARG_BYTES) {
            let message = format!(
                "{{{{{var}}}}} is {} bytes, more than the {MAX_ARG_BYTES} bytes a command may be given in one environment variable; {}",
                value.len(),
                if var == "brief" {
                    "read the file $BATON_BRIEF_FILE instead of using {{brief}}"
                } else {
                    "shorten it"
                }
            );
            return self.fail_unstarted(held, phase, started, message);
        }
        for (_, name, value) in values {
            env.push((name, value));
        }
        let l = launch::Launch {
            program: "sh".into(),
            args: vec!["-c".to_string(), script],
            env,
            stdout: stdout.clone(),
            stderr: stderr.clone(),
            cli: None,
            session: None,
            agent: String::new(),
            start: SessionStart::New,
            forks: None,
        };
        let launched = self.launch(held, phase, &l, timeout, &mut launch::VersionProbe::none())?;
        Ok(Some((launched, l)))
    }
}
