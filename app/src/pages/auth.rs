//! Sign-in and sign-up: plain forms that post to server functions, so they
//! work (errors included) with JavaScript off.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::api::accounts::{SignIn, SignUp};
use crate::components::form::{last_error, FieldError, FormError, PasswordInput};
use crate::models::MIN_PASSWORD_LEN;

/// `/login`: account, email, password.
#[component]
pub fn LoginPage() -> impl IntoView {
    let action = ServerAction::<SignIn>::new();
    let error = Signal::derive(last_error(action));
    let query = use_query_map();
    let next = move || query.read().get("next").unwrap_or_default();
    view! {
        <Title text="Sign in" />
        <main class="auth">
            <h1>"Sign in to PaddleCloud"</h1>
            <ActionForm action>
                <FormError error />
                <label for="account">"Account"</label>
                <input id="account" name="account" autocomplete="organization" required />
                <label for="email">"Email"</label>
                <input id="email" name="email" type="email" autocomplete="username" required />
                <label for="password">"Password"</label>
                <PasswordInput autocomplete="current-password" />
                <input type="hidden" name="next" value=next />
                <button type="submit" class="primary">
                    "Sign in"
                </button>
            </ActionForm>
            <p class="switch">"New here? " <a href="/signup">"Create an account"</a></p>
        </main>
    }
}

/// `/signup`: creates an account (a tenant) with the signer as its owner.
#[component]
pub fn SignUpPage() -> impl IntoView {
    let action = ServerAction::<SignUp>::new();
    let error = Signal::derive(last_error(action));
    view! {
        <Title text="Create an account" />
        <main class="auth">
            <h1>"Create a PaddleCloud account"</h1>
            <p class="hint">
                "An account is your team's space: its own cluster namespace, quota and members. You become its owner."
            </p>
            <ActionForm action>
                <FormError error />
                <label for="account">"Account name"</label>
                <input
                    id="account"
                    name="account"
                    autocomplete="organization"
                    required
                    minlength="3"
                    maxlength="40"
                    aria-describedby="account-hint"
                />
                <p class="hint" id="account-hint">
                    "3–40 lower-case letters, digits and '-', starting with a letter."
                </p>
                <FieldError error field="account" />
                <label for="email">"Email"</label>
                <input id="email" name="email" type="email" autocomplete="email" required />
                <FieldError error field="email" />
                <label for="password">"Password"</label>
                <PasswordInput autocomplete="new-password" />
                <p class="hint">{format!("At least {MIN_PASSWORD_LEN} characters.")}</p>
                <FieldError error field="password" />
                <button type="submit" class="primary">
                    "Create account"
                </button>
            </ActionForm>
            <p class="switch">"Already have an account? " <a href="/login">"Sign in"</a></p>
        </main>
    }
}
