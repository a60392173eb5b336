//! What the OpenAPI document says about a request's shape is what the
//! console takes: a metrics batch is never empty (nor over 10,000 points),
//! a requirement line has no control characters (its pattern takes exactly
//! the lines the server takes), an address is one mail takes. Each bound
//! stated is checked here against the server's answer.

use app::models::EnvironmentSpec;
use http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::common::rest::{call, key_for};
use crate::common::site::site;

fn field(answer: &crate::common::rest::Answer) -> Value {
    answer.json()["error"]["field"].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_metrics_batch_is_stated_and_held_to_1_to_10000_points() {
    let site = site().await;
    let key = key_for(&site, "vision").await;
    let doc = call(&site, Method::GET, "/api/v1/openapi.json", None, None)
        .await
        .json();
    let body = &doc["paths"]["/api/v1/jobs/{name}/metrics"]["post"]["requestBody"];
    assert_eq!(
        body["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/MetricBatch"
    );
    let batch = &doc["components"]["schemas"]["MetricBatch"];
    assert_eq!(batch["type"], "array", "{batch}");
    assert_eq!(batch["minItems"], 1, "{batch}");
    assert_eq!(batch["maxItems"], 10_000, "{batch}");

    let empty = call(
        &site,
        Method::POST,
        "/api/v1/jobs/any/metrics",
        Some(&key),
        Some(json!([])),
    )
    .await;
    assert_eq!(empty.status, StatusCode::BAD_REQUEST, "{}", empty.body);
    assert!(empty.body.contains("The batch is empty"), "{}", empty.body);
    let points: Vec<Value> = (0..10_001)
        .map(|i| json!({"tag": "loss", "step": i, "value": 0.5}))
        .collect();
    let over = call(
        &site,
        Method::POST,
        "/api/v1/jobs/any/metrics",
        Some(&key),
        Some(Value::Array(points)),
    )
    .await;
    assert_eq!(over.status, StatusCode::BAD_REQUEST, "{}", over.body);
    assert!(over.body.contains("at most 10000 points"), "{}", over.body);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_requirement_lines_pattern_takes_exactly_the_lines_the_server_takes() {
    let site = site().await;
    let key = key_for(&site, "vision").await;
    let doc = call(&site, Method::GET, "/api/v1/openapi.json", None, None)
        .await
        .json();
    let schemas = &doc["components"]["schemas"];
    let requirements = &schemas["EnvironmentSpec"]["properties"]["requirements"];
    assert_eq!(requirements["maxItems"], 100, "{requirements}");
    assert_eq!(
        requirements["items"]["$ref"],
        "#/components/schemas/RequirementLine"
    );
    let line = &schemas["RequirementLine"];
    assert_eq!(line["maxLength"], 200, "{line}");
    let pattern = regex::Regex::new(line["pattern"].as_str().unwrap()).unwrap();

    let long = format!("numpy{}", "9".repeat(195));
    let samples = [
        "paddlepaddle==3.3.1",
        "visualdl >=2.5, <3",
        "requests[socks]~=2.31",
        "numpy; python_version >= '3.9'",
        "zope.interface",
        "  numpy  ",
        "a",
        "numpy (>=1.0)",
        "numpy==1.0 ",
        long.as_str(),
        &long[..200],
        "",
        " ",
        "numpy\t",
        "\tnumpy",
        "numpy\n",
        "numpy\r",
        "num\u{7f}py",
        "numpy\u{85}",
        "numpy\u{a0}",
        "\u{a0}numpy",
        "-e .",
        "--index-url http://evil/simple",
        "pkg @ https://example.com/p.whl",
        "git+https://github.com/x/y",
        "./local-dir",
        "/etc/passwd",
        "numpy rm -rf",
        "numpy==1.0 \\ x",
        ".numpy",
        "_numpy",
        "numpy é",
        "numpy==é",
    ];
    for sample in samples {
        let stated = pattern.is_match(sample) && sample.chars().count() <= 200;
        let spec = EnvironmentSpec {
            name: "env".into(),
            requirements: vec![sample.to_owned()],
            ..EnvironmentSpec::default()
        };
        assert_eq!(stated, spec.validate().is_ok(), "{sample:?}");
    }

    for bad in ["numpy\t", "numpy\nscipy", &"a".repeat(201)] {
        let saved = call(
            &site,
            Method::POST,
            "/api/v1/environments",
            Some(&key),
            Some(json!({"name": "env", "requirements": ["numpy", bad]})),
        )
        .await;
        assert_eq!(
            saved.status,
            StatusCode::BAD_REQUEST,
            "{bad:?}: {}",
            saved.body
        );
        assert_eq!(field(&saved), "requirements[1]", "{bad:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_address_is_stated_as_an_email_of_at_most_254_characters_and_refused_otherwise() {
    let site = site().await;
    let key = key_for(&site, "vision").await;
    let doc = call(&site, Method::GET, "/api/v1/openapi.json", None, None)
        .await
        .json();
    let schemas = &doc["components"]["schemas"];
    for (schema, email) in [
        (
            "ResetRequest",
            &schemas["ResetRequest"]["properties"]["email"],
        ),
        ("InviteForm", &schemas["InviteForm"]["properties"]["email"]),
    ] {
        assert_eq!(email["format"], "email", "{schema}: {email}");
        assert_eq!(email["maxLength"], 254, "{schema}: {email}");
        assert_eq!(
            email["pattern"],
            app::models::MAIL_ADDRESS_PATTERN,
            "{schema}"
        );
    }
    // The pattern with the lengths (254 in all, and `format: email`'s 64
    // for the local part) takes exactly the addresses the server takes.
    let pattern = regex::Regex::new(app::models::MAIL_ADDRESS_PATTERN).unwrap();
    let local64 = format!("{}@example.com", "a".repeat(64));
    let local65 = format!("{}@example.com", "a".repeat(65));
    let label63 = format!("ann@{}.com", "b".repeat(63));
    let label64 = format!("ann@{}.com", "b".repeat(64));
    for sample in [
        "ann@example.com",
        "Ann.Lee+ci@Example.COM",
        "a!#$%&'*+/=?^_`{|}~-@b.c",
        "a@1.2",
        "a@b-c.d",
        local64.as_str(),
        local65.as_str(),
        label63.as_str(),
        label64.as_str(),
        "a@localhost",
        "a..b@c.d",
        ".a@b.c",
        "a.@b.c",
        "a@-b.c",
        "a@b-.c",
        "a@b.c.",
        "a@b_c.d",
        "\"a b\"@c.d",
        "a@[1.2.3.4]",
        "Þ@b.c",
        "a@Þ.c",
        "a b@c.d",
        "a@b@c.d",
        "",
    ] {
        let local = sample.rsplit_once('@').map_or(sample, |(l, _)| l);
        let stated = pattern.is_match(sample) && sample.len() <= 254 && local.len() <= 64;
        assert_eq!(
            stated,
            app::models::validate_mail_address(sample).is_ok(),
            "{sample:?}"
        );
    }

    // 64 characters before the `@` (the most), labels of at most 63 after.
    let address = |last: usize| {
        format!(
            "{}@{}.{}.{}.com",
            "a".repeat(64),
            "b".repeat(63),
            "c".repeat(63),
            "d".repeat(last)
        )
    };
    let long = address(58);
    assert_eq!(long.len(), 255);
    for bad in [
        long.as_str(),
        "not-an-address",
        "ann@localhost",
        "ann @example.com",
        "Þ¢@w\u{87}.\u{8}°o",
    ] {
        for (path, key) in [
            ("/api/v1/password-resets", None),
            ("/api/v1/invitations", Some(key.as_str())),
        ] {
            let body = json!({"account": "vision", "email": bad, "role": "member"});
            let refused = call(&site, Method::POST, path, key, Some(body)).await;
            assert_eq!(
                refused.status,
                StatusCode::BAD_REQUEST,
                "{path} {bad}: {}",
                refused.body
            );
            assert_eq!(field(&refused), "email", "{path} {bad}");
        }
    }
    let fits = address(57);
    assert_eq!(fits.len(), 254);
    let asked = call(
        &site,
        Method::POST,
        "/api/v1/password-resets",
        None,
        Some(json!({"account": "vision", "email": fits})),
    )
    .await;
    assert_eq!(asked.status, StatusCode::ACCEPTED, "{}", asked.body);
}
