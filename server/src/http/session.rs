//! Who is asking: the session cookie becomes a [`Principal`] in the request's
//! extensions, and pages other than sign-in/sign-up require one.

use std::net::SocketAddr;
use std::sync::Arc;

use app::api::context::session_token;
use app::error::AppError;
use app::ports::{ClientAddress, Services};
use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use http::{Method, StatusCode};
use leptos_axum::AxumRouteListing;

use super::api_error::ApiError;

/// Where the MLflow tracking API lives: its clients authenticate with
/// `MLFLOW_TRACKING_TOKEN`, which they send as a Bearer key.
pub const MLFLOW_API: &str = "/api/2.0/mlflow/";

/// Pages for the signed-out; every other page of the app needs a session,
/// except the open pages.
const PUBLIC_PAGES: &[&str] = &["/login", "/signup", "/forgot"];
/// Pages anyone may open, signed in or not: what a share link opens, and
/// where the links of account mail land.
const OPEN_PAGES: &[&str] = &[
    "/shared/:token",
    "/shared/notebooks/:token",
    "/reset",
    "/confirm",
    "/join",
];

/// Resolves the session cookie, once per request, for every later handler.
pub async fn resolve_session(
    State(services): State<Services>,
    mut request: Request,
    next: Next,
) -> Response {
    let (mut parts, body) = request.into_parts();
    if let Some(ConnectInfo(peer)) = parts.extensions.get::<ConnectInfo<SocketAddr>>() {
        let address = ClientAddress(peer.ip().to_string());
        parts.extensions.insert(address);
    }
    let path = parts.uri.path();
    // `/serve/`: the endpoints of serving instances, called by programs.
    // `/notebooks/`: Jupyter clients (kernels over WebSockets) with the
    // owner's key, as Jupyter's own clients send a token.
    let key = if path.starts_with("/api/v1/")
        || path.starts_with(MLFLOW_API)
        || path.starts_with("/serve/")
    {
        bearer_key(&parts).map(str::to_owned)
    } else if path.starts_with(NOTEBOOKS) {
        notebook_key(&parts)
    } else {
        None
    };
    if let Some(key) = key {
        return match services.access_keys.resolve_key(&key).await {
            Ok(Some(principal)) => {
                if let Some(job) = principal.job_scope() {
                    if !job_token_may(job, &parts.method, &parts.uri) {
                        return refuse(
                            parts.uri.path(),
                            AppError::forbidden(format!(
                                "A job's token may only write and read the metrics (and metric \
                                 files) of job “{job}” and its notebook, read datasets, \
                                 register models and write versions of datasets; use an \
                                 access key for anything else."
                            )),
                        );
                    }
                }
                if let Some(model) = principal.serving_scope() {
                    if !serving_token_may(model, &parts.method, parts.uri.path()) {
                        return refuse(
                            parts.uri.path(),
                            AppError::forbidden(format!(
                                "A serving instance's token may only read the model it \
                                 serves (“{model}”)."
                            )),
                        );
                    }
                }
                let scope = principal.scope;
                if !scope.allows(parts.method.as_str(), parts.uri.path()) {
                    return refuse(
                        parts.uri.path(),
                        AppError::forbidden(format!(
                            "This access key's scope is “{}” ({}): it may not {} {}. \
                             Create a key with a wider scope on the Account page.",
                            scope.as_str(),
                            scope.label(),
                            parts.method,
                            parts.uri.path()
                        )),
                    );
                }
                parts.extensions.insert(principal);
                next.run(Request::from_parts(parts, body)).await
            }
            // A wrong key is an error even where no key is needed: the
            // script would otherwise learn of it only later, and puzzlingly.
            Ok(None) => refuse(parts.uri.path(), AppError::Unauthenticated),
            Err(err) => refuse(parts.uri.path(), err),
        };
    }
    if let Some(token) = session_token(&parts) {
        match services.accounts.resolve_session(&token).await {
            Ok(Some(principal)) => {
                parts.extensions.insert(principal);
            }
            Ok(None) => {}
            Err(err) => {
                return (
                    StatusCode::from_u16(err.status()).unwrap_or(StatusCode::SERVICE_UNAVAILABLE),
                    err.to_string(),
                )
                    .into_response()
            }
        }
    }
    request = Request::from_parts(parts, body);
    next.run(request).await
}

