//! `/datasets/:owner/:name/settings` (and for models): the owner's page for
//! the description and tags, sharing, and deleting. Kept apart from the
//! files page, which everyone who can read the asset opens.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;

use super::change_form::ChangeForm;
use super::share::SharePanel;
use crate::api::assets::{open_asset, ChangeAsset};
use crate::components::form::{last_error, FieldError, FormError};
use crate::components::resource::resource;
use crate::models::{Access, AssetKind, AssetOp, AssetRef, AssetSource};

/// The settings page of a dataset or model.
#[component]
pub fn AssetSettingsPage(
    /// Which kind the route is for.
    kind: AssetKind,
) -> impl IntoView {
    let route = use_params_map();
    let r = Memo::new(move |_| {
        route.with(|p| AssetRef {
            kind,
            owner: p.get("owner").unwrap_or_default(),
            name: p.get("name").unwrap_or_default(),
        })
    });
    let view = resource(
        move || r.get(),
        |r| {
            open_asset(
                AssetSource {
                    asset: Some(r),
                    token: None,
                },
                None,
                String::new(),
            )
        },
    );
    view! {
        <Transition fallback=|| view! { <p class="loading">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match view.await {
                    Err(err) => view! { <p class="banner error" role="alert">{err.to_string()}</p> }.into_any(),
                    Ok(v) if v.asset.access != Access::Owner => view! {
                        <p class="banner error" role="alert">"Only its owner changes its settings."</p>
                    }
                        .into_any(),
                    Ok(v) => {
                        let a = v.asset;
                        let r = a.reference();
                        let title = format!("{}/{}", a.owner, a.name);
                        view! {
                            <Title text=format!("Settings of {title}") />
                            <h1>
                                <a href=r.href() class="crumb">{title}</a>
                                " · settings"
                            </h1>
                            <EditAsset r=r.clone() description=a.description.clone() tags=a.tags.join(", ") />
                            <SharePanel r=r.clone() shares=v.shares.unwrap_or_default() public=a.public />
                            <DangerZone r />
                        }
                            .into_any()
                    }
                }
            })}
        </Transition>
    }
}

/// The description and tags.
#[component]
fn EditAsset(r: AssetRef, description: String, tags: String) -> impl IntoView {
    let action = ServerAction::<ChangeAsset>::new();
    let error = Signal::derive(last_error(action));
    view! {
        <h2>"Description and tags"</h2>
        <ChangeForm action r op=AssetOp::Update class="edit-asset">
            <FormError error />
            <label for="edit-description">"Description"</label>
            <textarea id="edit-description" name="change[description]" rows="3">{description}</textarea>
            <FieldError error field="description" />
            <label for="edit-tags">"Tags"</label>
            <input id="edit-tags" name="change[tags]" value=tags />
            <FieldError error field="tags" />
            <button type="submit" class="primary">"Save"</button>
        </ChangeForm>
    }
}

/// Deleting the asset, behind a disclosure so it takes two clicks (which
/// works without JavaScript, unlike a confirm() prompt).
#[component]
fn DangerZone(r: AssetRef) -> impl IntoView {
    let action = ServerAction::<ChangeAsset>::new();
    let error = Signal::derive(last_error(action));
    let noun = r.kind.label().to_lowercase();
    let what = format!(
        "Deletes {}/{} with all its files and shares. There is no undo.",
        r.owner, r.name
    );
    view! {
        <details class="danger-zone">
            <summary>{format!("Delete this {noun}…")}</summary>
            <ChangeForm action r op=AssetOp::Delete class="">
                <FormError error />
                <p>{what}</p>
                <button type="submit" class="danger">{format!("Delete {noun}")}</button>
            </ChangeForm>
        </details>
    }
}
