//! Secrets: an owner sets one, a job uses it as a variable and as a file,
//! and its value is nowhere a user or an operator could read it: not in
//! any answer of the API, not in the job's spec or page, not in the log
//! (written as `***`), not in any file of the data folder (the database
//! holds it sealed), not left behind after the job. On both databases.

use http::{Method, StatusCode};
use serde_json::json;

use app::ports::{Credential, Principal};

use crate::common::rest::{call, key_and_cookie, wait_for};
use crate::common::site::{config, site_from, Site};
use crate::common::TestDb;

/// A value no other test or library prints.
fn unique_value() -> String {
    let mut bytes = [0u8; 12];
    getrandom::fill(&mut bytes).unwrap();
    format!("s3cr3t-{}", hex::encode(bytes))
}

/// Every file under `dir` that holds `needle`.
fn files_holding(dir: &std::path::Path, needle: &[u8]) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                if bytes.windows(needle.len()).any(|w| w == needle) {
                    found.push(path.display().to_string());
                }
            }
        }
    }
    found
}

async fn put_secret(
    site: &Site,
    key: &str,
    name: &str,
    body: serde_json::Value,
) -> crate::common::rest::Answer {
    call(
        site,
        Method::PUT,
        &format!("/api/v1/secrets/{name}"),
        Some(key),
        Some(body),
    )
    .await
}

async fn a_secret_reaches_a_job_and_its_value_is_nowhere_else(db: TestDb) {
    let settings = config(&db);
    let site = site_from(db, settings).await;
    let (key, cookie) = key_and_cookie(&site, "team").await;
    let value = unique_value();
    let file_value = format!("{{\"private_key\": \"{}\"}}", unique_value());

    let set = put_secret(
        &site,
        &key,
        "s3-key",
        json!({"value": value, "description": "Read access to the bucket"}),
    )
    .await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.body);
    assert_eq!(set.json()["name"], "s3-key");
    assert_eq!(set.json()["size"], value.len());
    let set = put_secret(&site, &key, "gcp", json!({"value": file_value})).await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.body);

    // The job proves it got both values by printing them reversed, and
    // prints them as they are too, as a careless program would.
    let script = "import os\n\
                  v = os.environ['S3_KEY']\n\
                  f = open(os.path.join(os.environ['PADDLECLOUD_SECRETS_DIR'], 'gcp.json')).read()\n\
                  print('env reversed', v[::-1])\n\
                  print('file reversed', f[::-1])\n\
                  print('env as is', v)\n\
                  print('file as is', f)\n\
                  print('dir', os.environ['PADDLECLOUD_SECRETS_DIR'])\n";
    let submitted = call(
        &site,
        Method::POST,
        "/api/v1/jobs",
        Some(&key),
        Some(json!({
            "name": "uses-secrets",
            "command": ["python3", "-c", script],
            "num_trainers": 1,
            "trainer": {"cpu": "500m", "memory": "256Mi"},
            "secrets": [
                {"secret": "s3-key", "env": "S3_KEY"},
                {"secret": "gcp", "file": "gcp.json"},
            ],
        })),
    )
    .await;
    assert_eq!(submitted.status, StatusCode::CREATED, "{}", submitted.body);
    let job = wait_for(&site, &key, "uses-secrets", "succeeded").await;
    assert_eq!(
        job["spec"]["secrets"][0],
        json!({"secret": "s3-key", "env": "S3_KEY"})
    );

    let log = call(
        &site,
        Method::GET,
        "/api/v1/jobs/uses-secrets/pods/trainer-0/log",
        Some(&key),
        None,
    )
    .await;
    assert_eq!(log.status, StatusCode::OK);
    let reversed: String = value.chars().rev().collect();
    let file_reversed: String = file_value.chars().rev().collect();
    assert!(
        log.body.contains(&format!("env reversed {reversed}")),
        "{}",
        log.body
    );
    assert!(
        log.body.contains(&format!("file reversed {file_reversed}")),
        "{}",
        log.body
    );
    assert!(log.body.contains("env as is ***"), "{}", log.body);
    assert!(log.body.contains("file as is ***"), "{}", log.body);
    let dir = log
        .body
        .lines()
        .find_map(|l| l.strip_prefix("dir ").map(str::to_owned))
        .expect("the job printed its secrets folder");
    assert!(
        !std::path::Path::new(&dir).exists(),
        "{dir} is left after the job"
    );

    // Everything a user reads about it.
    let mut seen = Vec::new();
    for path in [
        "/api/v1/secrets",
        "/api/v1/jobs/uses-secrets",
        "/api/v1/jobs/uses-secrets/detail",
        "/api/v1/audit",
        "/api/v1/jobs/uses-secrets/pods/trainer-0/log?timestamps=true",
    ] {
        let got = call(&site, Method::GET, path, Some(&key), None).await;
        assert!(
            got.status.is_success(),
            "{path}: {} {}",
            got.status,
            got.body
        );
        seen.push((path.to_owned(), got.body));
    }
    for path in [
        "/secrets",
        "/jobs/uses-secrets",
        "/jobs?log=uses-secrets",
        "/account/audit",
    ] {
        seen.push((path.to_owned(), site.page_ok(&cookie, path).await));
    }
    for (path, body) in &seen {
        assert!(!body.contains(&value), "{path} shows the value: {body}");
        assert!(!body.contains(&file_value), "{path} shows the file: {body}");
    }
    let page = &seen.iter().find(|(p, _)| p == "/secrets").unwrap().1;
    assert!(page.contains("Read access to the bucket"), "{page}");
    let audit = &seen.iter().find(|(p, _)| p == "/api/v1/audit").unwrap().1;
    assert!(audit.contains("secret.created"), "{audit}");
    assert!(
        audit.contains("job uses-secrets: s3-key as S3_KEY, gcp as file gcp.json"),
        "{audit}"
    );
    let listed: serde_json::Value = serde_json::from_str(&seen[0].1).unwrap();
    assert!(listed[0]["last_used_at"].is_i64(), "{listed}");

    // Nothing on disk holds it: not the log, not the database (sealed).
    let dir = site.db.dir().to_owned();
    for needle in [value.as_bytes(), file_value.as_bytes()] {
        let found = files_holding(&dir, needle);
        assert!(found.is_empty(), "the value is in {found:?}");
    }
    let sealed: Vec<(String,)> = sqlx::query_as("SELECT sealed FROM secrets")
        .fetch_all(&site.db.pool)
        .await
        .unwrap();
    assert_eq!(sealed.len(), 2);
    assert!(sealed
        .iter()
        .all(|(s,)| !s.contains(&value) && !s.contains("private_key")));
}
on_both_databases!(
    a_secret_reaches_a_job_and_its_value_is_nowhere_else,
    super::a_secret_reaches_a_job_and_its_value_is_nowhere_else
);

