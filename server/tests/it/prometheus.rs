//! Resource usage from a real Prometheus (Debian's `prometheus` package):
//! the test serves cAdvisor- and dcgm-exporter-shaped series whose counters
//! grow at known rates, Prometheus scrapes them every second, and the
//! per-pod series read back must show those rates, only for the job's pods.
//!
//! Without a `prometheus` binary the real-server test is skipped with a
//! note, unless `PADDLECLOUD_REQUIRE_PROMETHEUS=1` makes it fail.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use app::models::{PodSeries, ResourceMetric};
use axum::extract::State;
use axum::routing::get;
use axum::Router;
use server::kubernetes::prometheus::{Prometheus, PrometheusError};

use crate::common;

const NS: &str = "pc-acme";
const TRAINER: &str = "demo-trainer-0";
const PS: &str = "demo-ps-0";
/// In the job's namespace, with the trainer's name as its prefix: a regex
/// that is not anchored would take it.
const NEIGHBOUR: &str = "demo-trainer-01";
/// Another account's pod of the same name.
const OTHER_NS: &str = "pc-other";

const MIB: f64 = 1024.0 * 1024.0;
const TRAINER_CPU: f64 = 0.5;
const PS_CPU: f64 = 0.25;
const PAUSE_CPU: f64 = 0.01;
const TRAINER_MEMORY: f64 = 200.0 * MIB;
const PS_MEMORY: f64 = 100.0 * MIB;
const PAUSE_MEMORY: f64 = MIB;
/// Received on eth0 and on a second interface (Multus), bytes/s.
const TRAINER_RX: [f64; 2] = [1000.0, 300.0];
const TRAINER_TX: [f64; 2] = [500.0, 100.0];
const PS_RX: f64 = 2000.0;
const PS_TX: f64 = 4000.0;
const TRAINER_READ: f64 = 4096.0;
const TRAINER_WRITE: f64 = 8192.0;
const PS_READ: f64 = 1024.0;
const PS_WRITE: f64 = 2048.0;
/// The trainer's two GPUs: percent, and frame buffer used in MiB.
const TRAINER_GPU_UTIL: [f64; 2] = [60.0, 30.0];
const TRAINER_GPU_FB_MIB: [f64; 2] = [1024.0, 2048.0];

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// What the exporter has served.
struct ExporterState {
    /// When the counters were at their base values, Unix seconds.
    origin: f64,
    cadvisor_scrapes: AtomicU32,
    dcgm_scrapes: AtomicU32,
    /// The first cAdvisor scrape, Unix seconds.
    first_scrape: Mutex<Option<f64>>,
}

/// The exposition text, one metric family at a time.
struct Text(String);

impl Text {
    fn family(&mut self, name: &str, kind: &str) {
        self.0.push_str(&format!(
            "# HELP {name} test series\n# TYPE {name} {kind}\n"
        ));
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64, ts_ms: Option<i64>) {
        let labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
        self.0
            .push_str(&format!("{name}{{{}}} {value}", labels.join(",")));
        if let Some(ts) = ts_ms {
            self.0.push_str(&format!(" {ts}"));
        }
        self.0.push('\n');
    }
}

/// A cgroup as cAdvisor labels it.
struct Cgroup {
    namespace: &'static str,
    pod: &'static str,
    container: &'static str,
    id: String,
    image: &'static str,
}

impl Cgroup {
    fn labels<'a>(&'a self, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
        let mut l = vec![
            ("container", self.container),
            ("id", self.id.as_str()),
            ("image", self.image),
            ("name", self.id.rsplit('/').next().unwrap_or("")),
            ("namespace", self.namespace),
            ("pod", self.pod),
        ];
        l.extend_from_slice(extra);
        l
    }
}

/// What a cgroup uses: rates per second and gauges.
#[derive(Default, Clone, Copy)]
struct Use {
    cpu: f64,
    memory: f64,
    read: f64,
    write: f64,
}

