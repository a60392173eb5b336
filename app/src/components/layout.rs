//! The signed-in frame: top navigation, the user menu, and the page below.

use leptos::prelude::*;
use leptos::server_fn::ServerFn;
use leptos_router::components::{Outlet, Redirect};
use leptos_router::hooks::use_location;

use crate::api::accounts::{current_user, SignOut};
use crate::api::jobs::cluster_health;
use crate::api::members::{my_accounts, SwitchAccount};
use crate::components::resource::{once_resource, OnceResource};
use crate::components::theme::{requested_theme, ThemeChooser};
use crate::error::AppError;
use crate::models::{Me, Membership, Role};

/// The console's sections, in the order the navigation shows them.
pub const SECTIONS: &[(&str, &str)] = &[
    ("/jobs", "Jobs"),
    ("/templates", "Templates"),
    ("/environments", "Environments"),
    ("/pipelines", "Pipelines"),
    ("/experiments", "Experiments"),
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
/// fetched each of its resources twice. The header, its account switcher
/// and the banners wait in that one Suspense: a boundary each cost every
/// page a pass of its own.
#[component]
pub fn Layout() -> impl IntoView {
    let me: CurrentUser = once_resource(current_user());
    provide_context(me);
    if crate::components::live::requested_regions().is_some() {
        // A live region's refresh: the page's regions alone, no frame.
        return view! { <Outlet /> }.into_any();
    }
    // Made here, outside the Suspense: made inside, they were made (and
    // their queries run) once per pass the server renders the Suspense in.
    let accounts = once_resource(my_accounts());
    let health = once_resource(cluster_health());
    view! {
        <Suspense fallback=|| view! { <header class="topbar"></header> }>
            {move || Suspend::new(async move {
                match me.await {
                    Ok(me) => {
                        let accounts = accounts.await.unwrap_or_default();
                        let unreachable = health.await.ok().flatten();
                        view! {
                            {top_nav(me.clone(), accounts)}
                            {banners(&me)}
                            {unreachable.map(cluster_banner)}
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
        <main class="page">
            <Outlet />
        </main>
    }
    .into_any()
}

/// What every page says of the user until they act on it: an address to
/// confirm, a viewer's role, a generated password to replace.
fn banners(me: &Me) -> impl IntoView {
    let unconfirmed = (!me.email_confirmed).then(|| {
        view! {
            <p class="banner" data-testid="confirm-email">
                {format!("Confirm your email address: we sent a link to {}. ", me.email)}
                <a href="/account#email">"Send it again"</a>
            </p>
        }
    });
    let viewer = (me.role == Role::Viewer).then(|| {
        view! {
            <p class="banner" data-testid="viewer-banner">
                {format!(
                    "You are a viewer of {}: you see everything and change nothing. Ask an owner for the member role to run work.",
                    me.account.name,
                )}
            </p>
        }
    });
    let new_password = me.must_change_password.then(|| {
        view! {
            <p class="banner error" data-testid="change-password-banner">
                "Your password was generated for you: choose your own below before going on."
            </p>
        }
    });
    (unconfirmed, viewer, new_password)
}

/// "Cluster unreachable" (and why): pages still show what the console
/// knows, and say why actions on the cluster fail.
fn cluster_banner(why: String) -> impl IntoView {
    view! {
        <p class="banner error cluster-banner" role="alert" data-testid="cluster-banner">
            <strong>"Cluster unreachable. "</strong>
            {why}
            " Jobs shown are as last seen; submitting, stopping and logs of running pods wait for it."
        </p>
    }
}

/// Whether the page at `here` is in the section at `href` (the section's
/// own page or one below it), as its link's `aria-current` says.
fn in_section(href: &str, here: &str) -> bool {
    here.strip_prefix(href)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// The header: sections, the account menu. Plain links and forms: the frame
/// is never hydrated, and the router's `<A>` and `<ActionForm>` set up
/// reactive state for each of them only to print the same HTML.
fn top_nav(me: Me, accounts: Vec<Membership>) -> impl IntoView {
    let location = use_location();
    let here = location.pathname.get_untracked();
    let back = with_query(&here, &location.search.get_untracked());
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
                            let current = in_section(href, &here).then_some("page");
                            view! {
                                <li>
                                    <a href=*href aria-current=current>{*label}</a>
                                </li>
                            }
                        })
                        .collect_view()}
                </ul>
            </nav>
            <ThemeChooser theme=requested_theme() back />
            // <details> opens without JavaScript, so signing out always works.
            <details class="user-menu">
                <summary>
                    <span class="account-name">{me.account.name.clone()}</span>
                    <span class="email">{me.email.clone()}</span>
                </summary>
                <div class="menu">
                    <p class="role">{format!("{} of {}", me.role.as_str(), me.account.name)}</p>
                    {account_switcher(&me.account.name, accounts)}
                    <a href="/account">"Account settings"</a>
                    <a href="/notifications">"Notifications"</a>
                    <a href="/secrets">"Secrets"</a>
                    {me.site_admin.then(|| view! { <a href="/admin">"Site administration"</a> })}
                    <form action=SignOut::url() method="post">
                        <button type="submit" class="link">
                            "Sign out"
                        </button>
                    </form>
                </div>
            </details>
        </header>
    }
}

/// `path` with its query string (`search`, with or without its `?`).
fn with_query(path: &str, search: &str) -> String {
    match search.trim_start_matches('?') {
        "" => path.to_owned(),
        query => format!("{path}?{query}"),
    }
}

/// The user's other accounts, one button each: a user may belong to
/// several, and this browser works in one at a time (`current`).
fn account_switcher(current: &str, accounts: Vec<Membership>) -> impl IntoView {
    let others: Vec<_> = accounts
        .into_iter()
        .filter(|m| m.account != current)
        .collect();
    (!others.is_empty()).then(|| {
        view! {
            <div class="switcher" data-testid="account-switcher">
                <p class="hint">"Switch to"</p>
                {others
                    .into_iter()
                    .map(|m| {
                        view! {
                            <form action=SwitchAccount::url() method="post">
                                <input type="hidden" name="account" value=m.account.clone() />
                                <button type="submit" class="link">
                                    {format!("{} ({})", m.account, m.role.as_str())}
                                </button>
                            </form>
                        }
                    })
                    .collect_view()}
            </div>
        }
    })
}

#[cfg(test)]
mod tests {
    use super::{in_section, with_query};

    #[test]
    fn the_theme_chooser_comes_back_to_the_page_with_its_query() {
        assert_eq!(with_query("/jobs", ""), "/jobs");
        assert_eq!(with_query("/jobs", "status=failed"), "/jobs?status=failed");
        assert_eq!(with_query("/jobs", "?status=failed"), "/jobs?status=failed");
    }

    #[test]
    fn a_section_is_current_on_its_page_and_the_pages_below_it() {
        assert!(in_section("/jobs", "/jobs"));
        assert!(in_section("/jobs", "/jobs/train/resources"));
        assert!(!in_section("/jobs", "/jobsx"));
        assert!(!in_section("/account", "/quota"));
    }
}
