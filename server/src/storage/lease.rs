//! Leases in the database, so that a background loop runs in one console
//! process at a time when several share one database.
//!
//! A lease is a row: who holds it and until when. A holder renews it well
//! before it runs out; another process takes it only once it has run out
//! (the holder died or lost the database). Taking and renewing are one
//! conditional upsert, so two processes asking at the same moment cannot
//! both get it. A loop guarded by a lease ([`Lease::guard`]) starts when its
//! process gets the lease and is aborted when it loses it; the loops guarded
//! this way are periodic and write in transactions, so an abort between two
//! passes loses nothing, and one in the middle of a pass rolls it back for
//! the next holder to redo.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use sqlx::AnyPool;

use crate::time::now_ms;

/// An id for this console among those sharing the database: the host, the
/// process, when it was made, and a count (tests build several consoles in
/// one process).
pub fn holder_id() -> String {
    static MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_default();
    let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{host}:{}:{}:{n}", std::process::id(), now_ms())
}

/// One named lease as one process asks for it.
#[derive(Clone)]
pub struct Lease {
    pool: AnyPool,
    name: Arc<str>,
    holder: Arc<str>,
    ttl: Duration,
}

impl Lease {
    /// The lease `name` (e.g. `pipeline-scheduler`) as `holder` (one id per
    /// console process) asks for it, held for `ttl` after each renewal.
    pub fn new(pool: AnyPool, name: &str, holder: &str, ttl: Duration) -> Self {
        Self {
            pool,
            name: name.into(),
            holder: holder.into(),
            ttl,
        }
    }

    /// Takes or renews the lease: true while this holder has it. A database
    /// error counts as not holding it (the loop stops rather than run twice).
    pub async fn hold(&self) -> bool {
        let now = now_ms();
        let until = now + i64::try_from(self.ttl.as_millis()).unwrap_or(i64::MAX);
        let taken = sqlx::query(
            "INSERT INTO leases (name, holder, expires_at) VALUES ($1, $2, $3) \
             ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, \
             expires_at = excluded.expires_at \
             WHERE leases.holder = excluded.holder OR leases.expires_at < $4",
        )
        .bind(&*self.name)
        .bind(&*self.holder)
        .bind(until)
        .bind(now)
        .execute(&self.pool)
        .await;
        match taken {
            Ok(done) => done.rows_affected() == 1,
            Err(err) => {
                tracing::warn!(lease = %self.name, error = %err, "renewing a lease");
                false
            }
        }
    }

    /// Gives the lease up at once (a process that stops), so another takes
    /// it without waiting for it to run out.
    pub async fn release(&self) {
        let _ = sqlx::query("DELETE FROM leases WHERE name = $1 AND holder = $2")
            .bind(&*self.name)
            .bind(&*self.holder)
            .execute(&self.pool)
            .await;
    }

    /// Who holds the lease now, if anyone does.
    pub async fn holder(&self) -> Option<String> {
        sqlx::query_scalar::<_, String>(
            "SELECT holder FROM leases WHERE name = $1 AND expires_at >= $2",
        )
        .bind(&*self.name)
        .bind(now_ms())
        .fetch_optional(&self.pool)
        .await
        .ok()
        .flatten()
    }

    /// Runs `start()`'s loop while this process holds the lease: asks every
    /// third of the lease's life, starts the loop on getting it, aborts it on
    /// losing it. Runs until the returned task is aborted (which aborts the
    /// loop too).
    pub fn guard<F, Fut>(self, start: F) -> tokio::task::JoinHandle<()>
    where
        F: Fn() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        tokio::spawn(async move {
            let mut running: Option<AbortOnDrop> = None;
            let mut tick = tokio::time::interval(self.ttl / 3);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let held = self.hold().await;
                if held && running.as_ref().is_none_or(|r| r.0.is_finished()) {
                    tracing::info!(lease = %self.name, holder = %self.holder, "took the lease; starting its loop");
                    running = Some(AbortOnDrop(tokio::spawn(start())));
                } else if !held && running.is_some() {
                    tracing::info!(lease = %self.name, holder = %self.holder, "lost the lease; stopping its loop");
                    running = None;
                }
            }
        })
    }
}

/// A task that ends when this is dropped: the guard's loop ends with the
/// guard, whether it returns or is aborted.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
