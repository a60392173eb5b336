//! The board's controls: which jobs, which tags, smoothing and axes. A GET
//! form (so it works without JavaScript, and its state is the URL); when
//! hydrated, every change applies at once.

use leptos::prelude::*;
use leptos_router::hooks::use_navigate;

use crate::components::chart::css_color;
use crate::components::resource::Resource;
use crate::error::AppError;
use crate::models::board::{BoardView, XAxis, MAX_BOARD_JOBS};
use crate::models::BoardJob;

/// Goes to `view`'s URL (hydrated only; the form does it without JavaScript),
/// staying where the page is scrolled to: the chart being zoomed stays put.
pub fn go(view: &BoardView) {
    let navigate = use_navigate();
    navigate(
        &view.href(),
        leptos_router::NavigateOptions {
            scroll: false,
            ..Default::default()
        },
    );
}

/// The control panel.
#[component]
pub fn Controls(
    /// The view the URL holds.
    view: Memo<BoardView>,
    /// The jobs that have metrics.
    jobs: Resource<Result<Vec<BoardJob>, AppError>>,
    /// The smoothing being dragged (ahead of the URL).
    smoothing: RwSignal<f64>,
) -> impl IntoView {
    let change = move |edit: fn(&mut BoardView, String)| {
        move |ev: leptos::ev::Event| {
            let mut next = view.get_untracked();
            edit(&mut next, event_target_value(&ev));
            go(&next);
        }
    };
    let toggle_job = move |name: String| {
        move |ev: leptos::ev::Event| {
            let mut next = view.get_untracked();
            next.jobs.retain(|j| j != &name);
            if event_target_checked(&ev) && next.jobs.len() < MAX_BOARD_JOBS {
                next.jobs.push(name.clone());
            }
            go(&next);
        }
    };
    let v = view.get_untracked();
    view! {
        <aside class="board-controls">
            <form method="GET" action="/paddleboard" on:submit=move |ev| {
                ev.prevent_default();
                go(&view.get_untracked());
            }>
                <fieldset>
                    <legend>"Jobs"</legend>
                    <Transition fallback=|| view! { <p class="loading">"Loading…"</p> }>
                        {move || Suspend::new(async move {
                            let chosen = view.with_untracked(|v| v.jobs.clone());
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
                                            let name = job.name.clone();
                                            view! {
                                                <li>
                                                    <label>
                                                        <input type="checkbox" name="job" value=job.name.clone()
                                                            checked=index.is_some()
                                                            on:change=toggle_job(name) />
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
                        })}
                    </Transition>
                </fieldset>
                <label>
                    "Tags (regular expression)"
                    <input type="search" name="tags" placeholder="loss|acc" value=v.tags.clone()
                        on:change=change(|v, s| v.tags = s) />
                </label>
                <label>
                    <span>"Smoothing " <output>{move || format!("{:.2}", smoothing.get())}</output></span>
                    <input type="range" name="smooth" min="0" max="0.99" step="0.01"
                        value=format!("{:.2}", v.smoothing)
                        prop:value=move || format!("{:.2}", smoothing.get())
                        on:input=move |ev| {
                            if let Ok(s) = event_target_value(&ev).parse::<f64>() {
                                smoothing.set(s);
                            }
                        }
                        on:change=change(|v, s| v.smoothing = s.parse().unwrap_or(v.smoothing)) />
                </label>
                <label>
                    "Horizontal axis"
                    <select name="x" on:change=change(|v, s| {
                        v.x = XAxis::parse(&s);
                        // A zoomed range means nothing on another axis.
                        v.xmin = None;
                        v.xmax = None;
                    })>
                        {[XAxis::Step, XAxis::Relative, XAxis::Wall].map(|x| view! {
                            <option value=x.as_str() selected=v.x == x>{x.label()}</option>
                        })}
                    </select>
                </label>
                <label>
                    "Vertical axis"
                    <select name="y" on:change=change(|v, s| v.log_y = s == "log")>
                        <option value="linear" selected=!v.log_y>"Linear"</option>
                        <option value="log" selected=v.log_y>"Logarithmic"</option>
                    </select>
                </label>
                <label class="check">
                    <input type="checkbox" name="outliers" value="1" checked=v.ignore_outliers
                        on:change=move |ev| {
                            let mut next = view.get_untracked();
                            next.ignore_outliers = event_target_checked(&ev);
                            go(&next);
                        } />
                    "Ignore outliers in scaling"
                </label>
                {v.xmin.zip(v.xmax).map(|(a, b)| view! {
                    <input type="hidden" name="xmin" value=a.to_string() />
                    <input type="hidden" name="xmax" value=b.to_string() />
                })}
                <button type="submit" class="primary">"Apply"</button>
                <crate::components::form_watch::AutoApply />
            </form>
            {move || {
                let v = view.get();
                (!v.jobs.is_empty()).then(|| {
                    let q = v.to_query();
                    view! {
                        <p class="exports">
                            <a href=format!("/paddleboard/export.zip?{q}") download="">"Download all charts (zip of CSV)"</a>
                        </p>
                    }
                })
            }}
        </aside>
    }
}
