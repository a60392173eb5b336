//! A notebook server's files, through Jupyter's contents API
//! (`<base>/api/contents/<path>`), as the console reads and writes them for
//! versions: the same on every backend, since the proxy's route reaches a
//! local process and a pod alike.

use std::time::Duration;

use app::models::{is_versioned_path, url::encode};
use serde_json::{json, Value};

use super::Route;
use crate::backend::lab_client;

/// How long one request to the server may take.
const LIMIT: Duration = Duration::from_secs(30);
/// How many notebook files a walk of the workspace looks at, at most.
const MAX_FILES: usize = 500;
/// How deep a walk goes.
const MAX_DEPTH: usize = 8;

/// One notebook server's files.
pub struct Contents<'a> {
    route: &'a Route,
    /// `<upstream><base path>api/contents`.
    api: String,
}

/// `a b/c.ipynb` → `a%20b/c.ipynb`: each part encoded, the slashes kept.
fn encode_path(path: &str) -> String {
    path.split('/').map(encode).collect::<Vec<_>>().join("/")
}

impl<'a> Contents<'a> {
    /// The files of the server `route` reaches, which runs under `base_path`
    /// (`/notebooks/<account>/<name>/`).
    pub fn new(route: &'a Route, base_path: &str) -> Self {
        Self {
            api: format!("{}{base_path}api/contents", route.upstream),
            route,
        }
    }

    async fn call(
        &self,
        method: http::Method,
        path: &str,
        query: &str,
        body: Option<Vec<u8>>,
    ) -> Result<Value, String> {
        let url = format!("{}/{}{query}", self.api, encode_path(path));
        let (status, body) = lab_client::send(
            &self.route.client,
            method,
            &url,
            &self.route.jupyter_token,
            body,
            LIMIT,
        )
        .await?;
        if !(200..300).contains(&status) {
            let why = serde_json::from_slice::<Value>(&body)
                .ok()
                .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_owned))
                .unwrap_or_else(|| String::from_utf8_lossy(&body).chars().take(200).collect());
            return Err(format!("the notebook's server answered {status}: {why}"));
        }
        serde_json::from_slice(&body).map_err(|e| format!("the notebook's server sent {e}"))
    }

    /// The notebook at `path`, its JSON.
    pub async fn read_notebook(&self, path: &str) -> Result<Value, String> {
        let mut model = self
            .call(http::Method::GET, path, "?type=notebook&content=1", None)
            .await?;
        match model.get_mut("content").map(Value::take) {
            Some(content @ Value::Object(_)) => Ok(content),
            _ => Err(format!("{path} is not a notebook")),
        }
    }

    /// Writes `notebook` (its JSON) at `path`, as a save from JupyterLab does.
    pub async fn write_notebook(&self, path: &str, notebook: &Value) -> Result<(), String> {
        let body = json!({"type": "notebook", "format": "json", "content": notebook});
        let body = serde_json::to_vec(&body).map_err(|e| e.to_string())?;
        self.call(http::Method::PUT, path, "", Some(body)).await?;
        Ok(())
    }

    /// The names of what folder `dir` holds (`""`: the workspace's top).
    pub async fn names(&self, dir: &str) -> Result<Vec<String>, String> {
        let listing = self
            .call(http::Method::GET, dir, "?content=1", None)
            .await?;
        Ok(listing
            .get("content")
            .and_then(Value::as_array)
            .map(|entries| {
                entries
                    .iter()
                    .filter_map(|e| e.get("name").and_then(Value::as_str).map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default())
    }

    /// The paths of the workspace's notebook files (hidden folders left
    /// out), at most [`MAX_FILES`], at most [`MAX_DEPTH`] folders deep.
    pub async fn notebook_paths(&self) -> Result<Vec<String>, String> {
        let mut found = Vec::new();
        let mut folders = vec![(String::new(), 0usize)];
        while let Some((folder, depth)) = folders.pop() {
            let listing = self
                .call(http::Method::GET, &folder, "?content=1", None)
                .await?;
            let entries = listing
                .get("content")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for entry in entries {
                let text = |k: &str| entry.get(k).and_then(Value::as_str).unwrap_or("");
                let (kind, path, name) = (text("type"), text("path"), text("name"));
                if name.starts_with('.') {
                    continue;
                }
                match kind {
                    "notebook" if is_versioned_path(path) => found.push(path.to_owned()),
                    "directory" if depth + 1 < MAX_DEPTH => {
                        folders.push((path.to_owned(), depth + 1))
                    }
                    _ => {}
                }
                if found.len() >= MAX_FILES {
                    return Ok(found);
                }
            }
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_encoded_part_by_part() {
        assert_eq!(encode_path("a b/c&d.ipynb"), "a%20b/c%26d.ipynb");
        assert_eq!(encode_path(""), "");
    }
}
