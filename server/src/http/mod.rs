//! The HTTP surface: pages (SSR + hydration), server functions, static files,
//! health, and the layers that resolve who is asking.

pub(crate) mod api_error;
mod board;
mod caller;
mod events;
mod keys;
mod lab;
mod mlflow;
mod oidc;
mod rest;
mod serve;
mod session;
mod status;
mod telemetry;
mod theme;
mod uploads;

use std::sync::Arc;

use app::ports::Services;
use app::{shell, App};
use axum::extract::State;
use axum::handler::Handler;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use leptos::prelude::*;
use leptos_axum::{generate_route_list, handle_server_fns_with_context, LeptosRoutes};
use tower_http::compression::predicate::{DefaultPredicate, NotForContentType, Predicate};
use tower_http::services::ServeDir;

/// What the handlers share.
#[derive(Clone)]
pub struct AppState {
    /// Site settings from `Leptos.toml` (site root, bundle name, address).
    pub leptos: LeptosOptions,
    /// The ports' implementations.
    pub services: Services,
    /// MLflow's experiments and runs (the tracking API only the server serves).
    pub mlflow: crate::mlflow::tracking::MlflowService,
    /// Serving, for the endpoint that forwards predict calls and counts them.
    pub serving: crate::serving::ServingService,
    /// Notebooks, for the proxy in front of their JupyterLab servers.
    pub notebooks: crate::notebooks::NotebookService,
    /// What other replicas on this database changed, for the live streams.
    pub changes: crate::storage::changes::ChangeFeed,
    /// The console's own metrics: counted here, served at `/metrics`.
    pub telemetry: Arc<crate::telemetry::Telemetry>,
    /// Single sign-on through an OpenID Connect provider, when set up.
    pub oidc: Option<Arc<crate::accounts::oidc::Oidc>>,
}

