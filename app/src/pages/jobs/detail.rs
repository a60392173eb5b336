//! `/jobs/<name>`: one job's own page, the dashboard the design review
//! asks every job in the list to open. What the job is (its spec, values
//! and where it came from), what happened to it (a timeline with the
//! reasons), its replicas, what it read and what it registered, "Run again
//! with changes" and "Save as template"; below, its metrics, its resources
//! and the log console docked at the bottom. The top is one live region
//! that follows the job's own events; the charts follow their own.

use leptos::prelude::*;
use leptos::server_fn::ServerFn;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;

use super::log_console::LogConsole;
use super::resources::JobCharts;
use crate::api::jobs::{job_overview, DeleteJob, StackDumpJob, StopJob};
use crate::components::live::{beside_regions, LiveRegion, Region};
use crate::components::page_error::page_error;
use crate::components::resource::resource;
use crate::models::board::BoardView;
use crate::models::time::{format_age, format_utc_seconds};
use crate::models::url::encode;
use crate::models::{
    job_inputs, origin_of, Job, JobDetail, JobSource, JobSpec, Pod, ReplicaResources,
};
use crate::pages::paddleboard::BoardCharts;

/// The live region's id.
const REGION: &str = "job-detail";

/// The job page.
#[component]
pub fn JobPage() -> impl IntoView {
    let params = use_params_map();
    let name = move || params.with(|p| p.get("name").unwrap_or_default());
    let detail = resource(name, job_overview);
    let job = untrack(name);
    // Fixed text: see the job Resources page's title.
    let title = format!("Job {job}");
    let events = format!("/events/jobs?name={}", encode(&job));
    view! {
        {beside_regions(|| view! { <Title text=title /> })}
        <Region id=REGION>
            <Transition fallback=|| view! { <p class="loading">"Loading the job…"</p> }>
                {move || Suspend::new(async move {
                    match detail.await {
                        Err(err) => page_error(&err),
                        Ok(detail) => view! { <JobView detail /> }.into_any(),
                    }
                })}
            </Transition>
        </Region>
        {beside_regions(move || view! {
            <Transition fallback=|| ()>
                {move || {
                    let events = events.clone();
                    Suspend::new(async move {
                        detail.await.ok().map(|d| {
                            // A notebook run's cells move on without a job
                            // event: its page also asks every 3 s while it runs.
                            // So do a scoring's files.
                            let polled = (d.job.spec.notebook_run.is_some() || d.job.spec.scoring.is_some())
                                && d.job.status.is_active();
                            let live = if polled {
                                view! { <LiveRegion target=REGION.to_owned() events every_secs=3 /> }.into_any()
                            } else {
                                view! { <LiveRegion target=REGION.to_owned() events /> }.into_any()
                            };
                            view! { {live} <JobPanels job=d.job.name owner=d.owner /> }
                        })
                    })
                }}
            </Transition>
        })}
    }
}

/// Its metrics, its resources and its log console: each keeps itself up
/// to date, so the job's events do not redraw them.
#[component]
fn JobPanels(job: String, owner: String) -> impl IntoView {
    let lineage = crate::models::NodeRef::job(&owner, &job);
    let page = format!("/jobs/{}", encode(&job));
    let board = BoardView {
        jobs: vec![job.clone()],
        ..BoardView::default()
    };
    let board_href = board.href();
    view! {
        <section class="job-section" aria-labelledby="job-metrics">
            <h2 id="job-metrics">"Metrics" <a href=board_href class="button small">"Open in PaddleBoard"</a></h2>
            <BoardCharts view=board />
        </section>
        <section class="job-section" aria-labelledby="job-resources">
            <h2 id="job-resources">"Resources"</h2>
            <JobCharts job=job.clone() page=page.clone() />
        </section>
        <LogConsole job page closable=false />
        <crate::components::lineage::LineageSection node=lineage />
    }
}

/// The job's open metric alerts, each linking its chart.
#[component]
fn JobAlerts(alerts: Vec<crate::models::Alert>) -> impl IntoView {
    let open: Vec<_> = alerts.into_iter().filter(|a| a.is_open()).collect();
    (!open.is_empty()).then(|| {
        view! {
            <div class="banner warn" role="status" data-testid="job-alerts">
                <strong>"Open alerts: "</strong>
                {open.into_iter().map(|a| view! {
                    <a href=a.board_href()>{format!("{} ({})", a.message, a.rule)}</a>" "
                }).collect_view()}
                <a href="/alerts">"All alerts"</a>
            </div>
        }
    })
}

