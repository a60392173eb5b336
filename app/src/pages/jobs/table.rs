//! The job table and its pager.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;
use leptos_router::params::ParamsMap;

use super::jobs_href;
use crate::api::jobs::{DeleteJob, StopJob};
use crate::components::markup::Markup;
use crate::components::resource::Resource;
use crate::error::AppError;
use crate::models::time::{format_age, format_utc};
use crate::models::url::encode;
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
                // Read in place: awaiting the resource itself clones the page,
                // every job's spec included, only to drop it once rendered.
                let page = jobs.by_ref().await;
                match &*page {
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
                        let pages = page.pages();
                        let (current, total) = (page.page, page.total);
                        let rows = params.with_untracked(|p| rows_html(&page.jobs, page.now, p));
                        view! {
                            <table class="grid jobs" data-testid="jobs">
                                <thead>
                                    <tr>
                                        <th class="pick" title="Tick runs, then Compare">"Compare"</th>
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
                                <tbody inner_html=rows />
                            </table>
                            <nav class="pager" aria-label="Pages">
                                <span>{format!("{total} jobs · page {current} of {pages}")}</span>
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

/// The table's rows, written straight to HTML (see `components::markup`
/// for why), with the page's query read once for all rows. The table is not
/// an island and is never hydrated, so its links and forms are plain ones.
fn rows_html(jobs: &[Job], now: i64, params: &ParamsMap) -> String {
    let actions = RowActions {
        log: jobs_href(params, &[("log", None), ("pod", None), ("submit", None)]),
        stop: StopJob::url(),
        delete: DeleteJob::url(),
    };
    let mut m = Markup::with_capacity(jobs.len() * 1100);
    for job in jobs {
        job_row(&mut m, job, now, &actions);
    }
    m.into_string()
}

/// What every row's links and forms start from, made once a page.
struct RowActions {
    /// This page's URL without a log console: a row's "Log" adds `log=<job>`.
    log: String,
    /// The Stop form's action.
    stop: &'static str,
    /// The Delete form's action.
    delete: &'static str,
}

impl RowActions {
    /// The page with `job`'s log console open.
    fn log_href(&self, job: &str) -> String {
        let sep = if self.log.contains('?') { '&' } else { '?' };
        format!("{}{sep}log={}", self.log, encode(job))
    }
}

/// One job's `<tr>`.
fn job_row(m: &mut Markup, job: &Job, now: i64, actions: &RowActions) {
    let name = job.name.as_str();
    m.open("tr", &[("data-job", name)]);
    // Outside the row's Stop/Delete form: the box belongs to the compare
    // form above the table (`form=`), so no form nests in another.
    let label = format!("Compare {name}");
    m.open("td", &[("class", "pick")]);
    m.open(
        "input",
        &[
            ("type", "checkbox"),
            ("name", "jobs"),
            ("value", name),
            ("form", super::COMPARE_FORM),
            ("aria-label", &label),
        ],
    );
    m.close("td");
    let page = format!("/jobs/{}", encode(name));
    m.open("td", &[("class", "name")]);
    m.element("a", &[("href", &page), ("class", "job-link")], name);
    if let Some(notebook) = &job.spec.notebook {
        m.open("small", &[("class", "origin"), ("data-testid", "origin")])
            .text("from notebook ")
            .text(notebook)
            .close("small");
    }
    if job.source == JobSource::Local {
        let host = job
            .ran_on
            .as_deref()
            .filter(|h| !h.is_empty())
            .unwrap_or("a machine of its own");
        m.open("small", &[("class", "origin"), ("data-testid", "ran-on")])
            .text("local run on ")
            .text(host)
            .close("small");
    }
    if let Some(p) = &job.spec.pipeline {
        let href = format!("/pipelines/{}#node-{}", p.run, p.node);
        m.open(
            "a",
            &[
                ("class", "origin"),
                ("href", &href),
                ("data-testid", "pipeline"),
            ],
        )
        .text("pipeline ")
        .text(&p.run)
        .text(" · ")
        .text(&p.node);
        if p.attempt > 1 {
            m.text(" (try ").display(p.attempt).text(")");
        }
        m.close("a");
    }
    if let Some(x) = &job.spec.experiment {
        let href = format!("/experiments/{}", x.name);
        let attrs = [
            ("class", "origin"),
            ("href", &href),
            ("data-testid", "experiment"),
        ];
        m.open("a", &attrs)
            .text("experiment ")
            .text(&x.name)
            .text(" #");
        m.display(x.trial).close("a");
    }
    if let Some(t) = &job.spec.template {
        let again = format!("/templates/{}?owner={}&from={}", t.name, t.owner, job.name);
        m.open(
            "small",
            &[
                ("class", "origin"),
                ("data-testid", "template"),
                ("title", &t.values_text()),
            ],
        )
        .text("from template ")
        .text(&t.name)
        .text(" v")
        .display(t.version)
        .close("small");
        m.element(
            "a",
            &[
                ("class", "origin"),
                ("href", &again),
                ("data-testid", "run-again"),
            ],
            "Run again with changes",
        );
    }
    m.close("td");
    m.element(
        "td",
        &[],
        &format_utc(job.started_at.unwrap_or(job.created_at)),
    );
    m.element("td", &[], &format_age(now - job.created_at));
    let status = job.status;
    let class = format!("status {}", status.as_str());
    m.open("td", &[]);
    m.element(
        "span",
        &[
            ("class", &class),
            ("data-testid", "status"),
            ("title", &job.message),
        ],
        status.label(),
    );
    if let Some(since) = job.stalled() {
        m.element(
            "span",
            &[
                ("class", "status stalled"),
                ("data-testid", "stalled"),
                ("title", &crate::models::stall_message(since, now)),
            ],
            "stalled",
        );
    }
    if let Some(since) = job.gpus_idle() {
        m.element(
            "span",
            &[
                ("class", "status stalled"),
                ("data-testid", "gpus-idle"),
                (
                    "title",
                    &crate::models::idle_gpus_message(job.gpus_held(), since, now),
                ),
            ],
            "GPUs idle",
        );
    }
    // Why a job waits is what its user asks first: shown, not hidden in a tooltip.
    if status == JobStatus::Pending && !job.message.is_empty() {
        m.element(
            "small",
            &[("class", "reason"), ("data-testid", "reason")],
            &job.message,
        );
    }
    m.close("td");
    m.open("td", &[]).display(job.succeeded()).close("td");
    m.open("td", &[]).display(job.failed()).close("td");
    m.element("td", &[("data-testid", "ps")], &ratio(job.ps));
    m.element("td", &[("data-testid", "trainers")], &ratio(job.trainers));
    m.element("td", &[], &job.cluster);
    m.open("td", &[("class", "actions")]);
    m.element("a", &[("href", &actions.log_href(name))], "Log");
    m.element(
        "a",
        &[("href", &format!("/jobs/{name}/resources"))],
        "Resources",
    );
    m.element(
        "a",
        &[
            ("href", &format!("/jobs/{name}/template")),
            ("data-testid", "save-as-template"),
        ],
        "Save as template",
    );
    let (action, class, label) = if status.is_active() {
        (actions.stop, "small", "Stop")
    } else {
        (actions.delete, "small danger", "Delete")
    };
    m.open("form", &[("action", action), ("method", "post")]);
    m.open(
        "input",
        &[("type", "hidden"), ("name", "name"), ("value", name)],
    );
    m.element("button", &[("type", "submit"), ("class", class)], label);
    m.close("form");
    m.close("td");
    m.close("tr");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(extra: serde_json::Value) -> Job {
        let mut v = serde_json::json!({
            "name": "mnist-1",
            "spec": {
                "name": "mnist-1", "command": ["python", "train.py"], "num_trainers": 2,
                "ps": {"cpu": "1", "memory": "1Gi"}, "trainer": {"cpu": "1", "memory": "1Gi"}
            },
            "status": "running", "cluster": "local", "created_at": 0,
            "started_at": 60_000, "finished_at": null,
            "ps": {"total": 0, "ready": 0, "succeeded": 0, "failed": 0},
            "trainers": {"total": 2, "ready": 1, "succeeded": 0, "failed": 1},
            "message": ""
        });
        for (k, x) in extra.as_object().unwrap() {
            match (k.as_str(), x) {
                ("spec", serde_json::Value::Object(s)) => {
                    v["spec"].as_object_mut().unwrap().extend(s.clone())
                }
                _ => v[k] = x.clone(),
            }
        }
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_running_job_row_shows_its_counts_links_and_a_stop_form() {
        let params = ParamsMap::new();
        let html = rows_html(&[job(serde_json::json!({}))], 3_600_000, &params);
        assert!(
            html.starts_with(
                "<tr data-job=\"mnist-1\"><td class=\"pick\"><input type=\"checkbox\" name=\"jobs\" \
                 value=\"mnist-1\" form=\"compare-jobs\" aria-label=\"Compare mnist-1\"></td>\
                 <td class=\"name\"><a href=\"/jobs/mnist-1\" class=\"job-link\">mnist-1</a></td>"
            ),
            "{html}"
        );
        for part in [
            "<td data-testid=\"trainers\">1/2</td>",
            "<td>0</td><td>1</td>",
            "<span class=\"status running\" data-testid=\"status\" title=\"\">Running</span>",
            "<a href=\"/jobs?log=mnist-1\">Log</a>",
            "<a href=\"/jobs/mnist-1/resources\">Resources</a>",
            "<form action=\"/api/stop_job\" method=\"post\"><input type=\"hidden\" name=\"name\" value=\"mnist-1\"><button type=\"submit\" class=\"small\">Stop</button></form>",
        ] {
            assert!(html.contains(part), "{part} not in {html}");
        }
        assert!(html.ends_with("</td></tr>"), "{html}");
    }

    #[test]
    fn a_rows_log_link_keeps_the_pages_filters_and_replaces_its_console() {
        let mut params = ParamsMap::new();
        for (k, v) in [
            ("status", "failed"),
            ("log", "other"),
            ("pod", "other-ps-0"),
            ("page", "3"),
        ] {
            params.insert(k, v.to_owned());
        }
        let mut named = job(serde_json::json!({}));
        named.name = "a b".into();
        let html = rows_html(&[named], 0, &params);
        let want = "<a href=\"/jobs?status=failed&amp;page=3&amp;log=a%20b\">Log</a>";
        assert!(html.contains(want), "{want} not in {html}");
    }

    #[test]
    fn a_rows_origins_and_a_pending_jobs_reason_are_shown_and_escaped() {
        let pending = job(serde_json::json!({
            "status": "pending", "source": "local", "ran_on": "gpu<box>",
            "message": "waiting for 2 GPUs & \"quota\"",
            "spec": {
                "notebook": "alice-lab",
                "pipeline": {"run": "nightly", "node": "train", "attempt": 2},
                "template": {"owner": "team", "name": "resnet", "version": 3, "values": {"lr": 0.5}}
            }
        }));
        let params = ParamsMap::new();
        let html = rows_html(&[pending], 0, &params);
        for part in [
            "<small class=\"origin\" data-testid=\"origin\">from notebook alice-lab</small>",
            "<small class=\"origin\" data-testid=\"ran-on\">local run on gpu&lt;box&gt;</small>",
            "<a class=\"origin\" href=\"/pipelines/nightly#node-train\" data-testid=\"pipeline\">pipeline nightly · train (try 2)</a>",
            "<small class=\"origin\" data-testid=\"template\" title=\"lr=0.5\">from template resnet v3</small>",
            "<a class=\"origin\" href=\"/templates/resnet?owner=team&amp;from=mnist-1\" data-testid=\"run-again\">",
            "<small class=\"reason\" data-testid=\"reason\">waiting for 2 GPUs &amp; \"quota\"</small>",
            "title=\"waiting for 2 GPUs &amp; &quot;quota&quot;\"",
            "<button type=\"submit\" class=\"small\">Stop</button>",
        ] {
            assert!(html.contains(part), "{part} not in {html}");
        }
    }
}
