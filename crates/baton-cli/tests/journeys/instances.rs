//! Journeys through agent instances started by workflows and by issues,
//! the progress a repository keeps, and tasks that wait for a person.
