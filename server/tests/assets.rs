//! Datasets and models as the CLI, the SDK and scripts reach them through
//! `/api/v1`: files in and out (local folder and S3), sharing, bad paths,
//! interrupted uploads, model versions, and jobs reading datasets.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use app::models::{AssetForm, AssetKind, AssetRef};
use app::ports::{Assets, ByteRange, ByteStream, Slot, Viewer};
use axum::body::Body;
use bytes::Bytes;
use common::assets::{local_site, moto, site_on};
use common::rest::key_for;
use common::site::Site;
use common::TestDb;
use futures_util::StreamExt;
use http::{header, HeaderMap, Method, Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use server::access_keys::SqlAccessKeys;

// ---------------------------------------------------------------- helpers

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

// ------------------------------------------------------- 1. round trip

/// Everything a user does with one dataset's files, through REST, on
/// whichever storage the site has. Leaves no dataset behind.
async fn round_trip(site: &Site) {
    let key = key_for(site, "vision").await;
    let key = Some(key.as_str());

    for (name, hint) in [
        ("", "Give it a name"),
        ("Caps", "lower-case"),
        ("-lead", "starting with a letter or digit"),
        ("a/b", "lower-case"),
        ("../up", "lower-case"),
        (&"x".repeat(65), "at most 64"),
    ] {
        let got = call(
            site,
            Method::POST,
            "/api/v1/datasets",
            key,
            Some(json!({"name": name})),
        )
        .await;
        assert_eq!(
            got.status,
            StatusCode::BAD_REQUEST,
            "{name:?}: {}",
            got.text()
        );
        let (code, field, message) = got.error();
        assert_eq!((code.as_str(), field.as_deref()), ("invalid", Some("name")));
        assert!(message.contains(hint), "{name:?}: {message}");
    }
    let made = call(
        site,
        Method::POST,
        "/api/v1/datasets",
        key,
        Some(json!({"name": " mnist ", "description": "Handwritten digits", "tags": "images, Digits"})),
    )
    .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());
    let asset = made.json();
    assert_eq!(asset["owner"], "vision");
    assert_eq!(asset["name"], "mnist");
    assert_eq!(asset["tags"], json!(["images", "digits"]));
    assert_eq!(asset["access"], "owner");
    assert_eq!(asset["files"], 0);
    let again = call(
        site,
        Method::POST,
        "/api/v1/datasets",
        key,
        Some(json!({"name": "mnist"})),
    )
    .await;
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert_eq!(again.error().1.as_deref(), Some("name"));

    let base = "/api/v1/datasets/vision/mnist";
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("train.txt", b"7 2 1 0 4\n".to_vec()),
        ("empty.txt", Vec::new()),
        ("images/cat.png", (0..=255u8).cycle().take(1024).collect()),
        ("images/deep/big.bin", noise(3_000_000, 1)),
        ("数据/训练.csv", "a,b\n1,2\n".as_bytes().to_vec()),
        ("with space/odd [1]~#%?.txt", b"odd".to_vec()),
    ];
    for (path, bytes) in &files {
        let put = put_bytes(site, &format!("{base}/files/{}", enc(path)), key, bytes).await;
        assert_eq!(
            put.status,
            StatusCode::CREATED,
            "PUT {path}: {}",
            put.text()
        );
        let entry = put.json();
        assert_eq!(entry["path"], *path);
        assert_eq!(entry["size"], bytes.len() as u64);
        assert_eq!(entry["dir"], false);
    }
    let size = |p: &str| files.iter().find(|(q, _)| *q == p).unwrap().1.len() as u64;
    let total: u64 = files.iter().map(|(_, b)| b.len() as u64).sum();

    // Folders first, then files, each by name; folders with their totals.
    let root = get(site, &format!("{base}/files"), key).await;
    assert_eq!(root.status, StatusCode::OK, "{}", root.text());
    assert_eq!(
        listing(&root),
        [
            (
                "images".to_owned(),
                true,
                size("images/cat.png") + size("images/deep/big.bin"),
                2
            ),
            ("with space".to_owned(), true, 3, 1),
            ("数据".to_owned(), true, size("数据/训练.csv"), 1),
            ("empty.txt".to_owned(), false, 0, 1),
            ("train.txt".to_owned(), false, size("train.txt"), 1),
        ]
    );
    let images = get(site, &format!("{base}/files?dir=images"), key).await;
    assert_eq!(
        listing(&images),
        [
            ("images/deep".to_owned(), true, 3_000_000, 1),
            ("images/cat.png".to_owned(), false, 1024, 1),
        ]
    );
    let one = get(site, base, key).await.json();
    assert_eq!(
        (one["files"].as_u64(), one["bytes"].as_u64()),
        (Some(files.len() as u64), Some(total))
    );
    let mine = get(site, "/api/v1/datasets", key).await;
    assert_eq!(
        names_in(&mine),
        [("vision/mnist".to_owned(), "owner".to_owned())]
    );

    // Every file downloads byte for byte.
    for (path, bytes) in &files {
        let got = get(site, &format!("{base}/files/{}", enc(path)), key).await;
        assert_eq!(got.status, StatusCode::OK, "GET {path}: {}", got.text());
        assert_eq!(got.body.len(), bytes.len(), "{path}");
        assert!(got.body == bytes[..], "{path} differs");
        assert_eq!(got.header(header::CONTENT_LENGTH), bytes.len().to_string());
        assert_eq!(got.header(header::ACCEPT_RANGES), "bytes");
        assert_eq!(got.header(header::X_CONTENT_TYPE_OPTIONS), "nosniff");
    }
    let text = get(site, &format!("{base}/files/train.txt"), key).await;
    assert!(text.header(header::CONTENT_TYPE).starts_with("text/plain"));
    assert_eq!(
        text.header(header::CONTENT_DISPOSITION),
        "attachment; filename=\"train.txt\"; filename*=UTF-8''train.txt"
    );
    let csv = get(site, &format!("{base}/files/{}", enc("数据/训练.csv")), key).await;
    assert!(csv
        .header(header::CONTENT_DISPOSITION)
        .ends_with("filename*=UTF-8''%E8%AE%AD%E7%BB%83.csv"));

    // Ranges, as download managers resume.
    let big = &files[3].1;
    let big_url = format!("{base}/files/images/deep/big.bin");
    for (range, a, b) in [
        ("bytes=1000-1999", 1000, 1999),
        ("bytes=2999990-", 2_999_990, 2_999_999),
        ("bytes=2999990-9999999", 2_999_990, 2_999_999),
        ("bytes=-16", 2_999_984, 2_999_999),
        ("bytes=0-0", 0, 0),
    ] {
        let part = send(
            site,
            Method::GET,
            &big_url,
            key,
            &[(header::RANGE, range)],
            Body::empty(),
        )
        .await;
        assert_eq!(part.status, StatusCode::PARTIAL_CONTENT, "{range}");
        assert_eq!(
            part.header(header::CONTENT_RANGE),
            format!("bytes {a}-{b}/3000000"),
            "{range}"
        );
        assert_eq!(
            part.header(header::CONTENT_LENGTH),
            (b - a + 1).to_string(),
            "{range}"
        );
        assert!(part.body == big[a..=b], "{range}: wrong bytes");
    }
    let outside = send(
        site,
        Method::GET,
        &big_url,
        key,
        &[(header::RANGE, "bytes=3000000-")],
        Body::empty(),
    )
    .await;
    assert_eq!(
        outside.status,
        StatusCode::RANGE_NOT_SATISFIABLE,
        "{}",
        outside.text()
    );
    assert_eq!(outside.header(header::CONTENT_RANGE), "bytes */3000000");
    // A range this server does not do is ignored: the whole file comes.
    let several = send(
        site,
        Method::GET,
        &big_url,
        key,
        &[(header::RANGE, "bytes=0-1,5-6")],
        Body::empty(),
    )
    .await;
    assert_eq!(several.status, StatusCode::OK);
    assert_eq!(several.body.len(), 3_000_000);

    // Downloads go out as stored even to a client that takes gzip: a
    // compressed body would not match its Content-Length or Range.
    let csv_url = format!("{base}/files/{}", enc("数据/训练.csv"));
    for range in [None, Some("bytes=2-5")] {
        let mut headers = vec![(header::ACCEPT_ENCODING, "gzip")];
        headers.extend(range.map(|r| (header::RANGE, r)));
        let got = send(site, Method::GET, &csv_url, key, &headers, Body::empty()).await;
        assert!(
            !got.headers.contains_key(header::CONTENT_ENCODING),
            "{range:?} was compressed"
        );
        let want = if range.is_some() {
            &b"b\n1,"[..]
        } else {
            &b"a,b\n1,2\n"[..]
        };
        assert_eq!(&got.body[..], want, "{range:?}");
    }
    let zipped = send(
        site,
        Method::GET,
        &format!("{base}/archive.zip"),
        key,
        &[(header::ACCEPT_ENCODING, "gzip")],
        Body::empty(),
    )
    .await;
    assert!(!zipped.headers.contains_key(header::CONTENT_ENCODING));

    // The whole dataset as a zip: the same paths and bytes.
    let zip = get(site, &format!("{base}/archive.zip"), key).await;
    assert_eq!(zip.status, StatusCode::OK, "{}", zip.text());
    assert_eq!(zip.header(header::CONTENT_TYPE), "application/zip");
    assert!(zip
        .header(header::CONTENT_DISPOSITION)
        .contains("mnist.zip"));
    let want: BTreeMap<String, Vec<u8>> = files
        .iter()
        .map(|(p, b)| ((*p).to_owned(), b.clone()))
        .collect();
    let unzipped = unzip(&zip.body);
    assert_eq!(
        unzipped.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>()
    );
    assert!(unzipped == want, "zip contents differ");

    // A second upload replaces a file whole.
    let put = put_bytes(site, &format!("{base}/files/train.txt"), key, b"new").await;
    assert_eq!(put.status, StatusCode::CREATED);
    assert_eq!(
        &get(site, &format!("{base}/files/train.txt"), key)
            .await
            .body[..],
        b"new"
    );

    // A file and a folder cannot share a path; a path naming a folder is no file name.
    for (path, status) in [
        ("train.txt/inner.txt", StatusCode::CONFLICT),
        ("images", StatusCode::CONFLICT),
    ] {
        let put = put_bytes(site, &format!("{base}/files/{path}"), key, b"x").await;
        assert_eq!(put.status, status, "{path}: {}", put.text());
        assert_eq!(put.error().1.as_deref(), Some("path"), "{path}");
    }
    let slash = put_bytes(site, &format!("{base}/files/newdir/"), key, b"x").await;
    assert_eq!(slash.status, StatusCode::BAD_REQUEST, "{}", slash.text());

    // Deleting a file, then a folder with everything in it; each is a change.
    let changed = get(site, base, key).await.json()["updated_at"]
        .as_i64()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    let del = call(
        site,
        Method::DELETE,
        &format!("{base}/files/train.txt"),
        key,
        None,
    )
    .await;
    assert_eq!(del.status, StatusCode::NO_CONTENT, "{}", del.text());
    assert!(
        get(site, base, key).await.json()["updated_at"]
            .as_i64()
            .unwrap()
            > changed
    );
    assert_eq!(
        get(site, &format!("{base}/files/train.txt"), key)
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    let del = call(
        site,
        Method::DELETE,
        &format!("{base}/files/images"),
        key,
        None,
    )
    .await;
    assert_eq!(del.status, StatusCode::NO_CONTENT, "{}", del.text());
    for gone in ["images/cat.png", "images/deep/big.bin"] {
        assert_eq!(
            get(site, &format!("{base}/files/{gone}"), key).await.status,
            StatusCode::NOT_FOUND
        );
    }
    let root = listing(&get(site, &format!("{base}/files"), key).await);
    let names: Vec<&str> = root.iter().map(|e| e.0.as_str()).collect();
    assert_eq!(names, ["with space", "数据", "empty.txt"]);
    let twice = call(
        site,
        Method::DELETE,
        &format!("{base}/files/images"),
        key,
        None,
    )
    .await;
    assert_eq!(twice.status, StatusCode::NOT_FOUND);

    // Deleting the dataset takes its files; a new one of that name starts empty.
    let del = call(site, Method::DELETE, base, key, None).await;
    assert_eq!(del.status, StatusCode::NO_CONTENT, "{}", del.text());
    assert_eq!(get(site, base, key).await.status, StatusCode::NOT_FOUND);
    assert!(names_in(&get(site, "/api/v1/datasets", key).await).is_empty());
    create(site, key, "datasets", "mnist").await;
    assert!(listing(&get(site, &format!("{base}/files"), key).await).is_empty());
    assert_eq!(
        get(site, &format!("{base}/files/{}", enc("数据/训练.csv")), key)
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        call(site, Method::DELETE, base, key, None).await.status,
        StatusCode::NO_CONTENT
    );
}

