//! The modal dialog every "new …" and "launch …" form opens in: a backdrop,
//! a labelled `role="dialog"` section, its heading and a close link. The
//! dialog is part of the page's URL (`?new=1`, `?launch=1`), so closing it
//! is a link back to the page without that parameter: it works without
//! JavaScript and the browser's back button closes it too.

use leptos::prelude::*;
use leptos_router::components::A;

/// A modal dialog titled `title`, closed by a link to `close`.
#[component]
pub fn Dialog(
    /// The heading's element id, which labels the dialog.
    id: &'static str,
    /// Its heading.
    #[prop(into)]
    title: String,
    /// Where its close link goes: the page without the dialog.
    #[prop(into)]
    close: Signal<String>,
    /// A wider dialog, for forms with side-by-side fields.
    #[prop(optional)]
    wide: bool,
    /// The form and whatever goes with it.
    children: Children,
) -> impl IntoView {
    let class = if wide { "modal wide" } else { "modal" };
    view! {
        <div class="modal-backdrop">
            <section class=class role="dialog" aria-modal="true" aria-labelledby=id>
                <header>
                    <h2 id=id>{title}</h2>
                    <A href=move || close.get() attr:class="close" attr:aria-label="Close">"×"</A>
                </header>
                {children()}
            </section>
        </div>
    }
}
