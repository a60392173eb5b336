//! Submitting a job, within the account's quota.

use crate::error::AppError;
use crate::models::{Job, JobSpec, Me};
use crate::ports::Services;

/// Submits `spec` if the account's quota and the submitter's own caps have
/// room for it, with a message
/// saying what is over and by how much if not. Every way of submitting
/// (dialog, REST, CLI, SDK) comes through here.
pub async fn submit_within_quota(
    services: &Services,
    me: &Me,
    spec: JobSpec,
) -> Result<Job, AppError> {
    let totals = spec.totals()?;
    let _admission = services.quotas.admission(&me.account).await?;
    services
        .quotas
        .quota_use(&me.account)
        .await?
        .admit(totals)?;
    services
        .quotas
        .member_use(me)
        .await?
        .admit_member("job", totals)?;
    services.cluster.submit(me, spec).await
}
