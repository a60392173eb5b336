//! `/jobs`: the job table with its filters (all in the URL), the submit
//! dialog (`?submit=1`) and the log console (`?log=<job>&pod=<pod>`).

pub mod compare;
pub mod detail;
mod log_console;
pub use log_console::LogConsole;
mod local_run;
pub mod resources;
mod submit;
mod table;

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;
use leptos_router::params::ParamsMap;

use crate::api::jobs::list_jobs;
use crate::components::links::page_href;
use crate::components::live::{beside_regions, LiveRegion, Region};
use crate::components::resource::resource;
use crate::models::{ms_to_date, JobQuery, JobSort, JobSource, JobStatus};

/// The id of the form the table's check boxes belong to: a GET of
/// `/jobs/compare` with the ticked jobs.
pub const COMPARE_FORM: &str = "compare-jobs";

/// `/jobs?…` with `changes` applied to the current parameters (`None` removes one).
pub fn jobs_href(params: &ParamsMap, changes: &[(&'static str, Option<String>)]) -> String {
    page_href("/jobs", params, changes)
}

/// The Jobs page.
#[component]
pub fn JobsPage() -> impl IntoView {
    let params = use_query_map();
    let query = Memo::new(move |_| params.with(|p| JobQuery::from_params(|k| p.get(k))));
    let jobs = resource(move || query.get(), list_jobs);

    // A live refresh of the table renders the table alone: not the log
    // console's tail, the dialog or the filters.
    let head = beside_regions(|| {
        view! {
            <Title text="Jobs" />
            <div class="page-head">
                <h1>"Jobs"</h1>
                <form id=COMPARE_FORM method="GET" action="/jobs/compare" class="compare-form">
                    <button type="submit" data-testid="compare-ticked" title="Compare the jobs ticked in the table">
                        "Compare ticked"
                    </button>
                </form>
                <a href=params.with_untracked(|p| jobs_href(p, &[("submit", Some("1".into()))])) class="button primary">
                    "Submit job"
                </a>
            </div>
            <Filters query />
        }
    });
    let rest = beside_regions(|| {
        view! {
            <LiveRegion target="jobs-table".to_owned() events="/events/jobs".to_owned() />
            {move || params.with(|p| p.get("submit").is_some()).then(|| view! { <submit::SubmitDialog /> })}
            {move || {
                params
                    .with(|p| p.get("log"))
                    .map(|job| view! { <LogConsole job page="/jobs".to_owned() /> })
            }}
        }
    });
    view! {
        {head}
        <Region id="jobs-table">
            <table::JobTable jobs />
        </Region>
        {rest}
    }
}

/// The filter bar: a plain GET form, so it works without JavaScript and its
/// state is the URL.
#[component]
fn Filters(query: Memo<JobQuery>) -> impl IntoView {
    let q = query.get_untracked();
    let status = q.status;
    view! {
        <form method="GET" action="/jobs" class="filters">
            <label>
                "Status"
                <select name="status">
                    <option value="" selected=status.is_none()>"Any"</option>
                    {JobStatus::ALL
                        .iter()
                        .map(|s| {
                            view! {
                                <option value=s.as_str() selected=status == Some(*s)>
                                    {s.label()}
                                </option>
                            }
                        })
                        .collect_view()}
                </select>
            </label>
            <label>
                "Where it ran"
                <select name="source">
                    <option value="" selected=q.source.is_none()>"Anywhere"</option>
                    {JobSource::ALL
                        .iter()
                        .map(|s| view! { <option value=s.as_str() selected=q.source == Some(*s)>{s.label()}</option> })
                        .collect_view()}
                </select>
            </label>
            <label>
                "Name"
                <input type="search" name="q" placeholder="Search names" value=q.name.clone().unwrap_or_default() />
            </label>
            <label>
                "Submitted from"
                <input type="date" name="from" value=q.from.map(ms_to_date).unwrap_or_default() />
            </label>
            <label>
                "to"
                <input
                    type="date"
                    name="to"
                    value=q.to.map(|t| ms_to_date(t - 24 * 3600 * 1000)).unwrap_or_default()
                />
            </label>
            <label>
                "Sort"
                <select name="sort">
                    {JobSort::ALL
                        .iter()
                        .map(|s| {
                            view! {
                                <option value=s.as_str() selected=q.sort == *s>
                                    {s.label()}
                                </option>
                            }
                        })
                        .collect_view()}
                </select>
            </label>
            <button type="submit">"Apply"</button>
            <a href="/jobs" class="reset">"Reset"</a>
        </form>
    }
}
