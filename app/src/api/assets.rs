//! Datasets and models: the pages' views and the owner's actions. Files
//! themselves go up and down through the REST routes, which stream.

use leptos::prelude::*;

use crate::error::AppError;
#[cfg(feature = "ssr")]
use crate::models::VersionForm;
use crate::models::{
    Asset, AssetChange, AssetForm, AssetKind, AssetRef, AssetSource, AssetView, Preview,
};

#[cfg(feature = "ssr")]
use super::context::{member, principal, redirect_back, services};
#[cfg(feature = "ssr")]
use crate::ports::{Slot, Viewer};

/// Datasets (or models) the caller can read: their own, shared, public.
#[server(prefix = "/api", endpoint = "list_assets")]
pub async fn list_assets(kind: AssetKind) -> Result<Vec<Asset>, AppError> {
    let who = principal()?;
    services()?.assets.list(&who.me, kind).await
}

/// One folder of an asset, reached as a user or through a share link.
#[server(prefix = "/api", endpoint = "open_asset")]
pub async fn open_asset(
    source: AssetSource,
    version: Option<u32>,
    dir: String,
) -> Result<AssetView, AppError> {
    let (viewer, asset, me) = reach(source).await?;
    view_of(&viewer, asset, version, dir, me.as_ref()).await
}

/// The head of a file, as the preview shows it.
#[server(prefix = "/api", endpoint = "preview_file")]
pub async fn preview_file(
    source: AssetSource,
    version: Option<u32>,
    path: String,
) -> Result<Preview, AppError> {
    let (viewer, asset, _) = reach(source).await?;
    preview_of(&viewer, asset, version, path).await
}

/// Who reads, what, and the signed-in user if it is one.
#[cfg(feature = "ssr")]
async fn reach(
    source: AssetSource,
) -> Result<(Viewer, AssetRef, Option<crate::models::Me>), AppError> {
    match (source.token, source.asset) {
        (Some(token), _) => {
            let asset = services()?.assets.resolve_link(&token).await?;
            Ok((Viewer::Link(token), asset, None))
        }
        (None, Some(asset)) => {
            let me = principal()?.me;
            Ok((Viewer::User(me.clone()), asset, Some(me)))
        }
        (None, None) => Err(AppError::invalid("source", "Say which dataset or model.")),
    }
}

#[cfg(feature = "ssr")]
async fn view_of(
    viewer: &Viewer,
    r: AssetRef,
    version: Option<u32>,
    dir: String,
    me: Option<&crate::models::Me>,
) -> Result<AssetView, AppError> {
    let assets = services()?.assets;
    let asset = assets.get(viewer, &r).await?;
    let dir = crate::models::validate_dir(&dir)?;
    let (versions, version) = match r.kind {
        // A dataset's page shows its working files unless a version is asked.
        AssetKind::Dataset => (assets.versions(viewer, &r).await?, version),
        AssetKind::Model => {
            let versions = assets.versions(viewer, &r).await?;
            let shown = version.or_else(|| {
                versions
                    .iter()
                    .find(|v| v.state == "ready")
                    .or(versions.first())
                    .map(|v| v.version)
            });
            (versions, shown)
        }
    };
    let entries = match (r.kind, version) {
        (AssetKind::Model, None) => Vec::new(),
        _ => {
            assets
                .list_dir(viewer, &r, Slot::of(r.kind, version)?, &dir)
                .await?
        }
    };
    let shares = match me {
        Some(me) if asset.access.can_write() => Some(assets.shares(me, &r).await?),
        _ => None,
    };
    let (aliases, alias_history) = match r.kind {
        AssetKind::Dataset => (Vec::new(), Vec::new()),
        AssetKind::Model => (
            assets.aliases(viewer, &r).await?,
            assets.alias_history(viewer, &r).await?,
        ),
    };
    Ok(AssetView {
        asset,
        versions,
        version,
        dir,
        entries,
        shares,
        aliases,
        alias_history,
    })
}