/// What a job's own token may do: write and read that job's metrics, say
/// whose it is, make models and register versions of them (recorded as the
/// job's output), read datasets and models, and write datasets' new
/// versions (save one, or upload into one still open and finish it: a batch
/// scoring's output), never their working files, and make no dataset.
/// Never delete anything.
fn job_token_may(job: &str, method: &Method, uri: &http::Uri) -> bool {
    let path = uri.path();
    if path.starts_with(&format!("/api/v1/jobs/{job}/metrics"))
        || path.starts_with(&format!("/api/v1/jobs/{job}/metric-files/"))
        || path == format!("/api/v1/jobs/{job}/notebook/input")
        || path == format!("/api/v1/jobs/{job}/notebook/output")
    {
        return true;
    }
    if method == Method::DELETE {
        return false;
    }
    let models = path == "/api/v1/models" || path.starts_with("/api/v1/models/");
    let reads = method == Method::GET
        && (path == "/api/v1/me"
            || path == "/api/v1/datasets"
            || path.starts_with("/api/v1/datasets/"));
    models || reads || dataset_version_write(method, uri)
}

/// Writing a dataset's version: `POST /api/v1/datasets/{owner}/{name}/versions`,
/// `POST …/versions/{v}/finish`, and `PUT …/files/{path}?version=N` (into a
/// version; the asset layer refuses a complete one).
fn dataset_version_write(method: &Method, uri: &http::Uri) -> bool {
    let path = uri.path();
    let Some(rest) = path.strip_prefix("/api/v1/datasets/") else {
        return false;
    };
    let segments: Vec<&str> = rest.split('/').collect();
    let into_version = || {
        form_urlencoded::parse(uri.query().unwrap_or("").as_bytes())
            .any(|(name, value)| name == "version" && !value.is_empty())
    };
    match segments.as_slice() {
        [_, _, "versions"] => method == Method::POST,
        [_, _, "versions", _, "finish"] => method == Method::POST,
        [_, _, "files", _, ..] => method == Method::PUT && into_version(),
        _ => false,
    }
}

/// What a serving instance's token may do: read the model it serves (the
/// model, its versions, files and archives), nothing else.
fn serving_token_may(model: &str, method: &Method, path: &str) -> bool {
    let base = format!("/api/v1/models/{model}");
    method == Method::GET
        && path.strip_prefix(&base).is_some_and(|rest| {
            matches!(rest, "" | "/versions" | "/archive.zip" | "/files")
                || rest.starts_with("/files/")
        })
}

/// An API error in the shape the caller's client reads: MLflow's for the
/// MLflow tracking API, ours everywhere else.
pub(super) fn refuse(path: &str, err: AppError) -> Response {
    if path.starts_with(MLFLOW_API) {
        crate::mlflow::wire::MlflowError::from(err).into_response()
    } else {
        ApiError(err).into_response()
    }
}

/// Where notebooks are proxied (see `lab.rs`).
pub const NOTEBOOKS: &str = "/notebooks/";

/// The console key a Jupyter client sends to a notebook, the ways Jupyter's
/// own clients send a server's token: `Authorization: Bearer <key>` or
/// `token <key>`, or `?token=<key>` (WebSockets, whose browser API sets no
/// headers). The proxy never passes the query's token on.
fn notebook_key(parts: &http::request::Parts) -> Option<String> {
    let header = parts.headers.get(http::header::AUTHORIZATION);
    if header.and_then(|v| v.to_str().ok()).is_some() {
        return authorization_key(parts, &["bearer", "token"]).map(str::to_owned);
    }
    form_urlencoded::parse(parts.uri.query()?.as_bytes())
        .find(|(name, _)| name == "token")
        .map(|(_, key)| key.into_owned())
        .filter(|key| !key.is_empty())
}

/// The key in `Authorization: Bearer <key>`, if the header is there.
fn bearer_key(parts: &http::request::Parts) -> Option<&str> {
    authorization_key(parts, &["bearer"])
}

/// The key in `Authorization: <scheme> <key>`, for one of `schemes`.
fn authorization_key<'a>(parts: &'a http::request::Parts, schemes: &[&str]) -> Option<&'a str> {
    let value = parts
        .headers
        .get(http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, key) = value.split_once(' ')?;
    schemes
        .iter()
        .any(|s| scheme.eq_ignore_ascii_case(s))
        .then(|| key.trim())
}

/// The app's page paths, split into those that need a session and those that do not.
pub struct PageGuard {
    protected: Vec<Vec<String>>,
}

impl PageGuard {
    /// Learns the pages from the app's route list.
    pub fn new(routes: &[AxumRouteListing]) -> Self {
        let protected = routes
            .iter()
            .map(|r| r.path().to_owned())
            .filter(|p| !PUBLIC_PAGES.contains(&p.as_str()) && !OPEN_PAGES.contains(&p.as_str()))
            .map(|p| segments(&p).map(str::to_owned).collect())
            .collect();
        Self { protected }
    }

    /// Whether `path` is one of the pages that need a session.
    pub fn is_protected(&self, path: &str) -> bool {
        let wanted: Vec<&str> = segments(path).collect();
        self.protected
            .iter()
            .any(|pattern| matches(pattern, &wanted))
    }
}

