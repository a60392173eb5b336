//! `/admin`: what a site admin looks after: every account with its owners,
//! members and use against its quota (a link sets the quota), and a reset
//! link for a user who cannot get back in.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use super::quota::Bar;
use crate::api::accounts::AdminResetLink;
use crate::api::usage::site_accounts;
use crate::components::form::{last_error, FieldError, FormError};
use crate::components::resource::resource;
use crate::models::quantity::{format_cpu, format_memory};
use crate::models::url::encode;
use crate::models::AccountQuota;

fn account_row(a: AccountQuota) -> impl IntoView {
    let count = |n: u64| n.to_string();
    let q = a.quota;
    let name = a.account.name;
    view! {
        <tr data-testid="site-account">
            <td>
                <a href=format!("/quota?account={}", encode(&name))>{name.clone()}</a>
            </td>
            <td>{a.owners.join(", ")}</td>
            <td>{a.members}</td>
            <td class="bars">
                <Bar label="CPU" used=q.used.cpu_millis limit=q.quota.cpu_millis show=format_cpu />
                <Bar label="Memory" used=q.used.memory_bytes limit=q.quota.memory_bytes show=format_memory />
                <Bar label="GPU" used=q.used.gpu limit=q.quota.gpu show=count />
                <Bar label="Jobs" used=q.jobs limit=q.quota.max_jobs show=count />
            </td>
            <td>
                <a class="button small" href=format!("/quota?account={}", encode(&name))>
                    "Set quota"
                </a>
                " "
                <a href=format!("/api/v1/audit.csv?account={}", encode(&name)) download>
                    "Audit log (CSV)"
                </a>
            </td>
        </tr>
    }
}

/// The site admin's page.
#[component]
pub fn AdminPage() -> impl IntoView {
    let accounts = resource(|| (), |_| site_accounts());
    let reset = ServerAction::<AdminResetLink>::new();
    let error = Signal::derive(last_error(reset));
    let query = use_query_map();
    let sent = move || query.read().get("reset_sent");
    view! {
        <Title text="Site administration" />
        <h1>"Site administration"</h1>
        <Suspense fallback=|| view! { <p class="loading">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match accounts.await {
                    Err(err) => view! { <p class="banner error" role="alert">{err.to_string()}</p> }.into_any(),
                    Ok(rows) => view! {
                        <h2>"Accounts"</h2>
                        <p class="hint">
                            "Use is what pending and running work requests; only site admins set quotas."
                        </p>
                        <table class="grid" data-testid="site-accounts">
                            <thead>
                                <tr>
                                    <th>"Account"</th>
                                    <th>"Owners"</th>
                                    <th>"Members"</th>
                                    <th>"Use of quota"</th>
                                    <th></th>
                                </tr>
                            </thead>
                            <tbody>{rows.into_iter().map(account_row).collect_view()}</tbody>
                        </table>
                        <h2>"Send a password-reset link"</h2>
                        <p class="hint">
                            "For a user whose own request went to spam: the link works once, for 30 minutes."
                        </p>
                        {move || sent().map(|email| view! {
                            <p class="banner" role="status" data-testid="reset-sent">
                                {format!("A reset link is on its way to {email}.")}
                            </p>
                        })}
                        <ActionForm action=reset attr:class="inline">
                            <FormError error />
                            <label for="reset-account">"Account"</label>
                            <input id="reset-account" name="account" required />
                            <label for="reset-email">"Email"</label>
                            <input id="reset-email" name="email" type="email" required />
                            <button type="submit">"Mail a reset link"</button>
                            <FieldError error field="email" />
                        </ActionForm>
                    }
                    .into_any(),
                }
            })}
        </Suspense>
    }
}
