//! Serving: a trained model answering predict calls over HTTP, as N
//! replicas behind one endpoint. What is launched ([`ServingSpec`]), what the
//! table shows ([`ServingInstance`]), and the traffic measured at the
//! endpoint ([`TrafficPoint`]).

use serde::{Deserialize, Serialize};

use super::jobs::{EnvVar, ReplicaResources, ResourceTotals, RESERVED_ENV};
use super::names::validate_job_name;
pub use super::serving_tracks::MAX_SERVING_REPLICAS;
use super::serving_tracks::{Canary, Release, Shadow, Track, TrackView};
use crate::error::AppError;

/// Traffic is counted in buckets of this many seconds.
pub const TRAFFIC_BUCKET_SECS: f64 = 5.0;

/// Scaling with load (a HorizontalPodAutoscaler on Kubernetes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Autoscale {
    /// Fewest replicas.
    #[cfg_attr(feature = "ssr", schema(minimum = 1, maximum = 64))]
    pub min: u32,
    /// Most replicas.
    #[cfg_attr(feature = "ssr", schema(minimum = 1, maximum = 64))]
    pub max: u32,
    /// Average CPU use, percent of the request, that adds or removes replicas.
    #[cfg_attr(feature = "ssr", schema(minimum = 1, maximum = 100))]
    pub cpu_percent: u32,
}

/// What launching a serving instance takes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ServingSpec {
    /// DNS-1123 label, unique among the account's instances.
    #[cfg_attr(
        feature = "ssr",
        schema(pattern = r"^[a-z]([a-z0-9-]{0,48}[a-z0-9])?$")
    )]
    pub name: String,
    /// The model: `name` (this account's) or `owner/name`.
    #[cfg_attr(feature = "ssr", schema(min_length = 1))]
    pub model: String,
    /// Its version; `None` serves the newest ready one.
    #[serde(default)]
    #[cfg_attr(feature = "ssr", schema(minimum = 1))]
    pub version: Option<u32>,
    /// A `.tar.gz` inside the version to unpack and serve, instead of the
    /// version's files as they are.
    #[serde(default)]
    pub file: String,
    /// A Python serving script (`load(model_dir)`, `predict(state, inputs)`);
    /// empty: the predictor as exported.
    #[serde(default)]
    #[cfg_attr(feature = "ssr", schema(max_length = 262144))]
    pub script: String,
    /// The program to run instead of the default predict server.
    #[serde(default)]
    pub command: Vec<String>,
    /// Container image (Kubernetes).
    #[serde(default)]
    pub image: String,
    /// Extra environment for every replica.
    #[serde(default)]
    pub env: Vec<EnvVar>,
    /// Replicas to run (with autoscaling: to start with).
    #[cfg_attr(feature = "ssr", schema(minimum = 1, maximum = 64))]
    pub replicas: u32,
    /// What each replica asks for.
    pub resources: ReplicaResources,
    /// Scale with CPU load between bounds.
    #[serde(default)]
    pub autoscale: Option<Autoscale>,
    /// The environment its replicas run in (`name`, `owner/name`, either
    /// with `:version`); the console records the exact version it took.
    /// Locally the predict server runs in that environment's Python (which
    /// must have paddlepaddle); on Kubernetes its image runs the replicas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
    /// What that environment holds, as the console resolved it. Set by the
    /// console, never from what a client sends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment_use: Option<crate::models::environments::EnvironmentUse>,
    /// A second version answering a share of the calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary: Option<Canary>,
    /// A version getting a copy of a share of the calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shadow: Option<Shadow>,
    /// The account's secrets its replicas (every track's) get, by name, as
    /// variables or files (see `models::secrets`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "ssr", schema(max_items = 20))]
    pub secrets: Vec<crate::models::secrets::SecretUse>,
}

/// What a canary's and a shadow's Kubernetes objects add to the instance's
/// name: no instance's own name may end so.
pub const TRACK_SUFFIXES: [&str; 2] = ["-canary", "-shadow"];

/// The longest serving script, bytes (it travels in the spec and, on
/// Kubernetes, in a ConfigMap).
pub const MAX_SCRIPT_BYTES: usize = 256 * 1024;

/// Variables the console sets for every serving replica.
pub const SERVING_ENV: &[&str] = &[
    "PORT",
    "HOST",
    "PADDLECLOUD_MODEL_DIR",
    "PADDLECLOUD_SERVING_SCRIPT",
    "PADDLECLOUD_SERVING_THREADS",
];

