//! Creating and starting a notebook, within the account's quota: a running
//! notebook's server counts like a job's replica (its requests while it runs).

use super::admission::{admit, prepare, start_admitted};
use crate::error::AppError;
use crate::models::{Me, Notebook, NotebookSpec, Workload};
use crate::ports::Services;

/// Creates and starts `spec` if the quota has room for it. Every way of
/// creating one (dialog, REST, CLI, SDK) comes through here.
pub async fn create_notebook_within_quota(
    services: &Services,
    me: &Me,
    mut spec: NotebookSpec,
) -> Result<Notebook, AppError> {
    let asked = prepare(services, me, &mut spec).await?;
    let create = services.notebooks.create(me, spec);
    start_admitted(services, me, Workload::Notebook, asked, create).await
}

/// Starts a stopped notebook again if the quota has room for it.
pub async fn start_notebook_within_quota(
    services: &Services,
    me: &Me,
    name: &str,
) -> Result<Notebook, AppError> {
    let _admission = services.quotas.admission(&me.account).await?;
    let notebook = services.notebooks.get(&me.account, name).await?;
    if !notebook.status.is_active() {
        admit(services, me, Workload::Notebook, notebook.spec.totals()?).await?;
    }
    services.notebooks.start(me, name).await
}
