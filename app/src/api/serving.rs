//! Serving: the table, the launch dialog, scale, stop, delete, traffic.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::AppError;
use crate::models::{ServingForm, ServingInstance, ServingList, ServingTraffic};

#[cfg(feature = "ssr")]
use super::context::{member, principal, redirect_back, redirect_back_without, services};

/// A model the launch dialog offers, with its versions that can be served.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelChoice {
    /// `owner/name`.
    pub model: String,
    /// Ready versions, newest first, with their tags.
    pub versions: Vec<(u32, Vec<String>)>,
    /// Its aliases and the versions they name: an instance launched on one
    /// follows it.
    #[serde(default)]
    pub aliases: Vec<(String, u32)>,
}

/// What the Serving page shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServingPage {
    /// The instances.
    pub list: ServingList,
    /// The console's URL as the caller reached it, which endpoints are under.
    pub origin: String,
}

/// The caller's serving instances.
#[server(prefix = "/api", endpoint = "list_serving")]
pub async fn list_serving() -> Result<ServingPage, AppError> {
    let who = principal()?;
    Ok(ServingPage {
        list: services()?.serving.list(&who.me.account).await?,
        origin: super::context::site_url(&super::context::request_parts()?),
    })
}

/// Models the caller can serve (their own, shared with them, public) and
/// their ready versions.
#[server(prefix = "/api", endpoint = "serving_models")]
pub async fn serving_models() -> Result<Vec<ModelChoice>, AppError> {
    let who = principal()?;
    let assets = services()?.assets;
    let viewer = crate::ports::Viewer::User(who.me.clone());
    let mut out = Vec::new();
    for asset in assets
        .list(&who.me, crate::models::AssetKind::Model)
        .await?
    {
        let r = asset.reference();
        let versions: Vec<(u32, Vec<String>)> = assets
            .versions(&viewer, &r)
            .await?
            .into_iter()
            .filter(|v| v.state == "ready")
            .map(|v| (v.version, v.tags))
            .collect();
        if !versions.is_empty() {
            let aliases = assets
                .aliases(&viewer, &r)
                .await?
                .into_iter()
                .map(|a| (a.alias, a.version))
                .collect();
            out.push(ModelChoice {
                model: format!("{}/{}", r.owner, r.name),
                versions,
                aliases,
            });
        }
    }
    Ok(out)
}

/// Launches an instance from the dialog's form.
#[server(prefix = "/api", endpoint = "launch_serving")]
pub async fn launch_serving(form: ServingForm) -> Result<ServingInstance, AppError> {
    let who = member()?;
    let spec = form.to_spec()?;
    let done = crate::use_cases::launch_within_quota(&services()?, &who.me, spec).await?;
    tracing::info!(account = %who.me.account.name, serving = %done.name, user = %who.me.email, "serving launched");
    redirect_back_without("launch", "/serving")?;
    Ok(done)
}

/// Scales an instance to `replicas` (a number typed in the table).
#[server(prefix = "/api", endpoint = "scale_serving")]
pub async fn scale_serving(name: String, replicas: String) -> Result<ServingInstance, AppError> {
    let who = member()?;
    let n = replicas.trim().parse().map_err(|_| {
        AppError::invalid("replicas", "The number of replicas must be a whole number.")
    })?;
    let scale = crate::models::Scale {
        replicas: Some(n),
        autoscale: None,
    };
    crate::use_cases::scale_within_quota(&services()?, &who.me, &name, scale).await
}

/// Stops an instance (every replica), keeping its record.
#[server(prefix = "/api", endpoint = "stop_serving")]
pub async fn stop_serving(name: String) -> Result<ServingInstance, AppError> {
    let who = member()?;
    services()?.serving.stop(&who.me.account, &name).await
}

/// Deletes an instance's record (stopping it first).
#[server(prefix = "/api", endpoint = "delete_serving")]
pub async fn delete_serving(name: String) -> Result<(), AppError> {
    let who = member()?;
    services()?.serving.delete(&who.me.account, &name).await
}

/// One instance's requests, latency and errors over `[from, to]` (Unix s).
#[server(prefix = "/api", endpoint = "serving_traffic_chart")]
pub async fn serving_traffic_chart(
    name: String,
    from: Option<f64>,
    to: Option<f64>,
) -> Result<ServingTraffic, AppError> {
    let who = principal()?;
    services()?
        .serving
        .traffic(&who.me.account, &name, from, to)
        .await
}

/// What an instance's page needs to release versions: the model's ready
/// versions and the calls its shadow got.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReleaseData {
    /// Ready versions of the instance's model, newest first.
    pub versions: Vec<u32>,
    /// The newest calls mirrored to its shadow.
    pub shadow_calls: Vec<crate::models::ShadowCall>,
    /// Whether the caller may release (a member, not a viewer).
    pub can_write: bool,
}

/// The instance's model's ready versions and its shadow's newest calls.
#[server(prefix = "/api", endpoint = "serving_release_data")]
pub async fn serving_release_data(name: String) -> Result<ReleaseData, AppError> {
    let who = principal()?;
    let services = services()?;
    let instance = services.serving.get(&who.me.account, &name).await?;
    let shadow_calls = services
        .serving
        .shadow_calls(&who.me.account, &name, 20)
        .await?;
    let (owner, model) = instance.model.split_once('/').ok_or(AppError::Internal)?;
    let r = crate::models::AssetRef {
        kind: crate::models::AssetKind::Model,
        owner: owner.to_owned(),
        name: model.to_owned(),
    };
    let viewer = crate::ports::Viewer::User(who.me.clone());
    let mut versions: Vec<u32> = services
        .assets
        .versions(&viewer, &r)
        .await?
        .into_iter()
        .filter(|v| v.state == "ready")
        .map(|v| v.version)
        .collect();
    versions.sort_unstable_by(|a, b| b.cmp(a));
    Ok(ReleaseData {
        versions,
        shadow_calls,
        can_write: who.me.role.may_change(),
    })
}

/// Starts, changes, promotes or rolls back a canary or shadow, from the
/// instance page's forms.
#[server(prefix = "/api", endpoint = "release_serving")]
pub async fn release_serving(
    name: String,
    change: crate::models::ReleaseForm,
) -> Result<ServingInstance, AppError> {
    let who = member()?;
    let release = change.to_release()?;
    let done =
        crate::use_cases::release_within_quota(&services()?, &who.me, &name, release).await?;
    tracing::info!(account = %who.me.account.name, serving = %name, user = %who.me.email, release = %release.describe(), "serving release");
    redirect_back(&[], &format!("/serving/{name}"))?;
    Ok(done)
}
