//! Pieces of UI shared by several pages.

pub mod chart;
pub mod form;
pub mod layout;
pub mod links;
pub mod resource;
pub mod sse;
