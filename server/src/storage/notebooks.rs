//! SQL for notebooks: the record, its state, its key and its idle clock.

use app::error::AppError;
use app::models::{Account, Notebook, NotebookSpec, NotebookStatus, Workload};
use sqlx::AnyPool;

use crate::storage::internal;
use crate::storage::tokens::{random_token, token_hash};
use crate::time::now_ms;

/// How a notebook's own key starts (`PADDLECLOUD_KEY` in its kernels).
pub const NOTEBOOK_KEY_PREFIX: &str = "pcn_";

/// A notebook row with what the service needs beside what the table shows.
#[derive(Debug, Clone)]
pub struct StoredNotebook {
    /// Database id.
    pub id: i64,
    /// Owning account.
    pub account: Account,
    /// The owner's user id.
    pub user_id: i64,
    /// What its server's requests carry (`Authorization: token …`).
    pub jupyter_token: String,
    /// The notebook as the API shows it.
    pub notebook: Notebook,
}

/// The columns [`NotebookRow`] reads, in one place.
const COLUMNS: &str = "n.id, n.account_id, n.user_id, n.name, n.spec, n.status, n.message, \
     n.cluster, n.jupyter_token, n.created_at, n.started_at, n.last_activity, n.probe_error, \
     u.email, a.name AS account_name, a.namespace, a.created_at AS account_created_at";

/// One row of [`COLUMNS`].
#[derive(sqlx::FromRow)]
struct NotebookRow {
    id: i64,
    account_id: i64,
    user_id: i64,
    name: String,
    spec: String,
    status: String,
    message: String,
    cluster: String,
    jupyter_token: String,
    created_at: i64,
    started_at: Option<i64>,
    last_activity: Option<i64>,
    probe_error: String,
    email: String,
    account_name: String,
    namespace: String,
    account_created_at: i64,
}

impl NotebookRow {
    fn into_stored(self, default_idle: Option<u32>) -> Result<StoredNotebook, AppError> {
        let spec: NotebookSpec = serde_json::from_str(&self.spec).map_err(|err| {
            tracing::error!(error = %err, notebook = %self.name, "decoding a notebook's spec");
            AppError::Internal
        })?;
        let status = NotebookStatus::parse(&self.status).unwrap_or(NotebookStatus::Failed);
        let idle = spec.idle_minutes.or(default_idle);
        let stops_at = match (status, idle) {
            (NotebookStatus::Running, Some(minutes)) => self
                .last_activity
                .or(self.started_at)
                .map(|t| t + i64::from(minutes) * 60_000),
            _ => None,
        };
        Ok(StoredNotebook {
            id: self.id,
            user_id: self.user_id,
            jupyter_token: self.jupyter_token,
            account: Account {
                id: self.account_id,
                name: self.account_name.clone(),
                namespace: self.namespace,
                created_at: self.account_created_at,
            },
            notebook: Notebook {
                name: self.name,
                owner: self.email,
                spec,
                status,
                message: self.message,
                cluster: self.cluster,
                created_at: self.created_at,
                started_at: self.started_at,
                last_activity: self.last_activity,
                stops_at,
                probe_error: self.probe_error,
                account: self.account_name,
            },
        })
    }
}

