//! Running a template: the job its values make, checked and admitted like
//! any job.

use crate::error::AppError;
use crate::models::{
    AssetKind, AssetRef, Job, JobSpec, ModelRef, ParamType, TemplateParam, TemplateRun,
    TemplateValue,
};
use crate::ports::{Principal, Services, Viewer};

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
    let mut spec = template
        .spec
        .render(template.version, &run, &default_job_name(name))?;
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

/// `<template>-<6 characters>`: a job name for a run that names none,
/// within the 50 characters a job name has. The suffix comes from the
/// clock's nanoseconds (a clash is a 409 like any taken name).
pub(crate) fn default_job_name(template: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    // Mixed so that runs a microsecond apart differ in every character.
    let mut x = (nanos as u64) ^ ((nanos >> 64) as u64);
    x = (x ^ (x >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let suffix: String = (0..6)
        .map(|i| DIGITS[((x >> (i * 6)) % 36) as usize] as char)
        .collect();
    let stem: String = template.chars().take(50 - 7).collect();
    format!("{}-{suffix}", stem.trim_end_matches('-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_default_job_name_is_a_valid_job_name_even_for_the_longest_template() {
        for template in ["curve", &"a".repeat(50)] {
            let name = default_job_name(template);
            crate::models::validate_job_name(&name).unwrap();
            assert!(
                name.starts_with(&template[..template.len().min(43)]),
                "{name}"
            );
        }
        assert_ne!(default_job_name("x"), default_job_name("x"));
    }
}
