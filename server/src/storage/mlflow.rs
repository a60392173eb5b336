//! SQL for MLflow's tables: experiments and their tags, runs and their
//! params and tags, and the two writes a run makes to the job behind it.
//! What MLflow calls things (the Default experiment's API id `0`, run ids,
//! statuses, error codes) is `crate::mlflow`'s: here are rows, keyed by
//! database ids, with tags and params as `(key, value)` pairs.

use app::error::AppError;
use app::models::{JobSource, JobStatus};
use sqlx::AnyPool;

use crate::storage::db::WriteTx;
use crate::storage::internal;
use crate::storage::job_history::job_moves;
use crate::time::now_ms;

/// An experiment row and its tags.
#[derive(Debug, Clone)]
pub struct ExperimentRecord {
    /// Database id.
    pub id: i64,
    /// Its name, unique in the account.
    pub name: String,
    /// `active` or `deleted`.
    pub lifecycle_stage: String,
    /// Unix ms.
    pub creation_time: i64,
    /// Unix ms.
    pub last_update_time: i64,
    /// Its tags as `(key, value)`, by key.
    pub tags: Vec<(String, String)>,
}

/// How an experiment is looked up in its account.
#[derive(Debug, Clone, Copy)]
pub enum ExperimentKey<'a> {
    /// By database id.
    Id(i64),
    /// By name.
    Name(&'a str),
}

/// A run to record.
#[derive(Debug, Clone, Copy)]
pub struct NewRun<'a> {
    /// The run's id (32 hex digits, made by the caller).
    pub run_id: &'a str,
    /// Owning account.
    pub account_id: i64,
    /// The experiment's database id.
    pub experiment_id: i64,
    /// The job whose metrics the run logs.
    pub job_id: i64,
    /// Its name.
    pub run_name: &'a str,
    /// Who started it, as the client says.
    pub user_id: &'a str,
    /// Unix ms.
    pub start_time: i64,
}

/// A run row with its job's and experiment's names.
#[derive(Debug, Clone)]
pub struct RunRecord {
    /// The run's id.
    pub run_id: String,
    /// The experiment's database id.
    pub experiment_id: i64,
    /// The experiment's name.
    pub experiment_name: String,
    /// Its name.
    pub run_name: String,
    /// Who started it, as the client said.
    pub user_id: String,
    /// MLflow's status, as stored.
    pub status: String,
    /// Unix ms.
    pub start_time: i64,
    /// Unix ms, as stored (0 or none while it runs).
    pub end_time: Option<i64>,
    /// `active` or `deleted`.
    pub lifecycle_stage: String,
    /// The job's id.
    pub job_id: i64,
    /// The job's name.
    pub job_name: String,
    /// Where the job came from: [`JobSource::Mlflow`] when it is the run's own.
    pub job_source: JobSource,
}

/// What a run update writes.
#[derive(Debug, Clone, Copy)]
pub struct RunUpdate<'a> {
    /// The run's id.
    pub run_id: &'a str,
    /// MLflow's status.
    pub status: &'a str,
    /// Unix ms, once it ended.
    pub end_time: Option<i64>,
    /// Its name.
    pub run_name: &'a str,
    /// Tags set in the same transaction, as `(key, value)`.
    pub tags: &'a [(&'a str, &'a str)],
    /// The job's new state, when the job is the run's own and follows it.
    pub job: Option<JobUpdate>,
}

/// A run's own job's new state.
#[derive(Debug, Clone, Copy)]
pub struct JobUpdate {
    /// The job's id.
    pub job_id: i64,
    /// Its status.
    pub status: JobStatus,
    /// Unix ms, once it is over.
    pub finished_at: Option<i64>,
}

/// A param already logged with another value: nothing of the batch was kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamClash {
    /// The param's key.
    pub key: String,
    /// The value it was logged with.
    pub logged: String,
    /// The value refused.
    pub attempted: String,
}

/// MLflow's tables in the console's database.
#[derive(Clone)]
pub struct MlflowTables {
    pool: AnyPool,
}

impl MlflowTables {
    /// On a migrated pool.
    pub fn new(pool: AnyPool) -> Self {
        Self { pool }
    }

    /// The database id of experiment `id` of the account, unless it is the
    /// one called `except` (the Default experiment has its own API id).
    pub async fn experiment_id(
        &self,
        account_id: i64,
        id: i64,
        except: &str,
    ) -> Result<Option<i64>, AppError> {
        sqlx::query_scalar(
            "SELECT id FROM mlflow_experiments WHERE id = $1 AND account_id = $2 AND name <> $3",
        )
        .bind(id)
        .bind(account_id)
        .bind(except)
        .fetch_optional(&self.pool)
        .await
        .map_err(internal("find experiment"))
    }

