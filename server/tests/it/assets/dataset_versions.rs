//! A dataset's saved versions: the working files as they were, kept while
//! the working files change, read by jobs that name `name:N`.

use super::*;

async fn save(site: &Site, key: Option<&str>, base: &str, body: Value) -> Answer {
    call(
        site,
        Method::POST,
        &format!("{base}/versions"),
        key,
        Some(body),
    )
    .await
}

async fn file_text(site: &Site, key: Option<&str>, base: &str, path: &str) -> (StatusCode, String) {
    let got = get(site, &format!("{base}/files/{path}"), key).await;
    (got.status, got.text())
}

/// Saves versions of a dataset, changes its working files, and checks that
/// each version still holds what it held, that it cannot change, and that
/// jobs read the version they name. Shared by the local and S3 stores.
pub(super) async fn a_dataset_keeps_its_saved_versions(site: &Site) {
    let ann = key_for(site, "vers-ann").await;
    let bob = key_for(site, "vers-bob").await;
    let (ann, bob) = (Some(ann.as_str()), Some(bob.as_str()));
    create(site, ann, "datasets", "points").await;
    let base = "/api/v1/datasets/vers-ann/points";

    // Nothing to save yet.
    let empty = save(site, ann, base, json!({})).await;
    assert_eq!(empty.status, StatusCode::BAD_REQUEST, "{}", empty.text());
    assert_eq!(empty.error().1.as_deref(), Some("version"));
    assert!(
        empty.error().2.contains("no files to save"),
        "{}",
        empty.text()
    );

    upload(site, ann, base, "a.txt", b"one\n").await;
    upload(site, ann, base, "b/c.txt", b"two\n").await;
    let v1 = save(
        site,
        ann,
        base,
        json!({"description": "first cut", "tags": ["clean"]}),
    )
    .await;
    assert_eq!(v1.status, StatusCode::CREATED, "{}", v1.text());
    let v1 = v1.json();
    assert_eq!(v1["version"], 1);
    assert_eq!(v1["state"], "ready");
    assert_eq!(
        (v1["files"].as_u64(), v1["bytes"].as_u64()),
        (Some(2), Some(8))
    );
    assert_eq!(v1["description"], "first cut");
    assert_eq!(v1["tags"], json!(["clean"]));
    assert_eq!(v1["created_by"], "ann@example.com");

    // The working files change; version 1 does not.
    upload(site, ann, base, "a.txt", b"ONE, changed\n").await;
    let gone = call(site, Method::DELETE, &format!("{base}/files/b"), ann, None).await;
    assert_eq!(gone.status, StatusCode::NO_CONTENT, "{}", gone.text());
    upload(site, ann, base, "d.txt", b"four\n").await;
    assert_eq!(
        file_text(site, ann, base, "a.txt?version=1").await,
        (StatusCode::OK, "one\n".to_owned())
    );
    assert_eq!(
        file_text(site, ann, base, "b/c.txt?version=1").await,
        (StatusCode::OK, "two\n".to_owned())
    );
    assert_eq!(
        file_text(site, ann, base, "a.txt").await,
        (StatusCode::OK, "ONE, changed\n".to_owned())
    );
    assert_eq!(
        file_text(site, ann, base, "d.txt?version=1").await.0,
        StatusCode::NOT_FOUND
    );
    let zip = get(site, &format!("{base}/archive.zip?version=1"), ann).await;
    assert_eq!(zip.status, StatusCode::OK);
    let files = unzip(&zip.body);
    assert_eq!(
        files.keys().cloned().collect::<Vec<_>>(),
        ["a.txt", "b/c.txt"]
    );
    assert_eq!(files["a.txt"], b"one\n");

    // A saved version is complete: its files never change.
    let into = put_bytes(site, &format!("{base}/files/x.txt?version=1"), ann, b"x").await;
    assert_eq!(into.status, StatusCode::CONFLICT, "{}", into.text());
    let out = call(
        site,
        Method::DELETE,
        &format!("{base}/files/a.txt?version=1"),
        ann,
        None,
    )
    .await;
    assert_eq!(out.status, StatusCode::CONFLICT, "{}", out.text());

    let v2 = save(site, ann, base, json!({"description": "second"})).await;
    assert_eq!(v2.status, StatusCode::CREATED, "{}", v2.text());
    assert_eq!(v2.json()["version"], 2);
    let listed = get(site, &format!("{base}/versions"), ann).await.json();
    let numbers: Vec<u64> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers, [2, 1]);

    // Another account sees neither the dataset nor its versions.
    assert_eq!(
        get(site, &format!("{base}/versions"), bob).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        save(site, bob, base, json!({})).await.status,
        StatusCode::NOT_FOUND
    );

    // Jobs read the version they name, or the working files.
    let script = "cat \"$PADDLE_DATASET_DIR/a.txt\"; ls -R \"$PADDLE_DATASET_DIR\" | grep -c txt";
    for (job, dataset, want) in [
        ("old-points", "points:1", "one\n2\n"),
        ("new-points", "vers-ann/points:2", "ONE, changed\n2\n"),
        ("now-points", "points", "ONE, changed\n2\n"),
    ] {
        let made = call(
            site,
            Method::POST,
            "/api/v1/jobs",
            ann,
            Some(job_spec(job, script, &[dataset])),
        )
        .await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());
        assert_eq!(made.json()["spec"]["datasets"], json!([dataset]));
        wait_for_job(site, ann.unwrap(), job, "succeeded").await;
        let log = get(site, &format!("/api/v1/jobs/{job}/pods/trainer-0/log"), ann).await;
        assert_eq!(log.text(), want, "{job} read {dataset}");
    }
    for (dataset, says) in [
        ("points:9", "“vers-ann/points” version 9"),
        ("points:0", "a number from 1"),
        ("points:v1", "a number from 1"),
    ] {
        let refused = call(
            site,
            Method::POST,
            "/api/v1/jobs",
            ann,
            Some(job_spec("refused-version", "true", &[dataset])),
        )
        .await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{dataset}");
        let (_, field, message) = refused.error();
        assert_eq!(field.as_deref(), Some("datasets"), "{dataset}");
        assert!(message.contains(says), "{dataset}: {message}");
    }

    // Deleting the dataset deletes its versions' files too.
    let deleted = call(site, Method::DELETE, base, ann, None).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT, "{}", deleted.text());
}

async fn a_dataset_keeps_its_saved_versions_on_local_storage(db: TestDb) {
    let site = local_site(db, 1 << 30).await;
    a_dataset_keeps_its_saved_versions(&site).await;
    // Nothing of the dataset is left in the store's folder.
    let left = files_below(&site.db.dir().join("objects/datasets/vers-ann"));
    assert!(left.is_empty(), "{left:?}");
}
on_both_databases!(
    a_dataset_keeps_its_saved_versions_on_local_storage,
    super::a_dataset_keeps_its_saved_versions_on_local_storage
);
