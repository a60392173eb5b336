//! What a job's pods used on Kubernetes, read from Prometheus: cAdvisor's
//! container series (the kubelet's `/metrics/cadvisor`) for CPU, memory,
//! network and disk, and NVIDIA's dcgm-exporter for GPUs.
//!
//! The queries only read series, so any server speaking Prometheus's HTTP
//! API (`/api/v1/query_range`) works: Prometheus itself, Thanos Query,
//! VictoriaMetrics. Each chart is one range query that Prometheus has
//! already aggregated per pod, so the console never holds raw samples.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::time::Duration;

use app::error::AppError;
use app::models::{PodSeries, ResourceMetric};
use reqwest::{StatusCode, Url};
use serde::Deserialize;

/// The most points a series has, whatever the caller asks for: a chart is
/// a few hundred pixels wide, and Prometheus's cost grows with the points.
pub const MAX_POINTS: u32 = 500;

/// cAdvisor's usual scrape interval (kube-prometheus and the Prometheus
/// Helm chart scrape the kubelet every 15 s to 30 s); its four-fold, 1 min,
/// is the shortest rate window.
pub const DEFAULT_SCRAPE_INTERVAL: Duration = Duration::from_secs(15);

/// How long a TCP connection may take: Prometheus is in the cluster, so an
/// answer that slow means it is not there, and a page should say so soon.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long one query may take, answer included. Prometheus is told the same
/// (`timeout=`), so it stops working on a query nobody waits for any more.
const QUERY_TIMEOUT: Duration = Duration::from_secs(15);
/// How long the health check waits.
const READY_TIMEOUT: Duration = Duration::from_secs(3);

/// What went wrong asking Prometheus.
#[derive(Debug, thiserror::Error)]
pub enum PrometheusError {
    /// No connection, or no answer in time.
    #[error("Prometheus at {url} cannot be reached: {reason}")]
    Unreachable {
        /// The server, without credentials.
        url: String,
        /// Why, e.g. "Connection refused (os error 111)".
        reason: String,
    },
    /// It answers but is still starting (`/-/ready` says 503).
    #[error("Prometheus at {url} is not ready yet: {reason}")]
    NotReady {
        /// The server, without credentials.
        url: String,
        /// Its own words.
        reason: String,
    },
    /// Something answered, but not as Prometheus's API does (a wrong URL,
    /// a proxy's error page, a truncated body).
    #[error("{url} did not answer as a Prometheus server does: {reason}")]
    BadAnswer {
        /// The server, without credentials.
        url: String,
        /// What was wrong with the answer.
        reason: String,
    },
    /// Prometheus refused the query; its own error text.
    #[error("Prometheus refused the query ({error_type}): {message}")]
    Query {
        /// Its `errorType`, e.g. `bad_data`, `timeout`, `execution`.
        error_type: String,
        /// Its `error`, e.g. `1:29: parse error: unclosed left parenthesis`.
        message: String,
    },
    /// The time range asked for is not one (end before start, not finite).
    #[error("invalid time range: {0}")]
    InvalidRange(String),
}

impl From<PrometheusError> for AppError {
    fn from(err: PrometheusError) -> Self {
        match err {
            PrometheusError::InvalidRange(_) => AppError::Invalid {
                field: None,
                message: err.to_string(),
            },
            // The console writes the queries, so even a refused one is
            // the monitoring's fault, not the user's.
            other => AppError::Unavailable {
                message: format!("Resource usage cannot be shown: {other}."),
            },
        }
    }
}

/// One series of a range query, as Prometheus returned it.
#[derive(Debug, Clone, PartialEq)]
pub struct RawSeries {
    /// Its labels (`__name__` is gone after an aggregation).
    pub labels: BTreeMap<String, String>,
    /// Unix seconds, ascending.
    pub ts: Vec<f64>,
    /// The values; NaN and ±Inf points are left out, with their times.
    pub values: Vec<f64>,
}

