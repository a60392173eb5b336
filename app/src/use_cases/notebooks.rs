//! Creating and starting a notebook, within the account's quota: a running
//! notebook's server counts like a job's replica (its requests while it runs).

use crate::error::AppError;
use crate::models::{Me, Notebook, NotebookSpec, ResourceTotals};
use crate::ports::Services;

/// Refuses `asked` when the account's quota or the member's caps have no
/// room for it, saying what is over and by how much.
async fn admit(services: &Services, me: &Me, asked: ResourceTotals) -> Result<(), AppError> {
    services
        .quotas
        .quota_use(&me.account)
        .await?
        .admit_as_notebook(asked)?;
    services
        .quotas
        .member_use(me)
        .await?
        .admit_member("notebook", asked)
}

/// Creates and starts `spec` if the quota has room for it. Every way of
/// creating one (dialog, REST, CLI, SDK) comes through here.
pub async fn create_notebook_within_quota(
    services: &Services,
    me: &Me,
    mut spec: NotebookSpec,
) -> Result<Notebook, AppError> {
    spec.validate()?;
    super::jobs::pin_environment(
        services,
        me,
        &mut spec.environment,
        &mut spec.environment_use,
    )
    .await?;
    let _admission = services.quotas.admission(&me.account).await?;
    admit(services, me, spec.totals()?).await?;
    services.notebooks.create(me, spec).await
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
        admit(services, me, notebook.spec.totals()?).await?;
    }
    services.notebooks.start(me, name).await
}
