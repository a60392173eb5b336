//! One tag's chart: the SVG (drawn on the server first, then redrawn in the
//! browser as smoothing and axes change), the value of every line under the
//! pointer, drag to zoom, and the chart's CSV.

use leptos::prelude::*;

use super::controls::go;
use crate::components::chart::{css_color, format_value, format_x, frame, render, Frame, Line};
use crate::models::board::{
    smooth, BoardChart, BoardSeries, BoardView, XAxis, CHART_HEIGHT, CHART_WIDTH,
};
use crate::models::url::encode;

/// x of each point on `axis`.
fn xs(series: &BoardSeries, axis: XAxis) -> Vec<f64> {
    match axis {
        XAxis::Step => series.steps.iter().map(|s| *s as f64).collect(),
        XAxis::Relative => series.walls.iter().map(|w| w - series.origin).collect(),
        XAxis::Wall => series.walls.clone(),
    }
}

/// The index of the point nearest `x` (points sorted by x).
fn nearest(xs: &[f64], x: f64) -> Option<usize> {
    if xs.is_empty() {
        return None;
    }
    let i = xs.partition_point(|v| *v < x);
    match i {
        0 => Some(0),
        i if i >= xs.len() => Some(xs.len() - 1),
        i => Some(if x - xs[i - 1] <= xs[i] - x { i - 1 } else { i }),
    }
}

/// The pointer's x in the chart's drawing pixels.
fn pointer_px(ev: &leptos::ev::MouseEvent) -> Option<f64> {
    use leptos::wasm_bindgen::JsCast;
    let target = ev
        .current_target()?
        .dyn_into::<leptos::web_sys::Element>()
        .ok()?;
    let shown = f64::from(target.client_width());
    (shown > 0.0).then(|| f64::from(ev.offset_x()) * f64::from(CHART_WIDTH) / shown)
}

