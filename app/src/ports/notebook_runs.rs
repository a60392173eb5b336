//! The files of notebook runs (a notebook file run as a job with
//! papermill): the version a run took, kept as its input, and the executed
//! notebook its replica sends back as it goes. Kept by the run's own key,
//! apart from the notebook's versions, so that a run outlives them; gone
//! with the job. Implemented in `server/src/notebooks/runs.rs` over the
//! console's object store; who may read or write is the use case's
//! question (`use_cases::notebook_runs`).

use async_trait::async_trait;

use crate::error::AppError;

/// The input and output notebooks of runs, by run key.
#[async_trait]
pub trait NotebookRuns: Send + Sync {
    /// Keeps `notebook` (a notebook's JSON) as a new run's input; returns
    /// the run's key (32 hex digits).
    async fn keep_input(&self, notebook: Vec<u8>) -> Result<String, AppError>;
    /// Run `run`'s input.
    async fn input(&self, run: &str) -> Result<Vec<u8>, AppError>;
    /// Keeps `notebook` as run `run`'s output so far (replacing the last);
    /// it must be a notebook's JSON.
    async fn keep_output(&self, run: &str, notebook: Vec<u8>) -> Result<(), AppError>;
    /// Run `run`'s output so far; `None` before its replica sent one.
    async fn output(&self, run: &str) -> Result<Option<Vec<u8>>, AppError>;
    /// The output as a standalone HTML page (nbconvert's, without scripts;
    /// served so that nothing in it runs).
    async fn output_html(&self, run: &str) -> Result<Vec<u8>, AppError>;
    /// The input as a standalone HTML page (as `output_html`): what a
    /// notebook template runs, shown on its page.
    async fn input_html(&self, run: &str) -> Result<Vec<u8>, AppError>;
    /// Removes the run's files.
    async fn forget(&self, run: &str) -> Result<(), AppError>;
}
