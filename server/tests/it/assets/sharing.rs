//! Who reads what: the sharing matrix (owner, another account, a share,
//! a link, public) on every route.

use super::*;

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
