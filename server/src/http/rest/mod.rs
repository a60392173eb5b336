//! `/api/v1`: the REST API for the CLI, the SDK and scripts.
//!
//! Routes are registered through `utoipa_axum`, which records each handler's
//! `#[utoipa::path]` as it adds the route: the OpenAPI document served at
//! `/api/v1/openapi.json` is built from the very routes that answer, so the
//! two cannot drift apart.

mod account;
mod alerts;
mod archive;
pub mod assets;
mod cluster;
mod compare;
mod contract;
mod environments;
mod experiments;
mod jobs;
mod json;
mod lineage;
mod local_runs;
mod members;
pub mod metrics;
mod notebook_runs;
mod notebook_shares;
mod notebook_versions;
mod notebooks;
mod notifications;
mod operations;
mod pipelines;
mod schedules;
mod scorings;
mod secrets;
mod serving;
mod templates;
mod usage;

use app::error::AppError;
use app::models::Me;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::api_error::{ApiError, ErrorBody};
use super::AppState;
use crate::http::caller::Caller;

/// The OpenAPI document's fixed parts; the paths come from the router.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "PaddleCloud Console API",
        description = "Submit and watch PaddlePaddle training jobs. Authenticate with \
                       `Authorization: Bearer <access key>` (create keys on the Account page, \
                       or with `paddlecloud admin create-key`). Errors are \
                       `{\"error\": {\"code\", \"message\", \"field\"}}` with a 4xx status."
    ),
    // A tag or a file path may contain `/`, which the router matches with a
    // wildcard that OpenAPI cannot spell: these paths are listed here and
    // routed by hand.
    paths(metrics::series, metrics::ship_file, assets::put_file, assets::get_file, assets::delete_file,
          assets::shared_file),
    // Schemas only parameters name are not collected from the routes.
    components(schemas(ErrorBody, app::models::JobSort, metrics::SeriesFormat)),
    modifiers(&AccessKeyScheme),
    security(("access_key" = [])),
    tags((name = "jobs", description = "Distributed training jobs"),
         (name = "metrics", description = "PaddleBoard: training metrics of jobs"),
         (name = "files", description = "Datasets and models: files, versions, sharing"),
         (name = "usage", description = "Resource use of jobs, quota, CPU/GPU hours"),
         (name = "lineage", description = "What datasets, jobs, model versions and serving instances came from and what came of them"),
         (name = "serving", description = "Models served over HTTP: launch, scale, release by degrees (canary, shadow, promote, roll back), stop, traffic"),
         (name = "notebooks", description = "Private JupyterLab servers: create, start, stop, keep running, delete; the versions of their notebook files: history, a version's file or page, two compared, restore"),
         (name = "environments", description = "Environment profiles: an image and pip requirements, saved in immutable versions, built locally from PyPI"),
         (name = "pipelines", description = "Pipeline runs: a graph of jobs submitted, watched, stopped and retried as one"),
         (name = "scorings", description = "Batch scoring: a model version over a dataset version as a job of N replicas, writing a new dataset version; progress; retry"),
         (name = "schedules", description = "Templates, pipelines and notebook files run on a cron schedule in a timezone"),
         (name = "secrets", description = "The account's secrets: set by owners, used by name in job, template, notebook and serving specs as variables or files; values are never returned"),
         (name = "alerts", description = "Metric alerts: rules on PaddleBoard tags (NaN or infinite, a threshold, a silence) and the alerts they raised"),
         (name = "notifications", description = "Who is told of what: subscriptions by email or signed webhook, and the log of deliveries"),
         (name = "experiments", description = "Experiments: a search over a template's parameters for an objective (grid, random, TPE; early stopping), its trials ordinary jobs"),
         (name = "local-runs", description = "Programs run outside the console reporting themselves as jobs: start, output, heartbeats, end"),
         (name = "templates", description = "Experiment templates: job specs with typed parameters, saved in immutable versions, run with values"),
         (name = "account", description = "Who is calling, passwords, resets, the audit log"),
         (name = "operations", description = "For operators: the console's own metrics (Prometheus)"))
)]
struct ApiDoc;

struct AccessKeyScheme;

impl Modify for AccessKeyScheme {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "access_key",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("pck_<64 hex digits>")
                    .build(),
            ),
        );
    }
}

