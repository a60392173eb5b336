//! The datasets and models pages as a browser without JavaScript sees them:
//! server-rendered listings and previews, the multipart upload form, the
//! owner's forms, and a share link's page opened signed out and as another
//! account.

use crate::common::site::{location, site, text, Site};
use axum::body::Body;
use http::{header, Request, StatusCode};

/// A file as the REST route takes it, with the browser's session.
async fn put(site: &Site, cookie: &str, path: &str, body: &'static [u8]) -> StatusCode {
    site.send(
        Request::put(path)
            .header(header::COOKIE, cookie)
            .body(Body::from(body))
            .unwrap(),
    )
    .await
    .status()
}

/// A multipart body of `files` as a browser's form sends it.
fn multipart(files: &[(&str, &str, &str)]) -> (String, String) {
    let boundary = "----pcboundary7MA4YWxk";
    let mut body = String::new();
    for (field, name, content) in files {
        body.push_str(&format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"{field}\"; filename=\"{name}\"\r\n\
             Content-Type: application/octet-stream\r\n\r\n{content}\r\n"
        ));
    }
    body.push_str(&format!("--{boundary}--\r\n"));
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// A page's HTML without the hydration markers between text nodes.
async fn html(res: http::Response<Body>) -> String {
    text(res).await.replace("<!>", "")
}

