//! What baton needs of the system, with no engine above it: git plumbing
//! (checkpoints, phase snapshots, restores, what a worktree holds), phase
//! processes in their own process groups, tmux on baton's own socket,
//! this machine's identity and process probes, and a project's tech
//! stack. It uses nothing of baton's but the core's types; the engine
//! decides when each is used.

pub mod git;
pub mod host;
pub mod process;
pub mod techstack;
pub mod tmux;
