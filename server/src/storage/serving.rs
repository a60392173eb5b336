//! SQL for serving instances and their traffic.

use app::error::AppError;
use app::models::{Account, ServingInstance, ServingSpec, ServingStatus, TrafficPoint, Workload};
use sqlx::any::AnyRow;
use sqlx::{AnyPool, Row};

use crate::storage::internal;
use crate::storage::tokens::{random_token, token_hash};
use crate::time::now_ms;

/// How a serving instance's own token starts (see [`ServingStore::issue_token`]).
pub const SERVING_TOKEN_PREFIX: &str = "pcv_";

/// An instance row with the id the store uses to address it.
#[derive(Debug, Clone)]
pub struct StoredServing {
    /// Database id.
    pub id: i64,
    /// Owning account.
    pub account: Account,
    /// The instance as the API shows it (without traffic).
    pub instance: ServingInstance,
}

/// Serving instances and traffic buckets in the console's database.
#[derive(Clone)]
pub struct ServingStore {
    pub(super) pool: AnyPool,
}

const COLUMNS: &str = "s.id, s.account_id, s.name, s.created_by, s.model, s.version, s.spec, \
     s.status, s.message, s.ready, s.cluster, s.created_at, s.ended_at, a.name, a.namespace, \
     a.created_at";

fn row_to(row: &AnyRow) -> Result<StoredServing, sqlx::Error> {
    let spec: String = row.try_get(6)?;
    let spec: ServingSpec =
        serde_json::from_str(&spec).map_err(|e| sqlx::Error::Decode(e.into()))?;
    let version = u32::try_from(row.try_get::<i64, _>(5)?).unwrap_or(0);
    let status: String = row.try_get(7)?;
    let name: String = row.try_get(2)?;
    let account: String = row.try_get(13)?;
    Ok(StoredServing {
        id: row.try_get(0)?,
        account: Account {
            id: row.try_get(1)?,
            name: account.clone(),
            namespace: row.try_get(14)?,
            created_at: row.try_get(15)?,
        },
        instance: ServingInstance {
            endpoint: endpoint_path(&account, &name),
            name,
            created_by: row.try_get(3)?,
            model: row.try_get(4)?,
            version,
            spec: spec.clone(),
            status: ServingStatus::parse(&status).unwrap_or(ServingStatus::Failed),
            message: row.try_get(8)?,
            ready: u32::try_from(row.try_get::<i64, _>(9)?).unwrap_or(0),
            cluster: row.try_get(10)?,
            created_at: row.try_get(11)?,
            ended_at: row.try_get(12)?,
            recent: None,
            tracks: spec.tracks(version),
        },
    })
}

/// The console's path that balances requests between an instance's replicas.
pub fn endpoint_path(account: &str, name: &str) -> String {
    format!("/serve/{account}/{name}")
}

impl ServingStore {
    /// On a migrated pool.
    pub fn new(pool: AnyPool) -> Self {
        Self { pool }
    }

    /// Records a new instance (Pending); a taken name is a conflict.
    pub async fn insert(
        &self,
        account_id: i64,
        created_by: &str,
        model: &str,
        version: u32,
        spec: &ServingSpec,
        cluster: &str,
    ) -> Result<i64, AppError> {
        let done = sqlx::query_scalar::<_, i64>(
            "INSERT INTO serving (account_id, name, created_by, model, version, spec, status, \
             cluster, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
        )
        .bind(account_id)
        .bind(&spec.name)
        .bind(created_by)
        .bind(model)
        .bind(i64::from(version))
        .bind(spec_json(spec)?)
        .bind(ServingStatus::Pending.as_str())
        .bind(cluster)
        .bind(now_ms())
        .fetch_one(&self.pool)
        .await;
        match done {
            Ok(id) => Ok(id),
            Err(sqlx::Error::Database(db)) if db.is_unique_violation() => {
                Err(Workload::Instance.name_taken(&spec.name))
            }
            Err(err) => Err(internal("insert serving")(err)),
        }
    }

