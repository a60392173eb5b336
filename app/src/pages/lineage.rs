//! `/lineage?node=kind:owner/name[:version]`: the lineage graph of one
//! dataset, job, model version or serving instance on a page of its own,
//! the link each page's Lineage section shares.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::components::lineage::LineageSection;
use crate::models::NodeRef;

/// The page.
#[component]
pub fn LineagePage() -> impl IntoView {
    let query = use_query_map();
    let node = move || query.with(|q| q.get("node").unwrap_or_default());
    view! {
        <div class="page-head">
            <h1>"Lineage"</h1>
        </div>
        <form method="get" action="/lineage" class="inline-form">
            <label>"Of "
                <input name="node" value=node() size="40" aria-label="Node"
                    placeholder="model:owner/name:3, job:owner/name, dataset:owner/name, serving:owner/name" />
            </label>
            <button type="submit" class="small">"Show"</button>
        </form>
        {move || match NodeRef::parse(&node()) {
            Ok(root) => view! { <LineageSection node=root /> }.into_any(),
            Err(err) if node().is_empty() => {
                let _ = err;
                view! { <p class="muted">"Name a dataset, job, model version or serving instance."</p> }.into_any()
            }
            Err(err) => view! { <p class="error" role="alert">{err.to_string()}</p> }.into_any(),
        }}
    }
}
