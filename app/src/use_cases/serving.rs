//! Launching and scaling a serving instance, within the account's quota.

use super::admission::{admit, prepare, start_admitted};
use crate::error::AppError;
use crate::models::{Me, Release, ResourceTotals, Scale, ServingInstance, ServingSpec, Workload};
use crate::ports::Services;

/// Launches `spec` if the account's quota has room for all the replicas it
/// may run, with a message saying what is over and by how much if not.
/// Every way of launching (dialog, REST, CLI, SDK) comes through here.
pub async fn launch_within_quota(
    services: &Services,
    me: &Me,
    mut spec: ServingSpec,
) -> Result<ServingInstance, AppError> {
    let asked = prepare(services, me, &mut spec).await?;
    let launch = services.serving.launch(me, spec);
    start_admitted(services, me, Workload::Instance, asked, launch).await
}

/// Scales an instance if the quota has room for what it grows by.
pub async fn scale_within_quota(
    services: &Services,
    me: &Me,
    name: &str,
    scale: Scale,
) -> Result<ServingInstance, AppError> {
    let _admission = services.quotas.admission(&me.account).await?;
    let current = services.serving.get(&me.account, name).await?;
    let mut grown = current.spec.clone();
    scale.apply(&mut grown)?;
    admit_growth(services, me, &current, &grown).await?;
    services.serving.scale(&me.account, name, scale).await
}

/// Starts, changes, promotes or rolls back an instance's canary or shadow
/// if the quota has room for the replicas it adds.
pub async fn release_within_quota(
    services: &Services,
    me: &Me,
    name: &str,
    release: Release,
) -> Result<ServingInstance, AppError> {
    let _admission = services.quotas.admission(&me.account).await?;
    let current = services.serving.get(&me.account, name).await?;
    let (grown, _) = current.spec.released(&release, current.version)?;
    admit_growth(services, me, &current, &grown).await?;
    services.serving.release(me, name, release).await
}

/// Admits what an active instance grows by from `current` to `grown`,
/// against the quota and the member's caps alike.
async fn admit_growth(
    services: &Services,
    me: &Me,
    current: &ServingInstance,
    grown: &ServingSpec,
) -> Result<(), AppError> {
    let (before, after) = (current.spec.totals()?, grown.totals()?);
    if current.status.is_active() && after != before {
        let extra = ResourceTotals {
            cpu_millis: after.cpu_millis.saturating_sub(before.cpu_millis),
            memory_bytes: after.memory_bytes.saturating_sub(before.memory_bytes),
            gpu: after.gpu.saturating_sub(before.gpu),
        };
        admit(services, me, Workload::Instance, extra).await?;
    }
    Ok(())
}
