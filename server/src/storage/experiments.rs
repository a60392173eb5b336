//! SQL for experiments and their trials. A trial's row is its claim: it is
//! written (number and job name) before the job is submitted, and a number
//! already taken is not written again, so two passes (a restarted console,
//! a second replica) never make the same trial twice.

use app::error::AppError;
use app::models::{
    Experiment, ExperimentSpec, ExperimentStatus, Me, Trial, TrialStatus, TrialValues, Workload,
};
use sqlx::AnyPool;

use super::users::{me_from, user_columns, UserRow};
use super::{internal, to_json};
use crate::time::now_ms;

/// An experiment with the ids the store and the controller address it by.
#[derive(Debug, Clone)]
pub struct StoredExperiment {
    /// Database id.
    pub id: i64,
    /// The owning account's id.
    pub account_id: i64,
    /// The experiment as the API shows it, with its trials.
    pub experiment: Experiment,
}

/// One experiment row.
#[derive(sqlx::FromRow)]
struct ExperimentRow {
    id: i64,
    account_id: i64,
    name: String,
    spec: String,
    status: String,
    message: String,
    created_at: i64,
    ended_at: Option<i64>,
    email: String,
}

/// One trial row.
#[derive(sqlx::FromRow)]
struct TrialRow {
    experiment_id: i64,
    number: i64,
    job: String,
    values_json: String,
    status: String,
    objective: Option<f64>,
    step: Option<i64>,
    message: String,
    created_at: i64,
    ended_at: Option<i64>,
}

const EXPERIMENT_COLUMNS: &str = "e.id, e.account_id, e.name, e.spec, e.status, e.message, \
     e.created_at, e.ended_at, u.email";
const TRIAL_COLUMNS: &str = "t.experiment_id, t.number, t.job, t.values_json, t.status, \
     t.objective, t.step, t.message, t.created_at, t.ended_at";

fn decode<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> Result<T, AppError> {
    serde_json::from_str(text).map_err(|err| {
        tracing::error!(error = %err, "decoding {what}");
        AppError::Internal
    })
}

impl TrialRow {
    fn into_trial(self) -> Result<Trial, AppError> {
        Ok(Trial {
            number: u32::try_from(self.number).unwrap_or(0),
            job: self.job,
            values: decode(&self.values_json, "a trial's values")?,
            status: TrialStatus::parse(&self.status).unwrap_or(TrialStatus::Failed),
            objective: self.objective,
            step: self.step,
            message: self.message,
            created_at: self.created_at,
            ended_at: self.ended_at,
        })
    }
}

impl ExperimentRow {
    fn into_stored(self, trials: Vec<Trial>) -> Result<StoredExperiment, AppError> {
        let spec: ExperimentSpec = decode(&self.spec, "an experiment's spec")?;
        Ok(StoredExperiment {
            id: self.id,
            account_id: self.account_id,
            experiment: Experiment {
                name: self.name,
                owner: self.email,
                spec,
                status: ExperimentStatus::parse(&self.status).unwrap_or(ExperimentStatus::Failed),
                message: self.message,
                created_at: self.created_at,
                ended_at: self.ended_at,
                trials,
            },
        })
    }
}

/// What a pass learnt of one trial.
#[derive(Debug, Clone, Default)]
pub struct TrialUpdate {
    /// Its new status.
    pub status: Option<TrialStatus>,
    /// Its objective's value now.
    pub objective: Option<f64>,
    /// The step of its newest objective point.
    pub step: Option<i64>,
    /// Why, in words.
    pub message: Option<String>,
}

/// Experiments in the console's database.
#[derive(Clone)]
pub struct ExperimentStore {
    pool: AnyPool,
}

impl ExperimentStore {
    /// On a migrated pool.
    pub fn new(pool: AnyPool) -> Self {
        Self { pool }
    }

    /// Records a new, running experiment; a taken name is a conflict.
    pub async fn insert(&self, me: &Me, spec: &ExperimentSpec) -> Result<i64, AppError> {
        let done = sqlx::query_scalar::<_, i64>(
            "INSERT INTO experiments (account_id, user_id, name, spec, status, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
        )
        .bind(me.account.id)
        .bind(me.user_id)
        .bind(&spec.name)
        .bind(to_json(spec)?)
        .bind(ExperimentStatus::Running.as_str())
        .bind(now_ms())
        .fetch_one(&self.pool)
        .await;
        match done {
            Ok(id) => Ok(id),
            Err(sqlx::Error::Database(db)) if db.is_unique_violation() => {
                Err(Workload::Experiment.name_taken(&spec.name))
            }
            Err(err) => Err(internal("insert an experiment")(err)),
        }
    }