/// A stalled job's banner: since when it has shown no sign of life, and
/// the button that takes a stack dump of its replicas (into their logs).
/// The button is there for any running job (a slow one is worth a look
/// too), the banner only while it is stalled.
#[component]
fn Stall(job: Job, now: i64) -> impl IntoView {
    let running =
        job.status == crate::models::JobStatus::Running && job.source == JobSource::Console;
    let stalled = job.stalled().filter(|_| running);
    running.then(|| {
        let form = view! {
            <form action=StackDumpJob::url() method="post" class="inline">
                <input type="hidden" name="name" value=job.name.clone() />
                <button type="submit" class="small" data-testid="stack-dump">"Take a stack dump"</button>
            </form>
        };
        let idle = job.gpus_idle().map(|since| view! {
            <div class="banner warn" role="status" data-testid="job-gpus-idle">
                <strong>"GPUs idle: "</strong>
                {crate::models::idle_gpus_message(job.gpus_held(), since, now)}
            </div>
        });
        let stall = match stalled {
            Some(since) => view! {
                <div class="banner warn" role="status" data-testid="job-stalled">
                    <strong>"Stalled: "</strong>
                    {crate::models::stall_message(since, now)} " "
                    {form}
                </div>
            }
            .into_any(),
            None => view! { <div class="job-tools">{form}</div> }.into_any(),
        };
        view! { {idle} {stall} }
    })
}

/// Everything the live region shows.
#[component]
fn JobView(detail: JobDetail) -> impl IntoView {
    let job = &detail.job;
    let name = job.name.clone();
    let status = job.status;
    let ran = detail.ran_for(detail.now).map(format_age);
    let again = crate::models::again_href(job);
    let (action, label, class) = if status.is_active() {
        (StopJob::url(), "Stop", "small")
    } else {
        (DeleteJob::url(), "Delete", "small danger")
    };
    let message = (!job.message.is_empty()).then(|| {
        // Why it waits, or why it ended badly; a success's note is plain.
        let class = match status {
            crate::models::JobStatus::Pending => "banner warn",
            crate::models::JobStatus::Running | crate::models::JobStatus::Succeeded => "banner ok",
            _ => "banner error",
        };
        view! { <p class=class data-testid="job-message">{job.message.clone()}</p> }
    });
    let timeline = detail.timeline();
    view! {
        <div class="page-head">
            <h1>
                {name.clone()} " "
                <span class=format!("status {}", status.as_str()) data-testid="job-status">{status.label()}</span>
                {job.stalled().map(|_| view! {
                    " " <span class="status stalled" data-testid="job-stalled-badge">"stalled"</span>
                })}
                {job.gpus_idle().map(|_| view! {
                    " " <span class="status stalled" data-testid="job-gpus-idle-badge">"GPUs idle"</span>
                })}
            </h1>
            <nav class="page-links job-actions" aria-label="Job actions">
                {again.map(|href| view! { <a href=href class="button" data-testid="run-again">"Run again with changes"</a> })}
                <a href=format!("/jobs/{}/template", encode(&name)) class="button" data-testid="save-as-template">"Save as template"</a>
                <a href=format!("/jobs/compare?jobs={}", encode(&name)) class="button">"Compare…"</a>
                <a href=crate::models::NotifySubject::Job { name: name.clone() }.follow_href() class="button" data-testid="notify-me">"Notify me…"</a>
                <form action=action method="post">
                    <input type="hidden" name="name" value=name.clone() />
                    <button type="submit" class=class data-testid="job-stop-or-delete">{label}</button>
                </form>
            </nav>
        </div>
        {message}
        <JobAlerts alerts=detail.alerts.clone() />
        <Stall job=job.clone() now=detail.now />
        <div class="job-overview">
            <section class="card" aria-labelledby="job-facts">
                <h2 id="job-facts">"What it is"</h2>
                <Facts job=job.clone() ran />
            </section>
            <section class="card" aria-labelledby="job-timeline">
                <h2 id="job-timeline">"What happened"</h2>
                <ol class="timeline" data-testid="timeline">
                    {timeline.into_iter().rev().map(|e| view! {
                        <li class=if e.is_bad() { "bad" } else { "" } data-state=e.state.clone() data-pod=e.pod.clone().unwrap_or_default()>
                            <time>{format_utc_seconds(e.at)}</time>
                            <strong>{e.headline()}</strong>
                            {(!e.message.is_empty()).then(|| view! { <span class="why">{e.message.clone()}</span> })}
                        </li>
                    }).collect_view()}
                </ol>
            </section>
        </div>
        {(job.source == JobSource::Local).then(|| view! { <super::local_run::LocalRunFacts name=name.clone() /> })}
        <crate::pages::notebook_runs::NotebookRunSection job=job.clone() report=detail.notebook_run.clone() />
        <crate::pages::scoring::ScoringSection progress=detail.scoring.clone() />
        <Replicas job=name.clone() pods=detail.pods.clone() />
        <InputsOutputs detail=detail.clone() />
    }
}

