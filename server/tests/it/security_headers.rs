//! Security headers (issue 45 item 5): every page the console renders, signed
//! in or out, carries a Content Security Policy whose nonce is the one its
//! inline scripts carry, is framed only by its own origin and sends no
//! referrer elsewhere; API answers carry the same general headers.

use http::header;

use crate::common;
use crate::common::site::text;

/// The value of `nonce="…"` on the page's first inline script.
fn script_nonce(page: &str) -> Option<&str> {
    let at = page.find("<script")?;
    let rest = &page[at..];
    let start = rest.find("nonce=\"")? + "nonce=\"".len();
    let end = rest[start..].find('"')?;
    Some(&rest[start..start + end])
}

#[tokio::test(flavor = "multi_thread")]
async fn every_page_has_a_policy_with_its_scripts_nonce_frames_only_here_and_keeps_its_referrer() {
    let site = common::site::site().await;
    let cookie = site.sign_up("headers").await;
    // Every route the app has that takes no parameter, and one that does.
    let mut paths: Vec<String> = leptos_axum::generate_route_list(app::routes::App)
        .into_iter()
        .map(|route| route.path().to_owned())
        .filter(|path| !path.contains(':') && !path.contains('*'))
        .collect();
    paths.sort();
    paths.dedup();
    assert!(paths.len() > 20, "{paths:?}");
    paths.push("/jobs/no-such-job".to_owned());
    paths.push("/no/such/page".to_owned());
    for path in &paths {
        let res = site.get(path, Some(&cookie)).await;
        let headers = res.headers().clone();
        let html = headers
            .get(header::CONTENT_TYPE)
            .is_some_and(|t| t.to_str().unwrap_or("").starts_with("text/html"));
        if !html {
            // A redirect (`/` to `/jobs`) carries the general headers only.
            assert!(res.status().is_redirection(), "{path}: {}", res.status());
        } else {
            let policy = headers
                .get(header::CONTENT_SECURITY_POLICY)
                .unwrap_or_else(|| panic!("{path} has no Content-Security-Policy"))
                .to_str()
                .unwrap()
                .to_owned();
            let page = text(res).await;
            let nonce = script_nonce(&page).unwrap_or_else(|| panic!("{path}: no script nonce"));
            assert!(
                policy.contains(&format!(
                    "script-src 'self' 'nonce-{nonce}' 'wasm-unsafe-eval'"
                )),
                "{path}: {policy}"
            );
            assert!(policy.contains("frame-ancestors 'self'"), "{path}");
            assert!(policy.contains("object-src 'none'"), "{path}");
        }
        assert_eq!(headers[header::REFERRER_POLICY], "same-origin", "{path}");
        assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff", "{path}");
        assert_eq!(headers[header::X_FRAME_OPTIONS], "SAMEORIGIN", "{path}");
    }
    // Two requests, two nonces.
    let once = text(site.get("/login", None).await).await;
    let again = text(site.get("/login", None).await).await;
    assert_ne!(script_nonce(&once), script_nonce(&again));
    // The API's answers carry the general headers too.
    let api = site.get("/api/v1/me", None).await;
    assert_eq!(api.headers()[header::REFERRER_POLICY], "same-origin");
    assert_eq!(api.headers()[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
}
