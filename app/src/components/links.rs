//! Links from a page to itself with some of its URL state changed.

use leptos_router::params::ParamsMap;

use crate::models::url::href_with;

/// `path?…`: the current query `params` with `changes` applied (`None`
/// removes a parameter).
pub fn page_href(path: &str, params: &ParamsMap, changes: &[(&str, Option<String>)]) -> String {
    href_with(
        path,
        params.latest_values().map(|(k, v)| (k.as_ref(), v)),
        changes,
    )
}