    /// The database id of the account's experiment called `name`, made now
    /// when there is none (for the Default experiment, made on first use).
    pub async fn ensure_experiment(&self, account_id: i64, name: &str) -> Result<i64, AppError> {
        let now = now_ms();
        sqlx::query(
            "INSERT INTO mlflow_experiments (account_id, name, creation_time, last_update_time) \
             VALUES ($1, $2, $3, $3) ON CONFLICT (account_id, name) DO NOTHING",
        )
        .bind(account_id)
        .bind(name)
        .bind(now)
        .execute(&self.pool)
        .await
        .map_err(internal("create default experiment"))?;
        sqlx::query_scalar("SELECT id FROM mlflow_experiments WHERE account_id = $1 AND name = $2")
            .bind(account_id)
            .bind(name)
            .fetch_one(&self.pool)
            .await
            .map_err(internal("read default experiment"))
    }

    /// Records an experiment and its tags (a tag given twice keeps its last
    /// value); `None` when the account has one of that name already.
    pub async fn create_experiment(
        &self,
        account_id: i64,
        name: &str,
        tags: &[(&str, &str)],
    ) -> Result<Option<i64>, AppError> {
        let now = now_ms();
        let mut tx = self
            .pool
            .begin_write()
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
            return Ok(None);
        };
        for (key, value) in tags {
            sqlx::query(
                "INSERT INTO mlflow_experiment_tags (experiment_id, key, value) VALUES ($1, $2, $3) \
                 ON CONFLICT (experiment_id, key) DO UPDATE SET value = excluded.value",
            )
            .bind(id)
            .bind(*key)
            .bind(*value)
            .execute(&mut *tx)
            .await
            .map_err(internal("tag experiment"))?;
        }
        tx.commit().await.map_err(internal("commit experiment"))?;
        Ok(Some(id))
    }

    /// An experiment of the account and its tags.
    pub async fn experiment(
        &self,
        account_id: i64,
        key: ExperimentKey<'_>,
    ) -> Result<Option<ExperimentRecord>, AppError> {
        const BY_ID: &str = "SELECT id, name, lifecycle_stage, creation_time, \
             last_update_time FROM mlflow_experiments WHERE account_id = $1 AND id = $2";
        const BY_NAME: &str = "SELECT id, name, lifecycle_stage, creation_time, \
             last_update_time FROM mlflow_experiments WHERE account_id = $1 AND name = $2";
        let query = match key {
            ExperimentKey::Id(id) => sqlx::query_as(BY_ID).bind(account_id).bind(id),
            ExperimentKey::Name(name) => sqlx::query_as(BY_NAME).bind(account_id).bind(name),
        };
        let row: Option<(i64, String, String, i64, i64)> = query
            .fetch_optional(&self.pool)
            .await
            .map_err(internal("read experiment"))?;
        let Some((id, name, lifecycle_stage, creation_time, last_update_time)) = row else {
            return Ok(None);
        };
        let tags = sqlx::query_as(
            "SELECT key, value FROM mlflow_experiment_tags WHERE experiment_id = $1 ORDER BY key",
        )
        .bind(id)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("read experiment tags"))?;
        Ok(Some(ExperimentRecord {
            id,
            name,
            lifecycle_stage,
            creation_time,
            last_update_time,
            tags,
        }))
    }

    /// Marks a job made for a run as the run's own: source `mlflow`,
    /// running since the run started.
    pub async fn start_run_job(&self, job_id: i64, start_time: i64) -> Result<(), AppError> {
        let mut tx = self
            .pool
            .begin_write()
            .await
            .map_err(internal("begin mark run job"))?;
        job_moves(
            &mut *tx,
            job_id,
            start_time,
            JobStatus::Running.as_str(),
            None,
        )
        .await?;
        sqlx::query(
            "UPDATE jobs SET source = $1, status = 'running', started_at = $2 WHERE id = $3",
        )
        .bind(JobSource::Mlflow.as_str())
        .bind(start_time)
        .bind(job_id)
        .execute(&mut *tx)
        .await
        .map_err(internal("mark run job"))?;
        tx.commit().await.map_err(internal("commit mark run job"))
    }

    /// Records a new run (`RUNNING`) and its tags, in one transaction.
    pub async fn insert_run(
        &self,
        run: &NewRun<'_>,
        tags: &[(&str, &str)],
    ) -> Result<(), AppError> {
        let mut tx = self
            .pool
            .begin_write()
            .await
            .map_err(internal("begin run"))?;
        sqlx::query(
            "INSERT INTO mlflow_runs (run_id, account_id, experiment_id, job_id, run_name, \
             user_id, status, start_time) VALUES ($1, $2, $3, $4, $5, $6, 'RUNNING', $7)",
        )
        .bind(run.run_id)
        .bind(run.account_id)
        .bind(run.experiment_id)
        .bind(run.job_id)
        .bind(run.run_name)
        .bind(run.user_id)
        .bind(run.start_time)
        .execute(&mut *tx)
        .await
        .map_err(internal("create run"))?;
        for (key, value) in tags {
            upsert_tag(&mut tx, run.run_id, key, value).await?;
        }
        tx.commit().await.map_err(internal("commit run"))?;
        Ok(())
    }

    /// A run of the account, with its job and experiment.
    pub async fn run(&self, account_id: i64, run_id: &str) -> Result<Option<RunRecord>, AppError> {
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
        Ok(row.map(
            |(
                run_id,
                experiment_id,
                run_name,
                user_id,
                status,
                start_time,
                end_time,
                lifecycle_stage,
                job_id,
                job_name,
                source,
                experiment_name,
            )| RunRecord {
                run_id,
                experiment_id,
                experiment_name,
                run_name,
                user_id,
                status,
                start_time,
                end_time,
                lifecycle_stage,
                job_id,
                job_name,
                job_source: JobSource::parse(&source),
            },
        ))
    }

    /// Writes a run's status, end time and name, its tags, and its own
    /// job's state, in one transaction.
    pub async fn update_run(&self, update: &RunUpdate<'_>) -> Result<(), AppError> {
        let mut tx = self
            .pool
            .begin_write()
            .await
            .map_err(internal("begin update run"))?;
        sqlx::query(
            "UPDATE mlflow_runs SET status = $1, end_time = $2, run_name = $3 WHERE run_id = $4",
        )
        .bind(update.status)
        .bind(update.end_time)
        .bind(update.run_name)
        .bind(update.run_id)
        .execute(&mut *tx)
        .await
        .map_err(internal("update run"))?;
        for (key, value) in update.tags {
            upsert_tag(&mut tx, update.run_id, key, value).await?;
        }
        if let Some(job) = update.job {
            let at = job.finished_at.unwrap_or_else(now_ms);
            job_moves(&mut *tx, job.job_id, at, job.status.as_str(), None).await?;
            sqlx::query("UPDATE jobs SET status = $1, finished_at = $2 WHERE id = $3")
                .bind(job.status.as_str())
                .bind(job.finished_at)
                .bind(job.job_id)
                .execute(&mut *tx)
                .await
                .map_err(internal("update run job"))?;
        }
        tx.commit().await.map_err(internal("commit update run"))?;
        Ok(())
    }

    /// Records params, all or none: a key already logged with the same value
    /// is kept as it is; one logged with another value is the clash
    /// returned, and then nothing is written (params are fixed once logged).
    pub async fn log_params(
        &self,
        run_id: &str,
        params: &[(&str, &str)],
    ) -> Result<Option<ParamClash>, AppError> {
        let mut tx = self
            .pool
            .begin_write()
            .await
            .map_err(internal("begin params"))?;
        for (key, value) in params {
            // The write comes first: on SQLite a transaction that reads and
            // then writes cannot wait for another writer ("database is
            // locked" at once), one that starts by writing waits its turn.
            sqlx::query(
                "INSERT INTO mlflow_params (run_id, key, value) VALUES ($1, $2, $3) \
                 ON CONFLICT (run_id, key) DO NOTHING",
            )
            .bind(run_id)
            .bind(*key)
            .bind(*value)
            .execute(&mut *tx)
            .await
            .map_err(internal("insert param"))?;
            let logged: String = sqlx::query_scalar(
                "SELECT value FROM mlflow_params WHERE run_id = $1 AND key = $2",
            )
            .bind(run_id)
            .bind(*key)
            .fetch_one(&mut *tx)
            .await
            .map_err(internal("read param"))?;
            if logged != *value {
                // Dropping the transaction rolls back the params before it.
                return Ok(Some(ParamClash {
                    key: (*key).to_owned(),
                    logged,
                    attempted: (*value).to_owned(),
                }));
            }
        }
        tx.commit().await.map_err(internal("commit params"))?;
        Ok(None)
    }

    /// Sets a run's tags (last value wins), in one transaction.
    pub async fn set_run_tags(&self, run_id: &str, tags: &[(&str, &str)]) -> Result<(), AppError> {
        let mut tx = self
            .pool
            .begin_write()
            .await
            .map_err(internal("begin tags"))?;
        for (key, value) in tags {
            upsert_tag(&mut tx, run_id, key, value).await?;
        }
        tx.commit().await.map_err(internal("commit tags"))?;
        Ok(())
    }

    /// A run's params as `(key, value)`, by key.
    pub async fn run_params(&self, run_id: &str) -> Result<Vec<(String, String)>, AppError> {
        self.pairs(
            "SELECT key, value FROM mlflow_params WHERE run_id = $1 ORDER BY key",
            run_id,
        )
        .await
    }

    /// A run's tags as `(key, value)`, by key.
    pub async fn run_tags(&self, run_id: &str) -> Result<Vec<(String, String)>, AppError> {
        self.pairs(
            "SELECT key, value FROM mlflow_run_tags WHERE run_id = $1 ORDER BY key",
            run_id,
        )
        .await
    }

    async fn pairs(
        &self,
        sql: &'static str,
        run_id: &str,
    ) -> Result<Vec<(String, String)>, AppError> {
        sqlx::query_as(sql)
            .bind(run_id)
            .fetch_all(&self.pool)
            .await
            .map_err(internal("read run data"))
    }
}

async fn upsert_tag(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    run_id: &str,
    key: &str,
    value: &str,
) -> Result<(), AppError> {
    sqlx::query(
        "INSERT INTO mlflow_run_tags (run_id, key, value) VALUES ($1, $2, $3) \
         ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value",
    )
    .bind(run_id)
    .bind(key)
    .bind(value)
    .execute(&mut **tx)
    .await
    .map_err(internal("set run tag"))?;
    Ok(())
}
