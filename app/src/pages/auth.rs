//! Sign-in and sign-up: plain forms that post to server functions, so they
//! work (errors included) with JavaScript off.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::api::accounts::{
    ConfirmEmail, RequestPasswordReset, ResetPassword, SignIn, SignInDirectory, SignUp,
};
use crate::components::form::{last_error, FieldError, FormError, PasswordInput};
use crate::models::{MIN_PASSWORD_LEN, RESET_LINK_MINUTES};

/// `/login`: account, email, password.
#[component]
pub fn LoginPage() -> impl IntoView {
    let action = ServerAction::<SignIn>::new();
    let error = Signal::derive(last_error(action));
    let directory_action = ServerAction::<SignInDirectory>::new();
    let directory_error = Signal::derive(last_error(directory_action));
    let query = use_query_map();
    let next = move || query.read().get("next").unwrap_or_default();
    // Where the user came from: a finished reset, or a sign-up waiting for
    // its confirmation link.
    let notice = move || {
        let q = query.read();
        if q.get("reset").as_deref() == Some("done") {
            Some("Your password is set; sign in with the new one. Every session you had has ended.")
        } else if q.get("confirm").as_deref() == Some("sent") {
            Some("We sent a confirmation link to your address: follow it, then sign in.")
        } else {
            None
        }
    };
    let options =
        crate::components::resource::resource(|| (), |_| crate::api::accounts::sign_in_options());
    view! {
        <Title text="Sign in" />
        <main class="auth">
            <h1>"Sign in to PaddleCloud"</h1>
            {move || notice().map(|text| view! { <p class="banner" role="status" data-testid="notice">{text}</p> })}
            <Transition fallback=|| ()>
                {move || Suspend::new(async move {
                    let options = options.await.unwrap_or_default();
                    let sso = options.single_sign_on.clone().map(|name| {
                        let href = format!("/auth/oidc/login?next={}", crate::models::url::encode(&next()));
                        view! {
                            <p class="single-sign-on">
                                <a class="button primary" href=href data-testid="single-sign-on">{format!("Sign in with {name}")}</a>
                            </p>
                        }
                    });
                    let password = options.password.then(|| view! {
                        {(options.single_sign_on.is_some()).then(|| view! { <p class="hint">"Or with your PaddleCloud password:"</p> })}
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
                        <p class="switch">
                            <a href="/forgot">"Forgot password?"</a>
                            " · New here? "
                            <a href="/signup">"Create an account"</a>
                        </p>
                    });
                    let directory = options.directory.clone().map(|name| view! {
                        <section class="directory-sign-in" aria-labelledby="directory-title">
                            <h2 id="directory-title">{format!("Sign in with {name}")}</h2>
                            <ActionForm action=directory_action attr:data-testid="directory-form">
                                <FormError error=directory_error />
                                <label for="directory-username">"Username"</label>
                                <input id="directory-username" name="username" autocomplete="username" required />
                                <label for="directory-password">"Directory password"</label>
                                <input id="directory-password" name="password" type="password" autocomplete="current-password" required />
                                <input type="hidden" name="next" value=next />
                                <button type="submit" class="primary">{format!("Sign in with {name}")}</button>
                            </ActionForm>
                        </section>
                    });
                    view! { {sso} {directory} {password} }
                })}
            </Transition>
        </main>
    }
}

/// `/forgot`: asks for a reset link. The answer is the same whether or not
/// the address has an account.
#[component]
pub fn ForgotPage() -> impl IntoView {
    let action = ServerAction::<RequestPasswordReset>::new();
    let error = Signal::derive(last_error(action));
    let query = use_query_map();
    let sent = move || {
        query.read().get("sent").is_some() || action.value().get().is_some_and(|r| r.is_ok())
    };
    view! {
        <Title text="Forgot password" />
        <main class="auth">
            <h1>"Reset your password"</h1>
            {move || {
                sent()
                    .then(|| {
                        view! {
                            <p class="banner" role="status" data-testid="notice">
                                {format!(
                                    "If the account has a user with that address, a link to set a new password is on its way. It works once, for {RESET_LINK_MINUTES} minutes; look in spam too.",
                                )}
                            </p>
                        }
                    })
            }}
            <ActionForm action>
                <FormError error />
                <label for="account">"Account"</label>
                <input id="account" name="account" autocomplete="organization" required />
                <label for="email">"Email"</label>
                <input id="email" name="email" type="email" autocomplete="username" required />
                <button type="submit" class="primary">
                    "Mail me a reset link"
                </button>
            </ActionForm>
            <p class="switch">
                "Remembered it? " <a href="/login">"Sign in"</a>
            </p>
        </main>
    }
}

/// `/reset?token=…`: where a reset mail's link lands; sets a new password.
#[component]
pub fn ResetPage() -> impl IntoView {
    let action = ServerAction::<ResetPassword>::new();
    let error = Signal::derive(last_error(action));
    let query = use_query_map();
    let token = move || query.read().get("token").unwrap_or_default();
    view! {
        <Title text="Set a new password" />
        <main class="auth">
            <h1>"Set a new password"</h1>
            <ActionForm action>
                <FormError error />
                <FieldError error field="token" />
                <input type="hidden" name="token" value=token />
                <label for="password">"New password"</label>
                <PasswordInput autocomplete="new-password" />
                <p class="hint">{format!("At least {MIN_PASSWORD_LEN} characters. Every session you have ends.")}</p>
                <FieldError error field="password" />
                <button type="submit" class="primary">
                    "Set password"
                </button>
            </ActionForm>
            <p class="switch">
                "Link expired? " <a href="/forgot">"Ask for a new one"</a>
            </p>
        </main>
    }
}

/// `/confirm?token=…`: where a confirmation mail's link lands. A button,
/// not a visit, confirms: mail scanners open links too.
#[component]
pub fn ConfirmPage() -> impl IntoView {
    let action = ServerAction::<ConfirmEmail>::new();
    let error = Signal::derive(last_error(action));
    let query = use_query_map();
    let token = move || query.read().get("token").unwrap_or_default();
    view! {
        <Title text="Confirm your email address" />
        <main class="auth">
            <h1>"Confirm your email address"</h1>
            <ActionForm action>
                <FormError error />
                <FieldError error field="token" />
                <input type="hidden" name="token" value=token />
                <button type="submit" class="primary">
                    "Confirm my email address"
                </button>
            </ActionForm>
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
