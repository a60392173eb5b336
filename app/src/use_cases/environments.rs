//! Which environment a workload runs in: what a spec names, resolved to
//! the exact build `me` may use and pinned there, for jobs, notebooks and
//! serving instances alike (see [`super::admission::prepare`]).

use crate::error::AppError;
use crate::models::{Environment, EnvironmentRef, EnvironmentUse, Me};
use crate::ports::Services;

/// Pins what a spec names in `environment` to the exact version
/// (`owner/name:version`) and records what it holds in `used`; what a
/// client put in `used` is never kept.
pub async fn pin_environment(
    services: &Services,
    me: &Me,
    named: &mut Option<String>,
    used: &mut Option<EnvironmentUse>,
) -> Result<(), AppError> {
    *used = None;
    if let Some(text) = named.take().filter(|e| !e.trim().is_empty()) {
        let environment = resolve_environment(services, me, &text).await?;
        *named = Some(environment.pinned());
        *used = Some(environment.to_use());
    }
    Ok(())
}

/// The exact version of the environment a job, notebook or serving
/// instance names, if `me` may use it; otherwise a 400 on `environment`.
pub async fn resolve_environment(
    services: &Services,
    me: &Me,
    named: &str,
) -> Result<Environment, AppError> {
    let reference = EnvironmentRef::parse(named, "environment")?;
    services
        .environments
        .get(me, &reference)
        .await
        .map_err(|err| match err {
            AppError::NotFound { .. } => AppError::invalid(
                "environment",
                format!("There is no environment “{}” you can use.", named.trim()),
            ),
            other => other,
        })
}
