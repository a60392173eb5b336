//! Access keys on both databases: created once with their secret, listed with
//! their last use, revoked by their user only, stored only as hashes.

use crate::common;

use crate::common::TestDb;
use app::models::SignUpForm;
use app::ports::{AccessKeys, Accounts, Credential, Principal};
use server::access_keys::SqlAccessKeys;
use server::accounts::SqlAccounts;

async fn owner(accounts: &SqlAccounts, account: &str) -> Principal {
    let me = accounts
        .create_account(SignUpForm {
            account: account.into(),
            email: format!("owner@{account}.example"),
            password: "a long password".into(),
        })
        .await
        .unwrap();
    let session = accounts.create_session(&me, "Test").await.unwrap();
    accounts
        .resolve_session(&session.token)
        .await
        .unwrap()
        .unwrap()
}

async fn a_key_authenticates_until_its_user_revokes_it(db: TestDb) {
    let accounts = crate::common::accounts(&db);
    let keys = SqlAccessKeys::new(db.pool.clone());
    let ann = owner(&accounts, "vision").await;

    let created = keys
        .create_key(&ann.me, "  laptop ", Default::default())
        .await
        .unwrap();
    assert!(created.key.starts_with("pck_") && created.key.len() == 68);
    assert_eq!(created.info.name, "laptop");
    assert!(created.key.starts_with(&created.info.prefix));
    assert_eq!(created.info.last_used_at, None);

    let listed = keys.keys(&ann).await.unwrap();
    assert_eq!(listed, vec![created.info.clone()]);

    let via_key = keys.resolve_key(&created.key).await.unwrap().unwrap();
    assert_eq!(via_key.me, ann.me);
    assert_eq!(via_key.credential, Credential::AccessKey(created.info.id));
    let used = keys.keys(&ann).await.unwrap()[0].last_used_at;
    assert!(used.is_some(), "using a key records when");

    keys.revoke_key(&ann, created.info.id).await.unwrap();
    assert!(keys.resolve_key(&created.key).await.unwrap().is_none());
    assert!(keys.keys(&ann).await.unwrap().is_empty());
}
on_both_databases!(
    a_key_authenticates_until_its_user_revokes_it,
    super::a_key_authenticates_until_its_user_revokes_it
);

async fn only_a_hash_of_the_key_is_stored(db: TestDb) {
    let accounts = crate::common::accounts(&db);
    let keys = SqlAccessKeys::new(db.pool.clone());
    let ann = owner(&accounts, "vision").await;
    let created = keys
        .create_key(&ann.me, "ci", Default::default())
        .await
        .unwrap();
    let stored: Vec<(String, String)> =
        sqlx::query_as("SELECT token_hash, prefix FROM access_keys")
            .fetch_all(&db.pool)
            .await
            .unwrap();
    assert_eq!(stored.len(), 1);
    let secret = &created.key[4..];
    assert!(!stored[0].0.contains(secret) && !stored[0].1.contains(secret));
}
on_both_databases!(
    only_a_hash_of_the_key_is_stored,
    super::only_a_hash_of_the_key_is_stored
);

async fn another_users_key_cannot_be_listed_or_revoked(db: TestDb) {
    let accounts = crate::common::accounts(&db);
    let keys = SqlAccessKeys::new(db.pool.clone());
    let ann = owner(&accounts, "vision").await;
    let eve = owner(&accounts, "speech").await;
    let anns = keys
        .create_key(&ann.me, "laptop", Default::default())
        .await
        .unwrap();

    assert!(keys.keys(&eve).await.unwrap().is_empty());
    let err = keys.revoke_key(&eve, anns.info.id).await.unwrap_err();
    assert_eq!(err.status(), 404);
    assert!(keys.resolve_key(&anns.key).await.unwrap().is_some());
}
on_both_databases!(
    another_users_key_cannot_be_listed_or_revoked,
    super::another_users_key_cannot_be_listed_or_revoked
);

async fn bad_names_and_unknown_keys_are_refused(db: TestDb) {
    let accounts = crate::common::accounts(&db);
    let keys = SqlAccessKeys::new(db.pool.clone());
    let ann = owner(&accounts, "vision").await;
    let err = keys
        .create_key(&ann.me, " ", Default::default())
        .await
        .unwrap_err();
    assert_eq!((err.status(), err.field()), (400, Some("name")));
    for wrong in ["", "pck_", "nonsense", &format!("pck_{}", "0".repeat(64))] {
        assert!(keys.resolve_key(wrong).await.unwrap().is_none(), "{wrong}");
    }
    let err = keys
        .create_for("vision", "nobody@vision.example", "x", Default::default())
        .await
        .unwrap_err();
    assert_eq!(err.status(), 404);
    let made = keys
        .create_for("vision", "Owner@Vision.example", "ci", Default::default())
        .await
        .unwrap();
    let who = keys.resolve_key(&made.key).await.unwrap().unwrap();
    assert_eq!(who.me.email, "owner@vision.example");
}
on_both_databases!(
    bad_names_and_unknown_keys_are_refused,
    super::bad_names_and_unknown_keys_are_refused
);

