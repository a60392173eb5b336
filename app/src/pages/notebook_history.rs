//! `/notebooks/<name>/history`: the versions of a notebook's files (each
//! save and checkpoint made in JupyterLab, each stop, each restore): the
//! files, one file's versions (when, who, why, cells, size), one version
//! shown as nbconvert renders it, downloaded or restored, and two chosen
//! for `/notebooks/<name>/diff`, which compares them cell by cell.
//! (Two path segments: three would be the notebook's own proxy.)

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::api::notebook_versions::{
    compare_notebook_versions, read_notebook_history, RestoreNotebookVersion,
};
use crate::components::form::{last_error, FormError};
use crate::components::resource::resource;
use crate::models::time::format_utc;
use crate::models::{
    diff_href, format_bytes, history_href, run_href, CellChange, CellDiff, LineChange,
    NotebookDiff, NotebookHistory, NotebookVersion,
};
use crate::pages::notebook_shares::FileSharePanel;

fn version_label(v: &NotebookVersion) -> String {
    format!("#{} · {} · {}", v.id, v.reason.label(), format_utc(v.at))
}

/// The history page.
#[component]
pub fn NotebookHistoryPage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let which = move || {
        (
            params.with(|p| p.get("name").unwrap_or_default()),
            query.with(|q| q.get("path").unwrap_or_default()),
        )
    };
    let history = resource(which, |(name, path)| read_notebook_history(name, path));
    let selected = move || query.with(|q| q.get("version").and_then(|v| v.parse::<i64>().ok()));
    let restored = move || query.with(|q| q.get("restored").and_then(|v| v.parse::<i64>().ok()));
    let name = move || params.with(|p| p.get("name").unwrap_or_default());
    view! {
        <Title text="Notebook history" />
        <p class="crumbs"><A href="/notebooks">"Notebooks"</A></p>
        <div class="page-head">
            <h1>"History of " {name}</h1>
        </div>
        <p class="hint">
            "A version is kept at each save and checkpoint made in JupyterLab, of every notebook file when the notebook stops, and at each restore; the newest 200 of each file stay."
        </p>
        {move || restored().map(|from| view! {
            <p class="banner" role="status" data-testid="restored">
                {format!("Version #{from} is in the workspace again. If the file is open in JupyterLab, reload it there (File › Reload Notebook from Disk).")}
            </p>
        })}
        <Transition fallback=|| view! { <p class="loading">"Loading the history…"</p> }>
            {move || Suspend::new(async move {
                match history.await {
                    Err(err) => view! { <p class="banner error" role="alert">{err.to_string()}</p> }.into_any(),
                    Ok(h) if h.files.is_empty() => view! {
                        <section class="empty-state" data-testid="no-versions">
                            <p>"No version yet. Save a notebook in JupyterLab, or stop the notebook, and its versions appear here."</p>
                        </section>
                    }.into_any(),
                    Ok(h) => view! { <HistoryView h selected=selected() /> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn HistoryView(h: NotebookHistory, selected: Option<i64>) -> impl IntoView {
    let name = h.notebook.clone();
    let current = h.path.clone().unwrap_or_default();
    let files = h
        .files
        .iter()
        .map(|f| {
            let here = f.path == current;
            view! {
                <li>
                    <a href=history_href(&name, Some(&f.path), None) class:current=here aria-current=here.then_some("page")>
                        <code>{f.path.clone()}</code>
                    </a>
                    <span class="hint">{format!(" {} version{} · last {}", f.versions, if f.versions == 1 { "" } else { "s" }, format_utc(f.latest.at))}</span>
                </li>
            }
        })
        .collect_view();
    let shown = selected.and_then(|id| h.versions.iter().find(|v| v.id == id).cloned());
    view! {
        <section class="panel">
            <h2>"Files"</h2>
            <ul class="versioned-files" data-testid="versioned-files">{files}</ul>
        </section>
        <section class="panel">
            <h2>"Versions of " <code>{current.clone()}</code></h2>
            <VersionTable name=name.clone() versions=h.versions.clone() selected />
        </section>
        {shown.map(|v| view! { <VersionShown name=name.clone() v /> })}
        {(!current.is_empty()).then(|| view! { <FileSharePanel name=name.clone() path=current.clone() /> })}
    }
}

/// The file's versions, and the form that compares two of them (a plain
/// GET form: it works without scripts).
#[component]
fn VersionTable(
    name: String,
    versions: Vec<NotebookVersion>,
    selected: Option<i64>,
) -> impl IntoView {
    let count = versions.len();
    let rows = versions
        .iter()
        .enumerate()
        .map(|(i, v)| {
            // Newest first: the one below is the one before it.
            let previous = versions.get(i + 1).map(|p| p.id);
            let here = selected == Some(v.id);
            let compare = previous.map(|p| {
                view! { <a class="button small" href=diff_href(&name, p, v.id) data-testid="compare-previous">"Changes"</a> }
            });
            view! {
                <tr data-version=v.id.to_string() class:current=here>
                    <td><input type="radio" name="from" value=v.id.to_string() checked={i == 1} aria-label=format!("Compare from #{}", v.id) /></td>
                    <td><input type="radio" name="to" value=v.id.to_string() checked={i == 0} aria-label=format!("Compare to #{}", v.id) /></td>
                    <td>{format!("#{}", v.id)}</td>
                    <td>{format_utc(v.at)}</td>
                    <td data-testid="reason">
                        {v.reason.label()}
                        {v.restored_from.map(|f| format!(" (#{f})"))}
                    </td>
                    <td>{v.author.clone()}</td>
                    <td class="num">{v.cells}</td>
                    <td class="num">{format_bytes(v.bytes)}</td>
                    <td class="actions">
                        <a class="button small" href=history_href(&name, Some(&v.path), Some(v.id)) data-testid="view">"View"</a>
                        {compare}
                        <a class="button small" href=run_href(&name, &v.path, Some(v.id), None) data-testid="run-version"
                            title="Run this version as a job, with values for its parameters cell">"Run as a job"</a>
                    </td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <form method="get" action=format!("/notebooks/{name}/diff") class="versions">
            <table class="grid" data-testid="versions">
                <thead>
                    <tr>
                        <th title="Compare from">"From"</th>
                        <th title="Compare to">"To"</th>
                        <th>"Version"</th>
                        <th>"When (UTC)"</th>
                        <th>"Why"</th>
                        <th>"By"</th>
                        <th class="num">"Cells"</th>
                        <th class="num">"Size"</th>
                        <th>"Actions"</th>
                    </tr>
                </thead>
                <tbody>{rows}</tbody>
            </table>
            {(count > 1).then(|| view! {
                <button type="submit" data-testid="compare">"Compare the chosen two"</button>
            })}
        </form>
    }
}

/// One version: its page (rendered by nbconvert, in a sandbox where
/// nothing runs), its file, and the restore.
#[component]
fn VersionShown(name: String, v: NotebookVersion) -> impl IntoView {
    let restore = ServerAction::<RestoreNotebookVersion>::new();
    let error = Signal::derive(last_error(restore));
    let page = format!("/api/v1/notebooks/{name}/versions/{}/html", v.id);
    let file = format!("/api/v1/notebooks/{name}/versions/{}", v.id);
    let heading = format!("{} · {}", v.path, version_label(&v));
    let put_back = format!(
        "Put #{} back into {} (the file as it is now is kept as a version)",
        v.id, v.path
    );
    let frame_title = format!("{} as version #{}", v.path, v.id);
    view! {
        <section class="panel version-shown" data-testid="version-shown">
            <div class="page-head">
                <h2>{heading}</h2>
                <a class="button small" href=file download="" data-testid="download">"Download .ipynb"</a>
                <details class="confirm">
                    <summary class="small">"Restore…"</summary>
                    <ActionForm action=restore attr:class="inline">
                        <input type="hidden" name="name" value=name.clone() />
                        <input type="hidden" name="id" value=v.id.to_string() />
                        <button type="submit" class="primary small" data-testid="restore">
                            {put_back}
                        </button>
                    </ActionForm>
                </details>
            </div>
            <FormError error />
            <iframe class="notebook-page" src=page sandbox="" title=frame_title data-testid="version-page"></iframe>
        </section>
    }
}

/// The comparison page.
#[component]
pub fn NotebookDiffPage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let which = move || {
        let id = |k: &str| query.with(|q| q.get(k).and_then(|v| v.parse::<i64>().ok()));
        (
            params.with(|p| p.get("name").unwrap_or_default()),
            id("from"),
            id("to"),
        )
    };
    let diff = resource(which, |(name, from, to)| async move {
        match (from, to) {
            (Some(from), Some(to)) => compare_notebook_versions(name, from, to).await,
            _ => Err(crate::error::AppError::invalid(
                "from",
                "Choose two versions to compare (from and to).",
            )),
        }
    });
    let name = move || params.with(|p| p.get("name").unwrap_or_default());
    view! {
        <Title text="Compare notebook versions" />
        <p class="crumbs">
            <A href="/notebooks">"Notebooks"</A>" › "
            <a href=move || history_href(&name(), None, None)>{move || format!("History of {}", name())}</a>
        </p>
        <Transition fallback=|| view! { <p class="loading">"Comparing…"</p> }>
            {move || Suspend::new(async move {
                match diff.await {
                    Err(err) => view! { <p class="banner error" role="alert">{err.to_string()}</p> }.into_any(),
                    Ok(d) => view! { <DiffView d /> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn DiffView(d: NotebookDiff) -> impl IntoView {
    let summary = format!(
        "{} changed, {} added, {} removed, {} the same",
        d.count(CellChange::Changed),
        d.count(CellChange::Added),
        d.count(CellChange::Removed),
        d.count(CellChange::Same)
    );
    let side = |v: &NotebookVersion| {
        view! {
            <a href=history_href(&d.notebook, Some(&v.path), Some(v.id))>
                <code>{v.path.clone()}</code>" "{version_label(v)}
            </a>
        }
    };
    view! {
        <div class="page-head">
            <h1>"Changes"</h1>
        </div>
        <p>"From " {side(&d.from)} " to " {side(&d.to)}</p>
        <p class="hint" data-testid="diff-summary">{summary}</p>
        <div class="notebook-diff" data-testid="notebook-diff">
            {d.cells.into_iter().map(|c| view! { <CellView c /> }).collect_view()}
        </div>
    }
}

#[component]
fn CellView(c: CellDiff) -> impl IntoView {
    let change = match c.change {
        CellChange::Same => "same",
        CellChange::Added => "added",
        CellChange::Removed => "removed",
        CellChange::Changed => "changed",
    };
    let title = c.title();
    let lines = c
        .lines
        .iter()
        .map(|l| {
            let (class, mark) = match l.change {
                LineChange::Same => ("line same", "  "),
                LineChange::Added => ("line added", "+ "),
                LineChange::Removed => ("line removed", "- "),
            };
            view! { <span class=class>{mark}{l.text.clone()}"\n"</span> }
        })
        .collect_view();
    let outputs = c.outputs_changed.then(|| {
        let texts = |t: &[String]| {
            if t.is_empty() {
                "(none)".to_owned()
            } else {
                t.join("")
            }
        };
        view! {
            <div class="outputs-changed" data-testid="outputs-changed">
                <div><h4>"Output before"</h4><pre>{texts(&c.old_outputs)}</pre></div>
                <div><h4>"Output after"</h4><pre>{texts(&c.new_outputs)}</pre></div>
            </div>
        }
    });
    let open = c.change != CellChange::Same;
    view! {
        <details class=format!("cell-diff {change}") open=open data-change=change>
            <summary>{title}</summary>
            <pre class="source">{lines}</pre>
            {outputs}
        </details>
    }
}
