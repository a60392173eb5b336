//! The bottom layer, and the one home of SQL: every query the console makes
//! is in a file here (`tests/it/architecture.rs` checks it). The database
//! pool and its migrations ([`db`]), the job and pod records every cluster
//! backend writes ([`jobs`]), serving records ([`serving`]), resource
//! samples ([`samples`]), pod log files ([`logfile`]), tokens
//! ([`tokens`]), what other replicas changed ([`changes`]), the user row
//! every "who is this" query reads ([`users`]), the audit log ([`audit`]),
//! rate limits ([`throttle`]), and each service's own tables: accounts and
//! their users' credentials ([`accounts`]), sign-in sessions ([`sessions`]),
//! members, roles and caps ([`members`]), invitations ([`invitations`]),
//! the tokens behind mailed links ([`user_links`]), PaddleBoard's
//! points ([`metrics`]), datasets and models ([`assets`]), quotas
//! ([`quota`]), access keys ([`access_keys`]), local runs ([`local_runs`]),
//! MLflow's experiments and runs ([`mlflow`]), and the parameters the last
//! two recorded, read together ([`run_params`]).
//! Nothing here knows of a backend, a service or HTTP: stores take and give
//! models and plain values.

pub mod access_keys;
pub mod accounts;
pub mod alerts;
pub mod assets;
pub mod audit;
pub mod catalog;
pub mod changes;
pub mod db;
pub mod experiments;
pub mod identities;
pub mod invitations;
pub mod job_history;
pub mod jobs;
pub mod lease;
pub mod local_runs;
pub mod log_dumps;
pub mod logfile;
pub mod members;
pub mod metrics;
pub mod mlflow;
pub mod model_aliases;
pub mod notebook_shares;
pub mod notebook_versions;
pub mod notebooks;
pub mod notifications;
pub mod pipelines;
pub mod quota;
pub mod run_params;
pub mod samples;
pub mod schedules;
pub mod secrets;
pub mod serving;
pub mod serving_versions;
pub mod sessions;
pub mod sqlite_memory;
pub mod stalls;
pub mod telemetry;
pub mod throttle;
pub mod tokens;
pub mod user_links;
pub mod users;

use app::error::AppError;

/// `rows` comma-separated copies of `shape` (e.g. `"(?, ?, '', ?)"`) with
/// each `?` numbered on from `$1`, for a multi-row `INSERT … VALUES`.
pub(crate) fn numbered_rows(rows: usize, shape: &str) -> String {
    let mut sql = String::new();
    let mut n = 0;
    for row in 0..rows {
        if row > 0 {
            sql.push_str(", ");
        }
        for c in shape.chars() {
            if c == '?' {
                n += 1;
                sql.push_str(&format!("${n}"));
            } else {
                sql.push(c);
            }
        }
    }
    sql
}

/// `n` comma-separated placeholders numbered on from `$first`, for an
/// `IN (…)` list of bound values (`numbered_list(3, 2)`: `$3, $4`).
pub(crate) fn numbered_list(first: usize, n: usize) -> String {
    (first..first + n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Logs a database failure and hides it from the caller: a database that
/// cannot be reached just now (down, restarting, cut the connection, no
/// connection free in time) is a 503 the caller may retry; anything else
/// is a 500.
pub(crate) fn internal(context: &'static str) -> impl FnOnce(sqlx::Error) -> AppError {
    move |err| {
        if unreachable(&err) {
            tracing::warn!(error = %err, "{context}: the database is unreachable");
            AppError::Unavailable {
                message: "The database cannot be reached just now; please try again shortly."
                    .into(),
            }
        } else {
            tracing::error!(error = %err, "{context}");
            AppError::Internal
        }
    }
}

/// Whether `err` says the database is away rather than the query wrong:
/// no connection (refused, reset, timed out waiting for one) or PostgreSQL
/// shutting down or not accepting connections (SQLSTATE classes 08, 57P
/// and "too many connections").
pub fn unreachable(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => db.code().is_some_and(|code| {
            code.starts_with("08") || code.starts_with("57P") || code == "53300"
        }),
        _ => false,
    }
}

/// The JSON text a store keeps of `value` in a column (a spec, values):
/// a value that cannot be written is the console's fault, logged.
pub(crate) fn to_json<T: serde::Serialize>(value: &T) -> Result<String, AppError> {
    serde_json::to_string(value).map_err(|err| {
        tracing::error!(error = %err, "encoding a JSON column");
        AppError::Internal
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_of_placeholders_are_numbered_on_across_rows() {
        assert_eq!(numbered_rows(2, "(?, '', ?)"), "($1, '', $2), ($3, '', $4)");
        assert_eq!(numbered_rows(0, "(?)"), "");
    }

    #[test]
    fn a_list_of_placeholders_starts_where_asked() {
        assert_eq!(numbered_list(3, 3), "$3, $4, $5");
        assert_eq!(numbered_list(1, 0), "");
    }

    #[test]
    fn a_database_out_of_reach_is_a_503_and_a_wrong_query_a_500() {
        let away = internal("test")(sqlx::Error::PoolTimedOut);
        assert!(matches!(away, AppError::Unavailable { .. }), "{away:?}");
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        assert!(unreachable(&sqlx::Error::Io(reset)));
        assert_eq!(
            internal("test")(sqlx::Error::RowNotFound),
            AppError::Internal
        );
        assert!(!unreachable(&sqlx::Error::ColumnNotFound("x".into())));
    }
}
