//! Environment profiles (Submarine's design): a named, versioned Python
//! environment a job, a notebook or a serving instance runs in, chosen by
//! name instead of a bare image. Locally the console builds a virtualenv
//! from PyPI for each distinct list of requirements (built once, shared by
//! every version and account that lists the same); on Kubernetes the
//! environment's image runs, with the requirements installed at pod start.
//! Versions are immutable: saving again makes the next version, and a job
//! records the exact version it ran in.

use serde::{Deserialize, Serialize};

use crate::error::AppError;
use crate::models::names::validate_job_name;

/// Requirements an environment may list.
pub const MAX_REQUIREMENTS: usize = 100;
/// Characters a requirement line may have.
const MAX_REQUIREMENT_LEN: usize = 200;
/// Characters of setup notes.
const MAX_NOTES_LEN: usize = 4000;

/// What a user saves.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct EnvironmentSpec {
    /// The rules of job names; unique in the account (with its versions).
    #[cfg_attr(
        feature = "ssr",
        schema(pattern = r"^[a-z]([a-z0-9-]{0,48}[a-z0-9])?$")
    )]
    pub name: String,
    /// What it is for.
    #[serde(default)]
    pub description: String,
    /// The container image pods run on Kubernetes (empty: the job's own
    /// image). Not used by the local executor.
    #[serde(default)]
    pub image: String,
    /// pip requirement lines (`paddlepaddle==3.3.1`, `visualdl>=2.5`), from
    /// PyPI: a package name, then extras, versions or markers; no options,
    /// URLs, paths or control characters; spaces around are ignored. The
    /// console's Python SDK is always there besides.
    #[serde(default)]
    #[cfg_attr(
        feature = "ssr",
        schema(value_type = Vec<RequirementLine>, max_items = 100)
    )]
    pub requirements: Vec<String>,
    /// Anything else a user of it should know (system packages the image
    /// must have, say). Shown, never run.
    #[serde(default)]
    pub setup_notes: String,
}

/// One requirement line as the OpenAPI document states it: exactly what
/// [`EnvironmentSpec::validate`] takes (a package name, then nothing or
/// extras, a version or markers; no `@`, `/` or `\`, so no URL or path; no
/// control characters; spaces around; at most 200 characters). A line of
/// spaces alone is taken and dropped.
#[cfg(feature = "ssr")]
#[derive(utoipa::ToSchema)]
#[schema(
    pattern = r"^ *([A-Za-z0-9][A-Za-z0-9._-]*( *[\[=<>!~;(][^\x00-\x1f\x7f-\x9f@/\\]*)? *)?$",
    max_length = 200
)]
#[allow(dead_code)] // only its schema is used
pub struct RequirementLine(String);

/// How far the local build of an environment's requirements is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum BuildState {
    /// Not built on this console yet (it is built when first used).
    NotBuilt,
    /// pip is installing it now.
    Building,
    /// Jobs can run in it.
    Ready,
    /// The last build failed; its log says why. Saving a new version or
    /// running a job in it tries again.
    Failed,
}

impl BuildState {
    /// As the page shows it.
    pub fn label(self) -> &'static str {
        match self {
            Self::NotBuilt => "Not built yet",
            Self::Building => "Building",
            Self::Ready => "Ready",
            Self::Failed => "Build failed",
        }
    }

    /// Stored/CSS form.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotBuilt => "not_built",
            Self::Building => "building",
            Self::Ready => "ready",
            Self::Failed => "failed",
        }
    }
}

/// The local build of an environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct EnvironmentBuild {
    /// Where it is.
    pub state: BuildState,
    /// Why it failed, in a line (empty otherwise).
    #[serde(default)]
    pub message: String,
    /// The build's log so far (pip's output).
    #[serde(default)]
    pub log: String,
}

/// A saved version of an environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Environment {
    /// What was saved.
    #[serde(flatten)]
    pub spec: EnvironmentSpec,
    /// The account it belongs to.
    pub owner: String,
    /// 1, 2, …: each save of the name makes the next.
    pub version: u32,
    /// Published for every account (by a site admin).
    pub public: bool,
    /// Who saved this version.
    pub created_by: String,
    /// When (Unix ms).
    pub created_at: i64,
}

impl Environment {
    /// `owner/name:version`: how a job records it.
    pub fn pinned(&self) -> String {
        format!("{}/{}:{}", self.owner, self.spec.name, self.version)
    }

    /// What a job that runs in it records and its backend needs.
    pub fn to_use(&self) -> EnvironmentUse {
        EnvironmentUse {
            reference: self.pinned(),
            image: self.spec.image.clone(),
            requirements: self.spec.requirements.clone(),
        }
    }
}

/// An environment at one version with its local build: what its page and
/// `GET /api/v1/environments/<name>` show.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct EnvironmentDetail {
    /// The version.
    pub environment: Environment,
    /// Every version's number, newest first.
    pub versions: Vec<u32>,
    /// Its requirements' build on this console.
    pub build: EnvironmentBuild,
    /// Whether the caller may save versions of it.
    pub can_edit: bool,
}

