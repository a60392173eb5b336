//! Comparing runs, for the compare page.

use leptos::prelude::*;

use crate::error::AppError;
use crate::models::compare::{CompareQuery, Comparison};

#[cfg(feature = "ssr")]
use super::context::{principal, services};

/// The runs `query` names side by side: parameters, final metric values
/// and the chosen tags' curves (see `use_cases::compare`).
#[server(prefix = "/api", endpoint = "compare_runs")]
pub async fn compare_runs(query: CompareQuery) -> Result<Comparison, AppError> {
    let account = principal()?.me.account;
    crate::use_cases::compare::compare_runs(&services()?, &account, &query).await
}
