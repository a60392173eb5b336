//! What the dataset, model and share-link pages show: one folder of an asset
//! and the preview of one file.

use serde::{Deserialize, Serialize};

use super::assets::{Asset, AssetKind, AssetRef, FileEntry, ModelVersion, Share};
use super::url::encode;

/// One folder of a dataset or of a model version, as its page shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssetView {
    /// The asset.
    pub asset: Asset,
    /// A model's versions, newest first (empty for a dataset).
    pub versions: Vec<ModelVersion>,
    /// The version shown (a model's `?version=`, else its newest).
    pub version: Option<u32>,
    /// The folder shown, normalised (`""`: the root).
    pub dir: String,
    /// Its files and subfolders, folders first.
    pub entries: Vec<FileEntry>,
    /// Its shares, for the owner; `None` for everyone else.
    pub shares: Option<Vec<Share>>,
    /// A model's aliases, by name (empty for a dataset).
    #[serde(default)]
    pub aliases: Vec<crate::models::ModelAlias>,
    /// What happened to them, newest first.
    #[serde(default)]
    pub alias_history: Vec<crate::models::AliasChange>,
}

/// Where an asset's files are fetched from: its own REST routes, or a share
/// link's (which work signed out).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum FileBase {
    /// `/api/v1/{kind}/{owner}/{name}`.
    Asset {
        /// Dataset or model.
        kind: AssetKind,
        /// Owning account.
        owner: String,
        /// Its name.
        name: String,
    },
    /// `/api/v1/shared/{token}`.
    Link(String),
}

impl FileBase {
    fn root(&self) -> String {
        match self {
            FileBase::Asset { kind, owner, name } => {
                format!("/api/v1/{}/{owner}/{name}", kind.plural())
            }
            FileBase::Link(token) => format!("/api/v1/shared/{token}"),
        }
    }

    /// The download URL of the file at `path` (a model's `version`).
    pub fn file_url(&self, path: &str, version: Option<u32>) -> String {
        let encoded: Vec<String> = path.split('/').map(encode).collect();
        format!(
            "{}/files/{}{}",
            self.root(),
            encoded.join("/"),
            version_query(version)
        )
    }

    /// The URL of the whole dataset or version as a zip.
    pub fn archive_url(&self, version: Option<u32>) -> String {
        format!("{}/archive.zip{}", self.root(), version_query(version))
    }
}

fn version_query(version: Option<u32>) -> String {
    version.map(|v| format!("?version={v}")).unwrap_or_default()
}

/// How a page reaches an asset: as a signed-in user by owner and name, or
/// through a share link (which needs no sign-in).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AssetSource {
    /// The asset, reached as a user.
    #[serde(default)]
    pub asset: Option<AssetRef>,
    /// A share link's token (then `asset` is not used).
    #[serde(default)]
    pub token: Option<String>,
}

impl AssetSource {
    /// Where the asset's files download from.
    pub fn files(&self) -> FileBase {
        match (&self.token, &self.asset) {
            (Some(token), _) => FileBase::Link(token.clone()),
            (None, Some(r)) => FileBase::Asset {
                kind: r.kind,
                owner: r.owner.clone(),
                name: r.name.clone(),
            },
            (None, None) => FileBase::Link(String::new()),
        }
    }

    /// The page's own path, which its links keep.
    pub fn page_path(&self) -> String {
        match (&self.token, &self.asset) {
            (Some(token), _) => format!("/shared/{token}"),
            (None, Some(r)) => r.href(),
            (None, None) => "/".to_owned(),
        }
    }
}

/// Which change an owner makes to an asset (see [`AssetChange`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AssetOp {
    /// New description and tags.
    Update,
    /// Delete the asset.
    Delete,
    /// Delete the file or folder at `path`.
    DeletePath,
    /// Share read-only with `account`.
    ShareWith,
    /// Make a share link, expiring in `expires_in_days` (empty: never).
    CreateLink,
    /// Revoke share `share`.
    Revoke,
    /// Publish (`public` = `true`) or stop.
    SetPublic,
    /// Start a model version with `description` and `tags`.
    CreateVersion,
    /// Mark model version `version` complete.
    FinishVersion,
    /// Replace the tags of model version `version`.
    TagVersion,
    /// Point `alias` at model version `version` (`protected`: `true`,
    /// `false`, or empty to keep it as it was).
    SetAlias,
    /// Delete `alias`.
    DeleteAlias,
}

