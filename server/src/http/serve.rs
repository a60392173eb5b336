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
    let query = parts
        .uri
        .query()
        .map(|q| format!("?{q}"))
        .unwrap_or_default();
    let call = Call {
        path: &path,
        query: &query,
        method: &parts.method,
        headers: &parts.headers,
        body: &body,
    };
    let started = Instant::now();
    let mut attempt = 0;
    loop {
        let route = match serving.route(&who.me.account, &name).await {
            Ok(r) => r,
            Err(err) => return ApiError(err).into_response(),
        };
        let Some((version, upstream)) = route.primary else {
            // A retry waits for a replica to come back, a first try does not.
            if attempt > 0 && attempt < RETRIES {
                attempt += 1;
                tokio::time::sleep(RETRY_PAUSE * attempt).await;
                continue;
            }
            serving.record(route.id, 0, false, started.elapsed(), true);
            return unavailable(&name);
        };
        let answer = call.send(&upstream).await;
        let retry = match &answer {
            Err(_) => true,
            // The API server's proxy, when the pod it picked is going away.
            Ok(a) => matches!(upstream, Upstream::Kube { .. }) && gone(a.status),
        };
        if retry && attempt + 1 < RETRIES {
            attempt += 1;
            tokio::time::sleep(RETRY_PAUSE * attempt).await;
            continue;
        }
        let answer = match answer {
            Ok(a) => a,
            Err(why) => {
                tracing::warn!(serving = %name, error = %why, "forwarding to a replica");
                serving.record(route.id, version, false, started.elapsed(), true);
                return (
                    StatusCode::BAD_GATEWAY,
                    axum::Json(serde_json::json!({"error": {
                        "code": "unavailable",
                        "message": format!("The replica of “{name}” did not answer: {why}"),
                        "field": null
                    }})),
                )
                    .into_response();
            }
        };
        let primary_ms = started.elapsed();
        serving.record(
            route.id,
            version,
            false,
            primary_ms,
            answer.status.is_server_error(),
        );
        if let Some((shadow_version, shadow)) = route.shadow {
            mirror(
                &serving,
                route.id,
                (shadow_version, shadow),
                &call,
                &answer,
                primary_ms,
            );
        }
        return answer.into_response();
    }
}

/// Tries of one call: a replica that went away (stopped by a roll, a scale
/// or a crash) gets the call retried on another.
const RETRIES: u32 = 6;
/// The pause before the n-th retry is n times this.
const RETRY_PAUSE: std::time::Duration = std::time::Duration::from_millis(100);

/// Whether the API server's proxy says the pod it chose is not there.
fn gone(status: StatusCode) -> bool {
    status == StatusCode::BAD_GATEWAY || status == StatusCode::SERVICE_UNAVAILABLE
}

/// One call as a client made it.
struct Call<'a> {
    path: &'a str,
    query: &'a str,
    method: &'a Method,
    headers: &'a HeaderMap,
    body: &'a Bytes,
}

/// What a replica answered.
#[derive(Clone)]
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl IntoResponse for Answer {
    fn into_response(self) -> Response {
        let mut out = Response::builder().status(self.status);
        for (k, v) in forwardable(&self.headers) {
            out = out.header(k, v);
        }
        out.body(Body::from(self.body))
            .unwrap_or_else(|_| StatusCode::BAD_GATEWAY.into_response())
    }
}

impl Call<'_> {
    async fn send(&self, upstream: &Upstream) -> Result<Answer, String> {
        match upstream {
            Upstream::Http(base) => send_http(base, self).await,
            Upstream::Kube {
                client,
                namespace,
                service,
            } => {
                let uri = format!(
                    "/api/v1/namespaces/{namespace}/services/{service}:http/proxy/{}{}",
                    self.path, self.query
                );
                send_kube(client, &uri, self).await
            }
        }
    }
}

/// Sends a copy of `call` to the shadow in the background, and records
/// what it answered beside `primary`.
fn mirror(
    serving: &ServingService,
    id: i64,
    (version, upstream): (u32, Upstream),
    call: &Call<'_>,
    primary: &Answer,
    primary_time: std::time::Duration,
) {
    let serving = serving.clone();
    let (path, query, method, headers, body) = (
        call.path.to_owned(),
        call.query.to_owned(),
        call.method.clone(),
        call.headers.clone(),
        call.body.clone(),
    );
    let primary = primary.clone();
    tokio::spawn(async move {
        let call = Call {
            path: &path,
            query: &query,
            method: &method,
            headers: &headers,
            body: &body,
        };
        let started = Instant::now();
        let answer = call.send(&upstream).await;
        let took = started.elapsed();
        let (status, text, agrees) = match &answer {
            Ok(a) => (
                a.status.as_u16(),
                app::models::excerpt(&a.body),
                a.status == primary.status && app::models::answers_agree(&a.body, &primary.body),
            ),
            Err(why) => (0, format!("No answer: {why}"), false),
        };
        serving.record(id, version, true, took, status == 0 || status >= 500);
        serving.record_shadow(
            id,
            app::models::ShadowCall {
                at: crate::time::now_ms(),
                version,
                path,
                primary_status: primary.status.as_u16(),
                shadow_status: status,
                primary_ms: primary_time.as_secs_f64() * 1000.0,
                shadow_ms: took.as_secs_f64() * 1000.0,
                agrees,
                request: app::models::excerpt(&body),
                primary: app::models::excerpt(&primary.body),
                shadow: text,
            },
        );
    });
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

async fn send_http(base: &str, call: &Call<'_>) -> Result<Answer, String> {
    let mut request = client().request(
        call.method.clone(),
        format!("{base}/{}{}", call.path, call.query),
    );
    for (k, v) in forwardable(call.headers) {
        request = request.header(k, v);
    }
    let answer = request
        .body(call.body.clone())
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let status = answer.status();
    let headers = answer.headers().clone();
    let body = answer.bytes().await.map_err(|e| e.to_string())?;
    Ok(Answer {
        status,
        headers,
        body,
    })
}

async fn send_kube(client: &kube::Client, uri: &str, call: &Call<'_>) -> Result<Answer, String> {
    let mut request = http::Request::builder()
        .method(call.method.clone())
        .uri(uri);
    for (k, v) in forwardable(call.headers) {
        request = request.header(k, v);
    }
    let request = request
        .body(call.body.to_vec())
        .map_err(|e| e.to_string())?;
    let answer = client
        .send(request.map(kube::client::Body::from))
        .await
        .map_err(|e| e.to_string())?;
    let (parts, body) = answer.into_parts();
    let body = axum::body::to_bytes(Body::new(body), MAX_BODY)
        .await
        .map_err(|e| e.to_string())?;
    Ok(Answer {
        status: parts.status,
        headers: parts.headers,
        body,
    })
}
