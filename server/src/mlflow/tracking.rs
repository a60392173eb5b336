//! MLflow's experiments and runs over their tables
//! ([`crate::storage::mlflow`]): API ids, run ids, names, and MLflow's
//! errors. A run is backed by a job: a new one (source `mlflow`, no
//! replicas) named after the run, or an existing job named by the run's
//! `paddlecloud.job` tag, whose metrics the run then logs.

use app::error::AppError;
use app::models::{JobSource, JobSpec, JobStatus, Me};

use super::wire::{Experiment, KeyValue, MlflowError, RunInfo};
use crate::storage::db::Pool;
use crate::storage::jobs::JobStore;
use crate::storage::mlflow::{
    ExperimentKey, ExperimentRecord, JobUpdate, MlflowTables, NewRun, ParamClash, RunRecord,
    RunUpdate,
};
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

/// MLflow's experiments and runs, as the tracking API serves them.
#[derive(Clone)]
pub struct MlflowService {
    tables: MlflowTables,
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

/// Tags and params as the tables take them.
fn pairs(kvs: &[KeyValue]) -> Vec<(&str, &str)> {
    kvs.iter()
        .map(|kv| (kv.key.as_str(), kv.value.as_str()))
        .collect()
}

/// The API id of an experiment: the Default one is always `0`.
fn api_id(id: i64, name: &str) -> String {
    if name == DEFAULT_NAME {
        DEFAULT_EXPERIMENT.to_owned()
    } else {
        id.to_string()
    }
}

impl MlflowService {
    /// Over a migrated pool.
    pub fn new(pool: Pool) -> Self {
        Self {
            jobs: JobStore::new(pool.clone()),
            tables: MlflowTables::new(pool),
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
        // The Default experiment answers to `0` only.
        self.tables
            .experiment_id(account_id, id, DEFAULT_NAME)
            .await?
            .ok_or_else(|| MlflowError::not_found(format!("No Experiment with id={api_id} exists")))
    }

    /// The account's Default experiment (API id `0`), made on first use.
    async fn default_experiment(&self, account_id: i64) -> Result<i64, MlflowError> {
        Ok(self
            .tables
            .ensure_experiment(account_id, DEFAULT_NAME)
            .await?)
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
        let Some(id) = self
            .tables
            .create_experiment(account_id, name, &pairs(tags))
            .await?
        else {
            return Err(MlflowError::exists(format!(
                "Experiment(name={name}) already exists."
            )));
        };
        Ok(api_id(id, name))
    }

    /// An experiment by API id.
    pub async fn experiment(
        &self,
        account_id: i64,
        api_id: &str,
    ) -> Result<Experiment, MlflowError> {
        let id = self.experiment_row(account_id, api_id).await?;
        self.tables
            .experiment(account_id, ExperimentKey::Id(id))
            .await?
            .map(experiment_of)
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
        self.tables
            .experiment(account_id, ExperimentKey::Name(name))
            .await?
            .map(experiment_of)
            .ok_or_else(|| {
                MlflowError::not_found(format!("Could not find experiment with name '{name}'"))
            })
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
        self.tables
            .insert_run(
                &NewRun {
                    run_id: &run_id,
                    account_id: by.account.id,
                    experiment_id: experiment_row,
                    job_id,
                    run_name,
                    user_id,
                    start_time,
                },
                &pairs(tags),
            )
            .await?;
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
                    self.tables.start_run_job(stored.id, start_time).await?;
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
        let Some(run) = self.tables.run(account_id, run_id).await? else {
            return Err(MlflowError::not_found(format!(
                "Run with id={run_id} not found"
            )));
        };
        Ok(run_row(run))
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
        let job = run.owns_job.then(|| {
            let state = job_status(status);
            JobUpdate {
                job_id: run.job_id,
                status: state,
                finished_at: (!state.is_active()).then(|| end_time.unwrap_or_else(now_ms)),
            }
        });
        self.tables
            .update_run(&RunUpdate {
                run_id: &run.info.run_id,
                status,
                end_time,
                run_name,
                // MLflow shows a run's name as this tag too.
                tags: &[("mlflow.runName", run_name)],
                job,
            })
            .await?;
        Ok(())
    }

    /// Records params; one already logged with another value is refused,
    /// as MLflow does (params are inputs, fixed once logged).
    pub async fn log_params(&self, run_id: &str, params: &[KeyValue]) -> Result<(), MlflowError> {
        match self.tables.log_params(run_id, &pairs(params)).await? {
            None => Ok(()),
            Some(ParamClash {
                key,
                logged,
                attempted,
            }) => Err(MlflowError::invalid(format!(
                "Changing param values is not allowed. Param with key='{key}' was already \
                 logged with value='{logged}' for run ID='{run_id}'. Attempted logging new \
                 value '{attempted}'."
            ))),
        }
    }

    /// Sets tags (last value wins).
    pub async fn set_tags(&self, run_id: &str, tags: &[KeyValue]) -> Result<(), MlflowError> {
        Ok(self.tables.set_run_tags(run_id, &pairs(tags)).await?)
    }

    /// A run's params and tags.
    pub async fn params_and_tags(
        &self,
        run_id: &str,
    ) -> Result<(Vec<KeyValue>, Vec<KeyValue>), MlflowError> {
        let params = self.tables.run_params(run_id).await?;
        let tags = self.tables.run_tags(run_id).await?;
        Ok((key_values(params), key_values(tags)))
    }
}

fn key_values(pairs: Vec<(String, String)>) -> Vec<KeyValue> {
    pairs
        .into_iter()
        .map(|(key, value)| KeyValue { key, value })
        .collect()
}

/// An experiment as the API shows it.
fn experiment_of(row: ExperimentRecord) -> Experiment {
    let api_id = api_id(row.id, &row.name);
    Experiment {
        artifact_location: format!("mlflow-artifacts:/{api_id}"),
        experiment_id: api_id,
        name: row.name,
        lifecycle_stage: row.lifecycle_stage,
        creation_time: row.creation_time,
        last_update_time: row.last_update_time,
        tags: key_values(row.tags),
    }
}

/// A run as the handlers need it.
fn run_row(run: RunRecord) -> RunRow {
    let experiment = api_id(run.experiment_id, &run.experiment_name);
    let id = run.run_id;
    RunRow {
        info: RunInfo {
            run_uuid: id.clone(),
            artifact_uri: format!("mlflow-artifacts:/{experiment}/{id}/artifacts"),
            run_id: id,
            run_name: run.run_name,
            experiment_id: experiment,
            user_id: run.user_id,
            status: run.status,
            start_time: run.start_time,
            // An end time of 0 is one never set.
            end_time: run.end_time.filter(|t| *t > 0),
            lifecycle_stage: run.lifecycle_stage,
        },
        job: run.job_name,
        job_id: run.job_id,
        owns_job: run.job_source == JobSource::Mlflow,
    }
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
