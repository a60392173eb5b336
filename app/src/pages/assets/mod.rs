//! `/datasets` and `/models`: the assets the account can read (its own,
//! shared with it, public), a dialog to create one (`?new=1`), and each
//! asset's page (`/datasets/:owner/:name`, `/models/:owner/:name`).

mod aliases;
mod change_form;
pub mod detail;
mod files;
pub mod settings;
mod share;
mod upload;
mod versions;

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;
use leptos_router::hooks::use_query_map;

use crate::api::assets::{list_assets, CreateAsset};
use crate::components::dialog::Dialog;
use crate::components::form::{last_error, FieldError, FormError};
use crate::components::links::page_href;
use crate::components::resource::resource;
use crate::models::time::format_utc;
use crate::models::{format_bytes, Access, Asset, AssetKind};

/// The list page of datasets or of models.
#[component]
pub fn AssetsPage(
    /// Which list.
    kind: AssetKind,
) -> impl IntoView {
    let params = use_query_map();
    let assets = resource(move || kind, list_assets);
    let title = match kind {
        AssetKind::Dataset => "Datasets",
        AssetKind::Model => "Models",
    };
    let path = format!("/{}", kind.plural());
    let new_href = {
        let path = path.clone();
        move || params.with(|p| page_href(&path, p, &[("new", Some("1".into()))]))
    };
    view! {
        <Title text=title />
        <div class="page-head">
            <h1>{title}</h1>
            <A href=new_href attr:class="button primary">
                {format!("New {}", kind.label().to_lowercase())}
            </A>
        </div>
        <Transition fallback=|| view! { <p class="loading">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match assets.await {
                    Err(err) => view! { <p class="banner error" role="alert">{err.to_string()}</p> }.into_any(),
                    Ok(list) => view! { <AssetSections kind list /> }.into_any(),
                }
            })}
        </Transition>
        {move || params.with(|p| p.get("new").is_some()).then(|| view! { <NewAssetDialog kind /> })}
    }
}

/// The account's own, then those shared with it, then public ones.
#[component]
fn AssetSections(kind: AssetKind, list: Vec<Asset>) -> impl IntoView {
    let section = |title: &'static str, test_id: &'static str, wanted: Access, empty: String| {
        let rows: Vec<Asset> = list
            .iter()
            .filter(|a| a.access == wanted)
            .cloned()
            .collect();
        view! {
            <section class="asset-section" data-testid=test_id>
                <h2>{title}</h2>
                {if rows.is_empty() {
                    view! { <p class="muted">{empty}</p> }.into_any()
                } else {
                    view! { <AssetTable rows show_owner=wanted != Access::Owner /> }.into_any()
                }}
            </section>
        }
    };
    let noun = kind.label().to_lowercase();
    view! {
        {section("Yours", "own-assets", Access::Owner, format!("No {noun}s yet: create one, then upload its files."))}
        {section("Shared with you", "shared-assets", Access::Shared, format!("No other account has shared a {noun} with yours."))}
        {section("Public", "public-assets", Access::Public, format!("No {noun} has been published yet."))}
    }
}

#[component]
fn AssetTable(rows: Vec<Asset>, show_owner: bool) -> impl IntoView {
    view! {
        <table class="grid assets">
            <thead>
                <tr>
                    <th>"Name"</th>
                    {show_owner.then(|| view! { <th>"Owner"</th> })}
                    <th>"Description"</th>
                    <th>"Tags"</th>
                    <th>"Files"</th>
                    <th>"Size"</th>
                    <th>"Updated"</th>
                </tr>
            </thead>
            <tbody>
                {rows
                    .into_iter()
                    .map(|a| {
                        view! {
                            <tr>
                                <td class="name">
                                    <a href=a.reference().href()>{a.name.clone()}</a>
                                    {a.public.then(|| view! { <span class="tag public">"public"</span> })}
                                </td>
                                {show_owner.then(|| view! { <td>{a.owner.clone()}</td> })}
                                <td class="description">{a.description.clone()}</td>
                                <td>
                                    {a.tags.iter().map(|t| view! { <span class="tag">{t.clone()}</span> }).collect_view()}
                                </td>
                                <td class="num">{a.files}</td>
                                <td class="num">{format_bytes(a.bytes)}</td>
                                <td>{format_utc(a.updated_at)}</td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
    }
}

/// Name, description and tags of a new dataset or model.
#[component]
fn NewAssetDialog(kind: AssetKind) -> impl IntoView {
    let action = ServerAction::<CreateAsset>::new();
    let error = Signal::derive(last_error(action));
    let params = use_query_map();
    let path = format!("/{}", kind.plural());
    let close = move || params.with(|p| page_href(&path, p, &[("new", None)]));
    let noun = kind.label().to_lowercase();
    view! {
        <Dialog id="new-asset-title" title={format!("New {noun}")} close=close>
            <ActionForm action>
                <FormError error />
                <input type="hidden" name="kind" value=kind.as_str() />
                <label for="asset-name">"Name"</label>
                <input id="asset-name" name="form[name]" required placeholder="mnist-train" autocomplete="off" />
                <p class="hint">"Lower-case letters, digits, '-', '_' and '.'; part of its links."</p>
                <FieldError error field="name" />
                <label for="asset-description">"Description"</label>
                <textarea id="asset-description" name="form[description]" rows="3"></textarea>
                <FieldError error field="description" />
                <label for="asset-tags">"Tags"</label>
                <input id="asset-tags" name="form[tags]" placeholder="images, classification" />
                <FieldError error field="tags" />
                <footer>
                    <button type="submit" class="primary">"Create"</button>
                </footer>
            </ActionForm>
        </Dialog>
    }
}
