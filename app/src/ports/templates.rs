//! Experiment templates: job specs with typed parameters, saved in
//! immutable versions. Implemented in `server/src/templates.rs`; a run is
//! `app::use_cases::run_template`.

use async_trait::async_trait;

use crate::error::AppError;
use crate::models::{Account, Me, Template, TemplateList, TemplateSpec};

/// An account's templates and published ones. Another account's
/// unpublished template is "not found".
#[async_trait]
pub trait Templates: Send + Sync {
    /// Checks `spec` and saves it as the next version of its name (1 for a
    /// new name); earlier versions stay as they were.
    async fn save(&self, by: &Me, spec: TemplateSpec) -> Result<Template, AppError>;
    /// The account's templates, then published ones, at their newest
    /// versions, by owner and name.
    async fn list(&self, account: &Account) -> Result<TemplateList, AppError>;
    /// Version `version` (`None`: the newest) of template `name` of
    /// `owner` (`None`: the account's own), if the account can read it.
    async fn get(
        &self,
        account: &Account,
        owner: Option<&str>,
        name: &str,
        version: Option<u32>,
    ) -> Result<Template, AppError>;
    /// Publishes every version of `owner/name` for every account, or takes
    /// it back; only a site admin may.
    async fn publish(
        &self,
        me: &Me,
        owner: &str,
        name: &str,
        public: bool,
    ) -> Result<Template, AppError>;
}
