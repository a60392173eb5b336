//! The signed-in frame: top navigation, the user menu, and the page below.

use leptos::prelude::*;
use leptos_router::components::{Outlet, Redirect, A};

use crate::api::accounts::{current_user, SignOut};
use crate::api::jobs::cluster_health;
use crate::components::resource::{once_resource, OnceResource};
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
    ("/quota", "Quota"),
    ("/account", "Account"),
];

/// The signed-in user, as a resource every page can await.
pub type CurrentUser = OnceResource<Result<Me, AppError>>;

/// Frame of every signed-in page. Provides [`CurrentUser`] as context.
///
/// The page (`Outlet`) is rendered beside, not inside, the Suspense that
/// waits for the user: inside it, the server rendered every page twice and
/// fetched each of its resources twice.
#[component]
pub fn Layout() -> impl IntoView {
    let me: CurrentUser = once_resource(current_user());
    provide_context(me);
    view! {
        <Suspense fallback=|| view! { <header class="topbar"></header> }>
            {move || Suspend::new(async move {
                match me.await {
                    Ok(me) => {
                        // Until the mailed link is followed, every page says so.
                        let unconfirmed = (!me.email_confirmed).then(|| {
                            view! {
                                <p class="banner" data-testid="confirm-email">
                                    {format!("Confirm your email address: we sent a link to {}. ", me.email)}
                                    <a href="/account#email">"Send it again"</a>
                                </p>
                            }
                        });
                        view! {
                            <TopNav me />
                            {unconfirmed}
                        }
                            .into_any()
                    }
                    Err(AppError::Unauthenticated) => view! { <Redirect path="/login" /> }.into_any(),
                    Err(err) => {
                        view! {
                            <p class="banner error" role="alert">
                                {err.to_string()}
                            </p>
                        }
                            .into_any()
                    }
                }
            })}
        </Suspense>
        <ClusterBanner />
        <main class="page">
            <Outlet />
        </main>
    }
}

/// "Cluster unreachable", when it is: pages still show what the console
/// knows, and say why actions on the cluster fail.
#[component]
fn ClusterBanner() -> impl IntoView {
    let health = once_resource(cluster_health());
    view! {
        <Suspense fallback=|| ()>
            {move || Suspend::new(async move {
                health.await.ok().flatten().map(|why| view! {
                    <p class="banner error cluster-banner" role="alert" data-testid="cluster-banner">
                        <strong>"Cluster unreachable. "</strong>
                        {why}
                        " Jobs shown are as last seen; submitting, stopping and logs of running pods wait for it."
                    </p>
                })
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
