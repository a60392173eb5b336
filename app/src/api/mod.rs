//! Server functions: thin calls from the UI into the ports.

pub mod access_keys;
pub mod accounts;
pub mod alerts;
pub mod assets;
pub mod compare;
#[cfg(feature = "ssr")]
pub mod context;
pub mod environments;
pub mod experiments;
pub mod jobs;
pub mod lineage;
pub mod members;
pub mod notebook_runs;
pub mod notebook_shares;
pub mod notebook_versions;
pub mod notebooks;
pub mod notifications;
pub mod paddleboard;
pub mod pipelines;
pub mod schedules;
pub mod scoring;
pub mod secrets;
pub mod serving;
pub mod templates;
pub mod usage;
