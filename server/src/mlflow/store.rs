//! SQL for MLflow experiments and runs. A run is backed by a job: a new one
//! (source `mlflow`, no replicas) named after the run, or an existing job
//! named by the run's `paddlecloud.job` tag, whose metrics the run then logs.

use app::error::AppError;
use app::models::{JobSource, JobSpec, JobStatus, Me};
use sqlx::AnyPool;

use super::wire::{Experiment, KeyValue, MlflowError, RunInfo};
use crate::storage::internal;
use crate::storage::jobs::JobStore;
use crate::time::now_ms;

/// The tag that attaches a run to an existing job of the account.
pub const JOB_TAG: &str = "paddlecloud.job";
/// The API id of each account's default experiment.
pub const DEFAULT_EXPERIMENT: &str = "0";
const DEFAULT_NAME: &str = "Default";

/// A run as the handlers need it.
#[derive(Debug, Clone)]
pub struct RunRow {
    /// Identity and state, as the API shows them.
    pub info: RunInfo,
    /// The job whose metrics the run logs.
    pub job: String,
    /// The job's id.
    pub job_id: i64,
    /// Whether the job is the run's own (not an attached console job).
    pub owns_job: bool,
}

/// MLflow's tables.
#[derive(Clone)]
pub struct MlflowStore {
    pool: AnyPool,
    jobs: JobStore,
}

/// MLflow status → the job table's.
pub fn job_status(status: &str) -> JobStatus {
    match status {
        "FINISHED" => JobStatus::Succeeded,
        "FAILED" => JobStatus::Failed,
        "KILLED" => JobStatus::Stopped,
        "SCHEDULED" => JobStatus::Pending,
        _ => JobStatus::Running,
    }
}

/// A run name as a job name: a DNS-1123 label of at most 40 characters.
fn job_name_for(run_name: &str) -> String {
    let mut name: String = run_name
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    name = name
        .split('-')
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    name.truncate(40);
    let name = name.trim_matches('-').to_owned();
    if name.is_empty() || !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        format!("run-{name}").trim_end_matches('-').to_owned()
    } else {
        name
    }
}

impl MlflowStore {
    /// Wraps a migrated pool.
    pub fn new(pool: AnyPool) -> Self {
        Self {
            jobs: JobStore::new(pool.clone()),
            pool,
        }
    }

    /// The database id behind an API experiment id of `account`.
    async fn experiment_row(&self, account_id: i64, api_id: &str) -> Result<i64, MlflowError> {
        if api_id == DEFAULT_EXPERIMENT {
            return self.default_experiment(account_id).await;
        }
        let id: i64 = api_id.parse().map_err(|_| {
            MlflowError::not_found(format!("No Experiment with id={api_id} exists"))
        })?;
        let found: Option<i64> = sqlx::query_scalar(
            "SELECT id FROM mlflow_experiments WHERE id = $1 AND account_id = $2 AND name <> $3",
        )
        .bind(id)
        .bind(account_id)
        .bind(DEFAULT_NAME)
        .fetch_optional(&self.pool)
        .await
        .map_err(internal("find experiment"))?;
        found
            .ok_or_else(|| MlflowError::not_found(format!("No Experiment with id={api_id} exists")))
    }

    /// The account's Default experiment (API id `0`), made on first use.
    async fn default_experiment(&self, account_id: i64) -> Result<i64, MlflowError> {
        let now = now_ms();
        sqlx::query(
            "INSERT INTO mlflow_experiments (account_id, name, creation_time, last_update_time) \
             VALUES ($1, $2, $3, $3) ON CONFLICT (account_id, name) DO NOTHING",
        )
        .bind(account_id)
        .bind(DEFAULT_NAME)
        .bind(now)
        .execute(&self.pool)
        .await
        .map_err(internal("create default experiment"))?;
        Ok(sqlx::query_scalar(
            "SELECT id FROM mlflow_experiments WHERE account_id = $1 AND name = $2",
        )
        .bind(account_id)
        .bind(DEFAULT_NAME)
        .fetch_one(&self.pool)
        .await
        .map_err(internal("read default experiment"))?)
    }