/// Route pattern matching: `:param` takes one segment, `*rest` the remainder.
fn matches(pattern: &[String], wanted: &[&str]) -> bool {
    match (pattern.split_first(), wanted.split_first()) {
        (None, None) => true,
        (Some((p, _)), _) if p.starts_with('*') => true,
        (Some((p, pattern)), Some((w, wanted))) => {
            (p.starts_with(':') || p == w) && matches(pattern, wanted)
        }
        _ => false,
    }
}

fn segments(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter(|s| !s.is_empty())
}

/// Sends a signed-out browser asking for a console page to `/login?next=…`,
/// and a signed-in one asking for `/login` or `/signup` to its jobs.
pub async fn require_sign_in(
    State(guard): State<Arc<PageGuard>>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return next.run(request).await;
    }
    let principal = request.extensions().get::<app::ports::Principal>();
    let signed_in = principal.is_some();
    let must_change_password = principal.is_some_and(|p| p.me.must_change_password);
    let path = request.uri().path();
    if must_change_password && path != "/account" && guard.is_protected(path) {
        // A generated password is a secret someone else has seen.
        return Redirect::to("/account?password=required#password-section").into_response();
    }
    if !signed_in && guard.is_protected(path) {
        let target = request
            .uri()
            .path_and_query()
            .map(|pq| pq.as_str())
            .unwrap_or("/");
        let next_param: String = form_urlencoded::byte_serialize(target.as_bytes()).collect();
        return Redirect::to(&format!("/login?next={next_param}")).into_response();
    }
    if signed_in && PUBLIC_PAGES.contains(&path) {
        return Redirect::to("/jobs").into_response();
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jobs_token_writes_datasets_new_versions_never_their_working_files() {
        let may =
            |method: Method, uri: &str| job_token_may("score", &method, &uri.parse().unwrap());
        assert!(!may(Method::POST, "/api/v1/datasets"));
        assert!(may(Method::POST, "/api/v1/datasets/acme/out/versions"));
        assert!(may(
            Method::POST,
            "/api/v1/datasets/acme/out/versions/3/finish"
        ));
        assert!(may(
            Method::PUT,
            "/api/v1/datasets/acme/out/files/a/b.jsonl?version=3"
        ));
        assert!(!may(Method::PUT, "/api/v1/datasets/acme/out/files/a.jsonl"));
        assert!(!may(
            Method::PUT,
            "/api/v1/datasets/acme/out/files/a.jsonl?version="
        ));
        assert!(!may(
            Method::DELETE,
            "/api/v1/datasets/acme/out/files/a.jsonl?version=3"
        ));
        assert!(!may(Method::PATCH, "/api/v1/datasets/acme/out"));
        assert!(!may(Method::POST, "/api/v1/datasets/acme/out/shares"));
        assert!(may(Method::GET, "/api/v1/datasets/acme/out/files/a.jsonl"));
    }

    fn pattern(p: &str) -> Vec<String> {
        segments(p).map(str::to_owned).collect()
    }

    #[test]
    fn route_patterns_match_params_and_rest() {
        assert!(matches(&pattern("/jobs"), &["jobs"]));
        assert!(matches(&pattern("/jobs/:name"), &["jobs", "mnist"]));
        assert!(!matches(&pattern("/jobs/:name"), &["jobs"]));
        assert!(matches(&pattern("/files/*path"), &["files", "a", "b"]));
        assert!(matches(&pattern("/"), &[]));
        assert!(!matches(&pattern("/jobs"), &["serving"]));
    }

    #[test]
    fn a_serving_token_reads_its_own_model_and_nothing_else() {
        let may = |method: Method, path: &str| serving_token_may("acme/tiny", &method, path);
        assert!(may(Method::GET, "/api/v1/models/acme/tiny"));
        assert!(may(Method::GET, "/api/v1/models/acme/tiny/archive.zip"));
        assert!(may(
            Method::GET,
            "/api/v1/models/acme/tiny/files/m/a.pdmodel"
        ));
        assert!(!may(Method::GET, "/api/v1/models/acme/tiny2/archive.zip"));
        assert!(!may(Method::GET, "/api/v1/models/acme/other"));
        assert!(!may(Method::GET, "/api/v1/models"));
        assert!(!may(Method::GET, "/api/v1/jobs"));
        assert!(!may(Method::PUT, "/api/v1/models/acme/tiny/files/a"));
        assert!(!may(Method::DELETE, "/api/v1/models/acme/tiny"));
        assert!(!may(Method::GET, "/serve/acme/tiny"));
        assert!(!may(Method::GET, "/api/v1/models/acme/tiny/shares"));
    }
}
