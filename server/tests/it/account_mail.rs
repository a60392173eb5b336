//! Account mail end to end through a real SMTP server the test starts:
//! confirmation links, password change and reset, the limits on resets, a
//! site admin's reset link, and the audit log that records it all.

use std::time::Duration;

use http::{header, Method, Request, StatusCode};
use serde_json::json;
use server::console::Config;
use server::mail::MailChoice;

use crate::common::rest::{call, key_and_cookie};
use crate::common::site::{cookie_pair, location, site_configured, text, Site, ADMIN_EMAIL};
use crate::common::smtp::SmtpServer;

const ANN: &str = "ann@example.com";

/// A console whose mail goes to `smtp`; sign-in waits for confirmation if
/// `require`.
async fn site_mailing(smtp: &SmtpServer, require: bool) -> Site {
    let url = smtp.url.clone();
    site_configured(move |config, _| Config {
        mail: MailChoice::Smtp(url),
        public_url: Some("http://console.test".to_owned()),
        require_email_confirmation: require,
        ..config
    })
    .await
}

/// `GET /api/v1/me` with a session cookie: 200 while it works.
async fn me_with_cookie(site: &Site, cookie: &str) -> (StatusCode, String) {
    let res = site
        .send(
            Request::get("/api/v1/me")
                .header(header::COOKIE, cookie)
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await;
    let status = res.status();
    (status, text(res).await)
}

async fn sign_in(site: &Site, account: &str, password: &str) -> http::Response<axum::body::Body> {
    let body = format!(
        "account={account}&email=ann%40example.com&password={}",
        password.replace(' ', "+")
    );
    site.fetch_post("/api/sign_in", &body, None).await
}

/// `POST /api/v1/password-resets` for `email` of `account`, with no key.
async fn ask_reset(site: &Site, account: &str, email: &str) -> crate::common::rest::Answer {
    let body = json!({"account": account, "email": email});
    call(
        site,
        Method::POST,
        "/api/v1/password-resets",
        None,
        Some(body),
    )
    .await
}

/// Follows a reset link: `token` and the new `password`.
async fn complete_reset(site: &Site, token: &str, password: &str) -> crate::common::rest::Answer {
    let body = json!({"token": token, "password": password});
    call(
        site,
        Method::POST,
        "/api/v1/password-resets/complete",
        None,
        Some(body),
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sign_up_mails_a_link_that_confirms_the_address_once() {
    let smtp = SmtpServer::start().await;
    let site = site_mailing(&smtp, false).await;
    let cookie = site.sign_up("vision").await;

    // The account works at once and every page says to confirm.
    let page = text(site.get("/jobs", Some(&cookie)).await).await;
    assert!(
        page.contains("Confirm your email address: we sent a link to ann@example.com"),
        "{page}"
    );
    let mail = smtp.wait_for(ANN, 1).await.remove(0);
    assert_eq!(
        mail.header("Subject").as_deref(),
        Some("Confirm your email address for PaddleCloud")
    );
    let readable = mail.readable();
    assert!(readable.contains("Content-Type: text/plain"), "{readable}");
    assert!(readable.contains("Content-Type: text/html"), "{readable}");
    let link = mail.link("/confirm").expect("a confirmation link");
    assert!(
        link.starts_with("http://console.test/confirm?token="),
        "{link}"
    );

    let token = mail.token("/confirm").unwrap();
    let confirmed = site
        .fetch_post("/api/confirm_email", &format!("token={token}"), None)
        .await;
    assert!(
        confirmed.status().is_success() || confirmed.status().is_redirection(),
        "{}",
        confirmed.status()
    );
    let (_, me) = me_with_cookie(&site, &cookie).await;
    assert!(me.contains("\"email_confirmed\":true"), "{me}");
    let page = text(site.get("/jobs", Some(&cookie)).await).await;
    assert!(
        !page.contains("Confirm your email address"),
        "the banner is gone"
    );

    // The link works once.
    let again = call(
        &site,
        Method::POST,
        "/api/v1/email-confirmations",
        None,
        Some(json!({"token": token})),
    )
    .await;
    assert_eq!(again.status, StatusCode::BAD_REQUEST, "{}", again.body);
    assert_eq!(again.error().1.as_deref(), Some("token"));
}

#[tokio::test(flavor = "multi_thread")]
async fn with_confirmation_required_sign_in_waits_for_the_mailed_link() {
    let smtp = SmtpServer::start().await;
    let site = site_mailing(&smtp, true).await;
    let res = site
        .form_post(
            "/api/sign_up",
            "account=strict&email=ann%40example.com&password=a+long+password",
            "/signup",
        )
        .await;
    assert_eq!(location(&res), "/login?confirm=sent");
    assert!(
        res.headers().get(header::SET_COOKIE).is_none(),
        "no session before the link"
    );

    let refused = sign_in(&site, "strict", "a long password").await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    assert!(text(refused)
        .await
        .contains("Confirm your email address first"));
    // A wrong password says nothing about confirmation.
    let wrong = sign_in(&site, "strict", "not the password").await;
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);

    // The sign-up mail and the one the refused sign-in sent both work.
    let mails = smtp.wait_for(ANN, 2).await;
    let token = mails[1].token("/confirm").unwrap();
    let done = call(
        &site,
        Method::POST,
        "/api/v1/email-confirmations",
        None,
        Some(json!({"token": token})),
    )
    .await;
    assert_eq!(done.status, StatusCode::NO_CONTENT, "{}", done.body);
    let ok = sign_in(&site, "strict", "a long password").await;
    assert!(
        ok.headers().get(header::SET_COOKIE).is_some(),
        "signed in: {}",
        ok.status()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn resending_the_confirmation_is_limited_to_once_a_minute() {
    let smtp = SmtpServer::start().await;
    let site = site_mailing(&smtp, false).await;
    let (key, _) = key_and_cookie(&site, "resend").await;
    smtp.wait_for(ANN, 1).await;
    let first = call(
        &site,
        Method::POST,
        "/api/v1/me/email-confirmation",
        Some(&key),
        None,
    )
    .await;
    assert_eq!(first.status, StatusCode::ACCEPTED, "{}", first.body);
    smtp.wait_for(ANN, 2).await;
    let second = call(
        &site,
        Method::POST,
        "/api/v1/me/email-confirmation",
        Some(&key),
        None,
    )
    .await;
    assert_eq!(
        second.status,
        StatusCode::TOO_MANY_REQUESTS,
        "{}",
        second.body
    );
    assert!(
        second.body.contains("less than a minute ago"),
        "{}",
        second.body
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reset_link_sets_a_new_password_once_and_ends_every_session() {
    let smtp = SmtpServer::start().await;
    let site = site_mailing(&smtp, false).await;
    let (key, cookie) = key_and_cookie(&site, "vision").await;
    smtp.wait_for(ANN, 1).await;

    let asked = ask_reset(&site, "vision", "Ann@Example.com").await;
    assert_eq!(asked.status, StatusCode::ACCEPTED, "{}", asked.body);
    let mail = smtp.wait_for(ANN, 2).await.remove(1);
    assert_eq!(
        mail.header("Subject").as_deref(),
        Some("Reset your PaddleCloud password")
    );
    assert!(mail.readable().contains("works once, for 30 minutes"));
    let token = mail.token("/reset").expect("a reset link");

    // A password too short is refused without using the link up.
    let complete = |password: &'static str| complete_reset(&site, &token, password);
    let short = complete("short").await;
    assert_eq!(
        short.error().1.as_deref(),
        Some("password"),
        "{}",
        short.body
    );
    let done = complete("a brand new password").await;
    assert_eq!(done.status, StatusCode::NO_CONTENT, "{}", done.body);

    // Every session ended; the new password signs in, the old one does not.
    assert_eq!(
        me_with_cookie(&site, &cookie).await.0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        sign_in(&site, "vision", "a long password").await.status(),
        StatusCode::UNAUTHORIZED
    );
    assert!(sign_in(&site, "vision", "a brand new password")
        .await
        .headers()
        .get(header::SET_COOKIE)
        .is_some());
    // Access keys stay (scripts keep running); the link is used up.
    assert_eq!(
        call(&site, Method::GET, "/api/v1/me", Some(&key), None)
            .await
            .status,
        StatusCode::OK
    );
    let reused = complete("yet another password").await;
    assert_eq!(reused.status, StatusCode::BAD_REQUEST);
    assert_eq!(reused.error().1.as_deref(), Some("token"));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_expired_reset_link_and_one_from_before_a_password_change_are_refused() {
    let smtp = SmtpServer::start().await;
    let site = site_mailing(&smtp, false).await;
    let (key, _) = key_and_cookie(&site, "vision").await;
    for _ in 0..2 {
        let asked = ask_reset(&site, "vision", ANN).await;
        assert_eq!(asked.status, StatusCode::ACCEPTED);
    }
    let mails = smtp.wait_for(ANN, 3).await;
    let (first, second) = (
        mails[1].token("/reset").unwrap(),
        mails[2].token("/reset").unwrap(),
    );
    // The first link's 30 minutes have passed.
    sqlx::query("UPDATE user_tokens SET expires_at = 1 WHERE token_hash = $1")
        .bind(server::storage::tokens::token_hash(&first))
        .execute(&site.db.pool)
        .await
        .unwrap();
    let expired = complete_reset(&site, &first, "a brand new password").await;
    assert_eq!(
        expired.error().1.as_deref(),
        Some("token"),
        "{}",
        expired.body
    );
    // A password change ends the links still out.
    let changed = call(
        &site,
        Method::POST,
        "/api/v1/me/password",
        Some(&key),
        Some(json!({"current": "a long password", "password": "changed by ann"})),
    )
    .await;
    assert_eq!(changed.status, StatusCode::NO_CONTENT, "{}", changed.body);
    let after_change = complete_reset(&site, &second, "a brand new password").await;
    assert_eq!(
        after_change.error().1.as_deref(),
        Some("token"),
        "{}",
        after_change.body
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reset_for_an_unknown_address_answers_the_same_and_repeated_ones_are_limited() {
    let smtp = SmtpServer::start().await;
    let site = site_mailing(&smtp, false).await;
    site.sign_up("vision").await;
    smtp.wait_for(ANN, 1).await;
    let ask = |account: &'static str, email: &'static str| ask_reset(&site, account, email);
    let known = ask("vision", ANN).await;
    let unknown = ask("vision", "nobody@example.com").await;
    let no_account = ask("no-such-account", ANN).await;
    for answer in [&known, &unknown, &no_account] {
        assert_eq!(answer.status, StatusCode::ACCEPTED);
        assert_eq!(answer.body, known.body);
    }
    // Three mails an hour to one address; the fourth request is dropped
    // quietly (the answer is still the same).
    for _ in 0..3 {
        assert_eq!(ask("vision", ANN).await.status, StatusCode::ACCEPTED);
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let resets = smtp
        .mail_to(ANN)
        .into_iter()
        .filter(|m| m.header("Subject").as_deref() == Some("Reset your PaddleCloud password"))
        .count();
    assert_eq!(resets, 3);
    assert!(smtp.mail_to("nobody@example.com").is_empty());
    // One client asking over and over is told to wait, by status.
    let mut last = StatusCode::ACCEPTED;
    for _ in 0..20 {
        last = ask("vision", "someone@example.com").await.status;
    }
    assert_eq!(last, StatusCode::TOO_MANY_REQUESTS);
    // Signing in is never limited by any of it.
    assert!(sign_in(&site, "vision", "a long password")
        .await
        .headers()
        .get(header::SET_COOKIE)
        .is_some());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_password_change_needs_the_current_one_and_ends_the_other_sessions_and_if_asked_the_keys()
{
    let smtp = SmtpServer::start().await;
    let site = site_mailing(&smtp, false).await;
    let (key, here) = key_and_cookie(&site, "vision").await;
    let elsewhere = cookie_pair(&sign_in(&site, "vision", "a long password").await);

    let wrong = site
        .fetch_post(
            "/api/change_password",
            "current=not+it&password=a+new+password",
            Some(&here),
        )
        .await;
    assert_eq!(wrong.status(), StatusCode::BAD_REQUEST);
    assert!(text(wrong).await.contains("current"));

    let done = site
        .fetch_post(
            "/api/change_password",
            "current=a+long+password&password=a+new+password",
            Some(&here),
        )
        .await;
    assert!(
        done.status().is_success() || done.status().is_redirection(),
        "{}",
        done.status()
    );
    assert_eq!(
        me_with_cookie(&site, &here).await.0,
        StatusCode::OK,
        "this browser stays"
    );
    assert_eq!(
        me_with_cookie(&site, &elsewhere).await.0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        call(&site, Method::GET, "/api/v1/me", Some(&key), None)
            .await
            .status,
        StatusCode::OK
    );

    let with_keys = site
        .fetch_post(
            "/api/change_password",
            "current=a+new+password&password=a+third+password&revoke_keys=on",
            Some(&here),
        )
        .await;
    assert!(with_keys.status().is_success() || with_keys.status().is_redirection());
    assert_eq!(
        call(&site, Method::GET, "/api/v1/me", Some(&key), None)
            .await
            .status,
        StatusCode::UNAUTHORIZED,
        "the keys went with it"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_site_admin_mails_anyone_a_reset_link_and_the_audit_log_records_who_did_what() {
    let smtp = SmtpServer::start().await;
    let site = site_mailing(&smtp, false).await;
    let (ann, _) = key_and_cookie(&site, "vision").await;
    let (bob, _) = key_and_cookie(&site, "other").await;
    let admin = site.admin_key().await;

    // Only a site admin may.
    let body = json!({"account": "vision", "email": ANN});
    let refused = call(
        &site,
        Method::POST,
        "/api/v1/admin/reset-links",
        Some(&ann),
        Some(body.clone()),
    )
    .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    let sent = call(
        &site,
        Method::POST,
        "/api/v1/admin/reset-links",
        Some(&admin),
        Some(body),
    )
    .await;
    assert_eq!(sent.status, StatusCode::ACCEPTED, "{}", sent.body);
    let mail = smtp
        .wait_for(ANN, 3)
        .await
        .into_iter()
        .find(|m| m.readable().contains("a site admin"))
        .expect("the admin's reset mail");
    assert!(mail.readable().contains(ADMIN_EMAIL));
    let unknown = call(
        &site,
        Method::POST,
        "/api/v1/admin/reset-links",
        Some(&admin),
        Some(json!({"account": "vision", "email": "nobody@example.com"})),
    )
    .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);

    // Quota, password and key events, newest first, for the owner…
    let quota = call(
        &site,
        Method::PUT,
        "/api/v1/quota?account=vision",
        Some(&admin),
        Some(json!({"cpu": "4"})),
    )
    .await;
    assert_eq!(quota.status, StatusCode::OK, "{}", quota.body);
    let changed = call(
        &site,
        Method::POST,
        "/api/v1/me/password",
        Some(&ann),
        Some(json!({"current": "a long password", "password": "a new password"})),
    )
    .await;
    assert_eq!(changed.status, StatusCode::NO_CONTENT, "{}", changed.body);
    let log = call(&site, Method::GET, "/api/v1/audit", Some(&ann), None).await;
    assert_eq!(log.status, StatusCode::OK, "{}", log.body);
    let actions: Vec<String> = log.json()["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            format!(
                "{} {}",
                e["actor"].as_str().unwrap(),
                e["action"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        actions,
        [
            "ann@example.com password.changed",
            "admin@example.com quota.set",
            "admin@example.com password.reset_link_sent",
            "ann@example.com key.created",
        ]
    );
    let csv = call(&site, Method::GET, "/api/v1/audit.csv", Some(&ann), None).await;
    assert!(csv.headers[header::CONTENT_TYPE]
        .to_str()
        .unwrap()
        .starts_with("text/csv"));
    let lines: Vec<&str> = csv.body.lines().collect();
    assert_eq!(lines[0], "time_utc,actor,action,detail");
    assert_eq!(lines.len(), 5, "{}", csv.body);
    assert!(
        lines[2].contains("quota.set,\"CPU 4, memory no limit"),
        "{}",
        lines[2]
    );

    // …for a site admin, of any account; another account's owner gets nothing.
    let by_admin = call(
        &site,
        Method::GET,
        "/api/v1/audit?account=vision",
        Some(&admin),
        None,
    )
    .await;
    assert_eq!(by_admin.json()["events"].as_array().unwrap().len(), 4);
    let other = call(
        &site,
        Method::GET,
        "/api/v1/audit?account=vision",
        Some(&bob),
        None,
    )
    .await;
    assert_eq!(other.status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_first_sign_up_on_an_empty_database_is_a_site_admin_and_the_next_is_not() {
    let db = crate::common::sqlite().await;
    let accounts = crate::common::accounts(&db);
    use app::ports::Accounts;
    for name in ["first", "second"] {
        accounts
            .create_account(app::models::SignUpForm {
                account: name.into(),
                email: ANN.into(),
                password: "a long password".into(),
            })
            .await
            .unwrap();
    }
    let admins: Vec<(String,)> = sqlx::query_as(
        "SELECT a.name FROM users u JOIN accounts a ON a.id = u.account_id WHERE u.site_admin = 1",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_eq!(admins, [("first".to_owned(),)]);
}

on_both_databases!(
    requests_at_the_same_moment_never_get_past_a_rate_limit_together,
    super::limits_hold_under_concurrency
);

async fn limits_hold_under_concurrency(db: crate::common::TestDb) {
    use server::storage::throttle::Limit;
    let limit = Limit {
        kind: "test",
        max: 3,
        window_ms: 60_000,
    };
    let tries = (0..12).map(|_| {
        let pool = db.pool.clone();
        tokio::spawn(async move { limit.take(&pool, "ann").await.unwrap() })
    });
    let mut granted = 0;
    for t in tries {
        granted += usize::from(t.await.unwrap());
    }
    assert_eq!(granted, 3);
    // Another subject has its own count.
    assert!(limit.take(&db.pool, "bob").await.unwrap());
}
