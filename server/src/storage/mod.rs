//! The bottom layer: what backends and services both keep. The database
//! pool and its migrations ([`db`]), the job and pod records every cluster
//! backend writes ([`jobs`]), serving records ([`serving`]), resource
//! samples ([`samples`]), pod log files ([`logfile`]), tokens
//! ([`tokens`]), what other replicas changed ([`changes`]), the user row every "who is this" query reads
//! ([`users`]), the audit log ([`audit`]) and rate limits ([`throttle`]). Nothing here knows of a backend, a service or HTTP.

pub mod audit;
pub mod catalog;
pub mod changes;
pub mod db;
pub mod jobs;
pub mod lease;
pub mod logfile;
pub mod notebooks;
pub mod pipelines;
pub mod samples;
pub mod serving;
pub mod throttle;
pub mod tokens;
pub mod users;

use app::error::AppError;

/// Logs a database failure and hides it from the caller.
pub(crate) fn internal(context: &'static str) -> impl FnOnce(sqlx::Error) -> AppError {
    move |err| {
        tracing::error!(error = %err, "{context}");
        AppError::Internal
    }
}
