//! `GET /api/v1/cluster`: where jobs run, its room and its queue;
//! `GET /api/v1/queue`: that queue, explained.

use app::models::{ClusterCapacity, QueueView};
use axum::extract::State;
use axum::Json;

use crate::http::api_error::{ApiError, ErrorBody};
use crate::http::caller::Caller;
use crate::http::AppState;

/// The cluster jobs are submitted to: on the local executor, the machine's
/// CPUs, memory and GPUs (each with whether a replica holds it), what
/// running replicas hold, how many jobs and serving replicas wait, and how
/// limits are enforced; on Kubernetes, how many jobs wait for the scheduler.
#[utoipa::path(
    get,
    path = "/api/v1/cluster",
    tag = "jobs",
    responses(
        (status = 200, description = "Its room and queue", body = ClusterCapacity),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 503, description = "The cluster cannot be reached", body = ErrorBody),
    )
)]
pub async fn capacity(
    State(state): State<AppState>,
    Caller(_who): Caller,
) -> Result<Json<ClusterCapacity>, ApiError> {
    Ok(Json(state.services.cluster.capacity().await?))
}

/// The queue where the caller's jobs run. On the local executor: every
/// request waiting for room, in the order it will be taken (inside an
/// account by priority, then age; between accounts, the one holding the
/// smallest share of the machine first), each with what it waits for and
/// the running work holding that, and every account's share; other
/// accounts' work is shown without its name. On Kubernetes: the account's
/// own waiting jobs with the scheduler's reasons, without positions.
#[utoipa::path(
    get,
    path = "/api/v1/queue",
    tag = "jobs",
    responses(
        (status = 200, description = "The queue", body = QueueView),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 503, description = "The cluster cannot be reached", body = ErrorBody),
    )
)]
pub async fn queue(
    State(state): State<AppState>,
    Caller(who): Caller,
) -> Result<Json<QueueView>, ApiError> {
    Ok(Json(state.services.cluster.queue(&who.me.account).await?))
}