async fn a_dataset_round_trips_through_rest_on_local_storage(db: TestDb) {
    let site = local_site(db, 1 << 30).await;
    round_trip(&site).await;
    // Everything deleted is gone from the disk too, and no upload left a
    // half-written file behind.
    let left = files_below(&site.db.dir().join("objects"));
    assert!(left.is_empty(), "files left in the store: {left:?}");
}
on_both_databases!(
    a_dataset_round_trips_through_rest_on_local_storage,
    super::a_dataset_round_trips_through_rest_on_local_storage
);

// ------------------------------------------------------------- 2. on S3

#[tokio::test]
async fn a_dataset_round_trips_through_rest_on_s3() {
    let Some(mut moto) = moto().await else { return };
    moto.create_bucket("paddle").await;
    let db = common::sqlite().await;
    let site = site_on(db, moto.objects("paddle", "console/one", 1 << 30)).await;
    round_trip(&site).await;
    assert_eq!(moto.keys("paddle", "console/").await, Vec::<String>::new());
    assert_eq!(moto.open_uploads("paddle").await, 0);

    // A local job reads a dataset kept on S3 (fetched into a cache for it).
    a_job_reads_its_datasets(&site).await;

    // When the storage goes away: a file is "unavailable" (503, not a
    // missing file), and a zip download fails instead of ending as a
    // smaller archive that looks whole.
    let ann = SqlAccessKeys::new(site.db.pool.clone())
        .create_for("jobs-ann", "ann@example.com", "late")
        .await
        .unwrap()
        .key;
    moto.stop();
    let file = get(
        &site,
        "/api/v1/datasets/jobs-ann/digits/files/train.txt",
        Some(&ann),
    )
    .await;
    assert_eq!(
        file.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        file.text()
    );
    assert_eq!(file.error().0, "unavailable");
    let res = site
        .send(
            Request::get("/api/v1/datasets/jobs-ann/digits/archive.zip")
                .header(header::AUTHORIZATION, format!("Bearer {ann}"))
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(
        res.status(),
        StatusCode::OK,
        "the zip starts before the files are read"
    );
    assert!(
        res.into_body().collect().await.is_err(),
        "a cut-short zip ended cleanly"
    );
}

/// Chunks of `noise` of `total` bytes, `chunk` at a time, made as they are
/// sent; `fail_after` bytes in, the stream breaks.
fn generated(total: usize, chunk: usize, seed: u64, fail_after: Option<usize>) -> ByteStream {
    let all = Bytes::from(noise(total, seed));
    let stream = futures_util::stream::iter((0..total).step_by(chunk)).map(move |at| {
        if fail_after.is_some_and(|f| at >= f) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "cut",
            ));
        }
        Ok(all.slice(at..(at + chunk).min(total)))
    });
    Box::pin(stream)
}

