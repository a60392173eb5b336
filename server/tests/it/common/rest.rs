//! `/api/v1` calls as the CLI and the SDK make them.

use std::time::Duration;

use axum::body::Body;
use http::{header, HeaderMap, Method, Request, StatusCode};
use serde_json::{json, Value};
use server::access_keys::SqlAccessKeys;

use super::site::{text, Site};

/// Signs up `account` (owner ann@example.com) and returns an access key for her.
pub async fn key_for(site: &Site, account: &str) -> String {
    key_and_cookie(site, account).await.0
}

/// Signs up `account` and returns an access key for its owner and her
/// browser's session cookie.
pub async fn key_and_cookie(site: &Site, account: &str) -> (String, String) {
    let cookie = site.sign_up(account).await;
    let key = SqlAccessKeys::new(site.db.pool.clone())
        .create_for(account, "ann@example.com", "tests", Default::default())
        .await
        .unwrap()
        .key;
    (key, cookie)
}

/// A REST answer, read whole.
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: String,
}

impl Answer {
    /// The first output of a predict call's answer (`{"outputs": {name: [[y]]}}`),
    /// asserting the call succeeded.
    pub fn first_prediction(&self) -> f64 {
        assert_eq!(self.status, StatusCode::OK, "{}", self.body);
        self.json()["outputs"]
            .as_object()
            .and_then(|o| o.values().next())
            .and_then(|v| v[0][0].as_f64())
            .unwrap_or_else(|| panic!("{}", self.body))
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    pub fn error(&self) -> (String, Option<String>) {
        let v = self.json();
        (
            v["error"]["code"].as_str().unwrap().to_owned(),
            v["error"]["field"].as_str().map(str::to_owned),
        )
    }
}

/// One REST call with `key` (if any) and a JSON body (if any).
pub async fn call(
    site: &Site,
    method: Method,
    path: &str,
    key: Option<&str>,
    body: Option<Value>,
) -> Answer {
    let mut req = Request::builder().method(method).uri(path);
    if let Some(key) = key {
        req = req.header(header::AUTHORIZATION, format!("Bearer {key}"));
    }
    let body = match body {
        Some(v) => {
            req = req.header(header::CONTENT_TYPE, "application/json");
            Body::from(v.to_string())
        }
        None => Body::empty(),
    };
    answer(site.send(req.body(body).unwrap()).await).await
}

/// A POST of `body` with `key` that must succeed (its answer, to read).
pub async fn post_ok(site: &Site, key: &str, path: &str, body: Value) -> Answer {
    let got = call(site, Method::POST, path, Some(key), Some(body)).await;
    assert!(
        got.status.is_success(),
        "{path}: {} {}",
        got.status,
        got.body
    );
    got
}

/// Where REST calls go: a console in this process, or one reached over
/// HTTP at `base` (the console deployed in the cluster, through its Service).
pub enum Endpoint<'a> {
    /// The router of a console built by the test.
    Here(&'a Site),
    /// A console elsewhere.
    Http { http: reqwest::Client, base: String },
}

impl Endpoint<'_> {
    /// One REST call with `key` (if any) and a JSON body (if any).
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        key: Option<&str>,
        body: Option<Value>,
    ) -> Answer {
        let (http, base) = match self {
            Endpoint::Here(site) => return call(site, method, path, key, body).await,
            Endpoint::Http { http, base } => (http, base),
        };
        let mut req = http.request(method, format!("{base}{path}"));
        if let Some(key) = key {
            req = req.bearer_auth(key);
        }
        if let Some(v) = body {
            req = req
                .header(header::CONTENT_TYPE, "application/json")
                .body(v.to_string());
        }
        let res = req.send().await.unwrap();
        Answer {
            status: res.status(),
            headers: res.headers().clone(),
            body: res.text().await.unwrap(),
        }
    }
}

/// A response read whole into an [`Answer`].
pub async fn answer(res: http::Response<Body>) -> Answer {
    let status = res.status();
    let headers = res.headers().clone();
    Answer {
        status,
        headers,
        body: text(res).await,
    }
}

/// A job of one parameter server and two trainers running `script`.
pub fn spec(name: &str, script: &str) -> Value {
    json!({
        "name": name,
        "command": ["sh", "-c", script],
        "num_ps": 1,
        "num_trainers": 2,
        "ps": {"cpu": "500m", "memory": "256Mi"},
        "trainer": {"cpu": "1", "memory": "1Gi", "gpu": 0}
    })
}

/// Polls the job until it has `status`.
pub async fn wait_for(site: &Site, key: &str, job: &str, status: &str) -> Value {
    for _ in 0..200 {
        let got = call(
            site,
            Method::GET,
            &format!("/api/v1/jobs/{job}"),
            Some(key),
            None,
        )
        .await;
        assert_eq!(got.status, StatusCode::OK, "{}", got.body);
        let job = got.json();
        if job["status"] == status {
            return job;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{job} never became {status}");
}

/// PUTs `text` as file `path` (which may end in `?version=N`) of the asset
/// at `base` (`/api/v1/datasets/<owner>/<name>`), asserting it is stored.
pub async fn put_file(site: &Site, key: &str, base: &str, path: &str, text: &str) {
    let request = http::Request::builder()
        .method(http::Method::PUT)
        .uri(format!("{base}/files/{path}"))
        .header("authorization", format!("Bearer {key}"))
        .header("content-type", "application/octet-stream")
        .body(Body::from(text.to_owned()))
        .unwrap();
    let put = answer(site.send(request).await).await;
    assert_eq!(
        put.status,
        http::StatusCode::CREATED,
        "PUT {path}: {}",
        put.body
    );
}

/// `GET /api/v1/me` as the browser holding session `cookie`: who it is.
pub async fn me_of_session(site: &Site, cookie: &str) -> Value {
    let res = site
        .send(
            Request::get("/api/v1/me")
                .header(header::COOKIE, cookie)
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    serde_json::from_str(&text(res).await).unwrap()
}
