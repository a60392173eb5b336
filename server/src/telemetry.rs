//! The console's own metrics, for operators (`GET /metrics`, the
//! OpenMetrics text format Prometheus scrapes): requests by route, method
//! and status with latency histograms; jobs, notebooks and serving
//! instances by status; the queue; whether each background loop runs in
//! this replica and when it last made a pass; the database pool. Counted
//! as requests and passes happen; the rest is read when scraped. Who may
//! scrape is `http::telemetry`'s question.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::storage::db::Pool;

/// A request's labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// `GET`, `POST`, …
    pub method: String,
    /// The route as the router matched it (`/api/v1/jobs/{name}`), or
    /// `other` (static files, unknown paths): never the raw path.
    pub route: String,
    /// The answer's status code.
    pub status: u16,
}

/// A request's labels for its latency.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RouteLabels {
    /// As in [`RequestLabels`].
    pub method: String,
    /// As in [`RequestLabels`].
    pub route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LoopLabels {
    /// The loop's lease name (`pipeline-scheduler`).
    r#loop: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabels {
    status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VersionLabels {
    version: String,
}

/// A latency histogram's buckets, seconds: a page or an API call is tens
/// of milliseconds; an upload or an export may take seconds.
const LATENCY_BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];

fn hash(token: &str) -> [u8; 32] {
    <sha2::Sha256 as sha2::Digest>::digest(token.as_bytes()).into()
}

fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

/// The metrics of one console process.
pub struct Telemetry {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<RouteLabels, Histogram, fn() -> Histogram>,
    loop_running: Family<LoopLabels, Gauge>,
    loop_passes: Family<LoopLabels, Counter>,
    loop_last_pass: Family<LoopLabels, Gauge<f64, AtomicU64>>,
    jobs: Family<StatusLabels, Gauge>,
    notebooks: Family<StatusLabels, Gauge>,
    serving: Family<StatusLabels, Gauge>,
    queued: Gauge,
    pool_connections: Family<StateLabels, Gauge>,
    pool_max: Gauge,
    pool: Pool,
    /// The scrape token (`--metrics-token`), as its SHA-256.
    token: Option<[u8; 32]>,
}

