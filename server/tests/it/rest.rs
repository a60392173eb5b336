//! `/api/v1` as the CLI and the SDK use it: every route, bad input, another
//! account's jobs, and the OpenAPI document that describes the routes.

use crate::common::rest::{call, key_for, spec, wait_for};
use crate::common::site::site;
use axum::body::Body;
use http::{header, Method, Request, StatusCode};
use serde_json::{json, Value};
use server::access_keys::SqlAccessKeys;

#[tokio::test(flavor = "multi_thread")]
async fn a_job_submitted_with_a_key_runs_and_its_pods_and_logs_can_be_read() {
    let site = site().await;
    let key = key_for(&site, "vision").await;

    let me = call(&site, Method::GET, "/api/v1/me", Some(&key), None).await;
    assert_eq!(me.status, StatusCode::OK);
    assert_eq!(me.json()["account"]["name"], "vision");

    // The parameter server serves until the trainers are done (a PS that
    // exits first fails the job).
    let script = "echo \"hi from $TRAINING_ROLE $PADDLE_TRAINER_ID of $PADDLE_TRAINERS_NUM\"; \
                  [ \"$TRAINING_ROLE\" = PSERVER ] && exec sleep 30; exit 0";
    let made = call(
        &site,
        Method::POST,
        "/api/v1/jobs",
        Some(&key),
        Some(spec("mnist", script)),
    )
    .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    assert_eq!(made.headers[header::LOCATION], "/api/v1/jobs/mnist");
    assert_eq!(made.json()["cluster"], "local");

    let done = wait_for(&site, &key, "mnist", "succeeded").await;
    assert_eq!(done["trainers"]["succeeded"], 2);
    assert_eq!(done["spec"]["ps"]["memory"], "256Mi");

    let listed = call(
        &site,
        Method::GET,
        "/api/v1/jobs?status=succeeded&name=mni",
        Some(&key),
        None,
    )
    .await;
    let page = listed.json();
    assert_eq!(page["total"], 1);
    assert_eq!(page["jobs"][0]["name"], "mnist");
    let none = call(
        &site,
        Method::GET,
        "/api/v1/jobs?status=running",
        Some(&key),
        None,
    )
    .await;
    assert_eq!(none.json()["total"], 0);

    let pods = call(
        &site,
        Method::GET,
        "/api/v1/jobs/mnist/pods",
        Some(&key),
        None,
    )
    .await;
    let names: Vec<String> = pods
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["ps-0", "trainer-0", "trainer-1"]);

    let log = call(
        &site,
        Method::GET,
        "/api/v1/jobs/mnist/pods/trainer-1/log?tail=5",
        Some(&key),
        None,
    )
    .await;
    assert_eq!(log.status, StatusCode::OK);
    assert!(log.headers[header::CONTENT_TYPE]
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
    assert_eq!(log.body, "hi from TRAINER 1 of 2\n");
    let stamped = call(
        &site,
        Method::GET,
        "/api/v1/jobs/mnist/pods/ps-0/log?timestamps=true&download=true",
        Some(&key),
        None,
    )
    .await;
    assert!(
        stamped.body.contains("Z hi from PSERVER"),
        "{}",
        stamped.body
    );
    assert_eq!(
        stamped.headers[header::CONTENT_DISPOSITION],
        "attachment; filename=\"mnist-ps-0.log\""
    );

    let gone = call(
        &site,
        Method::DELETE,
        "/api/v1/jobs/mnist",
        Some(&key),
        None,
    )
    .await;
    assert_eq!(gone.status, StatusCode::NO_CONTENT);
    let again = call(&site, Method::GET, "/api/v1/jobs/mnist", Some(&key), None).await;
    assert_eq!(again.status, StatusCode::NOT_FOUND);
    assert_eq!(again.error().0, "not_found");
}

#[tokio::test(flavor = "multi_thread")]
async fn stopping_a_running_job_ends_it_as_stopped() {
    let site = site().await;
    let key = key_for(&site, "vision").await;
    let made = call(
        &site,
        Method::POST,
        "/api/v1/jobs",
        Some(&key),
        Some(spec("long", "sleep 60")),
    )
    .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    wait_for(&site, &key, "long", "running").await;
    let stopped = call(
        &site,
        Method::POST,
        "/api/v1/jobs/long/stop",
        Some(&key),
        None,
    )
    .await;
    assert_eq!(stopped.status, StatusCode::OK, "{}", stopped.body);
    assert_eq!(stopped.json()["status"], "stopped");
}

