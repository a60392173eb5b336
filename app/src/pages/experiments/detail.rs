//! `/experiments/<name>`: the best trial so far, the best objective over
//! the trials, the parameters against the objective (parallel coordinates
//! and one parameter's scatter, `?scatter=`), and the trials table, sorted
//! (`?sort=`, `&desc=1`), filtered by status (`?status=`) and paged
//! (`?page=`). All of it is one live region, refreshed on the experiment's
//! events with the URL's state.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;
use leptos_router::hooks::{use_params_map, use_query_map};

use super::actions::{ExperimentActions, REGION};
use super::charts::{best_chart, parallel_chart, scatter_chart, QUARTILES};
use super::experiment_badge;
use crate::api::experiments::{experiment_page, ExperimentPageData as PageData};
use crate::components::chart::{css_color, format_value};
use crate::components::live::{beside_regions, LiveRegion, Region};
use crate::components::page_error::page_error;
use crate::components::resource::resource;
use crate::models::time::format_utc;
use crate::models::url::encode;
use crate::models::{
    table_rows, value_text, Algorithm, Direction, EarlyStopping, Experiment, ObjectiveValue, Trial,
    TrialColumn, TrialQuery, TrialStatus, TrialTags, TRIALS_PER_PAGE,
};

/// One experiment's page.
#[component]
pub fn ExperimentPage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let name = move || params.with(|p| p.get("name").unwrap_or_default());
    let page = resource(name, experiment_page);
    // Fixed text: see the job Resources page's title.
    let title = format!("Experiment {}", untrack(name));
    view! {
        {beside_regions(|| view! { <Title text=title /> })}
        <Region id=REGION>
            <Transition fallback=|| view! { <p class="loading">"Loading the experiment…"</p> }>
                {move || Suspend::new(async move {
                    let q = query.with(|q| TrialQuery::from_query(|k| q.get(k)));
                    match page.await {
                        Err(err) => page_error(&err),
                        Ok(page) => view! { <ExperimentView page query=q /> }.into_any(),
                    }
                })}
            </Transition>
        </Region>
        {beside_regions(|| view! {
            <NoScriptErrors />
            <LiveRegion target=REGION.to_owned() events=format!("/events/experiments?name={}", encode(&name())) every_secs=5 />
        })}
    }
}

/// A refusal of an action posted without JavaScript, which comes back in
/// the page's URL (the island shows its own when it sent it).
#[component]
fn NoScriptErrors() -> impl IntoView {
    use super::actions::RefusalBanner;
    use crate::api::experiments::{
        ExtendExperiment, PauseExperiment, ResumeExperiment, RetryExperiment, StopExperiment,
    };
    use crate::components::form::last_error;
    let errors = [
        Signal::derive(last_error(ServerAction::<PauseExperiment>::new())),
        Signal::derive(last_error(ServerAction::<ResumeExperiment>::new())),
        Signal::derive(last_error(ServerAction::<StopExperiment>::new())),
        Signal::derive(last_error(ServerAction::<ExtendExperiment>::new())),
        Signal::derive(last_error(ServerAction::<RetryExperiment>::new())),
    ];
    let error = Signal::derive(move || errors.iter().find_map(|e| e.get()));
    view! { <RefusalBanner error /> }
}

