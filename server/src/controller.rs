//! The loop that drives a controller: what moves a long-running workload
//! made of jobs on (a pipeline run's nodes; an experiment's trials; a
//! schedule's runs). A controller keeps nothing between passes: each pass
//! reads what it drives from the database, decides, and writes what it
//! did, claiming a job's name before it submits the job, so a restarted
//! console (or the replica that takes the lease over) carries on where the
//! last pass left off, and no job is submitted twice.

use std::sync::Arc;
use std::time::Duration;

use app::ports::Services;
use async_trait::async_trait;
use tokio::sync::Notify;

/// What moves one kind of workload on, a pass at a time.
#[async_trait]
pub trait Controller: Send + Sync + 'static {
    /// One pass over every workload it drives that is still going (tests
    /// call it directly). Errors are the controller's to log: the next
    /// pass tries again.
    async fn pass(&self, services: &Services);
}

/// Runs `controller` until the process ends: a pass at once, then one on
/// each job event (many at once make one pass), on `wake`, and at least
/// every `tick` (backoffs end, room frees up).
pub async fn drive<C: Controller>(
    controller: C,
    services: Services,
    wake: Arc<Notify>,
    tick: Duration,
    pulse: crate::telemetry::Pulse,
) {
    let mut events = services.cluster.subscribe();
    loop {
        controller.pass(&services).await;
        pulse.beat();
        tokio::select! {
            _ = wake.notified() => {}
            _ = events.recv() => {
                while events.try_recv().is_ok() {}
            }
            _ = tokio::time::sleep(tick) => {}
        }
    }
}
