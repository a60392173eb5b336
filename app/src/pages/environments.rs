//! `/environments`: the environments the account can use (its own, then
//! published ones) with the state of each build, and a form that saves
//! one; `/environments/<name>?owner=&version=`: one version, its other
//! versions, and its build with pip's log, refreshed while it builds. Both
//! work without JavaScript.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::api::environments::{
    get_environment, list_environments, EnvironmentForm, SaveEnvironment,
};
use crate::components::form::{last_error, FieldError, FormError};
use crate::components::live::{beside_regions, LiveRegion, Region};
use crate::components::resource::resource;
use crate::models::time::format_utc;
use crate::models::{BuildState, Environment, EnvironmentDetail, EnvironmentSummary};

/// The link to an environment's page (at `version`, when given).
fn href(e: &Environment, version: Option<u32>) -> String {
    let version = version.map(|v| format!("&version={v}")).unwrap_or_default();
    format!("/environments/{}?owner={}{version}", e.spec.name, e.owner)
}

/// A build's state as a badge.
fn state_badge(state: BuildState) -> impl IntoView {
    view! {
        <span class=format!("badge build-{}", state.as_str()) data-testid="build-state">
            {state.label()}
        </span>
    }
}

/// The Environments page.
#[component]
pub fn EnvironmentsPage() -> impl IntoView {
    let list = resource(|| (), |_| list_environments());
    view! {
        <Title text="Environments" />
        <div class="page-head">
            <h1>"Environments"</h1>
        </div>
        <p class="hint">
            "A named Python environment for jobs, chosen instead of a bare image: an image for Kubernetes and the pip packages it needs. "
            "On this machine the console builds a virtualenv from PyPI for each; a job that names one (" <code>"\"environment\": \"paddlecloud/paddle-cpu\""</code>
            ") runs in it, and records the exact version. Saving again makes a new version."
        </p>
        <Transition fallback=|| view! { <p class="loading">"Loading environments…"</p> }>
            {move || Suspend::new(async move {
                match list.await {
                    Err(err) => view! { <p class="banner error" role="alert">{err.to_string()}</p> }.into_any(),
                    Ok(list) => view! {
                        <table class="grid environments" data-testid="environments">
                            <thead>
                                <tr>
                                    <th>"Name"</th>
                                    <th>"Description"</th>
                                    <th>"Packages"</th>
                                    <th>"Image"</th>
                                    <th>"Version"</th>
                                    <th>"Build here"</th>
                                </tr>
                            </thead>
                            <tbody>
                                {list.environments.into_iter().map(|e| view! { <EnvironmentRow e /> }).collect_view()}
                            </tbody>
                        </table>
                    }.into_any(),
                }
            })}
        </Transition>
        <section class="panel">
            <h2>"Save an environment"</h2>
            <EnvironmentEditor form=EnvironmentForm::default() />
        </section>
    }
}

#[component]
fn EnvironmentRow(e: EnvironmentSummary) -> impl IntoView {
    let env = e.environment;
    let packages = if env.spec.requirements.is_empty() {
        "the SDK only".to_owned()
    } else {
        env.spec.requirements.join(", ")
    };
    let link = href(&env, None);
    view! {
        <tr data-environment=format!("{}/{}", env.owner, env.spec.name)>
            <td class="name">
                {env.public.then(|| view! { <span class="badge" title="Published for every account">{format!("{}/", env.owner)}</span> })}
                <a href=link>{env.spec.name.clone()}</a>
            </td>
            <td>{env.spec.description.clone()}</td>
            <td><code>{packages}</code></td>
            <td><code>{env.spec.image.clone()}</code></td>
            <td data-testid="version">{format!("v{}", env.version)}</td>
            <td>{state_badge(e.state)}</td>
        </tr>
    }
}

/// The fields of a version; saving opens its page.
#[component]
fn EnvironmentEditor(form: EnvironmentForm) -> impl IntoView {
    let action = ServerAction::<SaveEnvironment>::new();
    let error = Signal::derive(last_error(action));
    let text = move |name: &'static str, label: &'static str, value: String, hint: &'static str| {
        view! {
            <label for=format!("environment-{name}")>{label}</label>
            <input id=format!("environment-{name}") type="text" name=format!("form[{name}]") value=value placeholder=hint />
            <FieldError error field=name />
        }
    };
    view! {
        <ActionForm action attr:class="environment-form">
            <FormError error />
            <div class="form-grid">
                {text("name", "Name", form.name.clone(), "paddle-nlp")}
                {text("description", "Description", form.description.clone(), "")}
                {text("image", "Image (Kubernetes)", form.image.clone(), "paddlepaddle/paddle:3.3.1")}
                <label for="environment-requirements">"pip requirements, one per line"</label>
                <textarea id="environment-requirements" name="form[requirements]" rows="5"
                    placeholder="paddlepaddle==3.3.1\nvisualdl==2.5.3">{form.requirements.clone()}</textarea>
                <FieldError error field="requirements" />
                <label for="environment-setup_notes">"Setup notes"</label>
                <textarea id="environment-setup_notes" name="form[setup_notes]" rows="2">{form.setup_notes.clone()}</textarea>
                <FieldError error field="setup_notes" />
            </div>
            <button type="submit" class="primary">"Save and build"</button>
        </ActionForm>
    }
}