    /// One instance of the account.
    pub async fn get(&self, account_id: i64, name: &str) -> Result<StoredServing, AppError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM serving s JOIN accounts a ON a.id = s.account_id \
             WHERE s.account_id = $1 AND s.name = $2"
        );
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(account_id)
            .bind(name)
            .fetch_optional(&self.pool)
            .await
            .map_err(internal("read serving"))?
            .ok_or_else(|| AppError::not_found(format!("Serving instance “{name}”")))?;
        row_to(&row).map_err(internal("decode serving"))
    }

    /// The account's instances, newest first.
    pub async fn list(&self, account_id: i64) -> Result<Vec<StoredServing>, AppError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM serving s JOIN accounts a ON a.id = s.account_id \
             WHERE s.account_id = $1 ORDER BY s.created_at DESC, s.id DESC"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(account_id)
            .fetch_all(&self.pool)
            .await
            .map_err(internal("list serving"))?;
        rows.iter()
            .map(row_to)
            .collect::<Result<_, _>>()
            .map_err(internal("decode serving"))
    }

    /// Instances still meant to run on `cluster`, of every account (for a
    /// restarted console to bring back).
    pub async fn active_on(&self, cluster: &str) -> Result<Vec<StoredServing>, AppError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM serving s JOIN accounts a ON a.id = s.account_id \
             WHERE s.cluster = $1 AND s.status NOT IN ('failed', 'stopped')"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(cluster)
            .fetch_all(&self.pool)
            .await
            .map_err(internal("list active serving"))?;
        rows.iter()
            .map(row_to)
            .collect::<Result<_, _>>()
            .map_err(internal("decode serving"))
    }

    /// Records what the replicas do now. A stopped or failed instance keeps
    /// its final state: a late report from a replica does not revive it.
    pub async fn set_state(
        &self,
        id: i64,
        status: ServingStatus,
        ready: u32,
        message: &str,
    ) -> Result<(), AppError> {
        let ended = (!status.is_active()).then(now_ms);
        sqlx::query(
            "UPDATE serving SET status = $1, ready = $2, message = $3, \
             ended_at = COALESCE(ended_at, $4) \
             WHERE id = $5 AND status NOT IN ('failed', 'stopped')",
        )
        .bind(status.as_str())
        .bind(i64::from(ready))
        .bind(message)
        .bind(ended)
        .bind(id)
        .execute(&self.pool)
        .await
        .map_err(internal("set serving state"))?;
        Ok(())
    }

    /// A fresh token for instance `id`, replacing any earlier one (only its
    /// hash is kept): what its pods fetch the model with.
    pub async fn issue_token(&self, id: i64) -> Result<String, AppError> {
        let token = format!("{SERVING_TOKEN_PREFIX}{}", random_token());
        sqlx::query("UPDATE serving SET token_hash = $1 WHERE id = $2")
            .bind(token_hash(&token))
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(internal("issue a serving token"))?;
        Ok(token)
    }

    /// Whether `token` is instance `id`'s token on record.
    pub async fn token_is(&self, id: i64, token: &str) -> Result<bool, AppError> {
        let found: Option<(i64,)> =
            sqlx::query_as("SELECT id FROM serving WHERE id = $1 AND token_hash = $2")
                .bind(id)
                .bind(token_hash(token))
                .fetch_optional(&self.pool)
                .await
                .map_err(internal("read a serving token"))?;
        Ok(found.is_some())
    }

    /// Saves a scaled spec.
    pub async fn set_spec(&self, id: i64, spec: &ServingSpec) -> Result<(), AppError> {
        sqlx::query("UPDATE serving SET spec = $1 WHERE id = $2")
            .bind(spec_json(spec)?)
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(internal("scale serving"))?;
        Ok(())
    }

    /// Instance `id`'s stored spec, if it is still there.
    pub(super) async fn spec_of(&self, id: i64) -> Result<Option<ServingSpec>, AppError> {
        let spec: Option<(String,)> = sqlx::query_as("SELECT spec FROM serving WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(internal("read serving spec"))?;
        spec.map(|(spec,)| {
            serde_json::from_str(&spec).map_err(|e| {
                tracing::error!(error = %e, "reading a serving spec");
                AppError::Internal
            })
        })
        .transpose()
    }

    /// Sets the number of replicas in a stored spec.
    pub async fn set_replicas(&self, id: i64, replicas: u32) -> Result<(), AppError> {
        let Some(mut spec) = self.spec_of(id).await? else {
            return Ok(());
        };
        if spec.replicas != replicas {
            spec.replicas = replicas;
            self.set_spec(id, &spec).await?;
        }
        Ok(())
    }

    /// Removes the instance with its traffic.
    pub async fn delete(&self, id: i64) -> Result<(), AppError> {
        sqlx::query("DELETE FROM serving_traffic WHERE serving_id = $1")
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(internal("delete serving traffic"))?;
        sqlx::query("DELETE FROM serving WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(internal("delete serving"))?;
        Ok(())
    }

    /// Writes finished traffic buckets.
    pub async fn add_traffic(&self, rows: &[(i64, TrafficPoint)]) -> Result<(), AppError> {
        let rows = rows.iter().map(|(id, p)| (vec![*id], *p));
        self.write_buckets("serving_traffic", &["serving_id"], rows)
            .await
    }

    /// Writes buckets of `table`, each with its `keys`' values.
    pub(super) async fn write_buckets(
        &self,
        table: &str,
        keys: &[&str],
        rows: impl Iterator<Item = (Vec<i64>, TrafficPoint)>,
    ) -> Result<(), AppError> {
        let sql = merge_bucket_sql(table, keys);
        for (values, p) in rows {
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql.clone()));
            for v in values {
                query = query.bind(v);
            }
            let done = query
                .bind(p.t)
                .bind(p.secs)
                .bind(i64::try_from(p.requests).unwrap_or(i64::MAX))
                .bind(i64::try_from(p.errors).unwrap_or(i64::MAX))
                .bind(p.p50_ms)
                .bind(p.p90_ms)
                .bind(p.p99_ms)
                .execute(&self.pool)
                .await;
            match done {
                Ok(_) => {}
                // Deleted while its last bucket was open: nothing to keep.
                Err(sqlx::Error::Database(db)) if db.is_foreign_key_violation() => {}
                Err(err) => return Err(internal("write serving traffic")(err)),
            }
        }
        Ok(())
    }

    /// Buckets of one instance within `[from, to]`, oldest first.
    pub async fn traffic(
        &self,
        id: i64,
        from: f64,
        to: f64,
    ) -> Result<Vec<TrafficPoint>, AppError> {
        let rows: Vec<TrafficRow> = sqlx::query_as(
            "SELECT serving_id, t, secs, requests, errors, p50_ms, p90_ms, p99_ms \
             FROM serving_traffic WHERE serving_id = $1 AND t >= $2 AND t <= $3 ORDER BY t",
        )
        .bind(id)
        .bind(from)
        .bind(to)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("read serving traffic"))?;
        Ok(rows.into_iter().map(|r| point_of(r).1).collect())
    }

    /// Buckets within `[from, to]` of every instance of the account, by
    /// instance id, oldest first.
    pub async fn account_traffic(
        &self,
        account_id: i64,
        from: f64,
        to: f64,
    ) -> Result<std::collections::HashMap<i64, Vec<TrafficPoint>>, AppError> {
        let rows: Vec<TrafficRow> = sqlx::query_as(
            "SELECT t.serving_id, t.t, t.secs, t.requests, t.errors, t.p50_ms, t.p90_ms, t.p99_ms \
             FROM serving_traffic t JOIN serving s ON s.id = t.serving_id \
             WHERE s.account_id = $1 AND t.t >= $2 AND t.t <= $3 ORDER BY t.t",
        )
        .bind(account_id)
        .bind(from)
        .bind(to)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("read serving traffic"))?;
        let mut out: std::collections::HashMap<i64, Vec<TrafficPoint>> = Default::default();
        for row in rows {
            let (id, point) = point_of(row);
            out.entry(id).or_default().push(point);
        }
        Ok(out)
    }

    /// Drops traffic older than `before` (Unix s).
    pub async fn prune_traffic(&self, before: f64) -> Result<u64, AppError> {
        let done = sqlx::query("DELETE FROM serving_traffic WHERE t < $1")
            .bind(before)
            .execute(&self.pool)
            .await
            .map_err(internal("prune serving traffic"))?;
        sqlx::query("DELETE FROM serving_version_traffic WHERE t < $1")
            .bind(before)
            .execute(&self.pool)
            .await
            .map_err(internal("prune serving traffic"))?;
        Ok(done.rows_affected())
    }
}

