//! PaddleBoard's page state (all of it in the URL) and the data its charts
//! draw: per tag, one series per chosen job, as envelopes.

use serde::{Deserialize, Serialize};

use super::metrics::json_float;
use super::url::encode;

/// Charts a page shows at most; the rest are counted, and narrowing the tag
/// filter brings them in.
pub const MAX_CHARTS: usize = 24;
/// Jobs a page compares at most.
pub const MAX_BOARD_JOBS: usize = 10;
/// The chart's drawing size in SVG pixels (CSS scales it to the page).
pub const CHART_WIDTH: u32 = 640;
/// See [`CHART_WIDTH`].
pub const CHART_HEIGHT: u32 = 300;
/// The plot area's width in those pixels: the chart less its margins and y
/// labels (`components::chart` draws it so; a test there checks). An
/// envelope of this many buckets has one per pixel column the lines cross.
pub const PLOT_WIDTH: u32 = CHART_WIDTH - 74;

/// What the x axis shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum XAxis {
    /// Training step.
    #[default]
    Step,
    /// Seconds since the series' first point.
    Relative,
    /// Clock time (UTC).
    Wall,
}

impl XAxis {
    /// The URL's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            XAxis::Step => "step",
            XAxis::Relative => "relative",
            XAxis::Wall => "wall",
        }
    }

    /// Reads the URL's spelling (anything else: steps).
    pub fn parse(s: &str) -> Self {
        match s {
            "relative" => XAxis::Relative,
            "wall" => XAxis::Wall,
            _ => XAxis::Step,
        }
    }

    /// What the axis is called under the chart.
    pub fn label(self) -> &'static str {
        match self {
            XAxis::Step => "Step",
            XAxis::Relative => "Relative time",
            XAxis::Wall => "Wall time (UTC)",
        }
    }
}

/// Everything the page shows, as the URL says it:
/// `?job=a&job=b&tags=loss|acc&smooth=0.6&x=step&y=log&outliers=1&xmin=&xmax=`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoardView {
    /// The jobs compared.
    pub jobs: Vec<String>,
    /// A regular expression the tags must match (empty: all).
    pub tags: String,
    /// EMA weight 0–0.999 (TensorBoard's smoothing).
    pub smoothing: f64,
    /// The x axis.
    pub x: XAxis,
    /// A logarithmic y axis.
    pub log_y: bool,
    /// Scale the y axis to the 5th–95th percentile instead of all values.
    pub ignore_outliers: bool,
    /// Zoomed x range, in the x axis' units.
    pub xmin: Option<f64>,
    /// See `xmin`.
    pub xmax: Option<f64>,
}

impl Default for BoardView {
    fn default() -> Self {
        Self {
            jobs: Vec::new(),
            tags: String::new(),
            smoothing: 0.6,
            x: XAxis::Step,
            log_y: false,
            ignore_outliers: false,
            xmin: None,
            xmax: None,
        }
    }
}

fn finite(s: Option<String>) -> Option<f64> {
    s.and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite())
}

impl BoardView {
    /// Reads the URL's parameters (`all` gives every value of a repeated one).
    pub fn from_params(
        get: impl Fn(&str) -> Option<String>,
        all: impl Fn(&str) -> Vec<String>,
    ) -> Self {
        let mut jobs: Vec<String> = Vec::new();
        for job in all("job") {
            let job = job.trim().to_owned();
            if !job.is_empty() && !jobs.contains(&job) && jobs.len() < MAX_BOARD_JOBS {
                jobs.push(job);
            }
        }
        let x = get("x").map(|x| XAxis::parse(&x)).unwrap_or_default();
        // The controls' form sends the axis its zoom was made on (`zoom_x`):
        // a range of steps means nothing on a time axis.
        let zoom_axis = get("zoom_x").map_or(x, |z| XAxis::parse(&z));
        let (xmin, xmax) = match (finite(get("xmin")), finite(get("xmax"))) {
            (Some(a), Some(b)) if a < b && zoom_axis == x => (Some(a), Some(b)),
            _ => (None, None),
        };
        Self {
            jobs,
            tags: get("tags").unwrap_or_default(),
            smoothing: finite(get("smooth")).map_or(0.6, |s| s.clamp(0.0, 0.999)),
            x,
            log_y: get("y").as_deref() == Some("log"),
            ignore_outliers: get("outliers").is_some_and(|v| v == "1" || v == "on"),
            xmin,
            xmax,
        }
    }

