//! `/notifications`: what the signed-in user is told of and how (their
//! subscriptions, each with "Send a test" and "Unsubscribe"), the
//! "Subscribe" form (prefilled from `?kind=job&name=…`, where a job's,
//! pipeline's, experiment's or serving instance's page links), and the log
//! of deliveries, filtered by status and paged with `?before=`. Works
//! without JavaScript; the region refreshes itself every few seconds.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::api::notifications::{read_notifications, Subscribe, TestSubscription, Unsubscribe};
use crate::components::form::{last_error, FieldError, FormError};
use crate::components::live::{beside_regions, LiveRegion, Region};
use crate::components::resource::resource;
use crate::models::time::format_utc_seconds;
use crate::models::url::href_with;
use crate::models::{Delivery, DeliveryQuery, DeliveryStatus, Subscription, DELIVERIES_SHOWN};

/// The Notifications page.
#[component]
pub fn NotificationsPage() -> impl IntoView {
    let params = use_query_map();
    let query = move || {
        params.with(|p| DeliveryQuery {
            status: p.get("status"),
            subscription: p.get("subscription").and_then(|s| s.parse().ok()),
            before: p.get("before").and_then(|s| s.parse().ok()),
        })
    };
    let page = resource(query, read_notifications);
    let (kind, name) = params.with_untracked(|p| {
        (
            p.get("kind").unwrap_or_else(|| "job".to_owned()),
            p.get("name").unwrap_or_default(),
        )
    });
    view! {
        {beside_regions(|| view! {
            <Title text="Notifications" />
            <div class="page-head"><h1>"Notifications"</h1></div>
            <p class="hint">
                "Be told when a job, a pipeline run or an experiment fails or succeeds, when one waits for quota, when a job raises a metric alert, or when a serving instance cannot run: by email, or by a webhook POST signed as the "
                <a href="https://www.standardwebhooks.com/">"Standard Webhooks"</a>
                " specification says (or in Slack's shape). A try that fails is tried again later, six tries in all; every try is in the log below. What you follow here is yours alone."
            </p>
        })}
        <Region id="notifications-page">
            <Transition fallback=|| view! { <p class="loading">"Loading notifications…"</p> }>
                {move || Suspend::new(async move {
                    match page.await {
                        Err(err) => view! { <p class="banner error" role="alert">{err.to_string()}</p> }.into_any(),
                        Ok((subscriptions, deliveries)) => view! {
                            <Subscriptions list=subscriptions />
                            <Deliveries list=deliveries query=query() />
                        }.into_any(),
                    }
                })}
            </Transition>
        </Region>
        {beside_regions(move || view! {
            <LiveRegion target="notifications-page".to_owned() every_secs=5 />
            <NewSubscription kind=kind.clone() name=name.clone() />
        })}
    }
}

