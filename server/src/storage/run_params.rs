//! The parameters a job's own programs recorded, read across the tables
//! that hold them: a local run's (`local_runs.params`, a JSON object) and
//! those of every MLflow run that logs to the job (`mlflow_params`).

use app::error::AppError;

use super::db::Pool;
use super::internal;

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

    /// What the job `name` of the account recorded, in one query: its local
    /// run's parameters first, then its MLflow runs' params, oldest run
    /// first. A job that is not the account's recorded nothing.
    pub async fn of_job(&self, account_id: i64, name: &str) -> Result<Vec<Recorded>, AppError> {
        let rows: Vec<(i64, String, String)> = sqlx::query_as(
            "SELECT CAST(0 AS BIGINT) AS src, '' AS k, l.params AS v, CAST(0 AS BIGINT) AS at, '' AS run \
               FROM jobs j JOIN local_runs l ON l.job_id = j.id \
              WHERE j.account_id = $1 AND j.name = $2 \
             UNION ALL \
             SELECT CAST(1 AS BIGINT), p.key, p.value, r.start_time, r.run_id \
               FROM jobs j JOIN mlflow_runs r ON r.job_id = j.id \
               JOIN mlflow_params p ON p.run_id = r.run_id \
              WHERE j.account_id = $1 AND j.name = $2 \
             ORDER BY 1, 4, 5, 2",
        )
        .bind(account_id)
        .bind(name)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("read a job's recorded parameters"))?;
        Ok(rows
            .into_iter()
            .map(|(src, key, value)| {
                if src == 0 {
                    Recorded::LocalRun(value)
                } else {
                    Recorded::Mlflow { key, value }
                }
            })
            .collect())
    }
}
