//! The security headers of every page the console renders: a Content
//! Security Policy that lets only the page's own scripts run (the inline
//! hydration script by its per-response nonce, the bundle and its
//! WebAssembly from this origin), loads everything else from this origin,
//! and lets only this origin frame the page or be framed by it. The rest
//! (`Referrer-Policy`, `X-Content-Type-Options`, `X-Frame-Options`) are set
//! on every response by the server's router.

/// The policy of a page whose inline scripts carry `nonce`. Inline styles
/// stay allowed: charts and bars are drawn with `style` attributes, and
/// a style cannot run code.
pub fn page_policy(nonce: &str) -> String {
    format!(
        "default-src 'self'; script-src 'self' 'nonce-{nonce}' 'wasm-unsafe-eval'; \
         style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; font-src 'self' data:; \
         connect-src 'self'; frame-src 'self'; frame-ancestors 'self'; object-src 'none'; \
         base-uri 'self'; form-action 'self'"
    )
}

/// Puts the policy, with this response's nonce, on the page being rendered
/// (on the server; nothing in the browser).
pub fn set_page_policy() {
    #[cfg(feature = "ssr")]
    if let (Some(nonce), Some(response)) = (
        leptos::nonce::use_nonce(),
        leptos::prelude::use_context::<leptos_axum::ResponseOptions>(),
    ) {
        if let Ok(value) = http::HeaderValue::from_str(&page_policy(&nonce)) {
            response.insert_header(http::header::CONTENT_SECURITY_POLICY, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_policy_runs_only_the_pages_own_scripts_and_is_framed_only_here() {
        let policy = page_policy("abc123");
        assert!(policy.contains("script-src 'self' 'nonce-abc123' 'wasm-unsafe-eval';"));
        assert!(policy.contains("frame-ancestors 'self'"));
        assert!(policy.contains("object-src 'none'"));
        assert!(!policy.contains("script-src 'self' 'unsafe-inline'"));
    }
}
