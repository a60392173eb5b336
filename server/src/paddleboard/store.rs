//! SQL for metric series and points.

use app::error::AppError;
use app::models::{BoardJob, TagSummary};
use sqlx::AnyPool;

use super::batch::{Row, TagBatch};
use crate::storage::internal;

/// Rows per INSERT. A tag's points go to the database as one JSON array
/// bound to one parameter and unpacked by the engine (`json_each`,
/// `json_array_elements`): binding four values per row through sqlx costs
/// far more than the insert itself (measured: 19 ms per 1,000-row VALUES
/// statement against 1–2 ms this way).
const ROWS_PER_INSERT: usize = 20_000;

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
    /// Whether the pool is PostgreSQL (else SQLite), learnt on first write.
    postgres: std::sync::Arc<std::sync::OnceLock<bool>>,
}

impl PointStore {
    /// Wraps a migrated pool.
    pub fn new(pool: AnyPool) -> Self {
        Self {
            pool,
            postgres: Default::default(),
        }
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
        let postgres = match self.postgres.get() {
            Some(pg) => *pg,
            None => *self
                .postgres
                .get_or_init(|| tx.backend_name().eq_ignore_ascii_case("postgresql")),
        };
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
                insert_rows(&mut tx, postgres, series_id, chunk).await?;
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

/// `[[step, wall_time, value], …]`, with NaN as `null` (stored as NULL) and
/// infinities as each engine reads them from JSON: SQLite takes `9e999` as
/// infinity, PostgreSQL casts the text `"Infinity"`.
fn rows_json(rows: &[Row], postgres: bool) -> String {
    let mut json = String::with_capacity(rows.len() * 40);
    json.push('[');
    for (i, r) in rows.iter().enumerate() {
        if i > 0 {
            json.push(',');
        }
        let value = match r.value {
            v if v.is_nan() => "null".to_owned(),
            v if v.is_infinite() => match (postgres, v > 0.0) {
                (true, true) => "\"Infinity\"".to_owned(),
                (true, false) => "\"-Infinity\"".to_owned(),
                (false, true) => "9e999".to_owned(),
                (false, false) => "-9e999".to_owned(),
            },
            v => format!("{v:?}"),
        };
        json.push_str(&format!("[{},{:?},{value}]", r.step, r.wall_time));
    }
    json.push(']');
    json
}

async fn insert_rows(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    postgres: bool,
    series_id: i64,
    rows: &[Row],
) -> Result<(), AppError> {
    // A concurrent writer may have stored the same step meanwhile: last wins.
    let sql = if postgres {
        "INSERT INTO metric_points (series_id, step, wall_time, value) \
         SELECT $1, (e->>0)::bigint, (e->>1)::float8, (e->>2)::float8 \
         FROM json_array_elements($2::json) AS e \
         ON CONFLICT (series_id, step) DO UPDATE SET wall_time = excluded.wall_time, \
         value = excluded.value"
    } else {
        // `WHERE true` keeps SQLite from reading ON CONFLICT as a join clause.
        "INSERT INTO metric_points (series_id, step, wall_time, value) \
         SELECT $1, json_extract(value, '$[0]'), json_extract(value, '$[1]'), \
         json_extract(value, '$[2]') FROM json_each($2) WHERE true \
         ON CONFLICT (series_id, step) DO UPDATE SET wall_time = excluded.wall_time, \
         value = excluded.value"
    };
    sqlx::query(sql)
        .bind(series_id)
        .bind(rows_json(rows, postgres))
        .execute(&mut **tx)
        .await
        .map_err(internal("insert metric points"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_travel_to_the_database_as_json_each_engine_reads() {
        let rows = [
            Row {
                step: 1,
                wall_time: 1.5,
                value: f64::NAN,
            },
            Row {
                step: 2,
                wall_time: 2.0,
                value: f64::INFINITY,
            },
            Row {
                step: 3,
                wall_time: 3.0,
                value: -0.25,
            },
        ];
        assert_eq!(
            rows_json(&rows, false),
            "[[1,1.5,null],[2,2.0,9e999],[3,3.0,-0.25]]"
        );
        assert_eq!(rows_json(&rows[1..2], true), "[[2,2.0,\"Infinity\"]]");
    }
}
