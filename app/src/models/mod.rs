//! Plain serde types shared by browser and server. Database rows and cluster
//! objects are mapped into these at the edge, in `server/`.

pub mod access_key;
pub mod account;
pub mod board;
pub mod job_form;
pub mod job_query;
pub mod jobs;
pub mod metrics;
pub mod quantity;
pub mod time;

pub use access_key::*;
pub use account::*;
pub use board::{BoardJob, BoardView, XAxis};
pub use job_form::*;
pub use job_query::*;
pub use jobs::*;
pub use metrics::*;
