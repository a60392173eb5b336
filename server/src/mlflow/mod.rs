//! The MLflow tracking API's state: experiments, runs and the JSON shapes
//! (its routes are `http::mlflow`, its tables `storage::mlflow`). It is the
//! part the `mlflow` client uses to log, so
//! `mlflow.set_tracking_uri(console_url)` with `MLFLOW_TRACKING_TOKEN` set to
//! an access key works unchanged: experiments, runs (each a job in the job
//! table, or attached to one by the `paddlecloud.job` tag), params, tags, and
//! metrics, which are the job's PaddleBoard series.
//!
//! MLflow keeps every (step, timestamp) of a metric; PaddleBoard keeps one
//! point per step, and a step logged again replaces the series from there
//! on, as for a resumed job. Log with `step=` to keep every point.

pub mod tracking;
pub mod wire;
