//! Metric alerts: an account's rules and the alerts they raised. The
//! console's alert controller (in the replica holding its lease) checks
//! the rules and raises and resolves alerts.

use async_trait::async_trait;

use crate::error::AppError;
use crate::models::{Account, Alert, AlertRule, AlertRuleSpec, Me};

/// Where alert rules and alerts are kept.
#[async_trait]
pub trait Alerts: Send + Sync {
    /// Keeps `spec` as a rule of `me`'s account (members and owners; a
    /// taken name is a 409).
    async fn create_rule(&self, me: &Me, spec: AlertRuleSpec) -> Result<AlertRule, AppError>;
    /// The account's rules by name, each with its count of open alerts.
    async fn rules(&self, account: &Account) -> Result<Vec<AlertRule>, AppError>;
    /// Deletes rule `name` and its alerts (members and owners).
    async fn delete_rule(&self, me: &Me, name: &str) -> Result<(), AppError>;
    /// The account's newest alerts (of `job` only, when given), open first.
    async fn alerts(&self, account: &Account, job: Option<&str>) -> Result<Vec<Alert>, AppError>;
    /// The alerts of `jobs` on `tags`: what PaddleBoard marks on its charts.
    async fn chart_alerts(
        &self,
        account: &Account,
        jobs: &[String],
        tags: &[String],
    ) -> Result<Vec<Alert>, AppError>;
}
