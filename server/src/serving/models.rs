//! Which model an instance serves: the model and version a launch names,
//! checked (readable by the caller, the version ready, the archive in it),
//! and its files on this machine for a local backend.

use app::error::AppError;
use app::models::{AssetKind, AssetRef, Me, ModelRef, ServingSpec};
use app::ports::{Slot, Viewer};
use app::use_cases::model_versions::{ready_version, Fields};

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
        // `owner/name` or `owner/name@alias`; the version is its own field.
        let mut reference = ModelRef::parse(&spec.model, "model")?;
        if reference.version.is_some() {
            return Err(AppError::invalid(
                "model",
                "Name the version in its own field, not after a colon.",
            ));
        }
        if reference.alias.is_some() && spec.version.is_some() {
            return Err(AppError::invalid(
                "version",
                "An alias names the version: give one or the other.",
            ));
        }
        reference.version = spec.version;
        let fields = Fields {
            model: "model",
            version: "version",
        };
        let (r, version) = ready_version(&*self.assets, by, &reference, fields).await?;
        let viewer = Viewer::User(by.clone());
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
        self.locate(by, &r.owner, &r.name, version.version, &spec.file)
            .await
    }
}