#[component]
fn Subscriptions(list: Vec<Subscription>) -> impl IntoView {
    let test = ServerAction::<TestSubscription>::new();
    let unsubscribe = ServerAction::<Unsubscribe>::new();
    let (test_error, gone_error) = (
        Signal::derive(last_error(test)),
        Signal::derive(last_error(unsubscribe)),
    );
    if list.is_empty() {
        return view! { <p class="empty" data-testid="no-subscriptions">"You follow nothing yet."</p> }
            .into_any();
    }
    view! {
        <section class="panel" aria-labelledby="subscriptions">
            <h2 id="subscriptions">"What you follow"</h2>
            <FormError error=test_error />
            <FormError error=gone_error />
            <table class="grid" data-testid="subscriptions">
                <thead><tr><th>"Follows"</th><th>"When it"</th><th>"Told by"</th><th>"Since"</th><th></th></tr></thead>
                <tbody>
                    {list.into_iter().map(|s| {
                        let (subject, href) = (s.spec.subject.label(), s.spec.subject.href());
                        let secret = s.secret.clone().map(|secret| view! {
                            <details class="secret">
                                <summary>"Signing secret"</summary>
                                <code data-testid="signing-secret">{secret}</code>
                            </details>
                        });
                        view! {
                            <tr data-subscription=s.id>
                                <td><a href=href>{subject}</a></td>
                                <td>{s.events_label()}</td>
                                <td><span class="channel">{s.spec.channel.label()}</span>{secret}</td>
                                <td>{format_utc_seconds(s.created_at)}</td>
                                <td class="actions">
                                    <ActionForm action=test attr:class="inline">
                                        <input type="hidden" name="id" value=s.id />
                                        <button type="submit" class="small" data-testid="send-test">"Send a test"</button>
                                    </ActionForm>
                                    <ActionForm action=unsubscribe attr:class="inline">
                                        <input type="hidden" name="id" value=s.id />
                                        <button type="submit" class="small danger" data-testid="unsubscribe">"Unsubscribe"</button>
                                    </ActionForm>
                                </td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </section>
    }
    .into_any()
}

/// The link to the log with `status` (`None`: every status).
fn status_href(query: &DeliveryQuery, status: Option<DeliveryStatus>) -> String {
    let subscription = query.subscription.map(|s| s.to_string());
    let mut pairs = vec![];
    if let Some(s) = &subscription {
        pairs.push(("subscription", s.as_str()));
    }
    href_with(
        "/notifications",
        pairs,
        &[("status", status.map(|s| s.as_str().to_owned()))],
    )
}

#[component]
fn Deliveries(list: Vec<Delivery>, query: DeliveryQuery) -> impl IntoView {
    let current = query.status.clone().unwrap_or_default();
    let filters = std::iter::once((None, "all"))
        .chain(DeliveryStatus::ALL.into_iter().map(|s| (Some(s), s.as_str())))
        .map(|(status, label)| {
            let here = (label == "all" && current.is_empty()) || label == current;
            view! { <a href=status_href(&query, status) aria-current=here.then_some("page")>{label}</a> }
        })
        .collect_view();
    let older = (list.len() >= DELIVERIES_SHOWN)
        .then(|| list.last().map(|d| d.id))
        .flatten()
        .map(|before| {
            let mut pairs = vec![];
            if let Some(s) = &query.status {
                pairs.push(("status", s.as_str()));
            }
            let href = href_with(
                "/notifications",
                pairs,
                &[("before", Some(before.to_string()))],
            );
            view! { <a href=href data-testid="older-deliveries">"Older deliveries"</a> }
        });
    view! {
        <section class="panel" aria-labelledby="deliveries">
            <h2 id="deliveries">"Deliveries"</h2>
            <nav class="filters" aria-label="Delivery status">{filters}</nav>
            {if list.is_empty() {
                view! { <p class="empty" data-testid="no-deliveries">"Nothing sent yet."</p> }.into_any()
            } else {
                view! { <DeliveryTable list /> }.into_any()
            }}
            {older}
        </section>
    }
}

#[component]
fn DeliveryTable(list: Vec<Delivery>) -> impl IntoView {
    view! {
        <table class="grid" data-testid="deliveries">
            <thead><tr><th>"Queued (UTC)"</th><th>"What"</th><th>"To"</th><th>"Status"</th><th>"Tries"</th><th>"Last answer"</th><th>"Next try"</th></tr></thead>
            <tbody>
                {list.into_iter().map(|d| {
                    let status = d.status.as_str();
                    let answer = match (d.response_code, d.last_error.clone()) {
                        (_, None) => String::new(),
                        (Some(code), Some(why)) if !why.contains(&code.to_string()) => format!("{code}: {why}"),
                        (_, Some(why)) => why,
                    };
                    let next = d.next_at.filter(|_| d.status == DeliveryStatus::Pending).map(format_utc_seconds).unwrap_or_default();
                    view! {
                        <tr data-delivery=d.id data-status=status data-event=d.notice.event.as_str()>
                            <td>{format_utc_seconds(d.created_at)}</td>
                            <td><a href=d.notice.subject.href()>{d.notice.headline()}</a></td>
                            <td>{d.channel.clone()}</td>
                            <td><span class=format!("status {status}")>{status}</span></td>
                            <td>{d.attempts}</td>
                            <td class="why">{answer}</td>
                            <td>{next}</td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
    }
}

/// The "Subscribe" form, its subject prefilled from the query.
#[component]
fn NewSubscription(kind: String, name: String) -> impl IntoView {
    let action = ServerAction::<Subscribe>::new();
    let error = Signal::derive(last_error(action));
    let kinds = [
        ("job", "a job"),
        ("pipeline", "a pipeline run"),
        ("experiment", "an experiment"),
        ("serving", "a serving instance"),
        ("account", "everything in the account"),
    ];
    view! {
        <section class="panel" aria-labelledby="new-subscription">
            <h2 id="new-subscription">"Subscribe"</h2>
            <ActionForm action attr:class="run-template" attr:data-testid="subscribe-form">
                <FormError error />
                <div class="form-grid">
                    <label for="notify-kind">"Follow"</label>
                    <select id="notify-kind" name="form[kind]">
                        {kinds.into_iter().map(|(value, label)| {
                            let chosen = value == kind;
                            view! { <option value=value selected=chosen>{label}</option> }
                        }).collect_view()}
                    </select>
                    <FieldError error field="subject.kind" />
                    <label for="notify-name">"Its name (none for the account)"</label>
                    <input id="notify-name" name="form[name]" value=name placeholder="train-1" />
                    <FieldError error field="subject.name" />
                    <span>"When it"</span>
                    <fieldset class="checks">
                        <label><input type="checkbox" name="form[on_failed]" checked /> " fails"</label>
                        <label><input type="checkbox" name="form[on_succeeded]" /> " succeeds"</label>
                        <label><input type="checkbox" name="form[on_over_quota]" /> " waits for quota (pipelines, experiments)"</label>
                        <label><input type="checkbox" name="form[on_alert]" /> " raises a metric alert (jobs; see " <a href="/alerts">"Alerts"</a> ")"</label>
                        <label><input type="checkbox" name="form[on_stalled]" /> " stalls (jobs: no log line, metric point or CPU use for a while)"</label>
                        <label><input type="checkbox" name="form[on_idle_gpus]" /> " holds idle GPUs (jobs: under 5% for a while)"</label>
                    </fieldset>
                    <FieldError error field="events" />
                    <label for="notify-channel">"Tell me by"</label>
                    <select id="notify-channel" name="form[channel]">
                        <option value="email">"email"</option>
                        <option value="webhook">"webhook (signed JSON)"</option>
                        <option value="slack">"webhook (Slack's shape)"</option>
                    </select>
                    <label for="notify-url">"Webhook URL"</label>
                    <input id="notify-url" name="form[url]" type="url" placeholder="https://hooks.example.com/…" />
                    <FieldError error field="channel.url" />
                </div>
                <footer><button type="submit" class="primary" data-testid="subscribe">"Subscribe"</button></footer>
            </ActionForm>
        </section>
    }
}