async fn upload_form(
    site: &Site,
    cookie: &str,
    action: &str,
    files: &[(&str, &str, &str)],
) -> String {
    let (content_type, body) = multipart(files);
    let res = site
        .send(
            Request::post(action)
                .header(header::COOKIE, cookie)
                .header(header::CONTENT_TYPE, content_type)
                .header(header::ACCEPT, "text/html")
                .body(Body::from(body))
                .unwrap(),
        )
        .await;
    assert_eq!(
        res.status(),
        StatusCode::SEE_OTHER,
        "the form goes back to the page"
    );
    location(&res)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dataset_made_uploaded_and_browsed_without_javascript_shows_its_files_and_previews() {
    let site = site().await;
    let cookie = site.sign_up("vision").await;

    // The create form posts to the server function, which opens the new dataset.
    let res = site
        .form_post(
            "/api/create_asset",
            "kind=dataset&form%5Bname%5D=mnist&form%5Bdescription%5D=Digits&form%5Btags%5D=images%2C+mnist",
            "/datasets?new=1",
        )
        .await;
    // Without the cookie it is refused (back to the form); with it, it
    // redirects to the new dataset.
    assert!(
        !location(&res).starts_with("/datasets/vision/mnist"),
        "{}",
        location(&res)
    );
    let res = site
        .send(
            Request::post("/api/create_asset")
                .header(header::COOKIE, &cookie)
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .header(header::ACCEPT, "text/html")
                .header(header::REFERER, "http://localhost/datasets?new=1")
                .body(Body::from(
                    "kind=dataset&form%5Bname%5D=mnist&form%5Bdescription%5D=Digits&form%5Btags%5D=images%2C+mnist",
                ))
                .unwrap(),
        )
        .await;
    assert_eq!(res.status(), StatusCode::FOUND);
    assert_eq!(location(&res), "/datasets/vision/mnist");

    // The no-JavaScript upload form: a folder pick sends relative paths.
    let back = upload_form(
        &site,
        &cookie,
        "/upload/datasets/vision/mnist?dir=",
        &[
            (
                "files",
                "labels.csv",
                "id,label\n1,seven\n2,\"two, maybe\"\n",
            ),
            ("folder", "train/a.txt", "hello"),
            ("folder", "train/b.json", "{\"k\":[1,2]}"),
        ],
    )
    .await;
    assert_eq!(back, "/datasets/vision/mnist?uploaded=3");

    let page = html(site.get("/datasets/vision/mnist", Some(&cookie)).await).await;
    assert!(page.contains("Digits"), "description shown");
    assert!(
        page.contains("data-path=\"labels.csv\"") && page.contains("data-path=\"train\""),
        "root listing: {page}"
    );
    assert!(
        page.contains("/api/v1/datasets/vision/mnist/archive.zip"),
        "zip download link"
    );
    assert!(
        page.contains("data-testid=\"uploader\""),
        "the owner can upload"
    );
    assert!(
        page.contains("href=\"/datasets/vision/mnist/settings\""),
        "the owner can share"
    );
    let settings = html(
        site.get("/datasets/vision/mnist/settings", Some(&cookie))
            .await,
    )
    .await;
    assert!(
        settings.contains("data-testid=\"share-panel\""),
        "{settings}"
    );

    let page = html(
        site.get(
            "/datasets/vision/mnist?dir=train&file=train%2Fb.json",
            Some(&cookie),
        )
        .await,
    )
    .await;
    assert!(
        page.contains("a.txt") && !page.contains("labels.csv"),
        "the folder's files only"
    );
    assert!(
        page.contains("&quot;k&quot;: [") || page.contains("\"k\": ["),
        "JSON indented: {page}"
    );

    let page = html(
        site.get("/datasets/vision/mnist?file=labels.csv", Some(&cookie))
            .await,
    )
    .await;
    assert!(
        page.contains("<th>label</th>"),
        "CSV head as a table: {page}"
    );
    assert!(
        page.contains("<td>two, maybe</td>"),
        "quoted field kept whole"
    );

    // The list page shows it among the account's own.
    let page = html(site.get("/datasets", Some(&cookie)).await).await;
    assert!(page.contains("href=\"/datasets/vision/mnist\""));

    // A bad path in the form is refused with the reason, and nothing lands.
    let back = upload_form(
        &site,
        &cookie,
        "/upload/datasets/vision/mnist?dir=",
        &[("files", "../escape.txt", "x")],
    )
    .await;
    assert!(back.contains("upload_error="), "{back}");
    let page = html(site.get("/datasets/vision/mnist", Some(&cookie)).await).await;
    assert!(!page.contains("data-path=\"escape.txt\""));
    let page = html(site.get(&back, Some(&cookie)).await).await;
    assert!(
        page.contains("is not a file path"),
        "the reason is shown: {page}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_share_link_page_opens_signed_out_and_for_another_account_until_revoked() {
    let site = site().await;
    let owner = site.sign_up("vision").await;
    let other = site.sign_up("speech").await;
    let create = |name: &str| {
        format!("kind=dataset&form%5Bname%5D={name}&form%5Bdescription%5D=&form%5Btags%5D=")
    };
    let res = site
        .send(
            Request::post("/api/create_asset")
                .header(header::COOKIE, &owner)
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .header(header::ACCEPT, "text/html")
                .body(Body::from(create("faces")))
                .unwrap(),
        )
        .await;
    assert_eq!(res.status(), StatusCode::FOUND);
    assert_eq!(
        put(
            &site,
            &owner,
            "/api/v1/datasets/vision/faces/files/readme.txt",
            b"faces v1"
        )
        .await,
        StatusCode::CREATED
    );

    // Another account does not even see that it exists.
    let page = html(site.get("/datasets/vision/faces", Some(&other)).await).await;
    assert!(page.contains("not found"), "{page}");

    // The owner makes a link; the page shows it once, in the redirect.
    let res = site
        .send(
            Request::post("/api/change_asset")
                .header(header::COOKIE, &owner)
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .header(header::ACCEPT, "text/html")
                .header(
                    header::REFERER,
                    "http://localhost/datasets/vision/faces/settings",
                )
                .body(Body::from(
                    "asset%5Bkind%5D=dataset&asset%5Bowner%5D=vision&asset%5Bname%5D=faces\
                     &change%5Bop%5D=create_link&change%5Bexpires_in_days%5D=7",
                ))
                .unwrap(),
        )
        .await;
    assert_eq!(res.status(), StatusCode::FOUND);
    let back = location(&res);
    let path = back
        .split("link=")
        .nth(1)
        .map(|p| p.replace("%2F", "/"))
        .expect("the new link in the redirect");
    assert!(path.starts_with("/shared/pcs_"), "{path}");
    let page = html(site.get(&back, Some(&owner)).await).await;
    assert!(page.contains("data-testid=\"new-link\""));
    assert!(
        page.contains("link pcs_"),
        "listed among the shares by its prefix"
    );

    // Signed out: the shared page renders (no sign-in redirect), read-only.
    let res = site.get(&path, None).await;
    assert_eq!(res.status(), StatusCode::OK);
    let page = html(res).await;
    assert!(page.contains("readme.txt"), "{page}");
    assert!(page.contains("opened by link"));
    assert!(
        !page.contains("data-testid=\"uploader\""),
        "a link cannot write"
    );
    let token = path.trim_start_matches("/shared/");
    let file = site
        .get(&format!("/api/v1/shared/{token}/files/readme.txt"), None)
        .await;
    assert_eq!(file.status(), StatusCode::OK);
    assert_eq!(text(file).await, "faces v1");
    // Signed in as another account: the link works too.
    let page = html(site.get(&path, Some(&other)).await).await;
    assert!(page.contains("readme.txt"));

    // Revoked: the page and the files are gone for everyone.
    let share_id: i64 = sqlx::query_scalar("SELECT id FROM asset_shares")
        .fetch_one(&site.db.pool)
        .await
        .unwrap();
    let res = site
        .send(
            Request::post("/api/change_asset")
                .header(header::COOKIE, &owner)
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .header(header::ACCEPT, "text/html")
                .header(header::REFERER, "http://localhost/datasets/vision/faces")
                .body(Body::from(format!(
                    "asset%5Bkind%5D=dataset&asset%5Bowner%5D=vision&asset%5Bname%5D=faces\
                     &change%5Bop%5D=revoke&change%5Bshare%5D={share_id}"
                )))
                .unwrap(),
        )
        .await;
    assert_eq!(res.status(), StatusCode::FOUND);
    let page = html(site.get(&path, None).await).await;
    assert!(page.contains("Not available"), "{page}");
    let file = site
        .get(&format!("/api/v1/shared/{token}/files/readme.txt"), None)
        .await;
    assert_eq!(file.status(), StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_model_page_lists_versions_and_takes_files_only_while_a_version_is_uploading() {
    let site = site().await;
    let cookie = site.sign_up("vision").await;
    let post = |path: &'static str, body: String| {
        let cookie = cookie.clone();
        let site = &site;
        async move {
            site.send(
                Request::post(path)
                    .header(header::COOKIE, cookie)
                    .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                    .header(header::ACCEPT, "text/html")
                    .header(header::REFERER, "http://localhost/models/vision/resnet")
                    .body(Body::from(body))
                    .unwrap(),
            )
            .await
        }
    };
    let res = post(
        "/api/create_asset",
        "kind=model&form%5Bname%5D=resnet&form%5Bdescription%5D=&form%5Btags%5D=".into(),
    )
    .await;
    assert_eq!(location(&res), "/models/vision/resnet");
    let model = "asset%5Bkind%5D=model&asset%5Bowner%5D=vision&asset%5Bname%5D=resnet";
    let res = post(
        "/api/change_asset",
        format!(
            "{model}&change%5Bop%5D=create_version\
             &change%5Bdescription%5D=first+cut&change%5Btags%5D=candidate"
        ),
    )
    .await;
    assert_eq!(res.status(), StatusCode::FOUND);
    assert!(location(&res).contains("version=1"), "{}", location(&res));

    let page = html(
        site.get("/models/vision/resnet?version=1", Some(&cookie))
            .await,
    )
    .await;
    assert!(page.contains("first cut") && page.contains("uploading"));
    assert!(
        page.contains("data-testid=\"uploader\""),
        "files go into an uploading version"
    );
    let back = upload_form(
        &site,
        &cookie,
        "/upload/models/vision/resnet?version=1",
        &[("files", "model.tar.gz", "not really gzip")],
    )
    .await;
    assert!(back.contains("uploaded=1"), "{back}");

    let res = post(
        "/api/change_asset",
        format!("{model}&change%5Bop%5D=finish_version&change%5Bversion%5D=1"),
    )
    .await;
    assert_eq!(res.status(), StatusCode::FOUND);
    let page = html(
        site.get("/models/vision/resnet?version=1", Some(&cookie))
            .await,
    )
    .await;
    assert!(page.contains("model.tar.gz"));
    assert!(page.contains(">ready<"), "{page}");
    assert!(
        !page.contains("data-testid=\"uploader\""),
        "a finished version is not changed"
    );
    assert!(page.contains("/api/v1/models/vision/resnet/archive.zip?version=1"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dataset_version_that_is_not_there_is_not_found_alike_by_its_page_its_upload_form_and_rest(
) {
    let site = site().await;
    let cookie = site.sign_up("vision").await;
    let res = site
        .send(
            Request::post("/api/create_asset")
                .header(header::COOKIE, &cookie)
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .header(header::ACCEPT, "text/html")
                .header(header::REFERER, "http://localhost/datasets?new=1")
                .body(Body::from("kind=dataset&form%5Bname%5D=digits"))
                .unwrap(),
        )
        .await;
    assert_eq!(location(&res), "/datasets/vision/digits");
    assert_eq!(
        put(
            &site,
            &cookie,
            "/api/v1/datasets/vision/digits/files/a.txt",
            b"one"
        )
        .await,
        StatusCode::CREATED
    );

    // REST: a version the dataset does not have is not found.
    let rest = site
        .send(
            Request::get("/api/v1/datasets/vision/digits/files?version=2")
                .header(header::COOKIE, &cookie)
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(rest.status(), StatusCode::NOT_FOUND);
    let body: serde_json::Value = serde_json::from_str(&text(rest).await).unwrap();
    assert_eq!(
        body["error"]["message"],
        "Version 2 of dataset “digits” not found."
    );

    // The page says the same instead of listing the working files as if no
    // version were asked.
    let page = html(
        site.get("/datasets/vision/digits?version=2", Some(&cookie))
            .await,
    )
    .await;
    assert!(
        page.contains("Version 2 of dataset “digits” not found."),
        "{page}"
    );
    assert!(!page.contains("data-path=\"a.txt\""), "{page}");
    let listed = html(site.get("/datasets/vision/digits", Some(&cookie)).await).await;
    assert!(listed.contains("data-path=\"a.txt\""), "{listed}");

    // The no-JavaScript upload form: refused, nothing stored.
    let back = upload_form(
        &site,
        &cookie,
        "/upload/datasets/vision/digits?dir=&version=2",
        &[("files", "b.txt", "two")],
    )
    .await;
    assert!(back.contains("upload_error=Version"), "{back}");
    let listed = html(site.get("/datasets/vision/digits", Some(&cookie)).await).await;
    assert!(!listed.contains("data-path=\"b.txt\""), "{listed}");
}
