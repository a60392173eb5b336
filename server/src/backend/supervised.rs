//! The tasks that look after long-running workloads, one per workload id:
//! a local serving instance's replicas, a local notebook's server, the
//! status task that follows a Kubernetes Deployment or notebook pod. Every
//! backend keeps them here, the same way: starting one for an id that has
//! one tells the old one to stop; stopping waits until the task has ended;
//! a task that ends by itself leaves the registry, but never takes a newer
//! task of the same id with it. What a task shares with the rest of its
//! backend while it runs (ready ports, a wanted size) is its `T`.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

/// One running task, as its backend sees it.
pub struct Supervisee<T> {
    /// What the task shares while it runs.
    pub state: T,
    stop: watch::Sender<bool>,
    done: watch::Receiver<bool>,
}

impl<T> Supervisee<T> {
    /// Turns true when the task is told to stop.
    pub fn stop_signal(&self) -> watch::Receiver<bool> {
        self.stop.subscribe()
    }

    /// Tells the task to stop, without waiting for it.
    fn tell_stop(&self) {
        self.stop.send_replace(true);
    }
}

/// The running tasks of one backend's workloads, by workload id.
pub struct Supervised<T> {
    running: Arc<Mutex<HashMap<i64, Arc<Supervisee<T>>>>>,
}

impl<T> Clone for Supervised<T> {
    fn clone(&self) -> Self {
        Self {
            running: self.running.clone(),
        }
    }
}

impl<T> Default for Supervised<T> {
    fn default() -> Self {
        Self {
            running: Arc::new(Mutex::new(HashMap::new())),
        }
    }
}

impl<T: Send + Sync + 'static> Supervised<T> {
    /// Runs `task` for workload `id` with `state`; a task already running
    /// for `id` is told to stop (see [`Supervised::stop`] to wait for it
    /// first). The task gets its own entry, whose stop signal it watches.
    pub fn spawn<F, Fut>(&self, id: i64, state: T, task: F)
    where
        F: FnOnce(Arc<Supervisee<T>>) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let (stop, _) = watch::channel(false);
        let (done_tx, done) = watch::channel(false);
        let entry = Arc::new(Supervisee { state, stop, done });
        let old = self.lock().insert(id, entry.clone());
        if let Some(old) = old {
            old.tell_stop();
        }
        let body = task(entry.clone());
        let running = self.running.clone();
        tokio::spawn(async move {
            body.await;
            let mut running = running.lock().expect("supervised lock");
            if running.get(&id).is_some_and(|e| Arc::ptr_eq(e, &entry)) {
                running.remove(&id);
            }
            drop(running);
            let _ = done_tx.send(true);
        });
    }

    /// The task running for workload `id`, if any.
    pub fn get(&self, id: i64) -> Option<Arc<Supervisee<T>>> {
        self.lock().get(&id).cloned()
    }

    /// Tells workload `id`'s task to stop and waits until it has ended.
    pub async fn stop(&self, id: i64) {
        if let Some(entry) = self.get(id) {
            entry.tell_stop();
            let mut done = entry.done.clone();
            let _ = done.wait_for(|d| *d).await;
        }
    }

    /// Tells every task to stop and waits until all have ended (the
    /// console's stop).
    pub async fn stop_all(&self) {
        let entries: Vec<Arc<Supervisee<T>>> = self.lock().values().cloned().collect();
        for entry in &entries {
            entry.tell_stop();
        }
        for entry in entries {
            let mut done = entry.done.clone();
            let _ = done.wait_for(|d| *d).await;
        }
    }

    /// Tells workload `id`'s task to stop and forgets it at once, without
    /// waiting (a status task that has nothing to tidy up).
    pub fn end(&self, id: i64) {
        if let Some(entry) = self.lock().remove(&id) {
            entry.tell_stop();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<i64, Arc<Supervisee<T>>>> {
        self.running.lock().expect("supervised lock")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test]
    async fn a_stop_waits_for_the_task_and_a_new_start_replaces_the_old_one() {
        let tasks: Supervised<AtomicU32> = Supervised::default();
        let ended = Arc::new(AtomicU32::new(0));
        let run = |entry: Arc<Supervisee<AtomicU32>>, ended: Arc<AtomicU32>| async move {
            let mut stop = entry.stop_signal();
            let _ = stop.wait_for(|s| *s).await;
            // Tidying up takes a while; a stop waits for it.
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            ended.fetch_add(1, Ordering::SeqCst);
        };
        let e = ended.clone();
        tasks.spawn(7, AtomicU32::new(1), move |entry| run(entry, e));
        let e = ended.clone();
        tasks.spawn(7, AtomicU32::new(2), move |entry| run(entry, e));
        // The first was told to stop; its end does not take the second along.
        tokio::time::sleep(std::time::Duration::from_millis(150)).await;
        assert_eq!(ended.load(Ordering::SeqCst), 1);
        assert_eq!(tasks.get(7).unwrap().state.load(Ordering::SeqCst), 2);
        tasks.stop(7).await;
        assert_eq!(
            ended.load(Ordering::SeqCst),
            2,
            "stop returned before the end"
        );
        assert!(tasks.get(7).is_none());
        // Stopping what does not run is nothing.
        tasks.stop(8).await;
    }

    #[tokio::test]
    async fn stopping_all_tells_every_task_and_waits_for_each_to_end() {
        let tasks: Supervised<()> = Supervised::default();
        let ended = Arc::new(AtomicU32::new(0));
        for id in 0..3u64 {
            let ended = ended.clone();
            tasks.spawn(id as i64, (), move |entry| async move {
                let mut stop = entry.stop_signal();
                let _ = stop.wait_for(|s| *s).await;
                tokio::time::sleep(std::time::Duration::from_millis(20 * id)).await;
                ended.fetch_add(1, Ordering::SeqCst);
            });
        }
        tasks.stop_all().await;
        assert_eq!(ended.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn a_task_that_ends_by_itself_leaves_the_registry() {
        let tasks: Supervised<()> = Supervised::default();
        tasks.spawn(1, (), |_| async {});
        for _ in 0..100 {
            if tasks.get(1).is_none() {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        panic!("a finished task stayed registered");
    }
}
