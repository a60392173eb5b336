//! The `paddlecloud` server: configuration, the database and the adapters that
//! implement `app::ports`, and the HTTP surface.

pub mod access_keys;
pub mod accounts;
pub mod alerts;
pub mod api_client;
pub mod assets;
pub mod backend;
pub mod cli;
pub mod clusters;
pub mod console;
pub mod controller;
pub mod environments;
pub mod experiments;
pub mod http;
pub mod kubernetes;
pub mod local;
pub mod local_runs;
pub mod mail;
pub mod metric_files;
pub mod mlflow;
pub mod notebooks;
pub mod notifications;
pub mod paddleboard;
pub mod pipelines;
pub mod quota;
pub mod resources;
pub mod run_params;
pub mod schedules;
pub mod secrets;
pub mod serving;
pub mod stalls;
pub mod storage;
pub mod telemetry;
pub mod templates;
pub mod time;