impl AssetOp {
    /// Its form value.
    pub fn as_str(self) -> &'static str {
        match self {
            AssetOp::Update => "update",
            AssetOp::Delete => "delete",
            AssetOp::DeletePath => "delete_path",
            AssetOp::ShareWith => "share_with",
            AssetOp::CreateLink => "create_link",
            AssetOp::Revoke => "revoke",
            AssetOp::SetPublic => "set_public",
            AssetOp::CreateVersion => "create_version",
            AssetOp::FinishVersion => "finish_version",
            AssetOp::TagVersion => "tag_version",
            AssetOp::SetAlias => "set_alias",
            AssetOp::DeleteAlias => "delete_alias",
        }
    }
}

/// One change to an asset as its page's forms post it: every field a
/// string, as forms send them, used by the `op` that needs it. (One server
/// function for every owner action keeps the page's browser code small.)
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssetChange {
    /// What to do.
    pub op: AssetOp,
    /// Description (update, create version).
    #[serde(default)]
    pub description: String,
    /// Comma-separated tags (update, create version, tag version).
    #[serde(default)]
    pub tags: String,
    /// Account to share with.
    #[serde(default)]
    pub account: String,
    /// Days until a link expires; empty for never.
    #[serde(default)]
    pub expires_in_days: String,
    /// The share to revoke.
    #[serde(default)]
    pub share: String,
    /// `true` to publish.
    #[serde(default)]
    pub public: String,
    /// The file or folder to delete.
    #[serde(default)]
    pub path: String,
    /// The model version at hand.
    #[serde(default)]
    pub version: String,
    /// The model alias at hand.
    #[serde(default)]
    pub alias: String,
    /// `true` or `false` to protect an alias or stop; empty: as it was.
    #[serde(default)]
    pub protected: String,
}

impl AssetChange {
    /// A change with only its op set.
    pub fn new(op: AssetOp) -> Self {
        Self {
            op,
            description: String::new(),
            tags: String::new(),
            account: String::new(),
            expires_in_days: String::new(),
            share: String::new(),
            public: String::new(),
            path: String::new(),
            version: String::new(),
            alias: String::new(),
            protected: String::new(),
        }
    }

    /// `protected` as the alias form takes it.
    pub fn protection(&self) -> Option<bool> {
        match self.protected.trim() {
            "true" | "on" => Some(true),
            "false" | "off" => Some(false),
            _ => None,
        }
    }

    /// `version` as a number.
    pub fn version_number(&self) -> Result<Option<u32>, crate::error::AppError> {
        match self.version.trim() {
            "" => Ok(None),
            v => v
                .parse()
                .map(Some)
                .map_err(|_| crate::error::AppError::invalid("version", "A version is a number.")),
        }
    }
}

/// What a file's preview shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum PreviewBody {
    /// The head of a text file.
    Text(String),
    /// The head of a CSV/TSV file: a header row and the rows that follow.
    Table {
        /// The first row.
        header: Vec<String>,
        /// The next rows (at most 50).
        rows: Vec<Vec<String>>,
    },
    /// A JSON file, indented (when the whole file fit in the preview).
    Json(String),
    /// An image the browser draws from the download URL.
    Image,
    /// Not something to show; download it instead.
    Binary,
}

/// The preview of one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Preview {
    /// The file.
    pub entry: FileEntry,
    /// What to show.
    pub body: PreviewBody,
    /// Whether only the head of the file is shown.
    pub truncated: bool,
}

/// Rows of a table preview.
pub const PREVIEW_ROWS: usize = 50;

/// What to preview for a file, from its name and the first bytes of it.
pub fn preview_of(entry: FileEntry, head: &[u8]) -> Preview {
    let truncated = (head.len() as u64) < entry.size;
    let lower = entry.path.to_ascii_lowercase();
    let ext = lower.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    let body = if matches!(ext, "png" | "jpg" | "jpeg" | "gif" | "webp" | "svg" | "bmp") {
        PreviewBody::Image
    } else {
        match text_head(head, truncated) {
            None => PreviewBody::Binary,
            Some(text) => match ext {
                "csv" | "tsv" => {
                    let sep = if ext == "tsv" { '\t' } else { ',' };
                    let mut lines = text.lines().map(|l| split_csv_line(l, sep));
                    let header = lines.next().unwrap_or_default();
                    let rows = lines.take(PREVIEW_ROWS).collect();
                    PreviewBody::Table { header, rows }
                }
                "json" if !truncated => match serde_json::from_str::<serde_json::Value>(&text) {
                    Ok(v) => PreviewBody::Json(serde_json::to_string_pretty(&v).unwrap_or(text)),
                    Err(_) => PreviewBody::Text(text),
                },
                _ => PreviewBody::Text(text),
            },
        }
    };
    Preview {
        entry,
        body,
        truncated,
    }
}

