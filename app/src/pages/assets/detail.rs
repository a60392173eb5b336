//! One dataset or model: its files folder by folder with previews, uploads,
//! a model's versions, and the owner's sharing panel. The same page shows
//! an asset opened through a share link (read-only, signed out or not).

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};

use super::aliases::AliasList;
use super::files::FileBrowser;
use super::upload::Uploader;
use super::versions::{NewVersionDialog, VersionList};
use crate::api::assets::open_asset;
use crate::components::live::{beside_regions, Region};
use crate::components::resource::resource;
use crate::components::share_link::LinkTopbar;
use crate::error::AppError;
use crate::models::time::format_utc;
use crate::models::{format_bytes, Access, AssetKind, AssetRef, AssetSource, AssetView};

/// `/datasets/:owner/:name` or `/models/:owner/:name`.
#[component]
pub fn AssetPage(
    /// Which kind the route is for.
    kind: AssetKind,
) -> impl IntoView {
    let route = use_params_map();
    let source = Memo::new(move |_| {
        route.with(|p| AssetSource {
            asset: Some(AssetRef {
                kind,
                owner: p.get("owner").unwrap_or_default(),
                name: p.get("name").unwrap_or_default(),
            }),
            token: None,
        })
    });
    view! { <AssetDetail source /> }
}

/// `/shared/:token`: what a share link opens.
#[component]
pub fn SharedPage() -> impl IntoView {
    let route = use_params_map();
    let source = Memo::new(move |_| {
        route.with(|p| AssetSource {
            asset: None,
            token: Some(p.get("token").unwrap_or_default()),
        })
    });
    view! {
        <LinkTopbar />
        <main class="page">
            <AssetDetail source />
        </main>
    }
}

/// The page body for either source.
#[component]
fn AssetDetail(source: Memo<AssetSource>) -> impl IntoView {
    let params = use_query_map();
    let key = Memo::new(move |_| {
        params.with(|p| {
            (
                source.get(),
                p.get("version").and_then(|v| v.parse::<u32>().ok()),
                p.get("dir").unwrap_or_default(),
            )
        })
    });
    let view = resource(
        move || key.get(),
        |(source, version, dir)| open_asset(source, version, dir),
    );
    view! {
        <Transition fallback=|| view! { <p class="loading">"Loading…"</p> }>
            {move || {
                // Every URL change redraws the page from the cached view
                // (only folder and version refetch it).
                params.track();
                Suspend::new(async move {
                match view.await {
                    Err(err) => view! { <NotReadable err /> }.into_any(),
                    Ok(v) => view! { <Loaded v source=source.get_untracked() /> }.into_any(),
                }
            })
            }}
        </Transition>
    }
}

#[component]
fn NotReadable(err: AppError) -> impl IntoView {
    view! {
        <Title text="Not found" />
        <h1>"Not available"</h1>
        <p class="banner error" role="alert">{err.to_string()}</p>
        <p class="muted">
            "It may have been deleted, the link revoked or expired, or it is not shared with your account."
        </p>
    }
}

