//! `/api/v1/jobs`: submit, list, get, its detail, stop, delete, pods and
//! pod logs.

use app::error::AppError;
use app::models::time::DAY_MS;
use app::models::{
    date_to_ms, Job, JobDetail, JobPage, JobQuery, JobSort, JobSource, JobSpec, JobStatus,
    LogRequest, Pod, StackDump,
};
use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use http::{header, HeaderValue, StatusCode};
use serde::Deserialize;
use utoipa::IntoParams;

use super::json::JsonBody;
use crate::http::api_error::{ApiError, ErrorBody};
use crate::http::caller::{Caller, Writer};
use crate::http::AppState;

/// Filters of `GET /api/v1/jobs`: the job table's, so a script sees what the page shows.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    /// Only jobs in this status.
    status: Option<JobStatus>,
    /// Only jobs whose name contains this.
    name: Option<String>,
    /// Only jobs that ran there: `console`, `local` (local runs), `mlflow`.
    source: Option<JobSource>,
    /// Submitted on or after this day (`YYYY-MM-DD`, UTC).
    #[param(format = Date)]
    from: Option<String>,
    /// Submitted on or before this day (`YYYY-MM-DD`, UTC).
    #[param(format = Date)]
    to: Option<String>,
    /// Order (default `newest`).
    sort: Option<JobSort>,
    /// 1-based page (default 1).
    #[param(minimum = 1, maximum = 1_000_000)]
    page: Option<u32>,
    /// Jobs per page (default 25, at most 200).
    #[param(minimum = 1, maximum = 200)]
    per_page: Option<u32>,
}

fn day(field: &str, value: Option<&str>) -> Result<Option<i64>, AppError> {
    value
        .map(|v| {
            date_to_ms(v).ok_or_else(|| {
                AppError::invalid(field, format!("“{v}” is not a date like 2026-11-22."))
            })
        })
        .transpose()
}

impl ListParams {
    fn query(self) -> Result<JobQuery, AppError> {
        // The page clamps what a URL asks; the API says what it takes.
        if self.page.is_some_and(|p| !(1..=1_000_000).contains(&p)) {
            return Err(AppError::invalid("page", "page is 1 to 1000000."));
        }
        if self
            .per_page
            .is_some_and(|p| !(1..=app::models::job_query::MAX_PER_PAGE).contains(&p))
        {
            return Err(AppError::invalid(
                "per_page",
                format!("per_page is 1 to {}.", app::models::job_query::MAX_PER_PAGE),
            ));
        }
        Ok(JobQuery {
            status: self.status,
            name: self.name,
            source: self.source,
            from: day("from", self.from.as_deref())?,
            to: day("to", self.to.as_deref())?.map(|ms| ms + DAY_MS),
            sort: self.sort.unwrap_or_default(),
            page: self.page,
            per_page: self.per_page,
        })
    }
}

/// The caller's jobs, newest first unless `sort` says otherwise, one page at a time.
#[utoipa::path(
    get,
    path = "/api/v1/jobs",
    tag = "jobs",
    params(ListParams),
    responses(
        (status = 200, description = "One page of jobs", body = JobPage),
        (status = 400, description = "A malformed filter", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
    )
)]
pub async fn list(
    State(state): State<AppState>,
    Caller(who): Caller,
    params: Result<Query<ListParams>, QueryRejection>,
) -> Result<Json<JobPage>, ApiError> {
    let Query(params) = params?;
    let page = state
        .services
        .cluster
        .list_jobs(&who.me.account, &params.query()?)
        .await?;
    Ok(Json(page))
}

/// Submits a job: validates the spec and starts its parameter servers and trainers.
#[utoipa::path(
    post,
    path = "/api/v1/jobs",
    tag = "jobs",
    request_body = JobSpec,
    responses(
        (status = 201, description = "Submitted; `Location` is the job's URL", body = Job),
        (status = 400, description = "A bad field, named in `field`", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "Over the account's quota: what is over and by how much", body = ErrorBody),
        (status = 409, description = "The name is taken in this account", body = ErrorBody),
    )
)]
pub async fn submit(
    State(state): State<AppState>,
    Writer(who): Writer,
    spec: Result<JsonBody<JobSpec>, ApiError>,
) -> Result<Response, ApiError> {
    let JsonBody(spec) = spec?;
    let job = app::use_cases::submit_within_quota(&state.services, &who, spec).await?;
    tracing::info!(account = %who.me.account.name, job = %job.name, user = %who.me.email, "job submitted through the API");
    let mut response = (StatusCode::CREATED, Json(&job)).into_response();
    if let Ok(location) = HeaderValue::from_str(&format!("/api/v1/jobs/{}", job.name)) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    Ok(response)
}

/// One job with its status and per-role replica counts.
#[utoipa::path(
    get,
    path = "/api/v1/jobs/{name}",
    tag = "jobs",
    params(("name" = String, Path, description = "The job's name")),
    responses(
        (status = 200, description = "The job", body = Job),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "No such job in this account", body = ErrorBody),
    )
)]
pub async fn get_one(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path(name): Path<String>,
) -> Result<Json<Job>, ApiError> {
    Ok(Json(
        state.services.cluster.job(&who.me.account, &name).await?,
    ))
}

