//! The HTTP surface: pages (SSR + hydration), server functions, static files,
//! health, and the layers that resolve who is asking.

mod session;
mod status;

use std::sync::Arc;

use app::ports::Services;
use app::{shell, App};
use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use leptos::prelude::*;
use leptos_axum::{generate_route_list, handle_server_fns_with_context, LeptosRoutes};

/// What the handlers share.
#[derive(Clone)]
pub struct AppState {
    /// Site settings from `Leptos.toml` (site root, bundle name, address).
    pub leptos: LeptosOptions,
    /// The ports' implementations.
    pub services: Services,
}

/// The server's version, as `/healthz` reports it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Builds the whole router; tests drive it without a socket.
pub fn router(state: AppState) -> Router {
    let routes = generate_route_list(App);
    let public_paths = Arc::new(session::PageGuard::new(&routes));
    let services = state.services.clone();
    let fn_services = services.clone();
    let page_services = services.clone();
    let leptos = state.leptos.clone();

    Router::new()
        .route("/healthz", get(healthz))
        .route(
            "/api/{*fn_name}",
            get(server_fn_handler).post(server_fn_handler),
        )
        .leptos_routes_with_context(
            &state,
            routes,
            move || provide_context(page_services.clone()),
            {
                let leptos = leptos.clone();
                move || shell(leptos.clone())
            },
        )
        .fallback(leptos_axum::file_and_error_handler::<AppState, _>(shell))
        .layer(axum::middleware::from_fn(status::server_fn_status))
        .layer(axum::middleware::from_fn_with_state(
            public_paths,
            session::require_sign_in,
        ))
        .layer(axum::middleware::from_fn_with_state(
            fn_services,
            session::resolve_session,
        ))
        .layer(tower_http::compression::CompressionLayer::new())
        .with_state(state)
}

async fn server_fn_handler(
    State(state): State<AppState>,
    request: axum::extract::Request,
) -> impl axum::response::IntoResponse {
    let services = state.services.clone();
    handle_server_fns_with_context(move || provide_context(services.clone()), request).await
}

async fn healthz() -> Json<serde_json::Value> {
    Json(serde_json::json!({ "status": "ok", "version": VERSION }))
}

impl axum::extract::FromRef<AppState> for LeptosOptions {
    fn from_ref(state: &AppState) -> Self {
        state.leptos.clone()
    }
}
