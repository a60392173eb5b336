//! The launch dialog: the model version, the inference configuration (a
//! serving script, typed or loaded from a file, or a command of one's own), replicas and what each asks
//! for, with the total computed as you type and compared with what the
//! account's quota leaves. Errors sit next to the field they are about.

use leptos::prelude::*;
use leptos_router::components::A;
use leptos_router::hooks::use_query_map;

use super::format_totals;
use crate::api::serving::ModelChoice;
use crate::api::serving::{serving_models, LaunchServing};
use crate::api::usage::quota_left;
use crate::components::dialog::Dialog;
use crate::components::form::{last_error, FieldError, FormError};
use crate::components::links::page_href;
use crate::components::resource::resource;
use crate::models::{QuotaUse, ServingForm, Workload};

/// The dialog, open while the URL has `launch=1`.
#[component]
pub fn LaunchDialog() -> impl IntoView {
    let action = ServerAction::<LaunchServing>::new();
    let error = Signal::derive(last_error(action));
    let form = RwSignal::new(ServingForm::example());
    let params = use_query_map();
    let close = move || params.with(|p| page_href("/serving", p, &[("launch", None)]));
    let models = resource(|| (), |_| serving_models());
    let quota = resource(move || action.version().get(), |_| quota_left());
    let field = move |name: &'static str,
                      label: &'static str,
                      kind: &'static str,
                      get: fn(&ServingForm) -> String| {
        view! {
            <label for=format!("serving-{name}")>{label}</label>
            <input
                id=format!("serving-{name}")
                type=kind
                name=format!("form[{name}]")
                value=form.with_untracked(get)
            />
        }
    };
    let model_picker = move || {
        Suspend::new(async move {
            let choices = models.await.unwrap_or_default();
            if choices.is_empty() {
                return view! {
                <p class="banner warn" data-testid="no-models">
                    "No model has a version ready to serve. Register one on the " <A href="/models">"Models"</A> " page."
                </p>
            }.into_any();
            }
            let model = form.with_untracked(|f| f.model.clone());
            view! { <ModelPicker choices model /> }.into_any()
        })
    };
    view! {
        <Dialog id="launch-title" title="Launch a serving instance" close=close wide=true>
            <ActionForm action>
                <FormError error />
                <div class="form-grid">
                    {field("name", "Name", "text", |f| f.name.clone())}
                </div>
                <FieldError error field="name" />
                <Transition fallback=|| view! { <p class="loading">"Loading models…"</p> }>{model_picker}</Transition>
                <FieldError error field="model" />
                <FieldError error field="version" />
                <details class="inference">
                    <summary>"Inference configuration"</summary>
                    <div class="form-grid">
                        {field("file", "Model archive in the version (.tar.gz, optional)", "text", |f| f.file.clone())}
                    </div>
                    <FieldError error field="file" />
                    <label for="serving-script">"Serving script (Python, optional: define load(model_dir) and/or predict(state, inputs))"</label>
                    <textarea
                        id="serving-script"
                        name="form[script]"
                        rows="6"
                        class="code"
                        spellcheck="false"
                    >{form.with_untracked(|f| f.script.clone())}</textarea>
                    <ScriptFile />
                    <FieldError error field="script" />
                    <div class="form-grid">
                        {field("command", "Command (instead of the default predict server)", "text", |f| f.command.clone())}
                        {field("image", "Image (Kubernetes)", "text", |f| f.image.clone())}
                    </div>
                    <FieldError error field="command" />
                    <div class="form-grid">
                        {field("environment", "Python environment (optional; needs paddlepaddle)", "text", |f| f.environment.clone())}
                    </div>
                    <FieldError error field="environment" />
                    <label for="serving-env">"Environment variables (KEY=VALUE per line)"</label>
                    <textarea
                        id="serving-env"
                        name="form[env]"
                        rows="2"
                    >{form.with_untracked(|f| f.env.clone())}</textarea>
                    <FieldError error field="env" />
                    <label for="serving-secrets">"Secrets (one per line: VARIABLE=secret, or file:FILE=secret; see "<a href="/secrets">"Secrets"</a>")"</label>
                    <textarea id="serving-secrets" name="form[secrets]" rows="2">{form.with_untracked(|f| f.secrets.clone())}</textarea>
                    <FieldError error field="secrets" />
                </details>
                <fieldset>
                    <legend>"Replicas"</legend>
                    <div class="form-grid four">
                        {field("replicas", "Count", "number", |f| f.replicas.clone())}
                        {field("cpu", "CPU each", "text", |f| f.cpu.clone())}
                        {field("memory", "Memory each", "text", |f| f.memory.clone())}
                        {field("gpu", "GPU each", "number", |f| f.gpu.clone())}
                    </div>
                    <FieldError error field="replicas" />
                    <FieldError error field="resources.cpu" />
                    <FieldError error field="resources.memory" />
                    <FieldError error field="resources.gpu" />
                    <label class="check">
                        <input
                            type="checkbox"
                            name="form[autoscale]"
                            value="on"
                            checked=form.with_untracked(|f| f.autoscale == "on")
                        />
                        " Scale with CPU load (Kubernetes: a HorizontalPodAutoscaler)"
                    </label>
                    <div class="form-grid three">
                        {field("min", "Fewest", "number", |f| f.min.clone())}
                        {field("max", "Most", "number", |f| f.max.clone())}
                        {field("cpu_percent", "CPU target %", "number", |f| f.cpu_percent.clone())}
                    </div>
                    <FieldError error field="autoscale.min" />
                    <FieldError error field="autoscale.max" />
                    <FieldError error field="autoscale.cpu_percent" />
                </fieldset>
                <Transition fallback=|| ()>
                    {move || Suspend::new(async move {
                        let quota = quota.await.ok();
                        view! { <ServingTotal form=form.get_untracked() quota /> }
                    })}
                </Transition>
                <footer>
                    <A href=close attr:class="button">"Cancel"</A>
                    <button type="submit" class="primary">"Launch"</button>
                </footer>
            </ActionForm>
        </Dialog>
    }
}

