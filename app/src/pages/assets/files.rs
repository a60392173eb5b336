//! The file browser: breadcrumbs, the folder's table, and the preview of
//! the file named by `?file=`.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use super::change_form::ChangeForm;
use crate::api::assets::{preview_file, ChangeAsset};
use crate::components::form::{last_error, FormError};
use crate::components::links::page_href;
use crate::components::resource::resource;
use crate::models::time::format_utc;
use crate::models::{
    format_bytes, AssetOp, AssetSource, AssetView, FileBase, Preview, PreviewBody,
};

/// One folder of the asset and, below it, the chosen file's preview.
#[component]
pub fn FileBrowser(
    /// What the page loaded.
    view: AssetView,
    /// How the page reached the asset.
    source: AssetSource,
    /// Where files download from.
    files: FileBase,
    /// Whether the viewer may delete files.
    owner: bool,
) -> impl IntoView {
    let params = use_query_map();
    let page_path = source.page_path();
    let version = view.version;
    let link = {
        let page_path = page_path.clone();
        move |changes: &[(&str, Option<String>)]| {
            params.with_untracked(|p| page_href(&page_path, p, changes))
        }
    };
    // Root, then one crumb per folder of the path.
    let mut crumbs = vec![("All files".to_owned(), String::new())];
    let mut acc = String::new();
    for seg in view.dir.split('/').filter(|s| !s.is_empty()) {
        if !acc.is_empty() {
            acc.push('/');
        }
        acc.push_str(seg);
        crumbs.push((seg.to_owned(), acc.clone()));
    }
    let last = crumbs.len() - 1;
    let empty = view.entries.is_empty();
    let entries = view.entries.clone();
    let delete = ServerAction::<ChangeAsset>::new();
    let delete_error = Signal::derive(last_error(delete));
    let file = params.with_untracked(|p| p.get("file"));
    view! {
        <section class="files" data-testid="files">
            <nav class="breadcrumbs" aria-label="Folder">
                {crumbs
                    .into_iter()
                    .enumerate()
                    .map(|(i, (label, dir))| {
                        let dir = (!dir.is_empty()).then_some(dir);
                        let href = link(&[("dir", dir), ("file", None)]);
                        view! {
                            {(i > 0).then_some(" / ")}
                            {if i == last {
                                view! { <strong aria-current="location">{label}</strong> }.into_any()
                            } else {
                                view! { <a href=href>{label}</a> }.into_any()
                            }}
                        }
                    })
                    .collect_view()}
            </nav>
            <FormError error=delete_error />
            {if empty {
                view! { <p class="muted empty" data-testid="no-files">"No files here yet."</p> }.into_any()
            } else {
                view! {
                    <table class="grid file-table">
                        <thead>
                            <tr>
                                <th>"Name"</th>
                                <th>"Size"</th>
                                <th>"Modified"</th>
                                <th class="actions"></th>
                            </tr>
                        </thead>
                        <tbody>
                            {entries
                                .into_iter()
                                .map(|e| {
                                    let name = e.name().to_owned();
                                    let open = if e.dir {
                                        link(&[("dir", Some(e.path.clone())), ("file", None)])
                                    } else {
                                        link(&[("file", Some(e.path.clone()))])
                                    };
                                    let size = if e.dir {
                                        format!("{} files · {}", e.files, format_bytes(e.size))
                                    } else {
                                        format_bytes(e.size)
                                    };
                                    let r = source.asset.clone().filter(|_| source.token.is_none());
                                    let (path, url) = (e.path.clone(), files.file_url(&e.path, version));
                                    view! {
                                        <tr data-path=e.path.clone()>
                                            <td class="name">
                                                <span class="icon" aria-hidden="true">{if e.dir { "📁" } else { "📄" }}</span>
                                                <a href=open>{name}{e.dir.then_some("/")}</a>
                                            </td>
                                            <td class="num">{size}</td>
                                            <td>{(!e.dir).then(|| format_utc(e.modified))}</td>
                                            <td class="actions">
                                                {(!e.dir).then(|| view! {
                                                    <a class="button small" href=url download>"Download"</a>
                                                })}
                                                {r.filter(|_| owner).map(|r| view! {
                                                    <ChangeForm action=delete r op=AssetOp::DeletePath class="inline">
                                                        {version.map(|v| view! { <input type="hidden" name="change[version]" value=v /> })}
                                                        <input type="hidden" name="change[path]" value=path.clone() />
                                                        <button type="submit" class="small danger" aria-label=format!("Delete {path}")>
                                                            "Delete"
                                                        </button>
                                                    </ChangeForm>
                                                })}
                                            </td>
                                        </tr>
                                    }
                                })
                                .collect_view()}
                        </tbody>
                    </table>
                }
                    .into_any()
            }}
        </section>
        {file.map(|path| view! { <PreviewPanel source version path files /> })}
    }
}

/// The head of one file, fetched when `?file=` names it.
#[component]
fn PreviewPanel(
    source: AssetSource,
    version: Option<u32>,
    path: String,
    files: FileBase,
) -> impl IntoView {
    let preview = resource(
        move || (source.clone(), path.clone()),
        move |(source, path)| preview_file(source, version, path),
    );
    view! {
        <section class="preview" data-testid="preview">
            <Suspense fallback=|| view! { <p class="loading">"Loading preview…"</p> }>
                {move || {
                    let files = files.clone();
                    Suspend::new(async move {
                        match preview.await {
                            Err(err) => view! { <p class="banner error" role="alert">{err.to_string()}</p> }.into_any(),
                            Ok(p) => view! { <PreviewBodyView p files version /> }.into_any(),
                        }
                    })
                }}
            </Suspense>
        </section>
    }
}

#[component]
fn PreviewBodyView(p: Preview, files: FileBase, version: Option<u32>) -> impl IntoView {
    let url = files.file_url(&p.entry.path, version);
    let note = p.truncated.then(|| {
        format!(
            "Showing the first part of {} ({}).",
            p.entry.name(),
            format_bytes(p.entry.size)
        )
    });
    let body = match p.body {
        PreviewBody::Text(text) | PreviewBody::Json(text) => {
            view! { <pre class="file-head">{text}</pre> }.into_any()
        }
        PreviewBody::Table { header, rows } => view! {
            <div class="table-scroll">
                <table class="grid csv">
                    <thead>
                        <tr>{header.into_iter().map(|h| view! { <th>{h}</th> }).collect_view()}</tr>
                    </thead>
                    <tbody>
                        {rows
                            .into_iter()
                            .map(|row| view! { <tr>{row.into_iter().map(|c| view! { <td>{c}</td> }).collect_view()}</tr> })
                            .collect_view()}
                    </tbody>
                </table>
            </div>
        }
        .into_any(),
        PreviewBody::Image => view! { <img class="file-image" src=url.clone() alt=p.entry.name().to_owned() /> }.into_any(),
        PreviewBody::Binary => view! {
            <p class="muted">"A binary file: download it to open it."</p>
        }
        .into_any(),
    };
    view! {
        <header>
            <h2>{p.entry.path.clone()}</h2>
            <span class="muted">{format_bytes(p.entry.size)}</span>
            <a class="button small" href=url download>"Download"</a>
        </header>
        {note.map(|n| view! { <p class="muted">{n}</p> })}
        {body}
    }
}
