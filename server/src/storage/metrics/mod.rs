//! SQL for metric series and points: PaddleBoard's tables. Points are kept
//! in blocks, a row per batch written ([`block`]).

pub mod batch;
pub mod block;

use app::error::AppError;
use app::models::{BoardJob, TagSummary};
use sqlx::{AnyPool, AssertSqlSafe};

use crate::storage::db::WriteTx;
use crate::storage::{internal, numbered_list};
use batch::{Row, TagBatch};

/// Where a series stands in the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// The series' id.
    pub id: i64,
    /// Bumped by every batch written to it.
    pub revision: i64,
    /// How many points it has.
    pub points: i64,
}

/// What one batch did to one series.
#[derive(Debug, Clone)]
pub struct Written {
    /// The series.
    pub series_id: i64,
    /// Its revision before and after.
    pub revision_before: i64,
    /// Its revision now.
    pub revision_after: i64,
    /// Stored points removed (a resumed job repeating steps).
    pub deleted: usize,
    /// Points stored.
    pub inserted: usize,
    /// The points stored, in step order (the cache applies them as they are).
    pub rows: Vec<Row>,
    /// Stored points from this step on were removed first.
    pub cut: Option<i64>,
}

/// A job's name and one of its `metric_series` rows: tag, points, last
/// step, last value.
type JobSeriesRow = (String, String, i64, Option<i64>, Option<f64>);

/// A `metric_series` row as the tag list shows it.
fn summary(
    tag: String,
    points: i64,
    last_step: Option<i64>,
    last_value: Option<f64>,
) -> TagSummary {
    TagSummary {
        tag,
        points: u64::try_from(points).unwrap_or(0),
        // NULL at a last step is NaN (SQLite stores no NaN).
        last_value: last_step.map(|_| last_value.unwrap_or(f64::NAN)),
        last_step,
    }
}

/// The metric tables.
#[derive(Clone)]
pub struct PointStore {
    pool: AnyPool,
}

impl PointStore {
    /// Wraps a migrated pool.
    pub fn new(pool: AnyPool) -> Self {
        Self { pool }
    }

    /// The series of tag `tag` of the account's job `job`, if both exist.
    pub async fn head_of(
        &self,
        account_id: i64,
        job: &str,
        tag: &str,
    ) -> Result<Option<Head>, AppError> {
        let row: Option<(i64, i64, i64)> = sqlx::query_as(
            "SELECT s.id, s.revision, s.points FROM metric_series s \
             JOIN jobs j ON j.id = s.job_id \
             WHERE j.account_id = $1 AND j.name = $2 AND s.tag = $3",
        )
        .bind(account_id)
        .bind(job)
        .bind(tag)
        .fetch_optional(&self.pool)
        .await
        .map_err(internal("look up metric series"))?;
        Ok(row.map(|(id, revision, points)| Head {
            id,
            revision,
            points,
        }))
    }

    /// The series of tag `tag` of each of the account's `jobs` that has
    /// one, with its job's name, in one query (a comparison of a hundred
    /// runs asks for a hundred).
    pub async fn heads_of_jobs(
        &self,
        account_id: i64,
        jobs: &[String],
        tag: &str,
    ) -> Result<Vec<(String, Head)>, AppError> {
        if jobs.is_empty() {
            return Ok(Vec::new());
        }
        // Only placeholders are written into the text; the names are bound.
        let sql = format!(
            "SELECT j.name, s.id, s.revision, s.points FROM metric_series s \
             JOIN jobs j ON j.id = s.job_id \
             WHERE j.account_id = $1 AND s.tag = $2 AND j.name IN ({})",
            numbered_list(3, jobs.len())
        );
        let mut query = sqlx::query_as(AssertSqlSafe(sql))
            .bind(account_id)
            .bind(tag);
        for job in jobs {
            query = query.bind(job);
        }
        let rows: Vec<(String, i64, i64, i64)> = query
            .fetch_all(&self.pool)
            .await
            .map_err(internal("look up metric series of jobs"))?;
        Ok(rows
            .into_iter()
            .map(|(job, id, revision, points)| {
                let head = Head {
                    id,
                    revision,
                    points,
                };
                (job, head)
            })
            .collect())
    }

