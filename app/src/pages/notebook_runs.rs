//! Notebook runs: `/notebooks/<name>/run?path=&version=` (run a version of a
//! file as a job, with a typed field per parameter of its cell tagged
//! `parameters`), and the section of a run's job page: the notebook and
//! values it ran, how far it got, the cell it failed at, and the executed
//! notebook rendered (in a sandboxed frame where nothing runs).

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::api::notebook_runs::{read_notebook_run_form, RunNotebook};
use crate::components::form::{last_error, FieldError, FormError};
use crate::components::param_field::ParamField;
use crate::components::resource::resource;
use crate::models::url::encode;
use crate::models::{
    history_href, run_href, Job, NotebookRunForm, NotebookRunReport, PARAMETERS_TAG,
};

/// The run form's page.
#[component]
pub fn NotebookRunPage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let which = move || {
        (
            params.with(|p| p.get("name").unwrap_or_default()),
            query.with(|q| q.get("path").unwrap_or_default()),
            query.with(|q| {
                q.get("version")
                    .and_then(|v| v.parse::<i64>().ok())
                    .unwrap_or(0)
            }),
            query.with(|q| q.get("from").unwrap_or_default()),
        )
    };
    let form = resource(which, |(name, path, version, from)| {
        read_notebook_run_form(name, path, version, from)
    });
    let name = move || params.with(|p| p.get("name").unwrap_or_default());
    view! {
        <Title text="Run a notebook" />
        <p class="crumbs">
            <A href="/notebooks">"Notebooks"</A> " › "
            {move || view! { <a href=history_href(&name(), None, None)>{name()}</a> }}
        </p>
        <Transition fallback=|| view! { <p class="loading">"Reading the notebook's parameters…"</p> }>
            {move || Suspend::new(async move {
                match form.await {
                    Err(err) => view! { <p class="banner error" role="alert">{err.to_string()}</p> }.into_any(),
                    Ok(data) => view! { <RunForm data /> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn RunForm(data: NotebookRunForm) -> impl IntoView {
    let action = ServerAction::<RunNotebook>::new();
    let error = Signal::derive(last_error(action));
    let p = data.parameters.clone();
    let heading = format!("Run {} (version #{})", p.path, p.version);
    let cell_hint = match p.cell {
        Some(cell) => format!(
            "Cell {cell} is tagged “{PARAMETERS_TAG}”: a value given here replaces its line \
             (papermill injects the values in a cell after it). An empty field keeps the notebook's."
        ),
        None => format!(
            "No cell of this version is tagged “{PARAMETERS_TAG}”, so it runs as it is. To give it \
             values, tag the cell that sets them in JupyterLab (Property Inspector › Cell Tags) and save."
        ),
    };
    let fields = p
        .parameters
        .iter()
        .map(|param| {
            let value = data.values.get(&param.param.name).cloned();
            let p = param.param.clone();
            view! { <ParamField p value error /> }
        })
        .collect_view();
    let r = data.resources.clone();
    view! {
        <div class="page-head">
            <h1>{heading}</h1>
        </div>
        <p class="hint" data-testid="parameters-cell">{cell_hint}</p>
        {data.from.map(|job| view! {
            <p class="hint" data-testid="from-job">{format!("The values of job {job}: change what you like and run it again.")}</p>
        })}
        <ActionForm action attr:class="run-template" attr:data-testid="notebook-run-form">
            <FormError error />
            <input type="hidden" name="name" value=p.notebook.clone() />
            <input type="hidden" name="path" value=p.path.clone() />
            <input type="hidden" name="version" value=p.version.to_string() />
            {(!p.parameters.is_empty()).then(|| view! {
                <fieldset>
                    <legend>"Parameters"</legend>
                    <div class="form-grid" data-testid="notebook-parameters">{fields}</div>
                </fieldset>
            })}
            <fieldset>
                <legend>"The job"</legend>
                <div class="form-grid">
                    <label for="run-job-name">"Job name (empty: named after the file)"</label>
                    <input id="run-job-name" type="text" name="job[name]" value="" />
                    <FieldError error field="name" />
                    <label for="run-environment">"Environment (papermill and ipykernel are added)"</label>
                    <input id="run-environment" type="text" name="job[environment]" value=data.environment.clone() />
                    <FieldError error field="environment" />
                    <label for="run-cpu">"CPU"</label>
                    <input id="run-cpu" type="text" name="job[cpu]" value=r.cpu />
                    <FieldError error field="trainer.cpu" />
                    <label for="run-memory">"Memory"</label>
                    <input id="run-memory" type="text" name="job[memory]" value=r.memory />
                    <FieldError error field="trainer.memory" />
                    <label for="run-gpu">"GPUs"</label>
                    <input id="run-gpu" type="number" min="0" step="1" name="job[gpu]" value=r.gpu.to_string() />
                    <FieldError error field="gpu" />
                    <label for="run-datasets">"Datasets (name or owner/name, :N for a saved version, comma-separated)"</label>
                    <input id="run-datasets" type="text" name="job[datasets]" value=data.datasets.clone() />
                    <FieldError error field="datasets" />
                </div>
            </fieldset>
            <footer>
                <a href=history_href(&p.notebook, Some(&p.path), None) class="button">"Cancel"</a>
                <button type="submit" class="primary" data-testid="run-notebook">"Run"</button>
            </footer>
        </ActionForm>
    }
}

/// The section of a notebook run's job page.
#[component]
pub fn NotebookRunSection(job: Job, report: Option<NotebookRunReport>) -> impl IntoView {
    let Some(run) = job.spec.notebook_run.clone() else {
        return ().into_any();
    };
    let name = job.name.clone();
    let base = format!("/api/v1/jobs/{}/notebook", encode(&name));
    let values = match run.values_text() {
        v if v.is_empty() => "none (the notebook's own)".to_owned(),
        v => v,
    };
    // A notebook template's run goes back to its template's form.
    let again = crate::models::again_href(&job)
        .unwrap_or_else(|| run_href(&run.notebook, &run.path, Some(run.version), Some(&name)));
    let progress = report.as_ref().map(|r| {
        let (value, max) = (r.done + u32::from(r.failed.is_some()), r.cells.max(1));
        let seconds = r
            .seconds
            .map(|s| format!(" in {s:.1} s"))
            .unwrap_or_default();
        view! {
            <p data-testid="notebook-progress">
                <progress value=value max=max></progress>
                " " <strong>{r.headline()}</strong> {seconds}
            </p>
        }
    });
    let failed = report.as_ref().and_then(|r| r.failed.clone()).map(|f| {
        let count = f
            .execution_count
            .map(|n| format!(" · In [{n}]"))
            .unwrap_or_default();
        view! {
            <div class="banner error" role="alert" data-testid="notebook-failed-cell">
                <p><strong>{format!("Cell {}{count} failed: {}", f.cell, f.error)}</strong></p>
                <pre class="cell-source">{f.source.clone()}</pre>
                <details>
                    <summary>"Traceback"</summary>
                    <pre>{f.traceback.clone()}</pre>
                </details>
            </div>
        }
    });
    let has_output = report.is_some();
    let frame_src = if report.as_ref().is_some_and(|r| r.failed.is_some()) {
        // papermill's anchor on the failing cell.
        format!("{base}/output/html#papermill-error-cell")
    } else {
        format!("{base}/output/html")
    };
    view! {
        <section class="job-section notebook-run" aria-labelledby="job-notebook" data-testid="notebook-run">
            <h2 id="job-notebook">"Notebook"</h2>
            <p>
                <a href=history_href(&run.notebook, Some(&run.path), Some(run.version))><code>{run.path.clone()}</code></a>
                {format!(" of notebook {} · version #{} · values: ", run.notebook, run.version)}
                <span data-testid="notebook-values">{values}</span>
            </p>
            <nav class="page-links">
                <a class="button small" href=again data-testid="notebook-run-again">"Run again with other values"</a>
                <a class="button small" href=format!("{base}/input") download="">"The notebook as run (.ipynb)"</a>
                {has_output.then(|| view! {
                    <a class="button small" href=format!("{base}/output") download="" data-testid="notebook-output-download">"Executed notebook (.ipynb)"</a>
                })}
            </nav>
            {progress}
            {failed}
            {if has_output {
                view! {
                    <iframe class="notebook-page" src=frame_src sandbox="" title=format!("{} as executed by job {name}", run.path)
                        data-testid="notebook-output"></iframe>
                }.into_any()
            } else {
                view! { <p class="muted" data-testid="notebook-no-output">"The executed notebook appears here once its first cell ran."</p> }.into_any()
            }}
        </section>
    }
    .into_any()
}
