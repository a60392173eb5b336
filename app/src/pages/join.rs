//! `/join?token=…`: where an invitation's link lands. Says which account
//! and role it offers, then joins with one click (signed in as the invited
//! address), the invitee's password (an existing user), or a new one.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::api::members::{invitation, AcceptInvitation};
use crate::components::form::{last_error, FieldError, FormError, PasswordInput};
use crate::components::resource::resource;
use crate::models::MIN_PASSWORD_LEN;

/// The invitation page.
#[component]
pub fn JoinPage() -> impl IntoView {
    let action = ServerAction::<AcceptInvitation>::new();
    let error = Signal::derive(last_error(action));
    let query = use_query_map();
    let token = move || query.read().get("token").unwrap_or_default();
    let offer = resource(token, invitation);
    view! {
        <Title text="Join an account" />
        <main class="auth">
            <h1>"Join an account"</h1>
            <Suspense fallback=|| view! { <p class="loading">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match offer.await {
                        Err(err) => {
                            view! {
                                <p class="banner error" role="alert" data-testid="invitation-error">
                                    {err.to_string()}
                                </p>
                            }
                                .into_any()
                        }
                        Ok(offer) => {
                            let password = (!offer.signed_in_as_invitee)
                                .then(|| {
                                    let (label, hint, autocomplete) = if offer.user_exists {
                                        (
                                            format!("Your password for {}", offer.email),
                                            "The one you sign in to your other accounts with.".to_owned(),
                                            "current-password",
                                        )
                                    } else {
                                        (
                                            "Choose a password".to_owned(),
                                            format!("At least {MIN_PASSWORD_LEN} characters."),
                                            "new-password",
                                        )
                                    };
                                    view! {
                                        <label for="password">{label}</label>
                                        <PasswordInput autocomplete />
                                        <p class="hint">{hint}</p>
                                        <FieldError error field="password" />
                                    }
                                });
                            view! {
                                <p data-testid="invitation">
                                    {format!(
                                        "{} invited {} to the account “{}” as {}.",
                                        offer.invited_by,
                                        offer.email,
                                        offer.account,
                                        offer.role.as_str(),
                                    )}
                                </p>
                                <ActionForm action>
                                    <FormError error />
                                    <FieldError error field="token" />
                                    <input type="hidden" name="token" value=token />
                                    {password}
                                    <button type="submit" class="primary">
                                        {format!("Join {}", offer.account)}
                                    </button>
                                </ActionForm>
                            }
                                .into_any()
                        }
                    }
                })}
            </Suspense>
        </main>
    }
}