/// One role's replicas as a phrase: `2 trainers × 2 CPU, 4Gi, 1 GPU`.
fn replicas(n: u32, one: &str, many: &str, r: &ReplicaResources) -> String {
    let gpu = if r.gpu > 0 {
        format!(", {} GPU", r.gpu)
    } else {
        String::new()
    };
    let what = if n == 1 { one } else { many };
    format!("{n} {what} × {} CPU, {}{gpu}", r.cpu, r.memory)
}

/// The job's facts: where it came from, when, what it runs.
#[component]
fn Facts(job: Job, ran: Option<String>) -> impl IntoView {
    let spec: JobSpec = job.spec.clone();
    let origin = origin_of(&job);
    let origin_href = if let Some(x) = &spec.experiment {
        Some(format!("/experiments/{}", encode(&x.name)))
    } else if let Some(t) = &spec.template {
        Some(format!(
            "/templates/{}?owner={}",
            encode(&t.name),
            encode(&t.owner)
        ))
    } else if let Some(p) = &spec.pipeline {
        Some(format!(
            "/pipelines/{}#node-{}",
            encode(&p.run),
            encode(&p.node)
        ))
    } else {
        spec.notebook.as_ref().map(|_| "/notebooks".to_owned())
    };
    let from = (!origin.is_empty()).then(|| {
        let shown = match origin_href {
            Some(href) => view! { <a href=href>{origin.clone()}</a> }.into_any(),
            None => view! { <span>{origin.clone()}</span> }.into_any(),
        };
        view! { <dt>"From"</dt><dd data-testid="job-origin">{shown}</dd> }
    });
    let values = spec.template.as_ref().map(|t| {
        view! { <dt>"Values"</dt><dd><code data-testid="job-values">{t.values_text()}</code></dd> }
    });
    let mut words = spec.command.clone();
    words.extend(spec.args.iter().cloned());
    let command = crate::models::join_command(&words);
    let env = (!spec.env.is_empty()).then(|| {
        let lines: Vec<String> = spec
            .env
            .iter()
            .map(|e| format!("{}={}", e.name, e.value))
            .collect();
        view! { <dt>"Environment variables"</dt><dd><code>{lines.join(" ")}</code></dd> }
    });
    let secrets = (!spec.secrets.is_empty()).then(|| {
        let lines: Vec<String> = spec
            .secrets
            .iter()
            .map(|u| format!("{} → {}", u.secret, u.target()))
            .collect();
        view! { <dt>"Secrets"</dt><dd data-testid="job-secrets"><a href="/secrets">{lines.join(" · ")}</a></dd> }
    });
    let environment = spec.environment.clone().map(|e| {
        let (path, version) = e.rsplit_once(':').unwrap_or((e.as_str(), ""));
        let (owner, name) = path.split_once('/').unwrap_or(("", path));
        let href = format!("/environments/{name}?owner={owner}&version={version}");
        view! { <dt>"Python environment"</dt><dd data-testid="job-environment"><a href=href>{e.clone()}</a></dd> }
    });
    let mut asked = Vec::new();
    if spec.num_ps > 0 {
        asked.push(replicas(
            spec.num_ps,
            "parameter server",
            "parameter servers",
            &spec.ps,
        ));
    }
    asked.push(replicas(
        spec.num_trainers,
        "trainer",
        "trainers",
        &spec.trainer,
    ));
    let when = |ms: Option<i64>| ms.map_or_else(|| "—".to_owned(), format_utc_seconds);
    view! {
        <dl class="facts" data-testid="job-facts">
            {from}
            {values}
            <dt>"Where"</dt><dd>{job.cluster.clone()}{job.ran_on.clone().map(|h| format!(" · {h}"))}</dd>
            <dt>"Submitted"</dt><dd>{format_utc_seconds(job.created_at)}</dd>
            <dt>"Started"</dt><dd>{when(job.started_at)}</dd>
            <dt>"Ended"</dt><dd>{when(job.finished_at)}</dd>
            {ran.map(|r| view! { <dt>"Ran for"</dt><dd data-testid="ran-for">{r}</dd> })}
            <dt>"Command"</dt><dd><code data-testid="job-command">{command}</code></dd>
            {(!spec.image.is_empty()).then(|| view! { <dt>"Image"</dt><dd><code>{spec.image.clone()}</code></dd> })}
            {(!spec.working_dir.is_empty()).then(|| view! { <dt>"Working directory"</dt><dd><code>{spec.working_dir.clone()}</code></dd> })}
            {environment}
            {env}
            {secrets}
            <dt>"Replicas"</dt><dd data-testid="job-replicas-asked">{asked.join(" · ")}</dd>
        </dl>
    }
}