impl ServingSpec {
    /// Checks every field; the error names the field at fault.
    pub fn validate(&self) -> Result<(), AppError> {
        validate_job_name(&self.name).map_err(|e| {
            let message = e
                .to_string()
                .replace("A job name", "A serving name")
                .replace("the job", "the instance");
            AppError::invalid("name", message)
        })?;
        if self.model.trim().is_empty() {
            return Err(AppError::invalid("model", "Choose the model to serve."));
        }
        if self.version == Some(0) {
            return Err(AppError::invalid("version", "Versions start at 1."));
        }
        if !self.file.is_empty() {
            crate::models::validate_path(&self.file)
                .map_err(|_| AppError::invalid("file", "Give a path inside the model version."))?;
            if !(self.file.ends_with(".tar.gz") || self.file.ends_with(".tgz")) {
                return Err(AppError::invalid(
                    "file",
                    "The model file must be a .tar.gz (or .tgz) archive.",
                ));
            }
        }
        if self.script.len() > MAX_SCRIPT_BYTES {
            return Err(AppError::invalid(
                "script",
                "The serving script is at most 256 KiB.",
            ));
        }
        if self.command.first().is_some_and(|c| c.trim().is_empty()) {
            return Err(AppError::invalid(
                "command",
                "The command's program is empty.",
            ));
        }
        super::jobs::validate_env(&self.env, |name| {
            SERVING_ENV.contains(&name) || RESERVED_ENV.contains(&name)
        })?;
        crate::models::secrets::validate_secret_uses(&self.secrets, |name| {
            SERVING_ENV.contains(&name)
                || RESERVED_ENV.contains(&name)
                || name.starts_with("PADDLECLOUD_")
                || self.env.iter().any(|e| e.name == name)
        })?;
        check_replicas("replicas", self.replicas)?;
        if let Some(a) = self.autoscale {
            a.validate()?;
        }
        if let Some(c) = self.canary {
            c.validate()?;
        }
        if let Some(s) = self.shadow {
            s.validate()?;
        }
        if TRACK_SUFFIXES.iter().any(|s| self.name.ends_with(s)) {
            return Err(AppError::invalid(
                "name",
                "A serving name cannot end in “-canary” or “-shadow”: its canary and shadow \
                 replicas are named so.",
            ));
        }
        self.resources.totals("resources").map(|_| ())
    }

    /// The alias the main track follows (`model@production`), if any.
    pub fn alias(&self) -> Option<&str> {
        self.model.split_once('@').map(|(_, a)| a)
    }

    /// Its tracks as its page shows them, the main one serving `main`.
    pub fn tracks(&self, main: u32) -> Vec<TrackView> {
        let canary = self.canary.map_or(0, |c| c.percent);
        let mut out = vec![TrackView {
            track: Track::Main,
            version: main,
            percent: 100 - canary,
            replicas: self.replicas,
        }];
        if let Some(c) = self.canary {
            out.push(TrackView {
                track: Track::Canary,
                version: c.version,
                percent: c.percent,
                replicas: c.replicas,
            });
        }
        if let Some(s) = self.shadow {
            out.push(TrackView {
                track: Track::Shadow,
                version: s.version,
                percent: s.percent,
                replicas: s.replicas,
            });
        }
        out
    }

    /// What one replica asks for.
    pub fn per_replica(&self) -> Result<ResourceTotals, AppError> {
        self.resources.totals("resources")
    }

    /// What the instance may ask for at most: every replica it runs, or the
    /// autoscaler's upper bound.
    pub fn totals(&self) -> Result<ResourceTotals, AppError> {
        let n = self
            .autoscale
            .map_or(self.replicas, |a| a.max.max(self.replicas))
            + self.canary.map_or(0, |c| c.replicas)
            + self.shadow.map_or(0, |s| s.replicas);
        Ok(ResourceTotals::default().add_times(self.per_replica()?, n))
    }
}

fn check_replicas(field: &str, n: u32) -> Result<(), AppError> {
    if n == 0 {
        return Err(AppError::invalid(
            field,
            "At least one replica (stop the instance to run none).",
        ));
    }
    if n > MAX_SERVING_REPLICAS {
        return Err(AppError::invalid(
            field,
            format!("At most {MAX_SERVING_REPLICAS} replicas."),
        ));
    }
    Ok(())
}

impl Autoscale {
    /// Checks the bounds and the target.
    pub fn validate(&self) -> Result<(), AppError> {
        check_replicas("autoscale.min", self.min)?;
        check_replicas("autoscale.max", self.max)?;
        if self.max < self.min {
            return Err(AppError::invalid(
                "autoscale.max",
                "The most replicas must be at least the fewest.",
            ));
        }
        if !(1..=100).contains(&self.cpu_percent) {
            return Err(AppError::invalid(
                "autoscale.cpu_percent",
                "The CPU target is a percentage from 1 to 100.",
            ));
        }
        Ok(())
    }
}

