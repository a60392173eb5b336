//! Notebooks: the table, the "New notebook" dialog, start, stop, keep
//! running, delete.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::AppError;
use crate::models::{Notebook, NotebookForm, NotebookList};

#[cfg(feature = "ssr")]
use super::context::{member, principal, redirect_back_without, services};

/// What the Notebooks page shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotebooksPage {
    /// The account's notebooks.
    pub list: NotebookList,
    /// The caller's address: only their own notebooks open.
    pub me: String,
    /// Whether the caller owns the account (and may stop or delete anyone's).
    pub account_owner: bool,
}

/// The account's notebooks.
#[server(prefix = "/api", endpoint = "list_notebooks")]
pub async fn list_notebooks() -> Result<NotebooksPage, AppError> {
    let who = principal()?;
    Ok(NotebooksPage {
        list: services()?.notebooks.list(&who.me.account).await?,
        me: who.me.email.clone(),
        account_owner: who.me.role == crate::models::Role::Owner,
    })
}

/// Creates and starts a notebook from the dialog's form.
#[server(prefix = "/api", endpoint = "create_notebook")]
pub async fn create_notebook(form: NotebookForm) -> Result<Notebook, AppError> {
    let who = member()?;
    let spec = form.to_spec()?;
    let done = crate::use_cases::create_notebook_within_quota(&services()?, &who.me, spec).await?;
    redirect_back_without("new", "/notebooks")?;
    Ok(done)
}

/// Starts a stopped notebook again.
#[server(prefix = "/api", endpoint = "start_notebook")]
pub async fn start_notebook(name: String) -> Result<Notebook, AppError> {
    let who = member()?;
    crate::use_cases::start_notebook_within_quota(&services()?, &who.me, &name).await
}

/// Stops a notebook's server (the workspace stays).
#[server(prefix = "/api", endpoint = "stop_notebook")]
pub async fn stop_notebook(name: String) -> Result<Notebook, AppError> {
    let who = member()?;
    services()?.notebooks.stop(&who.me, &name).await
}

/// Resets a notebook's idle clock.
#[server(prefix = "/api", endpoint = "keep_notebook")]
pub async fn keep_notebook(name: String) -> Result<Notebook, AppError> {
    let who = member()?;
    services()?.notebooks.keep_running(&who.me, &name).await
}

/// Deletes a notebook and its workspace (the page asks twice).
#[server(prefix = "/api", endpoint = "delete_notebook")]
pub async fn delete_notebook(name: String) -> Result<(), AppError> {
    let who = member()?;
    services()?.notebooks.delete(&who.me, &name).await
}