    /// A series' current revision (`None`: it is gone).
    pub async fn revision(&self, series_id: i64) -> Result<Option<i64>, AppError> {
        sqlx::query_scalar("SELECT revision FROM metric_series WHERE id = $1")
            .bind(series_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(internal("read series revision"))
    }

    /// A job's series.
    pub async fn tags(&self, job_id: i64) -> Result<Vec<TagSummary>, AppError> {
        let rows: Vec<(String, i64, Option<i64>, Option<f64>)> = sqlx::query_as(
            "SELECT tag, points, last_step, last_value FROM metric_series WHERE job_id = $1 \
             ORDER BY tag",
        )
        .bind(job_id)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("list metric series"))?;
        Ok(rows
            .into_iter()
            .map(|(tag, points, last_step, last_value)| summary(tag, points, last_step, last_value))
            .collect())
    }

    /// Every series of each of the account's `jobs`, with its job's name,
    /// by job and tag, in one query; a name that is not the account's job
    /// has none.
    pub async fn tags_of_jobs(
        &self,
        account_id: i64,
        jobs: &[String],
    ) -> Result<Vec<(String, TagSummary)>, AppError> {
        if jobs.is_empty() {
            return Ok(Vec::new());
        }
        // Only placeholders are written into the text; the names are bound.
        let sql = format!(
            "SELECT j.name, s.tag, s.points, s.last_step, s.last_value FROM metric_series s \
             JOIN jobs j ON j.id = s.job_id WHERE j.account_id = $1 AND j.name IN ({}) \
             ORDER BY j.name, s.tag",
            numbered_list(2, jobs.len())
        );
        let mut query = sqlx::query_as(AssertSqlSafe(sql)).bind(account_id);
        for job in jobs {
            query = query.bind(job);
        }
        let rows: Vec<JobSeriesRow> = query
            .fetch_all(&self.pool)
            .await
            .map_err(internal("list metric series of jobs"))?;
        Ok(rows
            .into_iter()
            .map(|(job, tag, points, last_step, last_value)| {
                (job, summary(tag, points, last_step, last_value))
            })
            .collect())
    }

