//! `/schedules`: the account's schedules (a template, a pipeline or a
//! notebook file run on a cron pattern in a timezone) and the "New
//! schedule" form; `/schedules/<name>`: one schedule, pause, resume and
//! delete, and its runs: each tick, what became of it and what it started.
//! Both work without JavaScript and refresh themselves every few seconds.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;
use leptos_router::hooks::use_params_map;

use crate::api::schedules::{
    list_schedules, read_schedule, CreateSchedule, DeleteSchedule, PauseSchedule,
};
use crate::components::form::{last_error, FieldError, FormError};
use crate::components::live::{beside_regions, LiveRegion, Region};
use crate::components::resource::resource;
use crate::models::time::{format_utc, format_utc_seconds};
use crate::models::{schedule_href, Schedule, ScheduleRun};

/// When a schedule runs, in words: `0 3 * * * (Europe/Berlin)`.
fn when(s: &Schedule) -> String {
    format!("{} ({})", s.spec.cron, s.spec.timezone)
}

/// The Schedules page.
#[component]
pub fn SchedulesPage() -> impl IntoView {
    let list = resource(|| (), |_| list_schedules());
    view! {
        {beside_regions(|| view! {
            <Title text="Schedules" />
            <div class="page-head"><h1>"Schedules"</h1></div>
            <p class="hint">
                "A schedule runs a template, a pipeline or a notebook file on a cron pattern, read in its timezone, as who made it. "
                "A tick whose previous run still goes is skipped, runs beside it, or replaces it (overlap); ticks missed while the console was down run as catch-up says. "
                "Pipelines are scheduled with " <code>"paddlecloud schedule create -f"</code> ", the SDK or " <code>"POST /api/v1/schedules"</code> "."
            </p>
        })}
        <Region id="schedules-table">
            <Transition fallback=|| view! { <p class="loading">"Loading schedules…"</p> }>
                {move || Suspend::new(async move {
                    match list.await {
                        Err(err) => view! { <p class="banner error" role="alert">{err.to_string()}</p> }.into_any(),
                        Ok(list) if list.is_empty() => view! { <p class="empty" data-testid="no-schedules">"No schedule yet."</p> }.into_any(),
                        Ok(list) => view! { <ScheduleTable list /> }.into_any(),
                    }
                })}
            </Transition>
        </Region>
        {beside_regions(|| view! {
            <LiveRegion target="schedules-table".to_owned() every_secs=5 />
            <NewSchedule />
        })}
    }
}

