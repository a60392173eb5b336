//! Notebook versions: a file's history, two versions compared, a restore.
//! A version's page itself is the REST route
//! `/api/v1/notebooks/{name}/versions/{id}/html` (an iframe's source).

use leptos::prelude::*;

use crate::error::AppError;
use crate::models::{NotebookDiff, NotebookHistory, NotebookVersion};

#[cfg(feature = "ssr")]
use super::context::{member, principal, redirect_back, services};

/// The notebook's versioned files and the versions of `path` (the file
/// changed last when empty).
#[server(prefix = "/api", endpoint = "read_notebook_history")]
pub async fn read_notebook_history(
    name: String,
    path: String,
) -> Result<NotebookHistory, AppError> {
    let who = principal()?;
    let path = Some(path).filter(|p| !p.is_empty());
    services()?
        .notebooks
        .history(&who.me, &name, path.as_deref())
        .await
}

/// Versions `from` and `to` compared cell by cell.
#[server(prefix = "/api", endpoint = "compare_notebook_versions")]
pub async fn compare_notebook_versions(
    name: String,
    from: i64,
    to: i64,
) -> Result<NotebookDiff, AppError> {
    let who = principal()?;
    services()?.notebooks.diff(&who.me, &name, from, to).await
}

/// Puts version `id` back into the running notebook's workspace; the page
/// then shows the restore, the newest version.
#[server(prefix = "/api", endpoint = "restore_notebook_version")]
pub async fn restore_notebook_version(name: String, id: i64) -> Result<NotebookVersion, AppError> {
    let who = member()?;
    let done = services()?.notebooks.restore(&who.me, &name, id).await?;
    redirect_back(
        &[
            ("version", Some(done.id.to_string())),
            ("restored", Some(id.to_string())),
        ],
        &crate::models::history_href(&name, Some(&done.path), None),
    )?;
    Ok(done)
}
