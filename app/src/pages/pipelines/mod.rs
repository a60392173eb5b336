//! `/pipelines`: the account's pipeline runs and the "New pipeline" dialog
//! (`new`); `/pipelines/<run>`: one run (`run`) with a node's job docked
//! under it (`node`). Every page works without JavaScript and refreshes
//! itself on the run's events while it runs.

mod new;
mod node;
mod run;

pub use run::PipelinePage;

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;
use leptos_router::hooks::use_query_map;

use crate::api::pipelines::list_pipelines;
use crate::components::live::{beside_regions, LiveRegion, Region};
use crate::components::resource::resource;
use crate::models::time::format_utc;
use crate::models::RunStatus;

/// A run's status as a badge.
fn run_badge(status: RunStatus) -> impl IntoView {
    view! { <span class=format!("status {}", status.as_str()) data-testid="run-status">{status.as_str()}</span> }
}

/// The Pipelines page.
#[component]
pub fn PipelinesPage() -> impl IntoView {
    let query = use_query_map();
    let runs = resource(|| (), |_| list_pipelines());
    view! {
        {beside_regions(|| view! {
            <Title text="Pipelines" />
            <div class="page-head">
                <h1>"Pipelines"</h1>
                <A href="/schedules" attr:class="button" attr:data-testid="schedules-link">"Schedules"</A>
                <A href="/pipelines?new=1" attr:class="button primary">"New pipeline"</A>
            </div>
            <p class="hint">
                "A pipeline runs a graph of jobs as one: each node a job or a template, started once what it waits for has happened, retried as it says, and the run succeeded only if every node that had to run succeeded. "
                "Make one from templates here, or submit any graph of jobs with " <code>"paddlecloud pipeline run -f"</code> ", the SDK or " <code>"POST /api/v1/pipelines"</code> "."
            </p>
        })}
        <Region id="pipelines-table">
            <Transition fallback=|| view! { <p class="loading">"Loading runs…"</p> }>
                {move || Suspend::new(async move {
                    match runs.await {
                        Err(err) => view! { <p class="banner error" role="alert">{err.to_string()}</p> }.into_any(),
                        Ok(runs) if runs.is_empty() => view! { <p class="empty">"No pipeline has run yet."</p> }.into_any(),
                        Ok(runs) => view! {
                            <table class="grid pipelines" data-testid="pipelines">
                                <thead><tr><th>"Run"</th><th>"Pipeline"</th><th>"Status"</th><th>"Nodes"</th><th>"By"</th><th>"Started"</th><th>"Ended"</th></tr></thead>
                                <tbody>
                                    {runs.into_iter().map(|r| {
                                        let (name, href) = (r.name.clone(), format!("/pipelines/{}", r.name));
                                        let ended = r.finished_at.map(format_utc).unwrap_or_default();
                                        view! {
                                            <tr data-run=r.name>
                                                <td class="name"><A href=href>{name}</A></td>
                                                <td>{r.spec.name.clone()}</td>
                                                <td>{run_badge(r.status)}<p class="hint">{r.message}</p></td>
                                                <td class="num">{r.spec.nodes.len()}</td>
                                                <td>{r.created_by}</td>
                                                <td>{format_utc(r.created_at)}</td>
                                                <td>{ended}</td>
                                            </tr>
                                        }
                                    }).collect_view()}
                                </tbody>
                            </table>
                        }.into_any(),
                    }
                })}
            </Transition>
        </Region>
        {beside_regions(|| view! {
            <LiveRegion target="pipelines-table".to_owned() events="/events/pipelines".to_owned() every_secs=5 />
            {move || query.with(|q| q.get("new").is_some()).then(|| view! { <new::NewPipelineDialog /> })}
        })}
    }
}
