//! `/serving/:name`: an instance's requests per second, latency
//! percentiles and error rate over time, measured at its endpoint; live
//! while the view follows now. The range lives in the URL (`from`, `to`).
//! Below, its versions side by side and the forms that release them
//! ([`super::release`]).

use leptos::prelude::*;
use leptos_router::components::A;

use super::release::Releases;
use super::series_card::SeriesCard;
use crate::api::serving::serving_traffic_chart;
use crate::components::live::{beside_regions, LiveRegion, Region};
use crate::components::resource::resource;
use crate::models::{ServingTraffic, TrafficPoint};
use crate::pages::jobs::resources::{use_chart_route, RangeBar};

/// A named line: how to read its value from a bucket.
type Series = (&'static str, fn(&TrafficPoint) -> f64);

/// One chart of the instance's calls: a line per metric `lines` reads.
#[component]
fn TrafficCard(
    title: &'static str,
    metric: &'static str,
    data: ServingTraffic,
    lines: Vec<Series>,
    unit: &'static str,
) -> impl IntoView {
    let xs: Vec<f64> = data.points.iter().map(|p| p.t).collect();
    let lines = lines
        .into_iter()
        .map(|(name, f)| {
            (
                name.to_owned(),
                xs.clone(),
                data.points.iter().map(f).collect(),
            )
        })
        .collect();
    view! { <SeriesCard title metric from=data.from to=data.to lines unit /> }
}

/// The page.
#[component]
pub fn ServingTrafficPage() -> impl IntoView {
    let (name, range) = use_chart_route();
    let data = resource(
        move || (name(), range()),
        |(name, (from, to))| serving_traffic_chart(name, from, to),
    );
    view! {
        {beside_regions(|| view! {
            <div class="page-head">
                <h1>{move || format!("{} · traffic", name())}</h1>
                <nav class="page-links">
                    <A href="/serving">"Serving"</A>
                    <a href=move || crate::models::NotifySubject::Serving { name: name() }.follow_href() data-testid="notify-me">"Notify me…"</a>
                </nav>
            </div>
        })}
        <Region id="traffic-charts">
        <Transition fallback=|| view! { <p class="loading">"Loading…"</p> }>
            {move || Suspend::new(async move {
                let page = format!("/serving/{}", name());
                data.await.map(|d| {
                    let s = d.instance.clone();
                    let (from, to) = (d.from, d.to);
                    view! {
                        <p class="muted" data-testid="traffic-source">
                            {format!(
                                "{} v{} · {} · {}/{} replicas ready · measured at the console's endpoint {}",
                                s.model, s.version, s.status.label(), s.ready, s.spec.replicas, s.endpoint
                            )}
                        </p>
                        <RangeBar from to page whole="Live" />
                        <div class="chart-grid">
                            <TrafficCard title="Requests per second" metric="qps" data=d.clone()
                                lines=vec![("requests/s", TrafficPoint::qps as fn(&TrafficPoint) -> f64)] unit="/s" />
                            <TrafficCard title="Latency (ms)" metric="latency" data=d.clone()
                                lines=vec![("p50", (|p: &TrafficPoint| p.p50_ms) as fn(&TrafficPoint) -> f64),
                                           ("p90", |p: &TrafficPoint| p.p90_ms),
                                           ("p99", |p: &TrafficPoint| p.p99_ms)] unit="ms" />
                            <TrafficCard title="Errors (%)" metric="errors" data=d.clone()
                                lines=vec![("failed", TrafficPoint::error_percent as fn(&TrafficPoint) -> f64)] unit="%" />
                        </div>
                        <p class="hint">"Over long ranges buckets are merged: p50 and p90 become request-weighted means, p99 the worst bucket's."</p>
                        <Releases data=d.clone() />
                        {s.endpoint.split('/').nth(2).map(|account| view! {
                            <crate::components::lineage::LineageSection node=crate::models::NodeRef::serving(account, &s.name) />
                        })}
                    }
                })
            })}
        </Transition>
        </Region>
        {beside_regions(|| view! {
            {move || range().1.is_none().then(|| view! { <LiveRegion target="traffic-charts".to_owned() every_secs=5 /> })}
        })}
    }
}
