//! Serving on Kubernetes against the real API server of
//! `scripts/kube-test-cluster.sh` (controllers and scheduler included): an
//! instance becomes a Deployment, a Service, a ConfigMap and, when it
//! autoscales, a HorizontalPodAutoscaler; the test kubelet runs the pods (as
//! local processes: no image, so the test gives the command); readiness,
//! scaling and a stop that removes everything are read back from the API.
//! Skipped without the test cluster.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use app::models::{
    Account, AssetForm, AssetKind, AssetRef, Autoscale, Me, Resources, Scale, ServingSpec,
    ServingStatus, VersionForm,
};
use app::ports::{Assets, Serving, Slot};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v1::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::Api;
use server::jobs::JobStore;
use server::kubernetes::serving::KubeServing;
use server::kubernetes::KubeCluster;
use server::serving::ServingService;

struct Setup {
    client: kube::Client,
    serving: ServingService,
    me: Me,
    _db: common::TestDb,
    _kubelet: common::kubelet::TestKubelet,
}

async fn set_up() -> Option<Setup> {
    let client = common::kubelet::test_client().await?;
    let db = common::sqlite().await;
    // One node name for the whole binary: see common/kubelet.rs.
    let kubelet =
        common::kubelet::TestKubelet::start(client.clone(), "serving", &db.dir().join("kubelet"))
            .await;
    let cluster = KubeCluster::start(
        client.clone(),
        JobStore::new(db.pool.clone()),
        db.dir(),
        Duration::from_secs(1),
        "test-kube".into(),
    );
    let ns = format!("pc-s-{:08x}", getrandom::u32().unwrap());
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO accounts (name, namespace, created_at) VALUES ($1, $2, 0) RETURNING id",
    )
    .bind(&ns)
    .bind(&ns)
    .fetch_one(&db.pool)
    .await
    .unwrap();
    let account = Account {
        id,
        name: ns.clone(),
        namespace: ns.clone(),
        created_at: 0,
    };
    let me = common::user_in(&db.pool, &account).await;
    let objects =
        server::assets::objects::Objects::local(db.dir().join("objects"), 1 << 20).unwrap();
    let assets = Arc::new(server::assets::SqlAssets::new(
        db.pool.clone(),
        objects,
        db.dir().join("cache"),
    ));
    // A model with one ready version.
    let form = AssetForm {
        name: "tiny".into(),
        description: String::new(),
        tags: String::new(),
    };
    assets.create(&me, AssetKind::Model, form).await.unwrap();
    let r = AssetRef {
        kind: AssetKind::Model,
        owner: ns.clone(),
        name: "tiny".into(),
    };
    assets
        .create_version(
            &me,
            &r,
            VersionForm {
                description: String::new(),
                tags: String::new(),
                job: None,
            },
        )
        .await
        .unwrap();
    let body: app::ports::ByteStream = Box::pin(futures_util::stream::once(async {
        Ok(bytes::Bytes::from_static(b"{}"))
    }));
    assets
        .put_file(&me, &r, Slot::Version(1), "inference.json", body)
        .await
        .unwrap();
    assets.finish_version(&me, &r, 1).await.unwrap();
    let serving = ServingService::new(
        db.pool.clone(),
        Arc::new(KubeServing::new(&cluster)),
        assets,
        Duration::from_secs(86_400),
    );
    Some(Setup {
        client,
        serving,
        me,
        _db: db,
        _kubelet: kubelet,
    })
}

fn spec(name: &str, command: &str, replicas: u32) -> ServingSpec {
    ServingSpec {
        name: name.into(),
        model: "tiny".into(),
        version: None,
        file: String::new(),
        script: String::new(),
        command: vec!["sh".into(), "-c".into(), command.into()],
        image: "example.com/serving:1".into(),
        env: vec![],
        replicas,
        resources: Resources {
            cpu: "250m".into(),
            memory: "128Mi".into(),
            gpu: 0,
        },
        autoscale: None,
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
async fn an_instance_becomes_a_deployment_and_a_service_scales_and_stopping_removes_them() {
    let Some(s) = set_up().await else { return };
    let ns = s.me.account.namespace.clone();
    let account = s.me.account.clone();
    let launched = s
        .serving
        .launch(&s.me, spec("tiny-api", "sleep 300", 2))
        .await
        .unwrap();
    assert_eq!(launched.status, ServingStatus::Pending);
    assert_eq!(launched.cluster, "test-kube");

    let deployments: Api<Deployment> = Api::namespaced(s.client.clone(), &ns);
    let d = deployments.get("tiny-api").await.unwrap();
    let dspec = d.spec.clone().unwrap();
    assert_eq!(dspec.replicas, Some(2));
    let container = &dspec.template.spec.as_ref().unwrap().containers[0];
    assert_eq!(container.image.as_deref(), Some("example.com/serving:1"));
    let requests = container
        .resources
        .as_ref()
        .unwrap()
        .requests
        .as_ref()
        .unwrap();
    assert_eq!(requests["cpu"].0, "250m");
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

    // The kubelet runs the pods; the Deployment's controller counts them ready.
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
async fn replicas_that_keep_failing_fail_the_instance_with_their_message() {
    let Some(s) = set_up().await else { return };
    let account = s.me.account.clone();
    let script = "echo 'paddlecloud-serving: cannot load the model: inference.pdiparams is corrupt' >&2; exit 1";
    s.serving
        .launch(&s.me, spec("broken", script, 1))
        .await
        .unwrap();
    until("the instance to fail", 90, || async {
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