/// `/environments/<name>`.
#[component]
pub fn EnvironmentPage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let which = move || {
        (
            params.with(|p| p.get("name").unwrap_or_default()),
            query.with(|q| q.get("owner").filter(|o| !o.is_empty())),
            query.with(|q| q.get("version").and_then(|v| v.parse::<u32>().ok())),
        )
    };
    let detail = resource(which, |(name, owner, version)| {
        get_environment(name, owner, version)
    });
    view! {
        <Title text="Environment" />
        <p class="crumbs"><A href="/environments">"Environments"</A></p>
        <Transition fallback=|| view! { <p class="loading">"Loading the environment…"</p> }>
            {move || Suspend::new(async move {
                match detail.await {
                    Err(err) => view! { <p class="banner error" role="alert">{err.to_string()}</p> }.into_any(),
                    Ok(d) => view! { <EnvironmentView d /> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn EnvironmentView(d: EnvironmentDetail) -> impl IntoView {
    let env = d.environment.clone();
    let versions = d
        .versions
        .iter()
        .map(|v| {
            let current = *v == env.version;
            view! {
                <a href=href(&env, Some(*v)) class:current=current aria-current=current.then_some("page")>
                    {format!("v{v}")}
                </a>" "
            }
        })
        .collect_view();
    let requirements = if env.spec.requirements.is_empty() {
        view! { <p>"None: Python and the PaddleCloud SDK."</p> }.into_any()
    } else {
        view! {
            <ul class="requirements">
                {env.spec.requirements.iter().map(|r| view! { <li><code>{r.clone()}</code></li> }).collect_view()}
            </ul>
        }
        .into_any()
    };
    let building = matches!(d.build.state, BuildState::Building | BuildState::NotBuilt);
    let log = if d.build.log.is_empty() {
        "No build has run on this machine yet; the first job that uses it builds it.".to_owned()
    } else {
        d.build.log.clone()
    };
    view! {
        {beside_regions(|| view! {
            <div class="page-head">
                <h1>{format!("{}/{}", env.owner, env.spec.name)}</h1>
                <span class="badge" data-testid="version">{format!("v{}", env.version)}</span>
                {env.public.then(|| view! { <span class="badge">"Published"</span> })}
            </div>
            {(!env.spec.description.is_empty()).then(|| view! { <p class="hint">{env.spec.description.clone()}</p> })}
            <p class="versions">"Versions: " {versions}</p>
            <dl class="facts">
                <dt>"Use it"</dt>
                <dd><code data-testid="reference">{format!("\"environment\": \"{}\"", env.pinned())}</code></dd>
                <dt>"Image (Kubernetes)"</dt>
                <dd><code>{if env.spec.image.is_empty() { "the job's own".to_owned() } else { env.spec.image.clone() }}</code></dd>
                <dt>"Saved"</dt>
                <dd>{format!("{} by {}", format_utc(env.created_at), env.created_by)}</dd>
            </dl>
            <h2>"Packages"</h2>
            {requirements}
            {(!env.spec.setup_notes.is_empty()).then(|| view! { <h2>"Setup notes"</h2><p class="notes">{env.spec.setup_notes.clone()}</p> })}
        })}
        <Region id="environment-build" class="build">
            <h2>"Build on this machine " {state_badge(d.build.state)}</h2>
            {(!d.build.message.is_empty()).then(|| view! {
                <p class="banner error" role="alert" data-testid="build-error">{d.build.message.clone()}</p>
            })}
            <pre class="log build-log" data-testid="build-log">{log}</pre>
        </Region>
        {beside_regions(|| view! {
            {building.then(|| view! { <LiveRegion target="environment-build".to_owned() every_secs=2 /> })}
            {d.can_edit.then(|| view! {
                <section class="panel">
                    <h2>"Save a new version"</h2>
                    <EnvironmentEditor form=EnvironmentForm::from_spec(&env.spec) />
                </section>
            })}
        })}
    }
}
