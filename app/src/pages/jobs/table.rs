//! The job table and its pager.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;
use leptos_router::params::ParamsMap;

use super::jobs_href;
use crate::api::jobs::{DeleteJob, StopJob};
use crate::components::resource::Resource;
use crate::error::AppError;
use crate::models::time::{format_age, format_utc};
use crate::models::{Job, JobPage, JobSource, JobStatus, RoleCounts};
use leptos::server_fn::ServerFn;

fn ratio(c: RoleCounts) -> String {
    format!("{}/{}", c.ready, c.total)
}

/// The table of jobs.
#[component]
pub fn JobTable(
    /// The current page of jobs.
    jobs: Resource<Result<JobPage, AppError>>,
) -> impl IntoView {
    let params = use_query_map();
    view! {
        <Transition fallback=|| view! { <p class="loading">"Loading jobs…"</p> }>
            {move || Suspend::new(async move {
                match jobs.await {
                    Err(err) => view! { <p class="banner error" role="alert">{err.to_string()}</p> }.into_any(),
                    Ok(page) if page.jobs.is_empty() => {
                        view! {
                            <section class="empty-state" data-testid="no-jobs">
                                <p>"No jobs match. Submit one, or change the filters."</p>
                            </section>
                        }
                            .into_any()
                    }
                    Ok(page) => {
                        let now = page.now;
                        let pages = page.pages();
                        let current = page.page;
                        view! {
                            <table class="grid jobs" data-testid="jobs">
                                <thead>
                                    <tr>
                                        <th>"Name"</th>
                                        <th>"Start time"</th>
                                        <th>"Age"</th>
                                        <th>"Status"</th>
                                        <th title="Replicas that exited 0">"Succeeded"</th>
                                        <th title="Replicas that failed">"Failed"</th>
                                        <th title="Parameter servers running / asked for">"PS"</th>
                                        <th title="Trainers running / asked for">"Trainers"</th>
                                        <th>"Where"</th>
                                        <th>"Actions"</th>
                                    </tr>
                                </thead>
                                <tbody>
                                    {
                                        let params = params.get_untracked();
                                        page.jobs
                                            .into_iter()
                                            .map(|job| job_row(job, now, &params))
                                            .collect_view()
                                    }
                                </tbody>
                            </table>
                            <nav class="pager" aria-label="Pages">
                                <span>{format!("{} jobs · page {current} of {pages}", page.total)}</span>
                                {(current > 1).then(|| {
                                    let href = params.with_untracked(|p| jobs_href(p, &[("page", Some((current - 1).to_string()))]));
                                    view! { <a href=href>"← Newer"</a> }
                                })}
                                {(current < pages).then(|| {
                                    let href = params.with_untracked(|p| jobs_href(p, &[("page", Some((current + 1).to_string()))]));
                                    view! { <a href=href>"Older →"</a> }
                                })}
                            </nav>
                        }
                            .into_any()
                    }
                }
            })}
        </Transition>
    }
}

/// A row of the table: a plain function, not a component, with the page's
/// query read once for all rows. It is never hydrated (the table is not an
/// island), so it renders plain links and forms: `<A>` and `<ActionForm>`
/// would set up reactive state for each row only to print the same HTML.
fn job_row(job: Job, now: i64, params: &ParamsMap) -> impl IntoView {
    let log_href = jobs_href(
        params,
        &[
            ("log", Some(job.name.clone())),
            ("pod", None),
            ("submit", None),
        ],
    );
    let status = job.status;
    let name = job.name.clone();
    view! {
        <tr data-job=job.name.clone()>
            <td class="name">
                {job.name.clone()}
                {job.spec.notebook.clone().map(|n| view! { <small class="origin" data-testid="origin">{format!("from notebook {n}")}</small> })}
                {(job.source == JobSource::Local).then(|| {
                    let host = job.ran_on.clone().filter(|h| !h.is_empty()).unwrap_or_else(|| "a machine of its own".to_owned());
                    view! { <small class="origin" data-testid="ran-on">{format!("local run on {host}")}</small> }
                })}
                {job.spec.pipeline.clone().map(|p| view! {
                    <a class="origin" href=format!("/pipelines/{}#node-{}", p.run, p.node) data-testid="pipeline">
                        {format!("pipeline {} · {}{}", p.run, p.node, if p.attempt > 1 { format!(" (try {})", p.attempt) } else { String::new() })}
                    </a>
                })}
                {job.spec.template.clone().map(|t| {
                    let again = format!("/templates/{}?owner={}&from={}", t.name, t.owner, job.name);
                    view! {
                        <small class="origin" data-testid="template" title=t.values_text()>
                            {format!("from template {} v{}", t.name, t.version)}
                        </small>
                        <a class="origin" href=again data-testid="run-again">"Run again with changes"</a>
                    }
                })}
            </td>
            <td>{format_utc(job.started_at.unwrap_or(job.created_at))}</td>
            <td>{format_age(now - job.created_at)}</td>
            <td>
                <span class=format!("status {}", status.as_str()) data-testid="status" title=job.message.clone()>
                    {status.label()}
                </span>
                // Why a job waits is what its user asks first: shown, not hidden in a tooltip.
                {(status == JobStatus::Pending && !job.message.is_empty())
                    .then(|| view! { <small class="reason" data-testid="reason">{job.message.clone()}</small> })}
            </td>
            <td>{job.succeeded()}</td>
            <td>{job.failed()}</td>
            <td data-testid="ps">{ratio(job.ps)}</td>
            <td data-testid="trainers">{ratio(job.trainers)}</td>
            <td>{job.cluster.clone()}</td>
            <td class="actions">
                <a href=log_href>"Log"</a>
                <a href=format!("/jobs/{}/resources", job.name)>"Resources"</a>
                <a href=format!("/jobs/{}/template", job.name) data-testid="save-as-template">"Save as template"</a>
                {if status.is_active() {
                    view! {
                        <form action=StopJob::url() method="post">
                            <input type="hidden" name="name" value=name.clone() />
                            <button type="submit" class="small">"Stop"</button>
                        </form>
                    }
                        .into_any()
                } else {
                    view! {
                        <form action=DeleteJob::url() method="post">
                            <input type="hidden" name="name" value=name.clone() />
                            <button type="submit" class="small danger">"Delete"</button>
                        </form>
                    }
                        .into_any()
                }}
            </td>
        </tr>
    }
}
