//! Experiments: searches over a template's parameters.

pub mod search;
