//! SQL for what an instance's versions do: the version its main replicas
//! serve, calls counted by version, and the calls mirrored to a shadow.

use app::error::AppError;
use app::models::{ShadowCall, TrafficPoint, VersionTraffic, SHADOW_CALLS_KEPT};

use super::internal;
use super::serving::{spec_json, ServingStore};

/// A traffic bucket of one version: instance id, version, whether shadow
/// copies, and the bucket.
pub type VersionBucket = (i64, u32, bool, TrafficPoint);

/// A version traffic row: version, shadow, t, secs, requests, errors, p50,
/// p90, p99.
type VersionRow = (i64, i64, f64, f64, i64, i64, f64, f64, f64);

/// A shadow call row, in [`ShadowCall`]'s order.
type ShadowRow = (
    i64,
    i64,
    String,
    i64,
    i64,
    f64,
    f64,
    i64,
    String,
    String,
    String,
);

impl ServingStore {
    /// Records that the instance's main replicas serve `version` now: the
    /// column the table shows and the pinned version in its spec.
    pub async fn set_version(&self, id: i64, version: u32) -> Result<(), AppError> {
        let Some(mut spec) = self.spec_of(id).await? else {
            return Ok(());
        };
        spec.version = Some(version);
        sqlx::query("UPDATE serving SET version = $1, spec = $2 WHERE id = $3")
            .bind(i64::from(version))
            .bind(spec_json(&spec)?)
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(internal("set a serving version"))?;
        Ok(())
    }

    /// Writes finished buckets of calls by version.
    pub async fn add_version_traffic(&self, rows: &[VersionBucket]) -> Result<(), AppError> {
        let rows = rows
            .iter()
            .map(|(id, v, shadow, p)| (vec![*id, i64::from(*v), i64::from(*shadow)], *p));
        let keys = ["serving_id", "version", "shadow"];
        self.write_buckets("serving_version_traffic", &keys, rows)
            .await
    }

    /// Calls of instance `id` within `[from, to]` by version (main and
    /// canary first by version, then shadow copies), oldest bucket first.
    pub async fn version_traffic(
        &self,
        id: i64,
        from: f64,
        to: f64,
    ) -> Result<Vec<VersionTraffic>, AppError> {
        let rows: Vec<VersionRow> = sqlx::query_as(
            "SELECT version, shadow, t, secs, requests, errors, p50_ms, p90_ms, p99_ms \
             FROM serving_version_traffic WHERE serving_id = $1 AND t >= $2 AND t <= $3 \
             ORDER BY shadow, version, t",
        )
        .bind(id)
        .bind(from)
        .bind(to)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("read serving version traffic"))?;
        let mut out: Vec<VersionTraffic> = Vec::new();
        for (version, shadow, t, secs, requests, errors, p50_ms, p90_ms, p99_ms) in rows {
            let (version, shadow) = (u32::try_from(version).unwrap_or(0), shadow != 0);
            let point = TrafficPoint {
                t,
                secs,
                requests: requests.max(0) as u64,
                errors: errors.max(0) as u64,
                p50_ms,
                p90_ms,
                p99_ms,
            };
            match out.last_mut() {
                Some(v) if v.version == version && v.shadow == shadow => v.points.push(point),
                _ => out.push(VersionTraffic {
                    version,
                    shadow,
                    points: vec![point],
                }),
            }
        }
        Ok(out)
    }

    /// Keeps one call mirrored to instance `id`'s shadow, and only the
    /// newest [`SHADOW_CALLS_KEPT`] of them.
    pub async fn add_shadow_call(&self, id: i64, call: &ShadowCall) -> Result<(), AppError> {
        let done = sqlx::query(
            "INSERT INTO serving_shadow_calls (serving_id, at, version, path, primary_status, \
             shadow_status, primary_ms, shadow_ms, agrees, request, primary_answer, \
             shadow_answer) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
        )
        .bind(id)
        .bind(call.at)
        .bind(i64::from(call.version))
        .bind(&call.path)
        .bind(i64::from(call.primary_status))
        .bind(i64::from(call.shadow_status))
        .bind(call.primary_ms)
        .bind(call.shadow_ms)
        .bind(i64::from(call.agrees))
        .bind(&call.request)
        .bind(&call.primary)
        .bind(&call.shadow)
        .execute(&self.pool)
        .await;
        match done {
            Ok(_) => {}
            Err(sqlx::Error::Database(db)) if db.is_foreign_key_violation() => return Ok(()),
            Err(err) => return Err(internal("record a shadow call")(err)),
        }
        sqlx::query(
            "DELETE FROM serving_shadow_calls WHERE serving_id = $1 AND id <= \
             (SELECT id FROM serving_shadow_calls WHERE serving_id = $1 \
              ORDER BY id DESC LIMIT 1 OFFSET $2)",
        )
        .bind(id)
        .bind(SHADOW_CALLS_KEPT as i64)
        .execute(&self.pool)
        .await
        .map_err(internal("prune shadow calls"))?;
        Ok(())
    }

    /// The newest `limit` calls mirrored to instance `id`'s shadow, newest
    /// first.
    pub async fn shadow_calls(&self, id: i64, limit: usize) -> Result<Vec<ShadowCall>, AppError> {
        let rows: Vec<ShadowRow> = sqlx::query_as(
            "SELECT at, version, path, primary_status, shadow_status, primary_ms, shadow_ms, \
             agrees, request, primary_answer, shadow_answer FROM serving_shadow_calls \
             WHERE serving_id = $1 ORDER BY id DESC LIMIT $2",
        )
        .bind(id)
        .bind(limit as i64)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("read shadow calls"))?;
        Ok(rows
            .into_iter()
            .map(
                |(
                    at,
                    version,
                    path,
                    ps,
                    ss,
                    primary_ms,
                    shadow_ms,
                    agrees,
                    request,
                    primary,
                    shadow,
                )| {
                    ShadowCall {
                        at,
                        version: u32::try_from(version).unwrap_or(0),
                        path,
                        primary_status: u16::try_from(ps).unwrap_or(0),
                        shadow_status: u16::try_from(ss).unwrap_or(0),
                        primary_ms,
                        shadow_ms,
                        agrees: agrees != 0,
                        request,
                        primary,
                        shadow,
                    }
                },
            )
            .collect())
    }
}
