//! Datasets and models: named collections of files that an account owns
//! and may share (with another account, by a link, or with everyone). A
//! dataset is one folder of files; a model is a name with numbered versions,
//! each a folder of artifact files.

use serde::{Deserialize, Serialize};

use crate::error::AppError;

/// Longest asset name.
pub const MAX_ASSET_NAME_LEN: usize = 64;
/// Longest file path inside an asset, bytes.
pub const MAX_PATH_LEN: usize = 1024;
/// Bytes of a text file the preview shows.
pub const PREVIEW_BYTES: usize = 64 * 1024;

/// Which kind of asset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum AssetKind {
    /// A folder of data files.
    Dataset,
    /// Versions of a trained model's files.
    Model,
}

impl AssetKind {
    /// Stored and URL form (`datasets`, `models` in paths).
    pub fn as_str(self) -> &'static str {
        match self {
            AssetKind::Dataset => "dataset",
            AssetKind::Model => "model",
        }
    }

    /// The path segment of its pages and routes.
    pub fn plural(self) -> &'static str {
        match self {
            AssetKind::Dataset => "datasets",
            AssetKind::Model => "models",
        }
    }

    /// Reads the stored form back.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "dataset" => Some(AssetKind::Dataset),
            "model" => Some(AssetKind::Model),
            _ => None,
        }
    }

    /// What a user calls one.
    pub fn label(self) -> &'static str {
        match self {
            AssetKind::Dataset => "Dataset",
            AssetKind::Model => "Model",
        }
    }
}

/// An asset by owner and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AssetRef {
    /// Dataset or model.
    pub kind: AssetKind,
    /// The owning account's name.
    pub owner: String,
    /// The asset's name, unique per owner and kind.
    pub name: String,
}

impl AssetRef {
    /// `/datasets/vision/mnist`.
    pub fn href(&self) -> String {
        format!("/{}/{}/{}", self.kind.plural(), self.owner, self.name)
    }
}

/// How the caller reaches an asset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum Access {
    /// Their account owns it: read, write, share.
    Owner,
    /// Its owner shared it with their account: read.
    Shared,
    /// Published for everyone: read.
    Public,
    /// Through a share link: read.
    Link,
}

impl Access {
    /// Whether this access may change the asset.
    pub fn can_write(self) -> bool {
        self == Access::Owner
    }
}

/// A dataset or model as lists and pages show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Asset {
    /// Dataset or model.
    pub kind: AssetKind,
    /// Owning account.
    pub owner: String,
    /// Its name.
    pub name: String,
    /// What it holds.
    pub description: String,
    /// Free tags, e.g. `images`, `nlp`.
    pub tags: Vec<String>,
    /// Readable by every account.
    pub public: bool,
    /// Unix ms.
    pub created_at: i64,
    /// Unix ms of the last change to its files.
    pub updated_at: i64,
    /// Number of files (all versions, for a model).
    pub files: u64,
    /// Their total size, bytes.
    pub bytes: u64,
    /// How the caller reaches it.
    pub access: Access,
}

impl Asset {
    /// Its reference.
    pub fn reference(&self) -> AssetRef {
        AssetRef {
            kind: self.kind,
            owner: self.owner.clone(),
            name: self.name.clone(),
        }
    }
}

/// One entry of a folder listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct FileEntry {
    /// Path from the asset's (or version's) root, `/`-separated.
    pub path: String,
    /// Whether it is a folder (then `size` is the sum of its files).
    pub dir: bool,
    /// Bytes.
    pub size: u64,
    /// Unix ms of its last write (for a folder, of its newest file).
    pub modified: i64,
    /// Files below it (1 for a file).
    pub files: u64,
}

impl FileEntry {
    /// The last path segment.
    pub fn name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or(&self.path)
    }
}

/// What creating or editing an asset takes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct AssetForm {
    /// Name (lower-case letters, digits, `-`, `_`, `.`).
    #[serde(default)]
    pub name: String,
    /// What it holds.
    #[serde(default)]
    pub description: String,
    /// Comma-separated tags.
    #[serde(default)]
    pub tags: String,
}

/// What `POST /api/v1/{kind}` and `PATCH /api/v1/{kind}/{owner}/{name}`
/// take: the form's fields with the tags as a list, as every response gives
/// them (the page's form types them comma-separated instead).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct AssetBody {
    /// Name (lower-case letters, digits, `-`, `_`, `.`).
    #[serde(default)]
    pub name: String,
    /// What it holds.
    #[serde(default)]
    pub description: String,
    /// Tags, e.g. `["images", "nlp"]`: kept lower-cased, each once.
    #[serde(default)]
    #[cfg_attr(feature = "ssr", schema(schema_with = tags_schema))]
    pub tags: Vec<String>,
}

