//! Schedules: checking what a schedule runs before it is kept, what its
//! page shows (its runs with what became of what they started), and
//! starting one tick's run: what the schedule controller calls, as the
//! schedule's creator.

use crate::error::AppError;
use crate::models::{
    tick_name, Account, PipelineSubmit, Schedule, ScheduleSpec, ScheduleTarget, TemplateRun,
};
use crate::ports::{Principal, Services};

/// Keeps `spec` as `who`'s schedule once what it runs is known to run:
/// the template exists for the account and takes the values, the
/// pipeline is valid with them, the notebook file is the creator's and
/// declares the values' parameters. Members and owners; not viewers.
pub async fn create_schedule(
    services: &Services,
    who: &Principal,
    spec: ScheduleSpec,
) -> Result<Schedule, AppError> {
    who.require_change()?;
    spec.validate()?;
    let me = &who.me;
    let under = |prefix: &'static str| move |err| crate::models::prefixed(prefix, err);
    match &spec.target {
        ScheduleTarget::Template {
            owner,
            name,
            version,
            values,
        } => {
            let template = services
                .templates
                .get(&me.account, owner.as_deref(), name, *version)
                .await
                .map_err(|err| match err {
                    AppError::NotFound { .. } => AppError::invalid(
                        "target.name",
                        format!("There is no template “{name}” this account can run."),
                    ),
                    other => other,
                })?;
            let run = TemplateRun {
                values: values.clone(),
                ..Default::default()
            };
            template
                .spec
                .render(template.version, &run, &tick_name(&spec.name, 0))
                .map_err(under("target"))?;
        }
        ScheduleTarget::Pipeline { pipeline, values } => {
            super::pipelines::run_values(pipeline, values).map_err(under("target"))?;
        }
        ScheduleTarget::Notebook { notebook, run } => {
            let declared = super::notebook_runs::notebook_parameters(
                services,
                me,
                notebook,
                &run.path,
                run.version,
            )
            .await
            .map_err(under("target.run"))?;
            declared.check(&run.values).map_err(under("target.run"))?;
        }
    }
    services.schedules.create(me, spec).await
}

/// Schedule `name` with its newest runs, each with the status of what it
/// started (a job's, a pipeline run's) while that still exists.
pub async fn schedule_page(
    services: &Services,
    account: &Account,
    name: &str,
) -> Result<Schedule, AppError> {
    let mut schedule = services.schedules.get(account, name).await?;
    let jobs: Vec<String> = schedule
        .runs
        .iter()
        .filter(|r| r.started_kind.as_deref() != Some("pipeline"))
        .filter_map(|r| r.started.clone())
        .collect();
    let found = services.cluster.jobs_named(account, &jobs).await?;
    for run in &mut schedule.runs {
        let Some(started) = run.started.clone() else {
            continue;
        };
        run.status = if run.started_kind.as_deref() == Some("pipeline") {
            services
                .pipelines
                .get(account, &started)
                .await
                .ok()
                .map(|p| p.status.as_str().to_owned())
        } else {
            found
                .iter()
                .find(|j| j.name == started)
                .map(|j| j.status.as_str().to_owned())
        };
    }
    Ok(schedule)
}

/// Whether what a schedule's run started (`started`, of `kind`) is still
/// going.
pub async fn still_going(
    services: &Services,
    account: &Account,
    started: &str,
    kind: &str,
) -> Result<bool, AppError> {
    let going = if kind == "pipeline" {
        match services.pipelines.get(account, started).await {
            Ok(run) => run.status == crate::models::RunStatus::Running,
            Err(AppError::NotFound { .. }) => false,
            Err(err) => return Err(err),
        }
    } else {
        match services.cluster.job(account, started).await {
            Ok(job) => job.status.is_active(),
            Err(AppError::NotFound { .. }) => false,
            Err(err) => return Err(err),
        }
    };
    Ok(going)
}

/// Stops what a schedule's run started (`overlap: replace`).
pub async fn stop_started(
    services: &Services,
    who: &Principal,
    started: &str,
    kind: &str,
) -> Result<(), AppError> {
    if kind == "pipeline" {
        services.pipelines.stop(&who.me, started).await.map(|_| ())
    } else {
        super::jobs::stop_job(services, &who.me, started)
            .await
            .map(|_| ())
    }
}

/// Starts tick `tick` of `schedule` as `who` (its creator): the template's
/// job, the pipeline's run or the notebook run, named after the tick.
/// Returns what it started and its kind (`job` or `pipeline`).
pub async fn start_tick(
    services: &Services,
    who: &Principal,
    schedule: &ScheduleSpec,
    tick: i64,
) -> Result<(String, &'static str), AppError> {
    let name = tick_name(&schedule.name, tick);
    match &schedule.target {
        ScheduleTarget::Template {
            owner,
            name: template,
            version,
            values,
        } => {
            let run = TemplateRun {
                owner: owner.clone(),
                name: Some(name),
                version: *version,
                values: values.clone(),
            };
            let job = super::templates::run_template(services, who, template, run).await?;
            Ok((job.name, "job"))
        }
        ScheduleTarget::Pipeline { pipeline, values } => {
            let submit = PipelineSubmit {
                pipeline: pipeline.clone(),
                name: None,
                values: values.clone(),
            };
            let run = super::pipelines::submit_pipeline(services, who, submit).await?;
            Ok((run.name, "pipeline"))
        }
        ScheduleTarget::Notebook { notebook, run } => {
            let mut run = run.clone();
            run.name = Some(name);
            let job = super::notebook_runs::run_notebook(services, who, notebook, run).await?;
            Ok((job.name, "job"))
        }
    }
}