/// The environments an account can use, each at its newest version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct EnvironmentList {
    /// Its own first, then published ones, by name.
    pub environments: Vec<EnvironmentSummary>,
}

/// One line of the list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct EnvironmentSummary {
    /// The newest version.
    pub environment: Environment,
    /// Its local build.
    pub state: BuildState,
}

/// What a job (or notebook, or serving instance) runs in, as the console
/// resolved it when it took the job: set by the console, never by a client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct EnvironmentUse {
    /// `owner/name:version`.
    pub reference: String,
    /// The image for Kubernetes (empty: the job's).
    #[serde(default)]
    pub image: String,
    /// The pip requirements installed for it.
    #[serde(default)]
    pub requirements: Vec<String>,
}

/// `POST …/publish`: publish a template or an environment for every
/// account, or take it back (a site admin's call).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Publication {
    /// The owning account (default: the caller's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// Published or not.
    pub public: bool,
}

/// A reference as users write it: `name`, `owner/name`, either with
/// `:version`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvironmentRef {
    /// The owning account (`None`: the caller's).
    pub owner: Option<String>,
    /// Its name.
    pub name: String,
    /// A version (`None`: the newest).
    pub version: Option<u32>,
}

impl EnvironmentRef {
    /// Reads `[owner/]name[:version]`; `field` is what a bad one is
    /// reported against.
    pub fn parse(text: &str, field: &str) -> Result<Self, AppError> {
        let bad = || {
            AppError::invalid(
                field,
                format!("“{text}” is not an environment: write name, owner/name or either with :version."),
            )
        };
        let (owner, name, version) = split_reference(text).ok_or_else(bad)?;
        if validate_job_name(name).is_err() {
            return Err(bad());
        }
        Ok(Self {
            owner: owner.map(str::to_owned),
            name: name.to_owned(),
            version,
        })
    }
}

/// What a form's environment field names: `None` when it is empty.
pub fn named_environment(field: &str) -> Option<String> {
    Some(field.trim().to_owned()).filter(|e| !e.is_empty())
}

/// Splits `[owner/]name[:version]` (environments, model versions): `None`
/// when the owner is empty, there is more than one `/`, or the version is
/// not a number from 1. The name is left for the caller to check.
pub(crate) fn split_reference(text: &str) -> Option<(Option<&str>, &str, Option<u32>)> {
    let text = text.trim();
    let (path, version) = match text.rsplit_once(':') {
        Some((path, v)) => (path, Some(v.parse::<u32>().ok().filter(|v| *v > 0)?)),
        None => (text, None),
    };
    let (owner, name) = match path.split_once('/') {
        Some((owner, name)) => (Some(owner), name),
        None => (None, path),
    };
    if owner.is_some_and(|o| o.is_empty()) || name.contains('/') {
        return None;
    }
    Some((owner, name, version))
}

impl EnvironmentSpec {
    /// Checks every field; the error names the one at fault.
    pub fn validate(&self) -> Result<(), AppError> {
        validate_job_name(&self.name).map_err(|_| {
            AppError::invalid(
                "name",
                "An environment name has lower-case letters, digits and '-', starts with a letter and has at most 50 characters.",
            )
        })?;
        let image = self.image.trim();
        if image.len() > 255 || image.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(AppError::invalid(
                "image",
                "An image is one reference like registry/paddle:3.0, without spaces.",
            ));
        }
        if self.requirements.len() > MAX_REQUIREMENTS {
            return Err(AppError::invalid(
                "requirements",
                format!("At most {MAX_REQUIREMENTS} requirements."),
            ));
        }
        for (i, line) in self.requirements.iter().enumerate() {
            check_line(line).map_err(|why| {
                AppError::invalid(format!("requirements[{i}]"), format!("“{line}”: {why}"))
            })?;
        }
        if self.setup_notes.len() > MAX_NOTES_LEN {
            return Err(AppError::invalid(
                "setup_notes",
                format!("At most {MAX_NOTES_LEN} characters of notes."),
            ));
        }
        Ok(())
    }

    /// The requirements as they are built: the spaces around each line
    /// trimmed, blank lines dropped, in order (pip's resolver sees them as
    /// written). Only spaces: a tab or a line break is a control character,
    /// which [`Self::validate`] refuses rather than drops.
    pub fn normalized(mut self) -> Self {
        self.name = self.name.trim().to_owned();
        self.image = self.image.trim().to_owned();
        self.requirements = self
            .requirements
            .iter()
            .map(|r| r.trim_matches(' ').to_owned())
            .filter(|r| !r.is_empty())
            .collect();
        self
    }
}

