//! `/account`: the account, its members, the user's access keys and signed-in sessions.

use leptos::prelude::*;
use leptos_meta::Title;

use super::access_keys::AccessKeys;
use super::account_security::{AuditSection, EmailSection, PasswordSection};
use super::members::MembersSection;
use crate::api::accounts::{sessions, RevokeSession};
use crate::components::form::{last_error, FormError};
use crate::components::layout::CurrentUser;
use crate::components::live::beside_regions;
use crate::components::resource::resource;
use crate::models::time::format_utc;

/// The Account page. Its access keys' table is a live region; everything
/// else (and every query of it) is beside the regions, so a refresh of the
/// keys renders them alone.
#[component]
pub fn AccountPage() -> impl IntoView {
    view! {
        {beside_regions(|| view! {
            <Title text="Account" />
            <h1>"Account"</h1>
            <AccountFacts />
            <PasswordSection />
        })}
        <AccessKeys />
        {beside_regions(|| view! {
            <Sessions />
            <Audit />
        })}
    }
}

/// The account, the user, their address and the members.
#[component]
fn AccountFacts() -> impl IntoView {
    let me = expect_context::<CurrentUser>();
    view! {
        <Suspense fallback=|| view! { <p class="loading">"Loading…"</p> }>
            {move || Suspend::new(async move {
                me.await
                    .map(|me| {
                        view! {
                            <dl class="facts">
                                <dt>"Account"</dt>
                                <dd data-testid="account-name">{me.account.name.clone()}</dd>
                                <dt>"Cluster namespace"</dt>
                                <dd>
                                    <code>{me.account.namespace.clone()}</code>
                                </dd>
                                <dt>"You"</dt>
                                <dd>{format!("{} ({})", me.email, me.role.as_str())}</dd>
                                <dt>"Created"</dt>
                                <dd>{format_utc(me.account.created_at)}</dd>
                            </dl>
                            <EmailSection me=me.clone() />
                            <MembersSection me=me.clone() />
                        }
                    })
            })}
        </Suspense>
    }
}

/// The latest audit events, with a link to the whole log.
#[component]
fn Audit() -> impl IntoView {
    let me = expect_context::<CurrentUser>();
    view! {
        <Suspense fallback=|| ()>
            {move || Suspend::new(async move { me.await.map(|me| view! { <AuditSection me /> }) })}
        </Suspense>
    }
}

/// The user's signed-in sessions, each revocable.
#[component]
fn Sessions() -> impl IntoView {
    let revoke = ServerAction::<RevokeSession>::new();
    let error = Signal::derive(last_error(revoke));
    let sessions = resource(move || revoke.version().get(), |_| sessions());
    view! {
        <h2>"Signed-in sessions"</h2>
        <p class="hint">"Revoke a session to sign that browser or client out at once."</p>
        <FormError error />
        <Transition fallback=|| view! { <p class="loading">"Loading…"</p> }>
            {move || Suspend::new(async move {
                sessions
                    .await
                    .map(|rows| {
                        view! {
                            <table class="grid" data-testid="sessions">
                                <thead>
                                    <tr>
                                        <th>"Client"</th>
                                        <th>"Signed in"</th>
                                        <th>"Last seen"</th>
                                        <th>"Expires"</th>
                                        <th></th>
                                    </tr>
                                </thead>
                                <tbody>
                                    {rows
                                        .into_iter()
                                        .map(|s| {
                                            view! {
                                                <tr>
                                                    <td class="ua">
                                                        {s.user_agent}
                                                        {s.current.then(|| view! { <span class="tag">"this browser"</span> })}
                                                    </td>
                                                    <td>{format_utc(s.created_at)}</td>
                                                    <td>{format_utc(s.last_seen_at)}</td>
                                                    <td>{format_utc(s.expires_at)}</td>
                                                    <td>
                                                        <ActionForm action=revoke>
                                                            <input type="hidden" name="id" value=s.id />
                                                            <button type="submit" class="danger small">
                                                                "Revoke"
                                                            </button>
                                                        </ActionForm>
                                                    </td>
                                                </tr>
                                            }
                                        })
                                        .collect_view()}
                                </tbody>
                            </table>
                        }
                    })
            })}
        </Transition>
    }
}