/// One chart.
#[component]
pub fn ChartCard(
    /// The tag's series.
    chart: BoardChart,
    /// The view (axes, zoom, jobs' order for colours).
    view: Memo<BoardView>,
    /// Smoothing, as the slider has it.
    smoothing: RwSignal<f64>,
) -> impl IntoView {
    let tag = chart.tag.clone();
    let series = StoredValue::new(chart.series);
    // Lines and frame, recomputed when the view or smoothing change.
    let drawn = Memo::new(move |_: Option<&(Vec<Line>, Option<Frame>, String)>| {
        let v = view.get();
        let s = smoothing.get();
        let lines: Vec<Line> = series.with_value(|all| {
            all.iter()
                .map(|ser| {
                    let raw: Vec<f64> = ser.values.iter().map(|v| v.0).collect();
                    Line {
                        color: v.jobs.iter().position(|j| j == &ser.job).unwrap_or(0),
                        xs: xs(ser, v.x),
                        smoothed: smooth(&raw, s),
                        raw,
                    }
                })
                .collect()
        });
        let zoom = v.xmin.zip(v.xmax);
        let f = frame(
            &lines,
            zoom,
            v.log_y,
            v.ignore_outliers,
            (CHART_WIDTH, CHART_HEIGHT),
        );
        let svg = f
            .map(|f| render(&lines, &f, v.x, s > 0.0))
            .unwrap_or_default();
        (lines, f, svg)
    });
    let hover = RwSignal::new(None::<f64>);
    let drag = RwSignal::new(None::<(f64, f64)>);

    let on_move = move |ev: leptos::ev::MouseEvent| {
        if let Some(px) = pointer_px(&ev) {
            hover.set(Some(px));
            if let Some((start, _)) = drag.get_untracked() {
                drag.set(Some((start, px)));
            }
        }
    };
    let on_down = move |ev: leptos::ev::MouseEvent| {
        if let Some(px) = pointer_px(&ev) {
            drag.set(Some((px, px)));
        }
    };
    let on_up = move |_| {
        let Some((a, b)) = drag.get_untracked() else {
            return;
        };
        drag.set(None);
        let Some(f) = drawn.with_untracked(|d| d.1) else {
            return;
        };
        if (a - b).abs() < 5.0 {
            return;
        }
        let (x0, x1) = (f.x_at(a.min(b)), f.x_at(a.max(b)));
        let mut next = view.get_untracked();
        // Whole steps, or milliseconds: the URL stays short and readable.
        let (x0, x1) = match next.x {
            XAxis::Step => (x0.floor(), x1.ceil()),
            _ => (
                (x0 * 1000.0).floor() / 1000.0,
                (x1 * 1000.0).ceil() / 1000.0,
            ),
        };
        next.xmin = Some(x0);
        next.xmax = Some(x1);
        go(&next);
    };

    let tooltip = move || {
        let px = hover.get()?;
        drag.get().is_none().then_some(())?;
        let v = view.get();
        drawn.with(|(lines, f, _)| {
            let f = (*f)?;
            let x = f.x_at(px);
            let rows: Vec<_> = series.with_value(|all| {
                lines
                    .iter()
                    .zip(all)
                    .filter_map(|(line, ser)| {
                        let i = nearest(&line.xs, x)?;
                        Some(view! {
                            <tr>
                                <td>
                                    <span class="swatch" style=format!("background:{}", css_color(line.color))></span>
                                    {ser.job.clone()}
                                </td>
                                <td class="num">{format_value(line.smoothed[i])}</td>
                                <td class="num muted">{format_value(line.raw[i])}</td>
                                <td class="num">{ser.steps[i]}</td>
                                <td class="num muted">{format_x(XAxis::Wall, ser.walls[i])}</td>
                            </tr>
                        })
                    })
                    .collect()
            });
            let left = px / f64::from(CHART_WIDTH) * 100.0;
            let side = if left > 60.0 { "right:calc(100% - " } else { "left:calc(" };
            let style = format!("{side}{left:.1}% + 12px)");
            Some(view! {
                <div class="chart-tip" style=style role="status">
                    <table>
                        <thead><tr><th>"Job"</th><th>"Smoothed"</th><th>"Value"</th><th>"Step"</th><th>"Time"</th></tr></thead>
                        <tbody>{rows}</tbody>
                    </table>
                    <p class="muted">{format!("{} {}", v.x.label(), format_x(v.x, x))}</p>
                </div>
            })
        })
    };
    let crosshair = move || {
        let px = hover.get()?;
        let f = drawn.with(|d| d.1)?;
        let (l, t, r, b) = f.plot_area();
        (px >= l && px <= r).then(|| {
            let pct = |v: f64, of: u32| v / f64::from(of) * 100.0;
            view! {
                <div class="chart-cross" style=format!(
                    "left:{:.2}%;top:{:.2}%;height:{:.2}%", pct(px, CHART_WIDTH), pct(t, CHART_HEIGHT), pct(b - t, CHART_HEIGHT)
                )></div>
            }
        })
    };
    let selection = move || {
        let (a, b) = drag.get()?;
        let pct = |v: f64| v / f64::from(CHART_WIDTH) * 100.0;
        Some(view! {
            <div class="chart-selection" style=format!("left:{:.2}%;width:{:.2}%", pct(a.min(b)), pct((a - b).abs()))></div>
        })
    };

    let csv_href = move || {
        let v = view.get();
        let jobs: Vec<String> = v
            .jobs
            .iter()
            .map(|j| format!("job={}", encode(j)))
            .collect();
        format!(
            "/paddleboard/export.csv?{}&tag={}",
            jobs.join("&"),
            encode(&tag)
        )
    };
    let reset_href = move || {
        let mut v = view.get();
        v.xmin = None;
        v.xmax = None;
        v.href()
    };
    let tag_shown = chart.tag.clone();
    let legend = series.with_value(|all| {
        all.iter()
            .map(|s| (s.job.clone(), s.total, s.full_resolution, s.steps.len()))
            .collect::<Vec<_>>()
    });
    view! {
        <article class="chart-card" data-tag=chart.tag.clone()>
            <header>
                <h3>{tag_shown}</h3>
                <span class="actions">
                    {move || view.with(|v| v.xmin.is_some()).then(|| view! {
                        <a href=reset_href class="button small">"Reset zoom"</a>
                    })}
                    <a href=csv_href class="button small" download="">"CSV"</a>
                </span>
            </header>
            <div class="chart-box">
                <div class="chart-svg" inner_html=move || drawn.with(|d| d.2.clone())></div>
                <div class="chart-overlay"
                    on:mousemove=on_move
                    on:mousedown=on_down
                    on:mouseup=on_up
                    on:mouseleave=move |_| { hover.set(None); drag.set(None); }>
                    {crosshair}
                    {selection}
                </div>
                {tooltip}
            </div>
            <footer class="legend">
                {legend.into_iter().map(|(job, total, full, drawn_points)| {
                    let color = view.with_untracked(|v| v.jobs.iter().position(|j| j == &job).unwrap_or(0));
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
