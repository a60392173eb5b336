//! `/quota`: the account's quota as bars of used vs total, the owner's form
//! to change it, and CPU/GPU hours per window, per member and per day (a
//! chart, and a CSV export). A site admin opens any account's with
//! `?account=NAME`.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::api::usage::{quota_view, QuotaPage, SetQuota};
use crate::components::chart::css_color;
use crate::components::form::{last_error, FieldError, FormError};
use crate::components::resource::resource;
use crate::models::quantity::{format_cpu, format_memory};
use crate::models::time::format_date;
use crate::models::url::encode;
use crate::models::{ClusterCapacity, DayHours, Hours, QuotaForm, QuotaUse, UsedFrom, WINDOWS};

/// One resource's bar: used of total, or "no limit".
#[component]
pub(crate) fn Bar(
    label: &'static str,
    used: u64,
    limit: Option<u64>,
    show: fn(u64) -> String,
    /// `quota-bar`, or `machine-bar` for the machine's room.
    #[prop(default = "quota-bar")]
    class: &'static str,
) -> impl IntoView {
    let (pct, text) = match limit {
        Some(0) => (100.0, format!("{} of 0", show(used))),
        Some(l) => (
            (used as f64 / l as f64 * 100.0).min(100.0),
            format!("{} of {}", show(used), show(l)),
        ),
        None => (0.0, format!("{} · no limit", show(used))),
    };
    let over = limit.is_some_and(|l| used > l);
    view! {
        <div class=class data-resource=label.to_lowercase()>
            <span class="label">{label}</span>
            <div class="track" role="meter" aria-label=label aria-valuemin="0" aria-valuemax="100" aria-valuenow=format!("{pct:.0}")>
                <div class="fill" class:over=over style=format!("width:{pct:.1}%")></div>
            </div>
            <span class="num" data-testid="quota-text">{text}</span>
        </div>
    }
}

/// The bars.
#[component]
fn QuotaBars(q: QuotaUse) -> impl IntoView {
    let count = |n: u64| n.to_string();
    let from = match q.from {
        UsedFrom::Console => "Used: what pending and running jobs request.",
        UsedFrom::Kubernetes => "Used: as the namespace's ResourceQuota counts it.",
    };
    view! {
        <section class="quota-bars" data-testid="quota-bars">
            <Bar label="CPU" used=q.used.cpu_millis limit=q.quota.cpu_millis show=format_cpu />
            <Bar label="Memory" used=q.used.memory_bytes limit=q.quota.memory_bytes show=format_memory />
            <Bar label="GPU" used=q.used.gpu limit=q.quota.gpu show=count />
            <Bar label="Jobs" used=q.jobs limit=q.quota.max_jobs show=count />
            <p class="hint">
                {from}
                {q.updated.map(|(by, at)| format!(" Quota set by {by} on {}.", format_date(at)))}
            </p>
        </section>
    }
}