    /// The account's jobs with metrics, newest first.
    pub async fn jobs(&self, account_id: i64) -> Result<Vec<BoardJob>, AppError> {
        let rows: Vec<(String, String, i64, i64)> = sqlx::query_as(
            "SELECT j.name, j.status, j.created_at, COUNT(s.id) FROM jobs j \
             JOIN metric_series s ON s.job_id = j.id WHERE j.account_id = $1 \
             GROUP BY j.id, j.name, j.status, j.created_at ORDER BY j.created_at DESC, j.id DESC \
             LIMIT 200",
        )
        .bind(account_id)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("list jobs with metrics"))?;
        Ok(rows
            .into_iter()
            .map(|(name, status, created_at, tags)| BoardJob {
                name,
                status,
                created_at,
                tags: u32::try_from(tags).unwrap_or(u32::MAX),
            })
            .collect())
    }

    /// Every point of a series, by step, with the revision they are from.
    pub async fn load(&self, series_id: i64) -> Result<(i64, Vec<Row>), AppError> {
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(internal("begin load series"))?;
        let (revision, points): (i64, i64) =
            sqlx::query_as("SELECT revision, points FROM metric_series WHERE id = $1")
                .bind(series_id)
                .fetch_one(&mut *tx)
                .await
                .map_err(internal("read series revision"))?;
        let blocks: Vec<Vec<u8>> = sqlx::query_scalar(
            "SELECT data FROM metric_blocks WHERE series_id = $1 ORDER BY first_step",
        )
        .bind(series_id)
        .fetch_all(&mut *tx)
        .await
        .map_err(internal("load series blocks"))?;
        tx.commit().await.map_err(internal("end load series"))?;
        let mut rows = Vec::with_capacity(usize::try_from(points).unwrap_or(0));
        for data in &blocks {
            block::decode_into(data, &mut rows).map_err(unreadable)?;
        }
        Ok((revision, rows))
    }

    /// Writes a batch in one transaction: per tag, creates the series if
    /// new, removes stored points a repeated step replaces, appends the rest.
    pub async fn append(&self, job_id: i64, batch: &[TagBatch]) -> Result<Vec<Written>, AppError> {
        let mut tx = self
            .pool
            .begin_write()
            .await
            .map_err(internal("begin metrics batch"))?;
        let mut written = Vec::with_capacity(batch.len());
        for tag in batch {
            // Bumping the revision first takes the series' row lock, so a
            // concurrent writer of the same series (another replica) reads
            // `last_step` only once this one is done: blocks never overlap.
            let (series_id, revision, last_step): (i64, i64, Option<i64>) = sqlx::query_as(
                "INSERT INTO metric_series (job_id, tag, revision) VALUES ($1, $2, 1) \
                 ON CONFLICT (job_id, tag) DO UPDATE SET revision = metric_series.revision + 1 \
                 RETURNING id, revision, last_step",
            )
            .bind(job_id)
            .bind(&tag.tag)
            .fetch_one(&mut *tx)
            .await
            .map_err(internal("open metric series"))?;

            let cut = tag.cut_for(last_step);
            let deleted = match cut {
                Some(step) => cut_blocks(&mut tx, series_id, step).await?,
                None => 0,
            };
            append_blocks(&mut tx, series_id, &tag.rows).await?;
            let inserted = tag.rows.len();
            let last = tag.rows.last();
            // The alert controller reads when points last came (the
            // console's clock: a writer's wall_time may be old) and the
            // newest non-finite step, wherever it sat in the batch.
            let bad_step = tag.rows.iter().rev().find(|r| !r.value.is_finite());
            sqlx::query(
                "UPDATE metric_series SET points = points - $1 + $2, last_step = $3, \
                 last_value = $4, updated_at = $6, bad_step = COALESCE($7, bad_step) \
                 WHERE id = $5",
            )
            .bind(deleted as i64)
            .bind(inserted as i64)
            .bind(last.map(|r| r.step))
            .bind(last.map(|r| r.value).filter(|v| !v.is_nan()))
            .bind(series_id)
            .bind(crate::time::now_ms())
            .bind(bad_step.map(|r| r.step))
            .execute(&mut *tx)
            .await
            .map_err(internal("update metric series"))?;
            written.push(Written {
                series_id,
                revision_before: revision - 1,
                revision_after: revision,
                deleted,
                inserted,
                rows: tag.rows.clone(),
                cut,
            });
        }
        tx.commit()
            .await
            .map_err(internal("commit metrics batch"))?;
        Ok(written)
    }

    /// Moves the points of the old one-row-per-point table into blocks, a
    /// series per transaction, so a console upgraded in place keeps every
    /// point. Returns how many points moved; nothing to do is one query.
    pub async fn convert_row_points(&self) -> Result<u64, AppError> {
        let mut moved = 0;
        loop {
            let next: Option<i64> =
                sqlx::query_scalar("SELECT series_id FROM metric_points LIMIT 1")
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(internal("find row points"))?;
            let Some(series_id) = next else {
                return Ok(moved);
            };
            let mut tx = self
                .pool
                .begin_write()
                .await
                .map_err(internal("begin converting points"))?;
            let rows: Vec<(i64, f64, Option<f64>)> = sqlx::query_as(
                "SELECT step, wall_time, value FROM metric_points WHERE series_id = $1 \
                 ORDER BY step",
            )
            .bind(series_id)
            .fetch_all(&mut *tx)
            .await
            .map_err(internal("read row points"))?;
            let rows: Vec<Row> = rows
                .into_iter()
                .map(|(step, wall_time, value)| Row {
                    step,
                    wall_time,
                    value: value.unwrap_or(f64::NAN),
                })
                .collect();
            sqlx::query("DELETE FROM metric_blocks WHERE series_id = $1")
                .bind(series_id)
                .execute(&mut *tx)
                .await
                .map_err(internal("clear converted blocks"))?;
            append_blocks(&mut tx, series_id, &rows).await?;
            let last = rows.last();
            sqlx::query("UPDATE metric_series SET last_step = $1, last_value = $2 WHERE id = $3")
                .bind(last.map(|r| r.step))
                .bind(last.map(|r| r.value).filter(|v| !v.is_nan()))
                .bind(series_id)
                .execute(&mut *tx)
                .await
                .map_err(internal("update converted series"))?;
            sqlx::query("DELETE FROM metric_points WHERE series_id = $1")
                .bind(series_id)
                .execute(&mut *tx)
                .await
                .map_err(internal("remove row points"))?;
            tx.commit()
                .await
                .map_err(internal("commit converted points"))?;
            moved += rows.len() as u64;
        }
    }
}

