//! `/account/audit`: the account's whole audit log, for its owners (and
//! site admins, any account with `?account=`): filtered by actor, action or
//! kind and time, 50 events a page with older and newer pages. The filters
//! are a plain GET form and the pages plain links, so the state is the URL
//! and it all works without JavaScript.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;
use leptos_router::params::ParamsMap;

use crate::api::accounts::account_audit;
use crate::components::links::page_href;
use crate::components::resource::resource;
use crate::models::time::format_utc_seconds;
use crate::models::url::href_with;
use crate::models::{AuditEvent, AuditQuery};

/// The page's own URL with `changes` (paging drops the other cursor).
fn audit_href(params: &ParamsMap, changes: &[(&str, Option<String>)]) -> String {
    page_href("/account/audit", params, changes)
}

/// The log's events as a table (also the Account page's latest events).
#[component]
pub fn AuditTable(
    /// The events, newest first.
    events: Vec<AuditEvent>,
) -> impl IntoView {
    view! {
        <table class="grid" data-testid="audit">
            <thead>
                <tr>
                    <th>"When"</th>
                    <th>"Who"</th>
                    <th>"What"</th>
                    <th>"Details"</th>
                </tr>
            </thead>
            <tbody>
                {events
                    .into_iter()
                    .map(|e| {
                        view! {
                            <tr data-event=e.id>
                                <td>{format_utc_seconds(e.at)}</td>
                                <td data-testid="audit-actor">{e.actor}</td>
                                <td data-testid="audit-action">{e.action}</td>
                                <td>{e.detail}</td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
    }
}

/// The audit log page.
#[component]
pub fn AuditLogPage() -> impl IntoView {
    let params = use_query_map();
    let query = Memo::new(move |_| params.with(|p| AuditQuery::from_params(|k| p.get(k))));
    let account = Memo::new(move |_| params.with(|p| p.get("account")));
    let log = resource(
        move || (query.get(), account.get()),
        |(query, account)| account_audit(query, account),
    );
    let q = query.get_untracked();
    let value = |v: &Option<String>| v.clone().unwrap_or_default();
    let csv = params.with_untracked(|p| {
        href_with(
            "/api/v1/audit.csv",
            p.latest_values()
                // The filters alone; a form's blank field is none (the API
                // refuses a blank day).
                .filter(|(k, v)| {
                    !matches!(k.as_ref(), "before" | "after" | "limit") && !v.trim().is_empty()
                })
                .map(|(k, v)| (k.as_ref(), v)),
            &[],
        )
    });
    view! {
        <Title text="Audit log" />
        <div class="page-head">
            <h1>"Audit log"</h1>
            <a href="/account" class="button">"← Account"</a>
        </div>
        <p class="hint">
            "Who changed members, roles, passwords, keys and the quota, and when (UTC). "
            <a href=csv download data-testid="audit-csv">"Download these as CSV"</a>
        </p>
        <form method="GET" action="/account/audit" class="filters" data-testid="audit-filters">
            {account.get_untracked().map(|a| view! { <input type="hidden" name="account" value=a /> })}
            <label>
                "Who"
                <input type="search" name="actor" placeholder="Part of an email" value=value(&q.actor) />
            </label>
            <label>
                "What"
                <Transition fallback=move || view! { <input type="text" name="action" value=value(&query.get_untracked().action) /> }>
                    {move || Suspend::new(async move {
                        let chosen = query.get_untracked().action.unwrap_or_default();
                        let actions = log.await.map(|l| l.actions).unwrap_or_default();
                        let kinds = kinds(&actions);
                        view! {
                            <select name="action">
                                <option value="" selected=chosen.is_empty()>"Anything"</option>
                                {kinds
                                    .into_iter()
                                    .map(|k| {
                                        let label = format!("{k}.* (all)");
                                        view! { <option value=k.clone() selected=chosen == k>{label}</option> }
                                    })
                                    .collect_view()}
                                {actions
                                    .into_iter()
                                    .map(|a| view! { <option value=a.clone() selected=chosen == a>{a.clone()}</option> })
                                    .collect_view()}
                            </select>
                        }
                    })}
                </Transition>
            </label>
            <label>
                "From"
                <input type="date" name="from" value=value(&q.from) />
            </label>
            <label>
                "to"
                <input type="date" name="to" value=value(&q.to) />
            </label>
            <button type="submit">"Apply"</button>
            <a href="/account/audit" class="reset">"Reset"</a>
        </form>
        <Transition fallback=|| view! { <p class="loading">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match log.await {
                    Err(err) => view! { <p class="banner error" role="alert">{err.to_string()}</p> }.into_any(),
                    Ok(log) if log.events.is_empty() => {
                        view! {
                            <section class="empty-state" data-testid="no-events">
                                <p>"No events match. Change the filters, or go back to the newest."</p>
                            </section>
                            <Pager older=None newer=None paged=query.get_untracked().before.is_some() || query.get_untracked().after.is_some() />
                        }
                            .into_any()
                    }
                    Ok(log) => {
                        let paged = log.newer.is_some();
                        view! {
                            <AuditTable events=log.events />
                            <Pager older=log.older newer=log.newer paged />
                        }
                            .into_any()
                    }
                }
            })}
        </Transition>
    }
}

/// The kinds of `actions` (`key` of `key.created`), where a kind has more
/// than one action.
fn kinds(actions: &[String]) -> Vec<String> {
    let mut kinds: Vec<String> = Vec::new();
    for a in actions {
        if let Some((kind, _)) = a.split_once('.') {
            let many = actions
                .iter()
                .filter(|b| b.starts_with(&format!("{kind}.")))
                .count()
                > 1;
            if many && !kinds.iter().any(|k| k == kind) {
                kinds.push(kind.to_owned());
            }
        }
    }
    kinds
}

/// Newest, newer and older pages, as links on the page's own URL.
#[component]
fn Pager(
    /// The `before` of the next page of older events.
    older: Option<String>,
    /// The `after` of the page of newer events.
    newer: Option<String>,
    /// Whether this is not the newest page.
    paged: bool,
) -> impl IntoView {
    let params = use_query_map();
    let link =
        move |changes: &[(&str, Option<String>)]| params.with_untracked(|p| audit_href(p, changes));
    let newest = paged.then(|| link(&[("before", None), ("after", None)]));
    let newer = newer.map(|c| link(&[("before", None), ("after", Some(c))]));
    let older = older.map(|c| link(&[("after", None), ("before", Some(c))]));
    view! {
        <nav class="pager" aria-label="Pages" data-testid="audit-pager">
            {newest.map(|href| view! { <a href=href data-testid="audit-newest">"⇤ Newest"</a> })}
            {newer.map(|href| view! { <a href=href data-testid="audit-newer">"← Newer"</a> })}
            {older.map(|href| view! { <a href=href data-testid="audit-older">"Older →"</a> })}
        </nav>
    }
}