/// The replicas: phase, exit code, times, GPUs, why; each opens its log in
/// the console below.
#[component]
fn Replicas(job: String, pods: Vec<Pod>) -> impl IntoView {
    let page = format!("/jobs/{}", encode(&job));
    let when = |ms: Option<i64>| ms.map_or_else(|| "—".to_owned(), format_utc_seconds);
    view! {
        <section class="job-section" aria-labelledby="job-pods">
            <h2 id="job-pods">"Replicas"</h2>
            {if pods.is_empty() {
                view! { <p class="empty">"No replicas: the console only recorded this run."</p> }.into_any()
            } else {
                view! {
                    <table class="grid pods" data-testid="pods">
                        <thead><tr>
                            <th>"Replica"</th><th>"Phase"</th><th>"Exit code"</th><th>"Started"</th>
                            <th>"Ended"</th><th>"GPUs"</th><th>"Why"</th><th>"Log"</th>
                        </tr></thead>
                        <tbody>
                            {pods.into_iter().map(|p| {
                                let log = format!("{page}?pod={}#log", encode(&p.name));
                                let gpus = p.gpus.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
                                view! {
                                    <tr data-pod=p.name.clone()>
                                        <td>{p.name.clone()}</td>
                                        <td><span class=format!("status {}", p.phase.as_str()) data-testid="pod-phase">{p.phase.as_str()}</span></td>
                                        <td data-testid="exit-code">{p.exit_code.map(|c| c.to_string()).unwrap_or_default()}</td>
                                        <td>{when(p.started_at)}</td>
                                        <td>{when(p.finished_at)}</td>
                                        <td>{gpus}</td>
                                        <td class="why">{p.message.clone()}</td>
                                        <td><a href=log>"Log"</a></td>
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

/// What it read (datasets and model versions, with the variable each is
/// found in) and the model versions it registered.
#[component]
fn InputsOutputs(detail: JobDetail) -> impl IntoView {
    let spec = &detail.job.spec;
    let inputs = job_inputs(&detail.owner, &spec.datasets, &spec.models).unwrap_or_default();
    let read = if inputs.is_empty() {
        view! { <p class="muted">"No datasets or models."</p> }.into_any()
    } else {
        view! {
            <ul class="io" data-testid="job-read">
                {inputs.into_iter().map(|i| {
                    let mut label = format!("{}/{}", i.asset.owner, i.asset.name);
                    let mut href = i.asset.href();
                    if let Some(v) = i.version {
                        label += &format!(":{v}");
                        href += &format!("?version={v}");
                    }
                    let kind = i.asset.kind.as_str();
                    view! {
                        <li>
                            <span class="muted">{format!("{kind} ")}</span>
                            <a href=href>{label}</a>
                            <span class="muted">{format!(" in ${}", i.variables().join(", $"))}</span>
                        </li>
                    }
                }).collect_view()}
            </ul>
        }.into_any()
    };
    let wrote = if detail.registered.is_empty() {
        view! { <p class="muted">"No model versions."</p> }.into_any()
    } else {
        view! {
            <ul class="io" data-testid="job-registered">
                {detail.registered.iter().map(|v| view! {
                    <li>
                        <span class="muted">"model "</span>
                        <a href=v.href()>{v.reference()}</a>
                        <span class="muted">{format!(" · {} · {}", v.state, format_utc_seconds(v.created_at))}</span>
                    </li>
                }).collect_view()}
            </ul>
        }.into_any()
    };
    view! {
        <section class="job-section job-io" aria-labelledby="job-io">
            <h2 id="job-io">"What it read and registered"</h2>
            <div class="job-overview">
                <div><h3>"Read"</h3>{read}</div>
                <div><h3>"Registered"</h3>{wrote}</div>
            </div>
        </section>
    }
}
