//! Changes other console processes made, for this process's live views.
//!
//! Each service tells its own process's subscribers about a change (a job
//! moved on, points arrived) over an in-memory channel. With replicas on one
//! PostgreSQL, a browser watching replica B must also hear of what replica A
//! changed. The feed carries those: every process writes what changed here
//! (kind, account, name: no content, which the pages read from the
//! database) to a table, and reads what the others wrote.
//!
//! Writes are coalesced: a burst of changes to one job is one row per flush
//! ([`FLUSH_EVERY`]). Reads poll every [`POLL_EVERY`], so a change reaches the
//! other replicas' pages within about half a second. Rows are kept a minute.
//!
//! Ids come from a sequence, and two writers' ids can commit out of order
//! (id 11 visible before id 10); the poller re-reads the last
//! [`LOOKBACK`] ids and remembers which it delivered, so a late commit is
//! still delivered once.

use std::collections::{BTreeSet, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sqlx::{AnyPool, Row};
use tokio::sync::{broadcast, Notify};

use crate::time::now_ms;

/// How long changes are coalesced before they are written.
pub const FLUSH_EVERY: Duration = Duration::from_millis(100);
/// How often the other processes' changes are read.
pub const POLL_EVERY: Duration = Duration::from_millis(250);
/// Ids re-read below the newest delivered, for commits that land late.
pub const LOOKBACK: i64 = 512;
/// How long a change is kept for the others to read.
const KEEP_MS: i64 = 60_000;
/// How often old changes are deleted.
const PRUNE_EVERY: Duration = Duration::from_secs(30);

/// What changed: the kind of thing, which matches one `/events/…` stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A job (`/events/jobs`).
    Jobs,
    /// A job's metrics (`/events/metrics`).
    Metrics,
    /// A serving instance (`/events/serving`).
    Serving,
    /// A notebook (`/events/notebooks`).
    Notebooks,
    /// A pipeline run (`/events/pipelines`).
    Pipelines,
    /// An experiment (`/events/experiments`).
    Experiments,
}

impl Kind {
    const ALL: [Kind; 6] = [
        Kind::Jobs,
        Kind::Metrics,
        Kind::Serving,
        Kind::Notebooks,
        Kind::Pipelines,
        Kind::Experiments,
    ];

    fn as_str(self) -> &'static str {
        match self {
            Kind::Jobs => "jobs",
            Kind::Metrics => "metrics",
            Kind::Serving => "serving",
            Kind::Notebooks => "notebooks",
            Kind::Pipelines => "pipelines",
            Kind::Experiments => "experiments",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == text)
    }
}

/// One change another process made.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Change {
    /// The kind of thing that changed.
    pub kind: Kind,
    /// The account it belongs to.
    pub account_id: i64,
    /// Its name (a job's, an instance's, a run's…).
    pub name: String,
}

/// This process's end of the feed. Cheap to clone.
#[derive(Clone)]
pub struct ChangeFeed {
    inner: Arc<Inner>,
}

struct Inner {
    /// Changes made here, waiting for the next flush (`None`: the feed is
    /// off and nothing is written).
    pending: Option<Mutex<HashSet<Change>>>,
    /// Wakes the flusher.
    wake: Notify,
    /// Changes the others made, to this process's streams.
    remote: broadcast::Sender<Change>,
}

impl ChangeFeed {
    /// A feed that carries nothing between processes: one console on its
    /// own (the embedded SQLite default).
    pub fn off() -> Self {
        Self {
            inner: Arc::new(Inner {
                pending: None,
                wake: Notify::new(),
                remote: broadcast::channel(1).0,
            }),
        }
    }

    /// The feed of the process `origin` (its [`super::lease::holder_id`]) on
    /// `pool`: starts writing this process's changes and reading the
    /// others'. The tasks end when the last clone of the feed is dropped.
    pub fn start(pool: AnyPool, origin: &str) -> Self {
        let feed = Self {
            inner: Arc::new(Inner {
                pending: Some(Mutex::new(HashSet::new())),
                wake: Notify::new(),
                remote: broadcast::channel(4096).0,
            }),
        };
        let origin: Arc<str> = origin.into();
        tokio::spawn(flush(
            Arc::downgrade(&feed.inner),
            pool.clone(),
            origin.clone(),
        ));
        tokio::spawn(poll(Arc::downgrade(&feed.inner), pool, origin));
        feed
    }

    /// Notes a change made in this process, for the others.
    pub fn publish(&self, kind: Kind, account_id: i64, name: &str) {
        let Some(pending) = &self.inner.pending else {
            return;
        };
        let change = Change {
            kind,
            account_id,
            name: name.to_owned(),
        };
        let added = pending.lock().expect("change feed lock").insert(change);
        if added {
            self.inner.wake.notify_one();
        }
    }

