//! The HTML document and the route table.

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, MetaTags, Stylesheet, Title};
use leptos_router::components::{ParentRoute, Redirect, Route, Router, Routes};
use leptos_router::{lazy_route, path, Lazy, LazyRoute, SsrMode};

use crate::components::layout::Layout;
use crate::models::AssetKind;
use crate::pages::assets::settings::AssetSettingsPage;
use crate::pages::assets::{detail::AssetPage, detail::SharedPage, AssetsPage};
use crate::pages::{
    account::AccountPage, auth::LoginPage, auth::SignUpPage, jobs::resources::JobResourcesPage,
    jobs::JobsPage, not_found::NotFound, paddleboard::PaddleBoardPage, placeholder::SectionPage,
    quota::QuotaPageView, serving::traffic::ServingTrafficPage, serving::ServingPage,
};

// Each page below is a lazy route: its code is a separate wasm module that the
// browser fetches with the page (scripts/build.sh splits the bundle), so the
// first load carries the shell and the page at hand, not the whole console.
// A page's data still loads with its view: each page creates its own resources.

/// `/login`.
struct LoginRoute;
#[lazy_route]
impl LazyRoute for LoginRoute {
    fn data() -> Self {
        Self
    }
    fn view(_this: Self) -> AnyView {
        view! { <LoginPage /> }.into_any()
    }
}

/// `/signup`.
struct SignUpRoute;
#[lazy_route]
impl LazyRoute for SignUpRoute {
    fn data() -> Self {
        Self
    }
    fn view(_this: Self) -> AnyView {
        view! { <SignUpPage /> }.into_any()
    }
}

/// `/jobs`.
struct JobsRoute;
#[lazy_route]
impl LazyRoute for JobsRoute {
    fn data() -> Self {
        Self
    }
    fn view(_this: Self) -> AnyView {
        view! { <JobsPage /> }.into_any()
    }
}

/// `/paddleboard`.
struct PaddleBoardRoute;
#[lazy_route]
impl LazyRoute for PaddleBoardRoute {
    fn data() -> Self {
        Self
    }
    fn view(_this: Self) -> AnyView {
        view! { <PaddleBoardPage /> }.into_any()
    }
}

/// `/datasets`.
struct DatasetsRoute;
#[lazy_route]
impl LazyRoute for DatasetsRoute {
    fn data() -> Self {
        Self
    }
    fn view(_this: Self) -> AnyView {
        view! { <AssetsPage kind=AssetKind::Dataset /> }.into_any()
    }
}

/// `/models`.
struct ModelsRoute;
#[lazy_route]
impl LazyRoute for ModelsRoute {
    fn data() -> Self {
        Self
    }
    fn view(_this: Self) -> AnyView {
        view! { <AssetsPage kind=AssetKind::Model /> }.into_any()
    }
}

/// `/datasets/:owner/:name`.
struct DatasetRoute;
#[lazy_route]
impl LazyRoute for DatasetRoute {
    fn data() -> Self {
        Self
    }
    fn view(_this: Self) -> AnyView {
        view! { <AssetPage kind=AssetKind::Dataset /> }.into_any()
    }
}

/// `/models/:owner/:name`.
struct ModelRoute;
#[lazy_route]
impl LazyRoute for ModelRoute {
    fn data() -> Self {
        Self
    }
    fn view(_this: Self) -> AnyView {
        view! { <AssetPage kind=AssetKind::Model /> }.into_any()
    }
}

/// `/datasets/:owner/:name/settings`.
struct DatasetSettingsRoute;
#[lazy_route]
impl LazyRoute for DatasetSettingsRoute {
    fn data() -> Self {
        Self
    }
    fn view(_this: Self) -> AnyView {
        view! { <AssetSettingsPage kind=AssetKind::Dataset /> }.into_any()
    }
}

/// `/models/:owner/:name/settings`.
struct ModelSettingsRoute;
#[lazy_route]
impl LazyRoute for ModelSettingsRoute {
    fn data() -> Self {
        Self
    }
    fn view(_this: Self) -> AnyView {
        view! { <AssetSettingsPage kind=AssetKind::Model /> }.into_any()
    }
}

/// `/shared/:token`: open to anyone holding the link.
struct SharedRoute;
#[lazy_route]
impl LazyRoute for SharedRoute {
    fn data() -> Self {
        Self
    }
    fn view(_this: Self) -> AnyView {
        view! { <SharedPage /> }.into_any()
    }
}

