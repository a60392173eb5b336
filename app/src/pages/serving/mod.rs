//! `/serving`: the account's serving instances (replicas, resources,
//! endpoint, requests per second and latency now), scale, stop, delete, and
//! the launch dialog (`?launch=1`). `/serving/:name` charts an instance's
//! traffic.

mod launch;
mod release;
mod series_card;
pub mod traffic;

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;
use leptos_router::hooks::use_query_map;

use crate::api::serving::{list_serving, DeleteServing, ScaleServing, StopServing};
use crate::components::form::{last_error, FormError};
use crate::components::links::page_href;
use crate::components::live::{beside_regions, LiveRegion, Region};
use crate::components::resource::resource;
use crate::models::quantity::{format_cpu, format_memory};
use crate::models::time::format_age;
use crate::models::{ResourceTotals, ServingInstance};

/// `cpu · memory · gpu` of some resources.
pub fn format_totals(t: ResourceTotals) -> String {
    format!(
        "{} CPU · {} · {} GPU",
        format_cpu(t.cpu_millis),
        format_memory(t.memory_bytes),
        t.gpu
    )
}

/// The Serving page.
#[component]
pub fn ServingPage() -> impl IntoView {
    let params = use_query_map();
    let list = resource(|| (), |_| list_serving());
    let scale = ServerAction::<ScaleServing>::new();
    let stop = ServerAction::<StopServing>::new();
    let delete = ServerAction::<DeleteServing>::new();
    let scale_error = Signal::derive(last_error(scale));
    let launch_href =
        move || params.with(|p| page_href("/serving", p, &[("launch", Some("1".into()))]));
    view! {
        {beside_regions(|| view! {
            <Title text="Serving" />
            <div class="page-head">
                <h1>"Serving"</h1>
                <A href=launch_href attr:class="button primary">"Launch"</A>
            </div>
            <FormError error=scale_error />
        })}
        <Region id="serving-table">
        <Transition fallback=|| view! { <p class="loading">"Loading serving instances…"</p> }>
            {move || Suspend::new(async move {
                match list.await {
                    Err(err) => view! { <p class="banner error" role="alert">{err.to_string()}</p> }.into_any(),
                    Ok(page) if page.list.instances.is_empty() => view! {
                        <section class="empty-state" data-testid="no-serving">
                            <p>"Nothing is served yet. Launch a model version to answer predict calls over HTTP."</p>
                        </section>
                    }.into_any(),
                    Ok(page) => {
                        let now = page.list.now;
                        let origin = page.origin.clone();
                        view! {
                            <table class="grid serving" data-testid="serving">
                                <thead>
                                    <tr>
                                        <th>"Name"</th>
                                        <th>"Model"</th>
                                        <th>"Status"</th>
                                        <th title="Replicas answering / wanted">"Replicas"</th>
                                        <th>"Per replica"</th>
                                        <th>"Total"</th>
                                        <th>"Endpoint"</th>
                                        <th title="Requests per second over the last minute">"QPS"</th>
                                        <th title="Latency over the last minute">"p50 / p99"</th>
                                        <th title="Failed requests over the last minute">"Errors"</th>
                                        <th>"Age"</th>
                                        <th>"Actions"</th>
                                    </tr>
                                </thead>
                                <tbody>
                                    {page.list.instances.into_iter().map(|s| view! {
                                        <ServingRow s now origin=origin.clone() scale stop delete />
                                    }).collect_view()}
                                </tbody>
                            </table>
                        }.into_any()
                    }
                }
            })}
        </Transition>
        </Region>
        {beside_regions(|| view! {
            <LiveRegion target="serving-table".to_owned() events="/events/serving".to_owned() every_secs=5 />
            {move || params.with(|p| p.get("launch").is_some()).then(|| view! { <launch::LaunchDialog /> })}
        })}
    }
}

#[component]
fn ServingRow(
    s: ServingInstance,
    now: i64,
    origin: String,
    scale: ServerAction<ScaleServing>,
    stop: ServerAction<StopServing>,
    delete: ServerAction<DeleteServing>,
) -> impl IntoView {
    let status = s.status;
    let per = s.spec.per_replica().unwrap_or_default();
    let total = s.spec.totals().unwrap_or_default();
    let replicas = match s.spec.autoscale {
        Some(a) => format!(
            "{}/{} ({}–{}, CPU {}%)",
            s.ready, s.spec.replicas, a.min, a.max, a.cpu_percent
        ),
        None => format!("{}/{}", s.ready, s.spec.replicas),
    };
    let endpoint = format!("{origin}{}", s.endpoint);
    let (qps, latency, errors) = match s.recent {
        Some(r) => (
            format!("{:.1}", r.qps()),
            format!("{:.1} / {:.1} ms", r.p50_ms, r.p99_ms),
            format!("{:.1}%", r.error_percent()),
        ),
        None => ("0".to_owned(), "–".to_owned(), "–".to_owned()),
    };
    let name = s.name.clone();
    let href = format!("/serving/{}", s.name);
    let (n1, n2, n3) = (name.clone(), name.clone(), name.clone());
    let actions = if status.is_active() {
        view! {
            <ActionForm action=scale attr:class="inline">
                <input type="hidden" name="name" value=n1 />
                <input type="number" name="replicas" min="1" max="64" class="replicas" aria-label="Replicas" value=s.spec.replicas.to_string() />
                <button type="submit" class="small">"Scale"</button>
            </ActionForm>
            <ActionForm action=stop attr:class="inline">
                <input type="hidden" name="name" value=n2 />
                <button type="submit" class="small">"Stop"</button>
            </ActionForm>
        }
        .into_any()
    } else {
        view! {
            <ActionForm action=delete attr:class="inline">
                <input type="hidden" name="name" value=n3 />
                <button type="submit" class="small danger">"Delete"</button>
            </ActionForm>
        }
        .into_any()
    };
    let label = name.clone();
    view! {
        <tr data-serving=name>
            <td class="name"><A href=href.clone()>{label}</A></td>
            <td>
                {format!("{} v{}", s.model, s.version)}
                {s.spec.alias().map(|a| view! { <p class="hint" data-testid="follows">{format!("follows @{a}")}</p> })}
                {(s.tracks.len() > 1).then(|| {
                    let side: Vec<String> = s.tracks[1..]
                        .iter()
                        .map(|t| format!("{} v{} ({})", t.track.as_str(), t.version, t.share()))
                        .collect();
                    view! { <p class="hint" data-testid="side-tracks">{side.join(" · ")}</p> }
                })}
                {s.spec.environment.clone().map(|e| view! { <p class="hint" data-testid="environment">{format!("in {e}")}</p> })}
            </td>
            <td>
                <span class=format!("status {}", status.as_str()) data-testid="status" title=s.message.clone()>
                    {status.label()}
                </span>
                {(!s.message.is_empty()).then(|| view! { <p class="hint status-message" data-testid="message">{s.message.clone()}</p> })}
            </td>
            <td data-testid="replicas">{replicas}</td>
            <td>{format_totals(per)}</td>
            <td data-testid="total">{format_totals(total)}</td>
            <td class="endpoint"><code data-testid="endpoint">{endpoint}</code></td>
            <td class="num" data-testid="qps">{qps}</td>
            <td class="num" data-testid="latency">{latency}</td>
            <td class="num" data-testid="errors">{errors}</td>
            <td>{format_age(now - s.created_at)}</td>
            <td class="actions">
                <A href=href>"Traffic"</A>
                {actions}
            </td>
        </tr>
    }
}
