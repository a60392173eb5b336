//! The browser entry point: hydrates the islands of the HTML the server rendered.

use leptos::prelude::document;

/// Called by the islands script leptos puts into every page.
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_islands();
    if let Some(root) = document().document_element() {
        let _ = root.set_attribute(app::HYDRATED_MARK, "true");
    }
}
