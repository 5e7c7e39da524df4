//! A child session's parents' logs, rendered again when one of its turns
//! starts (the link appears) or ends (its tokens are known): a review's
//! parent turn (the coding agent's turn that asked for it), a teammate's
//! team. Derived files: a failure is only said.

use crate::engine::Engine;
use baton_core::instance::InstanceId;

impl Engine {
    /// After a turn of agent instance `instance` started or ended.
    pub(crate) fn parents_of_turn_changed(&self, instance: &str) {
        let Ok(all) = self.store.instances() else {
            return;
        };
        let Some(inst) = InstanceId::parse(instance)
            .ok()
            .and_then(|i| all.get(&i).cloned())
        else {
            return;
        };
        // A review is linked from its parent's turn that was running when
        // it started.
        if let Some(r) = inst.review()
            && let Some(parent) = all.get(&r.parent_instance_id)
        {
            let asked_in = parent.turns.iter().rev().find(|t| {
                self.store
                    .load(t)
                    .ok()
                    .flatten()
                    .is_some_and(|s| s.state.created_at <= inst.started_at)
            });
            if let Some(turn) = asked_in
                && let Err(e) = self.render_session(turn)
            {
                tracing::warn!(task = %turn, error = %e, "session log not rendered");
            }
        }
        if let Some((team, _)) = self.team_member_of_instance(instance)
            && let Ok(Some(t)) = self.store.team(&team)
        {
            self.team_changed(&t);
        }
    }
}
