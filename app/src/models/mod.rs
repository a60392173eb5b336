//! Plain serde types shared by browser and server. Database rows and cluster
//! objects are mapped into these at the edge, in `server/`.

pub mod account;
pub mod time;

pub use account::*;