/// A Prometheus server's HTTP API.
#[derive(Debug, Clone)]
pub struct Prometheus {
    /// Ends in `/`, so API paths join under a route prefix
    /// (`http://host/prometheus/` + `api/v1/query_range`).
    base: Url,
    /// The base without credentials, for messages.
    shown: String,
    client: reqwest::Client,
    scrape_interval: Duration,
}

impl Prometheus {
    /// A client of the server at `base_url`, e.g. `http://prometheus.monitoring:9090`
    /// (a path is a route prefix). Only `http` and `https` URLs are taken;
    /// user and password in the URL are sent as basic authentication.
    pub fn new(base_url: &str) -> anyhow::Result<Self> {
        let mut base = Url::parse(base_url.trim())
            .map_err(|e| anyhow::anyhow!("Prometheus URL {base_url:?} is not a URL: {e}"))?;
        if !matches!(base.scheme(), "http" | "https") {
            anyhow::bail!(
                "Prometheus URL {base_url:?} must start with http:// or https://, not {}://",
                base.scheme()
            );
        }
        if base.host_str().is_none_or(str::is_empty) {
            anyhow::bail!("Prometheus URL {base_url:?} has no host");
        }
        if base.query().is_some() || base.fragment().is_some() {
            anyhow::bail!(
                "Prometheus URL {base_url:?} must not have a query (?…) or fragment (#…)"
            );
        }
        if !base.path().ends_with('/') {
            let path = format!("{}/", base.path());
            base.set_path(&path);
        }
        let mut shown = base.clone();
        let _ = shown.set_username("");
        let _ = shown.set_password(None);
        let shown = shown.as_str().trim_end_matches('/').to_owned();
        // reqwest builds its TLS configuration even for http:// and panics
        // without a rustls crypto provider (the crate is built without one):
        // install ring, as `serve` does, unless something already has.
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(QUERY_TIMEOUT)
            .build()
            .map_err(|e| anyhow::anyhow!("cannot make an HTTP client for Prometheus: {e}"))?;
        Ok(Self {
            base,
            shown,
            client,
            scrape_interval: DEFAULT_SCRAPE_INTERVAL,
        })
    }

    /// Tells how often Prometheus scrapes cAdvisor (default 15 s). Rate
    /// windows are at least four scrape intervals, so every window holds
    /// enough samples for a rate even when a scrape is missed.
    pub fn with_scrape_interval(mut self, interval: Duration) -> Self {
        self.scrape_interval = interval.max(Duration::from_secs(1));
        self
    }

    /// The server, without credentials, as messages show it.
    pub fn url(&self) -> &str {
        &self.shown
    }

    /// One metric's series for these pods (Kubernetes pod names) in
    /// `namespace` over `[start, end]` (Unix seconds), at most about
    /// `points` (capped at [`MAX_POINTS`]) per series, one series per pod
    /// that has data, in the order of `pods`. A GPU metric of a pod without
    /// a GPU has no series (not zeros).
    pub async fn pod_series(
        &self,
        namespace: &str,
        pods: &[String],
        metric: ResourceMetric,
        start: f64,
        end: f64,
        points: u32,
    ) -> Result<Vec<PodSeries>, PrometheusError> {
        self.series(
            namespace,
            pods,
            &pod_regex(pods),
            metric,
            start,
            end,
            points,
            |pod, p| pod == p,
        )
        .await
    }

    /// Like [`Prometheus::pod_series`], for pods that a controller named:
    /// `owners` are the names their pods start with (a batch/v1 Job's name;
    /// its pods are that plus `-` and a generated suffix). Each series keeps
    /// its pod's full name, in the order of `owners`.
    pub async fn owned_pod_series(
        &self,
        namespace: &str,
        owners: &[String],
        metric: ResourceMetric,
        start: f64,
        end: f64,
        points: u32,
    ) -> Result<Vec<PodSeries>, PrometheusError> {
        let regex = format!("({})-[a-z0-9]+", pod_regex(owners));
        self.series(
            namespace,
            owners,
            &regex,
            metric,
            start,
            end,
            points,
            |pod, owner| {
                pod.strip_prefix(owner)
                    .is_some_and(|rest| rest.starts_with('-'))
            },
        )
        .await
    }

