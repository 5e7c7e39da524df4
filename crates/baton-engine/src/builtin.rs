//! What the engine knows of the features built on it, in one place: the
//! workflows baton brings (a project's `.baton/workflows/NAME.toml`
//! replaces one of the same name) and the labels by which a task says it
//! is a feature's work. Instances, session logs and teams use these; the
//! engine needs nothing else of them.

/// The label that ties a turn's task to its agent instance.
pub const INSTANCE_LABEL: &str = "baton-instance";

/// `continue`: one agent phase that finishes a session begun outside
/// baton (`baton import`), from its brief.
pub const CONTINUE: &str = "continue";
/// `agent-turn`: an agent instance's turn, one agent phase whose prompt is
/// the task's description.
pub const AGENT_TURN: &str = "agent-turn";
/// `codify-refine`: an agent cleans up a workflow drafted from a session
/// log (`baton session codify --refine`).
pub const CODIFY_REFINE: &str = "codify-refine";

/// The built-in workflows, by name, as TOML.
pub const WORKFLOWS: [(&str, &str); 3] = [
    (
        CONTINUE,
        "name = \"continue\"\n\n[[phase]]\nid = \"continue\"\nprompt = \"\"\"\nContinue the work of the session below, which began outside baton, and finish it.\n\n{{brief}}\n\"\"\"\n",
    ),
    (
        AGENT_TURN,
        "name = \"agent-turn\"\n\n[[phase]]\nid = \"work\"\nprompt = \"{{task}}\"\n",
    ),
    (
        CODIFY_REFINE,
        "name = \"codify-refine\"\n\n[[phase]]\nid = \"refine\"\nprompt = \"\"\"\nBelow is a baton workflow drafted from a session log. Clean it up: give the phases clear ids and prompts that say what to do (keep {{task}} and {{brief}} where they are useful), merge phases that are one step, keep the wait phases and loop_to keys that make sense. Keep the name and the TOML format (docs: [[phase]] tables with id and one of prompt, run or wait). Answer with the whole workflow in one ```toml block and nothing else.\n\n{{task}}\n\"\"\"\n",
    ),
];

/// The built-in workflow `name`, as TOML.
pub fn workflow(name: &str) -> Option<&'static str> {
    WORKFLOWS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| *text)
}
