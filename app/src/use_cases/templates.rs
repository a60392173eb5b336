//! Running a template: the job its values make, checked and admitted like
//! any job.

use std::collections::BTreeMap;

use crate::error::AppError;
use crate::models::{
    AssetKind, AssetRef, Job, JobSpec, ModelRef, NotebookParameters, ParamType, Template,
    TemplateNotebook, TemplateParam, TemplateRun, TemplateSpec, TemplateValue,
};
use crate::ports::{Principal, Services, Viewer};

/// How many earlier versions of a template a save looks through for the
/// notebook copy it names (`notebook.input`).
const KEPT_COPY_LOOKBACK: u32 = 50;

/// Saves `spec` as the next version of its name. A notebook template's
/// file is copied first (from the notebook run, the notebook file version,
/// or the earlier version of this template it names) and its parameters
/// fitted to the notebook's; nothing is kept when the template is refused.
pub async fn save_template(
    services: &Services,
    who: &Principal,
    mut spec: TemplateSpec,
) -> Result<Template, AppError> {
    who.require_change()?;
    let Some(asked) = spec.notebook.clone() else {
        return services.templates.save(&who.me, spec).await;
    };
    // The job's shape first: a bad one copies nothing.
    asked.job_value(&spec.job)?;
    let (mut source, bytes, defaults) = notebook_source(services, who, &spec.name, asked).await?;
    let json: serde_json::Value = serde_json::from_slice(&bytes).map_err(|_| AppError::Internal)?;
    let declared = NotebookParameters::read(
        &source.notebook,
        &source.path,
        source.version.unwrap_or_default(),
        &json,
    );
    declared.fit_template(&mut spec, &defaults)?;
    spec.notebook = Some(source.clone());
    spec.validate()?;
    source.input = services.notebook_runs.keep_input(bytes).await?;
    let key = source.input.clone();
    spec.notebook = Some(source);
    match services.templates.save(&who.me, spec).await {
        Ok(saved) => Ok(saved),
        Err(err) => {
            if let Err(forgot) = services.notebook_runs.forget(&key).await {
                tracing::warn!(error = %forgot, "removing a refused template's notebook");
            }
            Err(err)
        }
    }
}

/// The notebook version `version` (`None`: the newest) of template `name`
/// of `owner` (`None`: the account's own) runs, as the `.ipynb` file
/// (`html` false) or its page; a template that runs no notebook is "not
/// found" here. Returns the file's name with it.
pub async fn template_notebook(
    services: &Services,
    who: &Principal,
    owner: Option<&str>,
    name: &str,
    version: Option<u32>,
    html: bool,
) -> Result<(String, Vec<u8>), AppError> {
    let template = services
        .templates
        .get(&who.me.account, owner, name, version)
        .await?;
    let notebook = template
        .spec
        .notebook
        .ok_or_else(|| AppError::not_found(format!("A notebook that template {name} runs")))?;
    let file = notebook
        .path
        .rsplit('/')
        .next()
        .unwrap_or("notebook.ipynb")
        .to_owned();
    let bytes = if html {
        services.notebook_runs.input_html(&notebook.input).await?
    } else {
        services.notebook_runs.input(&notebook.input).await?
    };
    Ok((file, bytes))
}

/// Where a notebook template's file comes from, with its bytes and the
/// values to take as defaults (a run's): the copy of an earlier version of
/// the same template when `asked.input` is one, else the notebook run
/// `asked.job` of the account, else version `asked.version` (the newest
/// when `None`) of file `asked.path` of the caller's notebook
/// `asked.notebook`.
async fn notebook_source(
    services: &Services,
    who: &Principal,
    template: &str,
    asked: TemplateNotebook,
) -> Result<(TemplateNotebook, Vec<u8>, BTreeMap<String, TemplateValue>), AppError> {
    if !asked.input.is_empty() {
        if let Some(kept) = earlier_copy(services, who, template, &asked.input).await? {
            let bytes = services.notebook_runs.input(&kept.input).await?;
            return Ok((kept, bytes, BTreeMap::new()));
        }
    }
    if let Some(job) = asked.job.filter(|j| !j.trim().is_empty()) {
        let no_run = || {
            AppError::invalid(
                "notebook.job",
                format!("There is no notebook run “{job}” in the account to copy the notebook of."),
            )
        };
        let found = match services.cluster.job(&who.me.account, &job).await {
            Ok(found) => found,
            Err(AppError::NotFound { .. }) => return Err(no_run()),
            Err(other) => return Err(other),
        };
        let run = found.spec.notebook_run.ok_or_else(no_run)?;
        let bytes = services.notebook_runs.input(&run.run).await?;
        let source = TemplateNotebook {
            notebook: run.notebook,
            path: run.path,
            version: Some(run.version),
            job: Some(job),
            input: String::new(),
        };
        return Ok((source, bytes, run.values));
    }
    if asked.notebook.trim().is_empty() || asked.path.trim().is_empty() {
        return Err(AppError::invalid(
            "notebook",
            "Name the notebook run to copy the notebook of (`job`), or a notebook of yours and \
             the file in it (`notebook`, `path`, and `version` unless the newest).",
        ));
    }
    let found = super::notebook_runs::file_version(
        services,
        &who.me,
        &asked.notebook,
        &asked.path,
        asked.version,
    )
    .await
    .map_err(|err| match err {
        AppError::NotFound { what } => AppError::invalid("notebook", format!("{what} not found.")),
        AppError::Invalid { message, .. } => AppError::invalid("notebook", message),
        other => other,
    })?;
    let source = TemplateNotebook {
        notebook: asked.notebook,
        path: found.version.path,
        version: Some(found.version.id),
        job: None,
        input: String::new(),
    };
    Ok((source, found.bytes, BTreeMap::new()))
}

