//! An agent phase run as a coding agent instance (`instance = { … }` on
//! the phase): its process is `baton agent phase`, which spawns the
//! instance with the rendered prompt as its instructions (or finds the one
//! an interrupted attempt spawned) and waits until its work is done. The
//! phase passes when the instance reaches its end state and fails with the
//! instance's error code otherwise; its summary is that end. The instance
//! records the task and phase it works for, so it ends with that work
//! (or with the task: cancelled, removed).

use super::launch::{self, Launch, Launched};
use super::{Attempt, attempt_var};
use crate::engine::{Engine, Held};
use crate::error::Result;
use baton_core::state::SessionStart;
use baton_core::template;
use baton_core::workflow::InstanceSpec;

impl Engine {
    pub(super) fn launch_instance(
        &self,
        held: &mut Held,
        at: &Attempt,
        t: &str,
        spec: &InstanceSpec,
    ) -> Result<Option<(Launched, Launch)>> {
        let prompt = template::render(t, |v| attempt_var(&held.state, at, v));
        let prompts = at.dir.join("prompts");
        fs_err::create_dir_all(&prompts)?;
        let file = prompts.join(format!("{}.md", at.label));
        fs_err::write(&file, &prompt)?;
        let agent = held
            .state
            .agent
            .clone()
            .or(at.def.agent.clone())
            .or(self.project.config.defaults.agent.clone())
            .unwrap_or_default();
        // One instance per iteration of the phase (counted from 0): a
        // retried or resumed attempt finds it again, a loop back or a
        // rewind gets the next (`…-2`, `…-3`).
        let id = match at.ps.iteration {
            0 => format!("{}-{}", at.id, at.phase),
            n => format!("{}-{}-{}", at.id, at.phase, n + 1),
        };
        let mut args: Vec<String> = vec![
            "--project".into(),
            self.project.root.display().to_string(),
            "agent".into(),
            "phase".into(),
            "--id".into(),
            id,
            "--task".into(),
            at.id.to_string(),
            "--phase".into(),
            at.phase.to_string(),
            "--instructions-file".into(),
            file.display().to_string(),
            "--agent".into(),
            agent.clone(),
        ];
        if let Some(r) = spec.require_review {
            args.extend(["--require-review".into(), r.to_string()]);
        }
        if let Some(m) = spec.max_reviews {
            args.extend(["--max-reviews".into(), m.to_string()]);
        }
        if let Some(b) = &spec.base {
            args.extend(["--base".into(), b.clone()]);
        }
        if let Some(ms) = spec.timeout_ms {
            args.extend(["--timeout-ms".into(), ms.to_string()]);
        }
        if spec.interactive {
            args.push("--interactive".into());
        }
        let l = Launch {
            program: std::env::current_exe()?.display().to_string(),
            args,
            env: at.env.clone(),
            stdout: at.stdout.clone(),
            stderr: at.stderr.clone(),
            cli: None,
            session: None,
            agent,
            start: SessionStart::New,
            forks: None,
        };
        let mut launched = self.launch(
            held,
            &at.phase,
            &l,
            at.timeout,
            &mut launch::VersionProbe::none(),
        )?;
        // Failed: the instance's typed error is the phase's failure.
        if let Ok(baton_sys::process::Waited::Exited(st)) = &launched.waited
            && !st.success()
        {
            let stderr = baton_sys::process::read_tail(&l.stderr, 8000);
            if let Some(e) = stderr
                .lines()
                .rev()
                .find_map(|line| line.strip_prefix("error: "))
            {
                launched.waited = Err(e.to_string());
            }
        }
        Ok(Some((launched, l)))
    }
}
