//! One tag's chart: the SVG drawn on the server, the overlay the
//! [`ChartPointer`](super::pointer::ChartPointer) island draws on (the value
//! of every line under the pointer, drag to zoom), and the chart's CSV.

use leptos::prelude::*;

use super::pointer::{lines, PointerData};
use crate::components::chart::{css_color, frame, render_marked, Mark};
use crate::models::board::{BoardChart, BoardView, CHART_HEIGHT, CHART_WIDTH};
use crate::models::url::encode;

/// One chart.
#[component]
pub fn ChartCard(
    /// The tag's series.
    chart: BoardChart,
    /// The view (axes, zoom, smoothing, jobs' order for colours).
    view: BoardView,
) -> impl IntoView {
    let drawn = lines(&chart.series, &view);
    let shown = frame(
        &drawn,
        view.xmin.zip(view.xmax),
        view.log_y,
        view.ignore_outliers,
        (CHART_WIDTH, CHART_HEIGHT),
    );
    let marks: Vec<Mark> = chart
        .series
        .iter()
        .flat_map(|s| {
            s.alerts.iter().filter_map(|a| {
                Some(Mark {
                    x: s.x_of_step(a.step, view.x)?,
                    label: format!("{}: {}", s.job, a.message),
                    open: a.open,
                })
            })
        })
        .collect();
    let svg = shown
        .map(|f| render_marked(&drawn, &f, view.x, view.smoothing > 0.0, &marks))
        .unwrap_or_default();
    let legend: Vec<_> = chart
        .series
        .iter()
        .map(|s| (s.job.clone(), s.total, s.full_resolution, s.steps.len()))
        .collect();
    let pointer = shown.and_then(|frame| {
        serde_json::to_string(&PointerData {
            frame,
            view: view.clone(),
            series: chart.series,
        })
        .ok()
    });
    let tag = chart.tag;
    let jobs: Vec<String> = view
        .jobs
        .iter()
        .map(|j| format!("job={}", encode(j)))
        .collect();
    let csv_href = format!(
        "/paddleboard/export.csv?{}&tag={}",
        jobs.join("&"),
        encode(&tag)
    );
    let reset_href = view.xmin.is_some().then(|| {
        let mut v = view.clone();
        v.xmin = None;
        v.xmax = None;
        v.href()
    });
    view! {
        <article class="chart-card" id=format!("chart-{}", encode(&tag)) data-tag=tag.clone()>
            <header>
                <h3>{tag.clone()}</h3>
                <span class="actions">
                    {reset_href.map(|href| view! { <a href=href class="button small">"Reset zoom"</a> })}
                    <a href=csv_href class="button small" download="">"CSV"</a>
                </span>
            </header>
            <div class="chart-box">
                <div class="chart-svg" inner_html=svg></div>
                <div class="chart-overlay" data-pointer=pointer></div>
            </div>
            <footer class="legend">
                {legend.into_iter().map(|(job, total, full, drawn_points)| {
                    let color = view.jobs.iter().position(|j| j == &job).unwrap_or(0);
                    let note = if full {
                        format!("{total} points")
                    } else {
                        format!("{total} points, drawn as {drawn_points} (every minimum and maximum); zoom in for all")
                    };
                    view! {
                        <span class="legend-item">
                            <span class="swatch" style=format!("background:{}", css_color(color))></span>
                            {job}
                            <span class="muted">{note}</span>
                        </span>
                    }
                }).collect_view()}
            </footer>
        </article>
    }
}