/// What `POST /api/v1/{datasets|models}/{owner}/{name}/versions` takes;
/// tags as a list.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct VersionBody {
    /// What changed.
    #[serde(default)]
    pub description: String,
    /// Tags, e.g. `["candidate"]`; `production` and `candidate` move from
    /// other versions.
    #[serde(default)]
    #[cfg_attr(feature = "ssr", schema(schema_with = tags_schema))]
    pub tags: Vec<String>,
    /// The job that produced it.
    #[serde(default)]
    pub job: Option<String>,
    /// Datasets only: `false` (the default) saves the dataset's files as
    /// they are now as the new version, complete at once; `true` starts an
    /// empty one to upload into and finish, as a model's. A model's
    /// version always starts empty.
    #[serde(default)]
    pub empty: bool,
}

/// One tag as the API takes it: 1 to 40 characters, no comma, no control
/// character, not only spaces (what [`join_tags`] checks).
#[cfg(feature = "ssr")]
pub fn tags_schema() -> utoipa::openapi::schema::Array {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Type};
    let tag = ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some(
            r"^[^,\x00-\x1f\x7f-\x9f]*[^\s,\x00-\x1f\x7f-\x9f][^,\x00-\x1f\x7f-\x9f]*$",
        ))
        .max_length(Some(40));
    ArrayBuilder::new().items(tag).max_items(Some(20)).build()
}

/// A list of tags as the comma-separated text [`parse_tags`] reads, each
/// checked as the API documents it.
pub fn join_tags(tags: &[String]) -> Result<String, AppError> {
    if tags.len() > 20 {
        return Err(AppError::invalid("tags", "At most 20 tags."));
    }
    for (i, t) in tags.iter().enumerate() {
        if t.trim().is_empty()
            || t.contains(',')
            || t.chars().count() > 40
            || t.chars().any(char::is_control)
        {
            return Err(AppError::invalid(
                format!("tags[{i}]"),
                format!("“{t}” is not a tag: 1 to 40 characters, no commas."),
            ));
        }
    }
    Ok(tags.join(","))
}

/// Comma-separated tags as a list (what a client sends for a typed
/// `a, b`): trimmed, empty ones dropped.
pub fn tag_list(raw: &str) -> Vec<String> {
    raw.split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect()
}

impl AssetBody {
    /// The form the store takes, or the tag at fault.
    pub fn into_form(self) -> Result<AssetForm, AppError> {
        Ok(AssetForm {
            tags: join_tags(&self.tags)?,
            name: self.name,
            description: self.description,
        })
    }
}

impl VersionBody {
    /// The form the store takes, or the tag at fault.
    pub fn into_form(self) -> Result<VersionForm, AppError> {
        Ok(VersionForm {
            tags: join_tags(&self.tags)?,
            description: self.description,
            job: self.job,
            empty: self.empty,
        })
    }
}

/// A version of a model, or of a dataset: numbered files that never change
/// once complete.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ModelVersion {
    /// 1, 2, 3…
    pub version: u32,
    /// What changed.
    pub description: String,
    /// `production`, `candidate`, or any other.
    pub tags: Vec<String>,
    /// The job that produced it, if one did.
    pub job: Option<String>,
    /// Who registered it (email).
    pub created_by: String,
    /// Unix ms.
    pub created_at: i64,
    /// Files in it.
    pub files: u64,
    /// Their size, bytes.
    pub bytes: u64,
    /// `uploading` until its files are all in, then `ready`.
    pub state: String,
}

/// What registering a model or dataset version takes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct VersionForm {
    /// What changed.
    #[serde(default)]
    pub description: String,
    /// Comma-separated tags.
    #[serde(default)]
    pub tags: String,
    /// The job that produced it.
    #[serde(default)]
    pub job: Option<String>,
    /// Datasets only: start an empty version to upload into instead of
    /// saving the dataset's files as they are (see [`VersionBody::empty`]).
    #[serde(default)]
    pub empty: bool,
}

/// One way an asset is shared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Share {
    /// Id, to revoke it.
    pub id: i64,
    /// With an account (its name), or `None` for a link.
    pub account: Option<String>,
    /// A link's first characters, to tell links apart.
    pub link_prefix: Option<String>,
    /// When a link stops working, Unix ms.
    pub expires_at: Option<i64>,
    /// Who shared it.
    pub created_by: String,
    /// Unix ms.
    pub created_at: i64,
}

/// A share link just made: the only time its token is shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct NewLink {
    /// The share.
    pub share: Share,
    /// The path to open: `/shared/<token>`.
    pub path: String,
}

