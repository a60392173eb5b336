//! Batch scoring (see `models::scoring`): starting one (the input version
//! pinned, the output dataset made if need be and an empty version started
//! for it, the job admitted like any other), how far one got, and a retry
//! that writes into the same output version.
//!
//! Who: whoever may submit jobs starts and retries one; whoever may read
//! the account's jobs reads its progress. The job's own token writes the
//! output version's files and finishes it (see `http/session.rs`).

use crate::error::AppError;
use crate::models::{
    split_dataset, AssetForm, AssetKind, AssetRef, Job, Me, ScoringForm, ScoringProgress,
    ScoringUse, VersionForm,
};
use crate::ports::{Principal, Services, Slot, Viewer};

/// Starts a scoring job: `form.dataset`'s version (its newest saved one
/// when the form names none) scored with `form.model` into a new version
/// of `form.output`. Returns the job.
pub async fn score_dataset(
    services: &Services,
    who: &Principal,
    form: ScoringForm,
) -> Result<Job, AppError> {
    who.require_change()?;
    form.validate()?;
    let me = &who.me;
    let dataset = input_version(services, me, form.dataset.trim()).await?;
    let output = AssetRef {
        kind: AssetKind::Dataset,
        owner: me.account.name.clone(),
        name: form.output.trim().to_owned(),
    };
    let name = match form.name.trim() {
        "" => {
            let model = form.model.trim();
            let stem = model.rsplit('/').next().unwrap_or(model);
            let stem: String = stem
                .chars()
                .take_while(|c| !matches!(c, ':' | '@'))
                .map(|c| {
                    if c.is_ascii_alphanumeric() {
                        c.to_ascii_lowercase()
                    } else {
                        '-'
                    }
                })
                .collect();
            crate::models::names::default_job_name(&format!("score-{stem}"))
        }
        given => given.to_owned(),
    };
    let owned = format!("{}/{}", output.owner, output.name);
    // Everything the job's spec says is checked before anything is made.
    form.job(&name, &dataset, &owned, 1).validate()?;
    super::model_versions::pin_job_models(&*services.assets, me, &[form.model.trim().to_owned()])
        .await
        .map_err(|err| on_field(err, "model"))?;
    if services.cluster.job(&me.account, &name).await.is_ok() {
        return Err(crate::models::Workload::Job.name_taken(&name));
    }
    ensure_output(services, me, &output).await?;
    let started = services
        .assets
        .create_version(
            me,
            &output,
            VersionForm {
                description: format!("Predictions of {} over {dataset}", form.model.trim()),
                tags: "predictions".into(),
                job: Some(name.clone()),
                empty: true,
            },
        )
        .await?;
    let spec = form.job(&name, &dataset, &owned, started.version);
    match super::jobs::admit_and_submit(services, who, spec).await {
        Ok(job) => Ok(job),
        Err(err) => {
            // Refused (quota, a model gone meanwhile): the empty version it
            // would have written goes, so that nothing is left half made.
            if let Err(left) = services
                .assets
                .discard_version(me, &output, started.version)
                .await
            {
                tracing::warn!(error = %left, "removing a refused scoring's empty version");
            }
            Err(err)
        }
    }
}

/// The dataset version `text` names (`name:N`, `owner/name:N`; without
/// `:N` its newest saved version), pinned as `owner/name:N`.
async fn input_version(services: &Services, me: &Me, text: &str) -> Result<String, AppError> {
    let (owner, name, version) = split_dataset(text).map_err(|err| on_field(err, "dataset"))?;
    let asset = AssetRef {
        kind: AssetKind::Dataset,
        owner: owner.unwrap_or(&me.account.name).to_owned(),
        name: name.to_owned(),
    };
    let shown = format!("{}/{}", asset.owner, asset.name);
    let versions = services
        .assets
        .versions(&Viewer::User(me.clone()), &asset)
        .await
        .map_err(|err| match err {
            AppError::NotFound { .. } | AppError::Invalid { .. } => AppError::invalid(
                "dataset",
                format!("There is no dataset “{shown}” you can read."),
            ),
            other => other,
        })?;
    let ready = versions.iter().filter(|v| v.state == "ready");
    let found = match version {
        Some(n) => ready.into_iter().find(|v| v.version == n).ok_or_else(|| {
            AppError::invalid(
                "dataset",
                format!("“{shown}” has no saved version {n} (a finished one)."),
            )
        })?,
        None => ready.into_iter().next().ok_or_else(|| {
            AppError::invalid(
                "dataset",
                format!(
                    "“{shown}” has no saved version: scoring reads files that do not change. \
                     Save its files as a version first (its page, “Save as version”)."
                ),
            )
        })?,
    };
    Ok(format!("{shown}:{}", found.version))
}

/// A bad field's error said against the form's `field` instead (the job's
/// `models` is the form's `model`).
fn on_field(err: AppError, field: &str) -> AppError {
    match err {
        AppError::Invalid { message, .. } => AppError::invalid(field, message),
        other => other,
    }
}

