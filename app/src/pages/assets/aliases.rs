//! A model's aliases (`owner/model@production`): which version each names,
//! protected or not, who set it and when, and what happened to them; the
//! model's account sets, moves and deletes them (a protected one, its
//! owners only: the server says so when anyone else tries).

use leptos::prelude::*;

use super::change_form::ChangeForm;
use crate::api::assets::ChangeAsset;
use crate::components::form::{last_error, FieldError, FormError};
use crate::models::time::format_utc;
use crate::models::{AliasChange, AssetOp, AssetRef, ModelAlias, ModelVersion};

/// The aliases, the form to set one, and their history.
#[component]
pub fn AliasList(
    /// The model.
    r: AssetRef,
    /// Its aliases, by name.
    aliases: Vec<ModelAlias>,
    /// What happened to them, newest first.
    history: Vec<AliasChange>,
    /// Its versions (the ready ones are offered).
    versions: Vec<ModelVersion>,
    /// Whether the viewer's account owns the model (and so may write).
    owner: bool,
) -> impl IntoView {
    let set = ServerAction::<ChangeAsset>::new();
    let set_error = Signal::derive(last_error(set));
    let delete = ServerAction::<ChangeAsset>::new();
    let delete_error = Signal::derive(last_error(delete));
    let model_ref = format!("{}/{}", r.owner, r.name);
    let ready: Vec<u32> = versions
        .iter()
        .filter(|v| v.state == "ready")
        .map(|v| v.version)
        .collect();
    let version_href = {
        let r = r.clone();
        move |v: u32| format!("{}?version={v}", r.href())
    };
    view! {
        <section class="aliases" data-testid="aliases" aria-labelledby="aliases-title">
            <div class="section-head">
                <h2 id="aliases-title">"Aliases"</h2>
            </div>
            <p class="hint">
                "Use " <code>{format!("{model_ref}@<alias>")}</code>
                " wherever a version goes: a job's models, a template's model parameter, serving, the SDK and CLI."
            </p>
            <FormError error=delete_error />
            {if aliases.is_empty() {
                view! { <p class="muted">"No aliases yet."</p> }.into_any()
            } else {
                view! {
                    <table class="grid aliases">
                        <thead><tr><th>"Alias"</th><th>"Version"</th><th>"Set by"</th><th>"When"</th><th></th></tr></thead>
                        <tbody>
                            {aliases.into_iter().map(|a| {
                                let r = r.clone();
                                let name = a.alias.clone();
                                view! {
                                    <tr data-alias=a.alias.clone()>
                                        <td>
                                            <code>{format!("@{}", a.alias)}</code>
                                            {a.protected.then(|| view! { <span class="tag protected" title="Only the account's owners move or delete it">"protected"</span> })}
                                        </td>
                                        <td data-testid="alias-version"><a href=version_href(a.version)>{format!("v{}", a.version)}</a></td>
                                        <td>{a.updated_by.clone()}</td>
                                        <td>{format_utc(a.updated_at)}</td>
                                        <td>
                                            {owner.then(|| view! {
                                                <ChangeForm action=delete r op=AssetOp::DeleteAlias class="inline">
                                                    <input type="hidden" name="change[alias]" value=name.clone() />
                                                    <button type="submit" class="small danger" aria-label=format!("Delete @{name}")>"Delete"</button>
                                                </ChangeForm>
                                            })}
                                        </td>
                                    </tr>
                                }
                            }).collect_view()}
                        </tbody>
                    </table>
                }.into_any()
            }}
            {(owner && !ready.is_empty()).then(|| view! {
                <ChangeForm action=set r=r.clone() op=AssetOp::SetAlias class="inline-form set-alias">
                    <FormError error=set_error />
                    <label>"Alias " <input name="change[alias]" placeholder="production" required /></label>
                    <label>"points at "
                        <select name="change[version]" aria-label="Version">
                            {ready.iter().map(|v| view! { <option value=v.to_string()>{format!("v{v}")}</option> }).collect_view()}
                        </select>
                    </label>
                    <label>"Protection "
                        <select name="change[protected]" aria-label="Protection">
                            <option value="">"as it is"</option>
                            <option value="true">"protected"</option>
                            <option value="false">"not protected"</option>
                        </select>
                    </label>
                    <button type="submit" class="small primary" data-testid="set-alias">"Set alias"</button>
                    <FieldError error=set_error field="alias" />
                    <FieldError error=set_error field="version" />
                </ChangeForm>
            })}
            {(!history.is_empty()).then(|| view! {
                <details class="alias-history" data-testid="alias-history">
                    <summary>{format!("History ({})", history.len())}</summary>
                    <ol>
                        {history.into_iter().map(|c| view! {
                            <li>
                                <time>{format_utc(c.at)}</time> " "
                                <code>{format!("@{}", c.alias)}</code> " "
                                {c.describe()}
                                {c.protected.then_some(" (protected)")}
                                <span class="muted">{format!(" by {}", c.by)}</span>
                            </li>
                        }).collect_view()}
                    </ol>
                </details>
            })}
        </section>
    }
}
