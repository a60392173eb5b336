//! Experiment templates: job specs with typed parameters, saved in
//! immutable versions. Implemented in `server/src/templates.rs`; a run is
//! `app::use_cases::run_template`.

use async_trait::async_trait;

use crate::error::AppError;
use crate::models::{Account, Me, Template, TemplateList, TemplateSpec};

/// An account's templates. Another account's are "not found".
#[async_trait]
pub trait Templates: Send + Sync {
    /// Checks `spec` and saves it as the next version of its name (1 for a
    /// new name); earlier versions stay as they were.
    async fn save(&self, by: &Me, spec: TemplateSpec) -> Result<Template, AppError>;
    /// The account's templates at their newest versions, by name.
    async fn list(&self, account: &Account) -> Result<TemplateList, AppError>;
    /// Version `version` of template `name` (`None`: the newest).
    async fn get(
        &self,
        account: &Account,
        name: &str,
        version: Option<u32>,
    ) -> Result<Template, AppError>;
}
