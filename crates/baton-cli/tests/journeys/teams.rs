//! Journeys through teams: consolidation with its checks, teammates'
//! branches, rollbacks, zombie mode and imports.
