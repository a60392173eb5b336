//! `/admin`: what a site admin looks after: every account with its owners,
//! members and use against its quota (a link sets the quota), the jobs of
//! any account holding idle GPUs, and a reset link for a user who cannot
//! get back in.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use super::quota::Bar;
use crate::api::accounts::AdminResetLink;
use crate::api::usage::{idle_gpu_jobs, site_accounts};
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
    let idle = resource(|| (), |_| idle_gpu_jobs());
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
                        <IdleGpus idle />
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

/// The jobs of every account holding idle GPUs: what a site admin asks
/// their owners about on a shared cluster.
#[component]
fn IdleGpus(
    idle: crate::components::resource::Resource<
        Result<Vec<crate::models::IdleGpuJob>, crate::error::AppError>,
    >,
) -> impl IntoView {
    view! {
        <h2>"Idle GPUs"</h2>
        <p class="hint">
            "Running jobs whose GPUs have stayed under 5% utilisation for the console's stall window; their owners were told (the "
            <em>"idle_gpus"</em>
            " notification)."
        </p>
        <Suspense fallback=|| ()>
            {move || Suspend::new(async move {
                match idle.await {
                    Err(err) => view! { <p class="banner error" role="alert">{err.to_string()}</p> }.into_any(),
                    Ok(jobs) if jobs.is_empty() => view! { <p class="empty" data-testid="no-idle-gpus">"No job holds idle GPUs."</p> }.into_any(),
                    Ok(jobs) => {
                        view! {
                            <table class="grid" data-testid="idle-gpus">
                                <thead><tr><th>"Account"</th><th>"Job"</th><th>"Submitted by"</th><th>"GPUs"</th><th>"Idle since"</th></tr></thead>
                                <tbody>
                                    {jobs.into_iter().map(|j| view! {
                                        <tr data-account=j.account.clone() data-job=j.job.clone()>
                                            <td>{j.account.clone()}</td>
                                            <td>{j.job.clone()}</td>
                                            <td>{j.submitted_by.clone()}</td>
                                            <td>{j.gpus}</td>
                                            <td>{crate::models::time::format_utc_seconds(j.since)}</td>
                                        </tr>
                                    }).collect_view()}
                                </tbody>
                            </table>
                        }.into_any()
                    }
                }
            })}
        </Suspense>
    }
}