impl Telemetry {
    /// The metrics of a console on `pool`, scraped with `token` (or by a
    /// site admin).
    pub fn new(pool: Pool, token: Option<&str>) -> Self {
        let mut registry = Registry::with_prefix("paddlecloud");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "http_requests",
            "HTTP requests answered, by method, matched route and status",
            requests.clone(),
        );
        let latency = Family::<RouteLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            latency_histogram,
        );
        registry.register(
            "http_request_duration_seconds",
            "Time to the response's headers, by method and matched route",
            latency.clone(),
        );
        let loop_running = Family::<LoopLabels, Gauge>::default();
        registry.register(
            "loop_running",
            "1 while this replica holds the loop's lease and runs it",
            loop_running.clone(),
        );
        let loop_passes = Family::<LoopLabels, Counter>::default();
        registry.register(
            "loop_passes",
            "Passes a controller loop made in this replica",
            loop_passes.clone(),
        );
        let loop_last_pass = Family::<LoopLabels, Gauge<f64, AtomicU64>>::default();
        registry.register(
            "loop_last_pass_timestamp_seconds",
            "When a controller loop last finished a pass here (Unix seconds)",
            loop_last_pass.clone(),
        );
        let jobs = Family::<StatusLabels, Gauge>::default();
        registry.register("jobs", "Jobs by status, every account", jobs.clone());
        let notebooks = Family::<StatusLabels, Gauge>::default();
        registry.register(
            "notebooks",
            "Notebooks by status, every account",
            notebooks.clone(),
        );
        let serving = Family::<StatusLabels, Gauge>::default();
        registry.register(
            "serving_instances",
            "Serving instances by status, every account",
            serving.clone(),
        );
        let queued = Gauge::default();
        registry.register(
            "queue_length",
            "Jobs and serving replicas waiting for room on the cluster",
            queued.clone(),
        );
        let pool_connections = Family::<StateLabels, Gauge>::default();
        registry.register(
            "db_pool_connections",
            "Database connections of this process, idle or in use",
            pool_connections.clone(),
        );
        let pool_max = Gauge::default();
        registry.register(
            "db_pool_max_connections",
            "The most database connections this process opens",
            pool_max.clone(),
        );
        let build = Family::<VersionLabels, Gauge>::default();
        build
            .get_or_create(&VersionLabels {
                version: env!("CARGO_PKG_VERSION").to_owned(),
            })
            .set(1);
        registry.register("build_info", "The console's version", build);
        Self {
            registry,
            requests,
            latency,
            loop_running,
            loop_passes,
            loop_last_pass,
            jobs,
            notebooks,
            serving,
            queued,
            pool_connections,
            pool_max,
            pool,
            token: token.filter(|t| !t.is_empty()).map(hash),
        }
    }

    /// Counts a request answered with `status` after `seconds`.
    pub fn request(&self, method: &str, route: &str, status: u16, seconds: f64) {
        let (method, route) = (method.to_owned(), route.to_owned());
        self.latency
            .get_or_create(&RouteLabels {
                method: method.clone(),
                route: route.clone(),
            })
            .observe(seconds);
        self.requests
            .get_or_create(&RequestLabels {
                method,
                route,
                status,
            })
            .inc();
    }

    /// The pulse of background loop `name` (its lease's name).
    pub fn pulse(&self, name: &str) -> Pulse {
        let labels = LoopLabels {
            r#loop: name.to_owned(),
        };
        Pulse {
            running: self.loop_running.get_or_create(&labels).clone(),
            passes: self.loop_passes.get_or_create(&labels).clone(),
            last_pass: self.loop_last_pass.get_or_create(&labels).clone(),
        }
    }

    /// Whether `token` is the scrape token (compared as hashes, so the
    /// time taken says nothing of the token).
    pub fn is_scrape_token(&self, token: &str) -> bool {
        self.token.is_some_and(|t| t == hash(token))
    }

    /// The metrics as text, with what is read at scrape time read now:
    /// the counts by status from the database, the queue from `cluster`.
    pub async fn scrape(&self, cluster: &dyn app::ports::Cluster) -> String {
        let counts = crate::storage::telemetry::counts(&self.pool).await;
        for (family, rows) in [
            (&self.jobs, &counts.jobs),
            (&self.notebooks, &counts.notebooks),
            (&self.serving, &counts.serving),
        ] {
            family.clear();
            for (status, n) in rows {
                family
                    .get_or_create(&StatusLabels {
                        status: status.clone(),
                    })
                    .set(*n);
            }
        }
        if let Ok(capacity) = cluster.capacity().await {
            self.queued.set(i64::from(capacity.queued));
        }
        let idle = i64::try_from(self.pool.num_idle()).unwrap_or(i64::MAX);
        let size = i64::from(self.pool.size());
        for (state, n) in [("idle", idle), ("in_use", (size - idle).max(0))] {
            self.pool_connections
                .get_or_create(&StateLabels {
                    state: state.to_owned(),
                })
                .set(n);
        }
        self.pool_max
            .set(i64::from(self.pool.options().get_max_connections()));
        let mut text = String::new();
        // Writing to a String does not fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }
}

/// What a background loop reports of itself.
#[derive(Clone, Default)]
pub struct Pulse {
    running: Gauge,
    passes: Counter,
    last_pass: Gauge<f64, AtomicU64>,
}

impl Pulse {
    /// A pulse that goes nowhere (tests that drive a loop alone).
    pub fn none() -> Self {
        Self::default()
    }

    /// The loop made a pass.
    pub fn beat(&self) {
        self.passes.inc();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        self.last_pass.set(now);
    }

    /// Marks the loop running until the returned guard is dropped (the
    /// loop ended or was aborted).
    pub fn running(&self) -> Running {
        self.running.set(1);
        Running(self.running.clone())
    }
}

/// Marks a loop stopped when dropped.
pub struct Running(Gauge);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.set(0);
    }
}

/// The shared handle the router and the loops count on.
pub type SharedTelemetry = Arc<Telemetry>;
