//! The HTTP surface driven in-process: pages, server functions, cookies and
//! status codes, as a browser (with or without JavaScript) or a script sees them.

use crate::common::site::{cookie_pair, location, set_cookie, site, site_with, text, Site};
use axum::body::Body;
use http::{header, Request, StatusCode};

#[tokio::test(flavor = "multi_thread")]
async fn healthz_answers_ok_with_the_version() {
    let site = site().await;
    let res = site.get("/healthz", None).await;
    assert_eq!(res.status(), StatusCode::OK);
    let body: serde_json::Value = serde_json::from_str(&text(res).await).unwrap();
    assert_eq!(body["status"], "ok");
    assert_eq!(body["version"], env!("CARGO_PKG_VERSION"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_signed_out_visitor_is_sent_to_login_with_the_page_they_wanted() {
    let site = site().await;
    for (path, next) in [
        ("/jobs", "%2Fjobs"),
        ("/serving?tab=all", "%2Fserving%3Ftab%3Dall"),
        ("/", "%2F"),
        ("/account", "%2Faccount"),
    ] {
        let res = site.get(path, None).await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{path}");
        assert_eq!(location(&res), format!("/login?next={next}"));
    }
    let login = site.get("/login", None).await;
    assert_eq!(login.status(), StatusCode::OK);
    assert!(text(login).await.contains("Sign in to PaddleCloud"));
}

#[tokio::test(flavor = "multi_thread")]
async fn signing_up_without_javascript_sets_a_protected_cookie_and_opens_jobs() {
    let site = site().await;
    let res = site
        .form_post(
            "/api/sign_up",
            "account=vision&email=ann%40example.com&password=a+long+password",
            "/signup",
        )
        .await;
    assert_eq!(res.status(), StatusCode::FOUND);
    assert_eq!(location(&res), "/jobs");
    let cookie = set_cookie(&res);
    assert!(cookie.starts_with("pc_session="), "{cookie}");
    for attr in ["HttpOnly", "SameSite=Lax", "Path=/", "Max-Age=2592000"] {
        assert!(cookie.contains(attr), "{attr} missing from {cookie}");
    }
    assert!(
        !cookie.contains("Secure"),
        "plain http must not get Secure: {cookie}"
    );

    let page = site.get("/jobs", Some(&cookie_pair(&res))).await;
    assert_eq!(page.status(), StatusCode::OK);
    let html = text(page).await;
    for section in [
        "Jobs",
        "PaddleBoard",
        "Serving",
        "Datasets",
        "Models",
        "Notebooks",
        "Account",
    ] {
        let link = format!(r#"<a href="/{}""#, section.to_lowercase());
        assert!(
            html.contains(&link) && html.contains(&format!(">{section}<")),
            "nav link {section} missing"
        );
    }
    assert!(html.contains("vision") && html.contains("ann@example.com"));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_session_cookie_is_secure_behind_https() {
    let site = site().await;
    let res = site
        .send(
            Request::post("/api/sign_up")
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .header("x-forwarded-proto", "https")
                .body(Body::from(
                    "account=tls&email=a%40b.io&password=a+long+password",
                ))
                .unwrap(),
        )
        .await;
    assert!(set_cookie(&res).contains("; Secure"));

    let forced = site_with(true).await;
    let res = forced
        .fetch_post(
            "/api/sign_up",
            "account=tls&email=a%40b.io&password=a+long+password",
            None,
        )
        .await;
    assert!(set_cookie(&res).contains("; Secure"));
}

#[tokio::test(flavor = "multi_thread")]
async fn form_errors_without_javascript_return_to_the_form_and_are_shown_there() {
    let site = site().await;
    site.sign_up("vision").await;
    let res = site
        .form_post(
            "/api/sign_up",
            "account=vision&email=bob%40example.com&password=a+long+password",
            "/signup",
        )
        .await;
    assert_eq!(res.status(), StatusCode::FOUND);
    let back = location(&res);
    assert!(back.starts_with("http://localhost/signup?"), "{back}");
    assert!(res.headers().get(header::SET_COOKIE).is_none());

    let path = back.trim_start_matches("http://localhost");
    let page = site.get(path, None).await;
    assert_eq!(page.status(), StatusCode::OK);
    let html = text(page).await;
    assert!(
        html.contains("The account name “vision” is taken. Choose another."),
        "error not rendered next to the field"
    );
    assert!(html.contains(r#"id="account-error""#));
}

#[tokio::test(flavor = "multi_thread")]
async fn server_function_errors_carry_their_http_status() {
    let site = site().await;
    let cookie = site.sign_up("vision").await;

    let taken = site
        .fetch_post(
            "/api/sign_up",
            "account=vision&email=b%40x.io&password=a+long+password",
            None,
        )
        .await;
    assert_eq!(taken.status(), StatusCode::CONFLICT);
    let err: app::error::AppError = serde_json::from_str(&text(taken).await).unwrap();
    assert_eq!(err.field(), Some("account"));

    let short = site
        .fetch_post(
            "/api/sign_up",
            "account=fresh&email=b%40x.io&password=short",
            None,
        )
        .await;
    assert_eq!(short.status(), StatusCode::BAD_REQUEST);

    let wrong = site
        .fetch_post(
            "/api/sign_in",
            "account=vision&email=ann%40example.com&password=nope+nope",
            None,
        )
        .await;
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    let err: app::error::AppError = serde_json::from_str(&text(wrong).await).unwrap();
    assert_eq!(err, app::error::AppError::BadCredentials);

    let anonymous = site.fetch_post("/api/sessions", "", None).await;
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);

    let not_mine = site
        .fetch_post("/api/revoke_session", "id=999999", Some(&cookie))
        .await;
    assert_eq!(not_mine.status(), StatusCode::NOT_FOUND);

    let garbage = site
        .fetch_post("/api/revoke_session", "id=abc", Some(&cookie))
        .await;
    assert_eq!(garbage.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test(flavor = "multi_thread")]
async fn signing_out_ends_the_session_on_the_server() {
    let site = site().await;
    let cookie = site.sign_up("vision").await;
    assert_eq!(
        site.get("/jobs", Some(&cookie)).await.status(),
        StatusCode::OK
    );

    let mut req = Request::post("/api/sign_out")
        .header(header::ACCEPT, "text/html")
        .header(header::REFERER, "http://localhost/jobs")
        .header(header::COOKIE, &cookie)
        .body(Body::empty())
        .unwrap();
    req.headers_mut().insert(
        header::CONTENT_TYPE,
        "application/x-www-form-urlencoded".parse().unwrap(),
    );
    let res = site.send(req).await;
    assert_eq!(location(&res), "/login");
    assert!(set_cookie(&res).contains("Max-Age=0"));

    // The old cookie is dead even if a browser kept it.
    let after = site.get("/jobs", Some(&cookie)).await;
    assert_eq!(after.status(), StatusCode::SEE_OTHER);
}

#[tokio::test(flavor = "multi_thread")]
async fn signed_in_users_skip_the_sign_in_page_and_unknown_pages_are_404() {
    let site = site().await;
    let cookie = site.sign_up("vision").await;
    let res = site.get("/login", Some(&cookie)).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(location(&res), "/jobs");

    let missing = site.get("/no/such/page", Some(&cookie)).await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    assert!(text(missing).await.contains("Page not found"));
}

#[tokio::test(flavor = "multi_thread")]
async fn sign_in_goes_back_to_the_page_asked_for_and_never_off_site() {
    let site = site().await;
    site.sign_up("vision").await;
    let body = "account=vision&email=ann%40example.com&password=a+long+password&next=";
    let res = site
        .form_post(
            "/api/sign_in",
            &format!("{body}%2Fserving"),
            "/login?next=%2Fserving",
        )
        .await;
    assert_eq!(location(&res), "/serving");
    let res = site
        .form_post(
            "/api/sign_in",
            &format!("{body}%2F%2Fevil.example"),
            "/login",
        )
        .await;
    assert_eq!(location(&res), "/jobs");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_signed_in_page_sends_its_data_as_html_and_not_again_for_hydration() {
    let site = site().await;
    let cookie = site.sign_up("vision").await;
    let html = text(site.get("/account", Some(&cookie)).await).await;
    // The members and the sessions are on the page...
    assert!(html.contains("ann@example.com"), "{html}");
    assert!(html.contains("data-testid=\"sessions\""), "{html}");
    // ...and only there: pages are not hydrated (islands), so their
    // resources are not serialised into the page a second time.
    let serialised: Vec<&str> = html
        .split("__RESOLVED_RESOURCES[")
        .skip(1)
        .map(|s| &s[..s.len().min(160)])
        .collect();
    assert!(serialised.is_empty(), "{serialised:#?}");
}

/// `page` as a live region's refresh asks for it: only `regions` (ids,
/// comma-separated), as the signed-in `cookie`.
async fn refresh(site: &Site, page: &str, cookie: &str, regions: &str) -> String {
    let request = Request::get(page)
        .header(header::ACCEPT, "text/html")
        .header(header::COOKIE, cookie)
        .header(app::components::live::REGION_HEADER, regions)
        .body(Body::empty())
        .unwrap();
    let answer = site.send(request).await;
    assert_eq!(answer.status(), StatusCode::OK);
    text(answer).await
}

/// An asset page marks its summary and file table as regions: an upload
/// refreshes them without the uploader, the versions or the frame.
#[tokio::test(flavor = "multi_thread")]
async fn an_asset_pages_refresh_after_an_upload_renders_its_summary_and_files_only() {
    let site = site().await;
    let (key, cookie) = crate::common::rest::key_and_cookie(&site, "vision").await;
    let made = crate::common::rest::call(
        &site,
        http::Method::POST,
        "/api/v1/datasets",
        Some(&key),
        Some(serde_json::json!({"name": "flowers"})),
    )
    .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    let base = "/api/v1/datasets/vision/flowers";
    crate::common::rest::put_file(&site, &key, base, "train/tulip.txt", "tulip").await;
    let page = "/datasets/vision/flowers";
    let whole = text(site.get(page, Some(&cookie)).await).await;
    let region = refresh(&site, page, &cookie, "asset-summary,asset-files").await;
    for (what, marker) in [
        ("the frame", "class=\"topbar\""),
        ("the uploader", "data-testid=\"uploader\""),
        ("the settings link", "data-testid=\"settings-link\""),
    ] {
        assert!(whole.contains(marker), "the page lacks {what}");
        assert!(!region.contains(marker), "the refresh has {what}: {region}");
    }
    for (what, marker) in [
        ("the file count", "data-testid=\"file-count\""),
        ("the folder", ">train<"),
    ] {
        assert!(
            region.contains(marker),
            "the refresh lacks {what}: {region}"
        );
    }
}

/// The Account page's access keys are its one live region: a key made or
/// revoked refreshes their table without the account's facts, the
/// password form, the sessions or the audit log (nor their queries).
#[tokio::test(flavor = "multi_thread")]
async fn the_account_pages_key_refresh_renders_the_keys_table_only() {
    let site = site().await;
    let (_key, cookie) = crate::common::rest::key_and_cookie(&site, "vision").await;
    let whole = text(site.get("/account", Some(&cookie)).await).await;
    let region = refresh(&site, "/account", &cookie, "access-keys-list").await;
    for (what, marker) in [
        ("the frame", "class=\"topbar\""),
        ("the account's facts", "data-testid=\"account-name\""),
        ("the password form", "data-testid=\"password-form\""),
        ("the sessions", "data-testid=\"sessions\""),
        ("the audit log", "data-testid=\"audit-all\""),
    ] {
        assert!(whole.contains(marker), "the page lacks {what}");
        assert!(!region.contains(marker), "the refresh has {what}: {region}");
    }
    assert!(
        region.contains("data-testid=\"access-keys\""),
        "the refresh lacks the keys' table: {region}"
    );
}

/// A live region's refresh (what the page's island sends on each event)
/// renders that region alone: the table with its rows, not the frame, the
/// filters, the open log console or the scripts, so an event costs a
/// fraction of the page.
#[tokio::test(flavor = "multi_thread")]
async fn a_live_refresh_renders_only_the_region_it_asks_for() {
    let site = site().await;
    let (key, cookie) = crate::common::rest::key_and_cookie(&site, "vision").await;
    let submitted = crate::common::rest::call(
        &site,
        http::Method::POST,
        "/api/v1/jobs",
        Some(&key),
        Some(crate::common::rest::spec("first", "sleep 30")),
    )
    .await;
    assert_eq!(submitted.status, StatusCode::CREATED, "{}", submitted.body);
    let page = "/jobs?log=first&pod=trainer-0";
    let whole = text(site.get(page, Some(&cookie)).await).await;
    let region = refresh(&site, page, &cookie, "jobs-table").await;
    for (what, marker) in [
        ("the frame", "class=\"topbar\""),
        ("the filters", "class=\"filters\""),
        ("the log console", "data-testid=\"log-console\""),
        ("the scripts", "paddlecloud.js"),
    ] {
        assert!(whole.contains(marker), "the page lacks {what}");
        assert!(
            !region.contains(marker),
            "the region's refresh has {what}: {region}"
        );
    }
    // Nor the page's data as JSON for hydration: nothing hydrates it.
    assert_eq!(
        region.matches("__RESOLVED_RESOURCES[").count(),
        0,
        "{region}"
    );
    assert!(region.contains("id=\"jobs-table\""), "{region}");
    assert!(region.contains(">first<"), "no row of the job in {region}");
    assert!(
        region.len() * 2 < whole.len(),
        "the region is {} bytes of the page's {}",
        region.len(),
        whole.len()
    );
    crate::common::rest::call(
        &site,
        http::Method::POST,
        "/api/v1/jobs/first/stop",
        Some(&key),
        None,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_theme_form_remembers_the_choice_and_every_page_is_rendered_in_it() {
    let site = site().await;
    let res = site
        .form_post(
            "/theme",
            "theme=dark&back=%2Fjobs%3Fstatus%3Dfailed",
            "/jobs",
        )
        .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(location(&res), "/jobs?status=failed");
    assert_eq!(
        set_cookie(&res),
        "paddlecloud_theme=dark; Path=/; Max-Age=31536000; SameSite=Lax"
    );
    let theme = cookie_pair(&res);

    // Signed out, signed in, and the 404 page: `<html data-theme>` from the first byte.
    let login = text(site.get("/login", Some(&theme)).await).await;
    assert!(
        login.contains(r#"<html lang="en" data-theme="dark""#),
        "{login}"
    );
    let session = site.sign_up("vision").await;
    let both = format!("{session}; {theme}");
    let jobs = text(site.get("/jobs", Some(&both)).await).await;
    assert!(jobs.contains(r#"data-theme="dark""#));
    assert!(
        jobs.contains(r#"value="dark" title="Dark theme" aria-pressed="true""#),
        "the header's chooser shows dark pressed"
    );
    let missing = text(site.get("/no/such/page", Some(&both)).await).await;
    assert!(missing.contains(r#"data-theme="dark""#));
    // Without the cookie: the system's.
    let plain = text(site.get("/jobs", Some(&session)).await).await;
    assert!(plain.contains(r#"data-theme="system""#));

    let refused = site
        .form_post("/theme", "theme=neon&back=%2Fjobs", "/jobs")
        .await;
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    let away = site
        .form_post("/theme", "theme=light&back=%2F%2Fevil.example%2F", "/jobs")
        .await;
    assert_eq!(location(&away), "/jobs");
}
