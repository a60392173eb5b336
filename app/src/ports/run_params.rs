//! What a job's own program recorded as its parameters, wherever it ran:
//! a local run's `log_params`, and the params of the MLflow runs that log to
//! the job. (Template values are in the job's spec, not here.)

use std::collections::BTreeMap;

use async_trait::async_trait;

use crate::error::AppError;
use crate::models::Account;

/// Parameters recorded by jobs' programs. Another account's job is "not
/// found".
#[async_trait]
pub trait RunParams: Send + Sync {
    /// Each job's parameters as text, by name, in the order asked; a job
    /// that recorded none has an empty map. When several MLflow runs log to
    /// one job, the newest run's value of a name wins.
    async fn params(
        &self,
        account: &Account,
        jobs: &[String],
    ) -> Result<Vec<BTreeMap<String, String>>, AppError>;
}
