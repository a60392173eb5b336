//! Notifications: a subscription is kept once what it follows is known to
//! exist in the caller's account, so a mistyped name is a 400 now rather
//! than silence later.

use crate::error::AppError;
use crate::models::{NotifySubject, Subscription, SubscriptionSpec};
use crate::ports::{Principal, Services};

/// Keeps `spec` as `who`'s subscription. Anyone in the account may follow
/// what they can read, viewers too.
pub async fn subscribe(
    services: &Services,
    who: &Principal,
    spec: SubscriptionSpec,
) -> Result<Subscription, AppError> {
    spec.validate()?;
    let account = &who.me.account;
    let found = match &spec.subject {
        NotifySubject::Job { name } => services.cluster.job(account, name).await.map(|_| ()),
        NotifySubject::Pipeline { name } => services.pipelines.get(account, name).await.map(|_| ()),
        NotifySubject::Experiment { name } => {
            services.experiments.get(account, name).await.map(|_| ())
        }
        NotifySubject::Serving { name } => services.serving.get(account, name).await.map(|_| ()),
        NotifySubject::Account => Ok(()),
    };
    if let Err(AppError::NotFound { .. }) = found {
        return Err(AppError::invalid(
            "subject.name",
            format!(
                "There is no {} “{}” in this account.",
                spec.subject.kind(),
                spec.subject.name()
            ),
        ));
    }
    found?;
    services.notifications.subscribe(&who.me, spec).await
}