/// What the experiment searches for, in words.
fn about(e: &Experiment) -> String {
    let s = &e.spec;
    let o = &s.objective;
    let way = match o.direction {
        Direction::Minimize => "lowest",
        Direction::Maximize => "highest",
    };
    let which = match o.value {
        ObjectiveValue::Last => "last",
        ObjectiveValue::Best => "best",
    };
    let goal = o
        .goal
        .map(|g| format!(", goal {}", format_value(g)))
        .unwrap_or_default();
    let algorithm = match &s.algorithm {
        Algorithm::Grid { points } => format!("grid ({points} values per range)"),
        Algorithm::Random => "random".to_owned(),
        Algorithm::Tpe { .. } => "TPE".to_owned(),
    };
    let stopping = match &s.early_stopping {
        EarlyStopping::None => "",
        EarlyStopping::Median { .. } => ", median stopping",
        EarlyStopping::Asha { .. } => ", ASHA stopping",
    };
    let version = s
        .template_version
        .map(|v| format!(" v{v}"))
        .unwrap_or_default();
    format!(
        "{}{version} · the {way} {which} {}{goal} · {algorithm}{stopping} · {} at once, {} failures tolerated · by {} · {}",
        s.template,
        o.metric,
        s.parallel_trials,
        s.max_failed_trials,
        e.owner,
        format_utc(e.created_at)
    )
}

#[component]
fn ExperimentView(page: PageData, query: TrialQuery) -> impl IntoView {
    let PageData {
        experiment: e,
        best_metrics,
        trial_tags,
    } = page;
    let summary = e.summary();
    let base = format!("/experiments/{}", e.name);
    let params = e.spec.space.parameters.clone();
    let objective = e.spec.objective.clone();
    let scatter_param = query
        .scatter
        .as_ref()
        .and_then(|s| params.iter().find(|p| p.name == *s))
        .or(params.first())
        .cloned();
    let best_svg = best_chart(&objective, &e.trials);
    let parallel_svg = parallel_chart(&params, &objective, &e.trials);
    let scatter_svg = scatter_param
        .as_ref()
        .map(|p| scatter_chart(p, &objective, &e.trials))
        .unwrap_or_default();
    let c = summary.trials;
    let ended = c.succeeded + c.failed + c.pruned + c.stopped;
    let progress = format!(
        "{ended} of {} trials ended · {} running · {} waiting · {} succeeded · {} failed · {} stopped early",
        e.spec.max_trials, c.running, c.waiting, c.succeeded, c.failed, c.pruned
    );
    let scatter_chips = params
        .iter()
        .map(|p| {
            let q = TrialQuery {
                scatter: Some(p.name.clone()),
                ..query.clone()
            };
            let active = scatter_param.as_ref().is_some_and(|s| s.name == p.name);
            let (label, testid) = (p.name.clone(), format!("scatter-{}", p.name));
            view! {
                <A href=q.href(&base) attr:class=if active { "chip active" } else { "chip" } attr:data-testid=testid>{label}</A>
            }
        })
        .collect_view();
    let legend = QUARTILES
        .iter()
        .zip(["best quarter", "second", "third", "worst quarter"])
        // The series' colour as a swatch, the words in the page's ink: some
        // series colours are too light for text (WCAG AA; the themes test).
        .map(|(&i, label)| {
            view! {
                <span><span class="swatch" style=format!("background:{}", css_color(i))></span>{label}</span>" "
            }
        })
        .collect_view();
    let charts = (!best_svg.is_empty()).then(|| {
        view! {
            <div class="chart-grid experiment-charts">
                <figure class="chart-card" data-testid="best-chart">
                    <figcaption><strong>{format!("Best {} so far", objective.metric)}</strong>" · each dot a finished trial"</figcaption>
                    <div class="chart-svg" inner_html=best_svg></div>
                </figure>
                <figure class="chart-card" data-testid="scatter-chart">
                    <figcaption><strong>{format!("{} against {}", objective.metric, scatter_param.as_ref().map(|p| p.name.clone()).unwrap_or_default())}</strong></figcaption>
                    <nav class="filters chips" aria-label="The parameter drawn">{scatter_chips}</nav>
                    <div class="chart-svg" inner_html=scatter_svg></div>
                </figure>
            </div>
            <figure class="chart-card wide parallel" data-testid="parallel-chart">
                <figcaption><strong>{format!("Parameters against {}", objective.metric)}</strong>" · a line per finished trial · "{legend}</figcaption>
                <div class="chart-svg" inner_html=parallel_svg></div>
            </figure>
        }
    });
    view! {
        <div class="page-head">
            <h1>{format!("Experiment {}", e.name)}</h1>
            {experiment_badge(e.status)}
            <ExperimentActions name=e.name.clone() status=e.status.as_str().to_owned() failed=c.failed />
            <a href=crate::models::NotifySubject::Experiment { name: e.name.clone() }.follow_href() class="button" data-testid="notify-me">"Notify me…"</a>
        </div>
        <p class="hint" data-testid="about">{about(&e)}</p>
        <p data-testid="progress">{progress}</p>
        {(!e.message.is_empty()).then(|| view! { <p class="banner" data-testid="experiment-message">{e.message.clone()}</p> })}
        <BestTrial best=summary.best.clone() metric=objective.metric.clone() metrics=best_metrics />
        {charts}
        <TrialsTable experiment=e query base tags=trial_tags />
    }
}