/// A change of size: a number of replicas, or new autoscaler bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Scale {
    /// Replicas to run (ignored when `autoscale` is given).
    #[serde(default)]
    #[cfg_attr(feature = "ssr", schema(minimum = 1, maximum = 64))]
    pub replicas: Option<u32>,
    /// New autoscaler bounds.
    #[serde(default)]
    pub autoscale: Option<Autoscale>,
}

impl Scale {
    /// Applies the change to `spec`, checking it.
    pub fn apply(&self, spec: &mut ServingSpec) -> Result<(), AppError> {
        match (self.replicas, self.autoscale) {
            (_, Some(a)) => {
                a.validate()?;
                spec.replicas = spec.replicas.clamp(a.min, a.max);
                spec.autoscale = Some(a);
            }
            (Some(n), None) => {
                check_replicas("replicas", n)?;
                spec.replicas = n;
                spec.autoscale = None;
            }
            (None, None) => {
                return Err(AppError::invalid(
                    "replicas",
                    "Give a number of replicas or autoscaler bounds.",
                ))
            }
        }
        Ok(())
    }
}

/// Where a serving instance is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum ServingStatus {
    /// Replicas are starting (loading the model).
    Pending,
    /// Every replica answers.
    Ready,
    /// Some replicas answer, others are starting or restarting.
    Degraded,
    /// It cannot run (the model does not load); the message says why.
    Failed,
    /// Stopped by a user; the record stays.
    Stopped,
}

impl ServingStatus {
    /// Every status, in the filter's order.
    pub const ALL: [ServingStatus; 5] = [
        ServingStatus::Pending,
        ServingStatus::Ready,
        ServingStatus::Degraded,
        ServingStatus::Failed,
        ServingStatus::Stopped,
    ];

    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ServingStatus::Pending => "pending",
            ServingStatus::Ready => "ready",
            ServingStatus::Degraded => "degraded",
            ServingStatus::Failed => "failed",
            ServingStatus::Stopped => "stopped",
        }
    }

    /// Reads [`ServingStatus::as_str`]'s spelling.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// Shown in the table.
    pub fn label(self) -> &'static str {
        match self {
            ServingStatus::Pending => "Pending",
            ServingStatus::Ready => "Ready",
            ServingStatus::Degraded => "Degraded",
            ServingStatus::Failed => "Failed",
            ServingStatus::Stopped => "Stopped",
        }
    }

    /// Whether it still runs (or tries to).
    pub fn is_active(self) -> bool {
        !matches!(self, ServingStatus::Failed | ServingStatus::Stopped)
    }

    /// The status of an active instance with `ready` of `wanted` replicas answering.
    pub fn of_replicas(ready: u32, wanted: u32) -> Self {
        if ready == 0 {
            ServingStatus::Pending
        } else if ready >= wanted {
            ServingStatus::Ready
        } else {
            ServingStatus::Degraded
        }
    }
}

impl ServingSpec {
    /// This spec after `release`, for an instance whose main track serves
    /// `main`, and the main version it serves then.
    pub fn released(&self, release: &Release, main: u32) -> Result<(ServingSpec, u32), AppError> {
        let spec = self;
        let mut next = spec.clone();
        let mut version = main;
        let same = |field: &str, v: u32| {
            if v == main {
                Err(AppError::invalid(
                    field,
                    format!("The main track serves v{v} already: choose another version."),
                ))
            } else {
                Ok(())
            }
        };
        match *release {
            Release::Canary(c) => {
                c.validate()?;
                same("canary.version", c.version)?;
                next.canary = Some(c);
            }
            Release::Shadow(s) => {
                s.validate()?;
                same("shadow.version", s.version)?;
                next.shadow = Some(s);
            }
            Release::Promote => {
                let c = spec.canary.ok_or_else(no_canary)?;
                version = c.version;
                next.canary = None;
                next.version = Some(c.version);
            }
            Release::Rollback => {
                spec.canary.ok_or_else(no_canary)?;
                next.canary = None;
            }
            Release::EndShadow => {
                spec.shadow.ok_or_else(|| {
                    AppError::conflict("action", "This instance has no shadow to end.")
                })?;
                next.shadow = None;
            }
        }
        Ok((next, version))
    }
}

fn no_canary() -> AppError {
    AppError::conflict("action", "This instance has no canary: start one first.")
}

/// The calls one version got over a range, for charts side by side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct VersionTraffic {
    /// The version.
    pub version: u32,
    /// Whether these were shadow calls (copies whose answers went nowhere).
    pub shadow: bool,
    /// Buckets with calls, oldest first.
    pub points: Vec<TrafficPoint>,
}