/// cAdvisor's `/metrics/cadvisor` as the kubelet serves it, with sample
/// timestamps. The trainer runs on containerd (its sandbox's series say
/// container=""), the parameter server on Docker (container="POD", and
/// each container repeats the shared network counters).
fn cadvisor(state: &ExporterState) -> String {
    let now = unix_now();
    let ts = Some((now * 1000.0) as i64);
    let elapsed = now - state.origin;
    // Counters as if the pods had run for a while already.
    let counter = |rate: f64| rate * (3600.0 + elapsed);

    let pod_cgroup = |namespace, pod, uid: &str| Cgroup {
        namespace,
        pod,
        container: "",
        id: format!("/kubepods/burstable/pod{uid}"),
        image: "",
    };
    let in_pod = |namespace, pod, container, uid: &str, cid: &str, image| Cgroup {
        namespace,
        pod,
        container,
        id: format!("/kubepods/burstable/pod{uid}/{cid}"),
        image,
    };
    let paddle = "registry.example/paddle:2.6";
    let pause = "registry.k8s.io/pause:3.9";
    let trainer_main = Use {
        cpu: TRAINER_CPU,
        memory: TRAINER_MEMORY,
        read: TRAINER_READ,
        write: TRAINER_WRITE,
    };
    let ps_main = Use {
        cpu: PS_CPU,
        memory: PS_MEMORY,
        read: PS_READ,
        write: PS_WRITE,
    };
    let pause_use = Use {
        cpu: PAUSE_CPU,
        memory: PAUSE_MEMORY,
        ..Use::default()
    };
    let sum = |a: Use, b: Use| Use {
        cpu: a.cpu + b.cpu,
        memory: a.memory + b.memory,
        read: a.read + b.read,
        write: a.write + b.write,
    };
    let busy = Use {
        cpu: 3.0,
        memory: 5000.0 * MIB,
        read: 1e6,
        write: 1e6,
    };
    // (cgroup, use): containers, sandboxes and the pod-level aggregates.
    let cgroups: Vec<(Cgroup, Use)> = vec![
        (
            in_pod(NS, TRAINER, "paddle", "t0", "c-main", paddle),
            trainer_main,
        ),
        (in_pod(NS, TRAINER, "", "t0", "c-sandbox", pause), pause_use),
        (pod_cgroup(NS, TRAINER, "t0"), sum(trainer_main, pause_use)),
        (in_pod(NS, PS, "paddle", "p0", "d-main", paddle), ps_main),
        (in_pod(NS, PS, "POD", "p0", "d-pause", pause), pause_use),
        (pod_cgroup(NS, PS, "p0"), sum(ps_main, pause_use)),
        (in_pod(NS, NEIGHBOUR, "paddle", "n1", "c-n1", paddle), busy),
        (pod_cgroup(NS, NEIGHBOUR, "n1"), busy),
        (
            in_pod(OTHER_NS, TRAINER, "paddle", "o0", "c-o0", paddle),
            busy,
        ),
        (pod_cgroup(OTHER_NS, TRAINER, "o0"), busy),
    ];

    let mut t = Text(String::new());
    t.family("container_cpu_usage_seconds_total", "counter");
    for (c, u) in &cgroups {
        let v = counter(u.cpu);
        t.sample(
            "container_cpu_usage_seconds_total",
            &c.labels(&[("cpu", "total")]),
            v,
            ts,
        );
    }
    t.family("container_memory_working_set_bytes", "gauge");
    for (c, u) in &cgroups {
        t.sample(
            "container_memory_working_set_bytes",
            &c.labels(&[]),
            u.memory,
            ts,
        );
    }
    for (name, pick) in [
        ("container_fs_reads_bytes_total", 0),
        ("container_fs_writes_bytes_total", 1),
    ] {
        t.family(name, "counter");
        for (c, u) in &cgroups {
            let rate = if pick == 0 { u.read } else { u.write };
            t.sample(
                name,
                &c.labels(&[("device", "/dev/vda")]),
                counter(rate),
                ts,
            );
        }
    }

    // Network: on the sandbox only under containerd; on the pause container
    // and, as older Docker set-ups do, on every container of the pod.
    let trainer_sandbox = in_pod(NS, TRAINER, "", "t0", "c-sandbox", pause);
    let ps_pause = in_pod(NS, PS, "POD", "p0", "d-pause", pause);
    let ps_main_cg = in_pod(NS, PS, "paddle", "p0", "d-main", paddle);
    let other_sandbox = in_pod(OTHER_NS, TRAINER, "", "o0", "c-o0s", pause);
    // The node's own interfaces, on the root cgroup.
    let root = Cgroup {
        namespace: "",
        pod: "",
        container: "",
        id: "/".into(),
        image: "",
    };
    for (name, trainer, ps) in [
        ("container_network_receive_bytes_total", TRAINER_RX, PS_RX),
        ("container_network_transmit_bytes_total", TRAINER_TX, PS_TX),
    ] {
        t.family(name, "counter");
        for (iface, rate) in [("eth0", trainer[0]), ("net1", trainer[1])] {
            t.sample(
                name,
                &trainer_sandbox.labels(&[("interface", iface)]),
                counter(rate),
                ts,
            );
        }
        for c in [&ps_pause, &ps_main_cg] {
            t.sample(name, &c.labels(&[("interface", "eth0")]), counter(ps), ts);
        }
        for c in [&other_sandbox, &root] {
            t.sample(name, &c.labels(&[("interface", "eth0")]), counter(1e7), ts);
        }
    }
    t.0
}

