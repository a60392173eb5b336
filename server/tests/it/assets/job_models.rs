//! Jobs read model versions: the one named or the newest finished one,
//! pinned in the job's record, refused when unreadable or unfinished.

use super::*;

/// Registers a version of `owner`'s model `name` holding `weights.txt`
/// with `text`, finished unless `finish` is false; returns its number.
async fn version_with(
    site: &Site,
    key: &str,
    owner: &str,
    name: &str,
    text: &str,
    finish: bool,
) -> u64 {
    let base = format!("/api/v1/models/{owner}/{name}");
    let made = call(
        site,
        Method::POST,
        &format!("{base}/versions"),
        Some(key),
        Some(json!({})),
    )
    .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());
    let v = made.json()["version"].as_u64().unwrap();
    upload(
        site,
        Some(key),
        &base,
        &format!("weights.txt?version={v}"),
        text.as_bytes(),
    )
    .await;
    if finish {
        let done = call(
            site,
            Method::POST,
            &format!("{base}/versions/{v}/finish"),
            Some(key),
            None,
        )
        .await;
        assert_eq!(done.status, StatusCode::OK, "{}", done.text());
    }
    v
}

fn model_job(name: &str, script: &str, models: &[&str]) -> Value {
    let mut spec = job_spec(name, script, &[]);
    spec["models"] = json!(models);
    spec
}

/// A job names model versions (its own newest, a public one at a version)
/// and reads their files from `$PADDLE_MODEL_DIR…`; its record says the
/// exact versions; what it cannot read is refused before anything runs.
async fn a_job_reads_the_model_versions_it_names(db: TestDb) {
    let site = local_site(db, 1 << 30).await;
    let ann = key_for(&site, "models-ann").await;
    let bob = key_for(&site, "models-bob").await;
    create(&site, Some(&ann), "models", "line").await;
    version_with(&site, &ann, "models-ann", "line", "ann v1\n", true).await;
    version_with(&site, &ann, "models-ann", "line", "ann v2\n", true).await;
    // Newer, but still uploading: "the newest" means the newest finished.
    version_with(&site, &ann, "models-ann", "line", "ann v3\n", false).await;
    create(&site, Some(&bob), "models", "base-net").await;
    version_with(&site, &bob, "models-bob", "base-net", "bob v1\n", true).await;
    version_with(&site, &bob, "models-bob", "base-net", "bob v2\n", true).await;
    create(&site, Some(&bob), "models", "secret").await;
    version_with(&site, &bob, "models-bob", "secret", "hidden\n", true).await;
    let public = call(
        &site,
        Method::PUT,
        "/api/v1/models/models-bob/base-net/public",
        Some(&bob),
        Some(json!({"public": true})),
    )
    .await;
    assert_eq!(public.status, StatusCode::OK, "{}", public.text());

    let script = "cat \"$PADDLE_MODEL_DIR/weights.txt\" \"$PADDLE_MODEL_DIR_BASE_NET/weights.txt\"";
    let made = call(
        &site,
        Method::POST,
        "/api/v1/jobs",
        Some(&ann),
        Some(model_job(
            "evaluate",
            script,
            &["line", "models-bob/base-net:1"],
        )),
    )
    .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());
    assert_eq!(
        made.json()["spec"]["models"],
        json!(["models-ann/line:2", "models-bob/base-net:1"])
    );
    wait_for_job(&site, &ann, "evaluate", "succeeded").await;
    let log = get(
        &site,
        "/api/v1/jobs/evaluate/pods/trainer-0/log",
        Some(&ann),
    )
    .await;
    assert_eq!(log.text(), "ann v2\nbob v1\n");

    for (models, shown) in [
        (
            &["models-bob/secret"][..],
            "There is no model “models-bob/secret” you can read.",
        ),
        (&["nope"][..], "There is no model “nope” you can read."),
        (&["line:3"][..], "Version 3 of “line” is still uploading."),
        (&["line:9"][..], "“line” has no version 9."),
        (&["line:0"][..], "is not a model"),
        (&["../etc"][..], "is not a model"),
    ] {
        let refused = call(
            &site,
            Method::POST,
            "/api/v1/jobs",
            Some(&ann),
            Some(model_job("refused", "true", models)),
        )
        .await;
        assert_eq!(
            refused.status,
            StatusCode::BAD_REQUEST,
            "{models:?}: {}",
            refused.text()
        );
        let (_, field, message) = refused.error();
        assert_eq!(field.as_deref(), Some("models"));
        assert!(message.contains(shown), "{models:?}: {message}");
        assert_eq!(
            get(&site, "/api/v1/jobs/refused", Some(&ann)).await.status,
            StatusCode::NOT_FOUND
        );
    }
    // The console sets the folders' variables; a spec may not.
    let mut forged = model_job("refused", "true", &[]);
    forged["env"] = json!([{"name": "PADDLE_MODEL_DIR_LINE", "value": "/etc"}]);
    let refused = call(
        &site,
        Method::POST,
        "/api/v1/jobs",
        Some(&ann),
        Some(forged),
    )
    .await;
    assert_eq!(
        refused.status,
        StatusCode::BAD_REQUEST,
        "{}",
        refused.text()
    );
}
on_both_databases!(
    a_job_reads_the_model_versions_it_names,
    super::a_job_reads_the_model_versions_it_names
);