async fn read_all(mut body: ByteStream) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(chunk) = body.next().await {
        out.extend_from_slice(&chunk.unwrap());
    }
    out
}

#[tokio::test]
async fn the_store_streams_large_files_to_s3_in_parts_and_reads_ranges_back() {
    let Some(moto) = moto().await else { return };
    moto.create_bucket("paddle").await;
    let db = common::sqlite().await;
    // As `paddlecloud serve --storage s3://…` opens it, AWS_* variables and all.
    let setting =
        |s: &str| server::assets::objects::Objects::from_setting_in(s, 64 << 20, moto.vars());
    assert!(setting("s3://").is_err());
    assert!(setting("s3:///prefix").is_err());
    let site = site_on(db, setting("s3://paddle/console/two/").unwrap()).await;
    site.sign_up("vision").await;
    let me = site.owner("vision").await;
    let assets = site.services.assets.clone();
    let form = AssetForm {
        name: "corpus".into(),
        ..Default::default()
    };
    assets.create(&me, AssetKind::Dataset, form).await.unwrap();
    let r = AssetRef {
        kind: AssetKind::Dataset,
        owner: "vision".into(),
        name: "corpus".into(),
    };
    let viewer = Viewer::User(me.clone());

    // 12 MB in 64 KiB chunks: more than one 8 MiB part.
    const BIG: usize = 12 * 1024 * 1024;
    let started = Instant::now();
    let entry = assets
        .put_file(
            &me,
            &r,
            Slot::Dataset,
            "shards/part-0.bin",
            generated(BIG, 64 * 1024, 7, None),
        )
        .await
        .unwrap();
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "S3 (moto) upload: {BIG} bytes in {secs:.2} s = {:.1} MB/s",
        BIG as f64 / 1e6 / secs
    );
    assert_eq!(entry.size, BIG as u64);
    assert_eq!(
        moto.keys("paddle", "console/two/").await,
        ["console/two/datasets/vision/corpus/files/shards/part-0.bin"]
    );
    assert_eq!(moto.open_uploads("paddle").await, 0);

    let want = noise(BIG, 7);
    let started = Instant::now();
    let whole = assets
        .open_file(&viewer, &r, Slot::Dataset, "shards/part-0.bin", None)
        .await
        .unwrap();
    assert_eq!(whole.range, None);
    assert_eq!(whole.entry.size, BIG as u64);
    let got = read_all(whole.body).await;
    eprintln!(
        "S3 (moto) download: {:.1} MB/s",
        BIG as f64 / 1e6 / started.elapsed().as_secs_f64()
    );
    assert!(got == want, "the file read back differs");
    // Across the boundary between the first and second part, and the tail.
    let at = 8 * 1024 * 1024;
    let range = ByteRange {
        start: at - 5,
        end: Some(at + 5),
    };
    let part = assets
        .open_file(&viewer, &r, Slot::Dataset, "shards/part-0.bin", Some(range))
        .await
        .unwrap();
    assert_eq!(part.range, Some((at - 5, at + 5)));
    assert!(read_all(part.body).await == want[at as usize - 5..=at as usize + 5]);
    let tail = ByteRange {
        start: BIG as u64 - 3,
        end: None,
    };
    let part = assets
        .open_file(&viewer, &r, Slot::Dataset, "shards/part-0.bin", Some(tail))
        .await
        .unwrap();
    assert!(read_all(part.body).await == want[BIG - 3..]);

    // An empty file is a file too.
    let empty: ByteStream = Box::pin(futures_util::stream::empty());
    assets
        .put_file(&me, &r, Slot::Dataset, "empty.txt", empty)
        .await
        .unwrap();
    let opened = assets
        .open_file(&viewer, &r, Slot::Dataset, "empty.txt", None)
        .await
        .unwrap();
    assert!(read_all(opened.body).await.is_empty());

    // An upload that breaks after a part went up leaves nothing: no file,
    // no key, no unfinished multipart upload; the old file stays whole.
    let err = assets
        .put_file(
            &me,
            &r,
            Slot::Dataset,
            "shards/part-0.bin",
            generated(BIG, 64 * 1024, 8, Some(10 << 20)),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("interrupted"), "{err}");
    let err = assets
        .put_file(
            &me,
            &r,
            Slot::Dataset,
            "shards/part-1.bin",
            generated(BIG, 64 * 1024, 9, Some(10 << 20)),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("interrupted"), "{err}");
    assert!(matches!(
        assets
            .open_file(&viewer, &r, Slot::Dataset, "shards/part-1.bin", None)
            .await,
        Err(app::error::AppError::NotFound { .. })
    ));
    let names: Vec<String> = assets
        .all_files(&viewer, &r, Slot::Dataset)
        .await
        .unwrap()
        .into_iter()
        .map(|f| f.path)
        .collect();
    assert_eq!(names, ["empty.txt", "shards/part-0.bin"]);
    assert_eq!(moto.open_uploads("paddle").await, 0);
    let still = assets
        .open_file(&viewer, &r, Slot::Dataset, "shards/part-0.bin", None)
        .await
        .unwrap();
    assert!(read_all(still.body).await == want, "the old file changed");

    // Past the size limit: refused, and again nothing is left.
    let small = server::assets::SqlAssets::new(
        site.db.pool.clone(),
        moto.objects("paddle", "console/two", 10 << 20),
        site.db.dir().join("cache-small"),
    );
    let err = small
        .put_file(
            &me,
            &r,
            Slot::Dataset,
            "too-big.bin",
            generated(BIG, 64 * 1024, 10, None),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("larger than"), "{err}");
    assert_eq!(moto.open_uploads("paddle").await, 0);
    assert_eq!(moto.keys("paddle", "console/two/").await.len(), 2);

    // A local job's copy: fetched once, refreshed when a file changes (even
    // to one of the same size), without files deleted since.
    for (path, bytes) in [
        ("train.txt", &b"first"[..]),
        ("sub/x.part", b"part"),
        ("sub/x.txt", b"txt"),
    ] {
        let body: ByteStream = Box::pin(futures_util::stream::iter([Ok(Bytes::copy_from_slice(
            bytes,
        ))]));
        assets
            .put_file(&me, &r, Slot::Dataset, path, body)
            .await
            .unwrap();
    }
    let dir = assets
        .local_dir(&me, &r, app::ports::Slot::Dataset)
        .await
        .unwrap();
    assert_eq!(std::fs::read(dir.join("train.txt")).unwrap(), b"first");
    assert_eq!(std::fs::read(dir.join("sub/x.part")).unwrap(), b"part");
    assert_eq!(std::fs::read(dir.join("sub/x.txt")).unwrap(), b"txt");
    assert_eq!(
        std::fs::read(dir.join("shards/part-0.bin")).unwrap().len(),
        BIG
    );
    tokio::time::sleep(Duration::from_millis(5)).await;
    let body: ByteStream = Box::pin(futures_util::stream::iter([Ok(Bytes::from_static(
        b"again",
    ))]));
    assets
        .put_file(&me, &r, Slot::Dataset, "train.txt", body)
        .await
        .unwrap();
    assets
        .delete_path(&me, &r, Slot::Dataset, "sub/x.txt")
        .await
        .unwrap();
    let again = assets
        .local_dir(&me, &r, app::ports::Slot::Dataset)
        .await
        .unwrap();
    assert_eq!(again, dir);
    assert_eq!(std::fs::read(dir.join("train.txt")).unwrap(), b"again");
    assert!(
        !dir.join("sub/x.txt").exists(),
        "a deleted file is still in the job's copy"
    );
    let copied: BTreeSet<PathBuf> = files_below(&dir).into_keys().collect();
    let want: BTreeSet<PathBuf> = ["empty.txt", "shards/part-0.bin", "sub/x.part", "train.txt"]
        .into_iter()
        .map(PathBuf::from)
        .collect();
    assert_eq!(copied, want);

    // Deleting a folder deletes its keys.
    assets
        .delete_path(&me, &r, Slot::Dataset, "shards")
        .await
        .unwrap();
    assert!(!moto
        .keys("paddle", "console/two/")
        .await
        .iter()
        .any(|k| k.contains("shards")));
}

