//! Submitting a pipeline, checked whole before anything is recorded, and
//! starting one of its nodes as a job.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::error::AppError;
use crate::models::pipelines::{node_job_name, Output, Placeholder, MAX_PIPELINE_NAME};
use crate::models::templates::{fill_job, fill_placeholders};
use crate::models::{
    validate_job_name, Job, JobSpec, Me, PipelineRun, PipelineSpec, PipelineSubmit, PipelineUse,
    TemplateRun, TemplateValue,
};
use crate::ports::{Principal, Services};

/// Checks `submit` whole (the pipeline, its values, and the job every node
/// would start with, earlier nodes' outputs standing in) and records the
/// run; the console's scheduler starts its nodes. The error names the
/// field (`values.lr`, `nodes[2].job.num_trainers`).
pub async fn submit_pipeline(
    services: &Services,
    who: &Principal,
    submit: PipelineSubmit,
) -> Result<PipelineRun, AppError> {
    who.require_change()?;
    let spec = submit.pipeline;
    spec.validate()?;
    let values = run_values(&spec, &submit.values)?;
    let name = match submit.name.filter(|n| !n.trim().is_empty()) {
        Some(name) => name.trim().to_owned(),
        None => crate::models::names::default_job_name(&spec.name),
    };
    validate_job_name(&name)?;
    if name.len() > MAX_PIPELINE_NAME + 7 {
        return Err(AppError::invalid(
            "name",
            format!(
                "A run's name has at most {} characters (its nodes' jobs add to it).",
                MAX_PIPELINE_NAME + 7
            ),
        ));
    }
    let examples = example_outputs(&spec);
    for i in 0..spec.nodes.len() {
        node_job(services, &who.me, &spec, i, &values, &examples, &name, 1).await?;
    }
    services
        .pipelines
        .create(&who.me, &name, &spec, &values)
        .await
}

/// Every parameter's value: the run's, else the default; a value for a
/// parameter the pipeline does not have is a 400 naming it.
pub(crate) fn run_values(
    spec: &PipelineSpec,
    given: &BTreeMap<String, Value>,
) -> Result<BTreeMap<String, Value>, AppError> {
    if let Some(unknown) = given.keys().find(|k| !spec.parameters.contains_key(*k)) {
        return Err(AppError::invalid(
            format!("values.{unknown}"),
            format!("The pipeline has no parameter “{unknown}”."),
        ));
    }
    Ok(spec
        .parameters
        .iter()
        .map(|(k, default)| (k.clone(), given.get(k).unwrap_or(default).clone()))
        .collect())
}

/// What earlier nodes' outputs look like, for checking the nodes that read
/// them before they exist.
fn example_outputs(spec: &PipelineSpec) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for node in &spec.nodes {
        let names = node.placeholders();
        for name in names {
            let example = match Placeholder::parse(&name) {
                Some(Placeholder::Node(_, Output::Model)) => Value::from("example/model:1"),
                Some(Placeholder::Node(_, Output::Metric(_))) => Value::from(1.0),
                _ => continue,
            };
            out.insert(name, example);
        }
    }
    out
}

/// The job try `attempt` of node `i` of run `run` starts with: the node's
/// job (or template) with `{{params.…}}` from `values` and
/// `{{nodes.…}}` from `outputs`, named `<run>-<node>[-rN]`, checked, and
/// recording the run. A bad field is named under `nodes[i]`.
#[allow(clippy::too_many_arguments)]
pub async fn node_job(
    services: &Services,
    me: &Me,
    spec: &PipelineSpec,
    i: usize,
    values: &BTreeMap<String, Value>,
    outputs: &BTreeMap<String, Value>,
    run: &str,
    attempt: u32,
) -> Result<JobSpec, AppError> {
    let node = &spec.nodes[i];
    let mut filled: BTreeMap<String, TemplateValue> = values
        .iter()
        .map(|(k, v)| (format!("params.{k}"), TemplateValue::from_json(v)))
        .collect();
    filled.extend(
        outputs
            .iter()
            .map(|(k, v)| (k.clone(), TemplateValue::from_json(v))),
    );
    let job_name = node_job_name(run, &node.name, attempt);
    let under = |part: &str| {
        let part = part.to_owned();
        move |err: AppError| match err {
            AppError::Invalid { field, message } => AppError::invalid(
                match field {
                    Some(f) if f != part => format!("nodes[{i}].{part}.{f}"),
                    _ => format!("nodes[{i}].{part}"),
                },
                message,
            ),
            AppError::NotFound { what } => {
                AppError::invalid(format!("nodes[{i}].{part}"), format!("{what} not found."))
            }
            other => other,
        }
    };
    let mut job = match (&node.job, &node.template) {
        (Some(job), _) => fill_job(job, &filled, &job_name).map_err(under("job"))?,
        (None, Some(t)) => {
            let template = services
                .templates
                .get(&me.account, t.owner.as_deref(), &t.name, t.version)
                .await
                .map_err(under("template"))?;
            let run_values = t
                .values
                .iter()
                .map(|(k, v)| (k.clone(), fill_placeholders(v, &filled)))
                .collect();
            let template_run = TemplateRun {
                owner: t.owner.clone(),
                name: Some(job_name),
                version: Some(template.version),
                values: run_values,
            };
            let mut job = template
                .spec
                .render(template.version, &template_run, "")
                .map_err(under("template"))?;
            if let Some(used) = job.template.as_mut() {
                used.owner = template.owner.clone();
            }
            job
        }
        (None, None) => {
            return Err(AppError::invalid(
                format!("nodes[{i}]"),
                "A node has either a job or a template.",
            ))
        }
    };
    job.pipeline = Some(PipelineUse {
        run: run.to_owned(),
        node: node.name.clone(),
        attempt,
    });
    Ok(job)
}

/// Submits a node's job within the quota, as the run's submitter. Only
/// the console's scheduler calls this.
pub async fn submit_node(
    services: &Services,
    who: &Principal,
    job: JobSpec,
) -> Result<Job, AppError> {
    who.require_change()?;
    super::jobs::admit_and_submit(services, who, job).await
}
