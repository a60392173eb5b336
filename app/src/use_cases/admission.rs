//! One rule for letting work in: whatever asks for room (a job, a notebook's
//! server, a serving instance, or what scaling one adds) must fit in the
//! account's quota and then in the member's own caps there. Every use case
//! that starts or grows a workload calls [`admit`] while it holds the
//! account's [`Admission`](crate::ports::Admission), so two at once cannot
//! each find the same room.

use std::future::Future;

use crate::error::AppError;
use crate::models::{Me, ResourceTotals, Workload, WorkloadSpec};
use crate::ports::Services;

/// Checks `spec`, pins the environment it names to the build it will run
/// in, and returns the room it asks for: what every workload's start does
/// before it asks for admission ([`start_admitted`]).
pub async fn prepare<S: WorkloadSpec>(
    services: &Services,
    me: &Me,
    spec: &mut S,
) -> Result<ResourceTotals, AppError> {
    spec.validate()?;
    let (named, used) = spec.environment();
    super::environments::pin_environment(services, me, named, used).await?;
    spec.totals()
}

/// Runs `start` if `asked` of `what` fits in the account's quota and
/// `me`'s caps, holding the account's admission from the check until it
/// has started (and so counts for the next check).
pub async fn start_admitted<T>(
    services: &Services,
    me: &Me,
    what: Workload,
    asked: ResourceTotals,
    start: impl Future<Output = Result<T, AppError>>,
) -> Result<T, AppError> {
    let _admission = services.quotas.admission(&me.account).await?;
    admit(services, me, what, asked).await?;
    start.await
}

/// Refuses `asked` of `what` when the account's quota or `me`'s caps have
/// no room for it, saying which is over and by how much.
pub async fn admit(
    services: &Services,
    me: &Me,
    what: Workload,
    asked: ResourceTotals,
) -> Result<(), AppError> {
    let quotas = &services.quotas;
    quotas.quota_use(&me.account).await?.admit(what, asked)?;
    quotas.member_use(me).await?.admit_member(what, asked)
}
