//! Bad paths and broken uploads: traversal and odd names are refused with
//! nothing landing outside the store; an interrupted upload leaves no file.

use super::*;

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
