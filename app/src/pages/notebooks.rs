//! `/notebooks`: the account's notebooks (owner, resources, status and why,
//! last activity, "stops in N min" when idle culling applies), open, keep
//! running, start, stop, delete behind a second click, and the "New
//! notebook" dialog (`?new=1`) with the quota line. Live over SSE.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;
use leptos_router::hooks::use_query_map;

use crate::api::notebooks::{
    list_notebooks, CreateNotebook, DeleteNotebook, KeepNotebook, StartNotebook, StopNotebook,
};
use crate::api::usage::quota_left;
use crate::components::dialog::Dialog;
use crate::components::form::{last_error, FieldError, FormError};
use crate::components::links::page_href;
use crate::components::live::{beside_regions, LiveRegion, Region};
use crate::components::resource::resource;
use crate::models::time::{format_age, format_utc};
use crate::models::{Notebook, NotebookForm, NotebookStatus, QuotaUse, Workload};
use crate::pages::serving::format_totals;

/// The actions a row's forms post to.
#[derive(Clone, Copy)]
struct Actions {
    start: ServerAction<StartNotebook>,
    stop: ServerAction<StopNotebook>,
    keep: ServerAction<KeepNotebook>,
    delete: ServerAction<DeleteNotebook>,
}

/// The Notebooks page.
#[component]
pub fn NotebooksPage() -> impl IntoView {
    let params = use_query_map();
    let list = resource(|| (), |_| list_notebooks());
    let actions = Actions {
        start: ServerAction::new(),
        stop: ServerAction::new(),
        keep: ServerAction::new(),
        delete: ServerAction::new(),
    };
    let errors = Signal::derive(move || {
        last_error(actions.start)()
            .or_else(last_error(actions.stop))
            .or_else(last_error(actions.keep))
            .or_else(last_error(actions.delete))
    });
    let new_href =
        move || params.with(|p| page_href("/notebooks", p, &[("new", Some("1".into()))]));
    view! {
        {beside_regions(|| view! {
            <Title text="Notebooks" />
            <div class="page-head">
                <h1>"Notebooks"</h1>
                <A href="/notebooks/shared" attr:class="button">"Shared with you"</A>
                <A href=new_href attr:class="button primary">"New notebook"</A>
            </div>
            <p class="hint">
                "Your own JupyterLab, opened through the console. Its workspace stays when it stops; its kernels submit jobs with "
                <code>"paddlecloud.create_cloud_job(…)"</code>
                " and read the account's datasets from "
                <code>"$PADDLE_DATASET_DIR_<NAME>"</code>
                "."
            </p>
            <FormError error=errors />
        })}
        <Region id="notebooks-table">
        <Transition fallback=|| view! { <p class="loading">"Loading notebooks…"</p> }>
            {move || Suspend::new(async move {
                match list.await {
                    Err(err) => view! { <p class="banner error" role="alert">{err.to_string()}</p> }.into_any(),
                    Ok(page) if page.list.notebooks.is_empty() => view! {
                        <section class="empty-state" data-testid="no-notebooks">
                            <p>"No notebook yet. Create one to get a private JupyterLab with a workspace that keeps your files."</p>
                        </section>
                    }.into_any(),
                    Ok(page) => {
                        let now = page.list.now;
                        let me = page.me.clone();
                        let account_owner = page.account_owner;
                        view! {
                            <table class="grid notebooks" data-testid="notebooks">
                                <thead>
                                    <tr>
                                        <th>"Name"</th>
                                        <th>"Owner"</th>
                                        <th>"Environment"</th>
                                        <th>"Resources"</th>
                                        <th>"Status"</th>
                                        <th>"Last activity"</th>
                                        <th title="When idle culling stops it, unless it is used first">"Stops"</th>
                                        <th>"Actions"</th>
                                    </tr>
                                </thead>
                                <tbody>
                                    {page.list.notebooks.into_iter().map(|n| {
                                        let mine = n.owner == me;
                                        view! { <NotebookRow n now mine account_owner actions /> }
                                    }).collect_view()}
                                </tbody>
                            </table>
                        }.into_any()
                    }
                }
            })}
        </Transition>
        </Region>
        {beside_regions(|| view! {
            <LiveRegion target="notebooks-table".to_owned() events="/events/notebooks".to_owned() every_secs=15 />
            {move || params.with(|p| p.get("new").is_some()).then(|| view! { <NewNotebookDialog /> })}
        })}
    }
}

