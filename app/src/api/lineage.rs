//! Lineage: the graph around a dataset, job, model version or serving
//! instance, for the section on each of their pages and `/lineage`.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::AppError;
use crate::models::Lineage;

#[cfg(feature = "ssr")]
use super::context::{principal, services};

/// A graph with the account it is drawn for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LineageView {
    /// The graph.
    pub lineage: Lineage,
    /// The viewer's account (whose jobs and instances link to their pages).
    pub viewer: String,
}

/// The graph around `node` (`kind:owner/name[:version]`).
#[server(prefix = "/api", endpoint = "lineage_graph")]
pub async fn lineage_graph(node: String) -> Result<LineageView, AppError> {
    let who = principal()?;
    let root = crate::models::NodeRef::parse(&node)?;
    let lineage = crate::use_cases::lineage::lineage(&services()?, &who.me, root).await?;
    Ok(LineageView {
        lineage,
        viewer: who.me.account.name.clone(),
    })
}
