//! The Account page's own-security parts: the email address and its
//! confirmation, the password, and (for owners) the account's audit log.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use super::audit::AuditTable;
use crate::api::accounts::{account_audit, ChangePassword, ResendConfirmation};
use crate::components::form::{last_error, FieldError, FormError, PasswordInput};
use crate::components::resource::resource;
use crate::models::{AuditQuery, Me, Role, MIN_PASSWORD_LEN};

/// The address, whether it is confirmed, and "send the link again".
#[component]
pub fn EmailSection(
    /// The signed-in user.
    me: Me,
) -> impl IntoView {
    let resend = ServerAction::<ResendConfirmation>::new();
    let error = Signal::derive(last_error(resend));
    let query = use_query_map();
    let notice = move || {
        let q = query.read();
        if q.get("email").as_deref() == Some("confirmed") {
            Some("Your email address is confirmed.".to_owned())
        } else if q.get("confirmation").as_deref() == Some("sent") {
            Some("A new confirmation link is on its way; look in spam too.".to_owned())
        } else {
            None
        }
    };
    view! {
        <h2 id="email">"Email address"</h2>
        {move || notice().map(|text| view! { <p class="banner" role="status" data-testid="email-notice">{text}</p> })}
        <p data-testid="email-state">
            {if me.email_confirmed {
                format!("{} is confirmed.", me.email)
            } else {
                format!("{} is not confirmed yet: follow the link we mailed you.", me.email)
            }}
        </p>
        {(!me.email_confirmed)
            .then(|| {
                view! {
                    <ActionForm action=resend>
                        <FormError error />
                        <FieldError error field="email" />
                        <button type="submit">"Send the link again"</button>
                    </ActionForm>
                }
            })}
    }
}

/// Change the password: the current one, the new one, and whether the
/// access keys go too.
#[component]
pub fn PasswordSection() -> impl IntoView {
    let change = ServerAction::<ChangePassword>::new();
    let error = Signal::derive(last_error(change));
    let query = use_query_map();
    let changed = move || query.read().get("password").as_deref() == Some("changed");
    let required = move || query.read().get("password").as_deref() == Some("required");
    view! {
        <h2 id="password-section">"Password"</h2>
        {move || {
            changed()
                .then(|| {
                    view! {
                        <p class="banner" role="status" data-testid="password-notice">
                            "Your password is changed. Every other session of yours has ended."
                        </p>
                    }
                })
        }}
        {move || {
            required()
                .then(|| {
                    view! {
                        <p class="banner error" role="alert" data-testid="password-required">
                            "Choose a new password: the one you signed in with was generated for you."
                        </p>
                    }
                })
        }}
        <ActionForm action=change attr:class="stacked" attr:data-testid="password-form">
            <FormError error />
            <label for="current">"Current password"</label>
            <PasswordInput autocomplete="current-password" name="current" />
            <FieldError error field="current" />
            <label for="password">"New password"</label>
            <PasswordInput autocomplete="new-password" />
            <p class="hint">{format!("At least {MIN_PASSWORD_LEN} characters.")}</p>
            <FieldError error field="password" />
            <label class="check">
                <input type="checkbox" name="revoke_keys" value="on" />
                " Also revoke my access keys (scripts and the CLI will need new ones)"
            </label>
            <button type="submit" class="primary">
                "Change password"
            </button>
        </ActionForm>
    }
}

/// Events of the audit log the Account page shows; the rest are a link away.
pub const LATEST_AUDIT_EVENTS: u32 = 10;

/// The account's latest audit events, for its owners, with a link to the
/// whole log (filtered and paged on a page of its own).
#[component]
pub fn AuditSection(
    /// The signed-in user.
    me: Me,
) -> impl IntoView {
    if me.role != Role::Owner {
        return ().into_any();
    }
    let latest = AuditQuery {
        limit: Some(LATEST_AUDIT_EVENTS),
        ..AuditQuery::default()
    };
    let log = resource(move || latest.clone(), |q| account_audit(q, None));
    view! {
        <h2>"Audit log"</h2>
        <p class="hint">
            "Who changed members, passwords, keys and the quota, and when: the latest events. "
            <a href="/account/audit" data-testid="audit-all">"The whole log"</a>
            " · "
            <a href="/api/v1/audit.csv" download data-testid="audit-csv">"Download CSV"</a>
        </p>
        <Suspense fallback=|| view! { <p class="loading">"Loading…"</p> }>
            {move || Suspend::new(async move {
                log.await.map(|log| {
                    let older = log
                        .older
                        .map(|c| format!("/account/audit?before={}", crate::models::url::encode(&c)));
                    view! {
                        <AuditTable events=log.events />
                        {older.map(|href| view! {
                            <p><a href=href data-testid="audit-more">"Older events in the whole log →"</a></p>
                        })}
                    }
                })
            })}
        </Suspense>
    }
    .into_any()
}
