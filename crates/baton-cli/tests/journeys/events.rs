//! Journeys through webhooks and the stages that wait for them: an
//! event that comes before its stage is kept for it, never lost, never
//! resuming a task at a stage it is not at.
