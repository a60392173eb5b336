//! `/jobs/<name>/template`: "Save as template". The job's spec as the
//! template's job (JSON, to put `{{parameter}}` placeholders in), an empty
//! list of parameters to fill, and a name; saving opens the template's run
//! form. Works without JavaScript.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;
use leptos_router::hooks::use_params_map;

use crate::api::templates::{job_as_template, SaveTemplate};
use crate::components::form::{last_error, FieldError, FormError};
use crate::components::resource::resource;
use crate::models::TemplateForm;

/// The page.
#[component]
pub fn SaveAsTemplatePage() -> impl IntoView {
    let params = use_params_map();
    let job = move || params.with(|p| p.get("name").unwrap_or_default());
    let form = resource(job, job_as_template);
    view! {
        <Title text="Save as template" />
        <p class="crumbs"><A href="/jobs">"Jobs"</A></p>
        <Transition fallback=|| view! { <p class="loading">"Loading the job…"</p> }>
            {move || Suspend::new(async move {
                match form.await {
                    Err(err) => view! { <p class="banner error" role="alert">{err.to_string()}</p> }.into_any(),
                    Ok(form) => view! { <TemplateEditor job=job() form /> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn TemplateEditor(job: String, form: TemplateForm) -> impl IntoView {
    let action = ServerAction::<SaveTemplate>::new();
    let error = Signal::derive(last_error(action));
    view! {
        <div class="page-head">
            <h1>{format!("Save {job} as a template")}</h1>
        </div>
        <p class="hint">
            "Put " <code>"{{name}}"</code> " where a value should be asked for (a whole "
            <code>"\"{{trainers}}\""</code> " keeps its type), and describe each in the parameters, e.g. "
            <code>r#"[{"name": "trainers", "type": "int", "min": 1, "max": 8, "default": 2}]"#</code>
            ". Types: int, float, bool, enum, string, dataset, model, environment."
        </p>
        {(!form.notebook_job.is_empty()).then(|| view! {
            <p class="banner" data-testid="template-notebook">
                "This template runs the notebook this run ran (a copy kept with the template, so it \
                 keeps working after the notebook changes). Its parameters are the notebook's, \
                 each defaulting to this run's value; a parameter the job's placeholders use \
                 (e.g. " <code>"\"memory\": \"{{memory}}\""</code> ") sets the job instead."
            </p>
        })}
        <ActionForm action attr:class="save-template">
            <input type="hidden" name="form[notebook_job]" value=form.notebook_job.clone() />
            <FormError error />
            <FieldError error field="notebook" />
            <div class="form-grid">
                <label for="template-name">"Name"</label>
                <input id="template-name" type="text" name="form[name]" value=form.name.clone() />
                <FieldError error field="name" />
                <label for="template-description">"Description"</label>
                <input id="template-description" type="text" name="form[description]" value=form.description.clone() />
                <FieldError error field="description" />
                <label for="template-parameters">"Parameters (JSON)"</label>
                <textarea id="template-parameters" name="form[parameters]" rows="6" class="code">{form.parameters.clone()}</textarea>
                <FieldError error field="parameters" />
                <label for="template-job">"Job (JSON)"</label>
                <textarea id="template-job" name="form[job]" rows="18" class="code">{form.job.clone()}</textarea>
                <FieldError error field="job" />
            </div>
            <footer>
                <A href="/jobs" attr:class="button">"Cancel"</A>
                <button type="submit" class="primary">"Save template"</button>
            </footer>
        </ActionForm>
    }
}