    /// Creates an experiment; a taken name is `RESOURCE_ALREADY_EXISTS`.
    pub async fn create_experiment(
        &self,
        account_id: i64,
        name: &str,
        tags: &[KeyValue],
    ) -> Result<String, MlflowError> {
        if name.trim().is_empty() || name.len() > 500 {
            return Err(MlflowError::invalid(
                "An experiment needs a name of 1 to 500 characters.",
            ));
        }
        let now = now_ms();
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(internal("begin experiment"))?;
        let id: Option<i64> = sqlx::query_scalar(
            "INSERT INTO mlflow_experiments (account_id, name, creation_time, last_update_time) \
             VALUES ($1, $2, $3, $3) ON CONFLICT (account_id, name) DO NOTHING RETURNING id",
        )
        .bind(account_id)
        .bind(name)
        .bind(now)
        .fetch_optional(&mut *tx)
        .await
        .map_err(internal("create experiment"))?;
        let Some(id) = id else {
            return Err(MlflowError::exists(format!(
                "Experiment(name={name}) already exists."
            )));
        };
        for tag in tags {
            sqlx::query(
                "INSERT INTO mlflow_experiment_tags (experiment_id, key, value) VALUES ($1, $2, $3) \
                 ON CONFLICT (experiment_id, key) DO UPDATE SET value = excluded.value",
            )
            .bind(id)
            .bind(&tag.key)
            .bind(&tag.value)
            .execute(&mut *tx)
            .await
            .map_err(internal("tag experiment"))?;
        }
        tx.commit().await.map_err(internal("commit experiment"))?;
        Ok(if name == DEFAULT_NAME {
            DEFAULT_EXPERIMENT.to_owned()
        } else {
            id.to_string()
        })
    }

    /// An experiment by API id.
    pub async fn experiment(
        &self,
        account_id: i64,
        api_id: &str,
    ) -> Result<Experiment, MlflowError> {
        let id = self.experiment_row(account_id, api_id).await?;
        self.experiment_by(account_id, "id = $2", Some(id), None)
            .await?
            .ok_or_else(|| MlflowError::not_found(format!("No Experiment with id={api_id} exists")))
    }

    /// An experiment by name.
    pub async fn experiment_by_name(
        &self,
        account_id: i64,
        name: &str,
    ) -> Result<Experiment, MlflowError> {
        if name == DEFAULT_NAME {
            self.default_experiment(account_id).await?;
        }
        self.experiment_by(account_id, "name = $2", None, Some(name))
            .await?
            .ok_or_else(|| {
                MlflowError::not_found(format!("Could not find experiment with name '{name}'"))
            })
    }

