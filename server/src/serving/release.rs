//! Releasing versions by degrees: which track a call goes to (the canary's
//! share, spread evenly), the copies a shadow gets and what it answered,
//! canaries and shadows started, promoted and rolled back, and main tracks
//! that follow an alias rolled to the version it names whenever it moves.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use app::error::AppError;
use app::models::{
    takes_share, Account, AliasForm, AssetKind, AssetRef, Me, Release, Role, ServingInstance,
    ShadowCall, Track,
};
use app::ports::Viewer;

use super::ServingService;
use crate::backend::serving::{ServingRun, SideTrack, Upstream};
use crate::storage::serving::StoredServing;

/// Where one call goes.
pub struct Route {
    /// The instance's database id.
    pub id: i64,
    /// The version and a replica of the track that answers it, if one is
    /// ready.
    pub primary: Option<(u32, Upstream)>,
    /// The shadow's version and a replica of it, when this call is one of
    /// the share it gets a copy of.
    pub shadow: Option<(u32, Upstream)>,
}

/// How many calls each instance has had, for its shares.
#[derive(Default)]
pub struct Counters {
    by_instance: std::sync::Mutex<HashMap<i64, Arc<(AtomicU64, AtomicU64)>>>,
}

impl Counters {
    /// The next call's number for the canary's share and for the shadow's.
    fn next(&self, id: i64) -> (u64, u64) {
        let c = self
            .by_instance
            .lock()
            .expect("counters lock")
            .entry(id)
            .or_default()
            .clone();
        (
            c.0.fetch_add(1, Ordering::Relaxed),
            c.1.fetch_add(1, Ordering::Relaxed),
        )
    }
}

/// The one who launched an instance, as far as reading its model goes.
pub(super) fn launcher(stored: &StoredServing) -> Me {
    Me {
        user_id: 0,
        email: stored.instance.created_by.clone(),
        role: Role::Member,
        account: stored.account.clone(),
        email_confirmed: true,
        must_change_password: false,
        site_admin: false,
    }
}

impl ServingService {
    /// What the backend needs to run `stored` with its main track on
    /// `main` and the canary and shadow its spec names, read as `me`.
    pub(super) async fn run_of(
        &self,
        me: &Me,
        stored: &StoredServing,
        main: u32,
        token: Option<String>,
    ) -> Result<ServingRun, AppError> {
        let spec = &stored.instance.spec;
        let (owner, model) = stored
            .instance
            .model
            .split_once('/')
            .ok_or(AppError::Internal)?;
        let files = |version| self.locate(me, owner, model, version, &spec.file);
        // A release keeps the token the replicas hold (they fetch with it).
        let token = match token {
            None if self.backend.remote_models() => {
                self.backend
                    .current_token(&stored.account, &stored.instance.name)
                    .await
            }
            token => token,
        };
        let mut side = Vec::new();
        if let Some(c) = spec.canary {
            side.push(SideTrack {
                track: Track::Canary,
                model: files(c.version).await?,
                replicas: c.replicas,
            });
        }
        if let Some(s) = spec.shadow {
            side.push(SideTrack {
                track: Track::Shadow,
                model: files(s.version).await?,
                replicas: s.replicas,
            });
        }
        let what = format!("serving {}", stored.instance.name);
        let secrets = self
            .secrets
            .reveal(&stored.account, &spec.secrets, &me.email, &what)
            .await?;
        Ok(ServingRun {
            id: stored.id,
            account: stored.account.clone(),
            spec: spec.clone(),
            model: files(main).await?,
            token,
            side,
            secrets,
        })
    }

    /// Checks that `version` of the instance's model is ready to serve.
    pub(super) async fn check_ready(
        &self,
        me: &Me,
        stored: &StoredServing,
        field: &str,
        version: u32,
    ) -> Result<(), AppError> {
        let (owner, name) = stored
            .instance
            .model
            .split_once('/')
            .ok_or(AppError::Internal)?;
        let r = app::models::ModelRef {
            owner: Some(owner.to_owned()),
            name: name.to_owned(),
            version: Some(version),
            alias: None,
        };
        let fields = app::use_cases::model_versions::Fields {
            model: "model",
            version: "version",
        };
        app::use_cases::model_versions::ready_version(&*self.assets, me, &r, fields)
            .await
            .map_err(|err| match err {
                AppError::Invalid { message, .. } => AppError::invalid(field, message),
                AppError::NotFound { what } => {
                    AppError::invalid(field, format!("{what} not found."))
                }
                other => other,
            })?;
        Ok(())
    }

