//! An instance's versions on its page: each track (main, canary, shadow)
//! with its share and the calls it answered side by side, charts of
//! requests, latency and errors by version, the calls mirrored to the
//! shadow beside what the main version answered, and one form per release
//! step (start a canary or shadow, promote, roll back, end the shadow),
//! each working without JavaScript.

use leptos::prelude::*;

use super::series_card::SeriesCard;
use crate::api::serving::{serving_release_data, ReleaseData, ReleaseServing};
use crate::components::form::{last_error, FieldError, FormError};
use crate::components::resource::resource;
use crate::models::time::format_utc;
use crate::models::{
    merge_traffic, ServingInstance, ServingTraffic, ShadowCall, Track, TrafficPoint, VersionTraffic,
};

/// What a version's line and row are called: `v2 · canary`.
fn version_label(instance: &ServingInstance, v: &VersionTraffic) -> String {
    let track = instance
        .tracks
        .iter()
        .find(|t| t.version == v.version && (t.track == Track::Shadow) == v.shadow)
        .map_or("earlier", |t| t.track.as_str());
    format!("v{} · {track}", v.version)
}

/// The versions section of the instance page.
#[component]
pub fn Releases(
    /// The page's traffic (the instance, and its calls by version).
    data: ServingTraffic,
) -> impl IntoView {
    let name = data.instance.name.clone();
    let extra = resource(move || name.clone(), serving_release_data);
    view! {
        <section class="releases" data-testid="releases" aria-labelledby="releases-title">
            <div class="section-head"><h2 id="releases-title">"Versions"</h2></div>
            <Suspense fallback=|| view! { <p class="loading">"Loading…"</p> }>
                {move || {
                    let data = data.clone();
                    Suspend::new(async move {
                        extra.await.map(|extra| view! { <ReleaseBody data extra /> })
                    })
                }}
            </Suspense>
        </section>
    }
}

#[component]
fn ReleaseBody(data: ServingTraffic, extra: ReleaseData) -> impl IntoView {
    let instance = data.instance.clone();
    let alias = instance.spec.alias().map(|a| {
        let model = instance.model.clone();
        view! {
            <p class="hint" data-testid="follows">
                "Follows " <code>{format!("{model}@{a}")}</code>
                ": when the alias moves, the main replicas roll to its version one by one, each new one answering before an old one stops."
            </p>
        }
    });
    let stats = |version: u32, shadow: bool| {
        data.versions
            .iter()
            .find(|v| v.version == version && v.shadow == shadow)
            .and_then(|v| merge_traffic(&v.points, 1).first().copied())
    };
    let rows = instance
        .tracks
        .iter()
        .map(|t| {
            let s = stats(t.version, t.track == Track::Shadow);
            let share = t.share();
            let num = |f: fn(&TrafficPoint) -> String| s.as_ref().map_or("–".to_owned(), f);
            view! {
                <tr data-track=t.track.as_str()>
                    <td>{t.track.label()}</td>
                    <td data-testid="track-version">{format!("v{}", t.version)}</td>
                    <td data-testid="track-share">{share}</td>
                    <td>{t.replicas}</td>
                    <td class="num">{num(|p| p.requests.to_string())}</td>
                    <td class="num">{num(|p| format!("{:.1}%", p.error_percent()))}</td>
                    <td class="num">{num(|p| format!("{:.1} ms", p.p50_ms))}</td>
                    <td class="num">{num(|p| format!("{:.1} ms", p.p99_ms))}</td>
                </tr>
            }
        })
        .collect_view();
    let active = instance.status.is_active() && extra.can_write;
    let (from, to) = (data.from, data.to);
    let line = |f: fn(&TrafficPoint) -> f64| {
        data.versions
            .iter()
            .map(|v| {
                (
                    version_label(&instance, v),
                    v.points.iter().map(|p| p.t).collect(),
                    v.points.iter().map(f).collect(),
                )
            })
            .collect::<Vec<_>>()
    };
    let charts = (!data.versions.is_empty()).then(|| {
        view! {
            <div class="chart-grid" data-testid="version-charts">
                <SeriesCard title="Requests per second by version" metric="version-qps" from to
                    lines=line(TrafficPoint::qps) unit="/s" />
                <SeriesCard title="p50 latency by version (ms)" metric="version-latency" from to
                    lines=line(|p| p.p50_ms) unit="ms" />
                <SeriesCard title="Errors by version (%)" metric="version-errors" from to
                    lines=line(TrafficPoint::error_percent) unit="%" />
            </div>
        }
    });
    view! {
        {alias}
        <table class="grid tracks" data-testid="tracks">
            <thead><tr>
                <th>"Track"</th><th>"Version"</th><th>"Share"</th><th>"Replicas"</th>
                <th>"Calls"</th><th>"Errors"</th><th>"p50"</th><th>"p99"</th>
            </tr></thead>
            <tbody>{rows}</tbody>
        </table>
        <p class="hint">"Calls over the range above, counted at the console's endpoint; a shadow's are the copies it got."</p>
        {active.then(|| view! { <ReleaseForms instance=instance.clone() versions=extra.versions.clone() /> })}
        {charts}
        <ShadowCalls calls=extra.shadow_calls />
    }
}