// -------------------------------------------------------- 3. sharing

async fn the_sharing_matrix_holds_on_every_route(db: TestDb) {
    let site = local_site(db, 1 << 30).await;
    let ann = key_for(&site, "vision").await;
    let bob = key_for(&site, "speech").await;
    let cid = key_for(&site, "audio").await;
    let (ann, bob, cid) = (Some(ann.as_str()), Some(bob.as_str()), Some(cid.as_str()));
    create(&site, ann, "datasets", "mnist").await;
    let base = "/api/v1/datasets/vision/mnist";
    upload(&site, ann, base, "train.txt", b"0123456789").await;
    upload(&site, ann, base, "img/a.png", b"png").await;

    let reads = [
        base.to_owned(),
        format!("{base}/files"),
        format!("{base}/files?dir=img"),
        format!("{base}/files/train.txt"),
        format!("{base}/archive.zip"),
    ];
    // Another account: as if it did not exist (404, not 403), for reads and writes.
    for uri in &reads {
        let got = get(&site, uri, bob).await;
        assert_eq!(
            got.status,
            StatusCode::NOT_FOUND,
            "GET {uri}: {}",
            got.text()
        );
        assert_eq!(got.error().0, "not_found");
    }
    assert!(names_in(&get(&site, "/api/v1/datasets", bob).await).is_empty());
    let writes = [
        (Method::PUT, format!("{base}/files/new.txt")),
        (Method::DELETE, format!("{base}/files/train.txt")),
        (Method::DELETE, base.to_owned()),
        (Method::PATCH, base.to_owned()),
        (Method::GET, format!("{base}/shares")),
        (Method::POST, format!("{base}/shares")),
        (Method::PUT, format!("{base}/public")),
    ];
    let write_body = json!({"description": "mine now", "link": true, "public": true});
    for (method, uri) in &writes {
        let got = call(&site, method.clone(), uri, bob, Some(write_body.clone())).await;
        assert_eq!(
            got.status,
            StatusCode::NOT_FOUND,
            "{method} {uri}: {}",
            got.text()
        );
    }
    // Nobody signed in: 401 everywhere but share links.
    for uri in &reads {
        assert_eq!(
            get(&site, uri, None).await.status,
            StatusCode::UNAUTHORIZED,
            "{uri}"
        );
    }

    // Shared with speech: it reads everything, changes nothing (403, saying why).
    for (body, status) in [
        (json!({"account": "nobody"}), StatusCode::BAD_REQUEST),
        (json!({"account": "vision"}), StatusCode::BAD_REQUEST),
        (json!({}), StatusCode::BAD_REQUEST),
        (json!({"account": "Speech "}), StatusCode::CREATED),
        (json!({"account": "speech"}), StatusCode::CONFLICT),
    ] {
        let got = call(
            &site,
            Method::POST,
            &format!("{base}/shares"),
            ann,
            Some(body.clone()),
        )
        .await;
        assert_eq!(got.status, status, "{body}: {}", got.text());
    }
    for uri in &reads {
        let got = get(&site, uri, bob).await;
        assert_eq!(got.status, StatusCode::OK, "GET {uri}: {}", got.text());
    }
    assert_eq!(
        &get(&site, &format!("{base}/files/train.txt"), bob)
            .await
            .body[..],
        b"0123456789"
    );
    assert_eq!(get(&site, base, bob).await.json()["access"], "shared");
    assert_eq!(
        names_in(&get(&site, "/api/v1/datasets", bob).await),
        [("vision/mnist".to_owned(), "shared".to_owned())]
    );
    for (method, uri) in &writes {
        let got = call(&site, method.clone(), uri, bob, Some(write_body.clone())).await;
        assert_eq!(
            got.status,
            StatusCode::FORBIDDEN,
            "{method} {uri}: {}",
            got.text()
        );
        assert!(got.error().2.contains("read-only"), "{}", got.text());
    }
    assert_eq!(
        &get(&site, &format!("{base}/files/train.txt"), ann)
            .await
            .body[..],
        b"0123456789"
    );
    // …and only speech.
    for uri in &reads {
        assert_eq!(
            get(&site, uri, cid).await.status,
            StatusCode::NOT_FOUND,
            "{uri}"
        );
    }

    // A link opens it without signing in; it cannot write.
    let link = call(
        &site,
        Method::POST,
        &format!("{base}/shares"),
        ann,
        Some(json!({"link": true})),
    )
    .await;
    assert_eq!(link.status, StatusCode::CREATED, "{}", link.text());
    let link = link.json();
    let path = link["path"].as_str().unwrap();
    let token = path.strip_prefix("/shared/").unwrap().to_owned();
    assert!(token.starts_with("pcs_") && token.len() >= 36, "{token}");
    assert_eq!(link["share"]["link_prefix"], token[..12]);
    assert_eq!(link["share"]["expires_at"], Value::Null);
    let shared = format!("/api/v1/shared/{token}");
    let opened = get(&site, &shared, None).await;
    assert_eq!(opened.status, StatusCode::OK, "{}", opened.text());
    assert_eq!(
        (
            opened.json()["name"].as_str(),
            opened.json()["access"].as_str()
        ),
        (Some("mnist"), Some("link"))
    );
    let file = get(&site, &format!("{shared}/files/train.txt"), None).await;
    assert_eq!(&file.body[..], b"0123456789");
    let part = send(
        &site,
        Method::GET,
        &format!("{shared}/files/train.txt"),
        None,
        &[(header::RANGE, "bytes=2-4")],
        Body::empty(),
    )
    .await;
    assert_eq!(
        (part.status, &part.body[..]),
        (StatusCode::PARTIAL_CONTENT, &b"234"[..])
    );
    let zip = get(&site, &format!("{shared}/archive.zip"), None).await;
    assert_eq!(zip.status, StatusCode::OK);
    assert_eq!(
        unzip(&zip.body).keys().collect::<Vec<_>>(),
        ["img/a.png", "train.txt"]
    );
    // Signed in as another account, the link works the same.
    assert_eq!(
        get(&site, &format!("{shared}/files/train.txt"), cid)
            .await
            .status,
        StatusCode::OK
    );
    // But the link is no key, and the asset's own routes stay closed to it.
    assert_eq!(
        get(&site, base, Some(&token)).await.status,
        StatusCode::UNAUTHORIZED
    );
    let put = put_bytes(&site, &format!("{shared}/files/new.txt"), None, b"x").await;
    assert_eq!(put.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(
        get(&site, &format!("{shared}/files/new.txt"), None)
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    let wrong = format!("/api/v1/shared/pcs_{}", "0".repeat(64));
    for uri in [
        wrong.clone(),
        format!("{wrong}/files/train.txt"),
        format!("{wrong}/archive.zip"),
        "/api/v1/shared/nonsense".into(),
    ] {
        assert_eq!(
            get(&site, &uri, None).await.status,
            StatusCode::NOT_FOUND,
            "{uri}"
        );
    }
    // Traversal through a link is refused as anywhere else.
    assert_eq!(
        get(
            &site,
            &format!("{shared}/files/img/..%2F..%2Ftrain.txt"),
            None
        )
        .await
        .status,
        StatusCode::BAD_REQUEST
    );

    // An expiring link, then past its expiry: gone.
    for days in [0, 3651] {
        let bad = call(
            &site,
            Method::POST,
            &format!("{base}/shares"),
            ann,
            Some(json!({"link_expires_in_days": days})),
        )
        .await;
        assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{days}");
    }
    let expiring = call(
        &site,
        Method::POST,
        &format!("{base}/shares"),
        ann,
        Some(json!({"link_expires_in_days": 7})),
    )
    .await;
    assert_eq!(expiring.status, StatusCode::CREATED);
    let expiring = expiring.json();
    let in_a_week = server::time::now_ms() + 7 * 24 * 3600 * 1000;
    assert!((expiring["share"]["expires_at"].as_i64().unwrap() - in_a_week).abs() < 60_000);
    let exp_token = expiring["path"]
        .as_str()
        .unwrap()
        .strip_prefix("/shared/")
        .unwrap()
        .to_owned();
    let exp_id = expiring["share"]["id"].as_i64().unwrap();
    assert_eq!(
        get(
            &site,
            &format!("/api/v1/shared/{exp_token}/files/train.txt"),
            None
        )
        .await
        .status,
        StatusCode::OK
    );
    sqlx::query("UPDATE asset_shares SET expires_at = $1 WHERE id = $2")
        .bind(server::time::now_ms() - 1000)
        .bind(exp_id)
        .execute(&site.db.pool)
        .await
        .unwrap();
    for uri in [
        "".to_owned(),
        "/files/train.txt".into(),
        "/archive.zip".into(),
    ] {
        let got = get(&site, &format!("/api/v1/shared/{exp_token}{uri}"), None).await;
        assert_eq!(
            got.status,
            StatusCode::NOT_FOUND,
            "expired {uri}: {}",
            got.text()
        );
    }

    // The owner sees every share, and revokes them.
    let shares = get(&site, &format!("{base}/shares"), ann).await;
    assert_eq!(shares.status, StatusCode::OK);
    let shares = shares.json();
    let shares = shares.as_array().unwrap();
    assert_eq!(shares.len(), 3, "{shares:?}");
    assert_eq!(shares[0]["account"], "speech");
    assert_eq!(shares[0]["created_by"], "ann@example.com");
    assert_eq!(shares[1]["link_prefix"], token[..12]);
    assert_eq!(shares[2]["id"], exp_id);
    let link_id = shares[1]["id"].as_i64().unwrap();
    let bob_id = shares[0]["id"].as_i64().unwrap();
    let revoke = call(
        &site,
        Method::DELETE,
        &format!("{base}/shares/{link_id}"),
        ann,
        None,
    )
    .await;
    assert_eq!(revoke.status, StatusCode::NO_CONTENT, "{}", revoke.text());
    for uri in [
        "".to_owned(),
        "/files/train.txt".into(),
        "/archive.zip".into(),
    ] {
        assert_eq!(
            get(&site, &format!("{shared}{uri}"), None).await.status,
            StatusCode::NOT_FOUND,
            "revoked {uri}"
        );
    }
    // Another account's share ids are not this asset's.
    create(&site, cid, "datasets", "other").await;
    let theirs = call(
        &site,
        Method::DELETE,
        &format!("/api/v1/datasets/audio/other/shares/{bob_id}"),
        cid,
        None,
    )
    .await;
    assert_eq!(theirs.status, StatusCode::NOT_FOUND);
    assert_eq!(get(&site, base, bob).await.status, StatusCode::OK);
    let revoke = call(
        &site,
        Method::DELETE,
        &format!("{base}/shares/{bob_id}"),
        ann,
        None,
    )
    .await;
    assert_eq!(revoke.status, StatusCode::NO_CONTENT);
    for uri in &reads {
        assert_eq!(
            get(&site, uri, bob).await.status,
            StatusCode::NOT_FOUND,
            "after revoking: {uri}"
        );
    }
    assert!(names_in(&get(&site, "/api/v1/datasets", bob).await).is_empty());
    let again = call(
        &site,
        Method::DELETE,
        &format!("{base}/shares/{bob_id}"),
        ann,
        None,
    )
    .await;
    assert_eq!(again.status, StatusCode::NOT_FOUND);

    // Public: every account reads it and finds it in its list; only the owner writes.
    let public = call(
        &site,
        Method::PUT,
        &format!("{base}/public"),
        ann,
        Some(json!({"public": true})),
    )
    .await;
    assert_eq!(public.status, StatusCode::OK, "{}", public.text());
    assert_eq!(public.json()["public"], true);
    for who in [bob, cid] {
        for uri in &reads {
            assert_eq!(
                get(&site, uri, who).await.status,
                StatusCode::OK,
                "public {uri}"
            );
        }
        assert!(names_in(&get(&site, "/api/v1/datasets", who).await)
            .contains(&("vision/mnist".to_owned(), "public".to_owned())));
        for (method, uri) in &writes {
            let got = call(&site, method.clone(), uri, who, Some(write_body.clone())).await;
            assert_eq!(
                got.status,
                StatusCode::FORBIDDEN,
                "public {method} {uri}: {}",
                got.text()
            );
        }
    }
    // The owner's list: own first.
    assert_eq!(
        names_in(&get(&site, "/api/v1/datasets", cid).await),
        [
            ("audio/other".to_owned(), "owner".to_owned()),
            ("vision/mnist".to_owned(), "public".to_owned())
        ]
    );
    let private = call(
        &site,
        Method::PUT,
        &format!("{base}/public"),
        ann,
        Some(json!({"public": false})),
    )
    .await;
    assert_eq!(private.json()["public"], false);
    for uri in &reads {
        assert_eq!(
            get(&site, uri, cid).await.status,
            StatusCode::NOT_FOUND,
            "unpublished {uri}"
        );
    }
    // The files were never touched by any of it.
    assert_eq!(
        &get(&site, &format!("{base}/files/train.txt"), ann)
            .await
            .body[..],
        b"0123456789"
    );
    assert_eq!(get(&site, base, ann).await.json()["files"], 2);
}
on_both_databases!(
    the_sharing_matrix_holds_on_every_route,
    super::the_sharing_matrix_holds_on_every_route
);

// ------------------------------------------------------ 4. bad paths

async fn traversal_and_odd_names_are_refused_and_nothing_lands_outside_the_store(db: TestDb) {
    let site = local_site(db, 1 << 30).await;
    let key = key_for(&site, "vision").await;
    let key = Some(key.as_str());
    create(&site, key, "datasets", "mnist").await;
    let base = "/api/v1/datasets/vision/mnist";
    let tmp = site.db.dir().parent().unwrap().to_owned();
    let mark = format!("escaped-{}-{}", std::process::id(), server::time::now_ms());
    let before = files_below(site.db.dir());

    // (path as sent in the URL, what the message says)
    let cases = [
        (format!("../../{mark}"), "segment"),
        (format!("a/../../../{mark}"), "segment"),
        (format!("%2E%2E/%2e%2e/{mark}"), "segment"),
        (format!("a%2F..%2F..%2F..%2F{mark}"), "segment"),
        (format!("./{mark}"), "segment"),
        (format!("%2Fetc%2F{mark}"), "relative"),
        (format!("/{mark}"), "relative"),
        (format!("/tmp/{mark}"), "relative"),
        (format!("..%5C..%5C{mark}"), "\\"),
        (format!("a%5C{mark}"), "\\"),
        (format!("a%00{mark}"), "control"),
        (format!("a%0A{mark}"), "control"),
        (format!("a%1B[31m{mark}"), "control"),
        (format!("a%7F{mark}"), "control"),
        (format!("{mark}%E2%80%AEtxt.exe"), "look-alike"),
        (format!("{mark}%E2%81%A6x"), "look-alike"),
        (format!("%E2%80%8B{mark}"), "look-alike"),
        (format!("a%E2%88%95..%E2%88%95{mark}"), "look-alike"),
        (format!("%EF%BC%8E%EF%BC%8E/{mark}"), "look-alike"),
        (format!("a//{mark}"), "segment"),
        (format!("%20{mark}"), "space"),
        (format!("{}/{mark}", "x".repeat(300)), "255"),
        (format!("{}{mark}", "a/".repeat(600)), "1,024"),
    ];
    for (path, why) in &cases {
        let uri = format!("{base}/files/{path}");
        let put = put_bytes(&site, &uri, key, b"pwned").await;
        assert_eq!(
            put.status,
            StatusCode::BAD_REQUEST,
            "PUT {path}: {}",
            put.text()
        );
        let (code, field, message) = put.error();
        assert_eq!(
            (code.as_str(), field.as_deref()),
            ("invalid", Some("path")),
            "{path}"
        );
        assert!(
            message.contains("is not a file path") && message.contains(why),
            "{path}: {message}"
        );
        for method in [Method::GET, Method::DELETE] {
            let got = call(&site, method.clone(), &uri, key, None).await;
            assert_eq!(
                got.status,
                StatusCode::BAD_REQUEST,
                "{method} {path}: {}",
                got.text()
            );
        }
    }
    for dir in ["..", "a/../..", "%2e%2e", "/..", "a%00"] {
        let got = get(&site, &format!("{base}/files?dir={dir}"), key).await;
        assert_eq!(
            got.status,
            StatusCode::BAD_REQUEST,
            "dir={dir}: {}",
            got.text()
        );
    }
    // Nothing was written, here or above.
    assert!(listing(&get(&site, &format!("{base}/files"), key).await).is_empty());
    assert_eq!(
        files_below(site.db.dir()).keys().collect::<Vec<_>>(),
        before.keys().collect::<Vec<_>>()
    );
    let escaped: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(&mark))
        .collect();
    assert!(escaped.is_empty(), "written outside the store: {escaped:?}");

    // Names that only look odd are files like any other, kept inside the store.
    let fine = [
        "...",
        "..hidden",
        "a..b",
        ".env",
        "%2e%2e",
        "名前/ファイル.txt",
        "-rf",
        "a~b#c[1]{2}.txt",
    ];
    for path in fine {
        let uri = format!("{base}/files/{}", enc(path));
        let put = put_bytes(&site, &uri, key, path.as_bytes()).await;
        assert_eq!(put.status, StatusCode::CREATED, "{path}: {}", put.text());
        assert_eq!(put.json()["path"], path);
        assert_eq!(
            &get(&site, &uri, key).await.body[..],
            path.as_bytes(),
            "{path}"
        );
    }
    let store = site.db.dir().join("objects");
    let added: Vec<PathBuf> = files_below(site.db.dir())
        .into_keys()
        .filter(|p| !before.contains_key(p))
        .collect();
    assert_eq!(added.len(), fine.len(), "{added:?}");
    for p in &added {
        assert!(
            site.db.dir().join(p).starts_with(&store),
            "{p:?} is outside the store"
        );
    }
}
on_both_databases!(
    traversal_and_odd_names_are_refused_and_nothing_lands_outside_the_store,
    super::traversal_and_odd_names_are_refused_and_nothing_lands_outside_the_store
);

// ------------------------------------------------ 5. interrupted upload

async fn an_interrupted_upload_leaves_no_file_and_a_retry_replaces_it(db: TestDb) {
    let site = local_site(db, 1000).await;
    let key = key_for(&site, "vision").await;
    let key = Some(key.as_str());
    create(&site, key, "datasets", "mnist").await;
    let base = "/api/v1/datasets/vision/mnist";
    let store = site.db.dir().join("objects");

    let cut = send(
        &site,
        Method::PUT,
        &format!("{base}/files/a/new.bin"),
        key,
        &[],
        broken_body(vec![vec![1; 300], vec![2; 300]]),
    )
    .await;
    assert_eq!(cut.status, StatusCode::BAD_REQUEST, "{}", cut.text());
    assert!(cut.error().2.contains("interrupted"), "{}", cut.text());
    assert!(listing(&get(&site, &format!("{base}/files"), key).await).is_empty());
    assert_eq!(
        get(&site, &format!("{base}/files/a/new.bin"), key)
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(get(&site, base, key).await.json()["files"], 0);
    assert!(files_below(&store).is_empty(), "{:?}", files_below(&store));
    let zip = get(&site, &format!("{base}/archive.zip"), key).await;
    assert!(unzip(&zip.body).is_empty());

    // The retry goes through whole.
    let whole = noise(900, 3);
    upload(&site, key, base, "a/new.bin", &whole).await;
    assert!(
        get(&site, &format!("{base}/files/a/new.bin"), key)
            .await
            .body
            == whole
    );

    // Breaking a replacement keeps the old file whole.
    let cut = send(
        &site,
        Method::PUT,
        &format!("{base}/files/a/new.bin"),
        key,
        &[],
        broken_body(vec![vec![9; 500]]),
    )
    .await;
    assert_eq!(cut.status, StatusCode::BAD_REQUEST);
    assert!(
        get(&site, &format!("{base}/files/a/new.bin"), key)
            .await
            .body
            == whole
    );
    assert_eq!(
        listing(&get(&site, &format!("{base}/files?dir=a"), key).await),
        [("a/new.bin".to_owned(), false, 900, 1)]
    );
    let other = noise(700, 4);
    upload(&site, key, base, "a/new.bin", &other).await;
    assert!(
        get(&site, &format!("{base}/files/a/new.bin"), key)
            .await
            .body
            == other
    );

    // Past the size limit (1,000 bytes here): 413, and nothing kept.
    let over = send(
        &site,
        Method::PUT,
        &format!("{base}/files/big.bin"),
        key,
        &[],
        Body::from_stream(futures_util::stream::iter(
            (0..15).map(|_| Ok::<_, std::io::Error>(Bytes::from(vec![0u8; 100]))),
        )),
    )
    .await;
    assert_eq!(
        over.status,
        StatusCode::PAYLOAD_TOO_LARGE,
        "{}",
        over.text()
    );
    assert!(over.error().2.contains("1000 bytes"), "{}", over.text());
    assert_eq!(
        get(&site, &format!("{base}/files/big.bin"), key)
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    let over = put_bytes(&site, &format!("{base}/files/a/new.bin"), key, &[0; 1001]).await;
    assert_eq!(over.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert!(
        get(&site, &format!("{base}/files/a/new.bin"), key)
            .await
            .body
            == other
    );
    upload(&site, key, base, "exactly.bin", &[7; 1000]).await;
    let on_disk: Vec<u64> = files_below(&store).into_values().collect();
    assert_eq!(on_disk, [700, 1000], "only whole files are on disk");
}
on_both_databases!(
    an_interrupted_upload_leaves_no_file_and_a_retry_replaces_it,
    super::an_interrupted_upload_leaves_no_file_and_a_retry_replaces_it
);

// -------------------------------------------------- 6. model versions

async fn model_versions_are_uploaded_finished_tagged_and_registered_by_jobs(db: TestDb) {
    let site = local_site(db, 1 << 30).await;
    let ann = key_for(&site, "vision").await;
    let bob = key_for(&site, "speech").await;
    let (ann, bob) = (Some(ann.as_str()), Some(bob.as_str()));
    create(&site, ann, "models", "resnet").await;
    let base = "/api/v1/models/vision/resnet";
    let shared = call(
        &site,
        Method::POST,
        &format!("{base}/shares"),
        ann,
        Some(json!({"account": "speech"})),
    )
    .await;
    assert_eq!(shared.status, StatusCode::CREATED);

    // A model's files belong to a version.
    let no_version = put_bytes(&site, &format!("{base}/files/model.tar.gz"), ann, b"x").await;
    assert_eq!(no_version.status, StatusCode::BAD_REQUEST);
    assert_eq!(no_version.error().1.as_deref(), Some("version"));
    let missing = put_bytes(
        &site,
        &format!("{base}/files/model.tar.gz?version=1"),
        ann,
        b"x",
    )
    .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);

    let v1 = call(
        &site,
        Method::POST,
        &format!("{base}/versions"),
        ann,
        Some(json!({"description": "first", "tags": "Candidate"})),
    )
    .await;
    assert_eq!(v1.status, StatusCode::CREATED, "{}", v1.text());
    let v1 = v1.json();
    assert_eq!(v1["version"], 1);
    assert_eq!(v1["state"], "uploading");
    assert_eq!(v1["tags"], json!(["candidate"]));
    assert_eq!(v1["created_by"], "ann@example.com");
    assert_eq!(v1["job"], Value::Null);
    let finish_empty = call(
        &site,
        Method::POST,
        &format!("{base}/versions/1/finish"),
        ann,
        None,
    )
    .await;
    assert_eq!(
        finish_empty.status,
        StatusCode::BAD_REQUEST,
        "{}",
        finish_empty.text()
    );
    let tarball = noise(50_000, 5);
    upload(&site, ann, base, "model.tar.gz?version=1", &tarball).await;
    upload(
        &site,
        ann,
        base,
        "config/infer.yml?version=1",
        b"batch: 1\n",
    )
    .await;

    // Until finished, a version is its owner's only.
    let listed = get(&site, &format!("{base}/versions"), ann).await.json();
    assert_eq!(listed[0]["files"], 2);
    assert_eq!(listed[0]["bytes"], 50_000 + 9);
    let theirs = get(&site, &format!("{base}/versions"), bob).await;
    assert_eq!(theirs.status, StatusCode::OK);
    assert_eq!(
        theirs.json(),
        json!([]),
        "another account sees an unfinished version"
    );
    for uri in [
        format!("{base}/files/model.tar.gz?version=1"),
        format!("{base}/files?version=1"),
        format!("{base}/archive.zip?version=1"),
    ] {
        assert_eq!(
            get(&site, &uri, bob).await.status,
            StatusCode::NOT_FOUND,
            "{uri}"
        );
        assert_eq!(get(&site, &uri, ann).await.status, StatusCode::OK, "{uri}");
    }
    let link = call(
        &site,
        Method::POST,
        &format!("{base}/shares"),
        ann,
        Some(json!({"link": true})),
    )
    .await
    .json();
    let by_link = format!(
        "/api/v1{}/files/model.tar.gz?version=1",
        link["path"].as_str().unwrap()
    );
    assert_eq!(
        get(&site, &by_link, None).await.status,
        StatusCode::NOT_FOUND
    );

    let done = call(
        &site,
        Method::POST,
        &format!("{base}/versions/1/finish"),
        ann,
        None,
    )
    .await;
    assert_eq!(done.status, StatusCode::OK, "{}", done.text());
    assert_eq!(done.json()["state"], "ready");
    assert!(
        get(&site, &format!("{base}/files/model.tar.gz?version=1"), bob)
            .await
            .body
            == tarball
    );
    let zip = unzip(
        &get(&site, &format!("{base}/archive.zip?version=1"), bob)
            .await
            .body,
    );
    assert_eq!(
        zip.keys().collect::<Vec<_>>(),
        ["config/infer.yml", "model.tar.gz"]
    );
    assert!(zip["model.tar.gz"] == tarball);
    assert!(get(&site, &by_link, None).await.body == tarball);
    assert_eq!(
        get(&site, &format!("{base}/versions"), bob).await.json()[0]["version"],
        1
    );
    // A finished version does not change.
    let late = put_bytes(
        &site,
        &format!("{base}/files/extra.txt?version=1"),
        ann,
        b"x",
    )
    .await;
    assert_eq!(late.status, StatusCode::CONFLICT, "{}", late.text());
    let late = call(
        &site,
        Method::DELETE,
        &format!("{base}/files/model.tar.gz?version=1"),
        ann,
        None,
    )
    .await;
    assert_eq!(late.status, StatusCode::CONFLICT, "{}", late.text());
    // A reader does not register versions.
    let not_yours = call(
        &site,
        Method::POST,
        &format!("{base}/versions"),
        bob,
        Some(json!({})),
    )
    .await;
    assert_eq!(not_yours.status, StatusCode::FORBIDDEN);

    // Stage tags move: one version is `candidate`, one `production`.
    let v2 = call(
        &site,
        Method::POST,
        &format!("{base}/versions"),
        ann,
        Some(json!({"description": "second", "tags": "candidate"})),
    )
    .await;
    assert_eq!(v2.json()["version"], 2);
    let tag = |v: u32, tags: &'static str| {
        let site = &site;
        async move {
            let got = call(
                site,
                Method::PUT,
                &format!("{base}/versions/{v}/tags"),
                ann,
                Some(json!({"tags": tags})),
            )
            .await;
            assert_eq!(got.status, StatusCode::OK, "{}", got.text());
        }
    };
    tag(1, "production, best").await;
    tag(2, "candidate, production").await;
    let versions = get(&site, &format!("{base}/versions"), ann).await.json();
    let summary: Vec<(u64, Value, String)> = versions
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["version"].as_u64().unwrap(),
                v["tags"].clone(),
                v["state"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                2,
                json!(["candidate", "production"]),
                "uploading".to_owned()
            ),
            (1, json!(["best"]), "ready".to_owned()),
        ]
    );
    let bad = call(
        &site,
        Method::PUT,
        &format!("{base}/versions/9/tags"),
        ann,
        Some(json!({"tags": "x"})),
    )
    .await;
    assert_eq!(bad.status, StatusCode::NOT_FOUND);

    // A job's token: registers a version (recording the job), reads datasets,
    // deletes and shares nothing.
    create(&site, ann, "datasets", "mnist").await;
    upload(
        &site,
        ann,
        "/api/v1/datasets/vision/mnist",
        "train.txt",
        b"digits",
    )
    .await;
    let me = site.owner("vision").await;
    let spec: app::models::JobSpec =
        serde_json::from_value(job_spec("train", "true", &[])).unwrap();
    let (_, token) = server::jobs::JobStore::new(site.db.pool.clone())
        .insert(&me, &spec, "local")
        .await
        .unwrap();
    let job = Some(token.as_str());
    let v3 = call(
        &site,
        Method::POST,
        &format!("{base}/versions"),
        job,
        Some(json!({"description": "from a job", "job": "someone-else"})),
    )
    .await;
    assert_eq!(v3.status, StatusCode::CREATED, "{}", v3.text());
    assert_eq!(v3.json()["job"], "train");
    assert_eq!(v3.json()["created_by"], me.email);
    upload(&site, job, base, "model.tar.gz?version=3", b"weights").await;
    let done = call(
        &site,
        Method::POST,
        &format!("{base}/versions/3/finish"),
        job,
        None,
    )
    .await;
    assert_eq!(done.status, StatusCode::OK, "{}", done.text());
    assert_eq!(
        get(&site, &format!("{base}/versions"), ann).await.json()[0]["job"],
        "train"
    );
    assert_eq!(
        &get(&site, "/api/v1/datasets/vision/mnist/files/train.txt", job)
            .await
            .body[..],
        b"digits"
    );
    assert_eq!(
        get(&site, "/api/v1/datasets/vision/mnist/files", job)
            .await
            .status,
        StatusCode::OK
    );
    for (method, uri) in [
        (
            Method::DELETE,
            "/api/v1/datasets/vision/mnist/files/train.txt",
        ),
        (Method::DELETE, "/api/v1/datasets/vision/mnist"),
        (Method::PUT, "/api/v1/datasets/vision/mnist/files/train.txt"),
        (Method::POST, "/api/v1/datasets"),
        (Method::POST, "/api/v1/datasets/vision/mnist/shares"),
        (Method::DELETE, "/api/v1/models/vision/resnet"),
        (
            Method::DELETE,
            "/api/v1/models/vision/resnet/files/model.tar.gz?version=2",
        ),
        (Method::POST, "/api/v1/models/vision/resnet/shares"),
        (Method::PUT, "/api/v1/models/vision/resnet/public"),
        (Method::GET, "/api/v1/jobs"),
    ] {
        let got = call(
            &site,
            method.clone(),
            uri,
            job,
            Some(json!({"name": "x", "link": true, "public": true})),
        )
        .await;
        assert_eq!(
            got.status,
            StatusCode::FORBIDDEN,
            "job token {method} {uri}: {}",
            got.text()
        );
    }
    assert_eq!(
        &get(&site, "/api/v1/datasets/vision/mnist/files/train.txt", ann)
            .await
            .body[..],
        b"digits"
    );
    assert_eq!(get(&site, base, ann).await.status, StatusCode::OK);
    // A job of another account registers nothing here.
    let bob_me = site.owner("speech").await;
    let (_, bob_token) = server::jobs::JobStore::new(site.db.pool.clone())
        .insert(&bob_me, &spec, "local")
        .await
        .unwrap();
    let foreign = call(
        &site,
        Method::POST,
        &format!("{base}/versions"),
        Some(&bob_token),
        Some(json!({})),
    )
    .await;
    assert_eq!(foreign.status, StatusCode::FORBIDDEN, "{}", foreign.text());
}
on_both_databases!(
    model_versions_are_uploaded_finished_tagged_and_registered_by_jobs,
    super::model_versions_are_uploaded_finished_tagged_and_registered_by_jobs
);

