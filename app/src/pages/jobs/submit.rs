//! The submit dialog: the spec's fields, the job's total resources computed
//! as you type, and errors next to the field they are about.

use leptos::prelude::*;
use leptos_router::components::A;
use leptos_router::hooks::use_query_map;

use super::jobs_href;
use crate::api::jobs::{get_job, SubmitJob};
use crate::api::usage::{cluster_room, quota_left};
use crate::components::dialog::Dialog;
use crate::components::form::{last_error, FieldError, FormError};
use crate::components::resource::resource;
use crate::models::quantity::{format_cpu, format_memory};
use crate::models::{ClusterCapacity, JobForm, QuotaUse, Workload};

/// The dialog, open while the URL has `submit=1`; with `from=<job>` it
/// starts from that job's spec ("Run again with changes" on a job's page).
#[component]
pub fn SubmitDialog() -> impl IntoView {
    let action = ServerAction::<SubmitJob>::new();
    let error = Signal::derive(last_error(action));
    let form = RwSignal::new(JobForm::example());
    let params = use_query_map();
    let close = move || params.with(|p| jobs_href(p, &[("submit", None), ("from", None)]));
    let from = params
        .with_untracked(|p| p.get("from"))
        .filter(|f| !f.is_empty());
    let start = resource(
        move || from.clone(),
        |from| async move {
            match from {
                None => Ok(None),
                Some(job) => get_job(job).await.map(|j| Some(JobForm::again(&j.spec))),
            }
        },
    );
    let quota = resource(move || action.version().get(), |_| quota_left());
    let room = resource(move || action.version().get(), |_| cluster_room());
    let templates = resource(|| (), |_| crate::api::templates::list_templates());
    // A text input bound to one field of the form.
    let field = move |name: &'static str, label: &'static str, get: fn(&JobForm) -> String| {
        view! {
            <label for=format!("job-{name}")>{label}</label>
            <input
                id=format!("job-{name}")
                name=format!("form[{name}]")
                value=form.with_untracked(get)
            />
            <FieldError error field=name />
        }
    };
    view! {
        <Dialog id="submit-title" title="Submit a training job" close=close>
            <Transition fallback=|| ()>
                {move || Suspend::new(async move {
                    templates.await.ok().filter(|l| !l.templates.is_empty()).map(|list| {
                        let links = list.templates.into_iter().map(|t| {
                            let href = format!("/templates/{}?owner={}", t.spec.name, t.owner);
                            view! { <a href=href class="button small">{format!("{}/{}", t.owner, t.spec.name)}</a>" " }
                        }).collect_view();
                        view! { <p class="hint from-template" data-testid="from-template">"Or start from a template, filling in its parameters: " {links}</p> }
                    })
                })}
            </Transition>
            <Transition fallback=|| view! { <p class="loading">"Loading…"</p> }>
            {move || Suspend::new(async move {
            let started = match start.await {
                Ok(Some(again)) => {
                    form.update_untracked(|f| *f = again);
                    None
                }
                Ok(None) => None,
                Err(err) => Some(view! { <p class="banner error" role="alert">{err.to_string()}</p> }),
            };
            view! {
            {started}
            <ActionForm action>
                <FormError error />
                <div class="form-grid">
                    {field("name", "Name", |f| f.name.clone())}
                    {field("image", "Image", |f| f.image.clone())}
                    {field("environment", "Python environment (optional, e.g. paddlecloud/paddle-cpu)", |f| f.environment.clone())}
                    {field("command", "Command", |f| f.command.clone())}
                    {field("working_dir", "Working directory", |f| f.working_dir.clone())}
                    <label for="job-priority" title="Among your team's own waiting jobs: high goes first (owners, and members they allow), low last">"Priority"</label>
                    <select id="job-priority" name="form[priority]">
                        {move || {
                            let chosen = form.with_untracked(|f| crate::models::Priority::parse(&f.priority).unwrap_or_default());
                            crate::models::Priority::ALL.into_iter().map(|p| view! {
                                <option value=p.as_str() selected=p == chosen>{p.as_str()}</option>
                            }).collect_view()
                        }}
                    </select>
                    <FieldError error field="priority" />
                    {field("max_runtime", "Time limit (optional, e.g. 90m, 2h)", |f| f.max_runtime.clone())}
                </div>
                <fieldset>
                    <legend>"Parameter servers"</legend>
                    <div class="form-grid three">
                        {field("num_ps", "Count", |f| f.num_ps.clone())}
                        {field("ps_cpu", "CPU each", |f| f.ps_cpu.clone())}
                        {field("ps_memory", "Memory each", |f| f.ps_memory.clone())}
                    </div>
                    <FieldError error field="ps.cpu" />
                    <FieldError error field="ps.memory" />
                </fieldset>
                <fieldset>
                    <legend>"Trainers"</legend>
                    <div class="form-grid four">
                        {field("num_trainers", "Count", |f| f.num_trainers.clone())}
                        {field("trainer_cpu", "CPU each", |f| f.trainer_cpu.clone())}
                        {field("trainer_memory", "Memory each", |f| f.trainer_memory.clone())}
                        {field("trainer_gpu", "GPU each", |f| f.trainer_gpu.clone())}
                    </div>
                    <FieldError error field="trainer.cpu" />
                    <FieldError error field="trainer.memory" />
                    <FieldError error field="trainer.gpu" />
                </fieldset>
                <label for="job-env">"Environment variables (KEY=VALUE per line)"</label>
                <textarea
                    id="job-env"
                    name="form[env]"
                    rows="3"
                >{form.with_untracked(|f| f.env.clone())}</textarea>
                <FieldError error field="env" />
                <label for="job-secrets">"Secrets (one per line: VARIABLE=secret, or file:FILE=secret; see "<a href="/secrets">"Secrets"</a>")"</label>
                <textarea
                    id="job-secrets"
                    name="form[secrets]"
                    rows="2"
                    placeholder="AWS_SECRET_ACCESS_KEY=s3-key"
                >{form.with_untracked(|f| f.secrets.clone())}</textarea>
                <FieldError error field="secrets" />
                {field("datasets", "Datasets it reads (comma-separated, with :N for a saved version; the first is at $PADDLE_DATASET_DIR)", |f| f.datasets.clone())}
                {field("models", "Model versions it reads (e.g. resnet, vision/base:3; the first is at $PADDLE_MODEL_DIR)", |f| f.models.clone())}
                <Transition fallback=|| ()>
                    {move || Suspend::new(async move {
                        let quota = quota.await.ok();
                        let room = room.await.ok();
                        view! { <JobTotal form=form.get_untracked() quota room /> }
                    })}
                </Transition>
                <footer>
                    <A href=close attr:class="button">"Cancel"</A>
                    <button type="submit" class="primary">"Submit"</button>
                </footer>
            </ActionForm>
            }
            })}
            </Transition>
        </Dialog>
    }
}

