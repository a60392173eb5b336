//! One module per page.

pub mod access_keys;
pub mod account;
pub mod account_security;
pub mod admin;
pub mod assets;
pub mod audit;
pub mod auth;
pub mod environments;
pub mod experiments;
pub mod jobs;
pub mod join;
pub mod lineage;
pub mod members;
pub mod not_found;
pub mod notebook_history;
pub mod notebook_runs;
pub mod notebook_shares;
pub mod notebooks;
pub mod notifications;
pub mod paddleboard;
pub mod pipelines;
pub mod quota;
pub mod schedules;
pub mod serving;
pub mod template_save;
pub mod templates;
