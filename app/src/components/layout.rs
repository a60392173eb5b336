//! The signed-in frame: top navigation, the user menu, and the page below.

use leptos::prelude::*;
use leptos_router::components::{Outlet, Redirect, A};

use crate::api::accounts::{current_user, SignOut};
use crate::error::AppError;
use crate::models::Me;

/// The console's sections, in the order the navigation shows them.
pub const SECTIONS: &[(&str, &str)] = &[
    ("/jobs", "Jobs"),
    ("/paddleboard", "PaddleBoard"),
    ("/serving", "Serving"),
    ("/datasets", "Datasets"),
    ("/models", "Models"),
    ("/notebooks", "Notebooks"),
    ("/account", "Account"),
];

/// Frame of every signed-in page. Provides [`Me`] as context to the pages.
#[component]
pub fn Layout() -> impl IntoView {
    let me = OnceResource::new(current_user());
    view! {
        <Suspense fallback=|| view! { <p class="loading">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match me.await {
                    Ok(me) => {
                        provide_context(me.clone());
                        view! {
                            <TopNav me />
                            <main class="page">
                                <Outlet />
                            </main>
                        }
                            .into_any()
                    }
                    Err(AppError::Unauthenticated) => view! { <Redirect path="/login" /> }.into_any(),
                    Err(err) => {
                        view! {
                            <main class="page">
                                <p class="banner error" role="alert">
                                    {err.to_string()}
                                </p>
                            </main>
                        }
                            .into_any()
                    }
                }
            })}
        </Suspense>
    }
}

#[component]
fn TopNav(me: Me) -> impl IntoView {
    let sign_out = ServerAction::<SignOut>::new();
    view! {
        <header class="topbar">
            <a class="brand" href="/jobs">
                <span class="logo" aria-hidden="true">"▲"</span>
                "PaddleCloud"
            </a>
            <nav aria-label="Main">
                <ul>
                    {SECTIONS
                        .iter()
                        .map(|(href, label)| {
                            view! {
                                <li>
                                    <A href=*href>{*label}</A>
                                </li>
                            }
                        })
                        .collect_view()}
                </ul>
            </nav>
            // <details> opens without JavaScript, so signing out always works.
            <details class="user-menu">
                <summary>
                    <span class="account-name">{me.account.name.clone()}</span>
                    <span class="email">{me.email.clone()}</span>
                </summary>
                <div class="menu">
                    <p class="role">{format!("{} of {}", me.role.as_str(), me.account.name)}</p>
                    <A href="/account">"Account settings"</A>
                    <ActionForm action=sign_out>
                        <button type="submit" class="link">
                            "Sign out"
                        </button>
                    </ActionForm>
                </div>
            </details>
        </header>
    }
}
