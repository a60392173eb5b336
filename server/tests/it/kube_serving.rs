//! Serving on Kubernetes, on the real node of `scripts/kube-test-cluster.sh`
//! (tests named `on_a_real_node`, replicas in containers): an instance
//! becomes a Deployment, a Service, a ConfigMap and, when it autoscales, a
//! HorizontalPodAutoscaler; readiness, scaling and a stop that removes
//! everything are read back from the API; replicas that crash-loop fail it;
//! pods fetch their model version from the console with a token of their
//! own into the node's cache (a second replica downloads nothing), and a
//! console bringing an instance back keeps its token. Skipped without the
//! node.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use app::models::{
    Account, AssetForm, AssetKind, AssetRef, Autoscale, Me, ReplicaResources, Scale, ServingSpec,
    ServingStatus, VersionForm,
};
use app::ports::{Assets, Serving, Slot};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v1::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use kube::api::{Patch, PatchParams};
use kube::Api;
use serde_json::json;
use server::kubernetes::serving::KubeServing;
use server::serving::ServingService;
use sha2::Digest;

struct Setup {
    client: kube::Client,
    serving: ServingService,
    me: Me,
    db: common::TestDb,
    assets: Arc<server::assets::SqlAssets>,
    console: Option<String>,
    /// The image replicas run (the real node's busybox where they run).
    image: String,
}

impl Setup {
    /// What another console process on the same database and cluster runs.
    fn another_console(&self) -> ServingService {
        serving_on(
            &self.client,
            &self.db,
            self.assets.clone(),
            self.console.as_deref(),
        )
    }
}

/// Serving on the test cluster; pods fetch their model from `console` if given.
fn serving_on(
    client: &kube::Client,
    db: &common::TestDb,
    assets: Arc<server::assets::SqlAssets>,
    console: Option<&str>,
) -> ServingService {
    let cluster = common::kubernetes::kube_cluster(client, db, console.map(str::to_owned));
    ServingService::new(
        db.pool.clone(),
        Arc::new(KubeServing::new(&cluster, None)),
        assets,
        cluster.secrets(),
        Duration::from_secs(86_400),
    )
}

/// The real node; its pods do not fetch a model (no console URL) and run
/// its busybox.
async fn on_the_node() -> Option<Setup> {
    let (node, client) = common::node::client().await?;
    Some(set_up_on(client, None, node.shell_image).await)
}

/// The real node; its pods fetch their model from `console` with the
/// PaddlePaddle image's Python.
async fn on_the_node_fetching_from(console: &str) -> Option<Setup> {
    let (_, client) = common::node::client().await?;
    Some(set_up_on(client, Some(console), "paddlepaddle/paddle:3.3.1".into()).await)
}

async fn set_up_on(client: kube::Client, console: Option<&str>, image: String) -> Setup {
    let db = common::sqlite().await;
    let ns = format!("pc-s-{:08x}", getrandom::u32().unwrap());
    let account = common::account(&db.pool, &ns, &ns).await;
    let me = common::user_in(&db.pool, &account).await;
    let objects =
        server::assets::objects::Objects::local(db.dir().join("objects"), 1 << 20).unwrap();
    let assets = Arc::new(server::assets::SqlAssets::new(
        db.pool.clone(),
        objects,
        db.dir().join("cache"),
    ));
    tiny_model(assets.as_ref(), &me, &[("inference.json", b"{}".to_vec())]).await;
    let serving = serving_on(&client, &db, assets.clone(), console);
    Setup {
        client,
        serving,
        me,
        db,
        assets,
        console: console.map(str::to_owned),
        image,
    }
}

/// Model "tiny" of `me`'s account with one ready version holding `files`.
async fn tiny_model(assets: &dyn Assets, me: &Me, files: &[(&str, Vec<u8>)]) {
    model_versions(assets, me, "tiny", &[files.to_vec()]).await;
}

