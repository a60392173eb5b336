//! The HTML document and the route table.

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, MetaTags, Stylesheet, Title};
use leptos_router::components::{ParentRoute, Redirect, Route, Router, Routes};
use leptos_router::{path, SsrMode};

use crate::components::layout::Layout;
use crate::models::AssetKind;
use crate::pages::assets::settings::AssetSettingsPage;
use crate::pages::assets::{detail::AssetPage, detail::SharedPage, AssetsPage};
use crate::pages::{
    account::AccountPage,
    admin::AdminPage,
    alerts::AlertsPage,
    audit::AuditLogPage,
    auth::ConfirmPage,
    auth::ForgotPage,
    auth::LoginPage,
    auth::ResetPage,
    auth::SignUpPage,
    environments::{EnvironmentPage, EnvironmentsPage},
    experiments::{ExperimentPage, ExperimentsPage, NewExperimentPage},
    jobs::compare::ComparePage,
    jobs::detail::JobPage,
    jobs::resources::JobResourcesPage,
    jobs::JobsPage,
    join::JoinPage,
    lineage::LineagePage,
    not_found::NotFound,
    notebook_history::{NotebookDiffPage, NotebookHistoryPage},
    notebook_runs::NotebookRunPage,
    notebook_shares::{NotebookLinkPage, SharedNotebooksPage},
    notebooks::NotebooksPage,
    notifications::NotificationsPage,
    paddleboard::PaddleBoardPage,
    pipelines::{PipelinePage, PipelinesPage},
    queue::QueuePage,
    quota::QuotaPageView,
    schedules::{SchedulePage, SchedulesPage},
    scoring::ScoringPage,
    secrets::SecretsPage,
    serving::traffic::ServingTrafficPage,
    serving::ServingPage,
    template_save::SaveAsTemplatePage,
    templates::{TemplateRunPage, TemplatesPage},
};

// Pages render on the server only (islands mode): the browser gets their HTML
// and hydrates just the islands in it (`#[island]` components: totals, the
// log pane, live regions, the uploader…). Links and forms are plain HTML, so
// moving between pages is a page load, as it is without JavaScript.

