//! Sharing notebook files read-only: the owner's panel on a file's history
//! page (members, another account, a link shown once; each share revoked),
//! `/notebooks/shared` (what others shared with you) and
//! `/shared/notebooks/<token>` (what a link opens, signed in or not): the
//! file's newest version rendered in a frame where nothing runs, its
//! .ipynb, and a copy into a running notebook of yours.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::api::notebook_shares::{
    notebook_file_shares, notebook_link, shared_notebook_files, CopySharedNotebook,
    RevokeNotebookShare, ShareNotebookFile, SharedFiles,
};
use crate::components::form::{last_error, FieldError, FormError};
use crate::components::resource::resource;
use crate::components::share_link::{LinkExpiry, LinkTopbar};
use crate::models::time::format_utc;
use crate::models::{ShareAudience, SharedNotebookFile};

/// The owner's sharing panel for file `path` of notebook `name`.
#[component]
pub fn FileSharePanel(name: String, path: String) -> impl IntoView {
    let share = ServerAction::<ShareNotebookFile>::new();
    let share_error = Signal::derive(last_error(share));
    let revoke = ServerAction::<RevokeNotebookShare>::new();
    let revoke_error = Signal::derive(last_error(revoke));
    let list = {
        let name = name.clone();
        resource(
            move || (name.clone(), share.version().get(), revoke.version().get()),
            |(name, _, _)| notebook_file_shares(name),
        )
    };
    let params = use_query_map();
    // A link just made: its token is shown this once (only a hash is kept).
    let new_link = move || {
        params
            .with(|p| p.get("link"))
            .filter(|l| l.starts_with("/shared/notebooks/"))
    };
    let (n1, p1) = (name.clone(), path.clone());
    view! {
        <section class="panel share-panel" data-testid="file-share-panel">
            <h2>"Share " <code>{path.clone()}</code> " read-only"</h2>
            <p class="hint">"Who it is shared with sees its newest version, rendered (no kernel, nothing runs), and may copy it into a notebook of their own."</p>
            {move || new_link().map(|link| view! {
                <div class="banner ok" role="status" data-testid="new-link">
                    <p>"Anyone with this link can read it. Copy it now: it is not shown again."</p>
                    <p><a href=link.clone() class="share-link">{link.clone()}</a></p>
                </div>
            })}
            <ActionForm action=share attr:class="inline-form">
                <input type="hidden" name="name" value=n1 />
                <input type="hidden" name="form[path]" value=p1 />
                <label for="share-with">"With"</label>
                <select id="share-with" name="form[with]">
                    <option value="members">"the account's members"</option>
                    <option value="account">"another account (name it)"</option>
                    <option value="link">"anyone with a link"</option>
                </select>
                <label for="share-account">"Account"</label>
                <input id="share-account" name="form[account]" placeholder="for another account" />
                <label for="share-expires">"A link expires"</label>
                <LinkExpiry id="share-expires" name="form[expires_days]" />
                <button type="submit" data-testid="share">"Share"</button>
            </ActionForm>
            <FieldError error=share_error field="account" />
            <FieldError error=share_error field="expires_days" />
            <FormError error=share_error />
            <FormError error=revoke_error />
            <Transition fallback=|| ()>
                {move || {
                    let (name, path) = (name.clone(), path.clone());
                    Suspend::new(async move {
                        let shares: Vec<_> = list
                            .await
                            .unwrap_or_default()
                            .into_iter()
                            .filter(|s| s.path == path)
                            .collect();
                        if shares.is_empty() {
                            return view! { <p class="muted" data-testid="no-shares">"Not shared."</p> }.into_any();
                        }
                        view! {
                            <table class="grid shares" data-testid="file-shares">
                                <thead><tr><th>"With"</th><th>"Expires"</th><th>"By"</th><th>"Since"</th><th></th></tr></thead>
                                <tbody>
                                    {shares.into_iter().map(|s| {
                                        let who = s.audience();
                                        let name = name.clone();
                                        view! {
                                            <tr>
                                                <td>{who.clone()}</td>
                                                <td>{s.expires_at.map(format_utc).unwrap_or_else(|| "never".into())}</td>
                                                <td>{s.created_by.clone()}</td>
                                                <td>{format_utc(s.created_at)}</td>
                                                <td>
                                                    <ActionForm action=revoke attr:class="inline">
                                                        <input type="hidden" name="name" value=name />
                                                        <input type="hidden" name="id" value=s.id />
                                                        <button type="submit" class="small danger" aria-label=format!("Revoke {who}")>"Revoke"</button>
                                                    </ActionForm>
                                                </td>
                                            </tr>
                                        }
                                    }).collect_view()}
                                </tbody>
                            </table>
                        }.into_any()
                    })
                }}
            </Transition>
        </section>
    }
}