/// Requests in one bucket of time, measured where every request passes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct TrafficPoint {
    /// Bucket start, Unix seconds.
    pub t: f64,
    /// Bucket length, seconds.
    pub secs: f64,
    /// Requests answered.
    pub requests: u64,
    /// Of which failed (5xx, or no replica reachable).
    pub errors: u64,
    /// Latency percentiles, ms.
    pub p50_ms: f64,
    /// 90th percentile, ms.
    pub p90_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
}

impl TrafficPoint {
    /// Requests per second.
    pub fn qps(&self) -> f64 {
        if self.secs > 0.0 {
            self.requests as f64 / self.secs
        } else {
            0.0
        }
    }

    /// Failed requests, percent.
    pub fn error_percent(&self) -> f64 {
        if self.requests == 0 {
            0.0
        } else {
            100.0 * self.errors as f64 / self.requests as f64
        }
    }
}

/// One serving instance as the table shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ServingInstance {
    /// Its name.
    pub name: String,
    /// The model, `owner/name`.
    pub model: String,
    /// The version served.
    pub version: u32,
    /// The launch's spec, with the current size.
    pub spec: ServingSpec,
    /// Where it is in its life.
    pub status: ServingStatus,
    /// Why it failed, or what it waits for.
    pub message: String,
    /// Replicas answering now.
    pub ready: u32,
    /// Where requests go: the console's path (`/serving/<account>/<name>`).
    pub endpoint: String,
    /// Where it runs (`local`, or the Kubernetes cluster's name).
    pub cluster: String,
    /// Who launched it (email).
    pub created_by: String,
    /// Unix ms.
    pub created_at: i64,
    /// When it stopped or failed, Unix ms.
    pub ended_at: Option<i64>,
    /// The last minute's traffic, when there was some.
    pub recent: Option<TrafficPoint>,
    /// Its tracks: the main one, and a canary or shadow when it has them.
    #[serde(default)]
    pub tracks: Vec<TrackView>,
}

/// The account's serving instances.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ServingList {
    /// Newest first.
    pub instances: Vec<ServingInstance>,
    /// The server's clock, Unix ms (ages are computed from it).
    pub now: i64,
}

/// One instance's traffic over a range.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ServingTraffic {
    /// The instance.
    pub instance: ServingInstance,
    /// Buckets with requests in `[from, to]`, oldest first; buckets are merged
    /// so there are at most about [`crate::models::RESOURCE_CHART_POINTS`].
    pub points: Vec<TrafficPoint>,
    /// Range start, Unix s.
    pub from: f64,
    /// Range end, Unix s.
    pub to: f64,
    /// The same calls by version (and the shadow's copies), for the
    /// versions that had any in the range.
    #[serde(default)]
    pub versions: Vec<VersionTraffic>,
}