/// dcgm-exporter with its Kubernetes mapping: the trainer's two GPUs, an
/// idle GPU no pod holds, and another account's GPU.
fn dcgm() -> String {
    let gpus: [(&str, &str, &str, f64, f64); 4] = [
        ("0", NS, TRAINER, TRAINER_GPU_UTIL[0], TRAINER_GPU_FB_MIB[0]),
        ("1", NS, TRAINER, TRAINER_GPU_UTIL[1], TRAINER_GPU_FB_MIB[1]),
        ("2", "", "", 0.0, 0.0),
        ("3", OTHER_NS, TRAINER, 99.0, 30000.0),
    ];
    let mut t = Text(String::new());
    for (name, field) in [("DCGM_FI_DEV_GPU_UTIL", 0), ("DCGM_FI_DEV_FB_USED", 1)] {
        t.family(name, "gauge");
        for (gpu, namespace, pod, util, fb) in gpus {
            let uuid = format!("GPU-0000000{gpu}-aaaa-bbbb-cccc-dddddddddddd");
            let device = format!("nvidia{gpu}");
            let container = if pod.is_empty() { "" } else { "paddle" };
            t.sample(
                name,
                &[
                    ("gpu", gpu),
                    ("UUID", uuid.as_str()),
                    ("device", device.as_str()),
                    ("modelName", "NVIDIA A100-SXM4-40GB"),
                    ("Hostname", "gpu-node-1"),
                    ("DCGM_FI_DRIVER_VERSION", "535.104.05"),
                    ("container", container),
                    ("namespace", namespace),
                    ("pod", pod),
                ],
                if field == 0 { util } else { fb },
                None,
            );
        }
    }
    t.0
}

/// The exporter on 127.0.0.1: `/metrics/cadvisor` and `/metrics` (DCGM).
async fn start_exporter() -> (String, Arc<ExporterState>) {
    let state = Arc::new(ExporterState {
        origin: unix_now(),
        cadvisor_scrapes: AtomicU32::new(0),
        dcgm_scrapes: AtomicU32::new(0),
        first_scrape: Mutex::new(None),
    });
    let app = Router::new()
        .route(
            "/metrics/cadvisor",
            get(|State(s): State<Arc<ExporterState>>| async move {
                s.first_scrape.lock().unwrap().get_or_insert_with(unix_now);
                s.cadvisor_scrapes.fetch_add(1, Ordering::SeqCst);
                cadvisor(&s)
            }),
        )
        .route(
            "/metrics",
            get(|State(s): State<Arc<ExporterState>>| async move {
                s.dcgm_scrapes.fetch_add(1, Ordering::SeqCst);
                dcgm()
            }),
        )
        .with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, state)
}