/// Points per stored block: a bigger batch is stored as several.
const BLOCK_POINTS: usize = 16_384;
/// A last block smaller than this takes a small batch into itself, so a job
/// logging a point a call does not leave a block per point behind.
const SMALL_BLOCK: usize = 1_024;

/// A block the database holds but this code cannot read.
fn unreadable(err: block::BadBlock) -> AppError {
    tracing::error!(error = %err, "read metric block");
    AppError::Internal
}

type Tx<'a> = sqlx::Transaction<'a, sqlx::Any>;

/// Removes a series' points from `step` on; returns how many went.
async fn cut_blocks(tx: &mut Tx<'_>, series_id: i64, step: i64) -> Result<usize, AppError> {
    let gone: Vec<i64> = sqlx::query_scalar(
        "DELETE FROM metric_blocks WHERE series_id = $1 AND first_step >= $2 RETURNING points",
    )
    .bind(series_id)
    .bind(step)
    .fetch_all(&mut **tx)
    .await
    .map_err(internal("cut metric blocks"))?;
    let mut deleted: usize = gone.iter().map(|n| usize::try_from(*n).unwrap_or(0)).sum();
    // At most one block can straddle the cut: blocks never overlap.
    let straddling: Option<(i64, Vec<u8>)> = sqlx::query_as(
        "SELECT first_step, data FROM metric_blocks WHERE series_id = $1 AND last_step >= $2",
    )
    .bind(series_id)
    .bind(step)
    .fetch_optional(&mut **tx)
    .await
    .map_err(internal("read the cut block"))?;
    if let Some((first_step, data)) = straddling {
        let mut rows = block::decode(&data).map_err(unreadable)?;
        let keep = rows.partition_point(|r| r.step < step);
        deleted += rows.len() - keep;
        rows.truncate(keep);
        rewrite_block(tx, series_id, first_step, &rows).await?;
    }
    Ok(deleted)
}

/// Appends `rows` (all after the series' stored steps) as new blocks, or
/// into the last block while that one is small.
async fn append_blocks(tx: &mut Tx<'_>, series_id: i64, rows: &[Row]) -> Result<(), AppError> {
    if rows.is_empty() {
        return Ok(());
    }
    if rows.len() < SMALL_BLOCK {
        let last: Option<(i64, i64, Vec<u8>)> = sqlx::query_as(
            "SELECT first_step, points, data FROM metric_blocks WHERE series_id = $1 \
             ORDER BY first_step DESC LIMIT 1",
        )
        .bind(series_id)
        .fetch_optional(&mut **tx)
        .await
        .map_err(internal("read the last metric block"))?;
        if let Some((first_step, points, data)) = last {
            if points < SMALL_BLOCK as i64 {
                let mut merged = block::decode(&data).map_err(unreadable)?;
                merged.extend_from_slice(rows);
                return rewrite_block(tx, series_id, first_step, &merged).await;
            }
        }
    }
    for chunk in rows.chunks(BLOCK_POINTS) {
        sqlx::query(
            "INSERT INTO metric_blocks (series_id, first_step, last_step, points, data) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(series_id)
        .bind(chunk[0].step)
        .bind(chunk[chunk.len() - 1].step)
        .bind(chunk.len() as i64)
        .bind(block::encode(chunk))
        .execute(&mut **tx)
        .await
        .map_err(internal("insert metric block"))?;
    }
    Ok(())
}

/// Replaces the block starting at `first_step` with `rows` (never empty:
/// they start at `first_step`).
async fn rewrite_block(
    tx: &mut Tx<'_>,
    series_id: i64,
    first_step: i64,
    rows: &[Row],
) -> Result<(), AppError> {
    let last_step = rows.last().map_or(first_step, |r| r.step);
    sqlx::query(
        "UPDATE metric_blocks SET last_step = $1, points = $2, data = $3 \
         WHERE series_id = $4 AND first_step = $5",
    )
    .bind(last_step)
    .bind(rows.len() as i64)
    .bind(block::encode(rows))
    .bind(series_id)
    .bind(first_step)
    .execute(&mut **tx)
    .await
    .map_err(internal("rewrite metric block"))?;
    Ok(())
}