/// Makes the output dataset if the account has none of that name.
async fn ensure_output(services: &Services, me: &Me, output: &AssetRef) -> Result<(), AppError> {
    match services.assets.get(&Viewer::User(me.clone()), output).await {
        Ok(_) => Ok(()),
        Err(AppError::NotFound { .. }) => services
            .assets
            .create(
                me,
                AssetKind::Dataset,
                AssetForm {
                    name: output.name.clone(),
                    description: "Batch scoring predictions.".into(),
                    tags: "predictions".into(),
                },
            )
            .await
            .map(|_| ()),
        Err(other) => Err(other),
    }
}

/// The scoring record of the account's job `name`; a job that scores
/// nothing is "not found" here.
async fn scoring_job(services: &Services, me: &Me, name: &str) -> Result<Job, AppError> {
    let job = services.cluster.job(&me.account, name).await?;
    if job.spec.scoring.is_none() {
        return Err(AppError::not_found(format!("A batch scoring “{name}”")));
    }
    Ok(job)
}

/// How far scoring job `job` got: its input files against the predictions
/// in its output version. `None` for a job that scores nothing.
pub async fn progress_of(
    services: &Services,
    me: &Me,
    job: &Job,
) -> Result<Option<ScoringProgress>, AppError> {
    let Some(used) = job.spec.scoring.clone() else {
        return Ok(None);
    };
    let viewer = Viewer::User(me.clone());
    let input = dataset_version(&used.dataset)?;
    let output = dataset_version(&used.output_version())?;
    let paths = |files: Vec<crate::models::FileEntry>| {
        files
            .into_iter()
            .filter(|f| !f.dir)
            .map(|f| f.path)
            .collect::<Vec<_>>()
    };
    // The input may have been deleted since: nothing to count then.
    let inputs = match services.assets.all_files(&viewer, &input.0, input.1).await {
        Ok(files) => paths(files),
        Err(AppError::NotFound { .. }) => vec![],
        Err(other) => return Err(other),
    };
    let (outputs, state) = match services.assets.versions(&viewer, &output.0).await {
        Ok(versions) => {
            let state = versions
                .iter()
                .find(|v| v.version == used.version)
                .map_or("deleted", |v| v.state.as_str())
                .to_owned();
            let files = if state == "deleted" {
                vec![]
            } else {
                paths(
                    services
                        .assets
                        .all_files(&viewer, &output.0, output.1)
                        .await?,
                )
            };
            (files, state)
        }
        Err(AppError::NotFound { .. }) => (vec![], "deleted".to_owned()),
        Err(other) => return Err(other),
    };
    let (inputs, scored, skipped) = ScoringProgress::count(&inputs, &outputs);
    Ok(Some(ScoringProgress {
        job: job.name.clone(),
        status: job.status,
        model: job.spec.models.first().cloned().unwrap_or_default(),
        used,
        inputs,
        scored,
        skipped,
        output_state: state,
    }))
}

/// `owner/name:N` as the asset and the slot of that version.
fn dataset_version(text: &str) -> Result<(AssetRef, Slot), AppError> {
    let (owner, name, version) = split_dataset(text)?;
    let asset = AssetRef {
        kind: AssetKind::Dataset,
        owner: owner.unwrap_or_default().to_owned(),
        name: name.to_owned(),
    };
    Ok((asset, Slot::of(AssetKind::Dataset, version)?))
}

/// How far the account's scoring job `name` got.
pub async fn scoring(
    services: &Services,
    me: &Me,
    name: &str,
) -> Result<ScoringProgress, AppError> {
    let job = scoring_job(services, me, name).await?;
    progress_of(services, me, &job)
        .await?
        .ok_or(AppError::Internal)
}

/// Starts the next try of scoring job `name` (which ended without
/// finishing its output): the same model version, input and output
/// version, so its replicas redo only the files whose predictions are not
/// there. Returns the new job.
pub async fn retry_scoring(
    services: &Services,
    who: &Principal,
    name: &str,
) -> Result<Job, AppError> {
    who.require_change()?;
    let me = &who.me;
    let job = scoring_job(services, me, name).await?;
    let progress = progress_of(services, me, &job)
        .await?
        .ok_or(AppError::Internal)?;
    if job.status.is_active() {
        return Err(AppError::conflict(
            "name",
            format!(
                "{name} is still {}: stop it first, or let it end.",
                job.status.label()
            ),
        ));
    }
    if progress.is_done() {
        return Err(AppError::conflict(
            "name",
            format!(
                "Every file is scored: {} version {} is complete.",
                progress.used.output, progress.used.version
            ),
        ));
    }
    if progress.output_state == "deleted" {
        return Err(AppError::conflict(
            "name",
            "The output version was deleted: start a new scoring instead.",
        ));
    }
    let first: String = progress.used.first.chars().take(36).collect();
    let next_name = crate::models::names::default_job_name(&format!(
        "{}-try{}",
        first.trim_end_matches('-'),
        progress.used.attempt + 1
    ));
    let spec = ScoringUse::retry(&job.spec, &next_name).ok_or(AppError::Internal)?;
    super::jobs::admit_and_submit(services, who, spec).await
}