/// `/notebooks/shared`: notebook files others shared with you.
#[component]
pub fn SharedNotebooksPage() -> impl IntoView {
    let query = use_query_map();
    let files = resource(|| (), |_| shared_notebook_files());
    let selected = move || query.with(|q| q.get("share").and_then(|v| v.parse::<i64>().ok()));
    view! {
        <Title text="Shared notebooks" />
        <p class="crumbs"><A href="/notebooks">"Notebooks"</A></p>
        <div class="page-head"><h1>"Shared with you"</h1></div>
        <p class="hint">"Notebook files other users shared with your account or its members: read them here, or copy one into a running notebook of yours."</p>
        <Copied />
        <Transition fallback=|| view! { <p class="loading">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match files.await {
                    Err(err) => view! { <p class="banner error" role="alert">{err.to_string()}</p> }.into_any(),
                    Ok(page) if page.files.is_empty() => view! {
                        <section class="empty-state" data-testid="nothing-shared">
                            <p>"Nothing is shared with you yet."</p>
                        </section>
                    }.into_any(),
                    Ok(page) => {
                        let shown = selected()
                            .and_then(|id| page.files.iter().find(|f| f.share == id).cloned());
                        view! {
                            <table class="grid" data-testid="shared-files">
                                <thead><tr><th>"File"</th><th>"Notebook"</th><th>"Shared by"</th><th>"With"</th><th>"Saved (UTC)"</th><th></th></tr></thead>
                                <tbody>
                                    {page.files.iter().map(|f| view! {
                                        <tr data-share=f.share.to_string()>
                                            <td><code>{f.path.clone()}</code></td>
                                            <td>{format!("{}/{}", f.owner_account, f.notebook)}</td>
                                            <td>{f.owner.clone()}</td>
                                            <td>{match f.with { ShareAudience::Members => "your account's members", ShareAudience::Account => "your account", ShareAudience::Link => "a link" }}</td>
                                            <td>{format_utc(f.version.at)}</td>
                                            <td><a class="button small" href=format!("/notebooks/shared?share={}", f.share) data-testid="read">"Read"</a></td>
                                        </tr>
                                    }).collect_view()}
                                </tbody>
                            </table>
                            {shown.map(|file| {
                                let page_src = format!("/api/v1/notebook-shares/{}/html", file.share);
                                let file_src = format!("/api/v1/notebook-shares/{}/file", file.share);
                                view! { <SharedFileView file page_src file_src token=String::new() running=page.running.clone() signed_in=true /> }
                            })}
                        }.into_any()
                    }
                }
            })}
        </Transition>
    }
}

/// `/shared/notebooks/<token>`: what a notebook share link opens.
#[component]
pub fn NotebookLinkPage() -> impl IntoView {
    let route = use_params_map();
    let token = move || route.with(|p| p.get("token").unwrap_or_default());
    let opened = resource(token, notebook_link);
    view! {
        <Title text="Shared notebook" />
        <LinkTopbar />
        <main class="page">
            <Copied />
            <Transition fallback=|| view! { <p class="loading">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    let token = token();
                    match opened.await {
                        Err(err) => view! { <p class="banner error" role="alert">{err.to_string()}</p> }.into_any(),
                        Ok(page) => {
                            let Some(file) = page.files.first().cloned() else {
                                return ().into_any();
                            };
                            let SharedFiles { running, signed_in, .. } = page;
                            let page_src = format!("/api/v1/shared/notebooks/{token}/html");
                            let file_src = format!("/api/v1/shared/notebooks/{token}/file");
                            view! { <SharedFileView file page_src file_src token running signed_in /> }.into_any()
                        }
                    }
                })}
            </Transition>
        </main>
    }
}

/// "Copied to …" after a copy (`?copied=<notebook>/<path>`).
#[component]
fn Copied() -> impl IntoView {
    let query = use_query_map();
    move || {
        query.with(|q| q.get("copied")).map(|to| {
            let notebook = to.split('/').next().unwrap_or_default().to_owned();
            view! {
                <p class="banner ok" role="status" data-testid="copied">
                    {format!("Copied into {to}. ")}
                    <a href=crate::models::history_href(&notebook, None, None)>"Its history"</a>
                </p>
            }
        })
    }
}

/// One shared file: who shared what, its page in a sandboxed frame, its
/// .ipynb, and the copy form.
#[component]
fn SharedFileView(
    file: SharedNotebookFile,
    page_src: String,
    file_src: String,
    /// A link's token, or empty for a share with the caller.
    token: String,
    running: Vec<String>,
    signed_in: bool,
) -> impl IntoView {
    let copy = ServerAction::<CopySharedNotebook>::new();
    let error = Signal::derive(last_error(copy));
    let copy_form = if !signed_in {
        view! { <p class="hint">"Sign in to copy it into a notebook of yours."</p> }.into_any()
    } else if running.is_empty() {
        view! { <p class="hint" data-testid="no-running">"Start a notebook of yours to copy it into."</p> }.into_any()
    } else {
        view! {
            <ActionForm action=copy attr:class="inline-form">
                <input type="hidden" name="share" value=file.share />
                <input type="hidden" name="token" value=token />
                <label for="copy-into">"Copy into"</label>
                <select id="copy-into" name="into">
                    {running.into_iter().map(|n| view! { <option value=n.clone()>{n.clone()}</option> }).collect_view()}
                </select>
                <button type="submit" class="primary" data-testid="copy">"Copy"</button>
            </ActionForm>
            <FormError error />
        }
        .into_any()
    };
    let title = format!(
        "{} from {}/{}",
        file.path, file.owner_account, file.notebook
    );
    view! {
        <section class="panel version-shown" data-testid="shared-file">
            <div class="page-head">
                <h2>{title.clone()}</h2>
                <a class="button small" href=file_src download="" data-testid="download">"Download .ipynb"</a>
            </div>
            <p class="hint">{format!("Shared by {}; as saved {} (UTC). Read-only: nothing in it runs here.", file.owner, format_utc(file.version.at))}</p>
            {copy_form}
            <iframe class="notebook-page" src=page_src sandbox="" title=title data-testid="shared-page"></iframe>
        </section>
    }
}
