//! `/api/v1/datasets…` and `/api/v1/models…` (one set of handlers, `{kind}`
//! being `datasets` or `models`), and `/api/v1/shared/{token}…` for share
//! links. Files stream in and out; a folder or a model version downloads as
//! a zip written as it streams.
//!
//! By concern: the dataset or model itself (`records.rs`), its files
//! (`files.rs`), a model's versions (`versions.rs`), sharing and publishing
//! (`sharing.rs`), what a share link opens (`links.rs`); `transfer.rs` streams
//! files in and out (ranges, content types). This file holds what they all
//! take from a path or a query, and the rule for jobs' tokens.

mod aliases;
mod files;
mod links;
mod records;
mod sharing;
mod transfer;
mod versions;

use app::error::AppError;
use app::models::{AssetKind, AssetRef};
use app::ports::{Principal, Slot};
use serde::Deserialize;
use utoipa::IntoParams;

pub use self::aliases::*;
pub use self::files::*;
pub use self::links::*;
pub use self::records::*;
pub use self::sharing::*;
pub use self::versions::*;
use crate::http::api_error::ApiError;

/// `datasets` or `models` in a path.
pub fn kind_of(segment: &str) -> Result<AssetKind, ApiError> {
    match segment {
        "datasets" => Ok(AssetKind::Dataset),
        "models" => Ok(AssetKind::Model),
        _ => Err(ApiError(AppError::not_found("API route"))),
    }
}

fn asset(kind: &str, owner: String, name: String) -> Result<AssetRef, ApiError> {
    Ok(AssetRef {
        kind: kind_of(kind)?,
        owner,
        name,
    })
}

/// The slot a request addresses: a dataset, or `?version=` of a model.
fn slot(r: &AssetRef, version: Option<u32>) -> Result<Slot, ApiError> {
    Ok(Slot::of(r.kind, version)?)
}

/// `?version=` of file routes.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct VersionParam {
    /// The model version (models only).
    version: Option<u32>,
}

/// `?dir=&version=` of a listing.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DirParams {
    /// The folder (default: the root).
    #[serde(default)]
    dir: String,
    /// The model version (models only).
    version: Option<u32>,
}

/// Refuses what a job's own token may not do: it registers model versions
/// and reads, but deletes, shares and publishes nothing.
fn not_for_jobs(who: &Principal, what: &str) -> Result<(), ApiError> {
    match who.job_scope() {
        Some(job) => Err(ApiError(AppError::forbidden(format!(
            "A job's token (job “{job}”) may register model versions and read datasets, not {what}; \
             use an access key."
        )))),
        None => Ok(()),
    }
}
