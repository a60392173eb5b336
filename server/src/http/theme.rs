//! `POST /theme`: the header's theme chooser as a plain form (JavaScript
//! off; hydrated, the chooser writes the same cookie itself). Remembers the
//! theme in its cookie and sends the browser back to the page it was on.

use app::models::theme::{safe_return_path, Theme};
use axum::body::Bytes;
use axum::response::{IntoResponse, Response};
use http::{header, StatusCode};

/// Sets the theme cookie from the form's `theme` and answers 303 to its
/// `back` (a path on this site only); 400 for a theme it does not know.
pub async fn choose(body: Bytes) -> Response {
    let mut theme = None;
    let mut back = String::new();
    for (key, value) in form_urlencoded::parse(&body) {
        match &*key {
            "theme" => theme = Theme::parse(&value),
            "back" => back = value.into_owned(),
            _ => {}
        }
    }
    let Some(theme) = theme else {
        return (
            StatusCode::BAD_REQUEST,
            "Choose a theme: light, dark or system.",
        )
            .into_response();
    };
    (
        StatusCode::SEE_OTHER,
        [
            (header::LOCATION, safe_return_path(&back).to_owned()),
            (header::SET_COOKIE, theme.cookie()),
        ],
    )
        .into_response()
}
