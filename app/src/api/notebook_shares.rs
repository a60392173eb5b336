//! Sharing notebook files read-only: the owner's shares of a file (on its
//! history page), what others shared with the caller (`/notebooks/shared`),
//! what a link opens (`/shared/notebooks/<token>`), and a copy into a
//! notebook of the caller's. The pages themselves come from the REST routes
//! (`…/html`), framed.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::AppError;
use crate::models::{NotebookShare, NotebookShareForm, NotebookVersion, SharedNotebookFile};

#[cfg(feature = "ssr")]
use super::context::{member, principal, redirect_back, services};

/// What the pages that show shared files need beside the files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedFiles {
    /// The files.
    pub files: Vec<SharedNotebookFile>,
    /// The caller's running notebooks, to copy into (empty when signed out).
    pub running: Vec<String>,
    /// Whether the caller is signed in (a link opens signed out too).
    pub signed_in: bool,
}

/// The caller's running notebooks.
#[cfg(feature = "ssr")]
async fn running_of(me: &crate::models::Me) -> Result<Vec<String>, AppError> {
    Ok(services()?
        .notebooks
        .list(&me.account)
        .await?
        .notebooks
        .into_iter()
        .filter(|n| n.owner == me.email && n.status == crate::models::NotebookStatus::Running)
        .map(|n| n.name)
        .collect())
}

/// The shares of notebook `name` (its owner's).
#[server(prefix = "/api", endpoint = "notebook_file_shares")]
pub async fn notebook_file_shares(name: String) -> Result<Vec<NotebookShare>, AppError> {
    let who = principal()?;
    services()?.notebooks.file_shares(&who.me, &name).await
}

/// Shares a file; a link comes back on the page (`?link=`), shown once.
#[server(prefix = "/api", endpoint = "share_notebook_file")]
pub async fn share_notebook_file(name: String, form: NotebookShareForm) -> Result<(), AppError> {
    let who = member()?;
    let spec = form.to_spec()?;
    let done = services()?
        .notebooks
        .share_file(&who.me, &name, &spec)
        .await?;
    redirect_back(
        &[("link", done.link)],
        &crate::models::history_href(&name, Some(&spec.path), None),
    )
}

/// Ends a share.
#[server(prefix = "/api", endpoint = "revoke_notebook_share")]
pub async fn revoke_notebook_share(name: String, id: i64) -> Result<(), AppError> {
    let who = member()?;
    services()?
        .notebooks
        .revoke_share(&who.me, &name, id)
        .await?;
    redirect_back(
        &[("link", None)],
        &crate::models::history_href(&name, None, None),
    )
}

/// What others shared with the caller.
#[server(prefix = "/api", endpoint = "shared_notebook_files")]
pub async fn shared_notebook_files() -> Result<SharedFiles, AppError> {
    let who = principal()?;
    Ok(SharedFiles {
        files: services()?.notebooks.shared_with_me(&who.me).await?,
        running: running_of(&who.me).await?,
        signed_in: true,
    })
}

/// What the link `token` opens (signed in or not).
#[server(prefix = "/api", endpoint = "notebook_link")]
pub async fn notebook_link(token: String) -> Result<SharedFiles, AppError> {
    let via = crate::ports::SharedVia::Link(token);
    let (file, _) = services()?.notebooks.shared(None, &via).await?;
    let me = principal().ok().map(|p| p.me);
    let running = match &me {
        Some(me) => running_of(me).await?,
        None => Vec::new(),
    };
    Ok(SharedFiles {
        files: vec![file],
        running,
        signed_in: me.is_some(),
    })
}

/// Copies a shared file (by its share's id, or a link's `token`) into the
/// caller's running notebook `into`; the page then says where it went.
#[server(prefix = "/api", endpoint = "copy_shared_notebook")]
pub async fn copy_shared_notebook(
    share: i64,
    token: String,
    into: String,
) -> Result<NotebookVersion, AppError> {
    let who = member()?;
    let via = if token.is_empty() {
        crate::ports::SharedVia::Share(share)
    } else {
        crate::ports::SharedVia::Link(token)
    };
    let done = services()?
        .notebooks
        .copy_shared(&who.me, &via, &into)
        .await?;
    redirect_back(
        &[("copied", Some(format!("{into}/{}", done.path)))],
        "/notebooks/shared",
    )?;
    Ok(done)
}