/// The routes and the document that describes them (as served).
pub fn api() -> (Router<AppState>, serde_json::Value) {
    let (routes, doc) = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(me))
        .routes(routes!(account::change_password))
        .routes(routes!(account::request_reset))
        .routes(routes!(account::complete_reset))
        .routes(routes!(account::confirm_email))
        .routes(routes!(account::resend_confirmation))
        .routes(routes!(account::admin_reset_link))
        .routes(routes!(account::admin_accounts))
        .routes(routes!(account::admin_idle_gpus))
        .routes(routes!(account::audit))
        .routes(routes!(account::audit_csv))
        .routes(routes!(members::my_accounts))
        .routes(routes!(members::list))
        .routes(routes!(members::invite))
        .routes(routes!(members::withdraw))
        .routes(routes!(members::change_role))
        .routes(routes!(members::set_caps))
        .routes(routes!(members::set_priority))
        .routes(routes!(members::remove))
        .routes(routes!(compare::compare_csv))
        .routes(routes!(jobs::list, jobs::submit))
        .routes(routes!(jobs::get_one, jobs::delete))
        .routes(routes!(jobs::stop))
        .routes(routes!(jobs::stack_dump))
        .routes(routes!(jobs::detail))
        .routes(routes!(jobs::pods))
        .routes(routes!(jobs::pod_log))
        .routes(routes!(cluster::capacity))
        .routes(routes!(cluster::queue))
        .routes(routes!(metrics::append, metrics::tags))
        .routes(routes!(usage::resources))
        .routes(routes!(usage::quota, usage::set_quota))
        .routes(routes!(usage::usage))
        .routes(routes!(usage::usage_csv))
        .routes(routes!(serving::list, serving::launch))
        .routes(routes!(serving::get_one, serving::delete))
        .routes(routes!(serving::scale))
        .routes(routes!(serving::stop))
        .routes(routes!(serving::traffic))
        .routes(routes!(lineage::lineage))
        .routes(routes!(serving::release))
        .routes(routes!(serving::shadow_calls))
        .routes(routes!(notebooks::list, notebooks::create))
        .routes(routes!(notebooks::get_one, notebooks::delete))
        .routes(routes!(notebooks::start))
        .routes(routes!(notebooks::stop))
        .routes(routes!(notebooks::keep))
        .routes(routes!(notebook_versions::history))
        .routes(routes!(notebook_versions::file))
        .routes(routes!(notebook_versions::page))
        .routes(routes!(notebook_versions::diff))
        .routes(routes!(notebook_versions::restore))
        .routes(routes!(notebook_runs::parameters))
        .routes(routes!(notebook_runs::run))
        .routes(routes!(notebook_runs::input))
        .routes(routes!(notebook_runs::output, notebook_runs::save_output))
        .routes(routes!(notebook_runs::output_page))
        .routes(routes!(scorings::start))
        .routes(routes!(scorings::progress))
        .routes(routes!(scorings::retry))
        .routes(routes!(notebook_shares::shares, notebook_shares::share))
        .routes(routes!(notebook_shares::revoke))
        .routes(routes!(notebook_shares::shared_with_me))
        .routes(routes!(notebook_shares::share_file))
        .routes(routes!(notebook_shares::share_page))
        .routes(routes!(notebook_shares::share_copy))
        .routes(routes!(notebook_shares::link))
        .routes(routes!(notebook_shares::link_file))
        .routes(routes!(notebook_shares::link_page))
        .routes(routes!(notebook_shares::link_copy))
        .routes(routes!(templates::list, templates::save))
        .routes(routes!(templates::get_one))
        .routes(routes!(templates::run))
        .routes(routes!(templates::publish))
        .routes(routes!(operations::metrics))
        .routes(routes!(templates::notebook))
        .routes(routes!(templates::notebook_page))
        .routes(routes!(environments::list, environments::save))
        .routes(routes!(environments::get_one))
        .routes(routes!(environments::publish))
        .routes(routes!(pipelines::list, pipelines::submit))
        .routes(routes!(pipelines::get_one))
        .routes(routes!(pipelines::stop))
        .routes(routes!(pipelines::retry))
        .routes(routes!(schedules::list, schedules::create))
        .routes(routes!(schedules::get_one, schedules::delete))
        .routes(routes!(schedules::pause))
        .routes(routes!(schedules::resume))
        .routes(routes!(notifications::list, notifications::create))
        .routes(routes!(notifications::delete))
        .routes(routes!(notifications::test))
        .routes(routes!(notifications::deliveries))
        .routes(routes!(secrets::list))
        .routes(routes!(secrets::set, secrets::delete))
        .routes(routes!(alerts::list, alerts::create))
        .routes(routes!(alerts::delete))
        .routes(routes!(alerts::alerts))
        .routes(routes!(experiments::list, experiments::create))
        .routes(routes!(experiments::get_one))
        .routes(routes!(experiments::best))
        .routes(routes!(experiments::pause))
        .routes(routes!(experiments::resume))
        .routes(routes!(experiments::stop))
        .routes(routes!(experiments::extend))
        .routes(routes!(experiments::retry))
        .routes(routes!(local_runs::start))
        .routes(routes!(local_runs::get_one))
        .routes(routes!(local_runs::params))
        .routes(routes!(local_runs::log))
        .routes(routes!(local_runs::heartbeat))
        .routes(routes!(local_runs::end))
        .routes(routes!(assets::list, assets::create))
        .routes(routes!(assets::get_one, assets::update, assets::delete))
        .routes(routes!(assets::list_dir))
        .routes(routes!(assets::archive))
        .routes(routes!(assets::shares, assets::share))
        .routes(routes!(assets::revoke))
        .routes(routes!(assets::set_public))
        .routes(routes!(assets::versions, assets::create_version))
        .routes(routes!(assets::finish_version))
        .routes(routes!(assets::tag_version))
        .routes(routes!(assets::aliases))
        .routes(routes!(assets::set_alias, assets::delete_alias))
        .routes(routes!(assets::alias_history))
        .routes(routes!(assets::shared))
        .routes(routes!(assets::shared_archive))
        // A batch of 10,000 points with long tags is larger than axum's 2 MB default.
        .layer(axum::extract::DefaultBodyLimit::max(
            metrics::MAX_BATCH_BYTES,
        ))
        .split_for_parts();
    (routes, contract::finish(doc))
}

