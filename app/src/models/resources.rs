//! What a job's replicas use over time: CPU, memory, GPU, network and disk,
//! sampled per pod (the local executor from `/proc`, Kubernetes from
//! Prometheus), and the charts' query of it.

use serde::{Deserialize, Serialize};

/// One measured quantity of a pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ResourceMetric {
    /// Cores in use (1.0 = one core busy).
    Cpu,
    /// Resident memory, bytes.
    Memory,
    /// GPU utilisation, percent (summed over the pod's GPUs).
    GpuUtil,
    /// GPU memory in use, bytes.
    GpuMemory,
    /// Network received, bytes/s.
    NetRx,
    /// Network sent, bytes/s.
    NetTx,
    /// Disk read, bytes/s.
    DiskRead,
    /// Disk written, bytes/s.
    DiskWrite,
}

impl ResourceMetric {
    /// Every metric, in the order the page charts them.
    pub const ALL: [ResourceMetric; 8] = [
        ResourceMetric::Cpu,
        ResourceMetric::Memory,
        ResourceMetric::GpuUtil,
        ResourceMetric::GpuMemory,
        ResourceMetric::NetRx,
        ResourceMetric::NetTx,
        ResourceMetric::DiskRead,
        ResourceMetric::DiskWrite,
    ];

    /// The stored and URL spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ResourceMetric::Cpu => "cpu",
            ResourceMetric::Memory => "memory",
            ResourceMetric::GpuUtil => "gpu_util",
            ResourceMetric::GpuMemory => "gpu_memory",
            ResourceMetric::NetRx => "net_rx",
            ResourceMetric::NetTx => "net_tx",
            ResourceMetric::DiskRead => "disk_read",
            ResourceMetric::DiskWrite => "disk_write",
        }
    }

    /// Reads [`ResourceMetric::as_str`]'s spelling.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str() == s)
    }

    /// The chart's title.
    pub fn title(self) -> &'static str {
        match self {
            ResourceMetric::Cpu => "CPU (cores)",
            ResourceMetric::Memory => "Memory",
            ResourceMetric::GpuUtil => "GPU utilisation (%)",
            ResourceMetric::GpuMemory => "GPU memory",
            ResourceMetric::NetRx => "Network received (per second)",
            ResourceMetric::NetTx => "Network sent (per second)",
            ResourceMetric::DiskRead => "Disk read (per second)",
            ResourceMetric::DiskWrite => "Disk written (per second)",
        }
    }

    /// Whether values are bytes (shown as KiB/MiB/GiB).
    pub fn is_bytes(self) -> bool {
        !matches!(self, ResourceMetric::Cpu | ResourceMetric::GpuUtil)
    }
}

/// What one pod used at one moment. Rates are averages since the previous
/// sample; GPU values are `None` where the pod has no GPU (or no GPU can be
/// seen), which the charts show as "no GPU", not as zero.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct PodUsage {
    /// Cores in use.
    pub cpu: f64,
    /// Resident bytes.
    pub memory: f64,
    /// GPU utilisation, percent.
    pub gpu_util: Option<f64>,
    /// GPU memory, bytes.
    pub gpu_memory: Option<f64>,
    /// Received, bytes/s.
    pub net_rx: f64,
    /// Sent, bytes/s.
    pub net_tx: f64,
    /// Read from disk, bytes/s.
    pub disk_read: f64,
    /// Written to disk, bytes/s.
    pub disk_write: f64,
}

impl PodUsage {
    /// The value of `metric`.
    pub fn get(&self, metric: ResourceMetric) -> Option<f64> {
        match metric {
            ResourceMetric::Cpu => Some(self.cpu),
            ResourceMetric::Memory => Some(self.memory),
            ResourceMetric::GpuUtil => self.gpu_util,
            ResourceMetric::GpuMemory => self.gpu_memory,
            ResourceMetric::NetRx => Some(self.net_rx),
            ResourceMetric::NetTx => Some(self.net_tx),
            ResourceMetric::DiskRead => Some(self.disk_read),
            ResourceMetric::DiskWrite => Some(self.disk_write),
        }
    }
}

/// One sample of one pod.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct PodSample {
    /// The pod, e.g. `trainer-0`.
    pub pod: String,
    /// When, Unix seconds.
    pub t: f64,
    /// What it used.
    pub usage: PodUsage,
}

/// One pod's line on one chart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct PodSeries {
    /// The pod, e.g. `trainer-0`.
    pub pod: String,
    /// Unix seconds, ascending.
    pub ts: Vec<f64>,
    /// The value at each time (the bucket's mean for long ranges).
    pub values: Vec<f64>,
}

/// Where a job's resource numbers come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum MetricsSource {
    /// The local executor samples each replica's process tree from `/proc`.
    Sampler {
        /// Seconds between samples.
        every_secs: u32,
    },
    /// A Prometheus server (cAdvisor and DCGM exporter series).
    Prometheus {
        /// Its address.
        url: String,
    },
    /// The cluster's metrics API (`metrics.k8s.io`, metrics-server),
    /// sampled into the console's database: CPU and memory only.
    MetricsApi {
        /// Seconds between samples.
        every_secs: u32,
    },
    /// Nothing measures this job's pods; `why` says what to configure.
    None {
        /// In a user's words.
        why: String,
    },
}

