//! Running a notebook file as a job (papermill): its parameters, the run
//! (a version of the file, checked values, admitted like any job), the
//! files its replica reads and writes, and what its page shows.
//!
//! Who: the notebook's owner reads its versions, so only they run one (any
//! one else gets the "not found" versions give). The job is then the
//! account's like any other: its members and viewers read its input, its
//! executed notebook and its report; only the job's own token writes the
//! output.

use crate::error::AppError;
use crate::models::{
    Account, Job, Me, NotebookParameters, NotebookRunSpec, NotebookRunUse, NotebookVersion,
};
use crate::ports::{Principal, Services};

/// A notebook file's version as stored: its record, its bytes, and the
/// same read as JSON.
pub(crate) struct FileVersion {
    pub(crate) version: NotebookVersion,
    pub(crate) bytes: Vec<u8>,
    pub(crate) json: serde_json::Value,
}

/// The version `version` of `path` (the file's newest when `None`) of
/// `by`'s notebook `notebook`.
pub(crate) async fn file_version(
    services: &Services,
    by: &Me,
    notebook: &str,
    path: &str,
    version: Option<i64>,
) -> Result<FileVersion, AppError> {
    crate::models::check_versioned_path(path)?;
    let id = match version {
        Some(id) => id,
        None => services
            .notebooks
            .history(by, notebook, Some(path))
            .await?
            .versions
            .first()
            .map(|v| v.id)
            // No version of a well-formed path: nothing to run, as for a
            // version id that does not exist.
            .ok_or_else(|| {
                AppError::not_found(format!(
                    "A saved version of {path} (save it in JupyterLab with Ctrl+S first, so \
                     that the console keeps the version it runs)"
                ))
            })?,
    };
    let (found, bytes) = services.notebooks.version(by, notebook, id).await?;
    if found.path != path {
        return Err(AppError::invalid(
            "version",
            format!("Version {id} is of {}, not of {path}.", found.path),
        ));
    }
    let json = serde_json::from_slice(&bytes).map_err(|_| AppError::Internal)?;
    Ok(FileVersion {
        version: found,
        bytes,
        json,
    })
}

/// The parameters a version of a notebook file declares (the newest when
/// `version` is `None`): what the run form asks for.
pub async fn notebook_parameters(
    services: &Services,
    by: &Me,
    notebook: &str,
    path: &str,
    version: Option<i64>,
) -> Result<NotebookParameters, AppError> {
    let found = file_version(services, by, notebook, path, version).await?;
    Ok(NotebookParameters::read(
        notebook,
        path,
        found.version.id,
        &found.json,
    ))
}

/// Runs a version of a file of `who`'s notebook `notebook` as a job: the
/// values checked against its parameters cell, the version kept as the
/// run's input, the job admitted within the quota like any other. The job
/// runs in the run's environment, else the notebook's (the version it took),
/// else `paddlecloud/minimal`.
pub async fn run_notebook(
    services: &Services,
    who: &Principal,
    notebook: &str,
    run: NotebookRunSpec,
) -> Result<Job, AppError> {
    who.require_change()?;
    let me = &who.me;
    let FileVersion {
        version,
        bytes,
        json,
    } = file_version(services, me, notebook, &run.path, run.version).await?;
    let parameters = NotebookParameters::read(notebook, &run.path, version.id, &json);
    let values = parameters.check(&run.values)?;
    let workspace = services.notebooks.get(&me.account, notebook).await?;
    let environment = run
        .environment
        .clone()
        .filter(|e| !e.trim().is_empty())
        .unwrap_or_else(|| workspace.run_environment());
    let default_name =
        crate::models::names::default_job_name(&crate::models::run_name_stem(&run.path));
    // The job is checked before the input is kept: a bad name keeps nothing.
    let mut used = NotebookRunUse {
        notebook: notebook.to_owned(),
        path: run.path.clone(),
        version: version.id,
        run: String::new(),
        values,
    };
    run.job(used.clone(), environment.clone(), default_name.clone())?;
    used.run = services.notebook_runs.keep_input(bytes).await?;
    let key = used.run.clone();
    let job = run.job(used, environment, default_name)?;
    match super::jobs::admit_and_submit(services, who, job).await {
        Ok(job) => Ok(job),
        Err(err) => {
            if let Err(forgot) = services.notebook_runs.forget(&key).await {
                tracing::warn!(error = %forgot, "removing a refused notebook run's input");
            }
            Err(err)
        }
    }
}

/// The run record of the account's job `name`; a job that runs no
/// notebook is "not found" here.
async fn run_of(services: &Services, account: &Account, name: &str) -> Result<String, AppError> {
    let job = services.cluster.job(account, name).await?;
    job.spec
        .notebook_run
        .map(|r| r.run)
        .ok_or_else(|| AppError::not_found(format!("A notebook run “{name}”")))
}

/// The notebook job `name` runs (the version as taken).
pub async fn run_input(
    services: &Services,
    account: &Account,
    name: &str,
) -> Result<Vec<u8>, AppError> {
    let run = run_of(services, account, name).await?;
    services.notebook_runs.input(&run).await
}

/// Keeps what job `name`'s replica sent as its executed notebook so far.
/// Only the job's own token writes it.
pub async fn save_run_output(
    services: &Services,
    who: &Principal,
    name: &str,
    notebook: Vec<u8>,
) -> Result<(), AppError> {
    let run = run_of(services, &who.me.account, name).await?;
    if who.job_scope() != Some(name) {
        return Err(AppError::forbidden(
            "Only the run's own job writes its executed notebook.",
        ));
    }
    services.notebook_runs.keep_output(&run, notebook).await
}

/// Job `name`'s executed notebook so far (404 before its replica sent one).
pub async fn run_output(
    services: &Services,
    account: &Account,
    name: &str,
) -> Result<Vec<u8>, AppError> {
    let run = run_of(services, account, name).await?;
    services
        .notebook_runs
        .output(&run)
        .await?
        .ok_or_else(|| AppError::not_found("The run's executed notebook (none was sent yet)"))
}

/// Job `name`'s executed notebook as a page.
pub async fn run_output_html(
    services: &Services,
    account: &Account,
    name: &str,
) -> Result<Vec<u8>, AppError> {
    let run = run_of(services, account, name).await?;
    services.notebook_runs.output_html(&run).await
}
