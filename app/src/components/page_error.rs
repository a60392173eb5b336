//! A page whose subject could not be read: the error as a banner, and a
//! "not found" (something gone, or another account's) answered with the
//! 404 status, so browsers, crawlers and scripts read it as such.

use leptos::prelude::*;

use crate::error::AppError;

/// The banner for `err`, setting the response's status to 404 when it is
/// "not found".
pub fn page_error(err: &AppError) -> AnyView {
    #[cfg(feature = "ssr")]
    if let (AppError::NotFound { .. }, Some(response)) =
        (err, use_context::<leptos_axum::ResponseOptions>())
    {
        response.set_status(http::StatusCode::NOT_FOUND);
    }
    view! { <p class="banner error" role="alert">{err.to_string()}</p> }.into_any()
}