/// The release steps the instance's tracks allow.
#[component]
fn ReleaseForms(instance: ServingInstance, versions: Vec<u32>) -> impl IntoView {
    let action = ServerAction::<ReleaseServing>::new();
    let error = Signal::derive(last_error(action));
    let name = instance.name.clone();
    let others: Vec<u32> = versions
        .into_iter()
        .filter(|v| *v != instance.version)
        .collect();
    let hidden = |a: &'static str| {
        view! {
            <input type="hidden" name="name" value=name.clone() />
            <input type="hidden" name="change[action]" value=a />
        }
    };
    let choose = |track: &'static str, percent: &'static str| {
        let others: Vec<u32> = others.clone();
        view! {
            <label>"Version "
                <select name="change[version]" aria-label=format!("{track} version")>
                    {others.into_iter().map(|v| view! { <option value=v.to_string()>{format!("v{v}")}</option> }).collect_view()}
                </select>
            </label>
            <label>{if track == "shadow" { "copy of " } else { "takes " }}
                <input name="change[percent]" type="number" min="1" max=if track == "shadow" { "100" } else { "99" }
                    value=percent aria-label=format!("{track} percent") class="narrow" />
                "% of calls"
            </label>
            <label>"on " <input name="change[replicas]" type="number" min="1" max="64" value="1"
                aria-label=format!("{track} replicas") class="narrow" /> " replica(s)"</label>
        }
    };
    let can_start = !others.is_empty();
    let (h_promote, h_rollback, h_canary, h_end, h_shadow) = (
        hidden("promote"),
        hidden("rollback"),
        hidden("canary"),
        hidden("end_shadow"),
        hidden("shadow"),
    );
    let (c_canary, c_shadow) = (choose("canary", "10"), choose("shadow", "100"));
    view! {
        <div class="release-forms" data-testid="release-forms">
            <FormError error />
            {match instance.spec.canary {
                Some(c) => view! {
                    <ActionForm action attr:class="inline">
                        {h_promote}
                        <button type="submit" class="small primary" data-testid="promote">
                            {format!("Promote v{} to all calls", c.version)}
                        </button>
                    </ActionForm>
                    <ActionForm action attr:class="inline">
                        {h_rollback}
                        <button type="submit" class="small danger" data-testid="rollback">
                            {format!("Roll back v{}", c.version)}
                        </button>
                    </ActionForm>
                }.into_any(),
                None => can_start.then(|| view! {
                    <ActionForm action attr:class="inline-form start-canary">
                        {h_canary}
                        <strong>"Canary"</strong>
                        {c_canary}
                        <button type="submit" class="small" data-testid="start-canary">"Start canary"</button>
                    </ActionForm>
                }).into_any(),
            }}
            {match instance.spec.shadow {
                Some(s) => view! {
                    <ActionForm action attr:class="inline">
                        {h_end}
                        <button type="submit" class="small" data-testid="end-shadow">
                            {format!("End shadow v{}", s.version)}
                        </button>
                    </ActionForm>
                }.into_any(),
                None => can_start.then(|| view! {
                    <ActionForm action attr:class="inline-form start-shadow">
                        {h_shadow}
                        <strong>"Shadow"</strong>
                        {c_shadow}
                        <button type="submit" class="small" data-testid="start-shadow">"Start shadow"</button>
                    </ActionForm>
                }).into_any(),
            }}
            {["canary.version", "canary.percent", "canary.replicas", "shadow.version", "shadow.percent", "shadow.replicas", "action"]
                .into_iter()
                .map(|field| view! { <FieldError error field /> })
                .collect_view()}
        </div>
    }
}

/// The newest calls mirrored to the shadow, with both answers.
#[component]
fn ShadowCalls(calls: Vec<ShadowCall>) -> impl IntoView {
    (!calls.is_empty()).then(|| {
        let agree = calls.iter().filter(|c| c.agrees).count();
        let total = calls.len();
        view! {
            <h3>"Shadow calls"</h3>
            <p data-testid="shadow-agreement">
                {format!("{agree} of the last {total} answers agree with the main version's.")}
            </p>
            <table class="grid shadow-calls" data-testid="shadow-calls">
                <thead><tr>
                    <th>"When"</th><th>"Shadow"</th><th>"Same"</th><th>"Main answered"</th>
                    <th>"Shadow answered"</th>
                </tr></thead>
                <tbody>
                    {calls.into_iter().map(|c| view! {
                        <tr class:disagrees=!c.agrees>
                            <td>{format_utc(c.at)}</td>
                            <td>{format!("v{}", c.version)}</td>
                            <td>{if c.agrees { "yes" } else { "no" }}</td>
                            <td>
                                <span class="muted">{format!("{} · {:.1} ms ", c.primary_status, c.primary_ms)}</span>
                                <code>{c.primary}</code>
                            </td>
                            <td>
                                <span class="muted">{format!("{} · {:.1} ms ", c.shadow_status, c.shadow_ms)}</span>
                                <code>{c.shadow}</code>
                            </td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        }
    })
}