/// The server's version, as `/healthz` reports it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Builds the whole router; tests drive it without a socket.
///
/// Pages and server functions sit behind the session layers; static files
/// and `/healthz` do not, so fetching the wasm bundle costs no database look-up.
pub fn router(state: AppState) -> Router {
    let routes = generate_route_list(App);
    let guard = Arc::new(session::PageGuard::new(&routes));
    let page_services = state.services.clone();
    let console = Router::new()
        .route("/events/jobs", get(events::jobs))
        .route("/events/pipelines", get(events::pipelines))
        .route("/events/experiments", get(events::experiments))
        .route("/events/serving", get(events::serving))
        .route("/events/notebooks", get(events::notebooks))
        // Streams both ways: no body limit (uploads into the workspace).
        .route(
            "/notebooks/{account}/{name}/{*path}",
            axum::routing::any(lab::forward).layer(axum::extract::DefaultBodyLimit::disable()),
        )
        .route(
            "/serve/{account}/{name}",
            axum::routing::any(serve::forward),
        )
        .route(
            "/serve/{account}/{name}/{*path}",
            axum::routing::any(serve::forward),
        )
        .route("/events/log", get(events::log))
        .route("/account/keys", axum::routing::post(keys::create))
        .route("/auth/oidc/login", get(oidc::login))
        .route("/auth/oidc/callback", get(oidc::callback))
        .route(
            app::models::theme::ROUTE,
            axum::routing::post(theme::choose),
        )
        .route("/events/metrics", get(board::events))
        .route("/paddleboard/export.csv", get(board::export_csv))
        .route("/paddleboard/export.zip", get(board::export_zip))
        // Streams: no body limit here; the store enforces --max-upload-bytes.
        .route(
            "/upload/{kind}/{owner}/{name}",
            axum::routing::post(uploads::upload).layer(axum::extract::DefaultBodyLimit::disable()),
        )
        .merge(rest::router())
        .merge(mlflow::router().layer(axum::extract::DefaultBodyLimit::max(8 * 1024 * 1024)))
        .route(
            "/api/{*fn_name}",
            get(server_fn_handler).post(server_fn_handler),
        )
        .leptos_routes_with_context(
            &state,
            routes,
            move || provide_context(page_services.clone()),
            {
                let leptos = state.leptos.clone();
                move || shell(leptos.clone())
            },
        )
        .layer(axum::middleware::from_fn(status::server_fn_status))
        .layer(axum::middleware::from_fn_with_state(
            guard,
            session::require_sign_in,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.services.clone(),
            session::resolve_session,
        ));

    // Built assets, with the `.gz` copies scripts/build.sh makes; anything
    // else renders the app's 404 page.
    let not_found = leptos_axum::file_and_error_handler::<AppState, _>(shell);
    let site = ServeDir::new(&*state.leptos.site_root)
        .precompressed_gzip()
        .not_found_service(not_found.with_state(state.clone()));
    // The split bundle's module names carry no content hash: browsers must
    // revalidate (a cheap 304) so an upgrade never mixes old and new modules.
    let site = tower_http::set_header::SetResponseHeader::if_not_present(
        site,
        http::header::CACHE_CONTROL,
        http::HeaderValue::from_static("no-cache"),
    );

    let fallback = move |request: axum::extract::Request| {
        let site = site.clone();
        async move {
            if request.uri().path().starts_with("/api/v1/") {
                return rest::unknown_route();
            }
            match tower::ServiceExt::oneshot(site, request).await {
                Ok(response) => response.into_response(),
                Err(never) => match never {},
            }
        }
    };

    let telemetry = state.telemetry.clone();
    // On every response (pages also get their Content Security Policy, see
    // `app::components::security`): no referrer beyond this origin (shared
    // links carry their token in the path), no guessing of content types,
    // framed only by this origin. A route that sets its own keeps it.
    let same_origin = |name, value| {
        tower_http::set_header::SetResponseHeaderLayer::if_not_present(
            name,
            http::HeaderValue::from_static(value),
        )
    };
    Router::new()
        .route("/healthz", get(healthz))
        .merge(console)
        .route_layer(axum::middleware::from_fn(self::telemetry::tag_route))
        .fallback(fallback)
        // Followed logs are text/plain streams: compressing would hold back
        // chunks. The fastest level: answers are small and time matters more
        // than the last few percent (a chart's 100 KB of JSON: ~4× smaller
        // at a fraction of the default level's time).
        .layer(
            tower_http::compression::CompressionLayer::new()
                .quality(tower_http::CompressionLevel::Fastest)
                .compress_when(
                    DefaultPredicate::new()
                        .and(NotForContentType::const_new("text/plain"))
                        .and(not_a_download),
                ),
        )
        .layer(same_origin(http::header::REFERRER_POLICY, "same-origin"))
        .layer(same_origin(http::header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .layer(same_origin(http::header::X_FRAME_OPTIONS, "SAMEORIGIN"))
        .layer(axum::middleware::from_fn_with_state(
            telemetry,
            self::telemetry::count_request,
        ))
        .with_state(state)
}

/// Files people download (datasets, models, exports) go out as stored:
/// often compressed already, large, and read by `Range` to resume.
fn not_a_download(
    _: http::StatusCode,
    _: http::Version,
    headers: &http::HeaderMap,
    _: &http::Extensions,
) -> bool {
    !headers.contains_key(http::header::CONTENT_DISPOSITION)
        && !headers.contains_key(http::header::CONTENT_RANGE)
}

async fn server_fn_handler(
    State(state): State<AppState>,
    request: axum::extract::Request,
) -> axum::response::Response {
    // `/api/{*fn_name}` also catches REST paths no route takes.
    if request.uri().path().starts_with("/api/v1/") {
        return rest::unknown_route();
    }
    let services = state.services.clone();
    handle_server_fns_with_context(move || provide_context(services.clone()), request)
        .await
        .into_response()
}

async fn healthz() -> Json<serde_json::Value> {
    Json(serde_json::json!({ "status": "ok", "version": VERSION }))
}

impl axum::extract::FromRef<AppState> for crate::serving::ServingService {
    fn from_ref(state: &AppState) -> Self {
        state.serving.clone()
    }
}

impl axum::extract::FromRef<AppState> for crate::notebooks::NotebookService {
    fn from_ref(state: &AppState) -> Self {
        state.notebooks.clone()
    }
}

impl axum::extract::FromRef<AppState> for LeptosOptions {
    fn from_ref(state: &AppState) -> Self {
        state.leptos.clone()
    }
}
