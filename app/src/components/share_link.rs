//! What the pages of share links have in common: the bar atop what a
//! link opens, and the choice of when a new link expires.

use leptos::prelude::*;

/// The bar atop what a share link opens: the brand, and that it came by link.
#[component]
pub fn LinkTopbar() -> impl IntoView {
    view! {
        <header class="topbar">
            <a class="brand" href="/jobs">
                <span class="logo" aria-hidden="true">"▲"</span>
                "PaddleCloud"
            </a>
            <span class="muted">"Shared with you by link"</span>
        </header>
    }
}

/// When a new share link stops working: never, or in 1, 7 (chosen) or 30
/// days; posted as `name` (days, empty for never).
#[component]
pub fn LinkExpiry(id: &'static str, name: &'static str) -> impl IntoView {
    view! {
        <select id=id name=name>
            <option value="">"never"</option>
            <option value="1">"in 1 day"</option>
            <option value="7" selected>"in 7 days"</option>
            <option value="30">"in 30 days"</option>
        </select>
    }
}
