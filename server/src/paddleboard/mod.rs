//! PaddleBoard's metrics store: [`app::ports::Metrics`] on the console's
//! database, with an in-memory envelope per series for charts.
//!
//! Points live in `metric_blocks`, a row per batch written
//! ([`crate::storage::metrics::block`]). A
//! chart query never reads them: each series is loaded once into a [`Series`]
//! (a min/max pyramid), or built from the first batch when this process
//! creates it, and kept in step with every batch written here. Another console
//! process writing to the same database bumps the series' `revision`, which a
//! query checks before trusting its copy.

pub mod cache;
pub mod series;

use app::error::AppError;
use std::collections::HashMap;

use app::models::{
    Account, AppendSummary, BoardJob, ChartPoint, ChartRange, MetricPoint, RangeQuery,
    SeriesEnvelope, TagSummary,
};
use app::ports::{Metrics, MetricsEvent};
use async_trait::async_trait;
use futures_util::future::try_join_all;
use tokio::sync::broadcast;

use crate::storage::db::Pool;
use crate::storage::jobs::JobStore;
use crate::storage::metrics::{batch, Head, PointStore};
pub use series::Series;

/// Metrics in the console's database, charts from memory.
pub struct SqlMetrics {
    store: PointStore,
    jobs: JobStore,
    cache: cache::SeriesCache,
    events: broadcast::Sender<MetricsEvent>,
}

impl SqlMetrics {
    /// Wraps a migrated pool; `cache_points` bounds the points kept in memory.
    pub fn new(pool: Pool, cache_points: usize) -> Self {
        let (events, _) = broadcast::channel(1024);
        Self {
            store: PointStore::new(pool.clone()),
            jobs: JobStore::new(pool),
            cache: cache::SeriesCache::new(cache_points),
            events,
        }
    }

    /// Moves points stored a row per point (before blocks) into blocks;
    /// returns how many moved.
    pub async fn convert_row_points(&self) -> Result<u64, AppError> {
        self.store.convert_row_points().await
    }

    /// The series of a job's tag, loaded (or checked) in the cache.
    async fn series(
        &self,
        account: &Account,
        job: &str,
        tag: &str,
    ) -> Result<std::sync::Arc<cache::Cached>, AppError> {
        // One query on the way to every chart; which part is missing is
        // only worked out when something is.
        let head = match self.store.head_of(account.id, job, tag).await? {
            Some(head) => head,
            None => {
                self.jobs.id_of(account.id, job).await?;
                return Err(AppError::not_found(format!("Tag “{tag}” of job “{job}”")));
            }
        };
        self.cache.get_or_load(head, &self.store).await
    }
}

/// The envelope as the API sends it.
fn to_model(e: series::Envelope) -> SeriesEnvelope {
    SeriesEnvelope {
        points: e
            .points
            .into_iter()
            .map(|p| ChartPoint {
                step: p.step,
                wall_time: p.wall_time,
                value: p.value,
            })
            .collect(),
        min: e.min,
        max: e.max,
        total: e.total as u64,
        nan: e.nan as u64,
        pos_inf: e.pos_inf as u64,
        neg_inf: e.neg_inf as u64,
        full_resolution: e.full_resolution,
        origin: None,
    }
}

/// `cached`'s series over `range`; the whole of it comes from the kept
/// envelope (see [`cache`]) when it is there.
async fn drawn(cached: &cache::Cached, range: ChartRange) -> SeriesEnvelope {
    if let ChartRange::Steps(RangeQuery {
        from: None,
        to: None,
        width,
    }) = range
    {
        let whole = cached.whole(width, |series| at(series, range)).await;
        return (*whole).clone();
    }
    at(&*cached.read().await, range)
}