/// The job with what its page shows beside the row: its replicas, what
/// happened to it and them (each change of status, phase or reason, oldest
/// first, the newest 200), and the model versions it registered.
#[utoipa::path(
    get,
    path = "/api/v1/jobs/{name}/detail",
    tag = "jobs",
    params(("name" = String, Path, description = "The job's name")),
    responses(
        (status = 200, description = "The job, its pods, its history, what it registered", body = JobDetail),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "No such job in this account", body = ErrorBody),
    )
)]
pub async fn detail(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path(name): Path<String>,
) -> Result<Json<JobDetail>, ApiError> {
    let detail = app::use_cases::job_detail::job_detail(&state.services, &who.me, &name).await?;
    Ok(Json(detail))
}

/// Stops every replica (SIGTERM, then SIGKILL after the grace period), keeping
/// the record and logs. Stopping a finished job changes nothing.
#[utoipa::path(
    post,
    path = "/api/v1/jobs/{name}/stop",
    tag = "jobs",
    params(("name" = String, Path, description = "The job's name")),
    responses(
        (status = 200, description = "The job, stopped (a local run: asked to stop at its next heartbeat)", body = Job),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "No such job in this account", body = ErrorBody),
    )
)]
pub async fn stop(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(name): Path<String>,
) -> Result<Json<Job>, ApiError> {
    let job = app::use_cases::jobs::stop_job(&state.services, &who.me, &name).await?;
    tracing::info!(account = %who.me.account.name, job = %name, user = %who.me.email, "job stopped through the API");
    Ok(Json(job))
}

/// Takes a stack dump of every running replica's Python threads (py-spy),
/// written into each replica's log as well: what a stalled job is doing.
#[utoipa::path(
    post,
    path = "/api/v1/jobs/{name}/stack-dump",
    tag = "jobs",
    params(("name" = String, Path, description = "The job's name")),
    responses(
        (status = 200, description = "One dump per replica (or why there is none)", body = Vec<StackDump>),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "A viewer cannot take dumps", body = ErrorBody),
        (status = 404, description = "No such job in this account", body = ErrorBody),
        (status = 409, description = "No replica of the job runs", body = ErrorBody),
        (status = 503, description = "py-spy could not be installed, or the job runs where dumps are not taken", body = ErrorBody),
    )
)]
pub async fn stack_dump(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(name): Path<String>,
) -> Result<Json<Vec<StackDump>>, ApiError> {
    let dumps = app::use_cases::jobs::stack_dump(&state.services, &who.me, &name).await?;
    tracing::info!(account = %who.me.account.name, job = %name, user = %who.me.email, "stack dump through the API");
    Ok(Json(dumps))
}

/// Deletes a job with its logs, stopping it first if it runs.
#[utoipa::path(
    delete,
    path = "/api/v1/jobs/{name}",
    tag = "jobs",
    params(("name" = String, Path, description = "The job's name")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "No such job in this account", body = ErrorBody),
    )
)]
pub async fn delete(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    app::use_cases::jobs::delete_job(&state.services, &who.me, &name).await?;
    tracing::info!(account = %who.me.account.name, job = %name, user = %who.me.email, "job deleted through the API");
    Ok(StatusCode::NO_CONTENT)
}

/// The job's replicas: parameter servers first, then trainers, by index.
#[utoipa::path(
    get,
    path = "/api/v1/jobs/{name}/pods",
    tag = "jobs",
    params(("name" = String, Path, description = "The job's name")),
    responses(
        (status = 200, description = "The pods", body = Vec<Pod>),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "No such job in this account", body = ErrorBody),
    )
)]
pub async fn pods(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path(name): Path<String>,
) -> Result<Json<Vec<Pod>>, ApiError> {
    Ok(Json(
        state.services.cluster.pods(&who.me.account, &name).await?,
    ))
}

/// Query of the log route.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LogParams {
    /// Only the last N lines (default: the whole log).
    tail: Option<usize>,
    /// Keep the response open and send new lines until the pod ends.
    #[serde(default)]
    follow: bool,
    /// Start each line with its RFC 3339 timestamp.
    #[serde(default)]
    timestamps: bool,
    /// Send as an attachment (`JOB-POD.log`).
    #[serde(default)]
    download: bool,
}

/// A pod's log as a chunked `text/plain` stream; never loaded into memory whole.
#[utoipa::path(
    get,
    path = "/api/v1/jobs/{name}/pods/{pod}/log",
    tag = "jobs",
    params(
        ("name" = String, Path, description = "The job's name"),
        ("pod" = String, Path, description = "The pod, e.g. `trainer-0`"),
        LogParams,
    ),
    responses(
        (status = 200, description = "The log's lines", body = String, content_type = "text/plain"),
        (status = 400, description = "A malformed parameter", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "No such job or pod in this account", body = ErrorBody),
    )
)]
pub async fn pod_log(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path((name, pod)): Path<(String, String)>,
    query: Result<Query<LogParams>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(query) = query?;
    let request = LogRequest {
        tail: query.tail,
        follow: query.follow,
        timestamps: query.timestamps,
    };
    let stream = state
        .services
        .cluster
        .log(&who.me.account, &name, &pod, request)
        .await?;
    let mut response = Body::from_stream(stream).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if query.download {
        let file = format!("attachment; filename=\"{name}-{pod}.log\"");
        if let Ok(value) = HeaderValue::from_str(&file) {
            headers.insert(header::CONTENT_DISPOSITION, value);
        }
    }
    Ok(response)
}
