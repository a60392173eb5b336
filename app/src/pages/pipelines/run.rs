//! `/pipelines/<run>`: the run as a graph (drawn on the server as SVG, a
//! wide fan-out as one box with counts) beside its node table, filtered by
//! `?status=`. A node opens its job docked under them (`?log=<job>`).

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;
use leptos_router::hooks::{use_params_map, use_query_map};

use super::node::NodeDock;
use super::run_badge;
use crate::api::pipelines::{get_pipeline, RetryPipeline, StopPipeline};
use crate::components::form::{last_error, FormError};
use crate::components::live::{beside_regions, LiveRegion, Region};
use crate::components::resource::resource;
use crate::models::pipelines::layout::{layout, Graph, BOX_H, BOX_W};
use crate::models::time::format_utc;
use crate::models::{NodeState, NodeStatus, PipelineRun, RunStatus};

/// Rows the node table shows at most (a filter narrows it).
const MAX_ROWS: usize = 500;

/// The link that docks `job` under the run, keeping the table's filter.
fn node_href(base: &str, filter: Option<NodeStatus>, job: &str) -> String {
    let job = crate::models::url::encode(job);
    match filter {
        Some(f) => format!("{base}?status={}&log={job}", f.as_str()),
        None => format!("{base}?log={job}"),
    }
}

/// One run's page.
#[component]
pub fn PipelinePage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let name = move || params.with(|p| p.get("name").unwrap_or_default());
    let stop = ServerAction::<StopPipeline>::new();
    let retry = ServerAction::<RetryPipeline>::new();
    let run = resource(
        move || (name(), stop.version().get(), retry.version().get()),
        |(name, _, _)| get_pipeline(name),
    );
    let stop_error = Signal::derive(last_error(stop));
    let retry_error = Signal::derive(last_error(retry));
    // Fixed text: see the job Resources page's title.
    let title = format!("Pipeline {}", untrack(name));
    view! {
        {beside_regions(|| view! {
            <Title text=title />
        })}
        <Region id="pipeline-run">
            <Transition fallback=|| view! { <p class="loading">"Loading the run…"</p> }>
                {move || Suspend::new(async move {
                    let filter = query.with(|q| q.get("status")).and_then(|s| NodeStatus::parse(&s));
                    match run.await {
                        Err(err) => view! { <p class="banner error" role="alert">{err.to_string()}</p> }.into_any(),
                        Ok(run) => view! { <RunView run filter stop retry /> }.into_any(),
                    }
                })}
            </Transition>
        </Region>
        {beside_regions(|| view! {
            <FormError error=stop_error />
            <FormError error=retry_error />
            <LiveRegion target="pipeline-run".to_owned() events=format!("/events/pipelines?run={}", crate::models::url::encode(&name())) every_secs=3 />
            {move || query.with(|q| q.get("log")).filter(|j| !j.is_empty()).map(|job| view! { <NodeDock run=name() job /> })}
        })}
    }
}

#[component]
fn RunView(
    run: PipelineRun,
    filter: Option<NodeStatus>,
    stop: ServerAction<StopPipeline>,
    retry: ServerAction<RetryPipeline>,
) -> impl IntoView {
    let graph = layout(&run.spec, &run.nodes);
    let counts = NodeStatus::ALL.map(|s| (s, run.nodes.iter().filter(|n| n.status == s).count()));
    let base = format!("/pipelines/{}", run.name);
    let shown: Vec<NodeState> = run
        .nodes
        .iter()
        .filter(|n| filter.is_none_or(|f| n.status == f))
        .take(MAX_ROWS)
        .cloned()
        .collect();
    let hidden = run
        .nodes
        .iter()
        .filter(|n| filter.is_none_or(|f| n.status == f))
        .count()
        - shown.len();
    let name = run.name.clone();
    let actions = match run.status {
        RunStatus::Running => view! {
            <ActionForm action=stop attr:class="inline">
                <input type="hidden" name="name" value=name />
                <button type="submit" class="danger" data-testid="stop-run">"Stop the run"</button>
            </ActionForm>
        }
        .into_any(),
        RunStatus::Failed | RunStatus::Stopped => view! {
            <ActionForm action=retry attr:class="inline">
                <input type="hidden" name="name" value=name />
                <button type="submit" class="primary" data-testid="retry-run">"Retry from failed"</button>
            </ActionForm>
        }
        .into_any(),
        RunStatus::Succeeded => ().into_any(),
    };
    view! {
        <div class="page-head">
            <h1>{format!("Pipeline run {}", run.name)}</h1>
            {actions}
            <a href=crate::models::NotifySubject::Pipeline { name: run.name.clone() }.follow_href() class="button" data-testid="notify-me">"Notify me…"</a>
        </div>
        <p>
            {run_badge(run.status)} " "
            {format!("{} · {} nodes · by {} · {}", run.spec.name, run.nodes.len(), run.created_by, format_utc(run.created_at))}
        </p>
        {(!run.message.is_empty()).then(|| view! { <p class="banner" data-testid="run-message">{run.message.clone()}</p> })}
        <div class="pipeline">
            <GraphView graph nodes=run.nodes.clone() base=base.clone() filter />
            <section class="nodes">
                <nav class="filters" aria-label="Filter nodes by status">
                    <A href=base.clone() attr:class=if filter.is_none() { "chip active" } else { "chip" }>{format!("All {}", run.nodes.len())}</A>
                    {counts.into_iter().filter(|(_, n)| *n > 0).map(|(s, n)| view! {
                        <A href=format!("{base}?status={}", s.as_str())
                           attr:class=if filter == Some(s) { "chip active" } else { "chip" }
                           attr:data-testid=format!("filter-{}", s.as_str())>
                            {format!("{} {n}", s.as_str())}
                        </A>
                    }).collect_view()}
                </nav>
                <table class="grid" data-testid="nodes">
                    <thead><tr><th>"Node"</th><th>"Status"</th><th>"Tries"</th><th>"Job"</th><th>"Started"</th><th>"Ended"</th></tr></thead>
                    <tbody>
                        {shown.into_iter().map(|n| { let href = n.job.as_deref().map(|j| node_href(&base, filter, j)); view! { <NodeRow n href /> } }).collect_view()}
                    </tbody>
                </table>
                {(hidden > 0).then(|| view! { <p class="hint">{format!("{hidden} more: filter by status to see them.")}</p> })}
            </section>
        </div>
    }
}

