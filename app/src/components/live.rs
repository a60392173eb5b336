//! Live regions: a part of a server-rendered page that the browser brings up
//! to date by fetching the page again and swapping in that part's new HTML,
//! whenever a server-sent event says something changed or on a timer.
//!
//! The server stays the only renderer (the region's code is not shipped as
//! wasm); the browser holds just this island. A refresh asks for its
//! regions by id in [`REGION_HEADER`], and the server renders only those
//! (each page wraps them in [`Region`] and the rest in [`beside_regions`]):
//! an event costs one region's queries and bytes, not the page's.

use leptos::prelude::*;

/// The request header a refresh sends: the ids of the regions it wants,
/// separated by commas. The server then renders a bare document holding
/// only those regions (and what a page has not marked, in full).
pub const REGION_HEADER: &str = "x-paddlecloud-region";

/// The regions this render is for, from [`REGION_HEADER`]: `None` for a
/// whole page.
pub fn requested_regions() -> Option<Vec<String>> {
    #[cfg(feature = "ssr")]
    {
        with_context::<http::request::Parts, _>(|parts| {
            let value = parts.headers.get(REGION_HEADER)?.to_str().ok()?;
            Some(
                value
                    .split(',')
                    .map(|id| id.trim().to_owned())
                    .filter(|id| !id.is_empty())
                    .collect(),
            )
        })
        .flatten()
    }
    #[cfg(not(feature = "ssr"))]
    None
}

/// A live region: `<div id=…>` around its content, which is rendered for a
/// whole page or when a refresh asks for this region, and not otherwise.
#[component]
pub fn Region(
    /// The element's id, which [`LiveRegion`] names as its `target`.
    id: &'static str,
    /// The element's class.
    #[prop(optional)]
    class: &'static str,
    /// Its name for assistive technology: given, the region is a
    /// `<section>` (a landmark) rather than a `<div>`.
    #[prop(optional)]
    label: Option<&'static str>,
    /// What it shows.
    children: Children,
) -> impl IntoView {
    let wanted = requested_regions().is_none_or(|ids| ids.iter().any(|i| i == id));
    let content = wanted.then(children);
    match label {
        Some(label) => {
            view! { <section id=id class=class aria-label=label>{content}</section> }.into_any()
        }
        None => view! { <div id=id class=class>{content}</div> }.into_any(),
    }
}

/// What a page shows besides its live regions: rendered for a whole page
/// only, so a region's refresh runs none of its queries.
pub fn beside_regions<V>(view: impl FnOnce() -> V) -> Option<V> {
    requested_regions().is_none().then(view)
}

/// Keeps the element with id `target` up to date while the page is open:
/// refreshed on each message of the `events` stream (server-sent events)
/// and every `every_secs` seconds. Renders nothing visible.
#[island]
pub fn LiveRegion(
    /// The id of the element to refresh.
    target: String,
    /// A server-sent events URL whose messages mean "changed".
    #[prop(optional)]
    events: Option<String>,
    /// Refresh at least this often, seconds.
    #[prop(optional)]
    every_secs: Option<u32>,
) -> impl IntoView {
    #[cfg(feature = "hydrate")]
    crate::island_hydrated();
    #[cfg(feature = "hydrate")]
    client::start(target, events, every_secs);
    #[cfg(not(feature = "hydrate"))]
    let _ = (target, events, every_secs);
    view! { <span class="live-region" hidden></span> }
}

#[cfg(feature = "hydrate")]
pub use client::refresh_now;

#[cfg(feature = "hydrate")]
mod client {
    use std::cell::Cell;
    use std::rc::Rc;

    use wasm_bindgen::closure::Closure;
    use wasm_bindgen::{JsCast, JsValue};
    use wasm_bindgen_futures::{spawn_local, JsFuture};

    /// One refresh at a time; a change seen during one asks for another.
    #[derive(Default)]
    struct State {
        /// A fetch is under way.
        busy: Cell<bool>,
        /// Something changed while it was.
        again: Cell<bool>,
    }

    /// Brings the `targets` up to date now (after an island changed what
    /// they show), from one fetch of the page.
    pub fn refresh_now(targets: &[&str]) {
        let targets = targets.iter().map(|t| (*t).to_owned()).collect();
        request(Rc::new(State::default()), targets);
    }

    pub fn start(target: String, events: Option<String>, every_secs: Option<u32>) {
        let state = Rc::new(State::default());
        let kick: Rc<dyn Fn()> = {
            let state = state.clone();
            Rc::new(move || request(state.clone(), vec![target.clone()]))
        };
        if let Some(url) = events {
            if let Ok(source) = web_sys::EventSource::new(&url) {
                let on_message = {
                    let kick = kick.clone();
                    Closure::<dyn Fn(web_sys::MessageEvent)>::new(
                        move |_: web_sys::MessageEvent| kick(),
                    )
                };
                source.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
                // Changes between the server's render and the stream's
                // (re)connection send no message: catch up when it opens.
                let kick = kick.clone();
                let on_open = Closure::<dyn Fn()>::new(move || kick());
                source.set_onopen(Some(on_open.as_ref().unchecked_ref()));
                // These live as long as the page: a navigation away ends them.
                on_message.forget();
                on_open.forget();
                std::mem::forget(source);
            }
        }
        if let Some(secs) = every_secs.filter(|s| *s > 0) {
            let tick = Closure::<dyn Fn()>::new(move || kick());
            let _ = web_sys::window().map(|w| {
                w.set_interval_with_callback_and_timeout_and_arguments_0(
                    tick.as_ref().unchecked_ref(),
                    (secs * 1000) as i32,
                )
            });
            tick.forget();
        }
    }

