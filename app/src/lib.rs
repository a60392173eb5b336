//! PaddleCloud Console: the isomorphic Leptos app.
//!
//! - [`models`]: serde types shared by browser and server.
//! - [`error`]: the one error type that crosses the wire.
//! - [`api`]: server functions (thin: take a port from context, call it).
//! - [`ports`] (server only): the traits `server/` implements.
//! - [`use_cases`] (server only): what server functions and REST both call
//!   when a request needs more than one port (the quota-checked submit).
//! - [`pages`] and [`components`]: the UI, rendered on the server; only its
//!   islands (`#[island]`) are hydrated in the browser.

pub mod api;
pub mod components;
pub mod error;
pub mod models;
pub mod pages;
#[cfg(feature = "ssr")]
pub mod ports;
pub mod routes;
#[cfg(feature = "ssr")]
pub mod use_cases;

pub use routes::{shell, App};

/// The attribute the browser puts on `<html>` once the page's islands are
/// hydrated: tests and scripts wait for it instead of guessing.
pub const HYDRATED_MARK: &str = "data-hydrated";

/// Called by each island as it hydrates; the last one of the page puts
/// [`HYDRATED_MARK`] on `<html>`. (Islands hydrate one after another once
/// the module has loaded, so "the wasm is running" is not "the page works".)
#[cfg(feature = "hydrate")]
pub fn island_hydrated() {
    use std::sync::atomic::{AtomicU32, Ordering};
    static DONE: AtomicU32 = AtomicU32::new(0);
    let done = DONE.fetch_add(1, Ordering::SeqCst) + 1;
    mark_if_all_hydrated(done);
}

/// Puts [`HYDRATED_MARK`] on `<html>` when `done` islands are all the page has.
#[cfg(feature = "hydrate")]
pub fn mark_if_all_hydrated(done: u32) {
    let document = leptos::prelude::document();
    let islands = document
        .query_selector_all("leptos-island")
        .map_or(0, |l| l.length());
    if done >= islands {
        if let Some(root) = document.document_element() {
            let _ = root.set_attribute(HYDRATED_MARK, "true");
        }
    }
}
