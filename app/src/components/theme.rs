//! The header's theme chooser and the theme of the request being rendered.
//!
//! Without JavaScript the chooser is a form: each button posts its theme to
//! [`ROUTE`], which sets the cookie and sends the browser back to the page.
//! Hydrated, a button switches `<html data-theme>` and writes the same
//! cookie on the spot, without a page load.

use leptos::prelude::*;

use crate::models::theme::{Theme, ROUTE};

/// The theme the request's cookie remembers ([`Theme::System`] without one,
/// and in the browser, where nothing is rendered from a request).
pub fn requested_theme() -> Theme {
    #[cfg(feature = "ssr")]
    {
        with_context::<http::request::Parts, _>(|parts| {
            let cookies: Vec<&str> = parts
                .headers
                .get_all(http::header::COOKIE)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .collect();
            Theme::from_cookie_header(&cookies.join("; "))
        })
        .unwrap_or_default()
    }
    #[cfg(not(feature = "ssr"))]
    Theme::System
}

/// What a theme's button shows (its name is the button's accessible name).
fn icon(theme: Theme) -> &'static str {
    match theme {
        Theme::Light => "☀",
        Theme::Dark => "☾",
        Theme::System => "◐",
    }
}

/// Light, dark or system: three buttons, the chosen one pressed.
#[island]
pub fn ThemeChooser(
    /// The theme the page was rendered in.
    theme: Theme,
    /// The page to come back to after the form posts (path and query).
    back: String,
) -> impl IntoView {
    #[cfg(feature = "hydrate")]
    crate::island_hydrated();
    let (chosen, set_chosen) = signal(theme);
    view! {
        <form class="theme-chooser" action=ROUTE method="post" aria-label="Theme" data-testid="theme-chooser">
            <input type="hidden" name="back" value=back />
            {Theme::ALL
                .into_iter()
                .map(|t| {
                    view! {
                        <button
                            type="submit"
                            name="theme"
                            value=t.as_str()
                            title=format!("{} theme", t.label())
                            aria-pressed=move || (chosen.get() == t).to_string()
                            on:click=move |ev| {
                                #[cfg(feature = "hydrate")]
                                {
                                    ev.prevent_default();
                                    client::apply(t);
                                }
                                #[cfg(not(feature = "hydrate"))]
                                let _ = ev;
                                set_chosen.set(t);
                            }
                        >
                            <span class="icon" aria-hidden="true">{icon(t)}</span>
                            <span class="visually-hidden">{t.label()}</span>
                        </button>
                    }
                })
                .collect_view()}
        </form>
    }
}

#[cfg(feature = "hydrate")]
mod client {
    use crate::models::theme::{Theme, ATTRIBUTE};

    /// Shows `theme` now and remembers it as the server would have.
    pub fn apply(theme: Theme) {
        let document = leptos::prelude::document();
        if let Some(root) = document.document_element() {
            let _ = root.set_attribute(ATTRIBUTE, theme.as_str());
        }
        // `document.cookie = …` (web-sys puts it behind HtmlDocument).
        let _ = js_sys::Reflect::set(
            &document,
            &wasm_bindgen::JsValue::from_str("cookie"),
            &wasm_bindgen::JsValue::from_str(&theme.cookie()),
        );
    }
}