    async fn trials_of(&self, ids: &[i64]) -> Result<Vec<TrialRow>, AppError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let list = ids
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        // The ids are this store's own integers, not a user's text.
        let sql = format!(
            "SELECT {TRIAL_COLUMNS} FROM experiment_trials t WHERE t.experiment_id IN ({list}) \
             ORDER BY t.experiment_id, t.number"
        );
        sqlx::query_as::<_, TrialRow>(sqlx::AssertSqlSafe(sql))
            .fetch_all(&self.pool)
            .await
            .map_err(internal("read experiment trials"))
    }

    async fn with_trials(
        &self,
        rows: Vec<ExperimentRow>,
    ) -> Result<Vec<StoredExperiment>, AppError> {
        let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
        let mut trials = self.trials_of(&ids).await?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let mine: Vec<Trial> = trials
                .extract_if(.., |t| t.experiment_id == row.id)
                .map(TrialRow::into_trial)
                .collect::<Result<_, _>>()?;
            out.push(row.into_stored(mine)?);
        }
        Ok(out)
    }

    /// One experiment of the account, with its trials.
    pub async fn get(&self, account_id: i64, name: &str) -> Result<StoredExperiment, AppError> {
        let sql = format!(
            "SELECT {EXPERIMENT_COLUMNS} FROM experiments e JOIN users u ON u.id = e.user_id \
             WHERE e.account_id = $1 AND e.name = $2"
        );
        let row = sqlx::query_as::<_, ExperimentRow>(sqlx::AssertSqlSafe(sql))
            .bind(account_id)
            .bind(name)
            .fetch_optional(&self.pool)
            .await
            .map_err(internal("read an experiment"))?
            .ok_or_else(|| AppError::not_found(format!("Experiment “{name}”")))?;
        Ok(self.with_trials(vec![row]).await?.remove(0))
    }

    /// Experiment `id`, with its trials.
    pub async fn load(&self, id: i64) -> Result<StoredExperiment, AppError> {
        let sql = format!(
            "SELECT {EXPERIMENT_COLUMNS} FROM experiments e JOIN users u ON u.id = e.user_id \
             WHERE e.id = $1"
        );
        let row = sqlx::query_as::<_, ExperimentRow>(sqlx::AssertSqlSafe(sql))
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(internal("read an experiment"))?
            .ok_or_else(|| AppError::not_found("Experiment"))?;
        Ok(self.with_trials(vec![row]).await?.remove(0))
    }

    /// The account's experiments with their trials, newest first.
    pub async fn list(&self, account_id: i64) -> Result<Vec<StoredExperiment>, AppError> {
        let sql = format!(
            "SELECT {EXPERIMENT_COLUMNS} FROM experiments e JOIN users u ON u.id = e.user_id \
             WHERE e.account_id = $1 ORDER BY e.created_at DESC, e.id DESC"
        );
        let rows = sqlx::query_as::<_, ExperimentRow>(sqlx::AssertSqlSafe(sql))
            .bind(account_id)
            .fetch_all(&self.pool)
            .await
            .map_err(internal("list experiments"))?;
        self.with_trials(rows).await
    }

    /// The ids of experiments still going (running or paused), of every
    /// account.
    pub async fn active(&self) -> Result<Vec<i64>, AppError> {
        let rows: Vec<(i64,)> = sqlx::query_as(
            "SELECT id FROM experiments WHERE status IN ('running', 'paused') ORDER BY id",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(internal("list running experiments"))?;
        Ok(rows.into_iter().map(|(id,)| id).collect())
    }

    /// Experiment `id`'s status now (`None`: it was deleted).
    pub async fn status(&self, id: i64) -> Result<Option<ExperimentStatus>, AppError> {
        let row: Option<(String,)> = sqlx::query_as("SELECT status FROM experiments WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(internal("read an experiment's status"))?;
        Ok(row.and_then(|(s,)| ExperimentStatus::parse(&s)))
    }

    /// Who created experiment `id`, as they act now: `None` once they are
    /// no longer a member of its account (its trials are not theirs to run).
    pub async fn creator(&self, id: i64) -> Result<Option<Me>, AppError> {
        let row: Option<UserRow> = sqlx::query_as(concat!(
            "SELECT ",
            user_columns!(),
            " FROM experiments e JOIN users u ON u.id = e.user_id \
             JOIN memberships m ON m.user_id = u.id AND m.account_id = e.account_id \
             JOIN accounts a ON a.id = e.account_id WHERE e.id = $1"
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(internal("read an experiment's creator"))?;
        Ok(row.map(me_from))
    }

    /// Claims trial `number` of experiment `id` with its job's name and
    /// values (Waiting); `false` when that number was claimed already.
    pub async fn claim_trial(
        &self,
        id: i64,
        number: u32,
        job: &str,
        values: &TrialValues,
    ) -> Result<bool, AppError> {
        let done = sqlx::query(
            "INSERT INTO experiment_trials (experiment_id, number, job, values_json, status, \
             created_at) VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(id)
        .bind(i64::from(number))
        .bind(job)
        .bind(to_json(values)?)
        .bind(TrialStatus::Waiting.as_str())
        .bind(now_ms())
        .execute(&self.pool)
        .await;
        match done {
            Ok(_) => Ok(true),
            Err(sqlx::Error::Database(db)) if db.is_unique_violation() => Ok(false),
            Err(err) => Err(internal("claim a trial")(err)),
        }
    }

    /// Saves what a pass learnt of trial `number`; a trial that ends gets
    /// its end time. An ended trial keeps its end.
    pub async fn update_trial(
        &self,
        id: i64,
        number: u32,
        update: &TrialUpdate,
    ) -> Result<(), AppError> {
        let ended = update.status.filter(|s| !s.is_active()).map(|_| now_ms());
        sqlx::query(
            "UPDATE experiment_trials SET status = COALESCE($1, status), \
             objective = COALESCE($2, objective), message = COALESCE($3, message), \
             ended_at = COALESCE(ended_at, $4), step = COALESCE($7, step) \
             WHERE experiment_id = $5 AND number = $6 AND status IN ('waiting', 'running')",
        )
        .bind(update.status.map(|s| s.as_str()))
        .bind(update.objective)
        .bind(update.message.as_deref())
        .bind(ended)
        .bind(id)
        .bind(i64::from(number))
        .bind(update.step)
        .execute(&self.pool)
        .await
        .map_err(internal("update a trial"))?;
        Ok(())
    }

    /// Moves experiment `id` to `status` with `message`, if it is still
    /// going; an ending gets its end time. `false` when it had ended.
    pub async fn set_status(
        &self,
        id: i64,
        status: ExperimentStatus,
        message: &str,
    ) -> Result<bool, AppError> {
        let ended = (!status.is_active()).then(now_ms);
        let done = sqlx::query(
            "UPDATE experiments SET status = $1, message = $2, ended_at = $3 \
             WHERE id = $4 AND status IN ('running', 'paused')",
        )
        .bind(status.as_str())
        .bind(message)
        .bind(ended)
        .bind(id)
        .execute(&self.pool)
        .await
        .map_err(internal("record an experiment's status"))?;
        Ok(done.rows_affected() > 0)
    }

    /// Opens ended experiment `id` again (more trials, failed ones run
    /// again): running, with `spec`. `false` when it had not ended.
    pub async fn reopen(&self, id: i64, spec: &ExperimentSpec) -> Result<bool, AppError> {
        let done = sqlx::query(
            "UPDATE experiments SET status = 'running', message = '', ended_at = NULL, \
             spec = $1 WHERE id = $2 AND status NOT IN ('running', 'paused')",
        )
        .bind(to_json(spec)?)
        .bind(id)
        .execute(&self.pool)
        .await
        .map_err(internal("reopen an experiment"))?;
        Ok(done.rows_affected() > 0)
    }

    /// Saves a changed spec (more trials, a wider budget) of experiment `id`.
    pub async fn set_spec(&self, id: i64, spec: &ExperimentSpec) -> Result<(), AppError> {
        sqlx::query("UPDATE experiments SET spec = $1 WHERE id = $2")
            .bind(to_json(spec)?)
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(internal("change an experiment"))?;
        Ok(())
    }

    /// Removes experiment `id` and its trials' rows (their jobs stay).
    pub async fn delete(&self, id: i64) -> Result<(), AppError> {
        sqlx::query("DELETE FROM experiment_trials WHERE experiment_id = $1")
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(internal("delete an experiment's trials"))?;
        sqlx::query("DELETE FROM experiments WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(internal("delete an experiment"))?;
        Ok(())
    }
}
