//! The console's stop (SIGTERM or SIGINT to `paddlecloud serve`): nothing
//! it runs is left unsupervised. In order:
//!
//! 1. the background loops guarded by a lease (pipeline scheduler,
//!    experiment, schedule and alert controllers, the notifier, sweeps,
//!    Kubernetes' metrics-API sampling) are aborted and their
//!    leases released, so another replica takes them over at once and none
//!    submits work while the rest stops;
//! 2. at once, for what runs on this machine: the local executor's running
//!    jobs have their replicas stopped (SIGTERM, SIGKILL after the grace
//!    period) and fail saying the console stopped, jobs still waiting stay
//!    queued for the next start; local notebook servers and serving
//!    replicas are stopped the same way, their records kept as Running, so
//!    that the next start brings them back (as a restart after a crash
//!    does). Pods on Kubernetes outlive the console and are left running.

use std::sync::{Arc, Mutex};

use tokio::task::AbortHandle;

use crate::backend::notebooks::NotebookBackend;
use crate::backend::serving::ServingBackend;
use crate::local::LocalCluster;
use crate::storage::lease::Lease;

/// The lease-guarded loops of this process, to end when it stops.
#[derive(Clone, Default)]
pub(super) struct Loops(Arc<Mutex<Vec<(Lease, AbortHandle)>>>);

impl Loops {
    /// Keeps `lease`'s guard, `task`, to end it when the console stops.
    pub(super) fn add(&self, lease: Lease, task: AbortHandle) {
        self.0.lock().expect("loops lock").push((lease, task));
    }

    /// Aborts every loop (and so the loop it runs) and gives up its lease.
    async fn end(&self) {
        let loops = std::mem::take(&mut *self.0.lock().expect("loops lock"));
        for (lease, task) in loops {
            task.abort();
            lease.release().await;
        }
    }
}

/// What a stop ends.
pub(super) struct Shutdown {
    pub(super) loops: Loops,
    pub(super) local: LocalCluster,
    pub(super) notebooks: Arc<dyn NotebookBackend>,
    pub(super) serving: Arc<dyn ServingBackend>,
}

impl Shutdown {
    /// Ends the loops, then stops local jobs, notebook servers and serving
    /// replicas together; returns once all are gone (the grace period and
    /// a little more at most).
    pub(super) async fn run(&self) {
        let started = std::time::Instant::now();
        self.loops.end().await;
        tokio::join!(
            self.local.shut_down(),
            self.notebooks.shut_down(),
            self.serving.shut_down()
        );
        tracing::info!(
            seconds = started.elapsed().as_secs_f64(),
            "stopped what ran on this machine"
        );
    }
}
