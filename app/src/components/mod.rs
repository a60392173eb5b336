//! Pieces of UI shared by several pages.

pub mod form;
pub mod layout;
pub mod sse;