/// Model `name` of `me`'s account with a ready version per entry of
/// `versions`, each holding its files.
async fn model_versions(
    assets: &dyn Assets,
    me: &Me,
    name: &str,
    versions: &[Vec<(&str, Vec<u8>)>],
) -> AssetRef {
    let form = AssetForm {
        name: name.into(),
        description: String::new(),
        tags: String::new(),
    };
    assets.create(me, AssetKind::Model, form).await.unwrap();
    let r = AssetRef {
        kind: AssetKind::Model,
        owner: me.account.name.clone(),
        name: name.into(),
    };
    for (i, files) in versions.iter().enumerate() {
        let v = i as u32 + 1;
        let version = VersionForm::default();
        assets.create_version(me, &r, version).await.unwrap();
        for (path, bytes) in files {
            let bytes = bytes::Bytes::from(bytes.clone());
            let body: app::ports::ByteStream =
                Box::pin(futures_util::stream::once(async move { Ok(bytes) }));
            assets
                .put_file(me, &r, Slot::Version(v), path, body)
                .await
                .unwrap();
        }
        assets.finish_version(me, &r, v).await.unwrap();
    }
    r
}

/// Replicas of `image` running `command` in `sh -c`, small (the node has
/// two cores).
fn spec(image: &str, name: &str, command: &str, replicas: u32) -> ServingSpec {
    ServingSpec {
        name: name.into(),
        model: "tiny".into(),
        version: None,
        file: String::new(),
        script: String::new(),
        command: vec!["sh".into(), "-c".into(), command.into()],
        image: image.into(),
        env: vec![],
        replicas,
        resources: ReplicaResources {
            cpu: "100m".into(),
            memory: "64Mi".into(),
            gpu: 0,
        },
        autoscale: None,
        environment: None,
        environment_use: None,
        canary: None,
        shadow: None,
        secrets: vec![],
    }
}

