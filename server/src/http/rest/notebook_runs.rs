//! Notebook runs: a notebook file's parameters, a run of it as a job
//! (papermill), and the run's files: the version it took and the executed
//! notebook its replica sends back (its page sandboxed as a version's).

use app::models::{Job, NotebookParameters, NotebookRunSpec, MAX_VERSION_BYTES};
use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use http::{header, HeaderValue, StatusCode};
use serde::Deserialize;
use utoipa::IntoParams;

use super::json::JsonBody;
use super::notebook_versions::{ipynb_attachment, page_response};
use crate::http::api_error::{ApiError, ErrorBody};
use crate::http::caller::{Caller, Writer};
use crate::http::AppState;

/// Which file, and which of its versions.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ParametersParams {
    /// The file's path in the workspace (`train.ipynb`).
    #[param(max_length = 1024, pattern = r"^([^/.][^/]*/)*[^/.][^/]*\.ipynb$")]
    path: String,
    /// The version's id; left out, the file's newest.
    version: Option<i64>,
}

/// The parameters a notebook file declares in its cell tagged
/// `parameters`, each typed from its default: what a run takes.
#[utoipa::path(get, path = "/api/v1/notebooks/{name}/parameters", tag = "notebooks",
    params(("name" = String, Path, description = "The notebook's name"), ParametersParams),
    responses(
        (status = 200, description = "Its parameters (none without a parameters cell)", body = NotebookParameters),
        (status = 400, description = "Not a notebook file's path", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "No such notebook of the caller's, no such version, or the file has none yet", body = ErrorBody),
    ))]
pub async fn parameters(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path(name): Path<String>,
    params: Result<Query<ParametersParams>, QueryRejection>,
) -> Result<Json<NotebookParameters>, ApiError> {
    let Query(params) = params?;
    Ok(Json(
        app::use_cases::notebook_runs::notebook_parameters(
            &state.services,
            &who.me,
            &name,
            &params.path,
            params.version,
        )
        .await?,
    ))
}

/// Runs a version of a notebook file as a job: one replica runs it with
/// papermill, the values injected after its parameters cell; the job
/// counts against the quota as any job does.
#[utoipa::path(post, path = "/api/v1/notebooks/{name}/runs", tag = "notebooks",
    params(("name" = String, Path, description = "The notebook's name")),
    request_body = NotebookRunSpec,
    responses(
        (status = 201, description = "The run's job; `Location` is its URL", body = Job),
        (status = 400, description = "A bad field or value, named in `field`", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "A viewer, or over the account's quota", body = ErrorBody),
        (status = 404, description = "No such notebook of the caller's, no such version, or the file has none yet", body = ErrorBody),
        (status = 409, description = "The job's name is taken", body = ErrorBody),
    ))]
pub async fn run(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(name): Path<String>,
    spec: Result<JsonBody<NotebookRunSpec>, ApiError>,
) -> Result<Response, ApiError> {
    let JsonBody(spec) = spec?;
    let job =
        app::use_cases::notebook_runs::run_notebook(&state.services, &who, &name, spec).await?;
    tracing::info!(account = %who.me.account.name, notebook = %name, job = %job.name, user = %who.me.email, "notebook run submitted");
    let mut response = (StatusCode::CREATED, Json(&job)).into_response();
    if let Ok(location) = HeaderValue::from_str(&format!("/api/v1/jobs/{}", job.name)) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    Ok(response)
}

/// The notebook a run's job runs: the version as it took it.
#[utoipa::path(get, path = "/api/v1/jobs/{name}/notebook/input", tag = "jobs",
    params(("name" = String, Path, description = "The job's name")),
    responses(
        (status = 200, description = "The .ipynb file", content_type = "application/x-ipynb+json"),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "No such job in this account, or it runs no notebook", body = ErrorBody),
    ))]
pub async fn input(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let services = &state.services;
    let bytes = app::use_cases::notebook_runs::run_input(services, &who.me.account, &name).await?;
    Ok(ipynb_attachment(&format!("{name}-input.ipynb"), bytes))
}

/// The run's executed notebook so far: each cell's outputs as it ran,
/// papermill's marks on them (404 until its replica sent one).
#[utoipa::path(get, path = "/api/v1/jobs/{name}/notebook/output", tag = "jobs",
    params(("name" = String, Path, description = "The job's name")),
    responses(
        (status = 200, description = "The .ipynb file", content_type = "application/x-ipynb+json"),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "No such job, it runs no notebook, or none was sent yet", body = ErrorBody),
    ))]
pub async fn output(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let services = &state.services;
    let bytes = app::use_cases::notebook_runs::run_output(services, &who.me.account, &name).await?;
    Ok(ipynb_attachment(&format!("{name}.ipynb"), bytes))
}

/// What the run's replica sends: its executed notebook so far (after each
/// cell, and at the end). The job's own token only.
#[utoipa::path(put, path = "/api/v1/jobs/{name}/notebook/output", tag = "jobs",
    params(("name" = String, Path, description = "The job's name")),
    request_body(content = String, content_type = "application/x-ipynb+json",
        description = "The notebook's JSON (at most 64 MiB)"),
    responses(
        (status = 204, description = "Kept"),
        (status = 400, description = "Not a notebook, or over 64 MiB", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "Not the job's own token", body = ErrorBody),
        (status = 404, description = "No such job in this account, or it runs no notebook", body = ErrorBody),
    ))]
pub async fn save_output(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(name): Path<String>,
    body: Body,
) -> Result<StatusCode, ApiError> {
    // Read here, not by an extractor: the API's body limit is the metrics'.
    let bytes = axum::body::to_bytes(body, MAX_VERSION_BYTES + 1)
        .await
        .map_err(|_| {
            app::error::AppError::invalid(
                "notebook",
                "The notebook is over 64 MiB, or it did not arrive whole.",
            )
        })?;
    app::use_cases::notebook_runs::save_run_output(&state.services, &who, &name, bytes.to_vec())
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The run's executed notebook as a page (nbconvert's HTML without
/// scripts, served so that nothing in it runs or loads).
#[utoipa::path(get, path = "/api/v1/jobs/{name}/notebook/output/html", tag = "jobs",
    params(("name" = String, Path, description = "The job's name")),
    responses(
        (status = 200, description = "The page", content_type = "text/html"),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "No such job, it runs no notebook, or none was sent yet", body = ErrorBody),
        (status = 503, description = "nbconvert is being prepared; try again", body = ErrorBody),
    ))]
pub async fn output_page(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let services = &state.services;
    let page =
        app::use_cases::notebook_runs::run_output_html(services, &who.me.account, &name).await?;
    Ok(page_response(page))
}
