//! The endpoint of every serving instance, `/serve/<account>/<name>/<path>`:
//! the caller must belong to the account (session or access key); the
//! request goes to the next ready replica (round robin) and is counted with
//! its latency, so the charts measure what every caller saw.

use std::time::Instant;

use app::error::AppError;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Request, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, Method, StatusCode};

use super::api_error::ApiError;
use super::caller::Caller;
use crate::backend::serving::{http_client, Upstream};
use crate::serving::ServingService;

/// Largest request body forwarded (predict calls carry JSON tensors).
pub const MAX_BODY: usize = 64 * 1024 * 1024;

/// Headers that describe one hop, not the request: never forwarded.
const HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
    "authorization",
    "cookie",
    "content-length",
];

fn forwardable(
    headers: &HeaderMap,
) -> impl Iterator<Item = (&http::HeaderName, &http::HeaderValue)> {
    headers.iter().filter(|(k, _)| !HOP.contains(&k.as_str()))
}

/// `ANY /serve/{account}/{name}` and `/serve/{account}/{name}/{*path}`.
pub async fn forward(
    State(serving): State<ServingService>,
    Caller(who): Caller,
    Path(params): Path<Vec<(String, String)>>,
    request: Request,
) -> Response {
    let get = |k: &str| {
        params
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let (account, name, path) = (get("account"), get("name"), get("path"));
    // Another account's instance is "not found", never "forbidden".
    if who.me.account.name != account {
        return ApiError(AppError::not_found(format!("Serving instance “{name}”"))).into_response();
    }
    let (id, upstream) = match serving.route(&who.me.account, &name).await {
        Ok(r) => r,
        Err(err) => return ApiError(err).into_response(),
    };
    let (parts, body) = request.into_parts();
    let body = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(b) => b,
        Err(_) => {
            return ApiError(AppError::invalid(
                "body",
                format!("A request to a model is at most {} MiB.", MAX_BODY >> 20),
            ))
            .into_response()
        }
    };
    let started = Instant::now();
    let Some(upstream) = upstream else {
        serving.record(id, started.elapsed(), true);
        return unavailable(&name);
    };
    let query = parts
        .uri
        .query()
        .map(|q| format!("?{q}"))
        .unwrap_or_default();
    let answer = match upstream {
        Upstream::Http(base) => {
            send_http(&base, &path, &query, parts.method, &parts.headers, body).await
        }
        Upstream::Kube {
            client,
            namespace,
            service,
        } => {
            let uri = format!(
                "/api/v1/namespaces/{namespace}/services/{service}:http/proxy/{path}{query}"
            );
            send_kube(&client, &uri, parts.method, &parts.headers, body).await
        }
    };
    let response = match answer {
        Ok(r) => r,
        Err(why) => {
            tracing::warn!(serving = %name, error = %why, "forwarding to a replica");
            (
                StatusCode::BAD_GATEWAY,
                axum::Json(serde_json::json!({"error": {
                    "code": "unavailable",
                    "message": format!("The replica of “{name}” did not answer: {why}"),
                    "field": null
                }})),
            )
                .into_response()
        }
    };
    serving.record(id, started.elapsed(), response.status().is_server_error());
    response
}

fn unavailable(name: &str) -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(http::header::RETRY_AFTER, "2")],
        axum::Json(serde_json::json!({"error": {
            "code": "unavailable",
            "message": format!("No replica of “{name}” is ready yet; try again shortly."),
            "field": null
        }})),
    )
        .into_response()
}

fn client() -> &'static reqwest::Client {
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    CLIENT.get_or_init(|| http_client(std::time::Duration::from_secs(120)).unwrap_or_default())
}

async fn send_http(
    base: &str,
    path: &str,
    query: &str,
    method: Method,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<Response, String> {
    let mut request = client().request(method, format!("{base}/{path}{query}"));
    for (k, v) in forwardable(headers) {
        request = request.header(k, v);
    }
    let answer = request.body(body).send().await.map_err(|e| e.to_string())?;
    let status = answer.status();
    let mut out = Response::builder().status(status);
    for (k, v) in forwardable(answer.headers()) {
        out = out.header(k, v);
    }
    let bytes = answer.bytes().await.map_err(|e| e.to_string())?;
    out.body(Body::from(bytes)).map_err(|e| e.to_string())
}

async fn send_kube(
    client: &kube::Client,
    uri: &str,
    method: Method,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<Response, String> {
    let mut request = http::Request::builder().method(method).uri(uri);
    for (k, v) in forwardable(headers) {
        request = request.header(k, v);
    }
    let request = request.body(body.to_vec()).map_err(|e| e.to_string())?;
    let answer = client
        .send(request.map(kube::client::Body::from))
        .await
        .map_err(|e| e.to_string())?;
    let (parts, body) = answer.into_parts();
    let bytes = axum::body::to_bytes(Body::new(body), MAX_BODY)
        .await
        .map_err(|e| e.to_string())?;
    let mut out = Response::builder().status(parts.status);
    for (k, v) in forwardable(&parts.headers) {
        out = out.header(k, v);
    }
    out.body(Body::from(bytes)).map_err(|e| e.to_string())
}
