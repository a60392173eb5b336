//! PaddleCloud Console: the isomorphic Leptos app.
//!
//! - [`models`]: serde types shared by browser and server.
//! - [`error`]: the one error type that crosses the wire.
//! - [`api`]: server functions (thin: take a port from context, call it).
//! - [`ports`] (server only): the traits `server/` implements.
//! - [`pages`] and [`components`]: the UI, rendered on the server and hydrated.

pub mod api;
pub mod components;
pub mod error;
pub mod models;
pub mod pages;
#[cfg(feature = "ssr")]
pub mod ports;
pub mod routes;

pub use routes::{shell, App};

/// The attribute the browser puts on `<html>` once the page (its lazy module
/// included) is hydrated: tests and scripts wait for it instead of guessing.
pub const HYDRATED_MARK: &str = "data-hydrated";
