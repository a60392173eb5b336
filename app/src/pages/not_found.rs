//! The page for an unknown path (answered with 404).

use leptos::prelude::*;
use leptos_meta::Title;

/// Shown for any path no route matches.
#[component]
pub fn NotFound() -> impl IntoView {
    #[cfg(feature = "ssr")]
    if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
        response.set_status(http::StatusCode::NOT_FOUND);
    }
    view! {
        <Title text="Not found" />
        <main class="auth">
            <h1>"Page not found"</h1>
            <p>"There is nothing at this address. " <a href="/jobs">"Go to your jobs"</a></p>
        </main>
    }
}
