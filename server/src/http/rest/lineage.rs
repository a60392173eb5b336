//! `/api/v1/lineage`: the graph around a dataset, job, model version or
//! serving instance (what it came from, what came of it), as its page
//! draws it.

use app::models::{Lineage, NodeRef};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::Json;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::http::api_error::{ApiError, ErrorBody};
use crate::http::caller::Caller;
use crate::http::AppState;

/// Which node of `GET /api/v1/lineage`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Node {
    /// `dataset:owner/name`, `job:owner/name`, `model:owner/name:version`
    /// or `serving:owner/name`.
    #[param(
        min_length = 1,
        max_length = 250,
        pattern = r"^dataset:[A-Za-z0-9._-]{1,100}/[A-Za-z0-9._-]{1,100}$|^(job|serving):[A-Za-z0-9._-]{1,100}/[a-z]([a-z0-9-]{0,48}[a-z0-9])?$|^model:[A-Za-z0-9._-]{1,100}/[A-Za-z0-9._-]{1,100}:[1-9][0-9]{0,8}$"
    )]
    node: String,
}

/// The node with what is up to two steps upstream (what it read, the job
/// that registered it, the versions it serves) and downstream (the jobs
/// that read it, what it registered, the instances serving it). Only the
/// caller's account's jobs and instances are in it.
#[utoipa::path(get, path = "/api/v1/lineage", tag = "lineage",
    params(Node),
    responses(
        (status = 200, description = "The graph", body = Lineage),
        (status = 400, description = "A node that names nothing", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "Nothing by that name the caller may see", body = ErrorBody),
    ))]
pub async fn lineage(
    State(state): State<AppState>,
    Caller(who): Caller,
    node: Result<Query<Node>, QueryRejection>,
) -> Result<Json<Lineage>, ApiError> {
    let Query(node) = node?;
    let root = NodeRef::parse(&node.node)?;
    Ok(Json(
        app::use_cases::lineage::lineage(&state.services, &who.me, root).await?,
    ))
}
