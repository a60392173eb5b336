//! [`app::ports::Environments`]: the catalog in the console's database
//! ([`crate::storage::catalog`]) and the local builds
//! ([`crate::local::venvs`]).

use std::sync::Arc;

use crate::storage::db::Pool;
use app::error::AppError;
use app::models::{
    Environment, EnvironmentDetail, EnvironmentList, EnvironmentRef, EnvironmentSpec,
    EnvironmentSummary, Me,
};
use app::ports::Environments;
use async_trait::async_trait;

use crate::local::venvs::Venvs;
use crate::storage::catalog::{Catalog, Row};

/// The account that owns what the console ships (migration 0015).
pub const LIBRARY_ACCOUNT: &str = "paddlecloud";

/// Environments on the console's database, built on this machine.
pub struct SqlEnvironments {
    catalog: Catalog,
    venvs: Arc<Venvs>,
    /// Build a saved version here at once (the local executor runs jobs);
    /// otherwise only when a local run needs it.
    build_on_save: bool,
}

impl SqlEnvironments {
    /// On a migrated pool, building with `venvs`.
    pub fn new(pool: Pool, venvs: Arc<Venvs>, build_on_save: bool) -> Self {
        Self {
            catalog: Catalog::new(pool, "environments", "Environment"),
            venvs,
            build_on_save,
        }
    }

    /// Saves the environments the console ships ([`shipped`]) as the next
    /// version of each in the library account where the newest stored one
    /// differs, published for everyone. Their builds start when first used.
    pub async fn install_library(&self) -> Result<(), AppError> {
        let shipped = shipped();
        let mut entries = Vec::new();
        for spec in &shipped {
            spec.validate()?;
            entries.push((spec.name.as_str(), spec));
        }
        self.catalog.install(LIBRARY_ACCOUNT, &entries).await
    }

    async fn find(&self, me: &Me, reference: &EnvironmentRef) -> Result<Environment, AppError> {
        let owner = reference.owner.as_deref().unwrap_or(&me.account.name);
        read(
            &self
                .catalog
                .find(&me.account, owner, &reference.name, reference.version)
                .await?,
        )
    }
}

/// A stored row as an environment.
fn read(row: &Row) -> Result<Environment, AppError> {
    let spec: EnvironmentSpec = serde_json::from_str(&row.spec).map_err(|err| {
        tracing::error!(error = %err, "a stored environment does not read back");
        AppError::Internal
    })?;
    Ok(Environment {
        spec,
        owner: row.owner.clone(),
        version: row.version,
        public: row.public,
        created_by: row.created_by.clone(),
        created_at: row.created_at,
    })
}

/// What the shipped "paddle-cpu" environment installs: also what the
/// console builds for local serving's default predict server when no
/// `--serving-python` is given (one build on the machine for both).
pub fn paddle_cpu_requirements() -> Vec<String> {
    shipped()
        .into_iter()
        .find(|e| e.name == "paddle-cpu")
        .map(|e| e.requirements)
        .unwrap_or_default()
}

/// What the console ships: "paddle-cpu" (PaddlePaddle's CPU build and
/// VisualDL) and "minimal" (the SDK alone). The versions pinned are those
/// the test suite trains with.
pub fn shipped() -> Vec<EnvironmentSpec> {
    vec![
        EnvironmentSpec {
            name: "paddle-cpu".into(),
            description: "PaddlePaddle (CPU) and VisualDL, with the PaddleCloud SDK.".into(),
            image: "paddlepaddle/paddle:3.3.1".into(),
            requirements: vec!["paddlepaddle==3.3.1".into(), "visualdl==2.5.3".into()],
            setup_notes: "Distributed training on CPU uses gloo: set PADDLE_DISTRI_BACKEND=gloo."
                .into(),
        },
        EnvironmentSpec {
            name: "minimal".into(),
            description: "Python with the PaddleCloud SDK and nothing else.".into(),
            image: "python:3.11-slim".into(),
            requirements: vec![],
            setup_notes: String::new(),
        },
    ]
}

#[async_trait]
impl Environments for SqlEnvironments {
    async fn save(&self, by: &Me, spec: EnvironmentSpec) -> Result<Environment, AppError> {
        by.role.require_change()?;
        // Checked as sent (what the OpenAPI document states), then trimmed.
        spec.validate()?;
        let spec = spec.normalized();
        let text = serde_json::to_string(&spec).map_err(|_| AppError::Internal)?;
        let row = self
            .catalog
            .save(
                by.account.id,
                &by.account.name,
                &spec.name,
                &text,
                &by.email,
                false,
            )
            .await?;
        tracing::info!(account = %by.account.name, environment = %spec.name, version = row.version, user = %by.email, "environment saved");
        if self.build_on_save {
            self.venvs.start(&spec.requirements);
        }
        read(&row)
    }

    async fn list(&self, me: &Me) -> Result<EnvironmentList, AppError> {
        let mut environments = Vec::new();
        for row in self.catalog.list(me.account.id).await? {
            let environment = read(&row)?;
            let state = self.venvs.state(&environment.spec.requirements);
            environments.push(EnvironmentSummary { environment, state });
        }
        Ok(EnvironmentList { environments })
    }

    async fn get(&self, me: &Me, reference: &EnvironmentRef) -> Result<Environment, AppError> {
        self.find(me, reference).await
    }

    async fn detail(
        &self,
        me: &Me,
        reference: &EnvironmentRef,
    ) -> Result<EnvironmentDetail, AppError> {
        let environment = self.find(me, reference).await?;
        let versions = self
            .catalog
            .versions(&environment.owner, &environment.spec.name)
            .await?;
        let build = self.venvs.report(&environment.spec.requirements).await;
        let can_edit = environment.owner == me.account.name && me.role.require_change().is_ok();
        Ok(EnvironmentDetail {
            environment,
            versions,
            build,
            can_edit,
        })
    }

    async fn publish(
        &self,
        me: &Me,
        owner: &str,
        name: &str,
        public: bool,
    ) -> Result<Environment, AppError> {
        let row = self.catalog.publish(me, owner, name, public).await?;
        read(&row)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_shipped_environments_are_valid_and_pin_what_the_test_venv_has() {
        // The test venv's install fills pip's cache, so building paddle-cpu in
        // CI downloads nothing new only while the pins agree.
        let test_venv = include_str!("../../../scripts/python-requirements.txt");
        for spec in super::shipped() {
            spec.validate().unwrap();
            for requirement in &spec.requirements {
                assert!(
                    test_venv.lines().any(|l| l.trim() == requirement),
                    "{requirement} is not pinned in scripts/python-requirements.txt"
                );
            }
        }
    }
}