    /// The series of the pods `regex` matches, ordered by the first of
    /// `order` each pod `is` (then by name).
    #[allow(clippy::too_many_arguments)]
    async fn series(
        &self,
        namespace: &str,
        order: &[String],
        regex: &str,
        metric: ResourceMetric,
        start: f64,
        end: f64,
        points: u32,
        is: impl Fn(&str, &str) -> bool,
    ) -> Result<Vec<PodSeries>, PrometheusError> {
        check_range(start, end)?;
        if order.is_empty() {
            return Ok(Vec::new());
        }
        let plan = Plan::new(start, end, points, self.scrape_interval);
        let promql = pod_query(metric, namespace, regex, &plan);
        let raw = self
            .query_range(&promql, plan.start, end, plan.step as f64)
            .await?;
        let rank = |pod: &str| order.iter().position(|p| is(pod, p)).unwrap_or(usize::MAX);
        let mut out: Vec<PodSeries> = raw
            .into_iter()
            .filter_map(|s| {
                let pod = s.labels.get("pod").filter(|p| !p.is_empty())?.clone();
                (!s.ts.is_empty()).then_some(PodSeries {
                    pod,
                    ts: s.ts,
                    values: s.values,
                })
            })
            .collect();
        out.sort_by(|a, b| match rank(&a.pod).cmp(&rank(&b.pod)) {
            Ordering::Equal => a.pod.cmp(&b.pod),
            other => other,
        });
        Ok(out)
    }

    /// Any PromQL over `[start, end]` every `step` seconds: the query
    /// behind [`Prometheus::pod_series`], for diagnostics and other charts.
    pub async fn query_range(
        &self,
        promql: &str,
        start: f64,
        end: f64,
        step: f64,
    ) -> Result<Vec<RawSeries>, PrometheusError> {
        check_range(start, end)?;
        if !(step.is_finite() && step > 0.0) {
            return Err(PrometheusError::InvalidRange(format!(
                "the step must be positive, not {step}"
            )));
        }
        // POST with a form body, which Prometheus takes as it takes GET: a
        // job with hundreds of replicas makes a pod regex longer than
        // proxies let a URL be.
        let body = form_urlencoded::Serializer::new(String::new())
            .append_pair("query", promql)
            .append_pair("start", &format_seconds(start))
            .append_pair("end", &format_seconds(end))
            .append_pair("step", &format_seconds(step))
            .append_pair("timeout", &format!("{}s", QUERY_TIMEOUT.as_secs()))
            .finish();
        let url = self.endpoint("api/v1/query_range")?;
        let request = self.post_form(url, body);
        let (status, bytes) = self.send(request, QUERY_TIMEOUT).await?;
        read_matrix(&self.shown, status, &bytes)
    }

    /// A POST of a urlencoded form (what the query endpoints take; no URL
    /// length limit for long pod lists).
    fn post_form(&self, url: Url, body: String) -> reqwest::RequestBuilder {
        self.client
            .post(url)
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body(body)
    }

    /// Whether the server answers and has loaded its data: `/-/ready`, or,
    /// where that is not served (some Prometheus-compatible servers), a
    /// trivial query.
    pub async fn ready(&self) -> Result<(), PrometheusError> {
        let request = self.client.get(self.endpoint("-/ready")?);
        let (status, bytes) = self.send(request, READY_TIMEOUT).await?;
        if status.is_success() {
            return Ok(());
        }
        if status == StatusCode::SERVICE_UNAVAILABLE {
            return Err(PrometheusError::NotReady {
                url: self.shown.clone(),
                reason: snippet(&bytes),
            });
        }
        if status != StatusCode::NOT_FOUND {
            return Err(self.bad_answer(format!(
                "/-/ready answered HTTP {status}: {}",
                snippet(&bytes)
            )));
        }
        let url = self.endpoint("api/v1/query")?;
        let body = form_urlencoded::Serializer::new(String::new())
            .append_pair("query", "vector(1)")
            .finish();
        let request = self.post_form(url, body);
        let (status, bytes) = self.send(request, READY_TIMEOUT).await?;
        envelope(&self.shown, status, &bytes).map(|_| ())
    }

