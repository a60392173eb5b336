//! The browser entry point: hydrates the HTML the server rendered.

/// Called by the hydration script leptos puts into every page.
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    // The pages are lazy routes (separate wasm modules): hydration waits for
    // the current page's module instead of panicking on it.
    leptos::mount::hydrate_lazy(app::App);
}
