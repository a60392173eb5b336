//! Running a template: the job its values make, checked and admitted like
//! any job.

use crate::error::AppError;
use crate::models::{AssetKind, AssetRef, Job, ParamType, TemplateRun, TemplateValue};
use crate::ports::{Principal, Services, Viewer};

/// Makes and submits the job of template `name` with `run`'s values (the
/// job named `fallback_name` unless the run names it). Every value is
/// checked before anything is made, the datasets and models it names must
/// be readable by the caller, and the job counts against the quota as any
/// job does. The job records the template version and the values.
pub async fn run_template(
    services: &Services,
    who: &Principal,
    name: &str,
    run: TemplateRun,
    fallback_name: &str,
) -> Result<Job, AppError> {
    who.me.role.require_change()?;
    let template = services
        .templates
        .get(&who.me.account, name, run.version)
        .await?;
    let spec = template
        .spec
        .render(template.version, &run, fallback_name)?;
    let values = spec
        .template
        .as_ref()
        .map(|t| t.values.clone())
        .unwrap_or_default();
    for p in &template.spec.parameters {
        let kind = match p.kind {
            ParamType::Dataset => AssetKind::Dataset,
            ParamType::Model => AssetKind::Model,
            _ => continue,
        };
        let Some(TemplateValue::Text(value)) = values.get(&p.name) else {
            continue;
        };
        let (owner, asset) = value
            .split_once('/')
            .unwrap_or((who.me.account.name.as_str(), value.as_str()));
        let reference = AssetRef {
            kind,
            owner: owner.to_owned(),
            name: asset.to_owned(),
        };
        if let Err(err) = services
            .assets
            .get(&Viewer::User(who.me.clone()), &reference)
            .await
        {
            return Err(match err {
                AppError::NotFound { .. } => AppError::invalid(
                    format!("values.{}", p.name),
                    format!(
                        "{}: no {} {value} that you can read.",
                        p.name,
                        kind.as_str()
                    ),
                ),
                other => other,
            });
        }
    }
    super::jobs::admit_and_submit(services, who, spec).await
}