/// The `prometheus` binary, or `None` (with a loud note) when there is
/// none; under `PADDLECLOUD_REQUIRE_PROMETHEUS=1` a missing one fails.
fn prometheus_binary() -> Option<PathBuf> {
    let found = std::env::var_os("PADDLECLOUD_PROMETHEUS_BIN")
        .map(PathBuf::from)
        .into_iter()
        .chain(std::env::var_os("PATH").into_iter().flat_map(|paths| {
            std::env::split_paths(&paths)
                .map(|p| p.join("prometheus"))
                .collect::<Vec<_>>()
        }))
        .chain([PathBuf::from("/usr/bin/prometheus")])
        .find(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var("PADDLECLOUD_REQUIRE_PROMETHEUS").as_deref() != Ok("1"),
            "no prometheus binary (apt-get install prometheus) but PADDLECLOUD_REQUIRE_PROMETHEUS=1"
        );
        eprintln!(
            "\n*** SKIPPING the real-Prometheus test: no `prometheus` binary on PATH or at \
             /usr/bin/prometheus (apt-get install prometheus). ***\n"
        );
    }
    found
}

/// A Prometheus child process, killed when dropped.
struct PrometheusProcess {
    child: Child,
    url: String,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl PrometheusProcess {
    fn start(binary: &Path, exporter: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
                 scrape_configs:\n\
                 \x20 - job_name: kubelet-cadvisor\n\
                 \x20   metrics_path: /metrics/cadvisor\n\
                 \x20   honor_labels: true\n\
                 \x20   static_configs: [{{targets: ['{exporter}']}}]\n\
                 \x20 - job_name: dcgm-exporter\n\
                 \x20   honor_labels: true\n\
                 \x20   static_configs: [{{targets: ['{exporter}']}}]\n"
            ),
        )
        .unwrap();
        let port = common::free_port();
        let log = dir.path().join("prometheus.log");
        let log_file = std::fs::File::create(&log).unwrap();
        let child = Command::new(binary)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--log.level=warn")
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().unwrap())
            .stderr(log_file)
            .spawn()
            .unwrap();
        Self {
            child,
            url: format!("http://127.0.0.1:{port}"),
            log,
            _dir: dir,
        }
    }

    /// Its log, for a failure message.
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for PrometheusProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn pods_of(series: &[PodSeries]) -> Vec<&str> {
    series.iter().map(|s| s.pod.as_str()).collect()
}

fn series_of<'a>(series: &'a [PodSeries], pod: &str) -> &'a PodSeries {
    series
        .iter()
        .find(|s| s.pod == pod)
        .unwrap_or_else(|| panic!("no series for {pod} in {series:?}"))
}

/// Checks a pod's rate at every point whose window lies wholly after the
/// first scrape; returns their mean.
fn assert_rate(series: &[PodSeries], pod: &str, expected: f64, settled: f64, what: &str) -> f64 {
    let s = series_of(series, pod);
    let settled: Vec<f64> =
        s.ts.iter()
            .zip(&s.values)
            .filter(|(t, _)| **t >= settled)
            .map(|(_, v)| *v)
            .collect();
    assert!(
        !settled.is_empty(),
        "{what} of {pod}: no settled point in {s:?}"
    );
    for v in &settled {
        assert!(
            (v - expected).abs() <= 0.2 * expected,
            "{what} of {pod}: {v} is not within 20% of {expected} ({s:?})"
        );
    }
    let mean = settled.iter().sum::<f64>() / settled.len() as f64;
    eprintln!(
        "{what:>11} {pod:<15} expected {expected:>12.3}  measured mean {mean:>12.3} over {} points",
        settled.len()
    );
    mean
}