/// The whole HTML document the server streams for every page; for a live
/// region's refresh, a bare one (no scripts: the page that asked has them).
pub fn shell(options: LeptosOptions) -> impl IntoView {
    let whole = crate::components::live::requested_regions().is_none();
    crate::components::security::set_page_policy();
    if !whole {
        // What `HydrationScripts` does in islands mode: the page's resources
        // are not serialized for a browser that hydrates none of them.
        if let Some(context) = Owner::current_shared_context() {
            context.set_is_hydrating(false);
        }
    }
    // The remembered theme is on `<html>` from the first byte: no flash of
    // the other palette, with or without JavaScript.
    let theme = crate::components::theme::requested_theme();
    view! {
        <!DOCTYPE html>
        <html lang="en" data-theme=theme.as_str()>
            <head>
                {whole.then(|| view! {
                    <meta charset="utf-8" />
                    <meta name="viewport" content="width=device-width, initial-scale=1" />
                    <link rel="icon" href="/favicon.svg" type="image/svg+xml" />
                    <AutoReload options=options.clone() />
                    <HydrationScripts options islands=true />
                })}
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
                <Route path=path!("/login") view=|| view! { <LoginPage /> } ssr=SsrMode::Async />
                <Route path=path!("/signup") view=|| view! { <SignUpPage /> } ssr=SsrMode::Async />
                <Route path=path!("/forgot") view=|| view! { <ForgotPage /> } ssr=SsrMode::Async />
                <Route path=path!("/reset") view=|| view! { <ResetPage /> } ssr=SsrMode::Async />
                <Route path=path!("/confirm") view=|| view! { <ConfirmPage /> } ssr=SsrMode::Async />
                <Route path=path!("/join") view=|| view! { <JoinPage /> } ssr=SsrMode::Async />
                <Route path=path!("/shared/:token") view=|| view! { <SharedPage /> } ssr=SsrMode::Async />
                <Route path=path!("/shared/notebooks/:token") view=|| view! { <NotebookLinkPage /> } ssr=SsrMode::Async />
                <ParentRoute path=path!("") view=Layout ssr=SsrMode::Async>
                    <Route path=path!("") view=|| view! { <Redirect path="/jobs" /> } />
                    <Route path=path!("jobs") view=|| view! { <JobsPage /> } />
                    <Route path=path!("jobs/compare") view=|| view! { <ComparePage /> } />
                    <Route path=path!("jobs/:name") view=|| view! { <JobPage /> } />
                    <Route path=path!("jobs/:name/resources") view=|| view! { <JobResourcesPage /> } />
                    <Route path=path!("jobs/:name/template") view=|| view! { <SaveAsTemplatePage /> } />
                    <Route path=path!("paddleboard") view=|| view! { <PaddleBoardPage /> } />
                    <Route path=path!("lineage") view=|| view! { <LineagePage /> } />
                    <Route path=path!("serving") view=|| view! { <ServingPage /> } />
                    <Route path=path!("serving/:name") view=|| view! { <ServingTrafficPage /> } />
                    <Route path=path!("datasets") view=|| view! { <AssetsPage kind=AssetKind::Dataset /> } />
                    <Route path=path!("datasets/:owner/:name") view=|| view! { <AssetPage kind=AssetKind::Dataset /> } />
                    <Route path=path!("datasets/:owner/:name/settings") view=|| view! { <AssetSettingsPage kind=AssetKind::Dataset /> } />
                    <Route path=path!("models") view=|| view! { <AssetsPage kind=AssetKind::Model /> } />
                    <Route path=path!("models/:owner/:name") view=|| view! { <AssetPage kind=AssetKind::Model /> } />
                    <Route path=path!("models/:owner/:name/settings") view=|| view! { <AssetSettingsPage kind=AssetKind::Model /> } />
                    <Route path=path!("notebooks") view=|| view! { <NotebooksPage /> } />
                    <Route path=path!("notebooks/shared") view=|| view! { <SharedNotebooksPage /> } />
                    <Route path=path!("notebooks/:name/history") view=|| view! { <NotebookHistoryPage /> } />
                    <Route path=path!("notebooks/:name/run") view=|| view! { <NotebookRunPage /> } />
                    <Route path=path!("notebooks/:name/diff") view=|| view! { <NotebookDiffPage /> } />
                    <Route path=path!("templates") view=|| view! { <TemplatesPage /> } />
                    <Route path=path!("environments") view=|| view! { <EnvironmentsPage /> } />
                    <Route path=path!("pipelines") view=|| view! { <PipelinesPage /> } />
                    <Route path=path!("pipelines/:name") view=|| view! { <PipelinePage /> } />
                    <Route path=path!("schedules") view=|| view! { <SchedulesPage /> } />
                    <Route path=path!("schedules/:name") view=|| view! { <SchedulePage /> } />
                    <Route path=path!("scorings/new") view=|| view! { <ScoringPage /> } />
                    <Route path=path!("experiments") view=|| view! { <ExperimentsPage /> } />
                    <Route path=path!("experiments/new") view=|| view! { <NewExperimentPage /> } />
                    <Route path=path!("experiments/:name") view=|| view! { <ExperimentPage /> } />
                    <Route path=path!("environments/:name") view=|| view! { <EnvironmentPage /> } />
                    <Route path=path!("templates/:name") view=|| view! { <TemplateRunPage /> } />
                    <Route path=path!("alerts") view=|| view! { <AlertsPage /> } />
                    <Route path=path!("secrets") view=|| view! { <SecretsPage /> } />
                    <Route path=path!("notifications") view=|| view! { <NotificationsPage /> } />
                    <Route path=path!("quota") view=|| view! { <QuotaPageView /> } />
                    <Route path=path!("queue") view=|| view! { <QueuePage /> } />
                    <Route path=path!("account") view=|| view! { <AccountPage /> } />
                    <Route path=path!("account/audit") view=|| view! { <AuditLogPage /> } />
                    <Route path=path!("admin") view=|| view! { <AdminPage /> } />
                </ParentRoute>
            </Routes>
        </Router>
    }
}
