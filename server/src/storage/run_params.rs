//! The parameters a job's own programs recorded, read across the tables
//! that hold them: a local run's (`local_runs.params`, a JSON object) and
//! those of every MLflow run that logs to the job (`mlflow_params`).

use app::error::AppError;
use sqlx::AssertSqlSafe;

use super::db::Pool;
use super::{internal, numbered_list};

/// Where a recorded parameter came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recorded {
    /// A local run's parameters, as the JSON object it stored.
    LocalRun(String),
    /// One MLflow param (runs oldest first, so a newer run's value comes later).
    Mlflow {
        /// The param's key.
        key: String,
        /// Its value.
        value: String,
    },
}

/// Reads recorded parameters.
#[derive(Clone)]
pub struct RunParamTable {
    pool: Pool,
}

impl RunParamTable {
    /// Wraps a migrated pool.
    pub fn new(pool: Pool) -> Self {
        Self { pool }
    }

    /// What each of the account's jobs `names` recorded, with its job's
    /// name, in one query (a comparison of a hundred runs asks for a
    /// hundred): per job, its local run's parameters first, then its MLflow
    /// runs' params, oldest run first. A name that is not the account's job
    /// recorded nothing.
    pub async fn of_jobs(
        &self,
        account_id: i64,
        names: &[String],
    ) -> Result<Vec<(String, Recorded)>, AppError> {
        if names.is_empty() {
            return Ok(Vec::new());
        }
        // Only placeholders are written into the text; the names are bound
        // (once, and used by both halves).
        let list = numbered_list(2, names.len());
        let sql = format!(
            "SELECT j.name AS job, CAST(0 AS BIGINT) AS src, '' AS k, l.params AS v, \
                    CAST(0 AS BIGINT) AS at, '' AS run \
               FROM jobs j JOIN local_runs l ON l.job_id = j.id \
              WHERE j.account_id = $1 AND j.name IN ({list}) \
             UNION ALL \
             SELECT j.name, CAST(1 AS BIGINT), p.key, p.value, r.start_time, r.run_id \
               FROM jobs j JOIN mlflow_runs r ON r.job_id = j.id \
               JOIN mlflow_params p ON p.run_id = r.run_id \
              WHERE j.account_id = $1 AND j.name IN ({list}) \
             ORDER BY 1, 2, 5, 6, 3"
        );
        let mut query = sqlx::query_as(AssertSqlSafe(sql)).bind(account_id);
        for name in names {
            query = query.bind(name);
        }
        let rows: Vec<(String, i64, String, String)> = query
            .fetch_all(&self.pool)
            .await
            .map_err(internal("read jobs' recorded parameters"))?;
        Ok(rows
            .into_iter()
            .map(|(job, src, key, value)| {
                let recorded = if src == 0 {
                    Recorded::LocalRun(value)
                } else {
                    Recorded::Mlflow { key, value }
                };
                (job, recorded)
            })
            .collect())
    }
}