// ------------------------------------------------ 7. jobs read datasets

/// A job names datasets (its own, and one shared with it) and reads their
/// files; a dataset it cannot read is refused at submission.
async fn a_job_reads_its_datasets(site: &Site) {
    let ann = key_for(site, "jobs-ann").await;
    let bob = key_for(site, "jobs-bob").await;
    create(site, Some(&ann), "datasets", "digits").await;
    upload(
        site,
        Some(&ann),
        "/api/v1/datasets/jobs-ann/digits",
        "train.txt",
        b"line one\nline two\n",
    )
    .await;
    upload(
        site,
        Some(&ann),
        "/api/v1/datasets/jobs-ann/digits",
        "odd [1]~.txt",
        b"odd name\n",
    )
    .await;
    create(site, Some(&bob), "datasets", "corpus").await;
    upload(
        site,
        Some(&bob),
        "/api/v1/datasets/jobs-bob/corpus",
        "words/a.txt",
        b"shared words\n",
    )
    .await;
    create(site, Some(&bob), "datasets", "secret").await;
    let share = call(
        site,
        Method::POST,
        "/api/v1/datasets/jobs-bob/corpus/shares",
        Some(&bob),
        Some(json!({"account": "jobs-ann"})),
    )
    .await;
    assert_eq!(share.status, StatusCode::CREATED);

    let script = "cat \"$PADDLE_DATASET_DIR/train.txt\" \"$PADDLE_DATASET_DIR/odd [1]~.txt\" \
                  \"$PADDLE_DATASET_DIR_CORPUS/words/a.txt\"";
    let made = call(
        site,
        Method::POST,
        "/api/v1/jobs",
        Some(&ann),
        Some(job_spec("reader", script, &["digits", "jobs-bob/corpus"])),
    )
    .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());
    wait_for_job(site, &ann, "reader", "succeeded").await;
    let log = get(site, "/api/v1/jobs/reader/pods/trainer-0/log", Some(&ann)).await;
    assert_eq!(log.text(), "line one\nline two\nodd name\nshared words\n");

    for (datasets, shown) in [
        (&["jobs-bob/secret"][..], "jobs-bob/secret"),
        (&["nope"][..], "nope"),
        (&["digits", "jobs-x/y"][..], "jobs-x/y"),
    ] {
        let refused = call(
            site,
            Method::POST,
            "/api/v1/jobs",
            Some(&ann),
            Some(job_spec("refused", "true", datasets)),
        )
        .await;
        assert_eq!(
            refused.status,
            StatusCode::BAD_REQUEST,
            "{datasets:?}: {}",
            refused.text()
        );
        let (_, field, message) = refused.error();
        assert_eq!(field.as_deref(), Some("datasets"));
        assert!(message.contains(shown), "{message}");
        assert_eq!(
            get(site, "/api/v1/jobs/refused", Some(&ann)).await.status,
            StatusCode::NOT_FOUND
        );
    }
    let bad = call(
        site,
        Method::POST,
        "/api/v1/jobs",
        Some(&ann),
        Some(job_spec("refused", "true", &["../etc"])),
    )
    .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
}

async fn a_job_reads_datasets_from_local_storage(db: TestDb) {
    let site = local_site(db, 1 << 30).await;
    a_job_reads_its_datasets(&site).await;
}
on_both_databases!(
    a_job_reads_datasets_from_local_storage,
    super::a_job_reads_datasets_from_local_storage
);
