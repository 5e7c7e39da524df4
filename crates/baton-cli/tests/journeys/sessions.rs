//! Journeys through session logs: from the first phase, through a
//! crash, into codify and back into a run.
