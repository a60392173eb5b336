//! Which model an instance serves: the model and version a launch names,
//! checked (readable by the caller, the version ready, the archive in it),
//! and its files on this machine for a local backend.

use app::error::AppError;
use app::models::{AssetKind, AssetRef, Me, ServingSpec};
use app::ports::{Slot, Viewer};

use super::ServingService;
use crate::backend::serving::ModelFiles;

impl ServingService {
    /// The version's files on this machine (or `None` for a remote backend).
    pub(super) async fn locate(
        &self,
        me: &Me,
        owner: &str,
        name: &str,
        version: u32,
        file: &str,
    ) -> Result<ModelFiles, AppError> {
        let r = AssetRef {
            kind: AssetKind::Model,
            owner: owner.to_owned(),
            name: name.to_owned(),
        };
        let local = if self.backend.remote_models() {
            None
        } else {
            let dir = self
                .assets
                .local_dir(me, &r, Slot::Version(version))
                .await?;
            Some(if file.is_empty() { dir } else { dir.join(file) })
        };
        Ok(ModelFiles {
            model: format!("{owner}/{name}"),
            version,
            local,
        })
    }

    /// The model and version `spec` names, checked: readable by `by`, the
    /// version ready, the file in it.
    pub(super) async fn resolve(
        &self,
        by: &Me,
        spec: &ServingSpec,
    ) -> Result<ModelFiles, AppError> {
        let (owner, name) = spec
            .model
            .trim()
            .split_once('/')
            .unwrap_or((&by.account.name, spec.model.trim()));
        let r = AssetRef {
            kind: AssetKind::Model,
            owner: owner.to_owned(),
            name: name.to_owned(),
        };
        let viewer = Viewer::User(by.clone());
        let versions = self
            .assets
            .versions(&viewer, &r)
            .await
            .map_err(|err| match err {
                AppError::NotFound { .. } | AppError::Invalid { .. } => AppError::invalid(
                    "model",
                    format!("There is no model “{}” you can read.", spec.model.trim()),
                ),
                other => other,
            })?;
        let version = match spec.version {
            Some(v) => versions.iter().find(|m| m.version == v).ok_or_else(|| {
                AppError::invalid("version", format!("“{}” has no version {v}.", spec.model))
            })?,
            None => versions
                .iter()
                .find(|m| m.state == "ready")
                .ok_or_else(|| {
                    AppError::invalid(
                        "version",
                        format!("“{}” has no version ready to serve.", spec.model),
                    )
                })?,
        };
        if version.state != "ready" {
            return Err(AppError::invalid(
                "version",
                format!(
                    "Version {} of “{}” is still uploading.",
                    version.version, spec.model
                ),
            ));
        }
        if !spec.file.is_empty() {
            let files = self
                .assets
                .all_files(&viewer, &r, Slot::Version(version.version))
                .await?;
            if !files.iter().any(|f| f.path == spec.file) {
                return Err(AppError::invalid(
                    "file",
                    format!(
                        "Version {} of “{}” has no file “{}”.",
                        version.version, spec.model, spec.file
                    ),
                ));
            }
        }
        self.locate(by, owner, name, version.version, &spec.file)
            .await
    }
}
