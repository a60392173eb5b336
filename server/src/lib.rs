//! The `paddlecloud` server: configuration, the database and the adapters that
//! implement `app::ports`, and the HTTP surface.

pub mod accounts;
pub mod cli;
pub mod db;
pub mod http;
pub mod jobs;
pub mod local;
pub mod logfile;
pub mod time;