mod web {
    use app::models::Credentials;
    use axum::body::Body;
    use http::{header, Request, StatusCode};

    use super::common::site::{location, site, text};

    #[tokio::test(flavor = "multi_thread")]
    async fn the_account_pages_form_without_javascript_downloads_a_working_credentials_file() {
        let site = site().await;
        let cookie = site.sign_up("vision").await;
        let res = site
            .send(
                Request::post("/account/keys")
                    .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                    .header(header::COOKIE, &cookie)
                    .header(header::HOST, "console.example:8080")
                    .body(Body::from("name=laptop"))
                    .unwrap(),
            )
            .await;
        assert_eq!(res.status(), StatusCode::OK);
        assert_eq!(
            res.headers()[header::CONTENT_DISPOSITION],
            "attachment; filename=\"credentials.json\""
        );
        assert_eq!(res.headers()[header::CACHE_CONTROL], "no-store");
        let credentials: Credentials = serde_json::from_str(&text(res).await).unwrap();
        assert_eq!(credentials.server, "http://console.example:8080");
        assert_eq!(credentials.account, "vision");
        assert_eq!(credentials.user, "ann@example.com");

        let me = site
            .send(
                Request::get("/api/v1/me")
                    .header(header::AUTHORIZATION, format!("Bearer {}", credentials.key))
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        assert_eq!(me.status(), StatusCode::OK);

        // The page lists it by name and prefix, never the secret.
        let page = text(site.get("/account", Some(&cookie)).await).await;
        assert!(page.contains("laptop"), "{page}");
        assert!(page.contains(&credentials.key[..12]));
        assert!(!page.contains(&credentials.key));
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_refused_key_name_goes_back_to_the_form_with_the_reason() {
        let site = site().await;
        let cookie = site.sign_up("vision").await;
        let res = site
            .send(
                Request::post("/account/keys")
                    .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                    .header(header::COOKIE, &cookie)
                    .body(Body::from("name=+++"))
                    .unwrap(),
            )
            .await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER);
        let to = location(&res);
        assert!(
            to.starts_with("/account?key_error=Give+the+key+a+name"),
            "{to}"
        );
        let page = text(site.get(to.split('#').next().unwrap(), Some(&cookie)).await).await;
        assert!(page.contains("Give the key a name"), "{page}");
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn signed_out_browsers_get_no_key() {
        let site = site().await;
        let res = site
            .send(
                Request::post("/account/keys")
                    .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                    .body(Body::from("name=laptop"))
                    .unwrap(),
            )
            .await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER);
        assert_eq!(location(&res), "/login?next=%2Faccount");
        let stored: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM access_keys")
            .fetch_one(&site.db.pool)
            .await
            .unwrap();
        assert_eq!(stored, 0);
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn the_hydrated_page_gets_the_credentials_from_a_server_function_and_can_revoke() {
        let site = site().await;
        let cookie = site.sign_up("vision").await;
        let res = site
            .fetch_post("/api/create_access_key", "name=ci", Some(&cookie))
            .await;
        assert_eq!(res.status(), StatusCode::OK);
        let credentials: Credentials = serde_json::from_str(&text(res).await).unwrap();
        assert!(credentials.key.starts_with("pck_"));

        let res = site.fetch_post("/api/access_keys", "", Some(&cookie)).await;
        let listed: serde_json::Value = serde_json::from_str(&text(res).await).unwrap();
        let id = listed[0]["id"].as_i64().unwrap();
        assert_eq!(listed[0]["name"], "ci");

        let res = site
            .fetch_post("/api/revoke_access_key", &format!("id={id}"), Some(&cookie))
            .await;
        assert_eq!(res.status(), StatusCode::OK);
        let me = site
            .send(
                Request::get("/api/v1/me")
                    .header(header::AUTHORIZATION, format!("Bearer {}", credentials.key))
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        assert_eq!(me.status(), StatusCode::UNAUTHORIZED);
    }
}

/// Scoped and expiring keys (issue 45 item 4), as a user makes them on the
/// Account page and a script then uses them.
mod scopes {
    use app::models::Credentials;
    use axum::body::Body;
    use http::{header, Method, Request, StatusCode};
    use serde_json::json;

    use super::common::rest::call;
    use super::common::site::{site, text, Site};

    /// A key made with the Account page's form (without JavaScript).
    async fn key(site: &Site, cookie: &str, form: &str) -> String {
        let res = site
            .send(
                Request::post("/account/keys")
                    .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                    .header(header::COOKIE, cookie)
                    .body(Body::from(form.to_owned()))
                    .unwrap(),
            )
            .await;
        assert_eq!(res.status(), StatusCode::OK, "{form}");
        let credentials: Credentials = serde_json::from_str(&text(res).await).unwrap();
        credentials.key
    }

    /// A request with `key`, as a script sends it.
    async fn send(
        site: &Site,
        method: Method,
        path: &str,
        key: &str,
        body: Option<serde_json::Value>,
    ) -> super::common::rest::Answer {
        call(site, method, path, Some(key), body).await
    }

    fn job(name: &str) -> serde_json::Value {
        json!({"name": name, "command": ["true"], "num_trainers": 1,
               "trainer": {"cpu": "100m", "memory": "32Mi"}})
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_keys_scope_lets_it_do_what_it_names_and_refuses_the_rest_saying_why() {
        let site = site().await;
        let cookie = site.sign_up("scoped").await;
        let read = key(&site, &cookie, "name=dashboard&scope=read").await;
        let submit = key(&site, &cookie, "name=ci&scope=submit&expires_in_days=30").await;
        let metrics = key(&site, &cookie, "name=trainer&scope=metrics").await;

        // Read only: reads pass, a submit is a 403 that names the scope.
        let listed = send(&site, Method::GET, "/api/v1/jobs", &read, None).await;
        assert_eq!(listed.status, StatusCode::OK, "{}", listed.body);
        let refused = send(&site, Method::POST, "/api/v1/jobs", &read, Some(job("a"))).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);
        let message = refused.json()["error"]["message"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            message.contains("scope is “read” (read only): it may not POST /api/v1/jobs"),
            "{message}"
        );
        // Submit: a job goes in and can be stopped; a dataset cannot be made.
        let made = send(&site, Method::POST, "/api/v1/jobs", &submit, Some(job("a"))).await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
        let stop = "/api/v1/jobs/a/stop";
        let stopped = send(&site, Method::POST, stop, &submit, None).await;
        assert_eq!(stopped.status, StatusCode::OK, "{}", stopped.body);
        let dataset = json!({"name": "d"});
        let refused = send(
            &site,
            Method::POST,
            "/api/v1/datasets",
            &submit,
            Some(dataset),
        )
        .await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);
        let deleted = send(&site, Method::DELETE, "/api/v1/jobs/a", &submit, None).await;
        assert_eq!(deleted.status, StatusCode::FORBIDDEN, "{}", deleted.body);
        // Metrics: points go in, jobs do not.
        let points = json!([{"tag": "loss", "step": 1, "value": 0.5}]);
        let wrote = send(
            &site,
            Method::POST,
            "/api/v1/jobs/a/metrics",
            &metrics,
            Some(points),
        )
        .await;
        assert!(wrote.status.is_success(), "{} {}", wrote.status, wrote.body);
        let refused = send(
            &site,
            Method::POST,
            "/api/v1/jobs",
            &metrics,
            Some(job("b")),
        )
        .await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);

        // The page lists each with what it may do and when it expires.
        let page = text(site.get("/account", Some(&cookie)).await).await;
        for (scope, label) in [
            ("read", "read only"),
            ("submit", "read, submit and stop jobs"),
            ("metrics", "read and write metrics"),
        ] {
            assert!(
                page.contains(&format!("data-scope=\"{scope}\"")),
                "{scope}: {page}"
            );
            assert!(page.contains(label), "{label}");
        }
        // A scope or a life the form does not offer goes back with why.
        for bad in [
            "name=x&scope=admin",
            "name=x&expires_in_days=0",
            "name=x&expires_in_days=soon",
        ] {
            let res = site
                .send(
                    Request::post("/account/keys")
                        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                        .header(header::COOKIE, &cookie)
                        .body(Body::from(bad))
                        .unwrap(),
                )
                .await;
            assert_eq!(res.status(), StatusCode::SEE_OTHER, "{bad}");
        }
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn an_expired_key_is_refused_saying_when_it_expired_and_the_page_marks_it() {
        let site = site().await;
        let cookie = site.sign_up("expiring").await;
        let key = key(&site, &cookie, "name=old-ci&expires_in_days=7").await;
        let ok = send(&site, Method::GET, "/api/v1/me", &key, None).await;
        assert_eq!(ok.status, StatusCode::OK, "{}", ok.body);
        // A week later (its end moved to the past).
        sqlx::query("UPDATE access_keys SET expires_at = $1 WHERE name = 'old-ci'")
            .bind(1_700_000_000_000_i64)
            .execute(&site.db.pool)
            .await
            .unwrap();
        let refused = send(&site, Method::GET, "/api/v1/me", &key, None).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);
        let message = refused.json()["error"]["message"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            message.starts_with("This access key (“old-ci”, pck_")
                && message.contains("expired on 2023-11-14"),
            "{message}"
        );
        let page = text(site.get("/account", Some(&cookie)).await).await;
        assert!(page.contains("class=\"status failed\">expired"), "{page}");
    }
}
