//! The colour theme a browser asked for: light, dark, or the system's.
//!
//! It is remembered in a cookie ([`COOKIE`]), so that the server renders
//! `<html data-theme=…>` ([`ATTRIBUTE`]) from the first byte: no flash of the
//! wrong theme, and the same with JavaScript off. The stylesheet does the
//! rest (`style/main.css`: the colours are custom properties, and "system"
//! follows `prefers-color-scheme`).

use serde::{Deserialize, Serialize};

/// The cookie that remembers the theme (not `HttpOnly`: the header's chooser
/// writes it too when JavaScript is on).
pub const COOKIE: &str = "paddlecloud_theme";

/// How long the cookie is kept, seconds (a year).
pub const COOKIE_MAX_AGE: u32 = 365 * 24 * 3600;

/// The attribute on `<html>` that the stylesheet keys the palette on.
pub const ATTRIBUTE: &str = "data-theme";

/// Where the chooser's form posts (a plain form: it works without JavaScript).
pub const ROUTE: &str = "/theme";

/// A colour theme.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Theme {
    /// Dark text on light backgrounds.
    Light,
    /// Light text on dark backgrounds.
    Dark,
    /// Whatever the system says (`prefers-color-scheme`); the default.
    #[default]
    System,
}

impl Theme {
    /// Every theme, in the order the chooser shows them.
    pub const ALL: [Theme; 3] = [Theme::Light, Theme::Dark, Theme::System];

    /// The name in the cookie, the form and [`ATTRIBUTE`].
    pub fn as_str(self) -> &'static str {
        match self {
            Theme::Light => "light",
            Theme::Dark => "dark",
            Theme::System => "system",
        }
    }

    /// What the chooser's button says.
    pub fn label(self) -> &'static str {
        match self {
            Theme::Light => "Light",
            Theme::Dark => "Dark",
            Theme::System => "System",
        }
    }

    /// The theme named `name`, if it is one.
    pub fn parse(name: &str) -> Option<Theme> {
        Theme::ALL.into_iter().find(|t| t.as_str() == name.trim())
    }

    /// The theme a `Cookie:` header remembers; [`Theme::System`] when it
    /// names none (or one this console does not know).
    pub fn from_cookie_header(header: &str) -> Theme {
        header
            .split(';')
            .filter_map(|pair| pair.split_once('='))
            .find(|(name, _)| name.trim() == COOKIE)
            .and_then(|(_, value)| Theme::parse(value))
            .unwrap_or_default()
    }

    /// The `Set-Cookie` value (also what the chooser writes to
    /// `document.cookie`) that remembers this theme for a year.
    pub fn cookie(self) -> String {
        format!(
            "{COOKIE}={}; Path=/; Max-Age={COOKIE_MAX_AGE}; SameSite=Lax",
            self.as_str()
        )
    }
}

/// Where the chooser's form sends the browser back to: `back` when it is a
/// path on this site, else the jobs page (never another site: `//host` and
/// `/\host` are other sites to a browser).
pub fn safe_return_path(back: &str) -> &str {
    let local = back.starts_with('/')
        && !back.starts_with("//")
        && !back.starts_with("/\\")
        && !back.chars().any(|c| c.is_control());
    if local {
        back
    } else {
        "/jobs"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_theme_reads_back_from_its_name() {
        for theme in Theme::ALL {
            assert_eq!(Theme::parse(theme.as_str()), Some(theme));
        }
        assert_eq!(Theme::parse("blue"), None);
    }

    #[test]
    fn the_cookie_header_gives_the_remembered_theme_or_system() {
        assert_eq!(
            Theme::from_cookie_header("session=abc; paddlecloud_theme=dark"),
            Theme::Dark
        );
        assert_eq!(
            Theme::from_cookie_header("paddlecloud_theme=light;session=abc"),
            Theme::Light
        );
        assert_eq!(Theme::from_cookie_header("session=abc"), Theme::System);
        assert_eq!(
            Theme::from_cookie_header("paddlecloud_theme=neon"),
            Theme::System
        );
        assert_eq!(
            Theme::from_cookie_header("xpaddlecloud_theme=dark"),
            Theme::System
        );
    }

    #[test]
    fn the_cookie_is_kept_for_a_year_on_every_path() {
        assert_eq!(
            Theme::Dark.cookie(),
            "paddlecloud_theme=dark; Path=/; Max-Age=31536000; SameSite=Lax"
        );
    }

    #[test]
    fn the_chooser_sends_the_browser_back_only_to_this_site() {
        assert_eq!(
            safe_return_path("/jobs?status=failed"),
            "/jobs?status=failed"
        );
        assert_eq!(safe_return_path("/login"), "/login");
        assert_eq!(safe_return_path("//evil.example/"), "/jobs");
        assert_eq!(safe_return_path("/\\evil.example/"), "/jobs");
        assert_eq!(safe_return_path("https://evil.example/"), "/jobs");
        assert_eq!(safe_return_path(""), "/jobs");
        assert_eq!(safe_return_path("/a\r\nSet-Cookie: x=y"), "/jobs");
    }
}