    fn endpoint(&self, path: &str) -> Result<Url, PrometheusError> {
        self.base
            .join(path)
            .map_err(|e| self.bad_answer(format!("cannot make the URL of {path}: {e}")))
    }

    /// Sends and reads the whole body within `timeout`.
    async fn send(
        &self,
        request: reqwest::RequestBuilder,
        timeout: Duration,
    ) -> Result<(StatusCode, bytes::Bytes), PrometheusError> {
        let unreachable = |e: reqwest::Error| PrometheusError::Unreachable {
            url: self.shown.clone(),
            reason: if e.is_timeout() {
                format!("no answer within {} s", timeout.as_secs())
            } else {
                innermost(&e)
            },
        };
        let response = request.timeout(timeout).send().await.map_err(unreachable)?;
        let status = response.status();
        let bytes = response.bytes().await.map_err(unreachable)?;
        Ok((status, bytes))
    }

    fn bad_answer(&self, reason: String) -> PrometheusError {
        bad_answer(&self.shown, reason)
    }
}

/// What the server at `shown` (for messages) said was wrong: [`PrometheusError::BadAnswer`].
fn bad_answer(shown: &str, reason: String) -> PrometheusError {
    PrometheusError::BadAnswer {
        url: shown.to_owned(),
        reason,
    }
}

/// Reads the API's envelope: its data, or its error as [`PrometheusError::Query`].
fn envelope(shown: &str, status: StatusCode, bytes: &[u8]) -> Result<Data, PrometheusError> {
    let envelope: Envelope = serde_json::from_slice(bytes).map_err(|_| {
        bad_answer(
            shown,
            format!(
                "HTTP {status} with a body that is not the API's JSON: {}",
                snippet(bytes)
            ),
        )
    })?;
    match envelope.status.as_str() {
        "success" => envelope
            .data
            .ok_or_else(|| bad_answer(shown, "a success without data".to_owned())),
        "error" => Err(PrometheusError::Query {
            error_type: envelope.error_type.unwrap_or_else(|| "error".to_owned()),
            message: envelope
                .error
                .unwrap_or_else(|| format!("HTTP {status} without an error message")),
        }),
        other => Err(bad_answer(
            shown,
            format!("status {other:?} (HTTP {status})"),
        )),
    }
}

/// Reads the answer (`status`, `bytes`) of the server at `shown` to a range
/// query: its series, each with its finite points only. Apart from the
/// request, and public, so that the fuzz target `prometheus_answer`
/// (`fuzz/src/lib.rs`) can try anything a server may send on it.
pub fn read_matrix(
    shown: &str,
    status: StatusCode,
    bytes: &[u8],
) -> Result<Vec<RawSeries>, PrometheusError> {
    let data = envelope(shown, status, bytes)?;
    if data.result_type != "matrix" {
        return Err(bad_answer(
            shown,
            format!(
                "a range query answered with a {:?}, not a matrix",
                data.result_type
            ),
        ));
    }
    let series: Vec<MatrixSeries> = serde_json::from_value(data.result)
        .map_err(|e| bad_answer(shown, format!("its matrix cannot be read: {e}")))?;
    series
        .into_iter()
        .map(|s| {
            let mut ts = Vec::with_capacity(s.values.len());
            let mut values = Vec::with_capacity(s.values.len());
            for (t, v) in s.values {
                let v = parse_value(&v).ok_or_else(|| {
                    bad_answer(shown, format!("the sample value {v:?} is not a number"))
                })?;
                // NaN (e.g. 0/0) is no measurement, and ±Inf cannot be
                // drawn nor written as JSON: both are left out.
                if v.is_finite() {
                    ts.push(t);
                    values.push(v);
                }
            }
            Ok(RawSeries {
                labels: s.metric,
                ts,
                values,
            })
        })
        .collect()
}

