//! `/notebooks/<account>/<name>/…`: the console as JupyterLab's reverse
//! proxy, for HTTP and WebSockets (kernels, terminals, events). The caller
//! must own the notebook, signed in (the session cookie) or with their
//! access key, sent as Jupyter's clients send a token (`Authorization:
//! Bearer|token <key>`, or `?token=<key>`); anyone else, another account's
//! members included, gets the same 404 as for a notebook that does not
//! exist. The request goes to the notebook's server with the same path
//! (the server runs under that base URL) and the notebook's Jupyter token
//! added: the server's identity provider (`paddlecloud.lab`) lets in that
//! token alone and puts no token in its pages, so neither the browser nor
//! a client ever holds it. Bodies stream both ways; an upgraded connection
//! is copied both ways until either side closes. A notebook file's save or
//! checkpoint that went through is kept as a version once the server has
//! answered (`notebooks::versions`).

use app::error::AppError;
use app::models::{is_versioned_path, VersionReason};
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::response::{IntoResponse, Redirect, Response};
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, StatusCode};
use hyper_util::rt::TokioIo;

use app::ports::Credential;

use super::api_error::ApiError;
use super::caller::Caller;
use crate::notebooks::{NotebookService, Route};

/// Headers about one hop, or the browser's own credentials: never sent on.
/// `origin` goes too: the console checks it, and Jupyter would compare it
/// with its own address, which the browser never sees.
const NOT_FORWARDED: &[&str] = &[
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
    "origin",
];

/// Headers about one hop in an answer.
const HOP_ANSWER: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "transfer-encoding",
    "trailer",
    "upgrade",
];

/// `ANY /notebooks/{account}/{name}/{*path}`.
pub async fn forward(
    State(notebooks): State<NotebookService>,
    caller: Option<Caller>,
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
    let (account, name) = (get("account"), get("name"));
    let Some(Caller(who)) = caller else {
        return signed_out(&request, &name);
    };
    let upgrade = wants_upgrade(request.headers());
    // A browser's cookie goes with any page's request; a key only with a
    // program's that holds it, which no other site can make it send.
    let browser = matches!(who.credential, Credential::Session(_));
    if browser && (upgrade || !is_safe(request.method())) && !same_origin(request.headers()) {
        return ApiError(AppError::forbidden(
            "This request came from another site; open the notebook from the console.",
        ))
        .into_response();
    }
    let route = match notebooks.route(&who, &account, &name).await {
        Ok(route) => route,
        Err(err) => return ApiError(err).into_response(),
    };
    let watched = if upgrade {
        None
    } else {
        Watched::of(request.method(), &get("path"))
    };
    match send(&route, request, upgrade).await {
        Ok(response) => {
            if response.status().is_success() {
                match &watched {
                    Some(Watched::Save(file)) => {
                        notebooks
                            .saved(&route, &who.me, file, VersionReason::Save)
                            .await
                    }
                    Some(Watched::Checkpoint(file)) => {
                        notebooks
                            .saved(&route, &who.me, file, VersionReason::Checkpoint)
                            .await
                    }
                    None => {}
                }
            }
            response
        }
        Err(why) => {
            tracing::warn!(notebook = %name, error = %why, "forwarding to a notebook's server");
            ApiError(AppError::Unavailable {
                message: format!("The server of notebook “{name}” did not answer: {why}"),
            })
            .into_response()
        }
    }
}

/// A request the console keeps a version after (the file read back from
/// the server once it answered, as the server wrote it): a notebook file's
/// save (`PUT api/contents/<file>.ipynb`, JupyterLab's saves and uploads)
/// or checkpoint (`POST api/contents/<file>.ipynb/checkpoints`).
enum Watched {
    Save(String),
    Checkpoint(String),
}

