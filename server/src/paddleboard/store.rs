//! SQL for metric series and points.

use app::error::AppError;
use app::models::TagSummary;
use sqlx::{AnyPool, AssertSqlSafe};

use super::batch::{Row, TagBatch};
use crate::accounts::internal;

/// Rows per INSERT: 4 bound values each stays far below both engines'
/// limits on bound parameters, and few statements make a batch fast.
const ROWS_PER_INSERT: usize = 1000;

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

    /// A job's series by tag, if it exists.
    pub async fn head(&self, job_id: i64, tag: &str) -> Result<Option<Head>, AppError> {
        let row: Option<(i64, i64, i64)> = sqlx::query_as(
            "SELECT id, revision, points FROM metric_series WHERE job_id = $1 AND tag = $2",
        )
        .bind(job_id)
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
        let rows: Vec<(String, i64, Option<i64>)> = sqlx::query_as(
            "SELECT tag, points, last_step FROM metric_series WHERE job_id = $1 ORDER BY tag",
        )
        .bind(job_id)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("list metric series"))?;
        Ok(rows
            .into_iter()
            .map(|(tag, points, last_step)| TagSummary {
                tag,
                points: u64::try_from(points).unwrap_or(0),
                last_step,
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
        let revision: i64 = sqlx::query_scalar("SELECT revision FROM metric_series WHERE id = $1")
            .bind(series_id)
            .fetch_one(&mut *tx)
            .await
            .map_err(internal("read series revision"))?;
        let rows: Vec<(i64, f64, Option<f64>)> = sqlx::query_as(
            "SELECT step, wall_time, value FROM metric_points WHERE series_id = $1 ORDER BY step",
        )
        .bind(series_id)
        .fetch_all(&mut *tx)
        .await
        .map_err(internal("load series points"))?;
        tx.commit().await.map_err(internal("end load series"))?;
        Ok((
            revision,
            rows.into_iter()
                .map(|(step, wall_time, value)| Row {
                    step,
                    wall_time,
                    value: value.unwrap_or(f64::NAN),
                })
                .collect(),
        ))
    }

    /// Writes a batch in one transaction: per tag, creates the series if
    /// new, removes stored points a repeated step replaces, appends the rest.
    pub async fn append(&self, job_id: i64, batch: &[TagBatch]) -> Result<Vec<Written>, AppError> {
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(internal("begin metrics batch"))?;
        let mut written = Vec::with_capacity(batch.len());
        for tag in batch {
            sqlx::query(
                "INSERT INTO metric_series (job_id, tag) VALUES ($1, $2) \
                 ON CONFLICT (job_id, tag) DO NOTHING",
            )
            .bind(job_id)
            .bind(&tag.tag)
            .execute(&mut *tx)
            .await
            .map_err(internal("create metric series"))?;
            let (series_id, revision, last_step): (i64, i64, Option<i64>) = sqlx::query_as(
                "SELECT id, revision, last_step FROM metric_series WHERE job_id = $1 AND tag = $2",
            )
            .bind(job_id)
            .bind(&tag.tag)
            .fetch_one(&mut *tx)
            .await
            .map_err(internal("read metric series"))?;

            let cut = tag.cut_for(last_step);
            let deleted = match cut {
                Some(step) => {
                    sqlx::query("DELETE FROM metric_points WHERE series_id = $1 AND step >= $2")
                        .bind(series_id)
                        .bind(step)
                        .execute(&mut *tx)
                        .await
                        .map_err(internal("cut metric series"))?
                        .rows_affected() as usize
                }
                None => 0,
            };
            for chunk in tag.rows.chunks(ROWS_PER_INSERT) {
                insert_rows(&mut tx, series_id, chunk).await?;
            }
            let inserted = tag.rows.len();
            let last = tag.rows.last().map(|r| r.step);
            sqlx::query(
                "UPDATE metric_series SET points = points - $1 + $2, last_step = $3, \
                 revision = revision + 1 WHERE id = $4",
            )
            .bind(deleted as i64)
            .bind(inserted as i64)
            .bind(last)
            .bind(series_id)
            .execute(&mut *tx)
            .await
            .map_err(internal("update metric series"))?;
            written.push(Written {
                series_id,
                revision_before: revision,
                revision_after: revision + 1,
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
}

async fn insert_rows(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    series_id: i64,
    rows: &[Row],
) -> Result<(), AppError> {
    let mut sql =
        String::from("INSERT INTO metric_points (series_id, step, wall_time, value) VALUES ");
    for i in 0..rows.len() {
        let n = i * 4;
        if i > 0 {
            sql.push(',');
        }
        sql.push_str(&format!("(${}, ${}, ${}, ${})", n + 1, n + 2, n + 3, n + 4));
    }
    // A concurrent writer may have stored the same step meanwhile: last wins.
    sql.push_str(
        " ON CONFLICT (series_id, step) DO UPDATE SET wall_time = excluded.wall_time, \
         value = excluded.value",
    );
    // Only the number of placeholders varies; every value is bound.
    let mut query = sqlx::query(AssertSqlSafe(sql));
    for row in rows {
        // NaN is stored as NULL: SQLite cannot keep a NaN in a REAL.
        let value = (!row.value.is_nan()).then_some(row.value);
        query = query
            .bind(series_id)
            .bind(row.step)
            .bind(row.wall_time)
            .bind(value);
    }
    query
        .execute(&mut **tx)
        .await
        .map_err(internal("insert metric points"))?;
    Ok(())
}
