//! `/alerts`: the account's metric alert rules (a PaddleBoard tag that is
//! NaN or infinite, above or below a threshold, or silent for some
//! minutes), the "New rule" form, and the alerts they raised, open first,
//! each linking its job and its chart. Works without JavaScript; the
//! region refreshes itself every few seconds.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::api::alerts::{read_alerts, CreateAlertRule, DeleteAlertRule};
use crate::components::form::{last_error, FieldError, FormError};
use crate::components::live::{beside_regions, LiveRegion, Region};
use crate::components::resource::resource;
use crate::models::time::format_utc_seconds;
use crate::models::url::encode;
use crate::models::{Alert, AlertRule};

/// The Alerts page.
#[component]
pub fn AlertsPage() -> impl IntoView {
    let page = resource(|| (), |_| read_alerts());
    view! {
        {beside_regions(|| view! {
            <Title text="Alerts" />
            <div class="page-head">
                <h1>"Alerts"</h1>
                <nav class="page-links"><a href="/paddleboard">"PaddleBoard"</a><a href="/notifications">"Notifications"</a></nav>
            </div>
            <p class="hint">
                "A rule watches a PaddleBoard tag of every running job of the account, or of one job: a value that is NaN or infinite (anywhere in what a job wrote), a newest value above or below a threshold, or no new point for some minutes. "
                "When it fires, the alert is listed here, marked on the tag's chart and told to whoever follows the job or the account for "
                <em>"alerts"</em>
                " on the " <a href="/notifications">"notifications page"</a> ". It resolves by itself when its condition stops holding."
            </p>
        })}
        <Region id="alerts-page">
            <Transition fallback=|| view! { <p class="loading">"Loading alerts…"</p> }>
                {move || Suspend::new(async move {
                    match page.await {
                        Err(err) => view! { <p class="banner error" role="alert">{err.to_string()}</p> }.into_any(),
                        Ok((rules, alerts)) => view! {
                            <Rules rules />
                            <Raised alerts />
                        }.into_any(),
                    }
                })}
            </Transition>
        </Region>
        {beside_regions(|| view! {
            <LiveRegion target="alerts-page".to_owned() every_secs=5 />
            <NewRule />
        })}
    }
}

#[component]
fn Rules(rules: Vec<AlertRule>) -> impl IntoView {
    let delete = ServerAction::<DeleteAlertRule>::new();
    let error = Signal::derive(last_error(delete));
    if rules.is_empty() {
        return view! { <p class="empty" data-testid="no-rules">"No alert rule yet."</p> }
            .into_any();
    }
    view! {
        <section class="panel" aria-labelledby="alert-rules">
            <h2 id="alert-rules">"Rules"</h2>
            <FormError error />
            <table class="grid" data-testid="alert-rules">
                <thead><tr><th>"Rule"</th><th>"Fires when"</th><th>"Open"</th><th>"By"</th><th></th></tr></thead>
                <tbody>
                    {rules.into_iter().map(|r| {
                        let (name, row, shown) = (r.spec.name.clone(), r.spec.name.clone(), r.spec.name.clone());
                        view! {
                            <tr data-rule=row>
                                <td class="name">{shown}</td>
                                <td>{r.spec.summary()}</td>
                                <td data-testid="open-count">{r.open}</td>
                                <td>{format!("{} · {}", r.created_by, format_utc_seconds(r.created_at))}</td>
                                <td>
                                    <ActionForm action=delete attr:class="inline">
                                        <input type="hidden" name="name" value=name />
                                        <button type="submit" class="small danger" data-testid="delete-rule">"Delete"</button>
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

#[component]
fn Raised(alerts: Vec<Alert>) -> impl IntoView {
    view! {
        <section class="panel" aria-labelledby="raised-alerts">
            <h2 id="raised-alerts">"Alerts"</h2>
            {if alerts.is_empty() {
                view! { <p class="empty" data-testid="no-alerts">"Nothing has fired."</p> }.into_any()
            } else {
                view! {
                    <table class="grid" data-testid="alerts">
                        <thead><tr><th>"Raised (UTC)"</th><th>"Job"</th><th>"What"</th><th>"Rule"</th><th>"State"</th></tr></thead>
                        <tbody>
                            {alerts.into_iter().map(|a| {
                                let state = if a.is_open() { "open" } else { "resolved" };
                                let resolved = a.resolved_at.map(|t| format!(" {}", format_utc_seconds(t))).unwrap_or_default();
                                view! {
                                    <tr data-alert=a.id data-state=state data-job=a.job.clone()>
                                        <td>{format_utc_seconds(a.raised_at)}</td>
                                        <td><a href=format!("/jobs/{}", encode(&a.job))>{a.job.clone()}</a></td>
                                        <td><a href=a.board_href()>{a.message.clone()}</a></td>
                                        <td>{a.rule.clone()}</td>
                                        <td><span class=format!("status {state}")>{state}</span>{resolved}</td>
                                    </tr>
                                }
                            }).collect_view()}
                        </tbody>
                    </table>
                }.into_any()
            }}
        </section>
    }
}

/// The "New rule" form.
#[component]
fn NewRule() -> impl IntoView {
    let action = ServerAction::<CreateAlertRule>::new();
    let error = Signal::derive(last_error(action));
    view! {
        <section class="panel" aria-labelledby="new-rule">
            <h2 id="new-rule">"New rule"</h2>
            <ActionForm action attr:class="run-template" attr:data-testid="new-rule-form">
                <FormError error />
                <div class="form-grid">
                    <label for="rule-name">"Name"</label>
                    <input id="rule-name" name="form[name]" required placeholder="loss-diverged" />
                    <FieldError error field="name" />
                    <label for="rule-tag">"Tag"</label>
                    <input id="rule-tag" name="form[tag]" required placeholder="loss" />
                    <FieldError error field="tag" />
                    <label for="rule-job">"Job (empty: every running job)"</label>
                    <input id="rule-job" name="form[job]" placeholder="train-1" />
                    <FieldError error field="job" />
                    <label for="rule-kind">"Fires when the tag"</label>
                    <select id="rule-kind" name="form[kind]">
                        <option value="not_finite">"is NaN or infinite"</option>
                        <option value="above">"is above the threshold"</option>
                        <option value="below">"is below the threshold"</option>
                        <option value="silent">"has no new point for the minutes"</option>
                    </select>
                    <label for="rule-amount">"Threshold or minutes"</label>
                    <input id="rule-amount" name="form[amount]" placeholder="2.5" />
                    <FieldError error field="condition" />
                </div>
                <footer><button type="submit" class="primary" data-testid="create-rule">"Save rule"</button></footer>
            </ActionForm>
        </section>
    }
}