    /// Passes every event of `events` (a service's own channel) on to the
    /// other processes, as `key` names it. Ends when the channel closes.
    pub fn relay<E: Clone + Send + 'static>(
        &self,
        kind: Kind,
        mut events: broadcast::Receiver<E>,
        key: fn(E) -> (i64, String),
    ) {
        if self.inner.pending.is_none() {
            return;
        }
        let feed = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            loop {
                match events.recv().await {
                    Ok(event) => {
                        let Some(inner) = feed.upgrade() else { return };
                        let (account_id, name) = key(event);
                        ChangeFeed { inner }.publish(kind, account_id, &name);
                    }
                    // What was missed is missed here too; the pages of
                    // this process refresh on their own lag notice.
                    Err(broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        });
    }

    /// The changes other processes make from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Change> {
        self.inner.remote.subscribe()
    }
}

/// Writes the changes made here, coalesced, until the feed is dropped.
async fn flush(inner: std::sync::Weak<Inner>, pool: AnyPool, origin: Arc<str>) {
    loop {
        let batch: Vec<Change> = {
            let Some(feed) = inner.upgrade() else { return };
            // Woken by a change, or now and then to notice the feed is gone.
            let _ = tokio::time::timeout(Duration::from_secs(5), feed.wake.notified()).await;
            tokio::time::sleep(FLUSH_EVERY).await;
            let Some(pending) = &feed.pending else { return };
            let drained = std::mem::take(&mut *pending.lock().expect("change feed lock"));
            drained.into_iter().collect()
        };
        for chunk in batch.chunks(200) {
            if let Err(err) = insert(&pool, &origin, chunk).await {
                // The pages of the others miss these live (they still read
                // the database when loaded); nothing a change names is lost.
                tracing::warn!(error = %err, changes = chunk.len(), "writing changes for other replicas");
            }
        }
    }
}

async fn insert(pool: &AnyPool, origin: &str, changes: &[Change]) -> Result<(), sqlx::Error> {
    let at = now_ms();
    let sql = format!(
        "INSERT INTO changes (origin, kind, account_id, name, at) VALUES {}",
        super::numbered_rows(changes.len(), "(?, ?, ?, ?, ?)")
    );
    // Only placeholders are written into the text; the values are bound.
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
    for change in changes {
        query = query
            .bind(origin)
            .bind(change.kind.as_str())
            .bind(change.account_id)
            .bind(change.name.as_str())
            .bind(at);
    }
    query.execute(pool).await.map(drop)
}

/// Reads the others' changes into the feed until it is dropped.
async fn poll(inner: std::sync::Weak<Inner>, pool: AnyPool, origin: Arc<str>) {
    // Changes from before this process started are not news to it.
    let mut newest: i64 = loop {
        match sqlx::query_scalar::<_, i64>("SELECT COALESCE(MAX(id), 0) FROM changes")
            .fetch_one(&pool)
            .await
        {
            Ok(id) => break id,
            Err(err) => {
                tracing::warn!(error = %err, "reading where the change feed stands");
                tokio::time::sleep(Duration::from_secs(1)).await;
                if inner.strong_count() == 0 {
                    return;
                }
            }
        }
    };
    let start = newest;
    // Ids delivered (or skipped as this process's own) at or above
    // `newest - LOOKBACK`.
    let mut seen: BTreeSet<i64> = BTreeSet::new();
    let mut pruned = tokio::time::Instant::now();
    let mut tick = tokio::time::interval(POLL_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(feed) = inner.upgrade() else { return };
        let rows = sqlx::query(
            "SELECT id, origin, kind, account_id, name FROM changes \
             WHERE id > $1 ORDER BY id LIMIT 2000",
        )
        .bind(newest - LOOKBACK)
        .fetch_all(&pool)
        .await;
        let rows = match rows {
            Ok(rows) => rows,
            Err(err) => {
                tracing::warn!(error = %err, "reading other replicas' changes");
                continue;
            }
        };
        for row in rows {
            let id: i64 = row.get("id");
            if id <= start || !seen.insert(id) {
                continue;
            }
            newest = newest.max(id);
            let from: String = row.get("origin");
            if *from == *origin {
                continue;
            }
            let kind: String = row.get("kind");
            if let Some(kind) = Kind::parse(&kind) {
                let _ = feed.remote.send(Change {
                    kind,
                    account_id: row.get("account_id"),
                    name: row.get("name"),
                });
            }
        }
        // Only ids still inside the look-back window need remembering.
        seen = seen.split_off(&(newest - LOOKBACK));
        if pruned.elapsed() >= PRUNE_EVERY {
            pruned = tokio::time::Instant::now();
            // Every replica prunes; deleting what another deleted is nothing.
            if let Err(err) = sqlx::query("DELETE FROM changes WHERE at < $1")
                .bind(now_ms() - KEEP_MS)
                .execute(&pool)
                .await
            {
                tracing::warn!(error = %err, "pruning old changes");
            }
        }
    }
}
