//! Model versions: uploaded, finished, tagged, and registered by jobs.

use super::*;

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
        Some(json!({"description": "first", "tags": ["Candidate"]})),
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
        Some(json!({"description": "second", "tags": ["candidate"]})),
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
                Some(json!({"tags": app::models::tag_list(tags)})),
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
        Some(json!({"tags": ["x"]})),
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
    let (_, token) = server::storage::jobs::JobStore::new(site.db.pool.clone())
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
    let (_, bob_token) = server::storage::jobs::JobStore::new(site.db.pool.clone())
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