#[component]
fn ScheduleTable(list: Vec<Schedule>) -> impl IntoView {
    view! {
        <table class="grid schedules" data-testid="schedules">
            <thead><tr><th>"Schedule"</th><th>"Runs"</th><th>"When"</th><th>"Next"</th><th>"Overlap"</th><th>"Catch-up"</th><th>"By"</th></tr></thead>
            <tbody>
                {list.into_iter().map(|s| {
                    let next = if s.paused {
                        "paused".to_owned()
                    } else {
                        s.next_at.map(format_utc).unwrap_or_else(|| "never".into())
                    };
                    let (row, href, shown) = (s.spec.name.clone(), schedule_href(&s.spec.name), s.spec.name.clone());
                    view! {
                        <tr data-schedule=row>
                            <td class="name"><A href=href>{shown}</A></td>
                            <td>{s.spec.target.label()}</td>
                            <td><code>{when(&s)}</code></td>
                            <td data-testid="next">{next}</td>
                            <td>{s.spec.overlap.as_str()}</td>
                            <td>{s.spec.catch_up.as_str()}</td>
                            <td>{s.created_by.clone()}</td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
    }
}

/// The "New schedule" form: a template or a notebook file.
#[component]
fn NewSchedule() -> impl IntoView {
    let action = ServerAction::<CreateSchedule>::new();
    let error = Signal::derive(last_error(action));
    view! {
        <section class="panel" aria-labelledby="new-schedule">
            <h2 id="new-schedule">"New schedule"</h2>
            <ActionForm action attr:class="run-template" attr:data-testid="new-schedule-form">
                <FormError error />
                <div class="form-grid">
                    <label for="schedule-name">"Name"</label>
                    <input id="schedule-name" name="form[name]" required placeholder="nightly-train" />
                    <FieldError error field="name" />
                    <label for="schedule-cron">"Cron (minute hour day month weekday; seconds first optional)"</label>
                    <input id="schedule-cron" name="form[cron]" required placeholder="0 3 * * 1-5" />
                    <FieldError error field="cron" />
                    <label for="schedule-timezone">"Timezone (IANA)"</label>
                    <input id="schedule-timezone" name="form[timezone]" value="UTC" />
                    <FieldError error field="timezone" />
                    <label for="schedule-kind">"Runs"</label>
                    <select id="schedule-kind" name="form[kind]">
                        <option value="template">"a template"</option>
                        <option value="notebook">"a notebook file of yours"</option>
                    </select>
                    <label for="schedule-template">"Template (name or owner/name)"</label>
                    <input id="schedule-template" name="form[template]" placeholder="fit-a-line" />
                    <FieldError error field="target.name" />
                    <label for="schedule-notebook">"Notebook"</label>
                    <input id="schedule-notebook" name="form[notebook]" placeholder="lab" />
                    <FieldError error field="target.notebook" />
                    <label for="schedule-path">"Notebook file"</label>
                    <input id="schedule-path" name="form[path]" placeholder="train.ipynb" />
                    <FieldError error field="target.run.path" />
                    <label for="schedule-values">"Values (name=value, one a line)"</label>
                    <textarea id="schedule-values" name="form[values]" rows="3" placeholder="epochs=5"></textarea>
                    <FieldError error field="values" />
                    <label for="schedule-overlap">"When the previous run still goes"</label>
                    <select id="schedule-overlap" name="form[overlap]">
                        <option value="forbid">"skip this tick"</option>
                        <option value="allow">"run beside it"</option>
                        <option value="replace">"stop it, then run"</option>
                    </select>
                    <label for="schedule-catch-up">"Ticks missed while the console was down"</label>
                    <select id="schedule-catch-up" name="form[catch_up]">
                        <option value="latest">"run the latest"</option>
                        <option value="all">"run each (at most 10)"</option>
                        <option value="none">"run none"</option>
                    </select>
                </div>
                <footer><button type="submit" class="primary" data-testid="create-schedule">"Save schedule"</button></footer>
            </ActionForm>
        </section>
    }
}

/// One schedule's page.
#[component]
pub fn SchedulePage() -> impl IntoView {
    let params = use_params_map();
    let name = move || params.with(|p| p.get("name").unwrap_or_default());
    let schedule = resource(name, read_schedule);
    view! {
        {beside_regions(|| view! { <Title text="Schedule" /> })}
        <p class="crumbs"><A href="/schedules">"Schedules"</A></p>
        <Region id="schedule-page">
            <Transition fallback=|| view! { <p class="loading">"Loading the schedule…"</p> }>
                {move || Suspend::new(async move {
                    match schedule.await {
                        Err(err) => crate::components::page_error::page_error(&err),
                        Ok(s) => view! { <ScheduleView s /> }.into_any(),
                    }
                })}
            </Transition>
        </Region>
        {beside_regions(|| view! { <LiveRegion target="schedule-page".to_owned() every_secs=5 /> })}
    }
}

#[component]
fn ScheduleView(s: Schedule) -> impl IntoView {
    let pause = ServerAction::<PauseSchedule>::new();
    let delete = ServerAction::<DeleteSchedule>::new();
    let error = Signal::derive(last_error(pause));
    let delete_error = Signal::derive(last_error(delete));
    let name = s.spec.name.clone();
    let (pause_name, delete_name) = (name.clone(), name.clone());
    let (state, label, class) = if s.paused {
        ("paused", "Resume", "primary small")
    } else {
        ("active", "Pause", "small")
    };
    let next = s
        .next_at
        .map(format_utc_seconds)
        .unwrap_or_else(|| "—".into());
    let runs = s.runs.clone();
    view! {
        <div class="page-head">
            <h1>{name} " " <span class=format!("status {state}") data-testid="schedule-state">{state}</span></h1>
            <nav class="page-links">
                <ActionForm action=pause attr:class="inline">
                    <input type="hidden" name="name" value=pause_name />
                    <input type="hidden" name="paused" value=(!s.paused).to_string() />
                    <button type="submit" class=class data-testid="pause-or-resume">{label}</button>
                </ActionForm>
                <ActionForm action=delete attr:class="inline">
                    <input type="hidden" name="name" value=delete_name />
                    <button type="submit" class="small danger" data-testid="delete-schedule">"Delete"</button>
                </ActionForm>
            </nav>
        </div>
        <FormError error />
        <FormError error=delete_error />
        <dl class="facts" data-testid="schedule-facts">
            <dt>"Runs"</dt><dd>{s.spec.target.label()}</dd>
            <dt>"When"</dt><dd><code>{when(&s)}</code></dd>
            <dt>"Next tick"</dt><dd data-testid="next-tick">{next}</dd>
            <dt>"Overlap"</dt><dd>{s.spec.overlap.as_str()}</dd>
            <dt>"Catch-up"</dt><dd>{s.spec.catch_up.as_str()}</dd>
            <dt>"By"</dt><dd>{format!("{} · {}", s.created_by, format_utc(s.created_at))}</dd>
        </dl>
        <section class="panel" aria-labelledby="schedule-runs">
            <h2 id="schedule-runs">"Runs"</h2>
            {if runs.is_empty() {
                view! { <p class="muted" data-testid="no-runs">"No tick has come yet."</p> }.into_any()
            } else {
                view! { <RunTable runs /> }.into_any()
            }}
        </section>
    }
}

#[component]
fn RunTable(runs: Vec<ScheduleRun>) -> impl IntoView {
    view! {
        <table class="grid" data-testid="schedule-runs">
            <thead><tr><th>"Tick (UTC)"</th><th>"Outcome"</th><th>"Started"</th><th>"Status"</th><th>"Why"</th></tr></thead>
            <tbody>
                {runs.into_iter().map(|r| {
                    let started = r.href().map(|href| view! { <A href=href>{r.started.clone().unwrap_or_default()}</A> });
                    let outcome = r.outcome.as_str();
                    view! {
                        <tr data-outcome=outcome>
                            <td>{format_utc_seconds(r.tick)}</td>
                            <td><span class=format!("status {outcome}")>{outcome}</span></td>
                            <td>{started}</td>
                            <td>{r.status.clone().unwrap_or_default()}</td>
                            <td>{r.message.clone()}</td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
    }
}
