//! `/api/v1/templates`: save, list and read experiment templates, and run
//! one (`POST /api/v1/templates/<name>/jobs`), which makes a job from its
//! parameters' values.

use app::models::{Job, Publication, Template, TemplateList, TemplateRun, TemplateSpec};
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

/// Whose template (or environment), and which version.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WhichParams {
    /// The owning account (default: the caller's); another account's must
    /// be published.
    pub owner: Option<String>,
    /// The version (default: the newest).
    pub version: Option<u32>,
}

/// A `201 Created` with `Location: location` and `body`.
pub(super) fn created(location: &str, body: impl serde::Serialize) -> Response {
    let mut response = (StatusCode::CREATED, Json(body)).into_response();
    if let Ok(location) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    response
}

/// The account's templates, then those published for everyone (the
/// library the console ships among them), each at its newest version.
#[utoipa::path(get, path = "/api/v1/templates", tag = "templates",
    responses(
        (status = 200, description = "The templates", body = TemplateList),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
    ))]
pub async fn list(
    State(state): State<AppState>,
    Caller(who): Caller,
) -> Result<Json<TemplateList>, ApiError> {
    Ok(Json(state.services.templates.list(&who.me.account).await?))
}

/// Saves a template: the next version of its name (1 for a new name).
/// Earlier versions stay as they were, and so do jobs made from them.
#[utoipa::path(post, path = "/api/v1/templates", tag = "templates", request_body = TemplateSpec,
    responses(
        (status = 201, description = "Saved; `Location` is this version's URL", body = Template),
        (status = 400, description = "A bad field, named in `field` (e.g. `parameters[1].default`, `job`)", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "A viewer", body = ErrorBody),
    ))]
pub async fn save(
    State(state): State<AppState>,
    Writer(who): Writer,
    spec: Result<JsonBody<TemplateSpec>, ApiError>,
) -> Result<Response, ApiError> {
    let JsonBody(spec) = spec?;
    let saved = app::use_cases::save_template(&state.services, &who, spec).await?;
    let location = format!(
        "/api/v1/templates/{}?version={}",
        saved.spec.name, saved.version
    );
    Ok(created(&location, &saved))
}

/// One template: its newest version, or `?version=N`; another account's
/// published one with `?owner=`.
#[utoipa::path(get, path = "/api/v1/templates/{name}", tag = "templates",
    params(("name" = String, Path, description = "The template's name"), WhichParams),
    responses(
        (status = 200, description = "The template", body = Template),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "No such template (or version) in this account", body = ErrorBody),
    ))]
pub async fn get_one(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path(name): Path<String>,
    which: Result<Query<WhichParams>, QueryRejection>,
) -> Result<Json<Template>, ApiError> {
    let Query(which) = which?;
    Ok(Json(
        state
            .services
            .templates
            .get(
                &who.me.account,
                which.owner.as_deref(),
                &name,
                which.version,
            )
            .await?,
    ))
}

/// The notebook a notebook template runs (the copy kept with this
/// version), as the `.ipynb` file.
#[utoipa::path(get, path = "/api/v1/templates/{name}/notebook", tag = "templates",
    params(("name" = String, Path, description = "The template's name"), WhichParams),
    responses(
        (status = 200, description = "The .ipynb file", content_type = "application/x-ipynb+json"),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "No such template (or version) in this account, or it runs no notebook", body = ErrorBody),
    ))]
pub async fn notebook(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path(name): Path<String>,
    which: Result<Query<WhichParams>, QueryRejection>,
) -> Result<Response, ApiError> {
    let (file, bytes) = notebook_of(&state, &who, &name, which, false).await?;
    Ok(super::notebook_versions::ipynb_attachment(&file, bytes))
}

/// The notebook a notebook template runs, as a page (nbconvert's HTML
/// without scripts, served so that nothing in it runs or loads).
#[utoipa::path(get, path = "/api/v1/templates/{name}/notebook/html", tag = "templates",
    params(("name" = String, Path, description = "The template's name"), WhichParams),
    responses(
        (status = 200, description = "The page", content_type = "text/html"),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "No such template (or version) in this account, or it runs no notebook", body = ErrorBody),
        (status = 503, description = "nbconvert is being prepared; try again", body = ErrorBody),
    ))]
pub async fn notebook_page(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path(name): Path<String>,
    which: Result<Query<WhichParams>, QueryRejection>,
) -> Result<Response, ApiError> {
    let (_, page) = notebook_of(&state, &who, &name, which, true).await?;
    Ok(super::notebook_versions::page_response(page))
}

/// The file's name and the notebook (or its page) template `name` runs.
async fn notebook_of(
    state: &AppState,
    who: &app::ports::Principal,
    name: &str,
    which: Result<Query<WhichParams>, QueryRejection>,
    html: bool,
) -> Result<(String, Vec<u8>), ApiError> {
    let Query(which) = which?;
    Ok(app::use_cases::templates::template_notebook(
        &state.services,
        who,
        which.owner.as_deref(),
        name,
        which.version,
        html,
    )
    .await?)
}

/// Publishes a template (every version) for every account, or takes it
/// back. Only a site admin may.
#[utoipa::path(post, path = "/api/v1/templates/{name}/publish", tag = "templates",
    params(("name" = String, Path, description = "The template's name")),
    request_body = Publication,
    responses(
        (status = 200, description = "The template's newest version, as published now", body = Template),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "Not a site admin", body = ErrorBody),
        (status = 404, description = "No such template", body = ErrorBody),
    ))]
pub async fn publish(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(name): Path<String>,
    body: Result<JsonBody<Publication>, ApiError>,
) -> Result<Json<Template>, ApiError> {
    let JsonBody(body) = body?;
    let owner = body.owner.unwrap_or_else(|| who.me.account.name.clone());
    Ok(Json(
        state
            .services
            .templates
            .publish(&who.me, &owner, &name, body.public)
            .await?,
    ))
}

/// Runs a template: checks every value against its parameter (a bad one
/// is a 400 naming `values.<parameter>`), makes the job and submits it
/// within the quota. The job's spec records the template version and the
/// values (`spec.template`).
#[utoipa::path(post, path = "/api/v1/templates/{name}/jobs", tag = "templates",
    params(("name" = String, Path, description = "The template's name")),
    request_body = TemplateRun,
    responses(
        (status = 201, description = "The job; `Location` is its URL", body = Job),
        (status = 400, description = "A bad value, named in `field` (`values.<parameter>`), or a job the values make invalid", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "A viewer, or over the account's quota: what is over and by how much", body = ErrorBody),
        (status = 404, description = "No such template (or version) that the account can read", body = ErrorBody),
        (status = 409, description = "The job's name is taken", body = ErrorBody),
    ))]
pub async fn run(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(name): Path<String>,
    run: Result<JsonBody<TemplateRun>, ApiError>,
) -> Result<Response, ApiError> {
    let JsonBody(run) = run?;
    let job = app::use_cases::run_template(&state.services, &who, &name, run).await?;
    Ok(created(&format!("/api/v1/jobs/{}", job.name), &job))
}