/// `series` over `range`, with the series' first wall time as its origin.
fn at(series: &Series, range: ChartRange) -> SeriesEnvelope {
    let origin = series.points(None, None).next().map(|p| p.wall_time);
    let envelope = match range {
        ChartRange::Steps(r) => series.query(r.from, r.to, r.width),
        ChartRange::WallTime { from, to, width } => {
            // Wall times mostly rise with steps but need not (clock
            // changes, restarts): take the steps of every point inside.
            let (mut lo, mut hi) = (i64::MAX, i64::MIN);
            for p in series.points(None, None) {
                if p.wall_time >= from && p.wall_time <= to {
                    lo = lo.min(p.step);
                    hi = hi.max(p.step);
                }
            }
            if lo > hi {
                series.query(Some(1), Some(0), width)
            } else {
                series.query(Some(lo), Some(hi), width)
            }
        }
    };
    let mut model = to_model(envelope);
    model.origin = origin;
    model
}

#[async_trait]
impl Metrics for SqlMetrics {
    async fn append(
        &self,
        account: &Account,
        job: &str,
        points: Vec<MetricPoint>,
    ) -> Result<AppendSummary, AppError> {
        app::models::validate_batch(&points)?;
        let job_id = self.jobs.id_of(account.id, job).await?;
        let now = crate::time::now_ms() as f64 / 1000.0;
        let by_tag = batch::group(points, now);
        let written = self.store.append(job_id, &by_tag).await?;
        let mut summary = AppendSummary {
            tags: written.len(),
            ..Default::default()
        };
        for w in &written {
            summary.accepted += w.inserted;
            summary.replaced += w.deleted;
            self.cache.apply(w).await;
        }
        let _ = self.events.send(MetricsEvent {
            account_id: account.id,
            job: job.to_owned(),
        });
        Ok(summary)
    }

    async fn tags(&self, account: &Account, job: &str) -> Result<Vec<TagSummary>, AppError> {
        let job_id = self.jobs.id_of(account.id, job).await?;
        self.store.tags(job_id).await
    }

    async fn envelope(
        &self,
        account: &Account,
        job: &str,
        tag: &str,
        range: ChartRange,
    ) -> Result<SeriesEnvelope, AppError> {
        let cached = self.series(account, job, tag).await?;
        Ok(drawn(&cached, range).await)
    }

    async fn tags_of(
        &self,
        account: &Account,
        jobs: &[String],
    ) -> Result<Vec<Vec<TagSummary>>, AppError> {
        let mut by_job: HashMap<String, Vec<TagSummary>> = HashMap::new();
        for (job, tag) in self.store.tags_of_jobs(account.id, jobs).await? {
            by_job.entry(job).or_default().push(tag);
        }
        Ok(jobs
            .iter()
            .map(|job| by_job.get(job).cloned().unwrap_or_default())
            .collect())
    }

    async fn envelopes(
        &self,
        account: &Account,
        jobs: &[String],
        tag: &str,
        range: ChartRange,
    ) -> Result<Vec<SeriesEnvelope>, AppError> {
        // Every series' head in one query; those not in memory load at once.
        let heads: HashMap<String, Head> = self
            .store
            .heads_of_jobs(account.id, jobs, tag)
            .await?
            .into_iter()
            .collect();
        try_join_all(jobs.iter().map(|job| {
            let head = heads.get(job).copied();
            async move {
                let Some(head) = head else {
                    self.jobs.id_of(account.id, job).await?;
                    return Err(AppError::not_found(format!("Tag “{tag}” of job “{job}”")));
                };
                let cached = self.cache.get_or_load(head, &self.store).await?;
                Ok(drawn(&cached, range).await)
            }
        }))
        .await
    }

    async fn jobs(&self, account: &Account) -> Result<Vec<BoardJob>, AppError> {
        self.store.jobs(account.id).await
    }

    async fn points(
        &self,
        account: &Account,
        job: &str,
        tag: &str,
        from: Option<i64>,
        to: Option<i64>,
    ) -> Result<Vec<ChartPoint>, AppError> {
        let cached = self.series(account, job, tag).await?;
        let series = cached.read().await;
        Ok(series
            .points(from, to)
            .map(|p| ChartPoint {
                step: p.step,
                wall_time: p.wall_time,
                value: p.value,
            })
            .collect())
    }

    fn subscribe(&self) -> broadcast::Receiver<MetricsEvent> {
        self.events.subscribe()
    }
}