#[cfg(feature = "ssr")]
async fn preview_of(
    viewer: &Viewer,
    r: AssetRef,
    version: Option<u32>,
    path: String,
) -> Result<Preview, AppError> {
    use futures_util::StreamExt;
    let assets = services()?.assets;
    let mut file = assets
        .open_file(viewer, &r, Slot::of(r.kind, version)?, &path, None)
        .await?;
    // Reads the head only; dropping the stream stops the rest.
    let mut head = Vec::new();
    while head.len() < crate::models::PREVIEW_BYTES {
        match file.body.next().await {
            Some(Ok(chunk)) => head.extend_from_slice(&chunk),
            Some(Err(err)) => {
                tracing::error!(error = %err, path, "reading a file's head for its preview");
                return Err(AppError::Internal);
            }
            None => break,
        }
    }
    head.truncate(crate::models::PREVIEW_BYTES);
    Ok(crate::models::preview_of(file.entry, &head))
}

/// Creates a dataset or model in the caller's account and opens it.
#[server(prefix = "/api", endpoint = "create_asset")]
pub async fn create_asset(kind: AssetKind, form: AssetForm) -> Result<Asset, AppError> {
    let who = member()?;
    let asset = services()?.assets.create(&who.me, kind, form).await?;
    leptos_axum::redirect(&asset.reference().href());
    Ok(asset)
}

/// Every change the owner makes on an asset's page; then back to the page
/// (to the list after a delete, to the new version after starting one).
#[server(prefix = "/api", endpoint = "change_asset")]
pub async fn change_asset(asset: AssetRef, change: AssetChange) -> Result<(), AppError> {
    use crate::models::AssetOp;
    let me = member()?.me;
    let assets = services()?.assets;
    let version = change.version_number()?;
    let need_version = || version.ok_or_else(|| AppError::invalid("version", "Say which version."));
    let mut back: Vec<(&str, Option<String>)> = vec![("link", None)];
    match change.op {
        AssetOp::Update => {
            let form = AssetForm {
                name: asset.name.clone(),
                description: change.description,
                tags: change.tags,
            };
            assets.update(&me, &asset, form).await?;
            back.push(("edit", None));
        }
        AssetOp::Delete => {
            assets.delete(&me, &asset).await?;
            leptos_axum::redirect(&format!("/{}", asset.kind.plural()));
            return Ok(());
        }
        AssetOp::DeletePath => {
            let slot = Slot::of(asset.kind, version)?;
            assets.delete_path(&me, &asset, slot, &change.path).await?;
            back.push(("file", None));
        }
        AssetOp::ShareWith => {
            assets
                .share_with(&me, &asset, change.account.trim())
                .await?;
        }
        AssetOp::CreateLink => {
            // A form's "never" is an empty string.
            let days = match change.expires_in_days.trim() {
                "" => None,
                days => Some(
                    days.parse::<u32>()
                        .ok()
                        .filter(|d| (1..=3650).contains(d))
                        .ok_or_else(|| {
                            AppError::invalid(
                                "expires_in_days",
                                "Expiry is a number of days, 1 to 3650.",
                            )
                        })?,
                ),
            };
            // Shown once on the page (`?link=`): only its hash is kept.
            let link = assets.create_link(&me, &asset, days).await?;
            back = vec![("link", Some(link.path))];
        }
        AssetOp::Revoke => {
            let share = change
                .share
                .trim()
                .parse()
                .map_err(|_| AppError::invalid("share", "Which share?"))?;
            assets.revoke(&me, &asset, share).await?;
        }
        AssetOp::SetPublic => {
            assets
                .set_public(&me, &asset, change.public == "true")
                .await?;
        }
        AssetOp::CreateVersion => {
            // A dataset's saves its working files as they are now.
            let form = VersionForm {
                description: change.description,
                tags: change.tags,
                job: None,
                empty: false,
            };
            let v = assets.create_version(&me, &asset, form).await?;
            back = vec![
                ("link", None),
                ("version", Some(v.version.to_string())),
                ("new", None),
                ("dir", None),
                ("file", None),
            ];
        }
        AssetOp::FinishVersion => {
            assets.finish_version(&me, &asset, need_version()?).await?;
        }
        AssetOp::TagVersion => {
            assets
                .tag_version(&me, &asset, need_version()?, &change.tags)
                .await?;
        }
        AssetOp::SetAlias => {
            let form = crate::models::AliasForm {
                version: need_version()?,
                protected: change.protection(),
            };
            assets.set_alias(&me, &asset, &change.alias, form).await?;
        }
        AssetOp::DeleteAlias => {
            assets.delete_alias(&me, &asset, &change.alias).await?;
        }
    }
    redirect_back(&back, &asset.href())
}
