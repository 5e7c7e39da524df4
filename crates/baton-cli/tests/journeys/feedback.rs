//! Journeys through what a user sees while work runs and after it
//! ended: a long phase's signs of life, and messages that say what
//! happened.