impl MetricsSource {
    /// Whether this source measures `metric` at all (so a chart of it
    /// would not be a flat line of nothing).
    pub fn measures(&self, metric: ResourceMetric) -> bool {
        match self {
            Self::Sampler { .. } | Self::Prometheus { .. } => true,
            Self::MetricsApi { .. } => {
                matches!(metric, ResourceMetric::Cpu | ResourceMetric::Memory)
            }
            Self::None { .. } => false,
        }
    }

    /// Where the charts come from, in a user's words.
    pub fn describe(&self) -> String {
        match self {
            Self::Sampler { every_secs } => format!("Sampled from /proc every {every_secs} s"),
            Self::Prometheus { url } => format!("From Prometheus at {url}"),
            Self::MetricsApi { every_secs } => format!(
                "From the cluster's metrics API (metrics.k8s.io) every {every_secs} s: CPU and \
                 memory only (start the console with --prometheus-url for GPU, network and disk)"
            ),
            Self::None { why } => why.clone(),
        }
    }
}

/// One metric of one role's pods, with what each pod requested of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ResourceChart {
    /// What is charted.
    pub metric: ResourceMetric,
    /// Whose pods.
    pub role: super::JobRole,
    /// What each of these pods requested, in the metric's unit, where the
    /// spec says (CPU cores, memory bytes).
    pub requested: Option<f64>,
    /// One line per pod.
    pub series: Vec<PodSeries>,
}

/// A job's resource charts over a time range.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct JobResources {
    /// The job's name.
    pub job: String,
    /// Whether it still runs (the page refreshes while it does).
    pub live: bool,
    /// Where the numbers come from.
    pub source: MetricsSource,
    /// The range shown, Unix seconds.
    pub from: f64,
    /// See `from`.
    pub to: f64,
    /// Every metric of every role that has pods, in [`ResourceMetric::ALL`]
    /// order, parameter servers first.
    pub charts: Vec<ResourceChart>,
    /// How the job's replicas are held to their limits.
    pub limits: super::capacity::LimitEnforcement,
}

/// Points per line the charts ask for: about one per two pixels.
pub const RESOURCE_CHART_POINTS: u32 = 400;

/// `series` bucketed to at most `points` points between `from` and `to`
/// (the mean of each bucket), for ranges whose stored rows outnumber pixels.
pub fn downsample(
    ts: &[f64],
    values: &[f64],
    from: f64,
    to: f64,
    points: u32,
) -> (Vec<f64>, Vec<f64>) {
    if ts.len() <= points as usize || to <= from || points == 0 {
        return (ts.to_vec(), values.to_vec());
    }
    let width = (to - from) / f64::from(points);
    let (mut out_t, mut out_v) = (Vec::new(), Vec::new());
    let mut i = 0;
    while i < ts.len() {
        let bucket = ((ts[i] - from) / width).floor();
        let (mut sum_t, mut sum_v, mut n) = (0.0, 0.0, 0.0);
        while i < ts.len() && ((ts[i] - from) / width).floor() == bucket {
            sum_t += ts[i];
            sum_v += values[i];
            n += 1.0;
            i += 1;
        }
        out_t.push(sum_t / n);
        out_v.push(sum_v / n);
    }
    (out_t, out_v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn downsampling_keeps_short_series_and_averages_long_ones_per_bucket() {
        let ts: Vec<f64> = (0..10).map(f64::from).collect();
        let vs: Vec<f64> = (0..10).map(|i| f64::from(i % 2)).collect();
        assert_eq!(
            downsample(&ts, &vs, 0.0, 10.0, 20),
            (ts.clone(), vs.clone())
        );
        let (t, v) = downsample(&ts, &vs, 0.0, 10.0, 5);
        assert_eq!(t, vec![0.5, 2.5, 4.5, 6.5, 8.5]);
        assert_eq!(v, vec![0.5; 5]);
    }

    #[test]
    fn the_metrics_api_charts_cpu_and_memory_only() {
        let api = MetricsSource::MetricsApi { every_secs: 5 };
        let charted: Vec<_> = ResourceMetric::ALL
            .into_iter()
            .filter(|m| api.measures(*m))
            .collect();
        assert_eq!(charted, vec![ResourceMetric::Cpu, ResourceMetric::Memory]);
        assert!(api
            .describe()
            .contains("(metrics.k8s.io) every 5 s: CPU and memory only"));
        let sampler = MetricsSource::Sampler { every_secs: 5 };
        assert!(ResourceMetric::ALL.into_iter().all(|m| sampler.measures(m)));
    }

    #[test]
    fn every_metric_reads_back_from_its_url_spelling() {
        for m in ResourceMetric::ALL {
            assert_eq!(ResourceMetric::parse(m.as_str()), Some(m));
        }
        assert_eq!(ResourceMetric::parse("cpus"), None);
    }
}