async fn put_refused(
    site: &Site,
    key: &str,
    name: &str,
    body: serde_json::Value,
    field: &str,
    says: &str,
) {
    let got = put_secret(site, key, name, body).await;
    assert_eq!(got.status, StatusCode::BAD_REQUEST, "{name}: {}", got.body);
    let error = &got.json()["error"];
    assert_eq!(error["field"], field, "{error}");
    assert!(error["message"].as_str().unwrap().contains(says), "{error}");
}

#[tokio::test(flavor = "multi_thread")]
async fn only_owners_set_secrets_and_what_cannot_be_used_is_refused_clearly() {
    let db = crate::common::sqlite().await;
    let settings = config(&db);
    let site = site_from(db, settings).await;
    let (key, _) = key_and_cookie(&site, "team").await;
    put_refused(
        &site,
        &key,
        "S3",
        json!({"value": "x"}),
        "name",
        "not a secret name",
    )
    .await;
    put_refused(
        &site,
        &key,
        "s3",
        json!({}),
        "value",
        "Give the secret's value",
    )
    .await;
    put_refused(
        &site,
        &key,
        "s3",
        json!({"value_base64": "%%"}),
        "value_base64",
        "not valid base64",
    )
    .await;
    put_refused(
        &site,
        &key,
        "s3",
        json!({"value": "x".repeat(70_000)}),
        "value",
        "at most 64 KiB",
    )
    .await;
    // A file's bytes that are not text.
    let set = put_secret(&site, &key, "blob", json!({"value_base64": "/wD+"})).await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.body);

    let submit = |secrets: serde_json::Value| {
        let site = &site;
        let key = &key;
        async move {
            call(
                site,
                Method::POST,
                "/api/v1/jobs",
                Some(key),
                Some(json!({
                    "name": "needs-one",
                    "command": ["true"],
                    "num_trainers": 1,
                    "trainer": {"cpu": "100m", "memory": "64Mi"},
                    "secrets": secrets,
                })),
            )
            .await
        }
    };
    for (secrets, says) in [
        (
            json!([{"secret": "nope", "env": "X"}]),
            "There is no secret “nope” in team",
        ),
        (json!([{"secret": "blob", "env": "X"}]), "is not text"),
        (
            json!([{"secret": "blob", "env": "PADDLE_PORT"}]),
            "set by PaddleCloud",
        ),
        (
            json!([{"secret": "blob", "file": "../x"}]),
            "not a file name",
        ),
        (json!([{"secret": "blob"}]), "a variable or a file"),
    ] {
        let got = submit(secrets.clone()).await;
        assert_eq!(
            got.status,
            StatusCode::BAD_REQUEST,
            "{secrets}: {}",
            got.body
        );
        let error = &got.json()["error"];
        assert_eq!(error["field"], "secrets", "{error}");
        assert!(
            error["message"].as_str().unwrap().contains(says),
            "{secrets}: {error}"
        );
    }
    let got = call(
        &site,
        Method::GET,
        "/api/v1/jobs/needs-one",
        Some(&key),
        None,
    )
    .await;
    assert_eq!(
        got.status,
        StatusCode::NOT_FOUND,
        "a refused job is not recorded"
    );

    // A member uses secrets but does not set them (the port says so for
    // every way in; the role matrix asks each route and function).
    let owner = site.owner("team").await;
    let member = Principal::new(
        app::models::Me {
            role: app::models::Role::Member,
            ..owner.clone()
        },
        Credential::Session(0),
    );
    let secrets = &site.services.secrets;
    let refused = secrets
        .set_secret(
            &member,
            app::models::SecretForm {
                name: "mine".into(),
                value: Some("v".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("Only the account's owners set secrets"),
        "{refused}"
    );
    assert!(secrets.delete_secret(&member, "blob").await.is_err());
    assert_eq!(secrets.secrets(&member).await.unwrap().len(), 1);

    let gone = call(
        &site,
        Method::DELETE,
        "/api/v1/secrets/blob",
        Some(&key),
        None,
    )
    .await;
    assert_eq!(gone.status, StatusCode::NO_CONTENT, "{}", gone.body);
    let again = call(
        &site,
        Method::DELETE,
        "/api/v1/secrets/blob",
        Some(&key),
        None,
    )
    .await;
    assert_eq!(again.status, StatusCode::NOT_FOUND, "{}", again.body);
    let audit = call(&site, Method::GET, "/api/v1/audit", Some(&key), None)
        .await
        .body;
    assert!(audit.contains("secret.deleted"), "{audit}");
}
