//! The browser entry point: the page is server-rendered HTML; only its
//! islands (the interactive parts) are hydrated, all from this one module.

/// Called by the islands script leptos puts into every page, before it
/// hydrates the islands it finds.
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_islands();
    // A page without islands is done now; otherwise the last island marks it.
    app::mark_if_all_hydrated(0);
}