/// The model and version choices; the versions follow the model chosen.
#[island]
fn ModelPicker(
    /// Models with versions ready to serve.
    choices: Vec<ModelChoice>,
    /// The model chosen at first (empty: the first one).
    model: String,
) -> impl IntoView {
    #[cfg(feature = "hydrate")]
    crate::island_hydrated();
    let first = if model.is_empty() {
        choices[0].model.clone()
    } else {
        model
    };
    let model = RwSignal::new(first);
    let selected = model.get_untracked();
    let chosen = {
        let choices = choices.clone();
        move || {
            model.with(|m| {
                choices
                    .iter()
                    .find(|c| &c.model == m)
                    .map(|c| (c.versions.clone(), c.aliases.clone()))
                    .unwrap_or_default()
            })
        }
    };
    let versions = {
        let chosen = chosen.clone();
        move || chosen().0
    };
    let aliases = move || chosen().1;
    view! {
        <div class="form-grid">
            <label for="serving-model">"Model"</label>
            <select id="serving-model" name="form[model]" on:change=move |ev| model.set(event_target_value(&ev))>
                {choices.iter().map(|c| view! {
                    <option value=c.model.clone() selected=c.model == selected>{c.model.clone()}</option>
                }).collect_view()}
            </select>
            <label for="serving-version">"Version"</label>
            <select id="serving-version" name="form[version]">
                <option value="">"Newest ready"</option>
                {move || versions().into_iter().map(|(v, tags)| {
                    let label = if tags.is_empty() { format!("v{v}") } else { format!("v{v} ({})", tags.join(", ")) };
                    view! { <option value=v.to_string()>{label}</option> }
                }).collect_view()}
                // An alias: the instance follows it, rolling to where it moves.
                {move || aliases().into_iter().map(|(a, v)| {
                    view! { <option value=format!("@{a}")>{format!("follow @{a} (now v{v})")}</option> }
                }).collect_view()}
            </select>
        </div>
    }
}

/// A script file chosen on this computer goes into the script editor (read
/// in the browser; without JavaScript the script is pasted).
#[island]
fn ScriptFile() -> impl IntoView {
    #[cfg(feature = "hydrate")]
    crate::island_hydrated();
    let loaded = RwSignal::new(String::new());
    #[cfg(feature = "hydrate")]
    let load = move |ev: leptos::ev::Event| {
        use wasm_bindgen::JsCast;
        let Some(file) = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok())
            .and_then(|input| input.files())
            .and_then(|files| files.get(0))
        else {
            return;
        };
        let name = file.name();
        if file.size() > crate::models::MAX_SCRIPT_BYTES as f64 {
            loaded.set(format!(
                "{name} is larger than the 256 KiB a serving script may be."
            ));
            return;
        }
        leptos::task::spawn_local(async move {
            let editor = document()
                .get_element_by_id("serving-script")
                .and_then(|e| e.dyn_into::<web_sys::HtmlTextAreaElement>().ok());
            match (
                wasm_bindgen_futures::JsFuture::from(file.text()).await,
                editor,
            ) {
                (Ok(text), Some(editor)) => {
                    editor.set_value(&text.as_string().unwrap_or_default());
                    loaded.set(format!("Loaded {name} into the editor."));
                }
                _ => loaded.set(format!("Could not read {name}.")),
            }
        });
    };
    #[cfg(not(feature = "hydrate"))]
    let load = |_ev: leptos::ev::Event| {};
    view! {
        <div class="script-file">
            <label for="serving-script-file">"…or load it from a file"</label>
            <input id="serving-script-file" type="file" accept=".py,text/x-python,text/plain" on:change=load />
            <span class="hint" role="status" data-testid="script-loaded">{move || loaded.get()}</span>
        </div>
    }
}

/// The instance's total and how it fits the account's quota, computed
/// again as the dialog's fields change.
#[island]
fn ServingTotal(
    /// The fields as the server rendered them.
    form: ServingForm,
    /// The account's quota and use (`None`: could not be read).
    quota: Option<QuotaUse>,
) -> impl IntoView {
    #[cfg(feature = "hydrate")]
    crate::island_hydrated();
    let (form, root) = crate::components::form_watch::watched_form(form);
    let total = move || {
        form.with(|f| match f.size() {
            Ok((n, per, total)) => {
                format!("{n} × ({}) = {}", format_totals(per), format_totals(total))
            }
            Err(e) => e.to_string(),
        })
    };
    let quota_line = move || {
        crate::components::quota_line::quota_line(quota.as_ref(), false, |q| {
            form.with(|f| f.size())
                .ok()
                .map(|(_, _, t)| q.admit(Workload::Instance, t))
        })
    };
    view! {
        <div node_ref=root>
            <p class="total" data-testid="serving-total">"This instance asks for " <strong>{total}</strong></p>
            {quota_line}
        </div>
    }
}
