//! Secrets on the real node: a job's pod gets a secret as a variable and as
//! a file from a Kubernetes Secret the job owns; the pod's spec holds only
//! the Secret's name and keys, the job's log shows the value as `***`, and
//! the Secret goes with the job.

use std::time::Duration;

use http::{Method, StatusCode};
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::api::{Api, ListParams};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::common::rest::Endpoint;
use crate::kube_preemption::NodeSite;
use crate::real_node::wait_for;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobs_pods_get_its_secrets_from_a_secret_it_owns_on_a_real_node() {
    let Some(NodeSite {
        node,
        client,
        site,
        key,
        namespace,
    }) = NodeSite::start("sec", None).await
    else {
        return;
    };
    let to = Endpoint::Here(&site);
    let value = format!("s3cr3t-{:016x}", getrandom::u64().unwrap());
    let file = format!("{{\"k\": \"{:016x}\"}}", getrandom::u64().unwrap());
    for (name, v) in [("s3-key", &value), ("gcp", &file)] {
        let set = to
            .call(
                Method::PUT,
                &format!("/api/v1/secrets/{name}"),
                Some(&key),
                Some(json!({ "value": v })),
            )
            .await;
        assert_eq!(set.status, StatusCode::OK, "{}", set.body);
    }
    let script = "echo \"env $S3_KEY\"; printf %s \"$S3_KEY\" | sha256sum; \
                  sha256sum < \"$PADDLECLOUD_SECRETS_DIR/gcp.json\"; \
                  echo \"file $(cat \"$PADDLECLOUD_SECRETS_DIR/gcp.json\")\"; sleep 3";
    let made = to
        .call(
            Method::POST,
            "/api/v1/jobs",
            Some(&key),
            Some(json!({
                "name": "uses-secrets", "image": node.shell_image,
                "command": ["sh", "-c", script],
                "num_trainers": 1, "trainer": {"cpu": "100m", "memory": "32Mi"},
                "secrets": [
                    {"secret": "s3-key", "env": "S3_KEY"},
                    {"secret": "gcp", "file": "gcp.json"},
                ],
            })),
        )
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    let limit = Duration::from_secs(90);
    wait_for(&to, &key, "uses-secrets", "running", limit).await;

    // The pod refers to the Secret; no value is in its spec.
    let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    let lp = ListParams::default().labels("paddlecloud.org/job=uses-secrets");
    let pod = pods.list(&lp).await.unwrap().items.remove(0);
    let spec = serde_json::to_string(&pod.spec).unwrap();
    assert!(!spec.contains(&value) && !spec.contains(&file), "{spec}");
    assert!(spec.contains("uses-secrets-secrets"), "{spec}");
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &namespace);
    let held = secrets.get("uses-secrets-secrets").await.unwrap();
    assert_eq!(
        held.metadata.owner_references.unwrap()[0].name,
        "uses-secrets",
        "owned by the job's parent"
    );

    wait_for(&to, &key, "uses-secrets", "succeeded", limit).await;
    let log = to
        .call(
            Method::GET,
            "/api/v1/jobs/uses-secrets/pods/trainer-0/log",
            Some(&key),
            None,
        )
        .await
        .body;
    let sha = |s: &str| hex::encode(Sha256::digest(s.as_bytes()));
    assert!(log.contains(&sha(&value)), "the variable arrived: {log}");
    assert!(log.contains(&sha(&file)), "the file arrived: {log}");
    assert!(log.contains("env ***"), "{log}");
    assert!(log.contains("file ***"), "{log}");
    assert!(!log.contains(&value) && !log.contains(&file), "{log}");
    for path in [
        "/api/v1/jobs/uses-secrets",
        "/api/v1/jobs/uses-secrets/detail",
    ] {
        let body = to.call(Method::GET, path, Some(&key), None).await.body;
        assert!(!body.contains(&value), "{path}: {body}");
    }

    // Deleting the job takes its Secret with it.
    to.call(
        Method::DELETE,
        "/api/v1/jobs/uses-secrets",
        Some(&key),
        None,
    )
    .await;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while secrets
        .get_opt("uses-secrets-secrets")
        .await
        .unwrap()
        .is_some()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the job's Secret outlived it"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
