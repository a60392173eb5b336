//! `/jobs/:name/resources`: what each pod of a job used over time (CPU,
//! GPU, memory, network, disk), one chart per metric and role with the
//! requested amount as a line; live while the job runs. The range lives in
//! the URL (`from`, `to`: Unix seconds), so a link shows the same view.

use leptos::prelude::*;
use leptos_router::components::A;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::api::usage::resource_charts;
use crate::components::chart::{css_color, render, zero_based_frame, Line, PALETTE};
use crate::components::links::page_href;
use crate::components::live::{beside_regions, LiveRegion, Region};
use crate::components::resource::resource;
use crate::models::board::XAxis;
use crate::models::{JobRole, MetricsSource, ResourceChart, ResourceMetric};

/// Drawing size of one chart, px.
const SIZE: (u32, u32) = (560, 220);
/// The palette entry of the "requested" line.
const REQUESTED: usize = 8;

/// The divisor and unit that show `max` of `metric` in readable numbers.
fn unit(metric: ResourceMetric, max: f64) -> (f64, &'static str) {
    if !metric.is_bytes() {
        return (1.0, "");
    }
    [(1u64 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")]
        .into_iter()
        .find(|(d, _)| max >= *d as f64)
        .map_or((1.0, "B"), |(d, u)| (d as f64, u))
}

/// The chart's lines: one per pod, then the requested amount.
fn lines(chart: &ResourceChart, from: f64, to: f64) -> (Vec<Line>, &'static str) {
    let max = chart
        .series
        .iter()
        .flat_map(|s| s.values.iter().copied())
        .chain(chart.requested)
        .fold(0.0, f64::max);
    let (div, label) = unit(chart.metric, max);
    let mut out: Vec<Line> = chart
        .series
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let values: Vec<f64> = s.values.iter().map(|v| v / div).collect();
            Line {
                color: i % (PALETTE.len() - 2),
                xs: s.ts.clone(),
                raw: values.clone(),
                smoothed: values,
            }
        })
        .collect();
    if let Some(r) = chart.requested.filter(|_| !out.is_empty()) {
        out.push(Line {
            color: REQUESTED,
            xs: vec![from, to],
            raw: vec![r / div; 2],
            smoothed: vec![r / div; 2],
        });
    }
    (out, label)
}

/// The chart of `drawn` over `from`..`to` as SVG: what is charted here
/// (use, bytes, the request) is never below zero, so the axis starts at 0.
fn chart_svg(drawn: &[Line], from: f64, to: f64) -> String {
    zero_based_frame(drawn, Some((from, to)), SIZE)
        .map(|f| render(drawn, &f, XAxis::Wall, false))
        .unwrap_or_default()
}

/// One metric of one role.
#[component]
fn ResourceCard(chart: ResourceChart, from: f64, to: f64) -> impl IntoView {
    let role = match chart.role {
        JobRole::Pserver => "parameter servers",
        JobRole::Trainer => "trainers",
    };
    let (drawn, unit_label) = lines(&chart, from, to);
    let title = if unit_label.is_empty() {
        chart.metric.title().to_owned()
    } else {
        format!("{} ({unit_label})", chart.metric.title())
    };
    let svg = chart_svg(&drawn, from, to);
    let empty = chart.series.is_empty();
    let gpu = matches!(
        chart.metric,
        ResourceMetric::GpuUtil | ResourceMetric::GpuMemory
    );
    let requested = chart.requested.filter(|_| !empty).map(|r| {
        let (div, u) = unit(chart.metric, r);
        format!("requested {:.2} {u}", r / div)
    });
    view! {
        <figure class="chart-card resource" data-metric=chart.metric.as_str() data-role=chart.role.pod_prefix()>
            <figcaption>
                <strong>{title}</strong>
                <span class="muted">{format!(" · {role}")}</span>
            </figcaption>
            {if empty {
                let why = if gpu { "no GPU" } else { "no samples in this range yet" };
                view! { <p class="empty chart-empty" data-testid="no-data">{why}</p> }.into_any()
            } else {
                view! { <div class="chart-svg" inner_html=svg></div> }.into_any()
            }}
            <ul class="legend">
                {chart
                    .series
                    .iter()
                    .enumerate()
                    .map(|(i, s)| {
                        let last = s.values.last().copied().unwrap_or(0.0);
                        let (div, u) = unit(chart.metric, last);
                        view! {
                            <li data-pod=s.pod.clone()>
                                <span class="swatch" style=format!("background:{}", css_color(i % (PALETTE.len() - 2)))></span>
                                {s.pod.clone()}
                                <span class="num" data-testid="last">{format!(" {:.2} {u}", last / div)}</span>
                            </li>
                        }
                    })
                    .collect_view()}
                {requested.map(|r| view! {
                    <li class="requested"><span class="swatch" style=format!("background:{}", css_color(REQUESTED))></span>{r}</li>
                })}
            </ul>
        </figure>
    }
}

