//! A node's job docked under its run (`/pipelines/<run>?log=<job>`): which
//! node and try it is, its resource charts and its log console, so a run is
//! followed without leaving its page. The state is the URL, like the Jobs
//! page's console: `pod`, `find`, `from`… carry over.

use leptos::prelude::*;
use leptos_router::components::A;

use crate::api::jobs::get_job;
use crate::components::resource::resource;
use crate::models::url::encode as urlencode;
use crate::pages::jobs::resources::JobCharts;
use crate::pages::jobs::LogConsole;

/// The dock for `job`, one of run `run`'s nodes.
#[component]
pub fn NodeDock(
    /// The pipeline run.
    run: String,
    /// The node's job.
    job: String,
) -> impl IntoView {
    let page = format!("/pipelines/{run}");
    let found = resource(
        {
            let job = job.clone();
            move || job.clone()
        },
        get_job,
    );
    let head = {
        let (job, run) = (job.clone(), run.clone());
        move || {
            let (job, run) = (job.clone(), run.clone());
            Suspend::new(async move {
                match found.await {
                    Err(err) => {
                        view! { <p class="banner error" role="alert">{err.to_string()}</p> }
                            .into_any()
                    }
                    Ok(found) => {
                        let Some(node) = found.spec.pipeline.clone().filter(|p| p.run == run)
                        else {
                            let why = format!("{job} is not a node of {run}.");
                            return view! { <p class="banner error" role="alert">{why}</p> }
                                .into_any();
                        };
                        let status = found.status.as_str();
                        let board = format!("/paddleboard?jobs={}", urlencode(&job));
                        let resources = format!("/jobs/{}/resources", urlencode(&job));
                        view! {
                            <header class="page-head">
                                <h2 data-testid="dock-node">{format!("Node {} · try {}", node.node, node.attempt)}</h2>
                                <nav class="page-links">
                                    <span class=format!("status {status}") data-testid="dock-status">{status}</span>
                                    <A href=board>"PaddleBoard"</A>
                                    <A href=resources>"Resources page"</A>
                                </nav>
                            </header>
                            <p class="muted">{format!("Job {job}")}</p>
                        }
                        .into_any()
                    }
                }
            })
        }
    };
    view! {
        <section class="node-dock" aria-label="The node's job" data-testid="node-dock">
            <Transition fallback=|| view! { <p class="loading">"Loading the node…"</p> }>{head}</Transition>
            <JobCharts job=job.clone() page=page.clone() />
            <LogConsole job page />
        </section>
    }
}
