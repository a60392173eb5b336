//! Pieces of UI shared by several pages.

pub mod chart;
pub mod dialog;
pub mod form;
pub mod form_watch;
pub mod layout;
pub mod lineage;
pub mod links;
pub mod live;
pub mod markup;
pub mod page_error;
pub mod param_field;
pub mod quota_line;
pub mod resource;
pub mod security;
pub mod share_link;
pub mod sse;
pub mod theme;