/// A model version as a job or a template names it: `name` (the caller's
/// account's), `owner/name`, either with `:version` or `@alias` (neither:
/// the newest ready one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelRef {
    /// The owning account (`None`: the caller's).
    pub owner: Option<String>,
    /// The model's name.
    pub name: String,
    /// A version (`None`: the alias's, or the newest ready one).
    pub version: Option<u32>,
    /// An alias naming the version (`production`), never beside `version`.
    pub alias: Option<String>,
}

impl ModelRef {
    /// Reads `[owner/]name[:version|@alias]`; `field` is what a bad one is
    /// reported against.
    pub fn parse(text: &str, field: &str) -> Result<Self, AppError> {
        let bad = || {
            AppError::invalid(
                field,
                format!(
                    "“{}” is not a model: write name or owner/name, either with :version or @alias.",
                    text.trim()
                ),
            )
        };
        let text = text.trim();
        let (path, alias) = match text.rsplit_once('@') {
            Some((path, alias)) => (
                path,
                Some(crate::models::validate_alias(alias).map_err(|_| bad())?),
            ),
            None => (text, None),
        };
        let (owner, name, version) =
            crate::models::environments::split_reference(path).ok_or_else(bad)?;
        if validate_asset_name(name).is_err()
            || owner.is_some_and(|o| crate::models::validate_account_name(o).is_err())
            || (alias.is_some() && version.is_some())
        {
            return Err(bad());
        }
        Ok(Self {
            owner: owner.map(str::to_owned),
            name: name.to_owned(),
            version,
            alias,
        })
    }

    /// The model it names, its owner defaulting to `account`.
    pub fn asset(&self, account: &str) -> AssetRef {
        AssetRef {
            kind: AssetKind::Model,
            owner: self.owner.clone().unwrap_or_else(|| account.to_owned()),
            name: self.name.clone(),
        }
    }
}

/// Trims and checks an asset name: 1–64 of `a-z 0-9 - _ .`, starting with a
/// letter or digit (it is part of object paths and URLs).
pub fn validate_asset_name(raw: &str) -> Result<String, AppError> {
    let name = raw.trim().to_owned();
    let ok_char = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_.".contains(c);
    if name.is_empty() {
        return Err(AppError::invalid(
            "name",
            "Give it a name, e.g. mnist-train.",
        ));
    }
    if name.len() > MAX_ASSET_NAME_LEN {
        return Err(AppError::invalid(
            "name",
            format!("A name is at most {MAX_ASSET_NAME_LEN} characters."),
        ));
    }
    if !name.chars().all(ok_char) || !name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return Err(AppError::invalid(
            "name",
            "Use lower-case letters, digits, '-', '_' and '.', starting with a letter or digit.",
        ));
    }
    Ok(name)
}

/// Splits comma-separated tags: trimmed, lower-cased, unique, at most 20 of
/// at most 40 characters each.
pub fn parse_tags(raw: &str) -> Result<Vec<String>, AppError> {
    let mut tags: Vec<String> = Vec::new();
    for t in raw
        .split(',')
        .map(|t| t.trim().to_lowercase())
        .filter(|t| !t.is_empty())
    {
        if t.chars().count() > 40 || t.chars().any(char::is_control) {
            return Err(AppError::invalid(
                "tags",
                format!("“{t}” is not a tag: at most 40 characters."),
            ));
        }
        if !tags.contains(&t) {
            tags.push(t);
        }
    }
    if tags.len() > 20 {
        return Err(AppError::invalid("tags", "At most 20 tags."));
    }
    Ok(tags)
}

/// Characters that make a path look like something it is not: slash and
/// dot lookalikes, direction overrides, invisible joiners.
fn deceptive(c: char) -> bool {
    matches!(c,
        '\u{2215}' | '\u{2044}' | '\u{FF0F}' | '\u{29F8}' | '\u{FF3C}' | '\u{2216}' // slashes
        | '\u{2024}' | '\u{FF0E}' | '\u{2025}' | '\u{2026}'                           // dots
        | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' // bidi
        | '\u{200B}'..='\u{200D}' | '\u{2060}' | '\u{FEFF}' | '\u{00AD}'             // invisible
    )
}

/// Checks a file path inside an asset and returns it normalised (`a/b.txt`):
/// relative, no `.` or `..` segments, no empty segments, no backslashes,
/// control characters or deceptive Unicode, at most 1,024 bytes.
pub fn validate_path(raw: &str) -> Result<String, AppError> {
    let bad = |why: &str| AppError::invalid("path", format!("“{raw}” is not a file path: {why}."));
    if raw.is_empty() {
        return Err(bad("it is empty"));
    }
    if raw.len() > MAX_PATH_LEN {
        return Err(bad("it is longer than 1,024 bytes"));
    }
    if raw.starts_with('/') {
        return Err(bad("it must be relative to the dataset, not start with /"));
    }
    if raw.contains('\\') {
        return Err(bad("use / between folders, not \\"));
    }
    if raw.chars().any(|c| c.is_control() || deceptive(c)) {
        return Err(bad("it contains control or look-alike characters"));
    }
    let segments: Vec<&str> = raw.trim_end_matches('/').split('/').collect();
    for s in &segments {
        if s.is_empty() || *s == "." || *s == ".." {
            return Err(bad("it has an empty, . or .. segment"));
        }
        if s.trim() != *s {
            return Err(bad("a name begins or ends with a space"));
        }
        if s.len() > 255 {
            return Err(bad("a name is longer than 255 bytes"));
        }
    }
    Ok(segments.join("/"))
}