/// The range links: the whole run, the last 15 minutes and hour, zoom in
/// and out around the middle of what is shown.
#[component]
pub fn RangeBar(
    /// Range start shown, Unix s.
    from: f64,
    /// Range end shown, Unix s.
    to: f64,
    /// The page the links go to.
    page: String,
    /// What the link without a range shows ("Whole run").
    whole: &'static str,
) -> impl IntoView {
    let params = use_query_map();
    let link = move |from: Option<f64>, to: Option<f64>| {
        let f = from.map(|v| format!("{v:.0}"));
        let t = to.map(|v| format!("{v:.0}"));
        params.with_untracked(|p| page_href(&page, p, &[("from", f), ("to", t)]))
    };
    let mid = (from + to) / 2.0;
    let half = (to - from) / 2.0;
    view! {
        <nav class="range-bar" aria-label="Time range">
            <A href=link(None, None)>{whole}</A>
            <A href=link(Some(to - 900.0), None)>"Last 15 min"</A>
            <A href=link(Some(to - 3600.0), None)>"Last hour"</A>
            <A href=link(Some(mid - half / 2.0), Some(mid + half / 2.0)) attr:data-testid="zoom-in">"Zoom in"</A>
            <A href=link(Some(mid - half * 2.0), Some(mid + half * 2.0))>"Zoom out"</A>
            <span class="muted" data-testid="range" data-from=format!("{from:.0}") data-to=format!("{to:.0}")>
                {crate::models::time::format_range((from * 1000.0) as i64, (to * 1000.0) as i64)}
            </span>
        </nav>
    }
}

/// The `:name` of a chart page and its range from the URL (`from`, `to`:
/// Unix seconds; no `to` follows now).
#[allow(clippy::type_complexity)]
pub fn use_chart_route() -> (
    impl Fn() -> String + Copy + Send + Sync + 'static,
    impl Fn() -> (Option<f64>, Option<f64>) + Copy + Send + Sync + 'static,
) {
    let params = use_params_map();
    let query = use_query_map();
    let name = move || params.with(|p| p.get("name").unwrap_or_default());
    let range = move || {
        query.with(|q| {
            let read = |k: &str| q.get(k).and_then(|v| v.parse::<f64>().ok());
            (read("from"), read("to"))
        })
    };
    (name, range)
}

/// The page.
#[component]
pub fn JobResourcesPage() -> impl IntoView {
    let (name, _) = use_chart_route();
    let job = resource(name, crate::api::jobs::get_job);
    // A fixed text, not a closure over the route's params: the server reads
    // the title after the page's reactive owner may be gone (a closure then
    // panicked under concurrent requests).
    let title = format!("{} · resources", untrack(name));
    view! {
        <leptos_meta::Title text=title />
        <div class="page-head">
            <h1>{move || format!("{} · resources", name())}</h1>
            <nav class="page-links">
                <A href=move || format!("/jobs?log={}", name())>"Log"</A>
                <A href=move || format!("/paddleboard?jobs={}", name())>"PaddleBoard"</A>
                <A href="/quota">"Quota"</A>
                <A href=move || format!("/jobs/{}/template", name())>"Save as template"</A>
            </nav>
        </div>
        <Transition fallback=|| ()>
            {move || Suspend::new(async move {
                job.await.ok().map(|job| {
                    let local = (job.source == crate::models::JobSource::Local)
                        .then(|| view! { <super::local_run::LocalRunFacts name=job.name.clone() /> });
                    view! { <JobOrigin job />{local} }
                })
            })}
        </Transition>
        {move || view! { <JobCharts job=name() page=format!("/jobs/{}/resources", name()) /> }}
    }
}