/// The API's answer around every result.
#[derive(Deserialize)]
struct Envelope {
    status: String,
    data: Option<Data>,
    #[serde(rename = "errorType")]
    error_type: Option<String>,
    error: Option<String>,
}

#[derive(Deserialize)]
struct Data {
    #[serde(rename = "resultType")]
    result_type: String,
    result: serde_json::Value,
}

/// One series of a matrix: `{"metric": {…}, "values": [[t, "v"], …]}`.
/// Native histograms come as `histograms` instead, which no query here makes.
#[derive(Deserialize)]
struct MatrixSeries {
    #[serde(default)]
    metric: BTreeMap<String, String>,
    #[serde(default)]
    values: Vec<(f64, String)>,
}

/// Prometheus writes values as Go does: `NaN`, `+Inf`, `-Inf` besides numbers.
fn parse_value(s: &str) -> Option<f64> {
    match s {
        "NaN" => Some(f64::NAN),
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        _ => s.parse().ok(),
    }
}

fn check_range(start: f64, end: f64) -> Result<(), PrometheusError> {
    if !(start.is_finite() && end.is_finite()) {
        return Err(PrometheusError::InvalidRange(format!(
            "start {start} and end {end} must be finite"
        )));
    }
    if end < start {
        return Err(PrometheusError::InvalidRange(format!(
            "end {end} is before start {start}"
        )));
    }
    Ok(())
}

/// Seconds as the API takes them: whole when whole, else milliseconds.
fn format_seconds(s: f64) -> String {
    if s.fract() == 0.0 {
        format!("{s:.0}")
    } else {
        format!("{s:.3}")
    }
}

