//! `/api/v1`: the REST API for the CLI, the SDK and scripts.

use app::error::AppError;
use app::models::LogRequest;
use app::ports::Principal;
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use http::header;
use serde::Deserialize;

use super::api_error::ApiError;
use super::AppState;

fn caller(principal: Option<Extension<Principal>>) -> Result<Principal, ApiError> {
    principal
        .map(|Extension(p)| p)
        .ok_or(ApiError(AppError::Unauthenticated))
}

/// Query of the log route.
#[derive(Debug, Deserialize)]
pub struct LogQuery {
    #[serde(default)]
    tail: Option<usize>,
    #[serde(default)]
    follow: bool,
    #[serde(default)]
    timestamps: bool,
    #[serde(default)]
    download: bool,
}

/// `GET /api/v1/jobs/{job}/pods/{pod}/log?tail=N&follow=true&timestamps=true&download=true`:
/// a chunked plain-text stream; never loads the log into memory whole.
pub async fn pod_log(
    State(state): State<AppState>,
    principal: Option<Extension<Principal>>,
    Path((job, pod)): Path<(String, String)>,
    Query(query): Query<LogQuery>,
) -> Result<Response, ApiError> {
    let who = caller(principal)?;
    let request = LogRequest {
        tail: query.tail,
        follow: query.follow,
        timestamps: query.timestamps,
    };
    let stream = state
        .services
        .cluster
        .log(&who.me.account, &job, &pod, request)
        .await?;
    let mut response = Body::from_stream(stream).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        "text/plain; charset=utf-8".parse().expect("static header"),
    );
    // Compression would hold back a followed stream's chunks.
    headers.insert(
        header::CACHE_CONTROL,
        "no-store".parse().expect("static header"),
    );
    if query.download {
        let file = format!("attachment; filename=\"{job}-{pod}.log\"");
        if let Ok(value) = file.parse() {
            headers.insert(header::CONTENT_DISPOSITION, value);
        }
    }
    Ok(response)
}