impl Watched {
    /// What `method` on `path` (below the notebook's base) is, if watched.
    fn of(method: &Method, path: &str) -> Option<Self> {
        let file = path.strip_prefix("api/contents/")?;
        if *method == Method::PUT && is_versioned_path(file) {
            return Some(Self::Save(file.to_owned()));
        }
        let file = file.strip_suffix("/checkpoints")?;
        (*method == Method::POST && is_versioned_path(file))
            .then(|| Self::Checkpoint(file.to_owned()))
    }
}

/// A signed-out browser opening a notebook's page is sent to sign in (for
/// any such path: nothing about the notebook is told); anything else is
/// the 404 a stranger gets.
fn signed_out(request: &Request, name: &str) -> Response {
    let navigates = request.method() == Method::GET
        && request
            .headers()
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("text/html"));
    if navigates {
        let target = request
            .uri()
            .path_and_query()
            .map(|pq| pq.as_str())
            .unwrap_or("/");
        let next: String = form_urlencoded::byte_serialize(target.as_bytes()).collect();
        return Redirect::to(&format!("/login?next={next}")).into_response();
    }
    ApiError(AppError::not_found(format!("Notebook “{name}”"))).into_response()
}

fn is_safe(method: &Method) -> bool {
    matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

fn wants_upgrade(headers: &HeaderMap) -> bool {
    headers.contains_key(header::UPGRADE)
        && headers
            .get_all(header::CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| {
                v.split(',')
                    .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
            })
}

/// Whether the request's `Origin`, if it has one, is the console itself: a
/// page of another origin (another port of the same host is the same
/// "site" to cookies) must not drive a kernel with the user's session.
fn same_origin(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) else {
        return true;
    };
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let forwarded = headers
        .get("x-forwarded-host")
        .and_then(|v| v.to_str().ok());
    let origin_host = origin
        .split_once("://")
        .map_or(origin, |(_, rest)| rest)
        .trim_end_matches('/');
    origin_host.eq_ignore_ascii_case(host)
        || forwarded.is_some_and(|f| origin_host.eq_ignore_ascii_case(f))
}

/// Sends `request` to the route's server (same path and query) as the
/// notebook's token holder; an upgrade is carried through.
async fn send(route: &Route, request: Request, upgrade: bool) -> Result<Response, String> {
    let (upstream, token) = (&route.upstream, &route.jupyter_token);
    let (mut parts, body) = request.into_parts();
    let path = without_token(&parts.uri);
    let uri: http::Uri = format!("{upstream}{path}")
        .parse()
        .map_err(|e| format!("bad address: {e}"))?;
    let mut out = http::Request::builder()
        .method(parts.method.clone())
        .uri(uri);
    for (k, v) in parts.headers.iter() {
        if !NOT_FORWARDED.contains(&k.as_str()) {
            out = out.header(k, v);
        }
    }
    out = out.header(header::AUTHORIZATION, format!("token {token}"));
    let browser_side = if upgrade {
        if let Some(protocol) = parts.headers.get(header::UPGRADE) {
            out = out
                .header(header::CONNECTION, "upgrade")
                .header(header::UPGRADE, protocol);
        }
        parts.extensions.remove::<hyper::upgrade::OnUpgrade>()
    } else {
        None
    };
    let body = if upgrade { Body::empty() } else { body };
    let out = out.body(body).map_err(|e| e.to_string())?;
    let mut answer = route.client.request(out).await.map_err(|e| e.to_string())?;

    if answer.status() == StatusCode::SWITCHING_PROTOCOLS {
        let Some(browser_side) = browser_side else {
            return Err("the server switched protocols on a plain request".to_owned());
        };
        let server_side = hyper::upgrade::on(&mut answer);
        tokio::spawn(async move {
            match tokio::try_join!(browser_side, server_side) {
                Ok((browser, server)) => {
                    let mut browser = TokioIo::new(browser);
                    let mut server = TokioIo::new(server);
                    let _ = tokio::io::copy_bidirectional(&mut browser, &mut server).await;
                }
                Err(err) => tracing::debug!(error = %err, "a notebook WebSocket did not upgrade"),
            }
        });
        let mut response = Response::builder().status(StatusCode::SWITCHING_PROTOCOLS);
        for (k, v) in answer.headers() {
            response = response.header(k, v);
        }
        return response.body(Body::empty()).map_err(|e| e.to_string());
    }

    let (mut head, incoming) = answer.into_parts();
    strip(&mut head.headers, HOP_ANSWER);
    Ok(Response::from_parts(head, Body::new(incoming)))
}