/// Merges consecutive buckets so at most `max` remain: requests and errors
/// add up; percentiles are the request-weighted mean of the buckets' (an
/// approximation, marked as such on the chart), p99 the worst of them.
pub fn merge_traffic(points: &[TrafficPoint], max: usize) -> Vec<TrafficPoint> {
    if points.len() <= max || max == 0 {
        return points.to_vec();
    }
    let per = points.len().div_ceil(max);
    points
        .chunks(per)
        .map(|chunk| {
            let requests: u64 = chunk.iter().map(|p| p.requests).sum();
            let w = |f: fn(&TrafficPoint) -> f64| {
                if requests == 0 {
                    0.0
                } else {
                    chunk.iter().map(|p| f(p) * p.requests as f64).sum::<f64>() / requests as f64
                }
            };
            TrafficPoint {
                t: chunk[0].t,
                secs: chunk.iter().map(|p| p.secs).sum(),
                requests,
                errors: chunk.iter().map(|p| p.errors).sum(),
                p50_ms: w(|p| p.p50_ms),
                p90_ms: w(|p| p.p90_ms),
                p99_ms: chunk.iter().map(|p| p.p99_ms).fold(0.0, f64::max),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> ServingSpec {
        ServingSpec {
            name: "mnist".into(),
            model: "mnist".into(),
            version: None,
            file: String::new(),
            script: String::new(),
            command: vec![],
            image: String::new(),
            env: vec![],
            replicas: 2,
            resources: ReplicaResources {
                cpu: "500m".into(),
                memory: "1Gi".into(),
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

    #[test]
    fn a_spec_totals_every_replica_or_the_autoscalers_upper_bound() {
        let mut s = spec();
        assert_eq!(s.totals().unwrap().cpu_millis, 1000);
        s.autoscale = Some(Autoscale {
            min: 1,
            max: 5,
            cpu_percent: 70,
        });
        assert_eq!(s.totals().unwrap().cpu_millis, 2500);
        assert_eq!(s.totals().unwrap().memory_bytes, 5 << 30);
    }

    #[test]
    fn bad_fields_are_named_in_the_error() {
        let field = |f: fn(&mut ServingSpec)| {
            let mut s = spec();
            f(&mut s);
            s.validate().unwrap_err().field().map(str::to_owned)
        };
        assert_eq!(
            field(|s| s.name = "Bad Name".into()).as_deref(),
            Some("name")
        );
        assert_eq!(field(|s| s.model = " ".into()).as_deref(), Some("model"));
        assert_eq!(field(|s| s.replicas = 0).as_deref(), Some("replicas"));
        assert_eq!(field(|s| s.replicas = 65).as_deref(), Some("replicas"));
        assert_eq!(field(|s| s.file = "m.zip".into()).as_deref(), Some("file"));
        assert_eq!(
            field(|s| s.resources.cpu = "lots".into()).as_deref(),
            Some("resources.cpu")
        );
        assert_eq!(
            field(|s| s.env = vec![EnvVar {
                name: "PORT".into(),
                value: "1".into()
            }])
            .as_deref(),
            Some("env")
        );
        assert_eq!(
            field(|s| s.autoscale = Some(Autoscale {
                min: 3,
                max: 2,
                cpu_percent: 50
            }))
            .as_deref(),
            Some("autoscale.max")
        );
        assert!(spec().validate().is_ok());
    }

    #[test]
    fn scaling_sets_replicas_or_bounds_and_keeps_replicas_within_them() {
        let mut s = spec();
        Scale {
            replicas: Some(4),
            autoscale: None,
        }
        .apply(&mut s)
        .unwrap();
        assert_eq!(s.replicas, 4);
        Scale {
            replicas: None,
            autoscale: Some(Autoscale {
                min: 1,
                max: 3,
                cpu_percent: 60,
            }),
        }
        .apply(&mut s)
        .unwrap();
        assert_eq!((s.replicas, s.autoscale.unwrap().max), (3, 3));
        let none = Scale {
            replicas: None,
            autoscale: None,
        };
        assert_eq!(none.apply(&mut s).unwrap_err().field(), Some("replicas"));
    }

    #[test]
    fn merged_traffic_adds_requests_and_weights_percentiles_by_requests() {
        let p = |t: f64, requests: u64, p50: f64, p99: f64| TrafficPoint {
            t,
            secs: 5.0,
            requests,
            errors: requests / 10,
            p50_ms: p50,
            p90_ms: p50,
            p99_ms: p99,
        };
        let merged = merge_traffic(&[p(0.0, 30, 10.0, 20.0), p(5.0, 10, 50.0, 90.0)], 1);
        assert_eq!(merged.len(), 1);
        let m = merged[0];
        assert_eq!((m.requests, m.errors, m.secs), (40, 4, 10.0));
        assert_eq!(m.p50_ms, 20.0);
        assert_eq!(m.p99_ms, 90.0);
        assert_eq!(m.qps(), 4.0);
        assert_eq!(m.error_percent(), 10.0);
    }

    #[test]
    fn promoting_makes_the_canary_the_main_version_and_ends_it() {
        let mut spec: ServingSpec = serde_json::from_value(serde_json::json!({
            "name": "api", "model": "echo@production", "replicas": 2,
            "resources": {"cpu": "1", "memory": "1Gi", "gpu": 0}
        }))
        .unwrap();
        spec.canary = Some(Canary {
            version: 3,
            percent: 10,
            replicas: 1,
        });
        let (next, main) = spec.released(&Release::Promote, 2).unwrap();
        assert_eq!((main, next.canary, next.version), (3, None, Some(3)));
        let (next, main) = spec.released(&Release::Rollback, 2).unwrap();
        assert_eq!((main, next.canary), (2, None));
        let err = next.released(&Release::Promote, 2).unwrap_err();
        assert_eq!(err.field(), Some("action"));
        assert_eq!(spec.tracks(2)[0].percent, 90);
        assert_eq!(spec.alias(), Some("production"));
    }

    #[test]
    fn readiness_of_replicas_gives_the_status() {
        assert_eq!(ServingStatus::of_replicas(0, 2), ServingStatus::Pending);
        assert_eq!(ServingStatus::of_replicas(1, 2), ServingStatus::Degraded);
        assert_eq!(ServingStatus::of_replicas(2, 2), ServingStatus::Ready);
    }
}