/// The best trial so far: its values, its objective and its other final
/// metrics, and its job.
#[component]
fn BestTrial(best: Option<Trial>, metric: String, metrics: Vec<(String, f64)>) -> impl IntoView {
    let Some(t) = best else {
        return view! { <p class="empty" data-testid="no-best">"No trial has finished with a value yet."</p> }.into_any();
    };
    let values = t
        .values
        .iter()
        .map(|(k, v)| view! { <dt>{k.clone()}</dt><dd>{value_text(Some(v))}</dd> })
        .collect_view();
    let others = metrics
        .into_iter()
        .filter(|(tag, _)| *tag != metric)
        .map(|(tag, v)| view! { <dt>{tag}</dt><dd>{format_value(v)}</dd> })
        .collect_view();
    let board = format!("/paddleboard?jobs={}", encode(&t.job));
    let job = format!("/jobs/{}", encode(&t.job));
    view! {
        <section class="best-trial" data-testid="best-trial">
            <h2>{format!("Best trial: {} with {metric} = {}", t.number, t.objective.map(format_value).unwrap_or_default())}</h2>
            <dl class="values">{values}{others}</dl>
            <p>
                <A href=job attr:data-testid="best-job">{format!("Job {}", t.job)}</A>" · "
                <A href=board>"Its curves on PaddleBoard"</A>
            </p>
        </section>
    }
    .into_any()
}