    /// Where the next call to instance `name` goes: the canary for its
    /// share of the calls (the main track when no canary replica is ready),
    /// else the main track; with a copy to the shadow for its share.
    pub async fn route(&self, account: &Account, name: &str) -> Result<Route, AppError> {
        let stored = self.store.get(account.id, name).await?;
        let id = stored.id;
        if !stored.instance.status.is_active() {
            return Ok(Route {
                id,
                primary: None,
                shadow: None,
            });
        }
        let spec = &stored.instance.spec;
        let (canary_n, shadow_n) = self.counters.next(id);
        let upstream = |track| self.backend.upstream(account, id, name, track);
        let mut primary = None;
        if let Some(c) = spec.canary.filter(|c| takes_share(canary_n, c.percent)) {
            primary = upstream(Track::Canary).await.map(|u| (c.version, u));
        }
        if primary.is_none() {
            primary = upstream(Track::Main)
                .await
                .map(|u| (stored.instance.version, u));
        }
        let mut shadow = None;
        if let Some(s) = spec.shadow.filter(|s| takes_share(shadow_n, s.percent)) {
            shadow = upstream(Track::Shadow).await.map(|u| (s.version, u));
        }
        Ok(Route {
            id,
            primary,
            shadow,
        })
    }

    /// Keeps a call mirrored to instance `id`'s shadow, in the background.
    pub fn record_shadow(&self, id: i64, call: ShadowCall) {
        let store = self.store.clone();
        tokio::spawn(async move {
            if let Err(err) = store.add_shadow_call(id, &call).await {
                tracing::warn!(error = %err, "recording a shadow call");
            }
        });
    }

    /// Carries out `release` on the instance `name` of `by`'s account.
    pub(super) async fn carry_out(
        &self,
        by: &Me,
        name: &str,
        release: Release,
    ) -> Result<ServingInstance, AppError> {
        let stored = self.store.get(by.account.id, name).await?;
        if !stored.instance.status.is_active() {
            return Err(AppError::conflict(
                "name",
                format!(
                    "“{name}” is {}: launch it again to release a version.",
                    stored.instance.status.label().to_lowercase()
                ),
            ));
        }
        let (spec, main) = stored
            .instance
            .spec
            .released(&release, stored.instance.version)?;
        match release {
            Release::Canary(c) => {
                self.check_ready(by, &stored, "canary.version", c.version)
                    .await?
            }
            Release::Shadow(s) => {
                self.check_ready(by, &stored, "shadow.version", s.version)
                    .await?
            }
            _ => {}
        }
        if let (Release::Promote, Some(alias)) = (release, stored.instance.spec.alias()) {
            // The alias the main track follows names the promoted version:
            // else the next look at it would roll the instance back.
            let (owner, model) = stored
                .instance
                .model
                .split_once('/')
                .ok_or(AppError::Internal)?;
            let model = AssetRef {
                kind: AssetKind::Model,
                owner: owner.to_owned(),
                name: model.to_owned(),
            };
            let form = AliasForm {
                version: main,
                protected: None,
            };
            self.assets.set_alias(by, &model, alias, form).await?;
        }
        self.store.set_spec(stored.id, &spec).await?;
        let mut updated = stored.clone();
        updated.instance.spec = spec;
        let run = self.run_of(by, &updated, main, None).await?;
        self.backend.release(run, self.reporter()).await?;
        self.following
            .lock()
            .expect("following lock")
            .insert(stored.id, main);
        tracing::info!(account = %by.account.name, serving = %name, release = %release.describe(), "serving release");
        self.emit(by.account.id, name);
        self.get_instance(&by.account, name).await
    }

    /// Every `every`, rolls each active instance that follows an alias to
    /// the version the alias names, if it moved (on every console: one
    /// whose backend does not run the instance leaves it alone).
    pub fn follow_aliases(&self, every: Duration) {
        let service = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                if let Err(err) = service.follow_once().await {
                    tracing::warn!(error = %err, "following serving aliases");
                }
            }
        });
    }

    /// One look at every followed alias.
    pub async fn follow_once(&self) -> Result<(), AppError> {
        for stored in self.store.active_on(&self.backend.name()).await? {
            let Some(alias) = stored.instance.spec.alias().map(str::to_owned) else {
                continue;
            };
            let me = launcher(&stored);
            let (owner, model) = stored
                .instance
                .model
                .split_once('/')
                .ok_or(AppError::Internal)?;
            let r = AssetRef {
                kind: AssetKind::Model,
                owner: owner.to_owned(),
                name: model.to_owned(),
            };
            let aliases = self.assets.aliases(&Viewer::User(me.clone()), &r).await?;
            // A deleted alias leaves the instance on the version it serves.
            let Some(to) = aliases.iter().find(|a| a.alias == alias).map(|a| a.version) else {
                continue;
            };
            let asked = self
                .following
                .lock()
                .expect("following lock")
                .get(&stored.id)
                .copied()
                .unwrap_or(stored.instance.version);
            if to == asked {
                continue;
            }
            let run = self.run_of(&me, &stored, to, None).await?;
            match self.backend.release(run, self.reporter()).await {
                Ok(()) => {
                    tracing::info!(serving = %stored.instance.name, alias = %alias, from = asked, to, "alias moved: rolling");
                    self.following
                        .lock()
                        .expect("following lock")
                        .insert(stored.id, to);
                    self.emit(stored.account.id, &stored.instance.name);
                }
                // Another console runs it (the local backend): its own
                // follower rolls it.
                Err(AppError::Conflict { .. }) => {}
                Err(err) => return Err(err),
            }
        }
        Ok(())
    }
}
