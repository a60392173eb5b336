//! Resource samples in the console's database, as a small pyramid: raw
//! samples (kept a day), minute means and hour means (kept for the
//! retention, 30 days by default). A chart reads the coarsest level that
//! still gives it enough points, so a month never scans raw rows.
//!
//! Means are accumulated in memory as samples are written: one executor
//! samples a pod, so one process sees all of a pod's samples, and a
//! minute's row is written when its first sample of the next minute comes.

use std::collections::HashMap;
use std::sync::Mutex;

use app::error::AppError;
use app::models::{downsample, PodSample, PodSeries, PodUsage, ResourceMetric};
use sqlx::{AnyPool, AssertSqlSafe, Row};

use crate::storage::db::WriteTx;
use crate::storage::internal;

/// The levels: resolution in seconds (0 is raw).
const LEVELS: [i64; 3] = [0, 60, 3600];
/// Raw samples are kept this long, seconds.
const RAW_KEEP: f64 = 86_400.0;

/// Sums of one pod's samples within one minute or hour.
#[derive(Default, Clone)]
struct Acc {
    /// Which bucket (start, Unix s).
    start: i64,
    n: f64,
    sum: PodUsage,
    gpu_n: f64,
}

impl Acc {
    fn add(&mut self, u: &PodUsage) {
        self.n += 1.0;
        self.sum.cpu += u.cpu;
        self.sum.memory += u.memory;
        self.sum.net_rx += u.net_rx;
        self.sum.net_tx += u.net_tx;
        self.sum.disk_read += u.disk_read;
        self.sum.disk_write += u.disk_write;
        if let (Some(util), Some(mem)) = (u.gpu_util, u.gpu_memory) {
            self.gpu_n += 1.0;
            self.sum.gpu_util = Some(self.sum.gpu_util.unwrap_or(0.0) + util);
            self.sum.gpu_memory = Some(self.sum.gpu_memory.unwrap_or(0.0) + mem);
        }
    }

    fn mean(&self) -> PodUsage {
        let n = self.n.max(1.0);
        let g = self.gpu_n.max(1.0);
        PodUsage {
            cpu: self.sum.cpu / n,
            memory: self.sum.memory / n,
            gpu_util: self.sum.gpu_util.map(|v| v / g),
            gpu_memory: self.sum.gpu_memory.map(|v| v / g),
            net_rx: self.sum.net_rx / n,
            net_tx: self.sum.net_tx / n,
            disk_read: self.sum.disk_read / n,
            disk_write: self.sum.disk_write / n,
        }
    }
}

/// Samples in and chart series out.
pub struct ResourceStore {
    pool: AnyPool,
    /// Open minute and hour per (job id, pod, level).
    open: Mutex<HashMap<(i64, String, i64), Acc>>,
}

impl ResourceStore {
    /// On a migrated pool.
    pub fn new(pool: AnyPool) -> Self {
        Self {
            pool,
            open: Mutex::new(HashMap::new()),
        }
    }

    /// Stores one tick's samples of a job's pods, and the minute and hour
    /// means they complete.
    pub async fn insert(&self, job_id: i64, samples: &[PodSample]) -> Result<(), AppError> {
        let mut rows: Vec<(String, i64, f64, PodUsage)> = samples
            .iter()
            .map(|s| (s.pod.clone(), 0, s.t, s.usage.clone()))
            .collect();
        {
            let mut open = self.open.lock().expect("resource accumulators");
            for s in samples {
                for res in &LEVELS[1..] {
                    let start = (s.t as i64).div_euclid(*res) * res;
                    let acc = open.entry((job_id, s.pod.clone(), *res)).or_default();
                    if acc.n > 0.0 && acc.start != start {
                        rows.push((s.pod.clone(), *res, acc.start as f64, acc.mean()));
                        *acc = Acc::default();
                    }
                    acc.start = start;
                    acc.add(&s.usage);
                }
            }
        }
        self.write(job_id, &rows).await
    }

    /// Writes the open minute and hour of the job's pods (when the job ends).
    pub async fn flush(&self, job_id: i64) -> Result<(), AppError> {
        let rows: Vec<(String, i64, f64, PodUsage)> = {
            let mut open = self.open.lock().expect("resource accumulators");
            let keys: Vec<_> = open.keys().filter(|k| k.0 == job_id).cloned().collect();
            keys.into_iter()
                .filter_map(|k| {
                    let acc = open.remove(&k)?;
                    Some((k.1, k.2, acc.start as f64, acc.mean()))
                })
                .collect()
        };
        self.write(job_id, &rows).await
    }