/// The trials table: a column per searched parameter, the objective and
/// the other tags most trials have, sortable by any column, filtered by
/// status, a page at a time.
#[component]
fn TrialsTable(
    experiment: Experiment,
    query: TrialQuery,
    base: String,
    tags: TrialTags,
) -> impl IntoView {
    let e = experiment;
    let (rows, total) = table_rows(&e.trials, &query, &tags);
    let names: Vec<String> = e
        .spec
        .space
        .parameters
        .iter()
        .map(|p| p.name.clone())
        .collect();
    let heading = |label: String, column: TrialColumn, class: &'static str| {
        let sorted = query.sort == column;
        let arrow = match (sorted, query.desc) {
            (true, false) => " ▲",
            (true, true) => " ▼",
            _ => "",
        };
        let aria = match (sorted, query.desc) {
            (true, false) => "ascending",
            (true, true) => "descending",
            _ => "none",
        };
        let href = query.sorted_by(column.clone()).href(&base);
        view! {
            <th class=class aria-sort=aria><A href=href attr:data-testid=format!("sort-{}", column.key())>{label}{arrow}</A></th>
        }
    };
    let filter_chip = |status: Option<TrialStatus>, count: usize| {
        let q = TrialQuery {
            status,
            page: 1,
            ..query.clone()
        };
        let label = status.map_or("All", TrialStatus::as_str);
        let testid = format!("filter-{}", status.map_or("all", TrialStatus::as_str));
        view! {
            <A href=q.href(&base) attr:class=if query.status == status { "chip active" } else { "chip" } attr:data-testid=testid>{format!("{label} {count}")}</A>
        }
    };
    let statuses = [
        TrialStatus::Waiting,
        TrialStatus::Running,
        TrialStatus::Succeeded,
        TrialStatus::Failed,
        TrialStatus::Pruned,
        TrialStatus::Stopped,
    ];
    let chips = statuses
        .into_iter()
        .map(|s| (s, e.trials.iter().filter(|t| t.status == s).count()))
        .filter(|(_, n)| *n > 0)
        .map(|(s, n)| filter_chip(Some(s), n))
        .collect_view();
    let pages = total.div_ceil(TRIALS_PER_PAGE).max(1);
    let pager = (pages > 1).then(|| {
        let at = |page: usize| TrialQuery { page, ..query.clone() }.href(&base);
        view! {
            <nav class="pager" aria-label="Pages of trials">
                {(query.page > 1).then(|| view! { <A href=at(query.page - 1)>"← Previous"</A> })}
                <span data-testid="page">{format!("Page {} of {pages} ({total} trials)", query.page.min(pages))}</span>
                {(query.page < pages).then(|| view! { <A href=at(query.page + 1) attr:data-testid="next-page">"Next →"</A> })}
            </nav>
        }
    });
    let metric = e.spec.objective.metric.clone();
    let body = rows
        .into_iter()
        .map(|t| trial_row(t, &names, &tags))
        .collect_view();
    view! {
        <section class="trials">
            <h2>"Trials"</h2>
            <nav class="filters chips" aria-label="Filter trials by status">
                {filter_chip(None, e.trials.len())}
                {chips}
            </nav>
            <table class="grid trials" data-testid="trials">
                <thead>
                    <tr>
                        {heading("#".to_owned(), TrialColumn::Number, "num")}
                        {heading("Status".to_owned(), TrialColumn::Status, "")}
                        {names.iter().map(|n| heading(n.clone(), TrialColumn::Param(n.clone()), "num")).collect_view()}
                        {heading(metric, TrialColumn::Objective, "num")}
                        {tags.tags.iter().map(|t| heading(t.clone(), TrialColumn::Tag(t.clone()), "num other-tag")).collect_view()}
                        {heading("Step".to_owned(), TrialColumn::Step, "num")}
                        <th>"Job"</th>
                        <th>"Ended"</th>
                    </tr>
                </thead>
                <tbody>{body}</tbody>
            </table>
            {pager}
        </section>
    }
}

/// One trial's row.
fn trial_row(t: &Trial, names: &[String], tags: &TrialTags) -> impl IntoView {
    let status = t.status.as_str();
    let values = names
        .iter()
        .map(|n| view! { <td class="num">{value_text(t.values.get(n))}</td> })
        .collect_view();
    let job = format!("/jobs/{}", encode(&t.job));
    let tag_cells = tags
        .tags
        .iter()
        .map(|tag| {
            let v = tags
                .value(t.number, tag)
                .map(format_value)
                .unwrap_or_default();
            view! { <td class="num" data-tag=tag.clone()>{v}</td> }
        })
        .collect_view();
    let job_name = t.job.clone();
    let message = (!t.message.is_empty()).then(|| t.message.clone());
    let ended = t.ended_at.map(format_utc).unwrap_or_default();
    let objective = t.objective.map(format_value).unwrap_or_default();
    let step = t.step.map(|s| s.to_string()).unwrap_or_default();
    let number = t.number;
    view! {
        <tr data-trial=number.to_string()>
            <td class="num">{number}</td>
            <td>
                <span class=format!("status {status}") data-testid="trial-status">{status}</span>
                {message.map(|m| view! { <p class="hint status-message">{m}</p> })}
            </td>
            {values}
            <td class="num" data-testid="objective">{objective}</td>
            {tag_cells}
            <td class="num">{step}</td>
            <td><A href=job>{job_name}</A></td>
            <td>{ended}</td>
        </tr>
    }
}
