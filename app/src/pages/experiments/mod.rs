//! `/experiments`: the account's experiments; `/experiments/new`: the
//! "New experiment" form (`new`); `/experiments/<name>`: one experiment
//! (`detail`) with its charts (`charts`) and its actions (`actions`).
//! Every page works without JavaScript and refreshes itself on the
//! experiments' events.

mod actions;
mod charts;
mod detail;
mod new;

pub use detail::ExperimentPage;
pub use new::NewExperimentPage;

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;

use crate::api::experiments::list_experiments;
use crate::components::chart::format_value;
use crate::components::live::{beside_regions, LiveRegion, Region};
use crate::components::resource::resource;
use crate::models::time::format_utc;
use crate::models::{ExperimentStatus, ExperimentSummary};

/// An experiment's status as a badge.
fn experiment_badge(status: ExperimentStatus) -> impl IntoView {
    view! { <span class=format!("status {}", status.as_str()) data-testid="experiment-status">{status.as_str()}</span> }
}

/// The Experiments page.
#[component]
pub fn ExperimentsPage() -> impl IntoView {
    let list = resource(|| (), |_| list_experiments());
    view! {
        {beside_regions(|| view! {
            <Title text="Experiments" />
            <div class="page-head">
                <h1>"Experiments"</h1>
                <A href="/experiments/new" attr:class="button primary">"New experiment"</A>
            </div>
            <p class="hint">
                "An experiment searches a template's parameters for the values that give the best objective: each trial is a job of the template, reporting the objective to PaddleBoard. "
                "Start one here, from a template's page, or with " <code>"paddlecloud experiment create -f"</code> ", the SDK or " <code>"POST /api/v1/experiments"</code> "."
            </p>
        })}
        <Region id="experiments-table">
            <Transition fallback=|| view! { <p class="loading">"Loading experiments…"</p> }>
                {move || Suspend::new(async move {
                    match list.await {
                        Err(err) => view! { <p class="banner error" role="alert">{err.to_string()}</p> }.into_any(),
                        Ok(list) if list.is_empty() => view! { <p class="empty">"No experiment yet."</p> }.into_any(),
                        Ok(list) => view! {
                            <table class="grid experiments" data-testid="experiments">
                                <thead><tr><th>"Experiment"</th><th>"Template"</th><th>"Status"</th><th class="num">"Trials"</th><th>"Best"</th><th>"By"</th><th>"Created"</th></tr></thead>
                                <tbody>{list.into_iter().map(|e| view! { <ExperimentRow e /> }).collect_view()}</tbody>
                            </table>
                        }.into_any(),
                    }
                })}
            </Transition>
        </Region>
        {beside_regions(|| view! {
            <LiveRegion target="experiments-table".to_owned() events="/events/experiments".to_owned() every_secs=5 />
        })}
    }
}

/// One experiment's row: its trials ended of its total (and running), its
/// best objective so far.
#[component]
fn ExperimentRow(e: ExperimentSummary) -> impl IntoView {
    let c = e.trials;
    let ended = c.succeeded + c.failed + c.pruned + c.stopped;
    let running = c.running + c.waiting;
    let trials = if running > 0 {
        format!("{ended}/{} ({running} running)", e.max_trials)
    } else {
        format!("{ended}/{}", e.max_trials)
    };
    let best = e.best.as_ref().map(|b| {
        format!(
            "{} = {} (trial {})",
            e.objective.metric,
            b.objective.map(format_value).unwrap_or_default(),
            b.number
        )
    });
    let href = format!("/experiments/{}", e.name);
    let name = e.name.clone();
    view! {
        <tr data-experiment=e.name.clone()>
            <td class="name"><A href=href>{name}</A></td>
            <td>{e.template.clone()}</td>
            <td>{experiment_badge(e.status)}<p class="hint">{e.message.clone()}</p></td>
            <td class="num" data-testid="trials">{trials}</td>
            <td data-testid="best">{best}</td>
            <td>{e.owner.clone()}</td>
            <td>{format_utc(e.created_at)}</td>
        </tr>
    }
}
