//! The browser entry point: hydrates the HTML the server rendered.

use leptos::prelude::document;

/// Called by the hydration script leptos puts into every page.
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    // The pages are lazy routes (separate wasm modules), so hydration is
    // asynchronous: it waits for the current page's module. The mark goes on
    // only once all of it is wired up, because a mark set any earlier lets a
    // script (or a test) type into a field whose listener is not there yet.
    let _ = any_spawner::Executor::init_wasm_bindgen();
    let document = document();
    let (Some(root), Some(body)) = (document.document_element(), document.body()) else {
        return;
    };
    any_spawner::Executor::spawn_local(async move {
        let owner = leptos::mount::hydrate_from_async(body, app::App).await;
        let _ = root.set_attribute(app::HYDRATED_MARK, "true");
        owner.forget();
    });
}