/// The head as text, if it is text: valid UTF-8 (a character cut at the end
/// of a truncated head is dropped) without NUL bytes.
fn text_head(head: &[u8], truncated: bool) -> Option<String> {
    if head.contains(&0) {
        return None;
    }
    match std::str::from_utf8(head) {
        Ok(s) => Some(s.to_owned()),
        Err(e) if truncated && e.error_len().is_none() => {
            Some(String::from_utf8_lossy(&head[..e.valid_up_to()]).into_owned())
        }
        Err(_) => None,
    }
}

/// One CSV line's fields: quoted fields may hold the separator and `""`.
/// (A quoted field spanning lines shows split; it is a preview.)
fn split_csv_line(line: &str, sep: char) -> Vec<String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.trim_end_matches('\r').chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            c if c == sep && !quoted => fields.push(std::mem::take(&mut field)),
            c => field.push(c),
        }
    }
    fields.push(field);
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: &str, size: u64) -> FileEntry {
        FileEntry {
            path: path.into(),
            dir: false,
            size,
            modified: 0,
            files: 0,
        }
    }

    #[test]
    fn a_csv_head_previews_as_a_table_with_quoted_fields() {
        let csv = b"id,text\n1,\"a, b\"\n2,\"say \"\"hi\"\"\"\n";
        let p = preview_of(entry("d/x.csv", csv.len() as u64), csv);
        assert!(!p.truncated);
        assert_eq!(
            p.body,
            PreviewBody::Table {
                header: vec!["id".into(), "text".into()],
                rows: vec![
                    vec!["1".into(), "a, b".into()],
                    vec!["2".into(), "say \"hi\"".into()]
                ],
            }
        );
    }

    #[test]
    fn json_is_indented_text_cut_midway_stays_text_and_binary_is_not_shown() {
        let p = preview_of(entry("c.json", 13), br#"{"a":[1,2,3]}"#);
        assert_eq!(
            p.body,
            PreviewBody::Json("{\n  \"a\": [\n    1,\n    2,\n    3\n  ]\n}".into())
        );
        let p = preview_of(entry("c.json", 1000), br#"{"a":[1,2"#);
        assert!(p.truncated);
        assert_eq!(p.body, PreviewBody::Text(r#"{"a":[1,2"#.into()));
        // "é" cut in half at the end of a truncated head.
        let p = preview_of(entry("r.txt", 10), b"caf\xc3");
        assert_eq!(p.body, PreviewBody::Text("caf".into()));
        let p = preview_of(entry("m.bin", 4), b"\x00\x01\x02\x03");
        assert_eq!(p.body, PreviewBody::Binary);
        assert_eq!(
            preview_of(entry("a/Cat.PNG", 4), b"\x89PNG").body,
            PreviewBody::Image
        );
    }

    #[test]
    fn every_op_posts_as_the_name_serde_reads() {
        for op in [
            AssetOp::Update,
            AssetOp::Delete,
            AssetOp::DeletePath,
            AssetOp::ShareWith,
            AssetOp::CreateLink,
            AssetOp::Revoke,
            AssetOp::SetPublic,
            AssetOp::CreateVersion,
            AssetOp::FinishVersion,
            AssetOp::TagVersion,
        ] {
            assert_eq!(serde_json::to_value(op).unwrap(), op.as_str());
        }
    }

    #[test]
    fn file_urls_encode_each_segment_but_keep_slashes() {
        let base = FileBase::Asset {
            kind: AssetKind::Dataset,
            owner: "vision".into(),
            name: "mnist".into(),
        };
        assert_eq!(
            base.file_url("train set/a#1.txt", None),
            "/api/v1/datasets/vision/mnist/files/train%20set/a%231.txt"
        );
        assert_eq!(
            FileBase::Link("pcs_x".into()).archive_url(Some(2)),
            "/api/v1/shared/pcs_x/archive.zip?version=2"
        );
    }
}
