//! Job records in the console's database, shared by every cluster backend:
//! the table, its filters and the replica counts are served from here.

pub mod store;

pub use store::{JobStore, PodUpdate, StoredJob};