/// The deepest cause of a reqwest error, e.g. "Connection refused (os error
/// 111)": reqwest's own text only says which URL failed.
fn innermost(err: &reqwest::Error) -> String {
    let mut cause: &dyn std::error::Error = err;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

/// The start of a body, for a message.
fn snippet(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim();
    if text.is_empty() {
        return "(empty body)".to_owned();
    }
    match text.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// How one range is asked for.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Plan {
    /// The first point: the start rounded down to a multiple of the step,
    /// so a live chart refreshed later samples the same instants and its
    /// lines do not wobble.
    start: f64,
    /// Seconds between points, whole.
    step: u64,
    /// Seconds of history behind each rate: at least four steps, so every
    /// sample counts in some point, and four scrape intervals, so each
    /// window holds several samples.
    rate_window: u64,
    /// Seconds each gauge point averages over, or `None` for the sample
    /// at that instant (steps too short to hold two samples).
    gauge_window: Option<u64>,
}

impl Plan {
    fn new(start: f64, end: f64, points: u32, scrape_interval: Duration) -> Self {
        let points = points.clamp(2, MAX_POINTS);
        let span = (end - start).max(0.0);
        // `points - 1` gaps make `points` points.
        let step = ((span / f64::from(points - 1)).ceil() as u64).max(1);
        let scrape = scrape_interval.as_secs().max(1);
        Self {
            start: (start / step as f64).floor() * step as f64,
            step,
            rate_window: (4 * step).max(4 * scrape),
            gauge_window: (step >= 2 * scrape).then_some(step),
        }
    }
}

/// The PromQL for one metric of these pods, summed per pod.
fn pod_query(metric: ResourceMetric, namespace: &str, regex: &str, plan: &Plan) -> String {
    let ns = promql_string(namespace);
    let pods = promql_string(regex);
    // Each container's own series. cAdvisor also writes one for the pod's
    // cgroup (container="", the sum of its containers: counting it would
    // double the pod) and, with Docker or CRI-O, one for the pause
    // container (container="POD"). Under containerd the pause container's
    // series has container="" too, and is left out with the pod's.
    let containers = format!(r#"{{namespace={ns},pod=~{pods},container!="",container!="POD"}}"#);
    // The pod's network namespace is its sandbox's, whose series say
    // container="" under containerd and container="POD" under Docker and
    // CRI-O, so the container label cannot be relied on. Instead every
    // series of the pod is taken and each interface counted once (`max`):
    // where several series of one pod report the shared namespace (older
    // Docker set-ups report it for every container), summing would
    // multiply the traffic. A hostNetwork pod's series are the node's
    // interfaces, which no query could split among its pods.
    let whole_pod = format!(r#"{{namespace={ns},pod=~{pods}}}"#);
    let w = plan.rate_window;
    let rate = |name: &str, sel: &str| format!("sum by (pod) (rate({name}{sel}[{w}s]))");
    let net = |name: &str| {
        format!("sum by (pod) (max by (pod, interface) (rate({name}{whole_pod}[{w}s])))")
    };
    // A gauge sampled once per step misses what happens between points on
    // long ranges; the bucket's mean does not.
    let gauge = |name: &str, sel: &str| match plan.gauge_window {
        Some(g) => format!("sum by (pod) (avg_over_time({name}{sel}[{g}s]))"),
        None => format!("sum by (pod) ({name}{sel})"),
    };
    match metric {
        ResourceMetric::Cpu => rate("container_cpu_usage_seconds_total", &containers),
        // The working set is what the kubelet evicts on and `kubectl top`
        // shows; RSS leaves out the page cache a trainer's data loader fills.
        ResourceMetric::Memory => gauge("container_memory_working_set_bytes", &containers),
        ResourceMetric::NetRx => net("container_network_receive_bytes_total"),
        ResourceMetric::NetTx => net("container_network_transmit_bytes_total"),
        ResourceMetric::DiskRead => rate("container_fs_reads_bytes_total", &containers),
        ResourceMetric::DiskWrite => rate("container_fs_writes_bytes_total", &containers),
        // dcgm-exporter's Kubernetes mapping labels each GPU with the
        // namespace, pod and container using it (scraped with
        // honor_labels, as its chart does, so they are not renamed
        // exported_*). A GPU no pod holds has empty labels and no match; a
        // pod without a GPU has no series, so the chart says "no GPU".
        ResourceMetric::GpuUtil => gauge("DCGM_FI_DEV_GPU_UTIL", &whole_pod),
        // Frame buffer used is in MiB.
        ResourceMetric::GpuMemory => {
            format!("{} * 1048576", gauge("DCGM_FI_DEV_FB_USED", &whole_pod))
        }
    }
}

/// A regex matching exactly these names (Prometheus anchors `=~` at both
/// ends); each name's metacharacters are escaped as Go's `regexp.QuoteMeta` does.
fn pod_regex(pods: &[String]) -> String {
    let mut out = String::new();
    for (i, pod) in pods.iter().enumerate() {
        if i > 0 {
            out.push('|');
        }
        for c in pod.chars() {
            if r"\.+*?()|[]{}^$".contains(c) {
                out.push('\\');
            }
            out.push(c);
        }
    }
    out
}

/// A PromQL string literal (Go's double-quoted syntax) holding `s`.
fn promql_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str(r"\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str(r"\n"),
            '\r' => out.push_str(r"\r"),
            '\t' => out.push_str(r"\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(span: f64, points: u32) -> Plan {
        Plan::new(
            1_000_000.0,
            1_000_000.0 + span,
            points,
            DEFAULT_SCRAPE_INTERVAL,
        )
    }

    #[test]
    fn an_hour_in_500_points_is_one_every_8_s_with_a_one_minute_rate_window() {
        let p = plan(3600.0, 500);
        assert_eq!(p.step, 8);
        assert_eq!(p.rate_window, 60);
        assert_eq!(p.gauge_window, None);
        assert!(3600 / p.step < 500);
    }

    #[test]
    fn a_week_has_a_rate_window_of_four_steps_and_averaged_gauges() {
        let p = plan(7.0 * 86400.0, 500);
        assert_eq!(p.step, 1213);
        assert_eq!(p.rate_window, 4 * 1213);
        assert_eq!(p.gauge_window, Some(1213));
    }

    #[test]
    fn points_are_capped_and_the_start_falls_on_a_multiple_of_the_step() {
        let p = Plan::new(1003.0, 1003.0 + 86400.0, 100_000, DEFAULT_SCRAPE_INTERVAL);
        assert_eq!(p.step, (86400.0_f64 / 499.0).ceil() as u64);
        assert_eq!(p.start % p.step as f64, 0.0);
        assert!(p.start <= 1003.0 && 1003.0 - p.start < p.step as f64);
        // A range shorter than a second still has a whole-second step.
        assert_eq!(plan(0.0, 500).step, 1);
    }

    #[test]
    fn label_values_are_escaped_for_the_regex_and_the_string() {
        let pods = vec!["a.b".to_owned(), r#"c"d\e"#.to_owned(), "f|g".to_owned()];
        assert_eq!(pod_regex(&pods), r#"a\.b|c"d\\e|f\|g"#);
        assert_eq!(
            promql_string(&pod_regex(&pods)),
            r#""a\\.b|c\"d\\\\e|f\\|g""#
        );
        assert_eq!(promql_string("x\ny\u{1}"), r#""x\ny\u0001""#);
    }

    #[test]
    fn cpu_counts_containers_only_and_network_each_interface_once() {
        let p = plan(3600.0, 500);
        let pods = vec!["demo-trainer-0".to_owned(), "demo-ps-0".to_owned()];
        assert_eq!(
            pod_query(ResourceMetric::Cpu, "pc-acme", &pod_regex(&pods), &p),
            r#"sum by (pod) (rate(container_cpu_usage_seconds_total{namespace="pc-acme",pod=~"demo-trainer-0|demo-ps-0",container!="",container!="POD"}[60s]))"#
        );
        assert_eq!(
            pod_query(ResourceMetric::NetRx, "pc-acme", &pod_regex(&pods), &p),
            r#"sum by (pod) (max by (pod, interface) (rate(container_network_receive_bytes_total{namespace="pc-acme",pod=~"demo-trainer-0|demo-ps-0"}[60s])))"#
        );
        assert_eq!(
            pod_query(ResourceMetric::GpuMemory, "pc-acme", &pod_regex(&pods), &p),
            r#"sum by (pod) (DCGM_FI_DEV_FB_USED{namespace="pc-acme",pod=~"demo-trainer-0|demo-ps-0"}) * 1048576"#
        );
    }

    #[test]
    fn go_spellings_of_special_values_parse() {
        assert!(parse_value("NaN").unwrap().is_nan());
        assert_eq!(parse_value("+Inf"), Some(f64::INFINITY));
        assert_eq!(parse_value("-Inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_value("1.5e+09"), Some(1.5e9));
        assert_eq!(parse_value("fast"), None);
    }

    #[test]
    fn urls_without_http_or_a_host_are_refused_and_credentials_are_not_shown() {
        assert!(Prometheus::new("ftp://x").is_err());
        assert!(Prometheus::new("not a url").is_err());
        assert!(Prometheus::new("http://x/?q=1").is_err());
        let p = Prometheus::new("http://user:secret@prom.monitoring:9090/prefix").unwrap();
        assert_eq!(p.url(), "http://prom.monitoring:9090/prefix");
        assert_eq!(
            p.endpoint("api/v1/query_range").unwrap().as_str(),
            "http://user:secret@prom.monitoring:9090/prefix/api/v1/query_range"
        );
    }
}
