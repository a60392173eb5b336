//! Reading a server-rendered form as it is edited, for islands that show
//! something computed from its fields (a dialog's total). The form itself
//! stays plain HTML that posts with or without JavaScript.

use leptos::prelude::*;

/// Calls `changed` with the fields of the form around `inside` (those named
/// `form[field]`, as `{"field": "value"}`) once when it hydrates and each
/// time one of them changes.
/// Does nothing on the server.
#[cfg(feature = "hydrate")]
pub fn watch<E>(inside: NodeRef<E>, changed: impl Fn(serde_json::Value) + 'static)
where
    E: leptos::html::ElementType,
    E::Output: wasm_bindgen::JsCast + Clone + 'static,
{
    use wasm_bindgen::closure::Closure;
    use wasm_bindgen::JsCast;

    let changed = send_wrapper::SendWrapper::new(std::rc::Rc::new(changed));
    Effect::new(move |_| {
        let Some(form) = inside
            .get()
            .and_then(|el| enclosing_form(el.unchecked_ref()))
        else {
            return;
        };
        let changed = changed.clone();
        let read = form.clone();
        // Whatever was typed before the island hydrated counts too.
        changed(fields(&read));
        let listener = Closure::<dyn Fn()>::new(move || changed(fields(&read)));
        for kind in ["input", "change"] {
            let _ = form.add_event_listener_with_callback(kind, listener.as_ref().unchecked_ref());
        }
        // The form lives as long as the page.
        listener.forget();
    });
}

/// The form `el` sits in.
#[cfg(feature = "hydrate")]
fn enclosing_form(el: &web_sys::Element) -> Option<web_sys::HtmlFormElement> {
    use wasm_bindgen::JsCast;
    el.closest("form").ok().flatten()?.dyn_into().ok()
}

/// A dialog's fields as a signal, starting from what the server rendered
/// and following the form around the returned node (put it on the
/// island's root element) as it is edited.
pub fn watched_form<T>(initial: T) -> (RwSignal<T>, NodeRef<leptos::html::Div>)
where
    T: serde::de::DeserializeOwned + Send + Sync + 'static,
{
    let form = RwSignal::new(initial);
    let root = NodeRef::<leptos::html::Div>::new();
    #[cfg(feature = "hydrate")]
    watch(root, move |fields| {
        // A field that does not read yet keeps the last good form.
        if let Ok(f) = serde_json::from_value(fields) {
            form.set(f);
        }
    });
    (form, root)
}

/// The `form[...]` fields of `form` as a JSON object (an unticked checkbox
/// as an empty string).
#[cfg(feature = "hydrate")]
fn fields(form: &web_sys::HtmlFormElement) -> serde_json::Value {
    use wasm_bindgen::JsCast;

    let mut out = serde_json::Map::new();
    let elements = form.elements();
    for i in 0..elements.length() {
        let Some(el) = elements.item(i) else { continue };
        let (name, value) = if let Some(input) = el.dyn_ref::<web_sys::HtmlInputElement>() {
            // An unticked box reads as empty, the way the forms' models
            // take a missing one.
            if input.type_() == "checkbox" && !input.checked() {
                (input.name(), String::new())
            } else {
                (input.name(), input.value())
            }
        } else if let Some(area) = el.dyn_ref::<web_sys::HtmlTextAreaElement>() {
            (area.name(), area.value())
        } else if let Some(select) = el.dyn_ref::<web_sys::HtmlSelectElement>() {
            (select.name(), select.value())
        } else {
            continue;
        };
        if let Some(field) = name.strip_prefix("form[").and_then(|n| n.strip_suffix(']')) {
            out.insert(field.to_owned(), serde_json::Value::String(value));
        }
    }
    serde_json::Value::Object(out)
}

/// Applies the form it sits in as soon as one of its fields changes (a GET
/// form whose state is the URL, like the PaddleBoard's controls), so its
/// Apply button is needed only without JavaScript.
#[island]
pub fn AutoApply() -> impl IntoView {
    #[cfg(feature = "hydrate")]
    crate::island_hydrated();
    let root = NodeRef::<leptos::html::Span>::new();
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::closure::Closure;
        use wasm_bindgen::JsCast;
        Effect::new(move |_| {
            let Some(form) = root.get().and_then(|el| enclosing_form(el.unchecked_ref())) else {
                return;
            };
            let submit = form.clone();
            let listener = Closure::<dyn Fn()>::new(move || {
                let _ = submit.request_submit();
            });
            let _ =
                form.add_event_listener_with_callback("change", listener.as_ref().unchecked_ref());
            listener.forget();
        });
    }
    view! { <span node_ref=root hidden></span> }
}
