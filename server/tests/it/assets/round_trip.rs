//! Everything a user does with one dataset's files through REST, on local
//! storage and (see `s3`) on S3.

use super::*;

/// Everything a user does with one dataset's files, through REST, on
/// whichever storage the site has. Leaves no dataset behind.
pub(super) async fn round_trip(site: &Site) {
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
        Some(json!({"name": " mnist ", "description": "Handwritten digits", "tags": ["images", " Digits"]})),
    )
    .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());
    let asset = made.json();
    assert_eq!(asset["owner"], "vision");
    assert_eq!(asset["name"], "mnist");
    assert_eq!(asset["tags"], json!(["images", "digits"]));
    assert_eq!(asset["access"], "owner");
    assert_eq!(asset["files"], 0);
    // Tags go in as they come out: a list. Text with commas (the page's
    // form) is not a list, and a tag holding a comma would become two.
    let many: Vec<String> = (0..21).map(|i| format!("t{i}")).collect();
    for (tags, field) in [
        (json!("images, digits"), "tags"),
        (json!(["images", "a,b"]), "tags[1]"),
        (json!(["  "]), "tags[0]"),
        (json!(many), "tags"),
    ] {
        let got = call(
            site,
            Method::PATCH,
            "/api/v1/datasets/vision/mnist",
            key,
            Some(json!({"tags": tags})),
        )
        .await;
        assert_eq!(
            got.status,
            StatusCode::BAD_REQUEST,
            "{tags}: {}",
            got.text()
        );
        assert_eq!(
            got.error().1.as_deref(),
            Some(field),
            "{tags}: {}",
            got.text()
        );
    }
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