/// One requirement line as sent: at most 200 characters and no control
/// characters (a tab, a line break) anywhere, then a requirement once the
/// spaces around it are trimmed, or nothing (a blank line, dropped). What
/// [`RequirementLine`]'s pattern says.
fn check_line(line: &str) -> Result<(), &'static str> {
    if line.chars().count() > MAX_REQUIREMENT_LEN {
        return Err("a requirement has at most 200 characters.");
    }
    if line.chars().any(char::is_control) {
        return Err("a requirement is one line, without control characters such as tabs.");
    }
    match line.trim_matches(' ') {
        // A blank line is dropped (`normalized`), as a form's would be.
        "" => Ok(()),
        line => check_requirement(line),
    }
}

/// One requirement line is a package from an index, as pip reads it: a
/// name with optional extras, version specifiers and markers. Options
/// (`-e`, `--index-url`), URLs and paths are refused: they would reach
/// outside PyPI or into the console's files.
fn check_requirement(line: &str) -> Result<(), &'static str> {
    if line.is_empty() {
        return Err("a requirement cannot be empty.");
    }
    if line.starts_with('-') {
        return Err("pip options are not allowed; list packages only.");
    }
    if line.contains("://") || line.contains(" @ ") || line.contains('@') {
        return Err("URLs are not allowed; packages come from PyPI.");
    }
    if line.contains('/') || line.contains('\\') || line.starts_with('.') {
        return Err("paths are not allowed; packages come from PyPI.");
    }
    let name_end = line
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        .unwrap_or(line.len());
    let name = &line[..name_end];
    if name.is_empty() || !name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return Err("a requirement starts with a package name.");
    }
    let rest = line[name_end..].trim_start_matches(' ');
    if !(rest.is_empty() || rest.starts_with(['[', '=', '<', '>', '!', '~', ';', '('])) {
        return Err("after the name come extras, a version or markers, e.g. paddlepaddle==3.3.1.");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(requirements: &[&str]) -> EnvironmentSpec {
        EnvironmentSpec {
            name: "paddle-cpu".into(),
            requirements: requirements.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    fn field_of(err: AppError) -> String {
        match err {
            AppError::Invalid { field, .. } => field.unwrap_or_default(),
            other => panic!("not a 400: {other:?}"),
        }
    }

    #[test]
    fn package_requirements_are_taken_and_options_urls_and_paths_are_refused() {
        spec(&[
            "paddlepaddle==3.3.1",
            "visualdl >=2.5, <3",
            "requests[socks]~=2.31",
            "numpy; python_version >= '3.9'",
            "zope.interface",
        ])
        .validate()
        .unwrap();
        for bad in [
            "-e .",
            "--index-url http://evil/simple",
            "pkg @ https://example.com/p.whl",
            "git+https://github.com/x/y",
            "./local-dir",
            "/etc/passwd",
            "numpy rm -rf",
        ] {
            let err = spec(&["numpy", bad]).validate().unwrap_err();
            assert_eq!(field_of(err), "requirements[1]", "{bad:?}");
        }
    }

    #[test]
    fn a_bad_name_or_image_is_refused_naming_the_field() {
        let mut s = spec(&[]);
        s.name = "Paddle CPU".into();
        assert_eq!(field_of(s.validate().unwrap_err()), "name");
        let mut s = spec(&[]);
        s.image = "paddle:3 ; rm".into();
        assert_eq!(field_of(s.validate().unwrap_err()), "image");
    }

    #[test]
    fn references_read_owner_name_and_version() {
        let r = EnvironmentRef::parse("paddlecloud/paddle-cpu:2", "environment").unwrap();
        assert_eq!(r.owner.as_deref(), Some("paddlecloud"));
        assert_eq!((r.name.as_str(), r.version), ("paddle-cpu", Some(2)));
        let r = EnvironmentRef::parse(" minimal ", "environment").unwrap();
        assert_eq!(
            (r.owner, r.name.as_str(), r.version),
            (None, "minimal", None)
        );
        for bad in ["", "a/b/c", "x:0", "x:latest", "/x", "Upper"] {
            assert!(EnvironmentRef::parse(bad, "environment").is_err(), "{bad}");
        }
    }

    #[test]
    fn a_requirement_with_a_tab_a_line_break_or_over_200_characters_is_refused() {
        let long = format!("numpy{}", "0".repeat(196));
        for bad in [
            "numpy\t",
            "\tnumpy",
            "numpy\n",
            "numpy==1.0\r",
            "numpy\u{85}",
            long.as_str(),
        ] {
            let err = spec(&["numpy", bad]).validate().unwrap_err();
            assert_eq!(field_of(err), "requirements[1]", "{bad:?}");
        }
        spec(&["  numpy==1.26  ", &long[..200]]).validate().unwrap();
    }

    #[test]
    fn normalizing_drops_blank_lines_and_trims() {
        let s = spec(&[" numpy ", "", "  "]).normalized();
        assert_eq!(s.requirements, ["numpy"]);
    }
}