async fn until<F, Fut>(what: &str, secs: u64, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    while !f().await {
        assert!(
            start.elapsed() < Duration::from_secs(secs),
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_becomes_a_deployment_and_a_service_scales_and_stopping_removes_them_on_a_real_node(
) {
    let Some(s) = on_the_node().await else { return };
    let ns = s.me.account.namespace.clone();
    let account = s.me.account.clone();
    let launched = s
        .serving
        .launch(&s.me, spec(&s.image, "tiny-api", "sleep 300", 2))
        .await
        .unwrap();
    assert_eq!(launched.status, ServingStatus::Pending);
    assert_eq!(launched.cluster, "test-kube");

    let deployments: Api<Deployment> = Api::namespaced(s.client.clone(), &ns);
    let d = deployments.get("tiny-api").await.unwrap();
    let dspec = d.spec.clone().unwrap();
    assert_eq!(dspec.replicas, Some(2));
    let container = &dspec.template.spec.as_ref().unwrap().containers[0];
    assert_eq!(container.image.as_deref(), Some(s.image.as_str()));
    let requests = container
        .resources
        .as_ref()
        .unwrap()
        .requests
        .as_ref()
        .unwrap();
    assert_eq!(requests["cpu"].0, "100m");
    let env: Vec<(String, String)> = container
        .env
        .as_ref()
        .unwrap()
        .iter()
        .map(|e| (e.name.clone(), e.value.clone().unwrap_or_default()))
        .collect();
    assert!(
        env.contains(&("PADDLECLOUD_MODEL".into(), format!("{ns}/tiny"))),
        "{env:?}"
    );
    assert!(env.contains(&("PADDLECLOUD_MODEL_VERSION".into(), "1".into())));
    let service = Api::<Service>::namespaced(s.client.clone(), &ns)
        .get("tiny-api")
        .await
        .unwrap();
    let port = &service.spec.unwrap().ports.unwrap()[0];
    assert_eq!(port.name.as_deref(), Some("http"));
    let config = Api::<ConfigMap>::namespaced(s.client.clone(), &ns)
        .get("tiny-api-serving")
        .await
        .unwrap();
    assert!(config.data.unwrap()["serving.py"].contains("paddle.inference"));

    // The kubelet runs the containers; the Deployment's controller counts
    // them ready (a command of one's own has no readiness probe).
    until("2 ready replicas", 60, || async {
        let i = s.serving.get(&account, "tiny-api").await.unwrap();
        i.status == ServingStatus::Ready && i.ready == 2
    })
    .await;

    s.serving
        .scale(
            &account,
            "tiny-api",
            Scale {
                replicas: Some(3),
                autoscale: None,
            },
        )
        .await
        .unwrap();
    until("3 ready replicas", 60, || async {
        let i = s.serving.get(&account, "tiny-api").await.unwrap();
        i.ready == 3 && i.spec.replicas == 3
    })
    .await;
    assert_eq!(
        deployments
            .get("tiny-api")
            .await
            .unwrap()
            .spec
            .unwrap()
            .replicas,
        Some(3)
    );

    let bounds = Autoscale {
        min: 1,
        max: 4,
        cpu_percent: 60,
    };
    s.serving
        .scale(
            &account,
            "tiny-api",
            Scale {
                replicas: None,
                autoscale: Some(bounds),
            },
        )
        .await
        .unwrap();
    let hpa = Api::<HorizontalPodAutoscaler>::namespaced(s.client.clone(), &ns)
        .get("tiny-api")
        .await
        .unwrap();
    let hspec = hpa.spec.unwrap();
    assert_eq!(
        (
            hspec.min_replicas,
            hspec.max_replicas,
            hspec.target_cpu_utilization_percentage
        ),
        (Some(1), 4, Some(60))
    );
    assert_eq!(hspec.scale_target_ref.name, "tiny-api");

    let stopped = s.serving.stop(&account, "tiny-api").await.unwrap();
    assert_eq!(stopped.status, ServingStatus::Stopped);
    assert!(deployments.get_opt("tiny-api").await.unwrap().is_none());
    until("the owned objects to go", 30, || async {
        Api::<Service>::namespaced(s.client.clone(), &ns)
            .get_opt("tiny-api")
            .await
            .unwrap()
            .is_none()
            && Api::<HorizontalPodAutoscaler>::namespaced(s.client.clone(), &ns)
                .get_opt("tiny-api")
                .await
                .unwrap()
                .is_none()
    })
    .await;
    // The record stays.
    let list = s.serving.list(&account).await.unwrap();
    assert_eq!(list.instances.len(), 1);
    assert_eq!(list.instances[0].status, ServingStatus::Stopped);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_that_keep_failing_fail_the_instance_with_their_message_on_a_real_node() {
    let Some(s) = on_the_node().await else { return };
    let account = s.me.account.clone();
    let script = "echo 'paddlecloud-serving: cannot load the model: inference.pdiparams is corrupt' >&2; exit 1";
    s.serving
        .launch(&s.me, spec(&s.image, "broken", script, 1))
        .await
        .unwrap();
    // The kubelet restarts the container with a growing back-off (10 s,
    // 20 s): its third restart, about 35 s on, fails the instance.
    until("the instance to fail", 120, || async {
        s.serving.get(&account, "broken").await.unwrap().status == ServingStatus::Failed
    })
    .await;
    let i = s.serving.get(&account, "broken").await.unwrap();
    assert!(
        i.message
            .contains("cannot load the model: inference.pdiparams is corrupt"),
        "{}",
        i.message
    );
    s.serving.delete(&account, "broken").await.unwrap();
}

/// `path` of the instance through the console's `/serve/…` endpoint, once
/// the Service has Endpoints (the controller writes them shortly after Ready).
async fn until_served(
    http: &reqwest::Client,
    console: &str,
    key: &str,
    account: &str,
    path: &str,
) -> bytes::Bytes {
    let start = Instant::now();
    loop {
        // The instance's root is `/serve/ACCOUNT/NAME`, without a slash.
        let url = format!("{console}/serve/{account}/tiny-api/{path}");
        let answer = http
            .get(url.trim_end_matches('/'))
            .bearer_auth(key)
            .send()
            .await
            .unwrap();
        let status = answer.status().as_u16();
        let body = answer.bytes().await.unwrap();
        if status == 200 {
            return body;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the endpoint kept answering {status}: {}",
            String::from_utf8_lossy(&body)
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// A new account on `site` (named `prefix` and a random suffix), an access
/// key of its owner and the owner, with the namespace the console gave the
/// account (read back, not assumed).
async fn owner_on(site: &common::site::Site, prefix: &str) -> (String, String, Me) {
    let account = format!("{prefix}{:08x}", getrandom::u32().unwrap());
    let key = common::rest::key_for(site, &account).await;
    let me = site.owner(&account).await;
    let namespace = site.namespace_of(&account).await;
    let me = Me {
        account: Account {
            namespace,
            ..me.account
        },
        ..me
    };
    (account, key, me)
}

/// A console on the node's address (where pods' init containers reach it)
/// running on the node, with its URL.
async fn console_on_the_node() -> Option<(kube::Client, common::site::Site, String)> {
    let (node, client) = common::node::client().await?;
    let (site, console) =
        common::site::on_socket_at(&node.ip, |config, _, _| server::console::Config {
            cluster: common::kubernetes::kube_choice(&client, None),
            ..config
        })
        .await;
    Some((client, site, console))
}

/// The init container's log of each pod of `serving` that has one.
async fn fetch_logs(client: &kube::Client, ns: &str, serving: &str) -> Vec<String> {
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(client.clone(), ns);
    let listed = pods
        .list(
            &kube::api::ListParams::default().labels(&format!("paddlecloud.org/serving={serving}")),
        )
        .await
        .unwrap();
    let mut logs = vec![];
    for pod in listed.items {
        let name = pod.metadata.name.unwrap();
        let params = kube::api::LogParams {
            container: Some(server::kubernetes::inputs::FETCHER.into()),
            ..Default::default()
        };
        if let Ok(text) = pods.logs(&name, &params).await {
            logs.push(text);
        }
    }
    logs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_fetch_the_model_version_from_the_console_with_a_token_that_reads_nothing_else_on_a_real_node(
) {
    // The model goes into the node's cache of inputs.
    let Some((client, site, console)) = console_on_the_node().await else {
        return;
    };
    let (account, key, me) = owner_on(&site, "kf").await;
    let ns = me.account.namespace.clone();
    let weights: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    tiny_model(
        site.services.assets.as_ref(),
        &me,
        &[
            ("inference.json", b"{\"tiny\": true}".to_vec()),
            ("params/weights.bin", weights.clone()),
        ],
    )
    .await;

    // The replica starts only once its model is there, and reads it: it
    // serves the model's folder (version 1 of it) over HTTP on its port.
    // It also imports the SDK, as a serving script may: a replica without
    // it fails the instance.
    let command = "python3 -c 'import paddlecloud' || exit 3; \
                   cat \"$PADDLECLOUD_MODEL_DIR/inference.json\"; echo; \
                   exec python3 -m http.server \"$PORT\" --directory \"$(dirname \"$PADDLECLOUD_MODEL_DIR\")\"";
    site.services
        .serving
        .launch(
            &me,
            spec("paddlepaddle/paddle:3.3.1", "tiny-api", command, 1),
        )
        .await
        .unwrap();
    let instance = || async {
        let serving = &site.services.serving;
        serving.get(&me.account, "tiny-api").await.unwrap()
    };
    until("a ready replica", 90, || async {
        let i = instance().await;
        assert_ne!(i.status, ServingStatus::Failed, "{}", i.message);
        i.status == ServingStatus::Ready && i.ready == 1
    })
    .await;
    // What the pod holds, through the console's endpoint (the API server's
    // service proxy to the pod), each request counted.
    let http = server::backend::serving::http_client(Duration::from_secs(10)).unwrap();
    let served = until_served(&http, &console, &key, &account, "1/inference.json").await;
    assert_eq!(&served[..], b"{\"tiny\": true}");
    let served = until_served(&http, &console, &key, &account, "1/params/weights.bin").await;
    assert!(served[..] == weights[..], "the weights differ");
    // The pod's own folder of the model holds the version alone.
    let listing = until_served(&http, &console, &key, &account, "").await;
    let listing = String::from_utf8_lossy(&listing);
    let entries: Vec<&str> = listing
        .split("<a href=\"")
        .skip(1)
        .filter_map(|e| e.split('"').next())
        .collect();
    assert_eq!(entries, ["1/"], "{listing}");
    site.serving.flush_traffic().await.unwrap();
    let recent = instance().await.recent.expect("the last minute's traffic");
    assert!(recent.requests >= 3, "{recent:?}");
    let logs = fetch_logs(&client, &ns, "tiny-api").await.join("\n");
    assert!(logs.contains("version 1: fetched v1, 2 file(s)"), "{logs}");

    // A second replica on the node finds the version in the node's cache
    // and downloads nothing.
    let two = Scale {
        replicas: Some(2),
        autoscale: None,
    };
    let serving = &site.services.serving;
    serving.scale(&me.account, "tiny-api", two).await.unwrap();
    until("two ready replicas", 90, || async {
        let i = instance().await;
        assert_ne!(i.status, ServingStatus::Failed, "{}", i.message);
        i.ready == 2
    })
    .await;
    let logs = fetch_logs(&client, &ns, "tiny-api").await;
    assert_eq!(logs.len(), 2, "{logs:?}");
    let cached = logs
        .iter()
        .filter(|l| l.contains("version 1: v1 in the node's cache"))
        .count();
    assert_eq!(cached, 1, "{logs:?}");

    // The pods' token: the one model, read only.
    let secret = Api::<k8s_openapi::api::core::v1::Secret>::namespaced(client.clone(), &ns)
        .get("tiny-api-serving")
        .await
        .unwrap();
    let token = String::from_utf8(secret.data.unwrap()["token"].0.clone()).unwrap();
    assert!(token.starts_with("pcv_"));
    let get = |path: String| {
        let http = http.clone();
        let token = token.clone();
        let console = console.clone();
        async move {
            http.get(format!("{console}{path}"))
                .bearer_auth(token)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    let model = format!("/api/v1/models/{account}/tiny");
    assert_eq!(
        get(format!("{model}/files/inference.json?version=1")).await,
        200
    );
    assert_eq!(get("/api/v1/jobs".into()).await, 403);
    assert_eq!(get("/api/v1/datasets".into()).await, 403);
    assert_eq!(get(format!("{model}/shares")).await, 403);
    let put = http
        .put(format!("{console}{model}/files/evil.txt?version=1"))
        .bearer_auth(&token)
        .body("x")
        .send()
        .await
        .unwrap();
    assert_eq!(put.status().as_u16(), 403);
    // An access key of the account still works as before.
    let listed = http
        .get(format!("{console}/api/v1/serving"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(listed.status().as_u16(), 200);

    // Stopped: the token reads nothing any more.
    site.services
        .serving
        .stop(&me.account, "tiny-api")
        .await
        .unwrap();
    assert_eq!(
        get(format!("{model}/files/inference.json?version=1")).await,
        401
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_console_bringing_an_instance_back_keeps_its_token_unless_its_secret_lost_it_on_a_real_node(
) {
    // Nothing answers there (the pod's own loopback): the replicas keep
    // retrying their fetch, and the instance stays active for the console
    // to bring back.
    let Some(s) = on_the_node_fetching_from("http://127.0.0.1:9").await else {
        return;
    };
    let secrets: Api<Secret> = Api::namespaced(s.client.clone(), &s.me.account.namespace);
    let held = || async {
        let secret = secrets.get("tiny-api-serving").await.unwrap();
        String::from_utf8(secret.data.unwrap()["token"].0.clone()).unwrap()
    };
    let recorded = || async {
        let hash: String =
            sqlx::query_scalar("SELECT token_hash FROM serving WHERE name = 'tiny-api'")
                .fetch_one(&s.db.pool)
                .await
                .unwrap();
        hash
    };
    let hash = |token: &str| hex::encode(sha2::Sha256::digest(token.as_bytes()));
    s.serving
        .launch(&s.me, spec(&s.image, "tiny-api", "sleep 300", 1))
        .await
        .unwrap();
    let first = held().await;
    assert!(first.starts_with("pcv_"), "{first}");
    assert_eq!(recorded().await, hash(&first));

    // Two consoles bringing it back at once must not hand out two tokens:
    // a console that finds the replicas' token still on record keeps it.
    s.another_console().recover().await.unwrap();
    assert_eq!(
        held().await,
        first,
        "bringing it back replaced the replicas' token"
    );
    assert_eq!(recorded().await, hash(&first));

    // A Secret whose token is not the one on record gets a fresh one.
    let stale = json!({ "stringData": { "token": "pcv_stale" } });
    secrets
        .patch(
            "tiny-api-serving",
            &PatchParams::default(),
            &Patch::Merge(&stale),
        )
        .await
        .unwrap();
    s.another_console().recover().await.unwrap();
    let fresh = held().await;
    assert!(fresh != first && fresh != "pcv_stale", "{fresh}");
    assert_eq!(recorded().await, hash(&fresh));
    s.serving.stop(&s.me.account, "tiny-api").await.unwrap();
}

/// A serving instance in an environment runs in the environment's image
/// with its requirements installed by the init step (from the console's
/// package index, `--kube-pip-index-url`) and its programs on `PATH`, after
/// the model is fetched; the replica imports the SDK beside them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_in_an_environment_has_its_requirements_and_programs_beside_its_model_on_a_real_node(
) {
    let Some((node, client)) = common::node::client().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let index = common::node::WheelIndex::start(dir.path(), &node.ip);
    let (site, console) =
        common::site::on_socket_at(&node.ip, |config, _, _| server::console::Config {
            cluster: common::kubernetes::kube_choice_installing_from(&client, &index.url),
            ..config
        })
        .await;
    let (account, key, me) = owner_on(&site, "ke").await;
    let ns = me.account.namespace.clone();
    tiny_model(
        site.services.assets.as_ref(),
        &me,
        &[("inference.json", b"{\"tiny\": true}".to_vec())],
    )
    .await;
    let to = common::rest::Endpoint::Here(&site);
    let environment = json!({
        "name": "demo", "requirements": ["pcdemo==1.0"], "image": "python:3.11-slim",
    });
    let made = to
        .call(
            http::Method::POST,
            "/api/v1/environments",
            Some(&key),
            Some(environment),
        )
        .await;
    assert!(made.status.is_success(), "{}", made.body);
    let command = "pcdemo-hello || exit 3; \
                   python3 -c 'import paddlecloud, pcdemo; print(\"module=\" + pcdemo.__file__)' || exit 4; \
                   exec python3 -m http.server \"$PORT\" --directory \"$PADDLECLOUD_MODEL_DIR\"";
    let launched = to
        .call(
            http::Method::POST,
            "/api/v1/serving",
            Some(&key),
            Some(json!({
                "name": "tiny-api", "model": "tiny", "replicas": 1, "environment": "demo",
                "command": ["sh", "-c", command],
                "resources": {"cpu": "200m", "memory": "256Mi"},
            })),
        )
        .await;
    assert_eq!(launched.status.as_u16(), 201, "{}", launched.body);
    until("a ready replica", 180, || async {
        let i = site
            .services
            .serving
            .get(&me.account, "tiny-api")
            .await
            .unwrap();
        assert_ne!(i.status, ServingStatus::Failed, "{}", i.message);
        i.status == ServingStatus::Ready && i.ready == 1
    })
    .await;
    let http = server::backend::serving::http_client(Duration::from_secs(10)).unwrap();
    let served = until_served(&http, &console, &key, &account, "inference.json").await;
    assert_eq!(&served[..], b"{\"tiny\": true}");
    // What the replica printed before it served.
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(client.clone(), &ns);
    let listed = pods
        .list(&kube::api::ListParams::default().labels("paddlecloud.org/serving=tiny-api"))
        .await
        .unwrap();
    let pod = listed.items[0].metadata.name.clone().unwrap();
    let params = kube::api::LogParams {
        container: Some("serving".into()),
        ..Default::default()
    };
    let printed = pods.logs(&pod, &params).await.unwrap();
    for line in [
        "hello from pcdemo",
        "module=/opt/paddlecloud/env/pcdemo/__init__.py",
    ] {
        assert!(printed.contains(line), "no “{line}” in:\n{printed}");
    }
    site.services
        .serving
        .stop(&me.account, "tiny-api")
        .await
        .unwrap();
}

/// Answers every call with the version whose files it loaded (the default
/// predict server runs it: readiness on `/healthz` once loaded).
const VERSION_SCRIPT: &str = "\
import json, os

def load(model_dir):
    with open(os.path.join(model_dir, 'answer.json')) as f:
        return json.load(f)

def predict(state, inputs):
    return {'version': state['v']}
";

/// Model "echo" of `me`'s account with versions 1..=`n`, each holding its
/// number; the last of three is broken (its script's load() fails).
async fn echo_versions(assets: &dyn Assets, me: &Me, n: u32) -> AssetRef {
    let versions: Vec<Vec<(&str, Vec<u8>)>> = (1..=n)
        .map(|v| {
            let text = if n == 3 && v == 3 {
                "broken".to_owned()
            } else {
                format!("{{\"v\": {v}}}")
            };
            vec![("answer.json", text.into_bytes())]
        })
        .collect();
    model_versions(assets, me, "echo", &versions).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_following_an_alias_rolls_without_losing_a_call_and_a_canary_comes_and_goes_on_a_real_node(
) {
    let Some((client, site, console)) = console_on_the_node().await else {
        return;
    };
    let (account, key, me) = owner_on(&site, "rel").await;
    let ns = me.account.namespace.clone();
    let assets = site.services.assets.clone();
    let r = echo_versions(assets.as_ref(), &me, 3).await;
    let alias = |version| app::models::AliasForm {
        version,
        protected: None,
    };
    assets
        .set_alias(&me, &r, "production", alias(1))
        .await
        .unwrap();
    let mut launched = spec("paddlepaddle/paddle:3.3.1", "api", "", 2);
    launched.command = vec![];
    launched.model = "echo@production".into();
    launched.script = VERSION_SCRIPT.into();
    launched.resources.memory = "256Mi".into();
    site.services.serving.launch(&me, launched).await.unwrap();
    let serving = site.services.serving.clone();
    let ready = |version: u32| {
        let (serving, account) = (serving.clone(), me.account.clone());
        move || {
            let (serving, account) = (serving.clone(), account.clone());
            async move {
                let i = serving.get(&account, "api").await.unwrap();
                assert_ne!(i.status, ServingStatus::Failed, "{}", i.message);
                i.version == version && i.ready == 2 && i.status == ServingStatus::Ready
            }
        }
    };
    until("two replicas of v1", 240, ready(1)).await;

    let http = reqwest::Client::new();
    let url = format!("{console}/serve/{account}/api/predict");
    let call = || {
        let (http, url, key) = (http.clone(), url.clone(), key.clone());
        async move {
            let answer = http
                .post(&url)
                .bearer_auth(&key)
                .header("content-type", "application/json")
                .body(json!({"inputs": {"x": [[1.0]]}}).to_string())
                .send()
                .await
                .unwrap();
            let status = answer.status().as_u16();
            let bytes = answer.bytes().await.unwrap_or_default();
            let body: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
            (status == 200)
                .then(|| body["outputs"]["version"].as_u64())
                .flatten()
                .ok_or(format!("{status} {body}"))
        }
    };
    // The Service has endpoints shortly after Ready.
    until("the endpoint answering", 60, || async {
        call().await.is_ok()
    })
    .await;

    // Two clients call without pause while the alias moves and the
    // Deployment rolls its two replicas.
    let done = std::sync::atomic::AtomicBool::new(false);
    let client_loop = || async {
        let mut seen = vec![];
        while !done.load(std::sync::atomic::Ordering::Relaxed) {
            seen.push(call().await);
        }
        seen
    };
    let mover = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        assets
            .set_alias(&me, &r, "production", alias(2))
            .await
            .unwrap();
        until("two replicas of v2", 300, ready(2)).await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        done.store(true, std::sync::atomic::Ordering::Relaxed);
    };
    let (a, b, ()) = tokio::join!(client_loop(), client_loop(), mover);
    let calls: Vec<_> = a.into_iter().chain(b).collect();
    let lost: Vec<_> = calls.iter().filter_map(|c| c.as_ref().err()).collect();
    assert!(
        lost.is_empty(),
        "{} of {} calls lost: {:?}",
        lost.len(),
        calls.len(),
        lost.first()
    );
    assert!(
        calls.contains(&Ok(1)) && calls.contains(&Ok(2)),
        "both versions answered"
    );
    println!(
        "{} calls during the roll on the node, none lost",
        calls.len()
    );
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let d = deployments.get("api").await.unwrap();
    let strategy = d.spec.unwrap().strategy.unwrap();
    let rolling = strategy.rolling_update.unwrap();
    assert_eq!(
        rolling.max_unavailable,
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(0))
    );

    // A canary of v1 at half the calls is its own Deployment and Service,
    // and rolled back they go.
    let canary = app::models::Release::Canary(app::models::Canary {
        version: 1,
        percent: 50,
        replicas: 1,
    });
    serving.release(&me, "api", canary).await.unwrap();
    let canaries = deployments.get("api-canary").await.unwrap();
    let labels = canaries.metadata.labels.unwrap();
    assert_eq!(labels["paddlecloud.org/serving-track"], "canary");
    until("the canary answering", 240, || async {
        call().await == Ok(1)
    })
    .await;
    serving
        .release(&me, "api", app::models::Release::Rollback)
        .await
        .unwrap();
    until("the canary's Deployment gone", 60, || async {
        deployments.get_opt("api-canary").await.unwrap().is_none()
    })
    .await;
    let services: Api<Service> = Api::namespaced(client.clone(), &ns);
    assert!(services.get_opt("api-canary").await.unwrap().is_none());
    for _ in 0..10 {
        assert_eq!(call().await, Ok(2));
    }

    // A canary whose version does not load is said in the message, and its
    // share of the calls is answered by the main version meanwhile.
    let broken = app::models::Release::Canary(app::models::Canary {
        version: 3,
        percent: 50,
        replicas: 1,
    });
    serving.release(&me, "api", broken).await.unwrap();
    let said = || {
        let (serving, account) = (serving.clone(), me.account.clone());
        async move {
            let i = serving.get(&account, "api").await.unwrap();
            i.message.starts_with("The canary failed") && i.status == ServingStatus::Ready
        }
    };
    until("the canary's failure said", 300, said).await;
    for _ in 0..10 {
        assert_eq!(call().await, Ok(2));
    }
    serving.delete(&me.account, "api").await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instances_pods_read_the_accounts_secrets_from_a_secret_its_deployment_owns_on_a_real_node(
) {
    let Some(s) = on_the_node().await else { return };
    let ns = s.me.account.namespace.clone();
    let account = s.me.account.clone();
    // The vault the test's cluster reads (the same key), as an owner sets it.
    let vault = server::secrets::SqlSecrets::new(
        s.db.pool.clone(),
        std::sync::Arc::new(server::secrets::seal::Sealer::from_bytes(&[1; 32])),
    );
    let owner = app::ports::Principal::new(
        app::models::Me {
            role: app::models::Role::Owner,
            ..s.me.clone()
        },
        app::ports::Credential::Session(0),
    );
    let token = format!("tok-{:016x}", getrandom::u64().unwrap());
    let file = format!("cred-{:016x}", getrandom::u64().unwrap());
    for (name, value) in [("s-token", &token), ("s-cred", &file)] {
        use app::ports::Secrets;
        let form = app::models::SecretForm {
            name: name.into(),
            value: Some(value.clone()),
            ..Default::default()
        };
        vault.set_secret(&owner, form).await.unwrap();
    }
    // Ready only if both arrived as they are: the command holds their
    // hashes, never the values.
    let sha = |v: &str| hex::encode(sha2::Sha256::digest(v.as_bytes()));
    let command = format!(
        "[ \"$(printf %s \"$S_TOKEN\" | sha256sum | cut -c1-64)\" = {} ] && \
         [ \"$(sha256sum < \"$PADDLECLOUD_SECRETS_DIR/c.txt\" | cut -c1-64)\" = {} ] && \
         exec sleep 300; echo the secrets did not arrive; exit 3",
        sha(&token),
        sha(&file)
    );
    let mut with_secrets = spec(&s.image, "keeper", &command, 1);
    with_secrets.secrets =
        app::models::parse_secret_uses("S_TOKEN=s-token\nfile:c.txt=s-cred").unwrap();
    s.serving.launch(&s.me, with_secrets).await.unwrap();
    until("a ready replica", 90, || async {
        let i = s.serving.get(&account, "keeper").await.unwrap();
        assert_ne!(i.status, ServingStatus::Failed, "{}", i.message);
        i.status == ServingStatus::Ready && i.ready == 1
    })
    .await;
    let deployments: Api<Deployment> = Api::namespaced(s.client.clone(), &ns);
    let text = serde_json::to_string(&deployments.get("keeper").await.unwrap()).unwrap();
    assert!(!text.contains(&token) && !text.contains(&file), "{text}");
    let held = Api::<Secret>::namespaced(s.client.clone(), &ns)
        .get("keeper-secrets")
        .await
        .unwrap();
    assert_eq!(held.metadata.owner_references.unwrap()[0].name, "keeper");
    s.serving.stop(&account, "keeper").await.unwrap();
    until("its Secret to go with it", 60, || async {
        Api::<Secret>::namespaced(s.client.clone(), &ns)
            .get_opt("keeper-secrets")
            .await
            .unwrap()
            .is_none()
    })
    .await;
}