/// A node's row; `href` docks its job (when it has one).
#[component]
fn NodeRow(n: NodeState, href: Option<String>) -> impl IntoView {
    let job = n.job.clone().zip(href).map(|(job, href)| {
        view! { <A href attr:data-testid="node-log">{job}</A> }
    });
    view! {
        <tr id=format!("node-{}", n.name) data-node=n.name.clone()>
            <td class="name">{n.name.clone()}</td>
            <td>
                <span class=format!("status {}", n.status.as_str()) data-testid="node-status">{n.status.as_str()}</span>
                {(!n.message.is_empty()).then(|| view! { <p class="hint status-message">{n.message.clone()}</p> })}
            </td>
            <td class="num">{n.attempt}</td>
            <td>{job}</td>
            <td>{n.started_at.map(format_utc).unwrap_or_default()}</td>
            <td>{n.finished_at.map(format_utc).unwrap_or_default()}</td>
        </tr>
    }
}

/// The graph as SVG: a box per node (or per group of alike nodes), an
/// arrow from what a node waits for to it. A node's box opens its
/// job docked; a group's box filters the table to its worst status.
#[component]
pub(super) fn GraphView(
    graph: Graph,
    nodes: Vec<NodeState>,
    base: String,
    filter: Option<NodeStatus>,
) -> impl IntoView {
    let centre_right =
        |b: &crate::models::pipelines::layout::GraphBox| (b.x + BOX_W, b.y + BOX_H / 2);
    let centre_left = |b: &crate::models::pipelines::layout::GraphBox| (b.x, b.y + BOX_H / 2);
    let edges = graph
        .edges
        .iter()
        .map(|&(from, to)| {
            let (x1, y1) = centre_right(&graph.boxes[from]);
            let (x2, y2) = centre_left(&graph.boxes[to]);
            let mid = (x1 + x2) / 2;
            view! { <path class="edge" d=format!("M{x1},{y1} C{mid},{y1} {mid},{y2} {x2},{y2}") /> }
        })
        .collect_view();
    let boxes = graph
        .boxes
        .iter()
        .map(|b| {
            let single = (b.nodes.len() == 1).then(|| &nodes[b.nodes[0]]);
            let href = match single {
                Some(n) => match &n.job {
                    Some(job) => node_href(&base, filter, job),
                    None => format!("{base}#node-{}", n.name),
                },
                None => format!("{base}?status={}", b.status.as_str()),
            };
            let detail = if single.is_some() {
                b.status.as_str().to_owned()
            } else {
                b.counts
                    .iter()
                    .map(|(s, n)| format!("{n} {s}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let title = single.map(|n| n.message.clone()).unwrap_or_else(|| detail.clone());
            view! {
                <a href=href data-testid="graph-node" data-label=b.label.clone()>
                    <title>{title}</title>
                    <rect class=format!("node {}", b.status.as_str()) x=b.x y=b.y width=BOX_W height=BOX_H rx=6 />
                    <text class="label" x=b.x + 10 y=b.y + 18>{b.label.clone()}</text>
                    <text class="detail" x=b.x + 10 y=b.y + 34>{detail}</text>
                </a>
            }
        })
        .collect_view();
    view! {
        <svg class="graph" role="img" aria-label="The run's nodes and what each waits for"
             viewBox=format!("0 0 {} {}", graph.width, graph.height)
             width=graph.width height=graph.height data-testid="graph">
            <g class="edges">{edges}</g>
            {boxes}
        </svg>
    }
}