    async fn write(
        &self,
        job_id: i64,
        rows: &[(String, i64, f64, PodUsage)],
    ) -> Result<(), AppError> {
        if rows.is_empty() {
            return Ok(());
        }
        let mut tx = self
            .pool
            .begin_write()
            .await
            .map_err(internal("resource samples"))?;
        for (pod, res, t, u) in rows {
            // A rollup written again (a flush, then a late sample) replaces the row.
            sqlx::query(
                "DELETE FROM resource_samples WHERE job_id = $1 AND pod = $2 AND res = $3 AND t = $4",
            )
            .bind(job_id)
            .bind(pod)
            .bind(*res)
            .bind(*t)
            .execute(&mut *tx)
            .await
            .map_err(internal("resource samples"))?;
            sqlx::query(
                "INSERT INTO resource_samples (job_id, pod, res, t, cpu, memory, gpu_util, gpu_memory, \
                 net_rx, net_tx, disk_read, disk_write) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
            )
            .bind(job_id)
            .bind(pod)
            .bind(*res)
            .bind(*t)
            .bind(u.cpu)
            .bind(u.memory)
            .bind(u.gpu_util)
            .bind(u.gpu_memory)
            .bind(u.net_rx)
            .bind(u.net_tx)
            .bind(u.disk_read)
            .bind(u.disk_write)
            .execute(&mut *tx)
            .await
            .map_err(internal("resource samples"))?;
        }
        tx.commit().await.map_err(internal("resource samples"))
    }

    /// Each pod's line of `metric` in `[from, to]`, at most about `points`
    /// points, from the coarsest level fine enough. Pods with no value (no
    /// GPU) have no line.
    pub async fn series(
        &self,
        job_id: i64,
        metric: ResourceMetric,
        from: f64,
        to: f64,
        points: u32,
    ) -> Result<Vec<PodSeries>, AppError> {
        let bucket = (to - from) / f64::from(points.max(1));
        let mut res = LEVELS
            .iter()
            .rev()
            .copied()
            .find(|r| (*r as f64) <= bucket)
            .unwrap_or(0);
        // Raw rows are gone after a day: older ranges come from minutes.
        if res == 0 && from < now_s() - RAW_KEEP {
            res = 60;
        }
        // The column name comes from the enum, never from the request.
        let column = metric.as_str();
        let rows = sqlx::query(AssertSqlSafe(format!(
            "SELECT pod, t, {column} AS v FROM resource_samples \
             WHERE job_id = $1 AND res = $2 AND t >= $3 AND t <= $4 AND {column} IS NOT NULL \
             ORDER BY pod, t"
        )))
        .bind(job_id)
        .bind(res)
        .bind(from - res as f64)
        .bind(to)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("resource series"))?;
        let mut out: Vec<PodSeries> = Vec::new();
        for row in rows {
            let pod: String = row.try_get("pod").map_err(internal("resource series"))?;
            let t: f64 = row.try_get("t").map_err(internal("resource series"))?;
            let v: f64 = row.try_get("v").map_err(internal("resource series"))?;
            match out.last_mut() {
                Some(s) if s.pod == pod => {
                    s.ts.push(t);
                    s.values.push(v);
                }
                _ => out.push(PodSeries {
                    pod,
                    ts: vec![t],
                    values: vec![v],
                }),
            }
        }
        for s in &mut out {
            let (ts, values) = downsample(&s.ts, &s.values, from, to, points);
            s.ts = ts;
            s.values = values;
        }
        Ok(out)
    }

    /// Deletes raw rows older than a day and rollups older than `keep_secs`.
    /// Returns how many rows went.
    pub async fn prune(&self, keep_secs: f64) -> Result<u64, AppError> {
        let now = now_s();
        let raw = sqlx::query("DELETE FROM resource_samples WHERE res = 0 AND t < $1")
            .bind(now - RAW_KEEP.min(keep_secs))
            .execute(&self.pool)
            .await
            .map_err(internal("pruning resource samples"))?;
        let old = sqlx::query("DELETE FROM resource_samples WHERE res > 0 AND t < $1")
            .bind(now - keep_secs)
            .execute(&self.pool)
            .await
            .map_err(internal("pruning resource samples"))?;
        Ok(raw.rows_affected() + old.rows_affected())
    }
}

pub use crate::time::now_s;