/// `/jobs/:name/resources`.
struct JobResourcesRoute;
#[lazy_route]
impl LazyRoute for JobResourcesRoute {
    fn data() -> Self {
        Self
    }
    fn view(_this: Self) -> AnyView {
        view! { <JobResourcesPage /> }.into_any()
    }
}

/// `/serving`.
struct ServingRoute;
#[lazy_route]
impl LazyRoute for ServingRoute {
    fn data() -> Self {
        Self
    }
    fn view(_this: Self) -> AnyView {
        view! { <ServingPage /> }.into_any()
    }
}

/// `/serving/:name`.
struct ServingTrafficRoute;
#[lazy_route]
impl LazyRoute for ServingTrafficRoute {
    fn data() -> Self {
        Self
    }
    fn view(_this: Self) -> AnyView {
        view! { <ServingTrafficPage /> }.into_any()
    }
}

/// `/quota`.
struct QuotaRoute;
#[lazy_route]
impl LazyRoute for QuotaRoute {
    fn data() -> Self {
        Self
    }
    fn view(_this: Self) -> AnyView {
        view! { <QuotaPageView /> }.into_any()
    }
}

/// `/account`.
struct AccountRoute;
#[lazy_route]
impl LazyRoute for AccountRoute {
    fn data() -> Self {
        Self
    }
    fn view(_this: Self) -> AnyView {
        view! { <AccountPage /> }.into_any()
    }
}

/// The whole HTML document the server streams for every page.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8" />
                <meta name="viewport" content="width=device-width, initial-scale=1" />
                <link rel="icon" href="/favicon.svg" type="image/svg+xml" />
                <AutoReload options=options.clone() />
                <HydrationScripts options />
                <MetaTags />
            </head>
            <body>
                <App />
            </body>
        </html>
    }
}

/// The app: routes for the signed-out pages and, under [`Layout`], the console.
///
/// Every route renders with `SsrMode::Async` so the server sends finished HTML:
/// pages must work with JavaScript off, and out-of-order streaming needs it.
#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    view! {
        <Stylesheet id="leptos" href="/pkg/paddlecloud.css" />
        <Title formatter=|text| format!("{text} · PaddleCloud") />
        <Router>
            <Routes fallback=NotFound>
                <Route path=path!("/login") view={Lazy::<LoginRoute>::new()} ssr=SsrMode::Async />
                <Route path=path!("/signup") view={Lazy::<SignUpRoute>::new()} ssr=SsrMode::Async />
                <Route path=path!("/shared/:token") view={Lazy::<SharedRoute>::new()} ssr=SsrMode::Async />
                <ParentRoute path=path!("") view=Layout ssr=SsrMode::Async>
                    <Route path=path!("") view=|| view! { <Redirect path="/jobs" /> } />
                    <Route path=path!("jobs") view={Lazy::<JobsRoute>::new()} />
                    <Route path=path!("jobs/:name/resources") view={Lazy::<JobResourcesRoute>::new()} />
                    <Route path=path!("paddleboard") view={Lazy::<PaddleBoardRoute>::new()} />
                    <Route path=path!("serving") view={Lazy::<ServingRoute>::new()} />
                    <Route path=path!("serving/:name") view={Lazy::<ServingTrafficRoute>::new()} />
                    <Route path=path!("datasets") view={Lazy::<DatasetsRoute>::new()} />
                    <Route path=path!("datasets/:owner/:name") view={Lazy::<DatasetRoute>::new()} />
                    <Route path=path!("datasets/:owner/:name/settings") view={Lazy::<DatasetSettingsRoute>::new()} />
                    <Route path=path!("models") view={Lazy::<ModelsRoute>::new()} />
                    <Route path=path!("models/:owner/:name") view={Lazy::<ModelRoute>::new()} />
                    <Route path=path!("models/:owner/:name/settings") view={Lazy::<ModelSettingsRoute>::new()} />
                    <Route
                        path=path!("notebooks")
                        view=|| view! { <SectionPage section="notebooks" /> }
                    />
                    <Route path=path!("quota") view={Lazy::<QuotaRoute>::new()} />
                    <Route path=path!("account") view={Lazy::<AccountRoute>::new()} />
                </ParentRoute>
            </Routes>
        </Router>
    }
}