    async fn experiment_by(
        &self,
        account_id: i64,
        filter: &'static str,
        id: Option<i64>,
        name: Option<&str>,
    ) -> Result<Option<Experiment>, MlflowError> {
        let sql = format!(
            "SELECT id, name, lifecycle_stage, creation_time, last_update_time \
             FROM mlflow_experiments WHERE account_id = $1 AND {filter}"
        );
        let query = sqlx::query_as::<_, (i64, String, String, i64, i64)>(sqlx::AssertSqlSafe(sql))
            .bind(account_id);
        let query = match (id, name) {
            (Some(id), _) => query.bind(id),
            (_, Some(name)) => query.bind(name.to_owned()),
            _ => return Ok(None),
        };
        let Some((id, name, stage, created, updated)) = query
            .fetch_optional(&self.pool)
            .await
            .map_err(internal("read experiment"))?
        else {
            return Ok(None);
        };
        let tags: Vec<(String, String)> = sqlx::query_as(
            "SELECT key, value FROM mlflow_experiment_tags WHERE experiment_id = $1 ORDER BY key",
        )
        .bind(id)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("read experiment tags"))?;
        let api_id = if name == DEFAULT_NAME {
            DEFAULT_EXPERIMENT.to_owned()
        } else {
            id.to_string()
        };
        Ok(Some(Experiment {
            artifact_location: format!("mlflow-artifacts:/{api_id}"),
            experiment_id: api_id,
            name,
            lifecycle_stage: stage,
            creation_time: created,
            last_update_time: updated,
            tags: tags
                .into_iter()
                .map(|(key, value)| KeyValue { key, value })
                .collect(),
        }))
    }

    /// Creates a run and the job behind it (or attaches it to the job its
    /// `paddlecloud.job` tag names).
    pub async fn create_run(
        &self,
        by: &Me,
        experiment: &str,
        run_name: &str,
        user_id: &str,
        start_time: i64,
        tags: &[KeyValue],
    ) -> Result<RunRow, MlflowError> {
        let experiment_row = self.experiment_row(by.account.id, experiment).await?;
        let attach = tags
            .iter()
            .find(|t| t.key == JOB_TAG)
            .map(|t| t.value.trim());
        let (job_id, job, owns_job) = match attach {
            Some(name) => (
                self.jobs.id_of(by.account.id, name).await?,
                name.to_owned(),
                false,
            ),
            None => {
                let (id, name) = self.new_run_job(by, run_name, start_time).await?;
                (id, name, true)
            }
        };
        let mut raw = [0u8; 16];
        getrandom::fill(&mut raw).map_err(|_| AppError::Internal)?;
        let run_id = hex::encode(raw);
        let mut tx = self.pool.begin().await.map_err(internal("begin run"))?;
        sqlx::query(
            "INSERT INTO mlflow_runs (run_id, account_id, experiment_id, job_id, run_name, \
             user_id, status, start_time) VALUES ($1, $2, $3, $4, $5, $6, 'RUNNING', $7)",
        )
        .bind(&run_id)
        .bind(by.account.id)
        .bind(experiment_row)
        .bind(job_id)
        .bind(run_name)
        .bind(user_id)
        .bind(start_time)
        .execute(&mut *tx)
        .await
        .map_err(internal("create run"))?;
        for tag in tags {
            upsert_tag(&mut tx, &run_id, tag).await?;
        }
        tx.commit().await.map_err(internal("commit run"))?;
        Ok(RunRow {
            info: RunInfo {
                run_uuid: run_id.clone(),
                artifact_uri: format!("mlflow-artifacts:/{experiment}/{run_id}/artifacts"),
                run_id,
                run_name: run_name.to_owned(),
                experiment_id: experiment.to_owned(),
                user_id: user_id.to_owned(),
                status: "RUNNING".into(),
                start_time,
                end_time: None,
                lifecycle_stage: "active".into(),
            },
            job,
            job_id,
            owns_job,
        })
    }

    /// A job for a new run, named after it (made unique in the account).
    async fn new_run_job(
        &self,
        by: &Me,
        run_name: &str,
        start_time: i64,
    ) -> Result<(i64, String), MlflowError> {
        let base = job_name_for(run_name);
        for n in 1..=50 {
            let name = if n == 1 {
                base.clone()
            } else {
                format!("{base}-{n}")
            };
            let spec = JobSpec::recorded(&name, vec!["mlflow".into()], String::new(), 0);
            match self.jobs.insert(by, &spec, crate::local::LOCAL).await {
                Ok((stored, _token)) => {
                    sqlx::query(
                        "UPDATE jobs SET source = $1, status = 'running', started_at = $2 \
                         WHERE id = $3",
                    )
                    .bind(JobSource::Mlflow.as_str())
                    .bind(start_time)
                    .bind(stored.id)
                    .execute(&self.pool)
                    .await
                    .map_err(internal("mark run job"))?;
                    return Ok((stored.id, name));
                }
                Err(AppError::Conflict { .. }) => continue,
                Err(err) => return Err(err.into()),
            }
        }
        Err(MlflowError::invalid(format!(
            "Too many jobs are called like the run “{run_name}”; name the run differently."
        )))
    }

    /// A run of the account.
    pub async fn run(&self, account_id: i64, run_id: &str) -> Result<RunRow, MlflowError> {
        type Row = (
            String,
            i64,
            String,
            String,
            String,
            i64,
            Option<i64>,
            String,
            i64,
            String,
            String,
            String,
        );
        let row: Option<Row> = sqlx::query_as(
            "SELECT r.run_id, r.experiment_id, r.run_name, r.user_id, r.status, r.start_time, \
             r.end_time, r.lifecycle_stage, r.job_id, j.name, j.source, e.name \
             FROM mlflow_runs r JOIN jobs j ON j.id = r.job_id \
             JOIN mlflow_experiments e ON e.id = r.experiment_id \
             WHERE r.run_id = $1 AND r.account_id = $2",
        )
        .bind(run_id)
        .bind(account_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(internal("read run"))?;
        let Some((id, exp, name, user, status, start, end, stage, job_id, job, source, exp_name)) =
            row
        else {
            return Err(MlflowError::not_found(format!(
                "Run with id={run_id} not found"
            )));
        };
        let experiment = if exp_name == DEFAULT_NAME {
            DEFAULT_EXPERIMENT.to_owned()
        } else {
            exp.to_string()
        };
        Ok(RunRow {
            info: RunInfo {
                run_uuid: id.clone(),
                artifact_uri: format!("mlflow-artifacts:/{experiment}/{id}/artifacts"),
                run_id: id,
                run_name: name,
                experiment_id: experiment,
                user_id: user,
                status,
                start_time: start,
                end_time: end.filter(|t| *t > 0),
                lifecycle_stage: stage,
            },
            job,
            job_id,
            owns_job: JobSource::parse(&source) == JobSource::Mlflow,
        })
    }

    /// Changes a run's status, end time or name; the run's own job follows.
    pub async fn update_run(
        &self,
        run: &RunRow,
        status: Option<&str>,
        end_time: Option<i64>,
        run_name: Option<&str>,
    ) -> Result<(), MlflowError> {
        let status = status.unwrap_or(&run.info.status);
        let run_name = run_name.unwrap_or(&run.info.run_name);
        let end_time = end_time.or(run.info.end_time);
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(internal("begin update run"))?;
        sqlx::query(
            "UPDATE mlflow_runs SET status = $1, end_time = $2, run_name = $3 WHERE run_id = $4",
        )
        .bind(status)
        .bind(end_time)
        .bind(run_name)
        .bind(&run.info.run_id)
        .execute(&mut *tx)
        .await
        .map_err(internal("update run"))?;
        upsert_tag(
            &mut tx,
            &run.info.run_id,
            &KeyValue {
                key: "mlflow.runName".into(),
                value: run_name.to_owned(),
            },
        )
        .await?;
        if run.owns_job {
            let state = job_status(status);
            let finished = (!state.is_active()).then(|| end_time.unwrap_or_else(now_ms));
            sqlx::query("UPDATE jobs SET status = $1, finished_at = $2 WHERE id = $3")
                .bind(state.as_str())
                .bind(finished)
                .bind(run.job_id)
                .execute(&mut *tx)
                .await
                .map_err(internal("update run job"))?;
        }
        tx.commit().await.map_err(internal("commit update run"))?;
        Ok(())
    }

    /// Records params; one already logged with another value is refused,
    /// as MLflow does (params are inputs, fixed once logged).
    pub async fn log_params(&self, run_id: &str, params: &[KeyValue]) -> Result<(), MlflowError> {
        let mut tx = self.pool.begin().await.map_err(internal("begin params"))?;
        for p in params {
            let old: Option<String> = sqlx::query_scalar(
                "SELECT value FROM mlflow_params WHERE run_id = $1 AND key = $2",
            )
            .bind(run_id)
            .bind(&p.key)
            .fetch_optional(&mut *tx)
            .await
            .map_err(internal("read param"))?;
            match old {
                Some(old) if old == p.value => {}
                Some(old) => {
                    return Err(MlflowError::invalid(format!(
                        "Changing param values is not allowed. Param with key='{}' was already \
                         logged with value='{old}' for run ID='{run_id}'. Attempted logging new \
                         value '{}'.",
                        p.key, p.value
                    )))
                }
                None => {
                    sqlx::query(
                        "INSERT INTO mlflow_params (run_id, key, value) VALUES ($1, $2, $3)",
                    )
                    .bind(run_id)
                    .bind(&p.key)
                    .bind(&p.value)
                    .execute(&mut *tx)
                    .await
                    .map_err(internal("insert param"))?;
                }
            }
        }
        tx.commit().await.map_err(internal("commit params"))?;
        Ok(())
    }

    /// Sets tags (last value wins).
    pub async fn set_tags(&self, run_id: &str, tags: &[KeyValue]) -> Result<(), MlflowError> {
        let mut tx = self.pool.begin().await.map_err(internal("begin tags"))?;
        for tag in tags {
            upsert_tag(&mut tx, run_id, tag).await?;
        }
        tx.commit().await.map_err(internal("commit tags"))?;
        Ok(())
    }

    /// A run's params and tags.
    pub async fn params_and_tags(
        &self,
        run_id: &str,
    ) -> Result<(Vec<KeyValue>, Vec<KeyValue>), MlflowError> {
        let read = |table: &'static str| {
            let pool = self.pool.clone();
            let run_id = run_id.to_owned();
            async move {
                let rows: Vec<(String, String)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT key, value FROM {table} WHERE run_id = $1 ORDER BY key"
                )))
                .bind(run_id)
                .fetch_all(&pool)
                .await
                .map_err(internal("read run data"))?;
                Ok::<_, MlflowError>(
                    rows.into_iter()
                        .map(|(key, value)| KeyValue { key, value })
                        .collect(),
                )
            }
        };
        Ok((read("mlflow_params").await?, read("mlflow_run_tags").await?))
    }
}

async fn upsert_tag(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    run_id: &str,
    tag: &KeyValue,
) -> Result<(), MlflowError> {
    sqlx::query(
        "INSERT INTO mlflow_run_tags (run_id, key, value) VALUES ($1, $2, $3) \
         ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value",
    )
    .bind(run_id)
    .bind(&tag.key)
    .bind(&tag.value)
    .execute(&mut **tx)
    .await
    .map_err(internal("set run tag"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_names_become_job_names() {
        assert_eq!(job_name_for("Upbeat Fox 42"), "upbeat-fox-42");
        assert_eq!(job_name_for("  "), "run");
        assert_eq!(job_name_for("3rd try"), "run-3rd-try");
        assert_eq!(job_name_for(&"x".repeat(60)).len(), 40);
    }
}
