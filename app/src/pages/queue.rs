//! `/queue`: what waits for room where the account's jobs run, in the
//! order it will be taken, what each waits for and whose running work
//! holds it, and each account's share of the machine; kept live by job
//! events (and a timer, for serving replicas and notebooks).

use leptos::prelude::*;
use leptos_meta::Title;

use crate::api::usage::job_queue;
use crate::components::live::{beside_regions, LiveRegion, Region};
use crate::components::resource::resource;
use crate::models::quantity::{format_cpu, format_memory};
use crate::models::time::format_utc;
use crate::models::{Holding, Priority, QueueView, ResourceTotals, Waiting, WorkRef};

/// The region a refresh renders.
const REGION: &str = "queue";

/// "2 CPUs · 4Gi · 1 GPU".
fn amounts(t: &ResourceTotals) -> String {
    let mut parts = vec![
        format!("{} CPU", format_cpu(t.cpu_millis)),
        format_memory(t.memory_bytes),
    ];
    if t.gpu > 0 {
        parts.push(format!("{} GPU", t.gpu));
    }
    parts.join(" · ")
}

/// The work's name, linked to its page where it is the caller's job.
fn work_cell(w: &WorkRef) -> AnyView {
    match (&w.name, w.kind) {
        (Some(name), crate::models::WorkKind::Job) => view! {
            <a href=format!("/jobs/{name}")>{name.clone()}</a>
        }
        .into_any(),
        (Some(name), kind) => view! { <span>{format!("{} {name}", kind.noun())}</span> }.into_any(),
        (None, kind) => {
            view! { <span class="muted">{format!("a {}", kind.noun())}</span> }.into_any()
        }
    }
}

fn priority_badge(p: Priority) -> impl IntoView {
    view! { <span class=format!("badge priority-{}", p.as_str()) data-testid="priority">{p.as_str()}</span> }
}

fn waiting_row(w: Waiting) -> impl IntoView {
    let starts = match w.starts_by {
        Some(at) => format_utc(at),
        None => "unknown: it waits behind work with no time limit".to_owned(),
    };
    let behind = if w.held_by.is_empty() {
        "its turn".to_owned()
    } else {
        w.held_by
            .iter()
            .map(WorkRef::describe)
            .collect::<Vec<_>>()
            .join(", ")
    };
    view! {
        <tr data-position=w.position.to_string() data-name=w.work.name.clone().unwrap_or_default() data-account=w.work.account.clone()>
            <td class="num" data-testid="position">{w.position}</td>
            <td>{work_cell(&w.work)}</td>
            <td>{w.work.account.clone()}</td>
            <td>{priority_badge(w.priority)}</td>
            <td>{amounts(&w.asks)}</td>
            <td>{format_utc(w.since)}</td>
            <td data-testid="reason">{w.reason.clone()}</td>
            <td data-testid="held-by">{behind}</td>
            <td data-testid="starts-by">{starts}</td>
        </tr>
    }
}

fn holding_row(h: Holding) -> impl IntoView {
    view! {
        <tr data-name=h.work.name.clone().unwrap_or_default() data-account=h.work.account.clone()>
            <td>{work_cell(&h.work)}</td>
            <td>{h.work.account.clone()}</td>
            <td>
                {priority_badge(h.priority)}
                {h.preempted.then(|| view! {
                    <span class="status stalled" data-testid="preempted"
                        title="Giving its room back to higher-priority work of its account; it queues again">
                        "preempted"
                    </span>
                })}
            </td>
            <td>{amounts(&h.holds)}</td>
            <td>{format_utc(h.since)}</td>
            <td data-testid="ends-by">{h.ends_by.map(format_utc).unwrap_or_else(|| "no time limit".to_owned())}</td>
        </tr>
    }
}

/// The queue, the running work and the shares.
#[component]
fn QueueBody(q: QueueView) -> impl IntoView {
    let rule = if q.ordered_here {
        "Taken in this order: inside an account, high priority first, then normal, then low, \
         each oldest first; between accounts, the account holding the smallest share of the \
         machine goes next. The first that does not fit waits, and everything behind it waits \
         too, so a large job is never starved by small ones. A start is estimated from the \
         time limits of the work it waits behind (the latest it can be; earlier if that work \
         ends sooner)."
    } else {
        "The cluster's scheduler decides: it takes pending pods by priority class, then age, \
         and places each where it fits. This is that order for this console's jobs, with the \
         scheduler's reasons; other workloads on the nodes count only as room taken. A start \
         is estimated from the time limits of the console's running jobs (the latest it can \
         be)."
    };
    let waiting = if q.waiting.is_empty() {
        view! { <p class="empty" data-testid="queue-empty">"Nothing waits for room."</p> }
            .into_any()
    } else {
        view! {
            <table class="grid" data-testid="waiting">
                <thead><tr>
                    <th>"#"</th><th>"What"</th><th>"Account"</th><th>"Priority"</th>
                    <th>"Asks for"</th><th>"Waiting since"</th><th>"Waits for"</th><th>"Behind"</th>
                    <th title="At the latest: by the time limits of what it waits behind">"Starts by"</th>
                </tr></thead>
                <tbody>{q.waiting.into_iter().map(waiting_row).collect_view()}</tbody>
            </table>
        }
        .into_any()
    };
    let running = (!q.running.is_empty()).then(|| {
        view! {
            <h2>"Holding room now"</h2>
            <table class="grid" data-testid="holding">
                <thead><tr><th>"What"</th><th>"Account"</th><th>"Priority"</th><th>"Holds"</th><th>"Since"</th><th>"Ends by"</th></tr></thead>
                <tbody>{q.running.into_iter().map(holding_row).collect_view()}</tbody>
            </table>
        }
    });
    let shares = (!q.shares.is_empty()).then(|| {
        view! {
            <h2>"Shares of the machine"</h2>
            <ul class="shares" data-testid="shares">
                {q.shares.into_iter().map(|s| {
                    let pct = s.share * 100.0;
                    view! {
                        <li data-account=s.account.clone()>
                            <span class="label">{s.account.clone()}</span>
                            <div class="track" role="meter" aria-label=s.account.clone() aria-valuemin="0" aria-valuemax="100" aria-valuenow=format!("{pct:.0}")>
                                <div class="fill" style=format!("width:{:.1}%", pct.min(100.0))></div>
                            </div>
                            <span class="num">{format!("{pct:.0}%")}</span>
                        </li>
                    }
                }).collect_view()}
            </ul>
        }
    });
    view! {
        <p class="hint" data-testid="queue-rule">{rule}</p>
        <h2>{format!("Waiting on {}", q.cluster)}</h2>
        {waiting}
        {running}
        {shares}
    }
}

/// The Queue page.
#[component]
pub fn QueuePage() -> impl IntoView {
    let data = resource(|| (), |_| job_queue());
    view! {
        {beside_regions(|| view! {
            <Title text="Queue" />
            <h1>"Queue"</h1>
            <LiveRegion target=REGION.to_owned() events="/events/jobs".to_owned() every_secs=5 />
        })}
        <Transition fallback=|| view! { <p class="loading">"Loading…"</p> }>
            {move || Suspend::new(async move {
                data.await.map(|q| view! {
                    <Region id=REGION>
                        <QueueBody q />
                    </Region>
                })
            })}
        </Transition>
    }
}
