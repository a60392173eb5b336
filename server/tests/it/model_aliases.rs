//! Model aliases (`owner/model@alias`, issue 42 item 2): set, moved and
//! deleted with a history of who moved it from which version to which; a
//! protected alias moved only by the account's owners; the alias usable
//! where a version is (a job's models, pinned to the version it names then;
//! serving); bad input a 400 naming its field; another account's model not
//! found; the model page shows them and its forms work without JavaScript.

use http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::common::rest::{call, key_and_cookie, post_ok, put_file, wait_for, Answer};
use crate::common::site::{config, site_from, Site};
use crate::common::TestDb;
use crate::members::{join, site_mailing};

const BASE: &str = "/api/v1/models/aliased/line";

/// Model `line` of account `aliased` with versions 1 and 2 ready and 3
/// still uploading.
async fn three_versions(site: &Site, key: &str) {
    post_ok(site, key, "/api/v1/models", json!({"name": "line"})).await;
    for v in 1..=3 {
        post_ok(
            site,
            key,
            &format!("{BASE}/versions"),
            json!({"description": format!("v{v}")}),
        )
        .await;
        if v < 3 {
            put_file(
                site,
                key,
                BASE,
                &format!("model.txt?version={v}"),
                "weights",
            )
            .await;
            post_ok(site, key, &format!("{BASE}/versions/{v}/finish"), json!({})).await;
        }
    }
}

async fn put(site: &Site, key: &str, alias: &str, body: Value) -> Answer {
    let path = format!("{BASE}/aliases/{alias}");
    call(site, Method::PUT, &path, Some(key), Some(body)).await
}

async fn delete(site: &Site, key: &str, alias: &str) -> Answer {
    let path = format!("{BASE}/aliases/{alias}");
    call(site, Method::DELETE, &path, Some(key), None).await
}

async fn get(site: &Site, key: &str, path: &str) -> Value {
    let got = call(site, Method::GET, path, Some(key), None).await;
    assert_eq!(got.status, StatusCode::OK, "{path}: {}", got.body);
    got.json()
}

async fn an_alias_moves_with_its_history_and_names_a_version_wherever_one_goes(db: TestDb) {
    let config = config(&db);
    let site = site_from(db, config).await;
    let (key, cookie) = key_and_cookie(&site, "aliased").await;
    three_versions(&site, &key).await;

    // Set, then moved: the alias names one version, the history both moves.
    let set = put(&site, &key, "production", json!({"version": 1})).await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.body);
    assert_eq!(set.json()["version"], 1);
    let moved = put(&site, &key, "production", json!({"version": 2})).await;
    assert_eq!(moved.json()["version"], 2, "{}", moved.body);
    put(&site, &key, "candidate", json!({"version": 1})).await;
    let aliases = get(&site, &key, &format!("{BASE}/aliases")).await;
    let names: Vec<(&str, u64)> = aliases
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["alias"].as_str().unwrap(), a["version"].as_u64().unwrap()))
        .collect();
    assert_eq!(names, [("candidate", 1), ("production", 2)]);
    let history = get(&site, &key, &format!("{BASE}/alias-history")).await;
    let h = history.as_array().unwrap();
    assert_eq!(h.len(), 3, "{history}");
    assert_eq!(
        (&h[1]["alias"], &h[1]["from"], &h[1]["to"], &h[1]["by"]),
        (
            &json!("production"),
            &json!(1),
            &json!(2),
            &json!("ann@example.com")
        ),
        "{history}"
    );

    // Bad input says what is wrong, and changes nothing.
    for (alias, body, field) in [
        ("production", json!({"version": 3}), "version"),
        ("production", json!({"version": 9}), "version"),
        ("Prod", json!({"version": 1}), "alias"),
        ("3", json!({"version": 1}), "alias"),
    ] {
        let refused = put(&site, &key, alias, body).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.body);
        assert_eq!(
            refused.error().1.as_deref(),
            Some(field),
            "{}",
            refused.body
        );
    }
    let still = get(&site, &key, &format!("{BASE}/aliases")).await;
    assert_eq!(still, aliases);

    // A job that reads `line@production` records the version it named then.
    post_ok(
        &site,
        &key,
        "/api/v1/jobs",
        json!({"name": "reads", "command": ["true"], "num_trainers": 1,
               "trainer": {"cpu": "100m", "memory": "64Mi"}, "models": ["line@production"]}),
    )
    .await;
    let job = wait_for(&site, &key, "reads", "succeeded").await;
    assert_eq!(job["spec"]["models"], json!(["aliased/line:2"]), "{job}");
    let unknown = call(
        &site,
        Method::POST,
        "/api/v1/jobs",
        Some(&key),
        Some(
            json!({"name": "nope", "command": ["true"], "num_trainers": 1,
                    "trainer": {"cpu": "100m", "memory": "64Mi"}, "models": ["line@staging"]}),
        ),
    )
    .await;
    assert_eq!(unknown.status, StatusCode::BAD_REQUEST, "{}", unknown.body);
    assert!(
        unknown.body.contains("has no alias “staging”"),
        "{}",
        unknown.body
    );

    // Serving launched on an alias serves the version it names.
    let launched = post_ok(
        &site,
        &key,
        "/api/v1/serving",
        json!({"name": "line-api", "model": "aliased/line@candidate", "replicas": 1,
               "resources": {"cpu": "100m", "memory": "128Mi"}}),
    )
    .await;
    assert_eq!(launched.json()["version"], 1, "{}", launched.body);
    let both = call(
        &site,
        Method::POST,
        "/api/v1/serving",
        Some(&key),
        Some(
            json!({"name": "line-api2", "model": "aliased/line@candidate", "version": 2,
                    "resources": {"cpu": "100m", "memory": "128Mi"}}),
        ),
    )
    .await;
    assert_eq!(both.status, StatusCode::BAD_REQUEST, "{}", both.body);
    call(
        &site,
        Method::DELETE,
        "/api/v1/serving/line-api",
        Some(&key),
        None,
    )
    .await;

    // The model's page lists them; its form sets one without JavaScript.
    let html = site.page_ok(&cookie, "/models/aliased/line").await;
    assert!(html.contains("data-alias=\"production\""), "{html}");
    assert!(html.contains("moved from v1 to v2"), "{html}");
    let form = "asset[kind]=model&asset[owner]=aliased&asset[name]=line&change[op]=set_alias\
                &change[alias]=staging&change[version]=1&change[protected]=";
    let posted = site
        .form_post_as(&cookie, "/api/change_asset", form, "/models/aliased/line")
        .await;
    assert!(posted.status().is_redirection(), "{}", posted.status());
    let html = site.page_ok(&cookie, "/models/aliased/line").await;
    assert!(html.contains("data-alias=\"staging\""), "{html}");

    // Deleted: gone from the list, kept in the history.
    let deleted = delete(&site, &key, "candidate").await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT, "{}", deleted.body);
    let history = get(&site, &key, &format!("{BASE}/alias-history")).await;
    assert_eq!(
        (&history[0]["alias"], &history[0]["from"], &history[0]["to"]),
        (&json!("candidate"), &json!(1), &Value::Null),
        "{history}"
    );
    let again = delete(&site, &key, "candidate").await;
    assert_eq!(again.status, StatusCode::NOT_FOUND, "{}", again.body);
}