#[tokio::test(flavor = "multi_thread")]
async fn every_route_refuses_callers_without_a_valid_key() {
    let site = site().await;
    let key = key_for(&site, "vision").await;
    let routes = [
        (Method::GET, "/api/v1/me"),
        (Method::GET, "/api/v1/jobs"),
        (Method::POST, "/api/v1/jobs"),
        (Method::GET, "/api/v1/jobs/x"),
        (Method::DELETE, "/api/v1/jobs/x"),
        (Method::POST, "/api/v1/jobs/x/stop"),
        (Method::GET, "/api/v1/jobs/x/pods"),
        (Method::GET, "/api/v1/jobs/x/pods/ps-0/log"),
    ];
    let wrong = format!("pck_{}", "0".repeat(64));
    for (method, path) in routes {
        for bad in [None, Some("nonsense"), Some(wrong.as_str())] {
            let got = call(&site, method.clone(), path, bad, Some(spec("x", "true"))).await;
            assert_eq!(
                got.status,
                StatusCode::UNAUTHORIZED,
                "{method} {path} with {bad:?}"
            );
            assert_eq!(got.error().0, "unauthenticated");
            assert!(got.headers.contains_key(header::WWW_AUTHENTICATE));
        }
    }
    let revoked = {
        let keys = SqlAccessKeys::new(site.db.pool.clone());
        let made = keys
            .create_for("vision", "ann@example.com", "old", Default::default())
            .await
            .unwrap();
        sqlx::query("DELETE FROM access_keys WHERE id = $1")
            .bind(made.info.id)
            .execute(&site.db.pool)
            .await
            .unwrap();
        made.key
    };
    let got = call(&site, Method::GET, "/api/v1/jobs", Some(&revoked), None).await;
    assert_eq!(got.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        call(&site, Method::GET, "/api/v1/jobs", Some(&key), None)
            .await
            .status,
        StatusCode::OK
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_browser_session_may_use_the_api_too() {
    let site = site().await;
    let cookie = site.sign_up("vision").await;
    let res = site
        .send(
            Request::get("/api/v1/me")
                .header(header::COOKIE, cookie)
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(res.status(), StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_input_gets_a_400_naming_the_field() {
    let site = site().await;
    let key = key_for(&site, "vision").await;
    let post = |body: Value| {
        let (site, key) = (&site, key.clone());
        async move { call(site, Method::POST, "/api/v1/jobs", Some(&key), Some(body)).await }
    };

    let mut no_trainers = spec("a", "true");
    no_trainers.as_object_mut().unwrap().remove("num_trainers");
    let zero = {
        let mut s = spec("a", "true");
        s["num_trainers"] = json!(0);
        s
    };
    let bad_cpu = {
        let mut s = spec("a", "true");
        s["trainer"]["cpu"] = json!("lots");
        s
    };
    let bad_type = {
        let mut s = spec("a", "true");
        s["trainer"]["gpu"] = json!("one");
        s
    };
    let bad_name = spec("Not_A_Label", "true");
    for (body, field) in [
        (no_trainers, Some("num_trainers")),
        (zero, Some("num_trainers")),
        (bad_cpu, Some("trainer.cpu")),
        (bad_type, Some("trainer.gpu")),
        (bad_name, Some("name")),
    ] {
        let got = post(body.clone()).await;
        assert_eq!(got.status, StatusCode::BAD_REQUEST, "{body}: {}", got.body);
        assert_eq!(
            got.error(),
            ("invalid".to_owned(), field.map(str::to_owned)),
            "{body}"
        );
    }

    let res = site
        .send(
            Request::post("/api/v1/jobs")
                .header(header::AUTHORIZATION, format!("Bearer {key}"))
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from("{not json"))
                .unwrap(),
        )
        .await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let res = site
        .send(
            Request::post("/api/v1/jobs")
                .header(header::AUTHORIZATION, format!("Bearer {key}"))
                .body(Body::from(spec("a", "true").to_string()))
                .unwrap(),
        )
        .await;
    assert_eq!(
        res.status(),
        StatusCode::BAD_REQUEST,
        "JSON without its content type"
    );

    for (query, field) in [
        ("status=sleeping", Some("status")),
        ("from=yesterday", Some("from")),
        ("to=2026-13-01", Some("to")),
        ("page=-1", Some("page")),
    ] {
        let got = call(
            &site,
            Method::GET,
            &format!("/api/v1/jobs?{query}"),
            Some(&key),
            None,
        )
        .await;
        assert_eq!(got.status, StatusCode::BAD_REQUEST, "{query}: {}", got.body);
        assert_eq!(got.error().1.as_deref(), field, "{query}: {}", got.body);
    }
    let got = call(
        &site,
        Method::GET,
        "/api/v1/jobs/x/pods/ps-0/log?tail=many",
        Some(&key),
        None,
    )
    .await;
    assert_eq!(got.status, StatusCode::BAD_REQUEST);

    assert_eq!(
        post(spec("dup", "sleep 5")).await.status,
        StatusCode::CREATED
    );
    let taken = post(spec("dup", "true")).await;
    assert_eq!(taken.status, StatusCode::CONFLICT);
    assert_eq!(
        taken.error(),
        ("conflict".to_owned(), Some("name".to_owned()))
    );
    call(
        &site,
        Method::POST,
        "/api/v1/jobs/dup/stop",
        Some(&key),
        None,
    )
    .await;

    let unknown = call(&site, Method::GET, "/api/v1/nothing/here", Some(&key), None).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert_eq!(unknown.error().0, "not_found");
}

#[tokio::test(flavor = "multi_thread")]
async fn another_accounts_job_is_not_found_on_every_route() {
    let site = site().await;
    let ann = key_for(&site, "vision").await;
    let eve = key_for(&site, "speech").await;
    let made = call(
        &site,
        Method::POST,
        "/api/v1/jobs",
        Some(&ann),
        Some(spec("secret", "sleep 30")),
    )
    .await;
    assert_eq!(made.status, StatusCode::CREATED);
    wait_for(&site, &ann, "secret", "running").await;

    for (method, path) in [
        (Method::GET, "/api/v1/jobs/secret"),
        (Method::POST, "/api/v1/jobs/secret/stop"),
        (Method::GET, "/api/v1/jobs/secret/pods"),
        (Method::GET, "/api/v1/jobs/secret/pods/trainer-0/log"),
        (Method::DELETE, "/api/v1/jobs/secret"),
    ] {
        let got = call(&site, method.clone(), path, Some(&eve), None).await;
        assert_eq!(
            got.status,
            StatusCode::NOT_FOUND,
            "{method} {path}: {}",
            got.body
        );
    }
    let eves = call(&site, Method::GET, "/api/v1/jobs", Some(&eve), None).await;
    assert_eq!(eves.json()["total"], 0);
    let still = call(&site, Method::GET, "/api/v1/jobs/secret", Some(&ann), None).await;
    assert_eq!(
        still.json()["status"],
        "running",
        "eve's stop and delete did nothing"
    );
    // Eve may use the name in her own account.
    let hers = call(
        &site,
        Method::POST,
        "/api/v1/jobs",
        Some(&eve),
        Some(spec("secret", "true")),
    )
    .await;
    assert_eq!(hers.status, StatusCode::CREATED);
    call(
        &site,
        Method::POST,
        "/api/v1/jobs/secret/stop",
        Some(&ann),
        None,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_openapi_document_describes_exactly_the_routes_that_answer() {
    let site = site().await;
    let key = key_for(&site, "vision").await;
    let doc = call(&site, Method::GET, "/api/v1/openapi.json", None, None).await;
    assert_eq!(doc.status, StatusCode::OK, "the document needs no key");
    let doc = doc.json();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    assert_eq!(
        doc["components"]["securitySchemes"]["access_key"]["scheme"],
        "bearer"
    );

    let mut documented = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            if ["get", "post", "delete", "put", "patch"].contains(&method.as_str()) {
                documented.push(format!("{} {path}", method.to_uppercase()));
            }
        }
    }
    documented.sort();
    let mut expected = vec![
        "GET /api/v1/me",
        "GET /api/v1/me/accounts",
        "GET /api/v1/admin/accounts",
        "GET /api/v1/admin/idle-gpus",
        "GET /api/v1/members",
        "POST /api/v1/invitations",
        "DELETE /api/v1/invitations/{id}",
        "PUT /api/v1/members/{user_id}/role",
        "PUT /api/v1/members/{user_id}/caps",
        "PUT /api/v1/members/{user_id}/priority",
        "DELETE /api/v1/members/{user_id}",
        "GET /api/v1/jobs",
        "POST /api/v1/jobs",
        "GET /api/v1/jobs/{name}",
        "DELETE /api/v1/jobs/{name}",
        "POST /api/v1/jobs/{name}/stop",
        "POST /api/v1/jobs/{name}/stack-dump",
        "GET /api/v1/jobs/{name}/detail",
        "GET /api/v1/jobs/{name}/pods",
        "GET /api/v1/jobs/{name}/pods/{pod}/log",
        "GET /api/v1/jobs/{name}/metrics",
        "POST /api/v1/jobs/{name}/metrics",
        "POST /api/v1/jobs/{name}/metric-files/{file}",
        "GET /api/v1/jobs/{name}/metrics/{tag}",
        "GET /api/v1/jobs/{name}/resources",
        "GET /api/v1/quota",
        "PUT /api/v1/quota",
        "GET /api/v1/usage",
        "GET /api/v1/usage.csv",
        "GET /api/v1/{kind}",
        "POST /api/v1/{kind}",
        "GET /api/v1/{kind}/{owner}/{name}",
        "PATCH /api/v1/{kind}/{owner}/{name}",
        "DELETE /api/v1/{kind}/{owner}/{name}",
        "GET /api/v1/{kind}/{owner}/{name}/files",
        "PUT /api/v1/{kind}/{owner}/{name}/files/{path}",
        "GET /api/v1/{kind}/{owner}/{name}/files/{path}",
        "DELETE /api/v1/{kind}/{owner}/{name}/files/{path}",
        "GET /api/v1/{kind}/{owner}/{name}/archive.zip",
        "GET /api/v1/{kind}/{owner}/{name}/shares",
        "POST /api/v1/{kind}/{owner}/{name}/shares",
        "DELETE /api/v1/{kind}/{owner}/{name}/shares/{id}",
        "PUT /api/v1/{kind}/{owner}/{name}/public",
        "GET /api/v1/{kind}/{owner}/{name}/versions",
        "POST /api/v1/{kind}/{owner}/{name}/versions",
        "POST /api/v1/{kind}/{owner}/{name}/versions/{version}/finish",
        "PUT /api/v1/{kind}/{owner}/{name}/versions/{version}/tags",
        "GET /api/v1/models/{owner}/{name}/aliases",
        "PUT /api/v1/models/{owner}/{name}/aliases/{alias}",
        "DELETE /api/v1/models/{owner}/{name}/aliases/{alias}",
        "GET /api/v1/models/{owner}/{name}/alias-history",
        "GET /api/v1/shared/{token}",
        "GET /api/v1/shared/{token}/files/{path}",
        "GET /api/v1/shared/{token}/archive.zip",
        "GET /api/v1/serving",
        "POST /api/v1/serving",
        "GET /api/v1/serving/{name}",
        "DELETE /api/v1/serving/{name}",
        "POST /api/v1/serving/{name}/scale",
        "POST /api/v1/serving/{name}/stop",
        "GET /api/v1/serving/{name}/traffic",
        "POST /api/v1/serving/{name}/release",
        "GET /api/v1/lineage",
        "GET /api/v1/serving/{name}/shadow-calls",
        "GET /api/v1/notebooks",
        "POST /api/v1/notebooks",
        "GET /api/v1/notebooks/{name}",
        "DELETE /api/v1/notebooks/{name}",
        "POST /api/v1/notebooks/{name}/start",
        "POST /api/v1/notebooks/{name}/stop",
        "POST /api/v1/notebooks/{name}/keep",
        "GET /api/v1/notebooks/{name}/history",
        "GET /api/v1/notebooks/{name}/versions/{id}",
        "GET /api/v1/notebooks/{name}/versions/{id}/html",
        "GET /api/v1/notebooks/{name}/diff",
        "POST /api/v1/notebooks/{name}/versions/{id}/restore",
        "GET /api/v1/notebooks/{name}/parameters",
        "POST /api/v1/notebooks/{name}/runs",
        "POST /api/v1/scorings",
        "GET /api/v1/scorings/{name}",
        "POST /api/v1/scorings/{name}/retry",
        "GET /api/v1/jobs/{name}/notebook/input",
        "GET /api/v1/jobs/{name}/notebook/output",
        "PUT /api/v1/jobs/{name}/notebook/output",
        "GET /api/v1/jobs/{name}/notebook/output/html",
        "GET /api/v1/notebooks/{name}/shares",
        "POST /api/v1/notebooks/{name}/shares",
        "DELETE /api/v1/notebooks/{name}/shares/{id}",
        "GET /api/v1/notebook-shares",
        "GET /api/v1/notebook-shares/{id}/file",
        "GET /api/v1/notebook-shares/{id}/html",
        "POST /api/v1/notebook-shares/{id}/copy",
        "GET /api/v1/shared/notebooks/{token}",
        "GET /api/v1/shared/notebooks/{token}/file",
        "GET /api/v1/shared/notebooks/{token}/html",
        "POST /api/v1/shared/notebooks/{token}/copy",
        "GET /api/v1/schedules",
        "GET /api/v1/secrets",
        "PUT /api/v1/secrets/{name}",
        "DELETE /api/v1/secrets/{name}",
        "POST /api/v1/schedules",
        "GET /api/v1/schedules/{name}",
        "DELETE /api/v1/schedules/{name}",
        "POST /api/v1/schedules/{name}/pause",
        "POST /api/v1/schedules/{name}/resume",
        "GET /api/v1/notifications/subscriptions",
        "POST /api/v1/notifications/subscriptions",
        "DELETE /api/v1/notifications/subscriptions/{id}",
        "POST /api/v1/notifications/subscriptions/{id}/test",
        "GET /api/v1/notifications/deliveries",
        "GET /api/v1/alert-rules",
        "POST /api/v1/alert-rules",
        "DELETE /api/v1/alert-rules/{name}",
        "GET /api/v1/alerts",
        "GET /metrics",
        "GET /api/v1/templates",
        "POST /api/v1/templates",
        "GET /api/v1/templates/{name}",
        "POST /api/v1/templates/{name}/jobs",
        "GET /api/v1/templates/{name}/notebook",
        "GET /api/v1/templates/{name}/notebook/html",
        "POST /api/v1/templates/{name}/publish",
        "GET /api/v1/environments",
        "POST /api/v1/environments",
        "GET /api/v1/environments/{name}",
        "POST /api/v1/environments/{name}/publish",
        "GET /api/v1/pipelines",
        "POST /api/v1/pipelines",
        "GET /api/v1/pipelines/{name}",
        "POST /api/v1/pipelines/{name}/stop",
        "POST /api/v1/pipelines/{name}/retry",
        "GET /api/v1/experiments",
        "POST /api/v1/experiments",
        "GET /api/v1/experiments/{name}",
        "GET /api/v1/experiments/{name}/best",
        "POST /api/v1/experiments/{name}/pause",
        "POST /api/v1/experiments/{name}/resume",
        "POST /api/v1/experiments/{name}/stop",
        "POST /api/v1/experiments/{name}/extend",
        "POST /api/v1/experiments/{name}/retry",
        "POST /api/v1/local-runs",
        "GET /api/v1/local-runs/{name}",
        "POST /api/v1/local-runs/{name}/params",
        "POST /api/v1/local-runs/{name}/log",
        "POST /api/v1/local-runs/{name}/heartbeat",
        "POST /api/v1/local-runs/{name}/end",
        "GET /api/v1/cluster",
        "GET /api/v1/queue",
        "POST /api/v1/me/password",
        "POST /api/v1/me/email-confirmation",
        "POST /api/v1/password-resets",
        "POST /api/v1/password-resets/complete",
        "POST /api/v1/email-confirmations",
        "POST /api/v1/admin/reset-links",
        "GET /api/v1/audit",
        "GET /api/v1/audit.csv",
        "GET /api/v1/jobs/compare.csv",
    ];
    expected.sort();
    assert_eq!(documented, expected);

    // Every documented route answers as a route (a missing job, not a missing route).
    for line in &documented {
        let (method, path) = line.split_once(' ').unwrap();
        let path = path
            .replace("{name}", "nope")
            .replace("{pod}", "ps-0")
            .replace("{tag}", "train/loss")
            .replace("{kind}", "datasets")
            .replace("{owner}", "vision")
            .replace("{path}", "a/b.txt")
            .replace("{file}", "vdl/vdlrecords.1.log")
            .replace("{id}", "1")
            .replace("{version}", "1")
            .replace("{token}", "pcs_nope");
        let got = call(
            &site,
            method.parse().unwrap(),
            &path,
            Some(&key),
            Some(spec("nope", "true")),
        )
        .await;
        if got.status == StatusCode::NOT_FOUND {
            assert_ne!(
                got.json()["error"]["message"],
                "API route not found.",
                "{line}"
            );
        }
    }

    let job_spec = &doc["components"]["schemas"]["JobSpec"];
    let required: Vec<&str> = job_spec["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for field in ["name", "command", "num_trainers"] {
        assert!(required.contains(&field), "{field} required in {job_spec}");
    }
    assert!(doc["components"]["schemas"]["ErrorBody"].is_object());
}