    fn request(state: Rc<State>, targets: Vec<String>) {
        if state.busy.replace(true) {
            state.again.set(true);
            return;
        }
        spawn_local(async move {
            loop {
                state.again.set(false);
                if let Err(e) = refresh(&targets).await {
                    web_sys::console::warn_2(&"live region refresh failed".into(), &e);
                }
                if !state.again.get() {
                    break;
                }
            }
            state.busy.set(false);
        });
    }

    /// Hydrates the islands in swapped-in HTML, through the function the
    /// islands script leaves on `window` for this.
    fn hydrate_islands_in(region: &web_sys::Element) -> Result<(), JsValue> {
        let islands = region.query_selector_all("leptos-island")?;
        if islands.length() == 0 {
            return Ok(());
        }
        let window = web_sys::window().ok_or("no window")?;
        let hydrate: js_sys::Function =
            js_sys::Reflect::get(&window, &"__hydrateIsland".into())?.dyn_into()?;
        for i in 0..islands.length() {
            let Some(island) = islands
                .get(i)
                .and_then(|n| n.dyn_into::<web_sys::Element>().ok())
            else {
                continue;
            };
            let id = island.get_attribute("data-component").unwrap_or_default();
            hydrate.call2(&JsValue::NULL, &island, &id.into())?;
        }
        Ok(())
    }

    /// The check boxes ticked in `region`, as (name, value): what the
    /// user chose there (jobs to compare) outlives a refresh.
    fn ticked_in(region: &web_sys::Element) -> Result<Vec<(String, String)>, JsValue> {
        let boxes = region.query_selector_all("input[type=checkbox]:checked")?;
        Ok((0..boxes.length())
            .filter_map(|i| boxes.get(i)?.dyn_into::<web_sys::HtmlInputElement>().ok())
            .map(|b| (b.name(), b.value()))
            .collect())
    }

    /// Ticks again the boxes of `ticked` that the new content of `region`
    /// still has.
    fn tick_again(region: &web_sys::Element, ticked: &[(String, String)]) -> Result<(), JsValue> {
        if ticked.is_empty() {
            return Ok(());
        }
        let boxes = region.query_selector_all("input[type=checkbox]")?;
        for i in 0..boxes.length() {
            let Some(b) = boxes
                .get(i)
                .and_then(|n| n.dyn_into::<web_sys::HtmlInputElement>().ok())
            else {
                continue;
            };
            if ticked
                .iter()
                .any(|(n, v)| *n == b.name() && *v == b.value())
            {
                b.set_checked(true);
            }
        }
        Ok(())
    }

    /// Fetches the `targets` as they are now (the page's URL, rendering
    /// only them) and swaps in their new content.
    async fn refresh(targets: &[String]) -> Result<(), JsValue> {
        let window = web_sys::window().ok_or("no window")?;
        let url = window.location().href()?;
        let init = web_sys::RequestInit::new();
        init.set_credentials(web_sys::RequestCredentials::SameOrigin);
        // Only these regions, not the page: see `REGION_HEADER`.
        let headers = js_sys::Object::new();
        js_sys::Reflect::set(
            &headers,
            &super::REGION_HEADER.into(),
            &targets.join(",").into(),
        )?;
        init.set_headers(&headers);
        let response: web_sys::Response =
            JsFuture::from(window.fetch_with_str_and_init(&url, &init))
                .await?
                .dyn_into()?;
        if !response.ok() || response.redirected() {
            // Signed out, or the page is gone: leave what is shown.
            return Ok(());
        }
        let html = JsFuture::from(response.text()?)
            .await?
            .as_string()
            .unwrap_or_default();
        let fresh = web_sys::DomParser::new()?
            .parse_from_string(&html, web_sys::SupportedType::TextHtml)?;
        let document = window.document().ok_or("no document")?;
        for target in targets {
            // Someone typing in the region (a scale field) keeps what they
            // typed; the next change after they leave it brings it up to date.
            let editing = document
                .active_element()
                .zip(document.get_element_by_id(target))
                .is_some_and(|(focus, region)| {
                    region.contains(Some(&focus))
                        && matches!(focus.tag_name().as_str(), "INPUT" | "SELECT" | "TEXTAREA")
                });
            if editing {
                continue;
            }
            if let (Some(new), Some(old)) = (
                fresh.get_element_by_id(target),
                document.get_element_by_id(target),
            ) {
                if new.inner_html() != old.inner_html() {
                    let ticked = ticked_in(&old)?;
                    old.set_inner_html(&new.inner_html());
                    tick_again(&old, &ticked)?;
                    hydrate_islands_in(&old)?;
                }
            }
        }
        Ok(())
    }
}
