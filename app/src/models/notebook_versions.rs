//! Versions of the notebook files in a notebook's workspace: each save the
//! console's proxy sees, each checkpoint, a snapshot when the notebook
//! stops and each restore keep the file as it was, in the console's object
//! store. A history per file, any version rendered, two compared cell by
//! cell ([`super::notebook_diff`]), one put back.

use serde::{Deserialize, Serialize};

use crate::error::AppError;

/// How many versions of one file are kept: the oldest go first.
pub const VERSIONS_KEPT: usize = 200;

/// The largest notebook file the console keeps versions of, bytes.
pub const MAX_VERSION_BYTES: usize = 64 * 1024 * 1024;

/// What made a version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum VersionReason {
    /// A save (JupyterLab's autosave or a user's).
    Save,
    /// A checkpoint ("Save and create checkpoint", Ctrl+S in JupyterLab).
    Checkpoint,
    /// The notebook stopped: its files as they were then.
    Stop,
    /// An older version put back.
    Restore,
}

impl VersionReason {
    /// As stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Save => "save",
            Self::Checkpoint => "checkpoint",
            Self::Stop => "stop",
            Self::Restore => "restore",
        }
    }

    /// From [`Self::as_str`].
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "save" => Self::Save,
            "checkpoint" => Self::Checkpoint,
            "stop" => Self::Stop,
            "restore" => Self::Restore,
            _ => return None,
        })
    }

    /// In words, for a history's row.
    pub fn label(self) -> &'static str {
        match self {
            Self::Save => "Saved",
            Self::Checkpoint => "Checkpoint",
            Self::Stop => "At stop",
            Self::Restore => "Restored",
        }
    }
}

/// One kept version of one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct NotebookVersion {
    /// Its id (within the console).
    pub id: i64,
    /// The file's path in the workspace, e.g. `experiments/mnist.ipynb`.
    pub path: String,
    /// When, ms since the epoch.
    pub at: i64,
    /// Who saved, stopped or restored (an address; "idle culling" and the
    /// like when the console did).
    pub author: String,
    /// What made it.
    pub reason: VersionReason,
    /// The file's size, bytes.
    pub bytes: u64,
    /// Its cells.
    pub cells: u32,
    /// SHA-256 of the content, hex: equal contents, equal hashes.
    pub sha256: String,
    /// For a restore: the version it put back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restored_from: Option<i64>,
}

/// A file that has versions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct VersionedFile {
    /// Its path in the workspace.
    pub path: String,
    /// How many versions are kept.
    pub versions: u32,
    /// The newest one.
    pub latest: NotebookVersion,
}

/// A notebook's files that have versions, and the versions of one of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct NotebookHistory {
    /// The notebook.
    pub notebook: String,
    /// Its files with versions, the latest changed first.
    pub files: Vec<VersionedFile>,
    /// The file whose versions follow (`None`: none asked for).
    pub path: Option<String>,
    /// That file's versions, newest first.
    pub versions: Vec<NotebookVersion>,
}

/// A notebook file as one save carried it: its JSON, in the bytes the
/// console keeps and hashes (key order and spacing made canonical, so the
/// same notebook read back from the server hashes the same).
#[derive(Debug, Clone)]
pub struct NotebookContent {
    /// The canonical bytes.
    pub bytes: Vec<u8>,
    /// Its cells.
    pub cells: u32,
}

impl NotebookContent {
    /// From a notebook's JSON (a contents API model's `content`, or a
    /// file's text parsed). Not a notebook (no `cells` list): an error.
    pub fn from_json(notebook: &serde_json::Value) -> Result<Self, AppError> {
        let cells = notebook
            .get("cells")
            .and_then(|c| c.as_array())
            .ok_or_else(|| {
                AppError::invalid("content", "This is not a notebook: it has no cells.")
            })?
            .len();
        let bytes = serde_json::to_vec_pretty(notebook).map_err(|_| AppError::Internal)?;
        Ok(Self {
            bytes,
            cells: u32::try_from(cells).unwrap_or(u32::MAX),
        })
    }

    /// From a file's bytes.
    pub fn parse(bytes: &[u8]) -> Result<Self, AppError> {
        let value: serde_json::Value = serde_json::from_slice(bytes)
            .map_err(|e| AppError::invalid("content", format!("This is not a notebook: {e}")))?;
        Self::from_json(&value)
    }
}

