//! One rule for letting work in: whatever asks for room (a job, a notebook's
//! server, a serving instance, or what scaling one adds) must fit in the
//! account's quota and then in the member's own caps there. Every use case
//! that starts or grows a workload calls [`admit`] while it holds the
//! account's [`Admission`](crate::ports::Admission), so two at once cannot
//! each find the same room.

use crate::error::AppError;
use crate::models::{Me, ResourceTotals, Workload};
use crate::ports::Services;

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
