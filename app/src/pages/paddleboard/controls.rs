//! The board's controls: which jobs, which tags, smoothing and axes. A GET
//! form (so it works without JavaScript, and its state is the URL); with
//! JavaScript, [`AutoApply`](crate::components::form_watch::AutoApply)
//! submits it on every change.

use leptos::prelude::*;

use crate::components::chart::css_color;
use crate::components::resource::Resource;
use crate::error::AppError;
use crate::models::board::{BoardView, XAxis};
use crate::models::BoardJob;

/// The control panel.
#[component]
pub fn Controls(
    /// The view the URL holds.
    view: BoardView,
    /// The jobs that have metrics.
    jobs: Resource<Result<Vec<BoardJob>, AppError>>,
) -> impl IntoView {
    let v = view;
    let chosen = v.jobs.clone();
    view! {
        <aside class="board-controls">
            <form method="GET" action="/paddleboard">
                <fieldset>
                    <legend>"Jobs"</legend>
                    <Transition fallback=|| view! { <p class="loading">"Loading…"</p> }>
                        {move || {
                            let chosen = chosen.clone();
                            Suspend::new(async move {
                            match jobs.await {
                                Err(err) => view! { <p class="banner error">{err.to_string()}</p> }.into_any(),
                                Ok(list) if list.is_empty() => view! {
                                    <p class="empty">"No job has logged metrics yet."</p>
                                }.into_any(),
                                Ok(list) => view! {
                                    <ul class="job-picker" data-testid="job-picker">
                                        {list.into_iter().map(|job| {
                                            let index = chosen.iter().position(|c| c == &job.name);
                                            let swatch = index.map(|i| format!("background:{}", css_color(i)));
                                            view! {
                                                <li>
                                                    <label>
                                                        <input type="checkbox" name="job" value=job.name.clone()
                                                            checked=index.is_some() />
                                                        <span class="swatch" style=swatch></span>
                                                        <span class="job-name">{job.name}</span>
                                                        <span class=format!("status {}", job.status)>{job.status.clone()}</span>
                                                        <span class="muted">{format!("{} tags", job.tags)}</span>
                                                    </label>
                                                </li>
                                            }
                                        }).collect_view()}
                                    </ul>
                                }.into_any(),
                            }
                        })}}
                    </Transition>
                </fieldset>
                <label>
                    "Tags (regular expression)"
                    <input type="search" name="tags" placeholder="loss|acc" value=v.tags.clone() />
                </label>
                <label>
                    <span>"Smoothing " <output>{format!("{:.2}", v.smoothing)}</output></span>
                    <input type="range" name="smooth" min="0" max="0.99" step="0.01"
                        value=format!("{:.2}", v.smoothing) />
                </label>
                <label>
                    "Horizontal axis"
                    <select name="x">
                        {[XAxis::Step, XAxis::Relative, XAxis::Wall].map(|x| view! {
                            <option value=x.as_str() selected=v.x == x>{x.label()}</option>
                        })}
                    </select>
                </label>
                <label>
                    "Vertical axis"
                    <select name="y">
                        <option value="linear" selected=!v.log_y>"Linear"</option>
                        <option value="log" selected=v.log_y>"Logarithmic"</option>
                    </select>
                </label>
                <label class="check">
                    <input type="checkbox" name="outliers" value="1" checked=v.ignore_outliers />
                    "Ignore outliers in scaling"
                </label>
                {v.xmin.zip(v.xmax).map(|(a, b)| view! {
                    <input type="hidden" name="xmin" value=a.to_string() />
                    <input type="hidden" name="xmax" value=b.to_string() />
                    <input type="hidden" name="zoom_x" value=v.x.as_str() />
                })}
                <button type="submit" class="primary">"Apply"</button>
                <crate::components::form_watch::AutoApply />
            </form>
            {(!v.jobs.is_empty()).then(|| view! {
                <p class="exports">
                    <a href=format!("/paddleboard/export.zip?{}", v.to_query()) download="">"Download all charts (zip of CSV)"</a>
                </p>
            })}
        </aside>
    }
}