/// Whether `path` names a notebook file the console keeps versions of: a
/// relative `.ipynb` path, with no hidden folder (`.ipynb_checkpoints`,
/// `.git`), no `..` and no empty part.
pub fn is_versioned_path(path: &str) -> bool {
    path.ends_with(".ipynb")
        && path.len() <= 1024
        && !path.starts_with('/')
        && path
            .split('/')
            .all(|part| !part.is_empty() && !part.starts_with('.') && part != "..")
}

/// [`is_versioned_path`] as the REST schema's pattern says it (the length
/// aside): a test holds the two together.
pub const VERSIONED_PATH_PATTERN: &str = r"^([^/.][^/]*/)*[^/.][^/]*\.ipynb$";

/// [`is_versioned_path`], as the error a bad `path` parameter gets.
pub fn check_versioned_path(path: &str) -> Result<(), AppError> {
    if is_versioned_path(path) {
        Ok(())
    } else {
        Err(AppError::invalid(
            "path",
            format!("“{path}” is not a notebook file of the workspace (a relative path ending .ipynb, with no hidden folder)."),
        ))
    }
}

/// The console's page of a notebook's history, at `path` (and `version`).
pub fn history_href(notebook: &str, path: Option<&str>, version: Option<i64>) -> String {
    let mut query = form_urlencoded_pairs(&[
        ("path", path.map(str::to_owned)),
        ("version", version.map(|v| v.to_string())),
    ]);
    if !query.is_empty() {
        query.insert(0, '?');
    }
    format!("/notebooks/{notebook}/history{query}")
}

/// The console's page comparing versions `from` and `to`.
pub fn diff_href(notebook: &str, from: i64, to: i64) -> String {
    format!("/notebooks/{notebook}/diff?from={from}&to={to}")
}

fn form_urlencoded_pairs(pairs: &[(&str, Option<String>)]) -> String {
    pairs
        .iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k}={}", super::url::encode(v))))
        .collect::<Vec<_>>()
        .join("&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_relative_visible_ipynb_paths_are_versioned() {
        assert!(is_versioned_path("mnist.ipynb"));
        assert!(is_versioned_path("work/mnist v2.ipynb"));
        assert!(!is_versioned_path("notes.txt"));
        assert!(!is_versioned_path(
            ".ipynb_checkpoints/mnist-checkpoint.ipynb"
        ));
        assert!(!is_versioned_path("a/../b.ipynb"));
        assert!(!is_versioned_path("/etc/x.ipynb"));
        assert!(!is_versioned_path("a//b.ipynb"));
        assert!(check_versioned_path("x.py").is_err());
    }

    #[cfg(feature = "ssr")]
    #[test]
    fn the_schemas_path_pattern_takes_what_the_server_takes() {
        let pattern = regex::Regex::new(VERSIONED_PATH_PATTERN).unwrap();
        for path in [
            "mnist.ipynb",
            "work/mnist v2.ipynb",
            "a/b/c.ipynb",
            "notes.txt",
            ".ipynb_checkpoints/m-checkpoint.ipynb",
            "a/../b.ipynb",
            "/etc/x.ipynb",
            "a//b.ipynb",
            ".ipynb",
            "a/.ipynb",
            "000000",
        ] {
            assert_eq!(pattern.is_match(path), is_versioned_path(path), "{path}");
        }
    }

    #[test]
    fn the_same_notebook_hashes_the_same_however_its_keys_were_ordered() {
        let a: serde_json::Value =
            serde_json::from_str(r#"{"cells":[],"metadata":{"b":1,"a":2},"nbformat":4}"#).unwrap();
        let b: serde_json::Value =
            serde_json::from_str(r#"{"nbformat":4,"metadata":{"a":2,"b":1},"cells":[]}"#).unwrap();
        assert_eq!(
            NotebookContent::from_json(&a).unwrap().bytes,
            NotebookContent::from_json(&b).unwrap().bytes
        );
        assert!(NotebookContent::parse(b"{\"nbformat\":4}").is_err());
        assert!(NotebookContent::parse(b"not json").is_err());
    }

    #[test]
    fn a_history_link_carries_the_path_encoded() {
        assert_eq!(
            history_href("lab", Some("a b/c.ipynb"), Some(3)),
            "/notebooks/lab/history?path=a%20b%2Fc.ipynb&version=3"
        );
        assert_eq!(history_href("lab", None, None), "/notebooks/lab/history");
    }
}
