//! Which model version a job or a serving instance takes: the version
//! named, the one its alias names, or the newest ready one, readable by
//! the caller and complete.

use crate::error::AppError;
use crate::models::{AssetRef, Me, ModelRef, ModelVersion};
use crate::ports::{Assets, Viewer};

/// The fields a bad reference is reported against: the model's and the
/// version's (the same field where one text names both).
pub struct Fields {
    /// Where "no such model" goes.
    pub model: &'static str,
    /// Where "no such version" or "still uploading" goes.
    pub version: &'static str,
}

/// The model `reference` names (owner defaulting to `me`'s account) and the
/// version taken: the one named, the one its alias names now, or the newest
/// ready one.
pub async fn ready_version(
    assets: &dyn Assets,
    me: &Me,
    reference: &ModelRef,
    fields: Fields,
) -> Result<(AssetRef, ModelVersion), AppError> {
    // As the caller wrote it, without the version.
    let shown = match &reference.owner {
        Some(owner) => format!("{owner}/{}", reference.name),
        None => reference.name.clone(),
    };
    let model = reference.asset(&me.account.name);
    let versions = assets
        .versions(&Viewer::User(me.clone()), &model)
        .await
        .map_err(|err| match err {
            AppError::NotFound { .. } | AppError::Invalid { .. } => AppError::invalid(
                fields.model,
                format!("There is no model “{shown}” you can read."),
            ),
            other => other,
        })?;
    let named = match (&reference.version, &reference.alias) {
        (Some(v), _) => Some(*v),
        (None, Some(alias)) => {
            let aliases = assets.aliases(&Viewer::User(me.clone()), &model).await?;
            let found = aliases.into_iter().find(|a| &a.alias == alias);
            Some(
                found
                    .ok_or_else(|| {
                        AppError::invalid(
                            fields.version,
                            format!("“{shown}” has no alias “{alias}”."),
                        )
                    })?
                    .version,
            )
        }
        (None, None) => None,
    };
    let version = match named {
        Some(v) => versions
            .into_iter()
            .find(|m| m.version == v)
            .ok_or_else(|| {
                AppError::invalid(fields.version, format!("“{shown}” has no version {v}."))
            })?,
        None => versions
            .into_iter()
            .find(|m| m.state == "ready")
            .ok_or_else(|| {
                AppError::invalid(
                    fields.version,
                    format!("“{shown}” has no finished version yet."),
                )
            })?,
    };
    if version.state != "ready" {
        return Err(AppError::invalid(
            fields.version,
            format!(
                "Version {} of “{shown}” is still uploading.",
                version.version
            ),
        ));
    }
    Ok((model, version))
}

/// Each model a job reads, pinned to the exact version it takes
/// (`owner/name:version`), so the job's record says what it read.
pub async fn pin_job_models(
    assets: &dyn Assets,
    me: &Me,
    named: &[String],
) -> Result<Vec<String>, AppError> {
    let mut pinned = Vec::with_capacity(named.len());
    for text in named {
        let reference = ModelRef::parse(text, "models")?;
        let fields = Fields {
            model: "models",
            version: "models",
        };
        let (model, version) = ready_version(assets, me, &reference, fields).await?;
        pinned.push(format!(
            "{}/{}:{}",
            model.owner, model.name, version.version
        ));
    }
    Ok(pinned)
}
