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
use tokio::sync::broadcast::{error::RecvError, Receiver};

use crate::storage::changes::Kind;

use super::api_error::ApiError;
use super::caller::Caller;
use super::AppState;

/// `GET /events/jobs[?name=]`: one message (data: the job's name) per
/// change to any of the caller's jobs, or to the one `name`.
pub async fn jobs(
    State(state): State<AppState>,
    Caller(who): Caller,
    Query(params): Query<NameParams>,
) -> Response {
    let local = state.services.cluster.subscribe();
    sse(names_of(
        &state,
        Kind::Jobs,
        local,
        who.me.account.id,
        params.name.map(|n| vec![n]),
        |ev| (ev.account_id, ev.job),
    ))
}

/// `GET /events/serving`: one message (data: the instance's name) per
/// change to any of the caller's serving instances.
pub async fn serving(State(state): State<AppState>, Caller(who): Caller) -> Response {
    let local = state.services.serving.subscribe();
    sse(names_of(
        &state,
        Kind::Serving,
        local,
        who.me.account.id,
        None,
        |ev| (ev.account_id, ev.name),
    ))
}

/// `GET /events/notebooks`: one message (data: the notebook's name) per
/// change to any of the caller's account's notebooks.
pub async fn notebooks(State(state): State<AppState>, Caller(who): Caller) -> Response {
    let local = state.services.notebooks.subscribe();
    sse(names_of(
        &state,
        Kind::Notebooks,
        local,
        who.me.account.id,
        None,
        |ev| (ev.account_id, ev.name),
    ))
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
    let local = state.services.pipelines.subscribe();
    let account = who.me.account.id;
    sse(names_of(
        &state,
        Kind::Pipelines,
        local,
        account,
        params.run.map(|r| vec![r]),
        |ev| (ev.account_id, ev.name),
    ))
}

/// Which of the account's things `/events/jobs` and `/events/experiments`
/// follow.
#[derive(Debug, Deserialize)]
pub struct NameParams {
    /// One only (all of the account's when absent): a job page follows its
    /// job, an experiment's page its experiment.
    #[serde(default)]
    name: Option<String>,
}

/// `GET /events/experiments[?name=]`: one message (data: the experiment's
/// name) per change to the caller's experiments (a trial started, moved,
/// was stopped early or ended), or to the one `name`.
pub async fn experiments(
    State(state): State<AppState>,
    Caller(who): Caller,
    Query(params): Query<NameParams>,
) -> Response {
    let local = state.services.experiments.subscribe();
    sse(names_of(
        &state,
        Kind::Experiments,
        local,
        who.me.account.id,
        params.name.map(|n| vec![n]),
        |ev| (ev.account_id, ev.name),
    ))
}

/// One message per change of `account_id`'s things of `kind` (data: the
/// name of what changed; only those named in `only` when given), made in this process
/// (`local`, a service's channel) or in another replica (the change feed),
/// and an empty one when events were missed, so the page refreshes.
pub fn names_of<E: Clone + Send + 'static>(
    state: &AppState,
    kind: Kind,
    local: Receiver<E>,
    account_id: i64,
    only: Option<Vec<String>>,
    name: fn(E) -> (i64, String),
) -> impl Stream<Item = Result<Event, Infallible>> + Send + 'static {
    let here = received(local).map(move |ev| ev.map(name));
    let elsewhere = received(state.changes.subscribe()).filter_map(move |ev| {
        futures_util::future::ready(match ev {
            Some(change) if change.kind == kind => Some(Some((change.account_id, change.name))),
            Some(_) => None,
            None => Some(None),
        })
    });
    futures_util::stream::select(here, elsewhere).filter_map(move |ev| {
        futures_util::future::ready(match ev {
            Some((account, what)) if account == account_id => only
                .as_ref()
                .is_none_or(|names| names.contains(&what))
                .then(|| Ok(Event::default().data(what))),
            Some(_) => None,
            // Missed events: an empty message makes the page read afresh.
            None => Some(Ok(Event::default().data(""))),
        })
    })
}

/// What a channel receives, `None` where some were missed; ends when it
/// closes.
pub fn received<E: Clone + Send + 'static>(
    receiver: Receiver<E>,
) -> impl Stream<Item = Option<E>> + Send + 'static {
    futures_util::stream::unfold(receiver, |mut rx| async move {
        match rx.recv().await {
            Ok(ev) => Some((Some(ev), rx)),
            Err(RecvError::Lagged(_)) => Some((None, rx)),
            Err(RecvError::Closed) => None,
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
