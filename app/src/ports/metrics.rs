//! PaddleBoard's store of training metrics.

use async_trait::async_trait;

use crate::error::AppError;
use crate::models::{
    Account, AppendSummary, BoardJob, ChartPoint, ChartRange, MetricPoint, SeriesEnvelope,
    TagSummary,
};

/// New points arrived for a job: live charts of it refresh.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsEvent {
    /// The account that owns the job.
    pub account_id: i64,
    /// The job's name.
    pub job: String,
}

/// Metrics of jobs, always within one account: another account's job is
/// "not found".
#[async_trait]
pub trait Metrics: Send + Sync {
    /// Stores a batch (validated first; one transaction; durable when it
    /// returns). A step that repeats or goes back replaces the series' points
    /// from that step on.
    async fn append(
        &self,
        account: &Account,
        job: &str,
        points: Vec<MetricPoint>,
    ) -> Result<AppendSummary, AppError>;
    /// The job's series, by tag.
    async fn tags(&self, account: &Account, job: &str) -> Result<Vec<TagSummary>, AppError>;
    /// One series over a step range, at most about `2 × width` points that
    /// keep every bucket's minimum and maximum.
    async fn envelope(
        &self,
        account: &Account,
        job: &str,
        tag: &str,
        range: ChartRange,
    ) -> Result<SeriesEnvelope, AppError>;
    /// Each of `jobs`' series, by tag, in the order asked (a comparison of
    /// runs); a name that is not the account's job has none.
    async fn tags_of(
        &self,
        account: &Account,
        jobs: &[String],
    ) -> Result<Vec<Vec<TagSummary>>, AppError>;
    /// The series `tag` of each of `jobs` over `range`, in the order asked,
    /// as [`Metrics::envelope`] gives each (a comparison of runs overlays
    /// them); a job without it is "not found".
    async fn envelopes(
        &self,
        account: &Account,
        jobs: &[String],
        tag: &str,
        range: ChartRange,
    ) -> Result<Vec<SeriesEnvelope>, AppError>;
    /// The account's jobs that have metrics, newest first (at most 200).
    async fn jobs(&self, account: &Account) -> Result<Vec<BoardJob>, AppError>;
    /// Every point of a series in a step range, by step (exports, history).
    async fn points(
        &self,
        account: &Account,
        job: &str,
        tag: &str,
        from: Option<i64>,
        to: Option<i64>,
    ) -> Result<Vec<ChartPoint>, AppError>;
    /// Changes to any job's metrics, for live charts.
    fn subscribe(&self) -> tokio::sync::broadcast::Receiver<MetricsEvent>;
}
