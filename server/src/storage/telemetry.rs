//! What the console's `/metrics` reads from the database when scraped:
//! jobs, notebooks and serving instances by status, every account.

use sqlx::AnyPool;

/// Counts by status, each `(status, count)`.
#[derive(Debug, Default)]
pub struct Counts {
    /// Jobs (the console's and local runs).
    pub jobs: Vec<(String, i64)>,
    /// Notebooks.
    pub notebooks: Vec<(String, i64)>,
    /// Serving instances.
    pub serving: Vec<(String, i64)>,
}

/// `(status, count)` of `table`; empty (and a warning) if the database does
/// not answer: a scrape shows what it can.
async fn by_status(pool: &AnyPool, table: &'static str) -> Vec<(String, i64)> {
    let sql = match table {
        "jobs" => "SELECT status, COUNT(*) FROM jobs GROUP BY status",
        "notebooks" => "SELECT status, COUNT(*) FROM notebooks GROUP BY status",
        _ => "SELECT status, COUNT(*) FROM serving GROUP BY status",
    };
    match sqlx::query_as::<_, (String, i64)>(sql)
        .fetch_all(pool)
        .await
    {
        Ok(rows) => rows,
        Err(err) => {
            tracing::warn!(table, error = %err, "counting for /metrics");
            Vec::new()
        }
    }
}

/// Every count `/metrics` shows.
pub async fn counts(pool: &AnyPool) -> Counts {
    let (jobs, notebooks, serving) = tokio::join!(
        by_status(pool, "jobs"),
        by_status(pool, "notebooks"),
        by_status(pool, "serving")
    );
    Counts {
        jobs,
        notebooks,
        serving,
    }
}
