//! What the stall watcher found, as people read it: the site admin's list
//! of jobs holding idle GPUs across accounts. (A job's own marks are on
//! its record: `stalled_since`, `gpus_idle_since`.)

use async_trait::async_trait;

use crate::error::AppError;
use crate::models::{IdleGpuJob, Me};

/// Reads the watcher's marks.
#[async_trait]
pub trait Watchdog: Send + Sync {
    /// The running jobs of every account whose GPUs have been idle, the
    /// longest idle first. Site admins only (403 otherwise).
    async fn idle_gpu_jobs(&self, me: &Me) -> Result<Vec<IdleGpuJob>, AppError>;
}
