//! `/templates`: the account's experiment templates; `/templates/<name>`:
//! a form made from the template's parameters (a number field with its
//! limits for `int` and `float`, a choice for `bool` and `enum`, text with
//! its pattern for `string`, `dataset`, `model`) that runs it. The server
//! checks every value and the form shows what is wrong next to the field;
//! it works without JavaScript (the post lands on the job table).

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;
use leptos_router::hooks::use_params_map;

use crate::api::templates::{get_template, list_templates, RunFormData, RunTemplate};
use crate::api::usage::quota_left;
use crate::components::form::{last_error, FieldError, FormError};
use crate::components::param_field::ParamField;
use crate::components::resource::resource;
use crate::models::time::format_utc;
use crate::models::{Template, Workload};

/// The Templates page.
#[component]
pub fn TemplatesPage() -> impl IntoView {
    let list = resource(|| (), |_| list_templates());
    view! {
        <Title text="Templates" />
        <div class="page-head">
            <h1>"Templates"</h1>
        </div>
        <p class="hint">
            "A job with parameters: fill in a few values instead of writing the whole spec. Save one with "
            <code>"POST /api/v1/templates"</code>
            "; each save makes a new version, and a job records the version it ran."
        </p>
        <Transition fallback=|| view! { <p class="loading">"Loading templates…"</p> }>
            {move || Suspend::new(async move {
                match list.await {
                    Err(err) => view! { <p class="banner error" role="alert">{err.to_string()}</p> }.into_any(),
                    Ok(list) if list.templates.is_empty() => view! {
                        <section class="empty-state" data-testid="no-templates">
                            <p>"No template yet."</p>
                        </section>
                    }.into_any(),
                    Ok(list) => view! {
                        <table class="grid templates" data-testid="templates">
                            <thead>
                                <tr>
                                    <th>"Name"</th>
                                    <th>"Description"</th>
                                    <th>"Parameters"</th>
                                    <th>"Version"</th>
                                    <th>"Saved"</th>
                                    <th>"Actions"</th>
                                </tr>
                            </thead>
                            <tbody>
                                {list.templates.into_iter().map(|t| view! { <TemplateRow t /> }).collect_view()}
                            </tbody>
                        </table>
                    }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn TemplateRow(t: Template) -> impl IntoView {
    let params = t
        .spec
        .parameters
        .iter()
        .map(|p| p.name.clone())
        .collect::<Vec<_>>()
        .join(", ");
    let href = if t.owner.is_empty() {
        format!("/templates/{}", t.spec.name)
    } else {
        format!("/templates/{}?owner={}", t.spec.name, t.owner)
    };
    let shared = t.public.then(|| {
        view! { <span class="badge" title="Published for every account">{format!("{}/", t.owner)}</span> }
    });
    view! {
        <tr data-template=t.spec.name.clone() data-owner=t.owner.clone()>
            <td class="name">{shared}{t.spec.name.clone()}
                {t.spec.notebook.is_some().then(|| view! { " " <span class="badge" title="Runs a notebook file">"notebook"</span> })}
            </td>
            <td>{t.spec.description.clone()}</td>
            <td>{params}</td>
            <td data-testid="version">{format!("v{}", t.version)}</td>
            <td>{format!("{} by {}", format_utc(t.created_at), t.created_by)}</td>
            <td class="actions">
                <a class="button small primary" href=href>"Run…"</a>
            </td>
        </tr>
    }
}

/// `/templates/<name>`: the run form.
#[component]
pub fn TemplateRunPage() -> impl IntoView {
    let params = use_params_map();
    let query = leptos_router::hooks::use_query_map();
    let which = move || {
        (
            params.with(|p| p.get("name").unwrap_or_default()),
            query.with(|q| q.get("owner").filter(|o| !o.is_empty())),
            query.with(|q| q.get("from").filter(|f| !f.is_empty())),
        )
    };
    let template = resource(which, |(name, owner, from)| get_template(name, owner, from));
    view! {
        <Title text="Run a template" />
        <p class="crumbs"><A href="/templates">"Templates"</A></p>
        <Transition fallback=|| view! { <p class="loading">"Loading the template…"</p> }>
            {move || Suspend::new(async move {
                match template.await {
                    Err(err) => view! { <p class="banner error" role="alert">{err.to_string()}</p> }.into_any(),
                    Ok(data) => view! { <RunForm data /> }.into_any(),
                }
            })}
        </Transition>
    }
}

/// The form of one template version.
#[component]
fn RunForm(data: RunFormData) -> impl IntoView {
    let action = ServerAction::<RunTemplate>::new();
    let error = Signal::derive(last_error(action));
    let quota = resource(move || action.version().get(), |_| quota_left());
    let RunFormData {
        template: t,
        values,
        from,
    } = data;
    // What the job holds with the values shown, for the quota line.
    let run = crate::models::TemplateRun {
        values: values
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
            .collect(),
        ..Default::default()
    };
    let asked = t
        .spec
        .render(t.version, &run, &t.spec.name)
        .and_then(|job| job.totals())
        .ok();
    let fields = t
        .spec
        .parameters
        .iter()
        .cloned()
        .map(|p| {
            let value = values.get(&p.name).cloned();
            view! { <ParamField p value error /> }
        })
        .collect_view();
    view! {
        <div class="page-head">
            <h1>{format!("Run {}", t.spec.name)}</h1>
            <span class="badge" data-testid="version">{format!("v{}", t.version)}</span>
            <a class="button" href=format!("/experiments/new?template={}", crate::models::url::encode(&template_ref(&t))) data-testid="search-template">"Search this template"</a>
        </div>
        {(!t.spec.description.is_empty()).then(|| view! { <p class="hint">{t.spec.description.clone()}</p> })}
        {t.spec.notebook.clone().map(|nb| template_notebook(&t, &nb))}
        {from.map(|job| view! {
            <p class="hint" data-testid="from-job">{format!("The values of job {job}: change what you like and run it again.")}</p>
        })}
        <ActionForm action attr:class="run-template">
            <FormError error />
            <input type="hidden" name="name" value=t.spec.name.clone() />
            <input type="hidden" name="owner" value=t.owner.clone() />
            <input type="hidden" name="version" value=t.version.to_string() />
            <fieldset>
                <legend>"Parameters"</legend>
                // One grid for every field, so that labels and inputs line up.
                <div class="form-grid">
                    {fields}
                    <label for="template-job-name">"Job name (empty: named after the template)"</label>
                    <input id="template-job-name" type="text" name="job_name" value="" />
                    <FieldError error field="name" />
                </div>
            </fieldset>
            <Transition fallback=|| ()>
                {move || Suspend::new(async move {
                    let quota = quota.await.ok();
                    crate::components::quota_line::quota_line(quota.as_ref(), true, move |q| {
                        asked.map(|t| q.admit(Workload::Job, t))
                    })
                })}
            </Transition>
            <footer>
                <A href="/templates" attr:class="button">"Cancel"</A>
                <button type="submit" class="primary">"Run"</button>
            </footer>
        </ActionForm>
    }
}

/// What a notebook template runs: the file, where it came from, its page
/// (sandboxed, as a notebook version's) and its download.
fn template_notebook(t: &Template, nb: &crate::models::TemplateNotebook) -> impl IntoView {
    use crate::models::url::encode;
    let base = format!(
        "/api/v1/templates/{}/notebook?owner={}&version={}",
        encode(&t.spec.name),
        encode(&t.owner),
        t.version
    );
    let page = base.replacen("/notebook?", "/notebook/html?", 1);
    let from = nb.job.as_ref().map(|job| {
        view! { " · copied from the run " <a href=format!("/jobs/{}", encode(job))>{job.clone()}</a> }
    });
    view! {
        <section class="template-notebook" data-testid="template-notebook">
            <p>
                "Runs the notebook " <strong>{nb.describe()}</strong> {from}
                ". The parameters below that the job does not use are injected after its "
                <code>"parameters"</code> " cell; the executed notebook is shown on the job's page."
            </p>
            // A link, not a frame: the page is nbconvert's whole notebook,
            // heavy beside a form, and served sandboxed wherever it opens.
            <nav class="page-links">
                <a class="button small" href=page target="_blank" rel="noopener" data-testid="template-notebook-view">"View the notebook"</a>
                <a class="button small" href=base download="">"The notebook (.ipynb)"</a>
            </nav>
        </section>
    }
}

/// `owner/name`, or `name` for a template without an owner.
fn template_ref(t: &Template) -> String {
    if t.owner.is_empty() {
        t.spec.name.clone()
    } else {
        format!("{}/{}", t.owner, t.spec.name)
    }
}
