//! Datasets and models as the CLI, the SDK and scripts reach them through
//! `/api/v1`: files in and out (local folder and S3), sharing, bad paths,
//! interrupted uploads, model versions, datasets' saved versions, and jobs
//! reading datasets; one module per concern, sharing the helpers here.

mod bad_input;
mod dataset_versions;
mod job_datasets;
mod job_models;
mod round_trip;
mod s3;
mod sharing;
mod versions;

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::assets::{local_site, moto, site_on};
use crate::common::rest::key_for;
use crate::common::site::Site;
use crate::common::TestDb;
use app::models::{AssetForm, AssetKind, AssetRef};
use app::ports::{Assets, ByteRange, ByteStream, Slot, Viewer};
use axum::body::Body;
use bytes::Bytes;
use futures_util::StreamExt;
use http::{header, HeaderMap, Method, Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use server::access_keys::SqlAccessKeys;
use server::console::Storage;

struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl Answer {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }

    /// `(code, field, message)` of an error answer.
    fn error(&self) -> (String, Option<String>, String) {
        let v = self.json();
        (
            v["error"]["code"].as_str().unwrap_or_default().to_owned(),
            v["error"]["field"].as_str().map(str::to_owned),
            v["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        )
    }

    fn header(&self, name: header::HeaderName) -> String {
        self.headers
            .get(&name)
            .unwrap_or_else(|| panic!("no {name} header"))
            .to_str()
            .unwrap()
            .to_owned()
    }
}

async fn send(
    site: &Site,
    method: Method,
    uri: &str,
    key: Option<&str>,
    headers: &[(header::HeaderName, &str)],
    body: Body,
) -> Answer {
    let mut req = Request::builder().method(method).uri(uri);
    if let Some(key) = key {
        req = req.header(header::AUTHORIZATION, format!("Bearer {key}"));
    }
    for (name, value) in headers {
        req = req.header(name, *value);
    }
    let res = site.send(req.body(body).unwrap()).await;
    let status = res.status();
    let headers = res.headers().clone();
    let body = res.into_body().collect().await.unwrap().to_bytes();
    Answer {
        status,
        headers,
        body,
    }
}

async fn call(
    site: &Site,
    method: Method,
    uri: &str,
    key: Option<&str>,
    body: Option<Value>,
) -> Answer {
    match body {
        Some(v) => {
            let json = [(header::CONTENT_TYPE, "application/json")];
            send(site, method, uri, key, &json, Body::from(v.to_string())).await
        }
        None => send(site, method, uri, key, &[], Body::empty()).await,
    }
}

async fn get(site: &Site, uri: &str, key: Option<&str>) -> Answer {
    call(site, Method::GET, uri, key, None).await
}

async fn put_bytes(site: &Site, uri: &str, key: Option<&str>, bytes: &[u8]) -> Answer {
    let octets = [(header::CONTENT_TYPE, "application/octet-stream")];
    send(
        site,
        Method::PUT,
        uri,
        key,
        &octets,
        Body::from(bytes.to_vec()),
    )
    .await
}

/// A path with each segment percent-encoded for a URL.
fn enc(path: &str) -> String {
    path.split('/')
        .map(|s| {
            percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Deterministic bytes that do not compress and differ at every offset.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// A body that sends `chunks` and then breaks, as a dropped connection does.
fn broken_body(chunks: Vec<Vec<u8>>) -> Body {
    let mut items: Vec<Result<Bytes, std::io::Error>> =
        chunks.into_iter().map(|c| Ok(Bytes::from(c))).collect();
    items.push(Err(std::io::Error::new(
        std::io::ErrorKind::ConnectionReset,
        "client went away",
    )));
    Body::from_stream(futures_util::stream::iter(items))
}

/// Every file below `dir`, relative, with its size.
fn files_below(dir: &Path) -> BTreeMap<PathBuf, u64> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, u64>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.is_dir() {
                walk(root, &p, out);
            } else {
                out.insert(p.strip_prefix(root).unwrap().to_owned(), meta.len());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn unzip(bytes: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let mut zip =
        zip::ZipArchive::new(std::io::Cursor::new(bytes.to_vec())).expect("a readable zip");
    let mut out = BTreeMap::new();
    for i in 0..zip.len() {
        let mut f = zip.by_index(i).unwrap();
        let mut data = Vec::new();
        f.read_to_end(&mut data).unwrap();
        out.insert(f.name().unwrap().to_string(), data);
    }
    out
}

/// `(path, dir, size, files)` of a listing.
fn listing(a: &Answer) -> Vec<(String, bool, u64, u64)> {
    a.json()
        .as_array()
        .unwrap_or_else(|| panic!("not a listing: {}", a.text()))
        .iter()
        .map(|e| {
            (
                e["path"].as_str().unwrap().to_owned(),
                e["dir"].as_bool().unwrap(),
                e["size"].as_u64().unwrap(),
                e["files"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Names (`owner/name`) and access of the assets a list answer holds.
fn names_in(a: &Answer) -> Vec<(String, String)> {
    a.json()
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {}", a.text()))
        .iter()
        .map(|x| {
            (
                format!(
                    "{}/{}",
                    x["owner"].as_str().unwrap(),
                    x["name"].as_str().unwrap()
                ),
                x["access"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

async fn create(site: &Site, key: Option<&str>, kind: &str, name: &str) {
    let made = call(
        site,
        Method::POST,
        &format!("/api/v1/{kind}"),
        key,
        Some(json!({"name": name})),
    )
    .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());
}

/// PUTs a file; `path` may end in a query (`?version=N`).
async fn upload(site: &Site, key: Option<&str>, base: &str, path: &str, bytes: &[u8]) {
    let (path, query) = path
        .split_once('?')
        .map_or((path, String::new()), |(p, q)| (p, format!("?{q}")));
    let put = put_bytes(
        site,
        &format!("{base}/files/{}{query}", enc(path)),
        key,
        bytes,
    )
    .await;
    assert_eq!(
        put.status,
        StatusCode::CREATED,
        "PUT {path}: {}",
        put.text()
    );
}

async fn wait_for_job(site: &Site, key: &str, job: &str, status: &str) -> Value {
    let start = Instant::now();
    loop {
        let got = get(site, &format!("/api/v1/jobs/{job}"), Some(key)).await;
        assert_eq!(got.status, StatusCode::OK, "{}", got.text());
        let v = got.json();
        if v["status"] == status {
            return v;
        }
        assert!(
            !["failed", "succeeded", "stopped"].contains(&v["status"].as_str().unwrap_or("")),
            "job {job} ended {} while waiting for {status}: {v}",
            v["status"]
        );
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{v} never became {status}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn job_spec(name: &str, script: &str, datasets: &[&str]) -> Value {
    json!({
        "name": name,
        "command": ["sh", "-c", script],
        "num_ps": 0,
        "num_trainers": 1,
        "trainer": {"cpu": "1", "memory": "1Gi", "gpu": 0},
        "datasets": datasets,
    })
}
