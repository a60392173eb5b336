//! A notebook version as a web page: nbconvert's HTML (the `lab` template,
//! its scripts taken out), made on the console's machine
//! by the JupyterLab the console runs notebooks with, or by its own build
//! of it (built once, from PyPI, as notebooks' is) when notebooks run
//! elsewhere. Nothing in the notebook runs: nbconvert only reads it.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use app::error::AppError;
use tokio::io::AsyncWriteExt;

use crate::local::venvs::Venvs;
use crate::local::workload_host::ServerPython;

/// How long a build may be waited for within one request.
const BUILD_WAIT: Duration = Duration::from_secs(20);
/// How long nbconvert may take.
const CONVERT_LIMIT: Duration = Duration::from_secs(120);

/// Turns notebooks into HTML.
#[derive(Clone)]
pub struct Renderer {
    python: ServerPython,
    venvs: Arc<Venvs>,
}

impl Renderer {
    /// With `python` (one that has nbconvert, as JupyterLab's does), built
    /// in `venvs` when it is the console's build.
    pub fn new(python: ServerPython, venvs: Arc<Venvs>) -> Self {
        Self { python, venvs }
    }

    async fn python(&self) -> Result<String, AppError> {
        let (what, requirements) = match &self.python {
            ServerPython::Given(python) => return Ok(python.clone()),
            ServerPython::Built { what, requirements } => (what, requirements),
        };
        match tokio::time::timeout(BUILD_WAIT, self.venvs.ready(requirements)).await {
            Ok(Ok(venv)) => Ok(venv.join("bin").join("python").display().to_string()),
            Ok(Err(why)) => Err(AppError::Unavailable {
                message: format!("{what} (for nbconvert) could not be built on this machine: {why}"),
            }),
            // The build goes on without this request.
            Err(_) => Err(AppError::Unavailable {
                message: format!(
                    "Preparing {what} (for nbconvert, built once on this machine from PyPI) to show this version; try again in a minute."
                ),
            }),
        }
    }

    /// `notebook` (a file's bytes) as a standalone HTML page.
    pub async fn html(&self, notebook: &[u8]) -> Result<Vec<u8>, AppError> {
        let python = self.python().await?;
        let mut child = tokio::process::Command::new(&python)
            .args([
                "-m",
                "nbconvert",
                "--to",
                "html",
                "--stdin",
                "--stdout",
                "--log-level=ERROR",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|err| {
                tracing::error!(error = %err, python = %python, "starting nbconvert");
                AppError::Unavailable {
                    message: format!("nbconvert could not be started ({python}: {err})."),
                }
            })?;
        let mut stdin = child.stdin.take().ok_or(AppError::Internal)?;
        let input = notebook.to_vec();
        let writing = tokio::spawn(async move {
            let _ = stdin.write_all(&input).await;
        });
        let out = tokio::time::timeout(CONVERT_LIMIT, child.wait_with_output())
            .await
            .map_err(|_| AppError::Unavailable {
                message: format!(
                    "nbconvert took over {} s on this version.",
                    CONVERT_LIMIT.as_secs()
                ),
            })?
            .map_err(|err| {
                tracing::error!(error = %err, "running nbconvert");
                AppError::Internal
            })?;
        let _ = writing.await;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let why = stderr
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("it failed");
            return Err(AppError::invalid(
                "version",
                format!("This version could not be rendered: {why}"),
            ));
        }
        Ok(strip_scripts(&String::from_utf8_lossy(&out.stdout)).into_bytes())
    }
}

/// `page` without its `<script>` elements, the template's (require.js,
/// MathJax, widget state) and any in the notebook's HTML outputs: none
/// could run where the page is served (`sandbox` with no scripts, nothing
/// loaded from elsewhere: that, not this, is what keeps a notebook's HTML
/// harmless), and a browser would only log each one it blocked.
/// (nbconvert's own `sanitize_html` is not used: it escapes Markdown's
/// headings into text.)
fn strip_scripts(page: &str) -> String {
    let lower = page.to_ascii_lowercase();
    let mut out = String::with_capacity(page.len());
    let mut at = 0;
    while let Some(start) = lower[at..].find("<script").map(|i| at + i) {
        out.push_str(&page[at..start]);
        at = match lower[start..].find("</script>") {
            Some(end) => start + end + "</script>".len(),
            None => page.len(),
        };
    }
    out.push_str(&page[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pages_scripts_are_taken_out_and_the_rest_kept() {
        let page = "<head><SCRIPT src=\"x.js\"></script><style>p{}</style></head>\
                    <body><h1>Sweep</h1><script>\nvar a = '<b>';\n</script><p>lr</p></body>";
        assert_eq!(
            strip_scripts(page),
            "<head><style>p{}</style></head><body><h1>Sweep</h1><p>lr</p></body>"
        );
        assert_eq!(strip_scripts("<p>a</p><script>cut off"), "<p>a</p>");
    }
}