/// Which notebooks a query reads.
enum Filter<'a> {
    /// One of an account's, by name.
    Named(i64, &'a str),
    /// Every one of an account's.
    Account(i64),
    /// Those that should run on a cluster.
    ActiveOn(&'a str),
}

/// The first parameter of a [`Filter`]'s query.
enum Bound<'a> {
    Int(i64),
    Text(&'a str),
}

/// Notebooks in the console's database.
#[derive(Clone)]
pub struct NotebookStore {
    pub(super) pool: AnyPool,
    /// The site's idle timeout for notebooks that set none.
    default_idle: Option<u32>,
}

impl NotebookStore {
    /// On a migrated pool; `default_idle` minutes apply to notebooks that
    /// set no idle timeout of their own.
    pub fn new(pool: AnyPool, default_idle: Option<u32>) -> Self {
        Self { pool, default_idle }
    }

    async fn select(&self, filter: Filter<'_>) -> Result<Vec<StoredNotebook>, AppError> {
        let (condition, first, second) = match filter {
            Filter::Named(account_id, name) => (
                "n.account_id = $1 AND n.name = $2",
                Bound::Int(account_id),
                Some(name),
            ),
            Filter::Account(account_id) => ("n.account_id = $1", Bound::Int(account_id), None),
            Filter::ActiveOn(cluster) => (
                "n.cluster = $1 AND n.status IN ('pending', 'running')",
                Bound::Text(cluster),
                None,
            ),
        };
        let sql = format!(
            "SELECT {COLUMNS} FROM notebooks n JOIN accounts a ON a.id = n.account_id \
             JOIN users u ON u.id = n.user_id WHERE {condition} \
             ORDER BY n.created_at DESC, n.id DESC"
        );
        let query = sqlx::query_as::<_, NotebookRow>(sqlx::AssertSqlSafe(sql));
        let query = match first {
            Bound::Int(v) => query.bind(v),
            Bound::Text(v) => query.bind(v.to_owned()),
        };
        let query = match second {
            Some(v) => query.bind(v.to_owned()),
            None => query,
        };
        let rows = query
            .fetch_all(&self.pool)
            .await
            .map_err(internal("read notebooks"))?;
        rows.into_iter()
            .map(|r| r.into_stored(self.default_idle))
            .collect()
    }

    /// Records a new notebook (Pending); a taken name is a conflict.
    pub async fn insert(
        &self,
        account_id: i64,
        user_id: i64,
        spec: &NotebookSpec,
        cluster: &str,
    ) -> Result<i64, AppError> {
        let spec_json = serde_json::to_string(spec).map_err(|_| AppError::Internal)?;
        let done = sqlx::query_scalar::<_, i64>(
            "INSERT INTO notebooks (account_id, user_id, name, spec, status, cluster, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
        )
        .bind(account_id)
        .bind(user_id)
        .bind(&spec.name)
        .bind(spec_json)
        .bind(NotebookStatus::Stopped.as_str())
        .bind(cluster)
        .bind(now_ms())
        .fetch_one(&self.pool)
        .await;
        match done {
            Ok(id) => Ok(id),
            Err(sqlx::Error::Database(db)) if db.is_unique_violation() => {
                Err(Workload::Notebook.name_taken(&spec.name))
            }
            Err(err) => Err(internal("insert notebook")(err)),
        }
    }

    /// One notebook of the account.
    pub async fn get(&self, account_id: i64, name: &str) -> Result<StoredNotebook, AppError> {
        self.select(Filter::Named(account_id, name))
            .await?
            .pop()
            .ok_or_else(|| AppError::not_found(format!("Notebook “{name}”")))
    }

    /// The account's notebooks, newest first.
    pub async fn list(&self, account_id: i64) -> Result<Vec<StoredNotebook>, AppError> {
        self.select(Filter::Account(account_id)).await
    }

    /// Notebooks whose server should run (pending or running) on `cluster`.
    pub async fn active_on(&self, cluster: &str) -> Result<Vec<StoredNotebook>, AppError> {
        self.select(Filter::ActiveOn(cluster)).await
    }

    /// Marks notebook `id` Pending for a new start: a new Jupyter token and
    /// key (returned: the key, once), the idle clock and probe error
    /// cleared.
    pub async fn begin_start(&self, id: i64) -> Result<(String, String), AppError> {
        let key = format!("{NOTEBOOK_KEY_PREFIX}{}", random_token());
        let jupyter_token = random_token();
        sqlx::query(
            "UPDATE notebooks SET status = $1, message = '', key_hash = $2, jupyter_token = $3, \
             started_at = $4, last_activity = NULL, probe_error = '' WHERE id = $5",
        )
        .bind(NotebookStatus::Pending.as_str())
        .bind(token_hash(&key))
        .bind(&jupyter_token)
        .bind(now_ms())
        .bind(id)
        .execute(&self.pool)
        .await
        .map_err(internal("start a notebook"))?;
        // A run left open by a server that went away with a console ends now.
        self.close_runs(id).await?;
        Ok((key, jupyter_token))
    }

    /// Saves its state. A notebook that ends (stopped, failed) loses its
    /// key and Jupyter token at once; one that runs starts a run (what
    /// CPU/GPU hours count), one that ends closes it.
    pub async fn set_state(
        &self,
        id: i64,
        status: NotebookStatus,
        message: &str,
    ) -> Result<(), AppError> {
        let sql = if status.is_active() {
            "UPDATE notebooks SET status = $1, message = $2 WHERE id = $3"
        } else {
            "UPDATE notebooks SET status = $1, message = $2, key_hash = NULL, jupyter_token = '' \
             WHERE id = $3"
        };
        sqlx::query(sql)
            .bind(status.as_str())
            .bind(message)
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(internal("record a notebook's state"))?;
        match status {
            NotebookStatus::Running => self.open_run(id).await,
            NotebookStatus::Pending => Ok(()),
            NotebookStatus::Stopped | NotebookStatus::Failed => self.close_runs(id).await,
        }
    }

    /// Records that notebook `id`'s server runs from now, holding what its
    /// spec asks, unless a run is open already.
    async fn open_run(&self, id: i64) -> Result<(), AppError> {
        let row: Option<(String, i64, i64)> = sqlx::query_as(
            "SELECT spec, account_id, user_id FROM notebooks WHERE id = $1 AND NOT EXISTS \
             (SELECT 1 FROM notebook_runs r WHERE r.notebook_id = $1 AND r.ended_at IS NULL)",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(internal("read a notebook for its run"))?;
        let Some((spec, account_id, user_id)) = row else {
            return Ok(());
        };
        let totals = serde_json::from_str::<NotebookSpec>(&spec)
            .map_err(|_| AppError::Internal)
            .and_then(|s| s.totals())?;
        let signed = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        sqlx::query(
            "INSERT INTO notebook_runs (notebook_id, account_id, user_id, cpu_millis, \
             memory_bytes, gpu, started_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(id)
        .bind(account_id)
        .bind(user_id)
        .bind(signed(totals.cpu_millis))
        .bind(signed(totals.memory_bytes))
        .bind(signed(totals.gpu))
        .bind(now_ms())
        .execute(&self.pool)
        .await
        .map_err(internal("record a notebook's run"))?;
        Ok(())
    }

    /// Ends notebook `id`'s open run now.
    async fn close_runs(&self, id: i64) -> Result<(), AppError> {
        sqlx::query(
            "UPDATE notebook_runs SET ended_at = $1 WHERE notebook_id = $2 AND ended_at IS NULL",
        )
        .bind(now_ms())
        .bind(id)
        .execute(&self.pool)
        .await
        .map_err(internal("end a notebook's run"))?;
        Ok(())
    }

    /// Records what the idle probe saw: the newest activity (Unix ms) or
    /// why it could not tell.
    pub async fn set_activity(
        &self,
        id: i64,
        last_activity: Option<i64>,
        probe_error: &str,
    ) -> Result<(), AppError> {
        sqlx::query(
            "UPDATE notebooks SET last_activity = COALESCE($1, last_activity), probe_error = $2 \
             WHERE id = $3",
        )
        .bind(last_activity)
        .bind(probe_error)
        .bind(id)
        .execute(&self.pool)
        .await
        .map_err(internal("record a notebook's activity"))?;
        Ok(())
    }

    /// Removes the record; a run still open ends now (the runs stay, for
    /// CPU/GPU hours).
    pub async fn delete(&self, id: i64) -> Result<(), AppError> {
        self.close_runs(id).await?;
        sqlx::query("DELETE FROM notebooks WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(internal("delete a notebook"))?;
        Ok(())
    }
}
