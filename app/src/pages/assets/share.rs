//! The owner's sharing panel: with another account, by link (shown once),
//! or public; every share listed with a way to revoke it.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use super::change_form::ChangeForm;
use crate::api::assets::ChangeAsset;
use crate::components::form::{last_error, FieldError, FormError};
use crate::components::share_link::LinkExpiry;
use crate::models::time::format_utc;
use crate::models::{AssetOp, AssetRef, Share};

/// Sharing, for the owner.
#[component]
pub fn SharePanel(
    /// The asset.
    r: AssetRef,
    /// Its shares.
    shares: Vec<Share>,
    /// Whether it is published.
    public: bool,
) -> impl IntoView {
    let with = ServerAction::<ChangeAsset>::new();
    let with_error = Signal::derive(last_error(with));
    let link = ServerAction::<ChangeAsset>::new();
    let link_error = Signal::derive(last_error(link));
    let revoke = ServerAction::<ChangeAsset>::new();
    let revoke_error = Signal::derive(last_error(revoke));
    let publish = ServerAction::<ChangeAsset>::new();
    let publish_error = Signal::derive(last_error(publish));
    let params = use_query_map();
    // The link just made: its token is shown this once (only a hash is kept).
    // Read reactively: after a hydrated submit the redirect that carries it
    // can land after the refetch that re-rendered this panel.
    let new_link = move || {
        params
            .with(|p| p.get("link"))
            .filter(|l| l.starts_with("/shared/"))
    };
    let noun = r.kind.label().to_lowercase();
    let (r1, r2, r3, r4) = (r.clone(), r.clone(), r.clone(), r);
    view! {
        <section class="share-panel" data-testid="share-panel">
            <h2>"Sharing"</h2>
            {move || new_link().map(|path| view! {
                <div class="banner ok" role="status" data-testid="new-link">
                    <p>"Anyone with this link can read and download it. Copy it now: it is not shown again."</p>
                    <p><a href=path.clone() class="share-link">{path.clone()}</a></p>
                    <input class="secret" readonly value=path aria-label="Share link" />
                </div>
            })}
            <div class="share-forms">
                <ChangeForm action=with r=r1 op=AssetOp::ShareWith class="inline-form">
                    <label for="share-account">"Share with account"</label>
                    <input id="share-account" name="change[account]" placeholder="account name" required />
                    <button type="submit">"Share read-only"</button>
                    <FieldError error=with_error field="account" />
                    <FormError error=with_error />
                </ChangeForm>
                <ChangeForm action=link r=r2 op=AssetOp::CreateLink class="inline-form">
                    <label for="link-expiry">"Link expires"</label>
                    <LinkExpiry id="link-expiry" name="change[expires_in_days]" />
                    <button type="submit">"Create link"</button>
                    <FieldError error=link_error field="expires_in_days" />
                    <FormError error=link_error />
                </ChangeForm>
                <ChangeForm action=publish r=r3 op=AssetOp::SetPublic class="inline-form">
                    <input type="hidden" name="change[public]" value=(!public).to_string() />
                    {if public {
                        view! { <span>"Every account can read this "{noun.clone()}"."</span> <button type="submit">"Make private"</button> }.into_any()
                    } else {
                        view! { <button type="submit">"Publish to every account"</button> }.into_any()
                    }}
                    <FormError error=publish_error />
                </ChangeForm>
            </div>
            <FormError error=revoke_error />
            {if shares.is_empty() {
                view! { <p class="muted">"Not shared with any account or link."</p> }.into_any()
            } else {
                view! {
                    <table class="grid shares">
                        <thead>
                            <tr>
                                <th>"With"</th>
                                <th>"Expires"</th>
                                <th>"By"</th>
                                <th>"Since"</th>
                                <th></th>
                            </tr>
                        </thead>
                        <tbody>
                            {shares
                                .into_iter()
                                .map(|s| {
                                    let r = r4.clone();
                                    let who = match (&s.account, &s.link_prefix) {
                                        (Some(a), _) => format!("account {a}"),
                                        (None, Some(p)) => format!("link {p}…"),
                                        (None, None) => "—".to_owned(),
                                    };
                                    view! {
                                        <tr>
                                            <td>{who.clone()}</td>
                                            <td>{s.expires_at.map(format_utc).unwrap_or_else(|| "never".into())}</td>
                                            <td>{s.created_by.clone()}</td>
                                            <td>{format_utc(s.created_at)}</td>
                                            <td>
                                                <ChangeForm action=revoke r op=AssetOp::Revoke class="inline">
                                                    <input type="hidden" name="change[share]" value=s.id />
                                                    <button type="submit" class="small danger" aria-label=format!("Revoke {who}")>"Revoke"</button>
                                                </ChangeForm>
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