/// Where jobs run: the local executor's machine (its room, what is held,
/// the GPUs, the queue, how limits hold), or the cluster's scheduler.
#[component]
fn MachineSection(c: ClusterCapacity) -> impl IntoView {
    let count = |n: u64| n.to_string();
    let room = match (c.total, c.used) {
        (Some(total), Some(used)) => view! {
            <div class="machine-bars">
                <Bar label="CPU" used=used.cpu_millis limit=Some(total.cpu_millis) show=format_cpu class="machine-bar" />
                <Bar label="Memory" used=used.memory_bytes limit=Some(total.memory_bytes) show=format_memory class="machine-bar" />
                <Bar label="GPU" used=used.gpu limit=Some(total.gpu) show=count class="machine-bar" />
            </div>
        }
        .into_any(),
        _ => ().into_any(),
    };
    let gpus = (!c.gpus.is_empty()).then(|| {
        view! {
            <table class="grid gpus" data-testid="gpus">
                <thead><tr><th>"GPU"</th><th>"Model"</th><th>"Memory"</th><th>"Held"</th></tr></thead>
                <tbody>
                    {c.gpus.iter().map(|g| view! {
                        <tr data-gpu=g.index.to_string()>
                            <td class="num">{g.index}</td>
                            <td>{if g.simulated { "simulated (no such device here)".to_owned() } else { g.name.clone() }}</td>
                            <td class="num">{g.memory_bytes.map(format_memory).unwrap_or_default()}</td>
                            <td class:in-use=g.in_use>{if g.in_use { "by a replica" } else { "free" }}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        }
    });
    let queued = match c.queued {
        0 => "Nothing waits for room.".to_owned(),
        1 => "1 job or replica waits for room.".to_owned(),
        n => format!("{n} jobs or replicas wait for room."),
    };
    view! {
        <section class="machine" data-testid="machine">
            <h2>"Where jobs run: " {c.cluster.clone()}</h2>
            {room}
            {gpus}
            <p class="hint" data-testid="queued">{queued} " " <a href="/queue" data-testid="queue-link">"The queue, in order, and why each waits"</a></p>
            <p class="hint" data-testid="limits">{c.limits.describe()}</p>
            <p class="hint" data-testid="capacity-source">{c.source.clone()}</p>
        </section>
    }
}

/// The owner's (or admin's) form.
#[component]
fn QuotaEditor(account: String, q: QuotaUse, action: ServerAction<SetQuota>) -> impl IntoView {
    let error = Signal::derive(last_error(action));
    let form = QuotaForm::of(&q.quota);
    let saved = move || action.value().get().is_some_and(|r| r.is_ok());
    view! {
        <ActionForm action attr:class="quota-form" attr:data-testid="quota-form">
            <h2>"Set the quota"</h2>
            <p class="hint">"Kubernetes quantities; leave a field empty for no limit. Jobs that would go over are refused when submitted."</p>
            <FormError error />
            <input type="hidden" name="account" value=account />
            <div class="fields">
                <label>"CPU (cores)" <input name="form[cpu]" value=form.cpu placeholder="e.g. 16" /></label>
                <FieldError error field="cpu" />
                <label>"Memory" <input name="form[memory]" value=form.memory placeholder="e.g. 64Gi" /></label>
                <FieldError error field="memory" />
                <label>"GPUs" <input name="form[gpu]" value=form.gpu placeholder="e.g. 4" /></label>
                <FieldError error field="gpu" />
                <label>"Jobs at once" <input name="form[max_jobs]" value=form.max_jobs placeholder="e.g. 10" /></label>
                <FieldError error field="max_jobs" />
            </div>
            <button type="submit" class="primary">"Save quota"</button>
            {move || saved().then(|| view! { <span class="ok" role="status">" Saved."</span> })}
        </ActionForm>
    }
}

/// CPU and GPU hours by day, as grouped bars drawn with plotters in the
/// charts' colours (so they follow the theme: `chart::themed`).
fn day_chart(days: &[DayHours]) -> String {
    use crate::components::chart::{themed, AXIS, BACKGROUND, GRID, PALETTE, TEXT};
    use plotters::prelude::*;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (720, 220)).into_drawing_area();
        let _ = root.fill(&BACKGROUND);
        let max = days
            .iter()
            .map(|d| d.hours.cpu.max(d.hours.gpu))
            .fold(0.0, f64::max)
            .max(1.0);
        let n = days.len() as f64;
        let built = ChartBuilder::on(&root)
            .margin(8)
            .x_label_area_size(26)
            .y_label_area_size(50)
            .build_cartesian_2d(0.0..n, 0.0..max * 1.1);
        if let Ok(mut chart) = built {
            let labels = |x: &f64| {
                days.get(*x as usize)
                    .map(|d| format_date(d.day)[5..].to_owned())
                    .unwrap_or_default()
            };
            let _ = chart
                .configure_mesh()
                .x_labels(10)
                .x_label_formatter(&labels)
                .y_desc("hours")
                .bold_line_style(GRID)
                .light_line_style(GRID.mix(0.5))
                .axis_style(AXIS)
                // plotters' own default size, in the charts' text colour.
                .label_style(("sans-serif", 12.percent().max(12), &TEXT))
                .axis_desc_style(("sans-serif", 12.percent().max(12), &TEXT))
                .draw();
            let color = |(r, g, b): (u8, u8, u8)| RGBColor(r, g, b);
            let (cpu, gpu) = (color(PALETTE[0]), color(PALETTE[1]));
            let bars = days.iter().enumerate().flat_map(|(i, d)| {
                let x = i as f64;
                [
                    Rectangle::new([(x + 0.1, 0.0), (x + 0.5, d.hours.cpu)], cpu.filled()),
                    Rectangle::new([(x + 0.5, 0.0), (x + 0.9, d.hours.gpu)], gpu.filled()),
                ]
            });
            let _ = chart.draw_series(bars);
        }
        let _ = root.present();
    }
    themed(&svg)
}

/// Hours as the table shows them: small amounts keep their digits, so a
/// short test run does not read as zero.
fn hours_text(h: f64) -> String {
    if h == 0.0 || h >= 0.01 {
        format!("{h:.2}")
    } else {
        format!("{h:.4}")
    }
}

fn hours(h: &Hours) -> (String, String) {
    (hours_text(h.cpu), hours_text(h.gpu))
}

/// The hours: windows, members, days.
#[component]
fn UsageSection(page: QuotaPage) -> impl IntoView {
    let usage = page.usage;
    let csv = format!("/api/v1/usage.csv?account={}", encode(&page.account));
    view! {
        <section class="usage" data-testid="usage">
            <div class="section-head">
                <h2>"CPU and GPU hours"</h2>
                <a class="button" href=csv download="">"Export CSV"</a>
            </div>
            <p class="hint">"What jobs requested × how long they ran (running jobs up to now)."</p>
            <table class="grid" data-testid="hours">
                <thead>
                    <tr><th>"Who"</th>{WINDOWS.iter().map(|(_, label)| view! { <th>{*label}" CPU-h"</th><th>{*label}" GPU-h"</th> }).collect_view()}</tr>
                </thead>
                <tbody>
                    <tr data-who="account">
                        <td><strong>"Whole account"</strong></td>
                        {usage.windows.iter().map(|h| { let (c, g) = hours(h); view! { <td class="num">{c}</td><td class="num">{g}</td> } }).collect_view()}
                    </tr>
                    {usage.users.iter().map(|u| view! {
                        <tr data-who=u.user.clone()>
                            <td>{if u.user.is_empty() { "(removed user)".to_owned() } else { u.user.clone() }}</td>
                            {u.windows.iter().map(|h| { let (c, g) = hours(h); view! { <td class="num">{c}</td><td class="num">{g}</td> } }).collect_view()}
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
            <figure class="chart-card wide">
                <figcaption><strong>"Hours by day (UTC)"</strong>" · "<span style=format!("color:{}", css_color(0))>"CPU"</span>" · "<span style=format!("color:{}", css_color(1))>"GPU"</span></figcaption>
                <div class="chart-svg" inner_html=day_chart(&usage.days)></div>
            </figure>
        </section>
    }
}

/// The page.
#[component]
pub fn QuotaPageView() -> impl IntoView {
    let query = use_query_map();
    let account = move || query.with(|q| q.get("account"));
    let action = ServerAction::<SetQuota>::new();
    let data = resource(
        move || (account(), action.version().get()),
        |(a, _)| quota_view(a),
    );
    view! {
        <leptos_meta::Title text="Quota" />
        <h1>"Quota"</h1>
        <Transition fallback=|| view! { <p class="loading">"Loading…"</p> }>
            {move || Suspend::new(async move {
                data.await.map(|page| {
                    let editor = page.can_edit.then(|| view! { <QuotaEditor account=page.account.clone() q=page.quota.clone() action /> });
                    view! {
                        <p class="muted">"Account " <strong data-testid="quota-account">{page.account.clone()}</strong></p>
                        <QuotaBars q=page.quota.clone() />
                        {editor}
                        <MachineSection c=page.cluster.clone() />
                        <UsageSection page />
                    }
                })
            })}
        </Transition>
    }
}