/// A folder path (may be empty, the root), normalised.
pub fn validate_dir(raw: &str) -> Result<String, AppError> {
    let trimmed = raw.trim_matches('/');
    if trimmed.is_empty() {
        Ok(String::new())
    } else {
        validate_path(trimmed)
    }
}

/// Bytes as people read them: `512 B`, `1.5 MB`, `4.2 GB` (decimal units,
/// as file managers show sizes).
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "kB", "MB", "GB", "TB", "PB"];
    let mut unit = 0;
    let mut scaled = bytes;
    while scaled >= 1000 && unit + 1 < UNITS.len() {
        scaled /= 1000;
        unit += 1;
    }
    if unit == 0 {
        return format!("{bytes} B");
    }
    let div = 1000u64.pow(unit as u32);
    let tenths = (bytes * 10 + div / 2) / div;
    format!("{}.{} {}", tenths / 10, tenths % 10, UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_reference_reads_owner_name_and_version() {
        let r = ModelRef::parse(" vision/resnet-50:3 ", "models").unwrap();
        assert_eq!(r.owner.as_deref(), Some("vision"));
        assert_eq!(r.name, "resnet-50");
        assert_eq!(r.version, Some(3));
        let mine = ModelRef::parse("line", "models").unwrap();
        assert_eq!(mine.asset("ann").owner, "ann");
        assert_eq!(mine.version, None);
        let aliased = ModelRef::parse("vision/resnet-50@production", "models").unwrap();
        assert_eq!(
            (
                aliased.owner.as_deref(),
                aliased.name.as_str(),
                aliased.version,
                aliased.alias.as_deref()
            ),
            (Some("vision"), "resnet-50", None, Some("production"))
        );
        for bad in [
            "line@",
            "line@3",
            "line:2@production",
            "line@production:2",
            "@production",
            "",
            "line:0",
            "line:new",
            "/line",
            "a/b/c",
            "Line",
            "../etc",
            "vision/:2",
        ] {
            let err = ModelRef::parse(bad, "models").unwrap_err();
            assert!(
                matches!(&err, AppError::Invalid { field: Some(f), .. } if f == "models"),
                "{bad}: {err:?}"
            );
        }
    }

    #[test]
    fn traversal_and_deceptive_paths_are_refused() {
        assert_eq!(validate_path("a/b.txt").unwrap(), "a/b.txt");
        assert_eq!(
            validate_path("images/cat 1.png").unwrap(),
            "images/cat 1.png"
        );
        assert_eq!(validate_path("数据/训练.csv").unwrap(), "数据/训练.csv");
        for bad in [
            "",
            "/etc/passwd",
            "../secret",
            "a/../../b",
            "a/./b",
            "a//b",
            "a\\b",
            "a/\u{0}b",
            "a\u{2215}..\u{2215}b",
            "evil\u{202E}txt.exe",
            "\u{200B}.env",
            " lead",
            "x/trail /y",
        ] {
            assert_eq!(
                validate_path(bad).unwrap_err().field(),
                Some("path"),
                "{bad:?}"
            );
        }
        assert!(validate_path(&"a".repeat(1025)).is_err());
        assert_eq!(validate_dir("/a/b/").unwrap(), "a/b");
        assert_eq!(validate_dir("").unwrap(), "");
    }

    #[test]
    fn names_and_tags_follow_their_rules() {
        assert_eq!(validate_asset_name(" mnist-v2.1 ").unwrap(), "mnist-v2.1");
        for bad in ["", "Caps", "-lead", "a/b", "a b", &"x".repeat(65)] {
            assert!(validate_asset_name(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_tags(" Images, nlp ,images,").unwrap(),
            ["images", "nlp"]
        );
        let many: Vec<String> = (0..21).map(|i| format!("t{i}")).collect();
        assert!(parse_tags(&many.join(",")).is_err());
        assert!(parse_tags(&many[..20].join(",")).is_ok());
    }

    #[test]
    fn sizes_read_like_a_file_manager() {
        assert_eq!(format_bytes(512), "512 B");
        assert_eq!(format_bytes(1_500_000), "1.5 MB");
        assert_eq!(format_bytes(5_000_000_000), "5.0 GB");
    }
}
