//! `/experiments/new`: pick a template (`?template=owner/name`, which a
//! template's page links as "Search this template") or the library's
//! example (`?library=1`), then a form: each parameter fixed or searched
//! (a range, on a log scale or not, or choices), the objective, the
//! algorithm, early stopping and the limits. It posts without JavaScript
//! too; a refused field shows its error under it.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;
use leptos_router::hooks::use_query_map;

use crate::api::experiments::{new_experiment_form, CreateExperimentForm, NewExperimentData};
use crate::components::form::{last_error, FieldError, FormError};
use crate::components::resource::resource;
use crate::error::AppError;
use crate::models::{ExperimentForm, ParamForm, Template};

/// The page.
#[component]
pub fn NewExperimentPage() -> impl IntoView {
    let query = use_query_map();
    let which = move || {
        query.with(|q| {
            (
                q.get("template").filter(|t| !t.is_empty()),
                q.get("library").is_some(),
            )
        })
    };
    let data = resource(which, |(template, library)| {
        new_experiment_form(template, library)
    });
    let action = ServerAction::<CreateExperimentForm>::new();
    let error = Signal::derive(last_error(action));
    view! {
        <Title text="New experiment" />
        <p class="crumbs"><A href="/experiments">"Experiments"</A></p>
        <h1>"New experiment"</h1>
        <Transition fallback=|| view! { <p class="loading">"Loading templates…"</p> }>
            {move || Suspend::new(async move {
                match data.await {
                    Err(err) => view! { <p class="banner error" role="alert">{err.to_string()}</p> }.into_any(),
                    Ok(data) => view! { <Picker data=data.clone() /> {form_of(data, action, error)} }.into_any(),
                }
            })}
        </Transition>
    }
}

/// The template picker: a GET of this page.
#[component]
fn Picker(data: NewExperimentData) -> impl IntoView {
    let picked = data
        .template
        .as_ref()
        .map(|t| format!("{}/{}", t.owner, t.spec.name))
        .unwrap_or_default();
    view! {
        <form method="get" action="/experiments/new" class="filters" data-testid="pick-template">
            <label>"Template"
                <select name="template" id="experiment-template-pick">
                    {data.templates.into_iter().map(|t| view! { <option value=t.clone() selected=t == picked>{t.clone()}</option> }).collect_view()}
                </select>
            </label>
            <button type="submit">"Search this template"</button>
            <A href="/experiments/new?library=1" attr:data-testid="from-library">"Or from the library: fit-a-line's learning rate and batch size"</A>
        </form>
    }
}

fn form_of(
    data: NewExperimentData,
    action: ServerAction<CreateExperimentForm>,
    error: Signal<Option<AppError>>,
) -> Option<impl IntoView> {
    let (template, form) = (data.template?, data.form?);
    Some(view! { <ExperimentFormView template form action error /> })
}

/// A text input named `form[field]` with its label and error.
fn input(
    id: &'static str,
    label: &'static str,
    field: &'static str,
    value: String,
    kind: &'static str,
    error: Signal<Option<AppError>>,
) -> impl IntoView {
    view! {
        <label for=id>{label}</label>
        <input id=id name=format!("form[{field}]") type=kind step="any" value=value />
        <FieldError error field=field />
    }
}

/// A select named `form[field]` of `(value, label)` options.
fn select(
    id: &'static str,
    label: &'static str,
    field: &'static str,
    value: &str,
    options: &[(&'static str, &'static str)],
) -> impl IntoView {
    let options = options
        .iter()
        .map(|&(v, text)| view! { <option value=v selected=v == value>{text}</option> })
        .collect_view();
    view! {
        <label for=id>{label}</label>
        <select id=id name=format!("form[{field}]")>{options}</select>
    }
}