/// The statement that writes a bucket of `table` keyed by `keys` and `t`,
/// numbered `$1…` in that order and then secs, requests, errors, p50, p90,
/// p99. A bucket written early (a flush) and its later part add up;
/// percentiles of the two parts merge as weighted means, p99 as the worse.
fn merge_bucket_sql(table: &str, keys: &[&str]) -> String {
    let columns = keys.join(", ");
    let n = keys.len();
    let params: Vec<String> = (1..=n + 7).map(|i| format!("${i}")).collect();
    let mean = |c: &str| {
        format!(
            "{c} = ({table}.{c} * {table}.requests + excluded.{c} * excluded.requests) \
             / ({table}.requests + excluded.requests)"
        )
    };
    format!(
        "INSERT INTO {table} ({columns}, t, secs, requests, errors, p50_ms, p90_ms, p99_ms) \
         VALUES ({}) ON CONFLICT ({columns}, t) DO UPDATE SET {}, {}, \
         p99_ms = CASE WHEN excluded.p99_ms > {table}.p99_ms THEN excluded.p99_ms \
         ELSE {table}.p99_ms END, requests = {table}.requests + excluded.requests, \
         errors = {table}.errors + excluded.errors",
        params.join(", "),
        mean("p50_ms"),
        mean("p90_ms"),
    )
}

/// A traffic row: instance id, t, secs, requests, errors, p50, p90, p99.
type TrafficRow = (i64, f64, f64, i64, i64, f64, f64, f64);

fn point_of(
    (id, t, secs, requests, errors, p50_ms, p90_ms, p99_ms): TrafficRow,
) -> (i64, TrafficPoint) {
    (
        id,
        TrafficPoint {
            t,
            secs,
            requests: requests.max(0) as u64,
            errors: errors.max(0) as u64,
            p50_ms,
            p90_ms,
            p99_ms,
        },
    )
}

pub(super) fn spec_json(spec: &ServingSpec) -> Result<String, AppError> {
    serde_json::to_string(spec).map_err(|e| {
        tracing::error!(error = %e, "serialising a serving spec");
        AppError::Internal
    })
}