on_both_databases!(
    an_alias_moves_with_its_history_and_names_a_version_wherever_one_goes,
    super::an_alias_moves_with_its_history_and_names_a_version_wherever_one_goes
);

/// Only the account's owners protect, move or delete a protected alias; a
/// member moves the others; another account reads a public model's
/// aliases but never changes them.
#[tokio::test(flavor = "multi_thread")]
async fn a_protected_alias_is_moved_only_by_the_accounts_owners() {
    let smtp = crate::common::smtp::SmtpServer::start().await;
    let site = site_mailing(crate::common::sqlite().await, &smtp).await;
    let (owner, _) = key_and_cookie(&site, "aliased").await;
    three_versions(&site, &owner).await;
    let member_cookie = join(&site, &smtp, &owner, "bob@example.com", "member").await;
    let member = server::access_keys::SqlAccessKeys::new(site.db.pool.clone())
        .create_for("aliased", "bob@example.com", "tests", Default::default())
        .await
        .unwrap()
        .key;
    assert!(!member_cookie.is_empty());

    let set = put(
        &site,
        &owner,
        "production",
        json!({"version": 1, "protected": true}),
    )
    .await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.body);
    assert_eq!(set.json()["protected"], true);
    let moved = put(&site, &member, "production", json!({"version": 2})).await;
    assert_eq!(moved.status, StatusCode::FORBIDDEN, "{}", moved.body);
    assert!(
        moved.body.contains("only the account's owners"),
        "{}",
        moved.body
    );
    let gone = delete(&site, &member, "production").await;
    assert_eq!(gone.status, StatusCode::FORBIDDEN, "{}", gone.body);
    let protect = put(
        &site,
        &member,
        "candidate",
        json!({"version": 1, "protected": true}),
    )
    .await;
    assert_eq!(protect.status, StatusCode::FORBIDDEN, "{}", protect.body);
    // An unprotected alias is any member's to move.
    let free = put(&site, &member, "candidate", json!({"version": 2})).await;
    assert_eq!(free.status, StatusCode::OK, "{}", free.body);
    assert_eq!(
        get(&site, &owner, &format!("{BASE}/aliases")).await[1]["version"],
        1,
        "production stayed"
    );
    // The owner moves it and lifts the protection.
    let lifted = put(
        &site,
        &owner,
        "production",
        json!({"version": 2, "protected": false}),
    )
    .await;
    assert_eq!(lifted.json()["protected"], false, "{}", lifted.body);
    assert_eq!(
        put(&site, &member, "production", json!({"version": 1}))
            .await
            .status,
        StatusCode::OK
    );

    // Another account: not found, even to read.
    let (eve, _) = key_and_cookie(&site, "eve").await;
    let theirs = call(
        &site,
        Method::GET,
        &format!("{BASE}/aliases"),
        Some(&eve),
        None,
    )
    .await;
    assert_eq!(theirs.status, StatusCode::NOT_FOUND, "{}", theirs.body);
    let write = put(&site, &eve, "production", json!({"version": 1})).await;
    assert_eq!(write.status, StatusCode::NOT_FOUND, "{}", write.body);
}
