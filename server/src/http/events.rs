//! Server-sent event streams for the browser: job and serving changes for
//! the live tables, and a pod's log for the log console's follow.

use std::convert::Infallible;
use std::time::Duration;

use app::models::LogRequest;
use axum::extract::{Query, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::{Stream, StreamExt};
use serde::Deserialize;
use tokio::sync::broadcast::error::RecvError;

use super::api_error::ApiError;
use super::caller::Caller;
use super::AppState;

/// `GET /events/jobs`: one message (data: the job's name) per change to
/// any of the caller's jobs.
pub async fn jobs(State(state): State<AppState>, Caller(who): Caller) -> Response {
    let receiver = state.services.cluster.subscribe();
    sse(names_of(receiver, who.me.account.id, None, |ev| {
        (ev.account_id, ev.job)
    }))
}

/// `GET /events/serving`: one message (data: the instance's name) per
/// change to any of the caller's serving instances.
pub async fn serving(State(state): State<AppState>, Caller(who): Caller) -> Response {
    let receiver = state.services.serving.subscribe();
    sse(names_of(receiver, who.me.account.id, None, |ev| {
        (ev.account_id, ev.name)
    }))
}

/// `GET /events/notebooks`: one message (data: the notebook's name) per
/// change to any of the caller's account's notebooks.
pub async fn notebooks(State(state): State<AppState>, Caller(who): Caller) -> Response {
    let receiver = state.services.notebooks.subscribe();
    sse(names_of(receiver, who.me.account.id, None, |ev| {
        (ev.account_id, ev.name)
    }))
}

/// Which runs `/events/pipelines` follows.
#[derive(Debug, Deserialize)]
pub struct PipelineParams {
    /// One run only (all of the account's when absent).
    #[serde(default)]
    run: Option<String>,
}

/// `GET /events/pipelines[?run=]`: one message (data: the run's name) per
/// change to the caller's pipeline runs (a node moved on, a run started or
/// ended), or to the one `run`.
pub async fn pipelines(
    State(state): State<AppState>,
    Caller(who): Caller,
    Query(params): Query<PipelineParams>,
) -> Response {
    let receiver = state.services.pipelines.subscribe();
    sse(names_of(receiver, who.me.account.id, params.run, |ev| {
        (ev.account_id, ev.name)
    }))
}

/// One message per change event of `account_id`'s (data: what changed, by
/// `name`; only `only` when given), and an empty one when events were
/// missed, so the page refreshes.
fn names_of<E: Clone + Send + 'static>(
    receiver: tokio::sync::broadcast::Receiver<E>,
    account_id: i64,
    only: Option<String>,
    name: fn(E) -> (i64, String),
) -> impl Stream<Item = Result<Event, Infallible>> + Send + 'static {
    futures_util::stream::unfold((receiver, only), move |(mut rx, only)| async move {
        loop {
            match rx.recv().await {
                Ok(ev) => match name(ev) {
                    (account, what)
                        if account == account_id && only.as_deref().is_none_or(|o| o == what) =>
                    {
                        return Some((Ok(Event::default().data(what)), (rx, only)))
                    }
                    _ => continue,
                },
                Err(RecvError::Lagged(_)) => {
                    return Some((Ok(Event::default().data("")), (rx, only)))
                }
                Err(RecvError::Closed) => return None,
            }
        }
    })
}

/// A stream of events as an SSE response, kept alive through proxies.
pub fn sse(events: impl Stream<Item = Result<Event, Infallible>> + Send + 'static) -> Response {
    Sse::new(events)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

/// Which log `/events/log` follows.
#[derive(Debug, Deserialize)]
pub struct LogParams {
    job: String,
    pod: String,
    #[serde(default)]
    tail: Option<usize>,
}

/// `GET /events/log?job=&pod=&tail=`: the last `tail` lines (one message),
/// then each new chunk of lines as it is written, with timestamps, until
/// the pod ends.
pub async fn log(
    State(state): State<AppState>,
    Caller(who): Caller,
    Query(params): Query<LogParams>,
) -> Response {
    let request = LogRequest {
        tail: Some(params.tail.unwrap_or(500).min(10_000)),
        follow: true,
        timestamps: true,
    };
    match state
        .services
        .cluster
        .log(&who.me.account, &params.job, &params.pod, request)
        .await
    {
        Err(err) => ApiError(err).into_response(),
        Ok(stream) => sse(stream.filter_map(|chunk| async move {
            match chunk {
                Ok(bytes) if bytes.is_empty() => None,
                Ok(bytes) => {
                    let text = String::from_utf8_lossy(&bytes);
                    Some(Ok(Event::default().data(text.trim_end_matches('\n'))))
                }
                Err(err) => {
                    tracing::warn!(error = %err, "log stream broke");
                    None
                }
            }
        })),
    }
}
