//! Counting every request for `/metrics`: the router tags a matched
//! request's response with its route (`/api/v1/jobs/{name}`, never the raw
//! path, so the series stay few), and the outermost layer counts the
//! request and its time to the response's headers under that route, or
//! `other` (static files, unknown paths).

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;

use crate::telemetry::Telemetry;

/// The route a response answered, as the router matched it.
#[derive(Clone)]
struct Route(Arc<str>);

/// Tags the response with the matched route (a route layer: it runs only
/// for matched routes, after matching).
pub async fn tag_route(request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|m| Route(m.as_str().into()));
    let mut response = next.run(request).await;
    if let Some(route) = route {
        response.extensions_mut().insert(route);
    }
    response
}

/// Counts the request under its route, method and status, with its time.
pub async fn count_request(
    State(telemetry): State<Arc<Telemetry>>,
    request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let response = next.run(request).await;
    let route = response
        .extensions()
        .get::<Route>()
        .map_or("other", |r| &r.0);
    telemetry.request(
        method.as_str(),
        route,
        response.status().as_u16(),
        started.elapsed().as_secs_f64(),
    );
    response
}