    /// The URL's query string for this view (defaults left out).
    pub fn to_query(&self) -> String {
        let mut parts: Vec<(&str, String)> = self.jobs.iter().map(|j| ("job", j.clone())).collect();
        if !self.tags.is_empty() {
            parts.push(("tags", self.tags.clone()));
        }
        if (self.smoothing - 0.6).abs() > 1e-9 {
            parts.push((
                "smooth",
                format!("{}", (self.smoothing * 1000.0).round() / 1000.0),
            ));
        }
        if self.x != XAxis::Step {
            parts.push(("x", self.x.as_str().into()));
        }
        if self.log_y {
            parts.push(("y", "log".into()));
        }
        if self.ignore_outliers {
            parts.push(("outliers", "1".into()));
        }
        if let (Some(a), Some(b)) = (self.xmin, self.xmax) {
            parts.push(("xmin", a.to_string()));
            parts.push(("xmax", b.to_string()));
        }
        parts
            .into_iter()
            .map(|(k, v)| format!("{k}={}", encode(&v)))
            .collect::<Vec<_>>()
            .join("&")
    }

    /// `/paddleboard?…`.
    pub fn href(&self) -> String {
        let q = self.to_query();
        if q.is_empty() {
            "/paddleboard".into()
        } else {
            format!("/paddleboard?{q}")
        }
    }

    /// What the server needs to fetch (display-only choices, such as
    /// smoothing and the y axis, are left out: they only change the drawing).
    pub fn query(&self) -> BoardQuery {
        BoardQuery {
            jobs: self.jobs.clone(),
            tags: self.tags.clone(),
            x: self.x,
            xmin: self.xmin,
            xmax: self.xmax,
        }
    }
}

/// What the page asks the server for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoardQuery {
    /// The jobs.
    pub jobs: Vec<String>,
    /// Tag filter (a regular expression; empty: all).
    pub tags: String,
    /// The x axis the range is in.
    pub x: XAxis,
    /// Zoomed x range.
    pub xmin: Option<f64>,
    /// Zoomed x range.
    pub xmax: Option<f64>,
}

/// A job in the picker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BoardJob {
    /// Its name.
    pub name: String,
    /// Its status (`running`…).
    pub status: String,
    /// When it was submitted, Unix ms.
    pub created_at: i64,
    /// How many series it has.
    pub tags: u32,
}

/// One job's series on one chart, as columns (compact in the page).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoardSeries {
    /// The job.
    pub job: String,
    /// Steps.
    pub steps: Vec<i64>,
    /// Wall times, seconds.
    pub walls: Vec<f64>,
    /// Values (NaN/±Infinity as strings).
    pub values: Vec<JsonF64>,
    /// Points in the range (more than drawn when not at full resolution).
    pub total: u64,
    /// Whether every point of the range is here.
    pub full_resolution: bool,
    /// The series' first wall time, origin of the relative time axis.
    pub origin: f64,
    /// Metric alerts raised on this job's tag, marked on the chart.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alerts: Vec<AlertMark>,
}

/// A metric alert as a chart marks it: a dashed line at its step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AlertMark {
    /// The step it fired at.
    pub step: i64,
    /// What it says ("loss is above 10 at step 4: 12.5").
    pub message: String,
    /// Whether it still holds.
    pub open: bool,
}

impl BoardSeries {
    /// x of `step` on `axis`: the step, or the wall time of the first
    /// point at or after it (the last point's past the end).
    pub fn x_of_step(&self, step: i64, axis: XAxis) -> Option<f64> {
        if axis == XAxis::Step {
            return Some(step as f64);
        }
        let i = self.steps.partition_point(|s| *s < step);
        let wall = *self.walls.get(i).or(self.walls.last())?;
        Some(match axis {
            XAxis::Relative => wall - self.origin,
            _ => wall,
        })
    }
}

impl BoardSeries {
    /// `job`'s series as an envelope gives it.
    pub fn from_envelope(job: String, e: super::metrics::SeriesEnvelope) -> Self {
        Self {
            job,
            steps: e.points.iter().map(|p| p.step).collect(),
            walls: e.points.iter().map(|p| p.wall_time).collect(),
            values: e.points.iter().map(|p| JsonF64(p.value)).collect(),
            total: e.total,
            full_resolution: e.full_resolution,
            origin: e.origin.unwrap_or(0.0),
            alerts: Vec::new(),
        }
    }
}

/// An `f64` that keeps NaN and ±Infinity through JSON.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct JsonF64(#[serde(with = "json_float")] pub f64);

/// One tag's chart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoardChart {
    /// The tag.
    pub tag: String,
    /// One per chosen job that has the tag.
    pub series: Vec<BoardSeries>,
}

/// The page's data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Board {
    /// The charts, by tag.
    pub charts: Vec<BoardChart>,
    /// Tags matching the filter in all (more than `charts` when capped).
    pub matching_tags: usize,
    /// Why the tag filter was not used, if it was bad.
    pub filter_error: Option<String>,
}