/// The notebook of the account's template `template` whose copy is
/// `input`, among its newest versions; `None` if no version has it (a key
/// from elsewhere is never read).
async fn earlier_copy(
    services: &Services,
    who: &Principal,
    template: &str,
    input: &str,
) -> Result<Option<TemplateNotebook>, AppError> {
    let newest = match services
        .templates
        .get(&who.me.account, None, template, None)
        .await
    {
        Ok(t) => t.version,
        Err(AppError::NotFound { .. }) => return Ok(None),
        Err(other) => return Err(other),
    };
    let oldest = newest.saturating_sub(KEPT_COPY_LOOKBACK).max(1);
    for version in (oldest..=newest).rev() {
        let found = services
            .templates
            .get(&who.me.account, None, template, Some(version))
            .await?;
        if let Some(notebook) = found.spec.notebook.filter(|n| n.input == input) {
            return Ok(Some(notebook));
        }
    }
    Ok(None)
}

/// Makes and submits the job of template `name` with `run`'s values (the
/// job named after the template and a suffix unless the run names it). Every value is
/// checked before anything is made, the datasets and models it names must
/// be readable by the caller, and the job counts against the quota as any
/// job does. The job records the template version and the values.
pub async fn run_template(
    services: &Services,
    who: &Principal,
    name: &str,
    run: TemplateRun,
) -> Result<Job, AppError> {
    who.me.role.require_change()?;
    let template = services
        .templates
        .get(&who.me.account, run.owner.as_deref(), name, run.version)
        .await?;
    let mut spec = template.spec.render(
        template.version,
        &run,
        &crate::models::names::default_job_name(name),
    )?;
    if let Some(used) = spec.template.as_mut() {
        used.owner = template.owner.clone();
    }
    readable_inputs(services, who, &template.spec.parameters, &spec).await?;
    super::jobs::admit_and_submit(services, who, spec).await
}

/// Refuses a template run whose dataset or model values the caller cannot
/// read, naming the parameter: `job` is the run's job, as rendered, with
/// its values recorded.
pub(crate) async fn readable_inputs(
    services: &Services,
    who: &Principal,
    parameters: &[TemplateParam],
    job: &JobSpec,
) -> Result<(), AppError> {
    let values = job
        .template
        .as_ref()
        .map(|t| t.values.clone())
        .unwrap_or_default();
    for p in parameters {
        let Some(TemplateValue::Text(value)) = values.get(&p.name) else {
            continue;
        };
        let field = format!("values.{}", p.name);
        match p.kind {
            ParamType::Dataset => readable_dataset(services, who, &field, &p.name, value).await?,
            ParamType::Model => {
                let reference = ModelRef::parse(value, &field)?;
                let fields = super::model_versions::Fields {
                    model: "values",
                    version: "values",
                };
                super::model_versions::ready_version(
                    &*services.assets,
                    &who.me,
                    &reference,
                    fields,
                )
                .await
                .map_err(|err| match err {
                    AppError::Invalid { message, .. } => {
                        AppError::invalid(field.clone(), format!("{}: {message}", p.name))
                    }
                    other => other,
                })?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// Refuses a dataset value the caller cannot read, naming the parameter.
async fn readable_dataset(
    services: &Services,
    who: &Principal,
    field: &str,
    parameter: &str,
    value: &str,
) -> Result<(), AppError> {
    let (owner, asset) = value
        .split_once('/')
        .unwrap_or((who.me.account.name.as_str(), value));
    let reference = AssetRef {
        kind: AssetKind::Dataset,
        owner: owner.to_owned(),
        name: asset.to_owned(),
    };
    match services
        .assets
        .get(&Viewer::User(who.me.clone()), &reference)
        .await
    {
        Ok(_) => Ok(()),
        Err(AppError::NotFound { .. }) => Err(AppError::invalid(
            field,
            format!("{parameter}: no dataset {value} that you can read."),
        )),
        Err(other) => Err(other),
    }
}
