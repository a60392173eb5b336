//! One chart of named lines over a time range, each line its own points,
//! its legend giving each line's last value: the instance page's traffic
//! charts and its charts by version.

use leptos::prelude::*;

use crate::components::chart::{css_color, render, zero_based_frame, Line};
use crate::models::board::XAxis;

/// Drawing size of one chart, px.
const SIZE: (u32, u32) = (560, 220);

/// One chart of named lines, each its own points, over `[from, to]`; the
/// legend gives each line's last value.
#[component]
pub fn SeriesCard(
    title: &'static str,
    metric: &'static str,
    from: f64,
    to: f64,
    /// Name, xs, ys.
    lines: Vec<(String, Vec<f64>, Vec<f64>)>,
    unit: &'static str,
    #[prop(default = "no requests in this range")] empty_text: &'static str,
) -> impl IntoView {
    let drawn: Vec<Line> = lines
        .iter()
        .enumerate()
        .map(|(i, (_, xs, ys))| Line {
            color: i,
            xs: xs.clone(),
            raw: ys.clone(),
            smoothed: ys.clone(),
        })
        .collect();
    // Requests, errors and latencies are never below zero.
    let svg = zero_based_frame(&drawn, Some((from, to)), SIZE)
        .map(|f| render(&drawn, &f, XAxis::Wall, false))
        .unwrap_or_default();
    let empty = lines.iter().all(|(_, xs, _)| xs.is_empty());
    view! {
        <figure class="chart-card traffic" data-metric=metric>
            <figcaption><strong>{title}</strong></figcaption>
            {if empty {
                view! { <p class="empty chart-empty" data-testid="no-data">{empty_text}</p> }.into_any()
            } else {
                view! { <div class="chart-svg" inner_html=svg></div> }.into_any()
            }}
            <ul class="legend">
                {lines.into_iter().enumerate().map(|(i, (name, _, ys))| {
                    let last = ys.last().copied().unwrap_or(0.0);
                    view! {
                        <li>
                            <span class="swatch" style=format!("background:{}", css_color(i))></span>
                            {name}
                            <span class="num" data-testid="last">{format!(" {last:.2} {unit}")}</span>
                        </li>
                    }
                }).collect_view()}
            </ul>
        </figure>
    }
}