/// `/api/v1` with `openapi.json` beside it, and JSON 404s for unknown API paths.
pub fn router() -> Router<AppState> {
    let (routes, doc) = api();
    // Kept as the bytes it is served as, not as a JSON tree (which held
    // about a megabyte for the life of the process).
    let doc = bytes::Bytes::from(serde_json::to_vec(&doc).unwrap_or_default());
    routes
        .route("/api/v1/jobs/{name}/metrics/{*tag}", get(metrics::series))
        .route(
            "/api/v1/jobs/{name}/metric-files/{*file}",
            post(metrics::ship_file).layer(axum::extract::DefaultBodyLimit::max(
                crate::metric_files::shipped::MAX_PIECE + 1,
            )),
        )
        // Uploads stream: no body limit here; the store enforces
        // --max-upload-bytes as the bytes arrive.
        .route(
            "/api/v1/{kind}/{owner}/{name}/files/{*path}",
            get(assets::get_file)
                .put(assets::put_file)
                .delete(assets::delete_file)
                .layer(axum::extract::DefaultBodyLimit::disable()),
        )
        .route(
            "/api/v1/shared/{token}/files/{*path}",
            get(assets::shared_file),
        )
        .route(
            "/api/v1/openapi.json",
            get(move || {
                let doc = doc.clone();
                async move { ([(http::header::CONTENT_TYPE, "application/json")], doc) }
            }),
        )
        .layer(axum::middleware::map_response(json::json_errors))
}

/// The answer to a path under `/api/v1/` that no route takes. (A catch-all
/// route cannot sit beside `/api/v1/{kind}/…`, so the site's fallback asks.)
pub fn unknown_route() -> axum::response::Response {
    ApiError(AppError::not_found("API route")).into_response()
}

/// The user and account a key (or session) acts as: what `paddlecloud` checks
/// a credentials file with.
#[utoipa::path(
    get,
    path = "/api/v1/me",
    tag = "account",
    responses(
        (status = 200, description = "The caller", body = Me),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
    )
)]
async fn me(Caller(who): Caller) -> Json<Me> {
    Json(who.me)
}