#[component]
fn Loaded(v: AssetView, source: AssetSource) -> impl IntoView {
    let params = use_query_map();
    let a = v.asset.clone();
    let r = a.reference();
    let owner = a.access == Access::Owner;
    let files = source.files();
    let page_path = source.page_path();
    let version = v
        .version
        .and_then(|n| v.versions.iter().find(|x| x.version == n).cloned());
    // Into a dataset's working files, or a version still uploading.
    let can_upload = owner
        && match (a.kind, &version) {
            (AssetKind::Dataset, None) => v.version.is_none(),
            (_, Some(x)) => x.state == "uploading",
            (AssetKind::Model, None) => false,
        };
    let access = match a.access {
        Access::Owner => "yours",
        Access::Shared => "shared with your account",
        Access::Public => "public",
        Access::Link => "opened by link",
    };
    let zip_label = match v.version {
        Some(n) => format!("Download v{n} (zip)"),
        None => "Download all (zip)".to_owned(),
    };
    let has_files = match (a.kind, &version) {
        (AssetKind::Dataset, None) => v.version.is_none() && a.files > 0,
        (_, Some(x)) => x.files > 0,
        (AssetKind::Model, None) => false,
    };
    let title = format!("{}/{}", a.owner, a.name);
    let zip_href = files.archive_url(v.version);
    let settings = beside_regions(|| {
        owner.then(|| {
            let shares = v.shares.as_ref().map_or(0, Vec::len);
            view! {
                <p>
                    <a class="button" href=format!("{}/settings", r.href()) data-testid="settings-link">
                        {format!("Sharing and settings ({shares} shares{})", if a.public { ", public" } else { "" })}
                    </a>
                </p>
            }
        })
    });
    // What it came from and what came of it (a model: of the version
    // shown); a link's holder is not signed in and sees none.
    let lineage = match (a.kind, v.version) {
        (_, _) if a.access == Access::Link => None,
        (AssetKind::Dataset, _) => Some(crate::models::NodeRef::dataset(&a.owner, &a.name)),
        (AssetKind::Model, Some(n)) => Some(crate::models::NodeRef::model(&a.owner, &a.name, n)),
        (AssetKind::Model, None) => None,
    };
    let lineage = beside_regions(|| {
        lineage.map(|node| view! { <crate::components::lineage::LineageSection node /> })
    });
    let versions = beside_regions(|| {
        view! {
            <VersionList r=r.clone() versions=v.versions.clone() shown=v.version owner page_path=page_path.clone() />
            {(a.kind == AssetKind::Model).then(|| view! {
                <AliasList r=r.clone() aliases=v.aliases.clone() history=v.alias_history.clone() versions=v.versions.clone() owner />
            })}
        }
    });
    let uploader = beside_regions(|| {
        can_upload.then(|| {
            let (uploaded, failed) =
                params.with_untracked(|p| (p.get("uploaded"), p.get("upload_error")));
            view! { <Uploader r=r.clone() version=v.version dir=v.dir.clone() uploaded failed /> }
        })
    });
    let new_version = beside_regions(|| {
        (owner && params.with_untracked(|p| p.get("new").is_some()))
            .then(|| view! { <NewVersionDialog r=r.clone() page_path=page_path.clone() /> })
    });
    view! {
        <Title text=title.clone() />
        <Region id=super::upload::SUMMARY_REGION>
        <div class="page-head">
            <h1>
                <a href=format!("/{}", a.kind.plural()) class="crumb">{a.kind.label()}"s"</a>
                " / "{title}
            </h1>
            <span class="tag access" data-testid="access">{access}</span>
            {a.public.then(|| view! { <span class="tag public">"public"</span> })}
            {has_files.then(|| view! {
                <a class="button" href=zip_href.clone() download data-testid="download-zip">{zip_label.clone()}</a>
            })}
        </div>
        <p class="description">{a.description.clone()}</p>
        <p>{a.tags.iter().map(|t| view! { <span class="tag">{t.clone()}</span> }).collect_view()}</p>
        <dl class="facts">
            <dt>"Files"</dt>
            <dd data-testid="file-count">{a.files}</dd>
            <dt>"Size"</dt>
            <dd>{format_bytes(a.bytes)}</dd>
            <dt>"Updated"</dt>
            <dd>{format_utc(a.updated_at)}</dd>
            <dt>"Created"</dt>
            <dd>{format_utc(a.created_at)}</dd>
        </dl>
        </Region>
        {settings}
        {versions}
        {lineage}
        <Region id=super::upload::FILES_REGION>
            <FileBrowser
                view=v.clone()
                source=source.clone()
                files=files.clone()
                owner
            />
        </Region>
        {uploader}
        {new_version}
    }
}
