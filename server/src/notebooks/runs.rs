//! The files of notebook runs in the console's object store, under
//! `notebook-runs/<run>/`: `input.ipynb` (the version the run took),
//! `output.ipynb` (the executed notebook as its replica last sent it) and
//! the output's page, made by the renderer versions use and kept by the
//! output's hash (`<sha256>.html`), so a page is never of an older output.

use app::error::AppError;
use app::models::{NotebookContent, MAX_VERSION_BYTES};
use app::ports::NotebookRuns;
use async_trait::async_trait;
use object_store::path::Path;
use sha2::{Digest, Sha256};

use super::NotebookService;

/// A run's object `file`.
fn key(run: &str, file: &str) -> Result<Path, AppError> {
    // Keys come from the console; a job's spec could still be edited in
    // the database, so a key that is not ours reads nothing.
    if run.len() != 32 || !run.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(AppError::not_found("Notebook run"));
    }
    Ok(Path::from(format!("notebook-runs/{run}/{file}")))
}

fn page_key(run: &str, output: &[u8]) -> Result<Path, AppError> {
    key(
        run,
        &format!("{}.html", hex::encode(Sha256::digest(output))),
    )
}

impl NotebookService {
    async fn read_if_there(&self, key: &Path) -> Result<Option<Vec<u8>>, AppError> {
        match self.objects.get_bytes(key).await {
            Ok(bytes) => Ok(Some(bytes)),
            Err(AppError::NotFound { .. }) => Ok(None),
            Err(err) => Err(err),
        }
    }
}

/// `bytes` checked to be a notebook (JSON with cells) within the size a
/// version may have.
fn notebook_bytes(bytes: Vec<u8>) -> Result<Vec<u8>, AppError> {
    if bytes.len() > MAX_VERSION_BYTES {
        return Err(AppError::invalid(
            "notebook",
            format!(
                "The notebook is over {} MiB.",
                MAX_VERSION_BYTES / (1024 * 1024)
            ),
        ));
    }
    let json: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|err| AppError::invalid("notebook", format!("This is not JSON: {err}.")))?;
    NotebookContent::from_json(&json)?;
    Ok(bytes)
}

#[async_trait]
impl NotebookRuns for NotebookService {
    async fn keep_input(&self, notebook: Vec<u8>) -> Result<String, AppError> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(|_| AppError::Internal)?;
        let run = hex::encode(bytes);
        self.objects
            .put_bytes(&key(&run, "input.ipynb")?, notebook_bytes(notebook)?)
            .await?;
        Ok(run)
    }

    async fn input(&self, run: &str) -> Result<Vec<u8>, AppError> {
        self.objects.get_bytes(&key(run, "input.ipynb")?).await
    }

    async fn keep_output(&self, run: &str, notebook: Vec<u8>) -> Result<(), AppError> {
        let notebook = notebook_bytes(notebook)?;
        let output = key(run, "output.ipynb")?;
        let before = self.read_if_there(&output).await?;
        self.objects.put_bytes(&output, notebook).await?;
        if let Some(before) = before {
            self.objects.delete(vec![page_key(run, &before)?]).await?;
        }
        Ok(())
    }

    async fn output(&self, run: &str) -> Result<Option<Vec<u8>>, AppError> {
        self.read_if_there(&key(run, "output.ipynb")?).await
    }

    async fn output_html(&self, run: &str) -> Result<Vec<u8>, AppError> {
        let Some(output) = self.output(run).await? else {
            return Err(AppError::not_found("The run's executed notebook"));
        };
        let page = page_key(run, &output)?;
        if let Some(html) = self.read_if_there(&page).await? {
            return Ok(html);
        }
        let html = self.renderer.html(&output).await?;
        // Kept only while it is still the output's page (the replica may
        // have sent a newer one meanwhile, whose upload removed this key).
        let now = self.output(run).await?;
        if now.as_deref() == Some(output.as_slice()) {
            if let Err(err) = self.objects.put_bytes(&page, html.clone()).await {
                tracing::warn!(error = %err, "keeping a notebook run's page");
            }
        }
        Ok(html)
    }

    async fn input_html(&self, run: &str) -> Result<Vec<u8>, AppError> {
        let input = self.input(run).await?;
        // The input never changes: its page is kept by its hash like the
        // output's, and removed with the run.
        let page = page_key(run, &input)?;
        if let Some(html) = self.read_if_there(&page).await? {
            return Ok(html);
        }
        let html = self.renderer.html(&input).await?;
        if let Err(err) = self.objects.put_bytes(&page, html.clone()).await {
            tracing::warn!(error = %err, "keeping a notebook's page");
        }
        Ok(html)
    }

    async fn forget(&self, run: &str) -> Result<(), AppError> {
        let mut keys = vec![key(run, "input.ipynb")?, key(run, "output.ipynb")?];
        if let Ok(input) = self.input(run).await {
            keys.push(page_key(run, &input)?);
        }
        if let Some(output) = self.output(run).await? {
            keys.push(page_key(run, &output)?);
        }
        self.objects.delete(keys).await
    }
}