/// TensorBoard's smoothing: an exponential moving average with bias
/// correction (so the start is not dragged towards zero). Non-finite values
/// pass through unsmoothed and do not disturb the average.
pub fn smooth(values: &[f64], weight: f64) -> Vec<f64> {
    let weight = weight.clamp(0.0, 0.999);
    let mut last = 0.0;
    let mut n = 0i32;
    values
        .iter()
        .map(|&v| {
            if !v.is_finite() {
                return v;
            }
            last = last * weight + (1.0 - weight) * v;
            n += 1;
            let debias = 1.0 - weight.powi(n);
            if debias == 0.0 {
                v
            } else {
                last / debias
            }
        })
        .collect()
}

/// The y range to draw: all finite values, or (ignoring outliers) the 5th to
/// 95th percentile with a margin. `None` when there is nothing finite.
pub fn y_range<'a>(
    values: impl Iterator<Item = &'a f64>,
    ignore_outliers: bool,
) -> Option<(f64, f64)> {
    let finite = values.copied().filter(|v| v.is_finite());
    let (lo, hi) = if ignore_outliers {
        let mut v: Vec<f64> = finite.collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        if v.len() >= 20 {
            let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
            (at(0.05), at(0.95))
        } else {
            (v[0], v[v.len() - 1])
        }
    } else {
        // All values: one pass, no sort (a comparison of 100 runs draws
        // some 100,000 points).
        finite.fold(None, |range: Option<(f64, f64)>, v| {
            Some(range.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v))))
        })?
    };
    let pad = if hi > lo {
        (hi - lo) * 0.05
    } else {
        lo.abs().max(1.0) * 0.05
    };
    Some((lo - pad, hi + pad))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(q: &str) -> BoardView {
        let pairs: Vec<(String, String)> = q
            .split('&')
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.replace("%7C", "|")))
            .collect();
        BoardView::from_params(
            |k| pairs.iter().find(|(a, _)| a == k).map(|(_, v)| v.clone()),
            |k| {
                pairs
                    .iter()
                    .filter(|(a, _)| a == k)
                    .map(|(_, v)| v.clone())
                    .collect()
            },
        )
    }

    #[test]
    fn the_url_holds_the_whole_view_and_round_trips() {
        let v = view(
            "job=a&job=b&job=a&tags=loss%7Cacc&smooth=0.9&x=wall&y=log&outliers=1&xmin=5&xmax=10",
        );
        assert_eq!(v.jobs, ["a", "b"]);
        assert_eq!(v.tags, "loss|acc");
        assert_eq!(
            (v.smoothing, v.x, v.log_y, v.ignore_outliers),
            (0.9, XAxis::Wall, true, true)
        );
        assert_eq!((v.xmin, v.xmax), (Some(5.0), Some(10.0)));
        assert_eq!(
            v.to_query(),
            "job=a&job=b&tags=loss%7Cacc&smooth=0.9&x=wall&y=log&outliers=1&xmin=5&xmax=10"
        );
        let d = view("");
        assert_eq!(d, BoardView::default());
        assert_eq!(d.href(), "/paddleboard");
        // A backwards or half range is no zoom.
        assert_eq!(view("xmin=10&xmax=5").xmin, None);
        // The controls changed the axis under a zoom: the zoom goes.
        assert_eq!(view("x=wall&zoom_x=step&xmin=5&xmax=10").xmin, None);
        assert_eq!(view("x=wall&zoom_x=wall&xmin=5&xmax=10").xmin, Some(5.0));
        assert_eq!(view("smooth=7").smoothing, 0.999);
    }

    #[test]
    fn smoothing_is_tensorboards_debiased_ema() {
        let s = smooth(&[1.0, 1.0, 1.0], 0.6);
        assert!(
            s.iter().all(|v| (v - 1.0).abs() < 1e-12),
            "a constant stays put: {s:?}"
        );
        let s = smooth(&[0.0, 10.0], 0.5);
        // last = 0 → 5 ; debias 1-0.25 → 6.666…
        assert!((s[1] - 20.0 / 3.0).abs() < 1e-12, "{s:?}");
        let s = smooth(&[1.0, f64::NAN, 3.0], 0.0);
        assert_eq!(s[0], 1.0);
        assert!(s[1].is_nan());
        assert_eq!(s[2], 3.0);
    }

    #[test]
    fn ignoring_outliers_scales_to_the_bulk_of_the_values() {
        let mut v: Vec<f64> = (0..100).map(|i| i as f64 / 100.0).collect();
        v.push(1000.0);
        let (_, hi) = y_range(v.iter(), false).unwrap();
        assert!(hi > 1000.0);
        let (_, hi) = y_range(v.iter(), true).unwrap();
        assert!(hi < 1.1, "{hi}");
        assert_eq!(y_range([f64::NAN].iter(), false), None);
    }
}