/// "in 12 min", "now", or "" when culling does not apply.
fn stops_text(n: &Notebook, now: i64) -> String {
    match n.stops_at {
        None if n.status == NotebookStatus::Running => "never".to_owned(),
        None => String::new(),
        Some(at) if at <= now => "now".to_owned(),
        Some(at) => format!("in {} min", (at - now + 59_999) / 60_000),
    }
}

#[component]
fn NotebookRow(
    n: Notebook,
    now: i64,
    /// The caller owns it: they open, start and keep it.
    mine: bool,
    /// The caller owns the account: they stop and delete anyone's.
    account_owner: bool,
    actions: Actions,
) -> impl IntoView {
    let status = n.status;
    let totals = n.spec.totals().unwrap_or_default();
    let hidden = |name: String| view! { <input type="hidden" name="name" value=name /> };
    let (n1, n2, n3, n4) = (
        n.name.clone(),
        n.name.clone(),
        n.name.clone(),
        n.name.clone(),
    );
    let may_end = mine || account_owner;
    let open = (mine && status == NotebookStatus::Running).then(|| {
        view! {
            <a class="button small primary" href=n.lab_path() target="_blank" rel="noopener" data-testid="open">"Open"</a>
        }
    });
    let keep = (mine && status == NotebookStatus::Running && n.stops_at.is_some()).then(|| {
        view! {
            <ActionForm action=actions.keep attr:class="inline">
                {hidden(n1)}
                <button type="submit" class="small" data-testid="keep">"Keep running"</button>
            </ActionForm>
        }
    });
    let start = (mine && !status.is_active()).then(|| {
        view! {
            <ActionForm action=actions.start attr:class="inline">
                {hidden(n2)}
                <button type="submit" class="small" data-testid="start">"Start"</button>
            </ActionForm>
        }
    });
    let stop = (may_end && status.is_active()).then(|| {
        view! {
            <ActionForm action=actions.stop attr:class="inline">
                {hidden(n3)}
                <button type="submit" class="small" data-testid="stop">"Stop"</button>
            </ActionForm>
        }
    });
    let history = mine.then(|| {
        view! {
            <a class="button small" href=crate::models::history_href(&n.name, None, None) data-testid="history">"History"</a>
        }
    });
    let delete_label = format!("Delete {}, its workspace and its files' versions", n.name);
    let delete = may_end.then(|| {
        view! {
            <details class="confirm">
                <summary class="danger small">"Delete…"</summary>
                <ActionForm action=actions.delete attr:class="inline">
                    {hidden(n4)}
                    <button type="submit" class="danger small" data-testid="delete">
                        {delete_label}
                    </button>
                </ActionForm>
            </details>
        }
    });
    let environment = [
        Some(n.cluster.clone()),
        n.spec.environment.clone(),
        Some(n.spec.image.clone()).filter(|i| !i.is_empty()),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(" · ");
    let activity = match n.last_activity {
        Some(t) => format!("{} ago", format_age(now - t)),
        None => "–".to_owned(),
    };
    let stops = stops_text(&n, now);
    let activity_title = n.last_activity.map(format_utc).unwrap_or_default();
    view! {
        <tr data-notebook=n.name.clone()>
            <td class="name">{n.name.clone()}</td>
            <td>{n.owner.clone()}</td>
            <td>{environment}</td>
            <td>{format_totals(totals)}</td>
            <td>
                <span class=format!("status {}", status.as_str()) data-testid="status" title=n.message.clone()>
                    {status.label()}
                </span>
                {(!n.message.is_empty()).then(|| view! { <p class="hint status-message" data-testid="message">{n.message.clone()}</p> })}
                {(!n.probe_error.is_empty()).then(|| view! { <p class="hint warn" data-testid="probe-error">{format!("Activity unknown: {}", n.probe_error)}</p> })}
            </td>
            <td title=activity_title data-testid="activity">{activity}</td>
            <td data-testid="stops">{stops}</td>
            <td class="actions">{open}{history}{keep}{start}{stop}{delete}</td>
        </tr>
    }
}

/// The dialog, open while the URL has `new=1`.
#[component]
fn NewNotebookDialog() -> impl IntoView {
    let action = ServerAction::<CreateNotebook>::new();
    let error = Signal::derive(last_error(action));
    let params = use_query_map();
    let close = move || params.with(|p| page_href("/notebooks", p, &[("new", None)]));
    let quota = resource(move || action.version().get(), |_| quota_left());
    let form = NotebookForm::example();
    let field = move |name: &'static str,
                      label: &'static str,
                      kind: &'static str,
                      value: String| {
        view! {
            <label for=format!("notebook-{name}")>{label}</label>
            <input id=format!("notebook-{name}") type=kind name=format!("form[{name}]") value=value />
        }
    };
    view! {
        <Dialog id="new-notebook-title" title="New notebook" close=close>
            <ActionForm action>
                <FormError error />
                <div class="form-grid">
                    {field("name", "Name", "text", form.name.clone())}
                </div>
                <FieldError error field="name" />
                <fieldset>
                    <legend>"Resources while it runs"</legend>
                    <div class="form-grid three">
                        {field("cpu", "CPU", "text", form.cpu.clone())}
                        {field("memory", "Memory", "text", form.memory.clone())}
                        {field("gpu", "GPU", "number", form.gpu.clone())}
                    </div>
                    <FieldError error field="resources.cpu" />
                    <FieldError error field="resources.memory" />
                    <FieldError error field="resources.gpu" />
                    <FieldError error field="gpu" />
                </fieldset>
                <div class="form-grid">
                    {field("idle_minutes", "Stop after idle (minutes; empty: the site's default)", "number", form.idle_minutes.clone())}
                    {field("image", "Image (Kubernetes)", "text", form.image.clone())}
                </div>
                <FieldError error field="idle_minutes" />
                <div class="form-grid">
                    {field("environment", "Python environment (optional; its kernel runs in it)", "text", form.environment.clone())}
                </div>
                <FieldError error field="environment" />
                <label for="notebook-secrets">"Secrets (one per line: VARIABLE=secret, or file:FILE=secret; see "<a href="/secrets">"Secrets"</a>")"</label>
                <textarea id="notebook-secrets" name="form[secrets]" rows="2" placeholder="AWS_SECRET_ACCESS_KEY=s3-key">{form.secrets.clone()}</textarea>
                <FieldError error field="secrets" />
                <Transition fallback=|| ()>
                    {move || {
                        let form = NotebookForm::example();
                        Suspend::new(async move {
                            let quota = quota.await.ok();
                            view! { <NotebookTotal form quota /> }
                        })
                    }}
                </Transition>
                <footer>
                    <A href=close attr:class="button">"Cancel"</A>
                    <button type="submit" class="primary">"Create and start"</button>
                </footer>
            </ActionForm>
        </Dialog>
    }
}

/// What the notebook asks for and how it fits the account's quota,
/// computed again as the dialog's fields change.
#[island]
fn NotebookTotal(
    /// The fields as the server rendered them.
    form: NotebookForm,
    /// The account's quota and use (`None`: could not be read).
    quota: Option<QuotaUse>,
) -> impl IntoView {
    #[cfg(feature = "hydrate")]
    crate::island_hydrated();
    let (form, root) = crate::components::form_watch::watched_form(form);
    let asked = move || {
        form.with(|f| {
            let spec = crate::models::NotebookSpec {
                name: String::new(),
                resources: crate::models::ReplicaResources {
                    cpu: f.cpu.trim().to_owned(),
                    memory: f.memory.trim().to_owned(),
                    gpu: f.gpu.trim().parse().unwrap_or(0),
                },
                idle_minutes: None,
                image: String::new(),
                environment: None,
                environment_use: None,
                secrets: Vec::new(),
            };
            spec.totals()
        })
    };
    let total = move || match asked() {
        Ok(t) => format_totals(t),
        Err(e) => e.to_string(),
    };
    let quota_line = move || {
        crate::components::quota_line::quota_line(quota.as_ref(), false, |q| {
            asked().ok().map(|t| q.admit(Workload::Notebook, t))
        })
    };
    view! {
        <div node_ref=root>
            <p class="total" data-testid="notebook-total">"While it runs it holds " <strong>{total}</strong></p>
            {quota_line}
        </div>
    }
}