#[component]
fn ExperimentFormView(
    template: Template,
    form: ExperimentForm,
    action: ServerAction<CreateExperimentForm>,
    error: Signal<Option<AppError>>,
) -> impl IntoView {
    let rows = template
        .spec
        .parameters
        .iter()
        .map(|p| {
            let row = form.params.get(&p.name).cloned().unwrap_or_default();
            view! { <ParamRow name=p.name.clone() description=p.description.clone() row error /> }
        })
        .collect_view();
    let f = form;
    view! {
        <ActionForm action attr:class="new-experiment" attr:data-testid="experiment-form">
            <FormError error />
            <input type="hidden" name="form[template]" value=f.template.clone() />
            <p class="hint">{format!("Searching {} v{}: each trial runs it with the values below, a searched parameter's drawn by the algorithm.", f.template, template.version)}</p>
            <div class="form-grid">
                {input("experiment-name", "Experiment name", "name", f.name.clone(), "text", error)}
            </div>
            <FieldError error field="template" />
            <fieldset>
                <legend>"Parameters: fixed, or searched over a range or choices"</legend>
                <table class="grid params">
                    <thead><tr><th>"Parameter"</th><th>"Fixed or searched"</th><th>"Value"</th><th>"Min"</th><th>"Max"</th><th>"Log scale"</th><th>"Choices"</th></tr></thead>
                    <tbody>{rows}</tbody>
                </table>
                <FieldError error field="parameters" />
            </fieldset>
            <fieldset>
                <legend>"Objective: a PaddleBoard tag the trials report"</legend>
                <div class="form-grid">
                    {input("experiment-metric", "Tag", "metric", f.metric.clone(), "text", error)}
                    {select("experiment-direction", "Better is", "direction", &f.direction, &[("minimize", "lower (minimise)"), ("maximize", "higher (maximise)")])}
                    {select("experiment-value", "A trial's value", "value", &f.value, &[("last", "its last value"), ("best", "its best value")])}
                    {input("experiment-goal", "Goal (optional: ends the search when reached)", "goal", f.goal.clone(), "text", error)}
                </div>
            </fieldset>
            <fieldset>
                <legend>"Search"</legend>
                <div class="form-grid">
                    {select("experiment-algorithm", "Algorithm", "algorithm", &f.algorithm, &[("tpe", "TPE (Bayesian)"), ("random", "random"), ("grid", "grid")])}
                    {input("experiment-grid-points", "Grid: values per range", "grid_points", f.grid_points.clone(), "number", error)}
                    {select("experiment-stopping", "Early stopping of poor trials", "early_stopping", &f.early_stopping, &[("none", "none"), ("median", "median"), ("asha", "ASHA")])}
                    <FieldError error field="early_stopping" />
                    {input("experiment-max-trials", "Trials in all", "max_trials", f.max_trials.clone(), "number", error)}
                    {input("experiment-parallel", "Trials at once", "parallel_trials", f.parallel_trials.clone(), "number", error)}
                    {input("experiment-failures", "Failed trials tolerated", "max_failed_trials", f.max_failed_trials.clone(), "number", error)}
                </div>
            </fieldset>
            <footer>
                <A href="/experiments" attr:class="button">"Cancel"</A>
                <button type="submit" class="primary" data-testid="start-experiment">"Start the experiment"</button>
            </footer>
        </ActionForm>
    }
}

/// One template parameter's row.
#[component]
fn ParamRow(
    name: String,
    description: String,
    row: ParamForm,
    error: Signal<Option<AppError>>,
) -> impl IntoView {
    let field = |f: &str| format!("form[params][{name}][{f}]");
    let id = |f: &str| format!("param-{name}-{f}");
    let searchable = row.kind != "text";
    let numeric = matches!(row.kind.as_str(), "int" | "float");
    let mode = if searchable {
        let search = row.mode == "search";
        view! {
            <select id=id("mode") name=field("mode") aria-label=format!("{name}: fixed or searched")>
                <option value="fixed" selected=!search>"fixed"</option>
                <option value="search" selected=search>"searched"</option>
            </select>
        }
        .into_any()
    } else {
        view! { <input type="hidden" name=field("mode") value="fixed" />"fixed" }.into_any()
    };
    let range = numeric.then(|| {
        view! {
            <td><input id=id("min") name=field("min") value=row.min.clone() class="short" aria-label=format!("{name}: min") /></td>
            <td><input id=id("max") name=field("max") value=row.max.clone() class="short" aria-label=format!("{name}: max") /></td>
            <td><input id=id("log") name=field("log") type="checkbox" value="on" checked=row.log == "on" aria-label=format!("{name}: log scale") /></td>
        }
    });
    let no_range = (!numeric).then(|| view! { <td></td><td></td><td></td> });
    let choices = (row.kind == "enum").then(|| {
        view! { <input id=id("choices") name=field("choices") value=row.choices.clone() aria-label=format!("{name}: choices, separated by commas") /> }
    });
    let label = if description.is_empty() {
        name.clone()
    } else {
        format!("{name} ({description})")
    };
    view! {
        <tr data-param=name.clone()>
            <td>
                <input type="hidden" name=field("kind") value=row.kind.clone() />
                <label for=id("value")>{label}</label>
                <FieldError error field=format!("params.{name}") />
            </td>
            <td>{mode}</td>
            <td><input id=id("value") name=field("value") value=row.value.clone() aria-label=format!("{name}: fixed value") /></td>
            {range}
            {no_range}
            <td>{choices}</td>
        </tr>
    }
}