/// A job's resource charts over the range in the URL (`from`, `to`), with
/// the range links to `page`; they follow the job while no `to` is set.
#[component]
pub fn JobCharts(
    /// The job.
    job: String,
    /// The page the range links go to.
    page: String,
) -> impl IntoView {
    let (_, range) = use_chart_route();
    let job = StoredValue::new(job);
    let page = StoredValue::new(page);
    let data = resource(
        move || (job.get_value(), range()),
        |(job, (from, to))| resource_charts(job, from, to),
    );
    view! {
        <Region id="resource-charts">
        <Transition fallback=|| view! { <p class="loading">"Loading…"</p> }>
            {move || Suspend::new(async move {
                data.await.map(|d| {
                    let source = d.source.describe();
                    let none = matches!(d.source, MetricsSource::None { .. });
                    let (from, to) = (d.from, d.to);
                    view! {
                        <p class=if none { "banner warn" } else { "muted" } data-testid="metrics-source">
                            {source}
                            {d.live.then(|| view! { <span class="live" data-testid="live">" · live"</span> })}
                        </p>
                        <RangeBar from to page=page.get_value() whole="Whole run" />
                        <p class="hint" data-testid="limits">{d.limits.describe()}</p>
                        <div class="chart-grid resources">
                            {d.charts.into_iter().map(|chart| view! { <ResourceCard chart from to /> }).collect_view()}
                        </div>
                    }
                })
            })}
        </Transition>
        </Region>
        {beside_regions(|| view! {
            {move || range().1.is_none().then(|| view! { <LiveRegion target="resource-charts".to_owned() every_secs=3 /> })}
        })}
    }
}

/// What a job was made from: its template version and values (with "Run
/// again with changes"), the environment it ran in, the notebook.
#[component]
fn JobOrigin(job: crate::models::Job) -> impl IntoView {
    let template = job.spec.template.clone().map(|t| {
        let again = format!("/templates/{}?owner={}&from={}", t.name, t.owner, job.name);
        view! {
            <dt>"Template"</dt>
            <dd data-testid="job-template">
                {format!("{}/{} v{}", t.owner, t.name, t.version)} " · "
                <a href=again>"Run again with changes"</a>
            </dd>
            <dt>"Values"</dt>
            <dd><code data-testid="job-values">{t.values_text()}</code></dd>
        }
    });
    let environment = job.spec.environment.clone().map(|e| {
        let (path, version) = e.rsplit_once(':').unwrap_or((e.as_str(), ""));
        let (owner, name) = path.split_once('/').unwrap_or(("", path));
        let href = format!("/environments/{name}?owner={owner}&version={version}");
        view! {
            <dt>"Environment"</dt>
            <dd data-testid="job-environment"><a href=href>{e.clone()}</a></dd>
        }
    });
    let notebook = job
        .spec
        .notebook
        .clone()
        .map(|n| view! { <dt>"Notebook"</dt><dd>{n}</dd> });
    let any = template.is_some() || environment.is_some() || notebook.is_some();
    any.then(|| view! { <dl class="facts job-origin">{template}{environment}{notebook}</dl> })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::{JobRole, PodSeries};

    fn idle(metric: ResourceMetric) -> ResourceChart {
        ResourceChart {
            metric,
            role: JobRole::Trainer,
            requested: None,
            series: vec![PodSeries {
                pod: "trainer-0".into(),
                ts: (0..12)
                    .map(|i| 1_700_000_000.0 + f64::from(i) * 5.0)
                    .collect(),
                values: vec![0.0; 12],
            }],
        }
    }

    #[test]
    fn an_idle_pods_charts_start_at_0_without_negative_ticks_or_tiny_labels() {
        for metric in [
            ResourceMetric::Cpu,
            ResourceMetric::NetRx,
            ResourceMetric::GpuUtil,
        ] {
            let chart = idle(metric);
            let (from, to) = (1_700_000_000.0, 1_700_000_055.0);
            let (drawn, _) = lines(&chart, from, to);
            let svg = chart_svg(&drawn, from, to);
            let y_labels: Vec<String> = crate::components::chart::tests::texts(&svg)
                .into_iter()
                .filter(|l| !l.contains(':'))
                .collect();
            assert!(
                y_labels.contains(&"0".to_owned()),
                "{metric:?}: {y_labels:?}"
            );
            for label in &y_labels {
                assert!(
                    !label.starts_with('-'),
                    "{metric:?}: a negative tick in {y_labels:?}"
                );
                assert!(!label.contains("e-"), "{metric:?}: {label} in {y_labels:?}");
            }
        }
    }
}