/// The job's total resources and how it fits the account's quota, computed
/// again as the dialog's fields change.
#[island]
fn JobTotal(
    /// The fields as the server rendered them.
    form: JobForm,
    /// The account's quota and use (`None`: could not be read).
    quota: Option<QuotaUse>,
    /// The cluster's room (`None`: could not be read).
    room: Option<ClusterCapacity>,
) -> impl IntoView {
    #[cfg(feature = "hydrate")]
    crate::island_hydrated();
    let (form, root) = crate::components::form_watch::watched_form(form);
    let total = move || {
        form.with(|f| match f.to_spec().and_then(|s| s.totals()) {
            Ok(t) => format!(
                "{} CPU · {} memory · {} GPU",
                format_cpu(t.cpu_millis),
                format_memory(t.memory_bytes),
                t.gpu
            ),
            Err(e) => e.to_string(),
        })
    };
    // What the account's quota leaves, and whether this job fits in it: the
    // same check the server makes on submit.
    let quota_line = move || {
        crate::components::quota_line::quota_line(quota.as_ref(), true, |q| {
            form.with(|f| f.to_spec().and_then(|s| s.totals()))
                .ok()
                .map(|t| q.admit(Workload::Job, t))
        })
    };
    // The cluster's room: free now, and whether this job waits or never starts.
    let room_line = move || {
        let ask = form.with(|f| f.to_spec().and_then(|s| s.totals())).ok();
        crate::components::quota_line::room_line(room.as_ref(), ask)
    };
    view! {
        <div node_ref=root>
            <p class="total" data-testid="job-total">"This job asks for " <strong>{total}</strong></p>
            {quota_line}
            {room_line}
        </div>
    }
}
