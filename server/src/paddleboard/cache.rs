//! Series held in memory for charts, loaded on first use, kept in step with
//! batches written by this process, checked against the database's revision
//! (another console process may write too), and evicted least recently used
//! when they hold more points than the budget.
//!
//! Beside each series, its envelope over all its points at one width (the
//! view every chart opens with, and the compare page's only one) is kept
//! until the series changes: a hundred runs overlaid would otherwise
//! compute a hundred envelopes for every view. It is counted in the budget.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use app::error::AppError;
use app::models::SeriesEnvelope;
use tokio::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::series::Series;
use crate::storage::metrics::{Head, PointStore, Written};

/// A series' envelope over all its points at one width.
struct Whole {
    /// The buckets it was computed for.
    width: usize,
    /// What was computed.
    envelope: Arc<SeriesEnvelope>,
}

/// One series in memory.
pub struct Cached {
    /// The points, with their envelope pyramid. Written only through
    /// [`Cached::write`], which drops `whole` with it.
    series: RwLock<Series>,
    /// The whole series' envelope at the width last asked for; `None` after
    /// any change. Read and set only while `series` is read-locked, cleared
    /// while it is write-locked, so it always matches the points.
    whole: Mutex<Option<Whole>>,
    /// The database revision `series` reflects.
    revision: AtomicU64,
    /// When it was last used (a counter, not a clock).
    used: AtomicU64,
    /// Serialises loading, so two first queries load once.
    loading: tokio::sync::Mutex<bool>,
}

impl Cached {
    /// The points, to read.
    pub async fn read(&self) -> RwLockReadGuard<'_, Series> {
        self.series.read().await
    }

    /// The points, to change: what was computed from them goes.
    async fn write(&self) -> RwLockWriteGuard<'_, Series> {
        let series = self.series.write().await;
        *self.whole.lock().expect("whole envelope lock") = None;
        series
    }

    /// The whole series' envelope `width` buckets wide: made by `make` from
    /// the points the first time it is asked for after a change (or at
    /// another width), then kept.
    pub async fn whole(
        &self,
        width: usize,
        make: impl FnOnce(&Series) -> SeriesEnvelope,
    ) -> Arc<SeriesEnvelope> {
        // Held throughout: no change can come between reading the points
        // and keeping what was made from them.
        let series = self.series.read().await;
        let kept = self.whole.lock().expect("whole envelope lock");
        if let Some(w) = kept.as_ref().filter(|w| w.width == width) {
            return w.envelope.clone();
        }
        drop(kept);
        let envelope = Arc::new(make(&series));
        *self.whole.lock().expect("whole envelope lock") = Some(Whole {
            width,
            envelope: envelope.clone(),
        });
        envelope
    }

    /// Points held: the series' and its kept envelope's.
    async fn points_held(&self) -> usize {
        let series = self.series.read().await;
        let whole = self.whole.lock().expect("whole envelope lock");
        series.len() + whole.as_ref().map_or(0, |w| w.envelope.points.len())
    }
}

/// The in-memory series of this process.
pub struct SeriesCache {
    entries: Mutex<HashMap<i64, Arc<Cached>>>,
    clock: AtomicU64,
    budget: usize,
}

impl SeriesCache {
    /// A cache that keeps at most about `budget` points.
    pub fn new(budget: usize) -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
            clock: AtomicU64::new(0),
            budget,
        }
    }

    fn entry(&self, id: i64) -> Arc<Cached> {
        let mut entries = self.entries.lock().expect("series cache lock");
        entries
            .entry(id)
            .or_insert_with(|| {
                Arc::new(Cached {
                    series: RwLock::new(Series::new()),
                    whole: Mutex::new(None),
                    revision: AtomicU64::new(0),
                    used: AtomicU64::new(0),
                    loading: tokio::sync::Mutex::new(false),
                })
            })
            .clone()
    }

    /// Marks `cached` as just used (eviction drops the least recently used).
    fn touch(&self, cached: &Cached) {
        cached.used.store(
            self.clock.fetch_add(1, Ordering::Relaxed),
            Ordering::Relaxed,
        );
    }

    /// The series at `head`'s revision, loading it when it is not in memory
    /// or is older than the database's.
    pub async fn get_or_load(
        &self,
        head: Head,
        store: &PointStore,
    ) -> Result<Arc<Cached>, AppError> {
        let cached = self.entry(head.id);
        self.touch(&cached);
        let reloaded = {
            let mut loaded = cached.loading.lock().await;
            let stale = !*loaded || cached.revision.load(Ordering::Acquire) != head.revision as u64;
            if stale {
                let (revision, rows) = store.load(head.id).await?;
                let mut series = Series::new();
                series.extend(rows.iter().map(|r| (r.step, r.wall_time, r.value)));
                *cached.write().await = series;
                cached.revision.store(revision as u64, Ordering::Release);
                *loaded = true;
            }
            stale
        };
        if reloaded {
            self.evict_beyond_budget(head.id).await;
        }
        Ok(cached)
    }

    /// Applies a batch this process wrote, if the cached copy was exactly
    /// one revision behind; otherwise the next query reloads it. A batch
    /// that created its series starts the cached copy: a live run's first
    /// chart then needs no load from the database.
    pub async fn apply(&self, written: &Written) {
        let created = written.revision_before == 0;
        let cached = if created {
            Some(self.entry(written.series_id))
        } else {
            let entries = self.entries.lock().expect("series cache lock");
            entries.get(&written.series_id).cloned()
        };
        let Some(cached) = cached else { return };
        let mut loaded = cached.loading.lock().await;
        if created && !*loaded {
            // Nothing stored before this batch: the empty copy is revision 0.
            *loaded = true;
            cached.revision.store(0, Ordering::Release);
        }
        if !*loaded {
            return;
        }
        let mut series = cached.write().await;
        if cached.revision.load(Ordering::Acquire) != written.revision_before as u64 {
            return;
        }
        // A cut always starts at the batch's first step, which `extend`
        // treats as a restart: the stored points from there on go.
        debug_assert!(written.cut.is_none() || written.cut == written.rows.first().map(|r| r.step));
        series.extend(written.rows.iter().map(|r| (r.step, r.wall_time, r.value)));
        cached
            .revision
            .store(written.revision_after as u64, Ordering::Release);
        drop(series);
        drop(loaded);
        if created {
            self.touch(&cached);
            self.evict_beyond_budget(written.series_id).await;
        }
    }

    /// Drops the least recently used series (never `keep`) while the cache
    /// holds more points than its budget.
    async fn evict_beyond_budget(&self, keep: i64) {
        let entries: Vec<(i64, Arc<Cached>)> = {
            let entries = self.entries.lock().expect("series cache lock");
            entries.iter().map(|(k, v)| (*k, v.clone())).collect()
        };
        let mut sizes = Vec::with_capacity(entries.len());
        let mut total = 0usize;
        for (id, cached) in &entries {
            let len = cached.points_held().await;
            total += len;
            sizes.push((cached.used.load(Ordering::Relaxed), *id, len));
        }
        if total <= self.budget {
            return;
        }
        sizes.sort_unstable();
        let mut entries = self.entries.lock().expect("series cache lock");
        for (_, id, len) in sizes {
            if total <= self.budget {
                break;
            }
            if id != keep && entries.remove(&id).is_some() {
                total -= len;
            }
        }
    }
}