/// The path and query to send on: without a `token` parameter, which is
/// the caller's console key (Jupyter's clients put it there for
/// WebSockets), never the server's business.
fn without_token(uri: &http::Uri) -> String {
    let path = uri.path();
    let Some(query) = uri.query() else {
        return path.to_owned();
    };
    if !form_urlencoded::parse(query.as_bytes()).any(|(name, _)| name == "token") {
        return format!("{path}?{query}");
    }
    let kept: String = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form_urlencoded::parse(query.as_bytes()).filter(|(name, _)| name != "token"))
        .finish();
    if kept.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{kept}")
    }
}

fn strip(headers: &mut HeaderMap<HeaderValue>, names: &[&'static str]) {
    for name in names {
        headers.remove(HeaderName::from_static(name));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(HeaderName::from_static(k), HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn only_the_consoles_own_origin_may_upgrade_or_post() {
        assert!(same_origin(&headers(&[("host", "127.0.0.1:3000")])));
        assert!(same_origin(&headers(&[
            ("host", "127.0.0.1:3000"),
            ("origin", "http://127.0.0.1:3000")
        ])));
        assert!(!same_origin(&headers(&[
            ("host", "127.0.0.1:3000"),
            ("origin", "http://127.0.0.1:8888")
        ])));
        assert!(same_origin(&headers(&[
            ("host", "console:3000"),
            ("x-forwarded-host", "paddle.example.com"),
            ("origin", "https://paddle.example.com")
        ])));
    }

    #[test]
    fn the_callers_key_in_the_query_is_not_sent_on() {
        let sent = |uri: &str| without_token(&uri.parse().unwrap());
        assert_eq!(
            sent("/notebooks/a/n/api/kernels/k/channels?session_id=s&token=pck_x"),
            "/notebooks/a/n/api/kernels/k/channels?session_id=s"
        );
        assert_eq!(sent("/notebooks/a/n/lab?token=pck_x"), "/notebooks/a/n/lab");
        assert_eq!(
            sent("/notebooks/a/n/api/contents?type=file&x=%2F"),
            "/notebooks/a/n/api/contents?type=file&x=%2F"
        );
        assert_eq!(sent("/notebooks/a/n/lab"), "/notebooks/a/n/lab");
    }

    #[test]
    fn saves_and_checkpoints_of_notebook_files_are_watched() {
        let save = Watched::of(&Method::PUT, "api/contents/work/a b.ipynb");
        assert!(matches!(save, Some(Watched::Save(f)) if f == "work/a b.ipynb"));
        let checkpoint = Watched::of(&Method::POST, "api/contents/a.ipynb/checkpoints");
        assert!(matches!(checkpoint, Some(Watched::Checkpoint(f)) if f == "a.ipynb"));
        assert!(Watched::of(&Method::PUT, "api/contents/a.py").is_none());
        assert!(Watched::of(&Method::GET, "api/contents/a.ipynb").is_none());
        assert!(Watched::of(&Method::PUT, "api/kernels/a.ipynb").is_none());
        assert!(Watched::of(&Method::PUT, "api/contents/.ipynb_checkpoints/a.ipynb").is_none());
    }

    #[test]
    fn an_upgrade_needs_both_headers() {
        assert!(wants_upgrade(&headers(&[
            ("connection", "keep-alive, Upgrade"),
            ("upgrade", "websocket")
        ])));
        assert!(!wants_upgrade(&headers(&[("upgrade", "websocket")])));
        assert!(!wants_upgrade(&headers(&[("connection", "keep-alive")])));
    }
}