fn assert_gauge(series: &[PodSeries], pod: &str, expected: f64, what: &str) {
    let s = series_of(series, pod);
    assert!(!s.values.is_empty());
    assert!(
        s.values.iter().all(|v| *v == expected),
        "{what} of {pod} should be exactly {expected}: {s:?}"
    );
    eprintln!(
        "{what:>11} {pod:<15} expected {expected:>12.3}  measured {:>12.3} at all {} points",
        s.values[0],
        s.values.len()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_real_prometheus_gives_each_job_pods_usage_and_its_refusals_in_its_own_words() {
    let Some(binary) = prometheus_binary() else {
        return;
    };
    let began = Instant::now();
    let (exporter_addr, exporter) = start_exporter().await;
    let process = PrometheusProcess::start(&binary, &exporter_addr);
    // Scraped every second, so a rate window of four seconds holds four
    // samples; the default (15 s, a one-minute window) would need a minute
    // of data before its rates are whole.
    let prom = Prometheus::new(&process.url)
        .unwrap()
        .with_scrape_interval(Duration::from_secs(1));
    let pods = vec![TRAINER.to_owned(), PS.to_owned()];

    // Ready, then enough scrapes for windows wholly inside the data.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ready = prom.ready().await;
        let enough = exporter.cadvisor_scrapes.load(Ordering::SeqCst) >= 8
            && exporter.dcgm_scrapes.load(Ordering::SeqCst) >= 3;
        if ready.is_ok() && enough {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no data after 30 s (ready: {ready:?}, scrapes: {}); prometheus log:\n{}",
            exporter.cadvisor_scrapes.load(Ordering::SeqCst),
            process.log()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let waited = began.elapsed();
    let first = exporter.first_scrape.lock().unwrap().unwrap();
    let (start, end) = (first - 1.0, unix_now());
    // Windows end at a point's time and reach back four seconds.
    let settled = first + 4.5;
    let (prom_ref, pods_ref) = (&prom, &pods);
    let query = move |metric| async move {
        prom_ref
            .pod_series(NS, pods_ref, metric, start, end, 100)
            .await
    };

    let cpu = query(ResourceMetric::Cpu).await.unwrap();
    assert_eq!(pods_of(&cpu), [TRAINER, PS], "{cpu:?}");
    assert_rate(&cpu, TRAINER, TRAINER_CPU, settled, "cpu");
    assert_rate(&cpu, PS, PS_CPU, settled, "cpu");
    let step = cpu[0].ts[1] - cpu[0].ts[0];
    assert_eq!(step, 1.0, "an 8-second range in 100 points is one a second");

    // Exactly the containers' gauges: neither the pod's cgroup (which
    // sums them) nor the pause container is counted.
    let memory = query(ResourceMetric::Memory).await.unwrap();
    assert_eq!(pods_of(&memory), [TRAINER, PS]);
    assert_gauge(&memory, TRAINER, TRAINER_MEMORY, "memory");
    assert_gauge(&memory, PS, PS_MEMORY, "memory");

    for (metric, trainer, ps, what) in [
        (
            ResourceMetric::NetRx,
            TRAINER_RX[0] + TRAINER_RX[1],
            PS_RX,
            "net rx",
        ),
        (
            ResourceMetric::NetTx,
            TRAINER_TX[0] + TRAINER_TX[1],
            PS_TX,
            "net tx",
        ),
        (ResourceMetric::DiskRead, TRAINER_READ, PS_READ, "disk read"),
        (
            ResourceMetric::DiskWrite,
            TRAINER_WRITE,
            PS_WRITE,
            "disk write",
        ),
    ] {
        let series = query(metric).await.unwrap();
        assert_eq!(pods_of(&series), [TRAINER, PS], "{what}: {series:?}");
        assert_rate(&series, TRAINER, trainer, settled, what);
        assert_rate(&series, PS, ps, settled, what);
    }

    // The trainer's two GPUs summed; the parameter server has none, so no
    // series at all rather than zeros.
    let util = query(ResourceMetric::GpuUtil).await.unwrap();
    assert_eq!(pods_of(&util), [TRAINER], "{util:?}");
    assert_gauge(&util, TRAINER, TRAINER_GPU_UTIL.iter().sum(), "gpu util");
    let gpu_memory = query(ResourceMetric::GpuMemory).await.unwrap();
    assert_eq!(pods_of(&gpu_memory), [TRAINER], "{gpu_memory:?}");
    assert_gauge(
        &gpu_memory,
        TRAINER,
        TRAINER_GPU_FB_MIB.iter().sum::<f64>() * MIB,
        "gpu memory",
    );
    let queried = began.elapsed() - waited;

    // The parameter server alone: the trainer's GPU series are not its.
    let ps_only = prom
        .pod_series(
            NS,
            &[PS.to_owned()],
            ResourceMetric::GpuUtil,
            start,
            end,
            100,
        )
        .await
        .unwrap();
    assert!(ps_only.is_empty(), "{ps_only:?}");

    // With the default 15 s scrape interval the window is a minute: the
    // series are there (their rates still rising while the data is younger
    // than the window).
    let default = Prometheus::new(&process.url).unwrap();
    let cpu = default
        .pod_series(NS, &pods, ResourceMetric::Cpu, start, end, 100)
        .await
        .unwrap();
    assert_eq!(pods_of(&cpu), [TRAINER, PS]);

    // The console asks by the batch Job that owns each pod (`<job>-<replica>`,
    // its pods that plus a generated suffix): the pods come back by full name,
    // in the owners' order, and never from another namespace.
    let owned = prom
        .owned_pod_series(
            NS,
            &["demo-ps".to_owned(), "demo-trainer".to_owned()],
            ResourceMetric::Cpu,
            start,
            end,
            100,
        )
        .await
        .unwrap();
    assert_eq!(pods_of(&owned), [PS, TRAINER, NEIGHBOUR]);

    // NaN and +Inf are strings in the answer, and no point.
    for promql in ["vector(0) / 0", "vector(1) / 0"] {
        let raw = prom.query_range(promql, start, end, 1.0).await.unwrap();
        assert!(raw.iter().all(|s| s.ts.is_empty()), "{promql}: {raw:?}");
    }

    // A query Prometheus cannot parse: its own words come back.
    let err = prom
        .query_range(
            "sum(rate(container_cpu_usage_seconds_total[1m]",
            start,
            end,
            1.0,
        )
        .await
        .unwrap_err();
    match &err {
        PrometheusError::Query {
            error_type,
            message,
        } => {
            assert_eq!(error_type, "bad_data");
            assert!(message.contains("parse error"), "{message}");
        }
        other => panic!("expected the server's refusal, got {other:?}"),
    }
    eprintln!("refusal: {err}");
    eprintln!(
        "prometheus ready with 8 scrapes after {:.1} s; the eight metric queries took {:.0} ms",
        waited.as_secs_f64(),
        queried.as_secs_f64() * 1000.0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_prometheus_that_is_not_running_is_reported_unreachable_within_three_seconds() {
    let url = format!("http://127.0.0.1:{}", common::free_port());
    let prom = Prometheus::new(&url).unwrap();
    let began = Instant::now();
    let err = prom
        .pod_series(
            NS,
            &[TRAINER.to_owned()],
            ResourceMetric::Cpu,
            unix_now() - 600.0,
            unix_now(),
            100,
        )
        .await
        .unwrap_err();
    let ready = prom.ready().await.unwrap_err();
    assert!(
        began.elapsed() < Duration::from_secs(3),
        "{:?}",
        began.elapsed()
    );
    for err in [&err, &ready] {
        assert!(
            matches!(err, PrometheusError::Unreachable { .. }),
            "{err:?}"
        );
        let text = err.to_string();
        assert!(
            text.starts_with(&format!("Prometheus at {url} cannot be reached: ")),
            "{text}"
        );
        assert!(text.to_lowercase().contains("refused"), "{text}");
    }
    eprintln!("{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_is_not_prometheus_is_a_bad_answer_not_a_panic() {
    // The exporter answers 404 with no body to the API's paths.
    let (addr, _state) = start_exporter().await;
    let prom = Prometheus::new(&format!("http://{addr}")).unwrap();
    let err = prom
        .pod_series(
            NS,
            &[TRAINER.to_owned()],
            ResourceMetric::Memory,
            unix_now() - 60.0,
            unix_now(),
            10,
        )
        .await
        .unwrap_err();
    assert!(matches!(err, PrometheusError::BadAnswer { .. }), "{err:?}");
    assert!(err.to_string().contains("HTTP 404"), "{err}");
    let ready = prom.ready().await.unwrap_err();
    assert!(
        matches!(ready, PrometheusError::BadAnswer { .. }),
        "{ready:?}"
    );
    // A range that ends before it starts is refused before any request.
    let err = prom
        .pod_series(
            NS,
            &[TRAINER.to_owned()],
            ResourceMetric::Cpu,
            10.0,
            5.0,
            10,
        )
        .await
        .unwrap_err();
    assert!(matches!(err, PrometheusError::InvalidRange(_)), "{err:?}");
}
