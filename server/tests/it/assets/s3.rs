//! Dataset and model files on S3-compatible storage (moto's server): the
//! round trip, streaming in parts, ranges, and storage that goes away.

use super::dataset_versions::a_dataset_keeps_its_saved_versions;
use super::job_datasets::a_job_reads_its_datasets;
use super::round_trip::round_trip;
use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn a_dataset_round_trips_through_rest_on_s3() {
    let Some(mut moto) = moto().await else { return };
    moto.create_bucket("paddle").await;
    let db = common::sqlite().await;
    let site = site_on(
        db,
        Storage::Opened(moto.objects("paddle", "console/one", 1 << 30)),
    )
    .await;
    round_trip(&site).await;
    assert_eq!(moto.keys("paddle", "console/").await, Vec::<String>::new());
    assert_eq!(moto.open_uploads("paddle").await, 0);

    // A local job reads a dataset kept on S3 (fetched into a cache for it).
    a_job_reads_its_datasets(&site).await;
    // Saved versions are server-side copies there.
    a_dataset_keeps_its_saved_versions(&site).await;

    // When the storage goes away: a file is "unavailable" (503, not a
    // missing file), and a zip download fails instead of ending as a
    // smaller archive that looks whole.
    let ann = SqlAccessKeys::new(site.db.pool.clone())
        .create_for("jobs-ann", "ann@example.com", "late", Default::default())
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

#[tokio::test(flavor = "multi_thread")]
async fn the_store_streams_large_files_to_s3_in_parts_and_reads_ranges_back() {
    let Some(moto) = moto().await else { return };
    moto.create_bucket("paddle").await;
    let db = common::sqlite().await;
    // As `paddlecloud serve --storage s3://…` opens it, AWS_* variables and all.
    let setting =
        |s: &str| server::assets::objects::Objects::from_setting_in(s, 64 << 20, moto.vars());
    assert!(setting("s3://").is_err());
    assert!(setting("s3:///prefix").is_err());
    let site = site_on(
        db,
        Storage::Opened(setting("s3://paddle/console/two/").unwrap()),
    )
    .await;
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
