//! A model's or dataset's versions: who made each and from which job, its
//! tags, its state. A model's owner starts a version, uploads into it,
//! finishes and tags it; a dataset's owner saves its working files as a
//! version, which jobs then read exactly (`name:N`).

use leptos::prelude::*;
use leptos_router::components::A;
use leptos_router::hooks::use_query_map;

use super::change_form::ChangeForm;
use crate::api::assets::ChangeAsset;
use crate::components::dialog::Dialog;
use crate::components::form::{last_error, FieldError, FormError};
use crate::components::links::page_href;
use crate::models::time::format_utc;
use crate::models::{format_bytes, scoring_href, AssetKind, AssetOp, AssetRef, ModelVersion};

/// The versions table; the shown one is highlighted.
#[component]
pub fn VersionList(
    /// The model or dataset.
    r: AssetRef,
    /// Newest first.
    versions: Vec<ModelVersion>,
    /// The version whose files the page shows.
    shown: Option<u32>,
    /// Whether the viewer owns it.
    owner: bool,
    /// The page's path, for links that keep the rest of its state.
    page_path: String,
) -> impl IntoView {
    let params = use_query_map();
    let finish = ServerAction::<ChangeAsset>::new();
    let finish_error = Signal::derive(last_error(finish));
    let tag = ServerAction::<ChangeAsset>::new();
    let tag_error = Signal::derive(last_error(tag));
    let href = {
        let page_path = page_path.clone();
        move |changes: &[(&str, Option<String>)]| {
            params.with_untracked(|p| page_href(&page_path, p, changes))
        }
    };
    let new_href = href(&[("new", Some("1".into()))]);
    let dataset = r.kind == AssetKind::Dataset;
    // A dataset's page shows its working files unless a version is chosen.
    let working = (dataset && shown.is_some()).then(|| {
        let back = href(&[("version", None), ("dir", None), ("file", None)]);
        view! { <p><a href=back data-testid="working-files">"Back to the working files"</a></p> }
    });
    let (new_label, none_yet) = if dataset {
        (
            "Save as version",
            "No versions yet. Save the files as they are now as a version: it never changes, and jobs read it as name:N.",
        )
    } else {
        (
            "New version",
            "No versions yet. A job registers one with register_model(), or start one here and upload its files.",
        )
    };
    view! {
        <section class="versions" data-testid="versions">
            <div class="section-head">
                <h2>"Versions"</h2>
                {owner.then(|| view! { <A href=new_href attr:class="button primary">{new_label}</A> })}
            </div>
            {working}
            <FormError error=finish_error />
            <FormError error=tag_error />
            <FieldError error=tag_error field="tags" />
            {if versions.is_empty() {
                view! { <p class="muted">{none_yet}</p> }.into_any()
            } else {
                view! {
                    <table class="grid versions">
                        <thead>
                            <tr>
                                <th>"Version"</th>
                                <th>"State"</th>
                                <th>"Tags"</th>
                                <th>"Description"</th>
                                <th>"From job"</th>
                                <th>"By"</th>
                                <th>"Created"</th>
                                <th>"Files"</th>
                                <th></th>
                            </tr>
                        </thead>
                        <tbody>
                            {versions
                                .into_iter()
                                .map(|v| {
                                    let (r1, r2) = (r.clone(), r.clone());
                                    let open = href(&[("version", Some(v.version.to_string())), ("dir", None), ("file", None)]);
                                    let current = shown == Some(v.version);
                                    let uploading = v.state == "uploading";
                                    view! {
                                        <tr class:current=current data-version=v.version>
                                            <td><a href=open>{format!("v{}", v.version)}</a></td>
                                            <td><span class=format!("status {}", if uploading { "pending" } else { "succeeded" })>{v.state.clone()}</span></td>
                                            <td>
                                                {if owner {
                                                    view! {
                                                        <ChangeForm action=tag r=r1 op=AssetOp::TagVersion class="inline tags">
                                                            <input type="hidden" name="change[version]" value=v.version />
                                                            <input name="change[tags]" value=v.tags.join(", ") aria-label=format!("Tags of v{}", v.version) placeholder="production, candidate" />
                                                            <button type="submit" class="small">"Save"</button>
                                                        </ChangeForm>
                                                    }.into_any()
                                                } else {
                                                    v.tags.iter().map(|t| view! { <span class="tag">{t.clone()}</span> }).collect_view().into_any()
                                                }}
                                            </td>
                                            <td>{v.description.clone()}</td>
                                            <td>{v.job.clone().map(|j| view! { <a href=format!("/jobs?q={j}")>{j.clone()}</a> })}</td>
                                            <td>{v.created_by.clone()}</td>
                                            <td>{format_utc(v.created_at)}</td>
                                            <td class="num">{format!("{} · {}", v.files, format_bytes(v.bytes))}</td>
                                            <td>
                                                {(!uploading).then(|| {
                                                    let pinned = format!("{}/{}:{}", r.owner, r.name, v.version);
                                                    let (href, label) = match r.kind {
                                                        AssetKind::Model => (scoring_href(Some(&pinned), None), "Score a dataset"),
                                                        AssetKind::Dataset => (scoring_href(None, Some(&pinned)), "Score with a model"),
                                                    };
                                                    view! { <a href=href class="button small" data-testid="score-version">{label}</a> }
                                                })}
                                                {(owner && uploading).then(|| view! {
                                                    <ChangeForm action=finish r=r2 op=AssetOp::FinishVersion class="inline">
                                                        <input type="hidden" name="change[version]" value=v.version />
                                                        <button type="submit" class="small primary">"Finish upload"</button>
                                                    </ChangeForm>
                                                })}
                                            </td>
                                        </tr>
                                    }
                                })
                                .collect_view()}
                        </tbody>
                    </table>
                }
                    .into_any()
            }}
        </section>
    }
}

/// Starts a model's version (`?new=1`): its description and tags; files
/// follow. For a dataset, saves its working files as the next version.
#[component]
pub fn NewVersionDialog(
    /// The model or dataset.
    r: AssetRef,
    /// The page's path.
    page_path: String,
) -> impl IntoView {
    let action = ServerAction::<ChangeAsset>::new();
    let error = Signal::derive(last_error(action));
    let params = use_query_map();
    let close = move || params.with(|p| page_href(&page_path, p, &[("new", None)]));
    let (title, hint, button) = if r.kind == AssetKind::Dataset {
        (
            format!("Save {} as a version", r.name),
            "The dataset's files as they are now become its next version, which never changes (on a local store no bytes are copied). Jobs read it as name:N; the working files stay yours to change.",
            "Save version",
        )
    } else {
        (
            format!("New version of {}", r.name),
            "Then upload its files (an inference model tar.gz, its config) and press “Finish upload”.",
            "Start version",
        )
    };
    view! {
        <Dialog id="new-version-title" title=title close=close>
            <ChangeForm action r=r.clone() op=AssetOp::CreateVersion class="">
                <FormError error />
                <label for="version-description">"Description"</label>
                <textarea id="version-description" name="change[description]" rows="3" placeholder="What changed"></textarea>
                <label for="version-tags">"Tags"</label>
                <input id="version-tags" name="change[tags]" placeholder="candidate" />
                <FieldError error field="tags" />
                <p class="hint">{hint}</p>
                <footer>
                    <button type="submit" class="primary">{button}</button>
                </footer>
            </ChangeForm>
        </Dialog>
    }
}
