//! Server-sent events in the browser, for the log pane's follow (live
//! regions open their own). On the server this does nothing.

#[cfg(feature = "hydrate")]
use leptos::prelude::*;

/// Opens an `EventSource` on `url` for as long as the calling component
/// lives, calling `on_message` with each message's text. `url` is read
/// reactively: when it changes, the old stream closes and a new one opens.
pub fn use_event_source(
    url: impl Fn() -> Option<String> + Send + Sync + 'static,
    on_message: impl Fn(String) + Clone + Send + Sync + 'static,
) {
    #[cfg(feature = "hydrate")]
    {
        use send_wrapper::SendWrapper;
        use wasm_bindgen::closure::Closure;
        use wasm_bindgen::JsCast;

        type Open = SendWrapper<(web_sys::EventSource, Closure<dyn Fn(web_sys::MessageEvent)>)>;
        let current: StoredValue<Option<Open>> = StoredValue::new(None);
        let close = move || {
            if let Some(open) = current.try_update_value(Option::take).flatten() {
                open.0.close();
            }
        };
        Effect::new(move |_| {
            close();
            let Some(url) = url() else { return };
            let Ok(source) = web_sys::EventSource::new(&url) else {
                return;
            };
            let on_message = on_message.clone();
            let callback =
                Closure::<dyn Fn(web_sys::MessageEvent)>::new(move |ev: web_sys::MessageEvent| {
                    if let Some(text) = ev.data().as_string() {
                        on_message(text);
                    }
                });
            source.set_onmessage(Some(callback.as_ref().unchecked_ref()));
            current.set_value(Some(SendWrapper::new((source, callback))));
        });
        on_cleanup(close);
    }
    #[cfg(not(feature = "hydrate"))]
    {
        let _ = (url, on_message);
    }
}
