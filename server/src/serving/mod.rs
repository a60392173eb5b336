//! [`app::ports::Serving`]: a model version served over HTTP. The record,
//! the model's resolution and the traffic live here; a [`ServingBackend`]
//! runs the replicas: the local executor's processes
//! ([`crate::local::serving`]) or a Kubernetes Deployment
//! ([`crate::kubernetes::serving`]). Requests reach an instance through the
//! console's endpoint (`http::serve`), which balances between ready
//! replicas and counts every request here ([`ServingService::record`]).

mod models;
pub mod release;
pub mod traffic;

use std::sync::Arc;

use app::error::AppError;
use app::models::{
    merge_traffic, Account, Me, Release, Scale, ServingInstance, ServingList, ServingSpec,
    ServingStatus, ServingTraffic, ShadowCall, TrafficPoint, RESOURCE_CHART_POINTS,
};
use app::ports::{Assets, Serving, ServingEvent};
use async_trait::async_trait;
use tokio::sync::broadcast;

use self::traffic::Traffic;
use crate::backend::serving::{ModelFiles, Reporter, ServingBackend, ServingRun, ServingState};
use crate::storage::serving::{ServingStore, StoredServing};
use crate::time::now_ms;

/// A minute of buckets as one point: requests per second of the whole
/// minute, not only of the buckets that had requests.
fn last_minute(points: &[TrafficPoint]) -> Option<TrafficPoint> {
    let mut merged = *merge_traffic(points, 1).first()?;
    merged.secs = 60.0;
    Some(merged)
}

/// Serving on one backend, recorded in the console's database.
#[derive(Clone)]
pub struct ServingService {
    store: ServingStore,
    backend: Arc<dyn ServingBackend>,
    assets: Arc<dyn Assets>,
    traffic: Arc<Traffic>,
    events: broadcast::Sender<ServingEvent>,
    /// Calls so far per instance, for the canary's and shadow's shares.
    counters: Arc<release::Counters>,
    /// The main version each instance was last asked to roll to.
    following: Arc<std::sync::Mutex<std::collections::HashMap<i64, u32>>>,
    /// The account's secrets its replicas get.
    secrets: Arc<crate::secrets::SqlSecrets>,
}

impl ServingService {
    /// On a migrated pool; starts writing traffic (kept `keep`).
    pub fn new(
        pool: crate::storage::db::Pool,
        backend: Arc<dyn ServingBackend>,
        assets: Arc<dyn Assets>,
        secrets: Arc<crate::secrets::SqlSecrets>,
        keep: std::time::Duration,
    ) -> Self {
        let store = ServingStore::new(pool);
        let traffic = Arc::new(Traffic::default());
        traffic.spawn_writer(store.clone(), keep);
        let (events, _) = broadcast::channel(256);
        Self {
            store,
            backend,
            assets,
            traffic,
            events,
            counters: Arc::default(),
            following: Arc::default(),
            secrets,
        }
    }

    fn reporter(&self) -> Reporter {
        Reporter::new(self.store.clone(), self.events.clone())
    }

    fn emit(&self, account_id: i64, name: &str) {
        self.reporter().announce(account_id, name);
    }

    /// Brings back the instances a previous console process left running.
    pub async fn recover(&self) -> Result<(), AppError> {
        for stored in self.store.active_on(&self.backend.name()).await? {
            let name = stored.instance.name.clone();
            let account_id = stored.account.id;
            let restarted = async {
                // As the account that launched it: enough to read what it serves.
                let me = release::launcher(&stored);
                let token = self.recovered_token(&stored).await?;
                let run = self
                    .run_of(&me, &stored, stored.instance.version, token)
                    .await?;
                self.backend.start(run, self.reporter()).await
            }
            .await;
            if let Err(err) = restarted {
                tracing::warn!(serving = %name, error = %err, "could not bring a serving instance back");
                self.reporter()
                    .report(
                        account_id,
                        stored.id,
                        &name,
                        ServingState::new(
                            ServingStatus::Failed,
                            0,
                            format!("Could not restart after the console restarted: {err}"),
                        ),
                    )
                    .await;
            }
        }
        Ok(())
    }

    /// A fresh token for instance `id` if the backend fetches models itself.
    async fn token_for(&self, id: i64) -> Result<Option<String>, AppError> {
        if self.backend.remote_models() {
            Ok(Some(self.store.issue_token(id).await?))
        } else {
            Ok(None)
        }
    }

    /// The token the instance's replicas hold when it is still the one on
    /// record, else a fresh one. Keeping it means that two consoles bringing
    /// the same instance back at once write nothing, instead of each issuing
    /// a token and one's record ending up beside the other's Secret.
    async fn recovered_token(&self, stored: &StoredServing) -> Result<Option<String>, AppError> {
        if let Some(token) = self
            .backend
            .current_token(&stored.account, &stored.instance.name)
            .await
        {
            if self.store.token_is(stored.id, &token).await? {
                return Ok(Some(token));
            }
        }
        self.token_for(stored.id).await
    }

    /// The last minute's traffic of an instance, from the stored buckets.
    async fn recent(&self, id: i64) -> Result<Option<TrafficPoint>, AppError> {
        let now = crate::time::now_s();
        Ok(last_minute(&self.store.traffic(id, now - 60.0, now).await?))
    }

    /// An instance with its last minute's traffic.
    async fn with_recent(&self, stored: StoredServing) -> Result<ServingInstance, AppError> {
        let mut instance = stored.instance;
        instance.recent = self.recent(stored.id).await?;
        Ok(instance)
    }

    /// Counts one request forwarded to instance `id` and answered by
    /// `version` (0: none), or a copy sent to its shadow (the endpoint
    /// calls this).
    pub fn record(
        &self,
        id: i64,
        version: u32,
        shadow: bool,
        latency: std::time::Duration,
        error: bool,
    ) {
        self.traffic.record(id, version, shadow, latency, error);
    }

    /// Writes every open traffic bucket now (tests, shutdown).
    pub async fn flush_traffic(&self) -> Result<(), AppError> {
        let rows = self.traffic.take_finished(true);
        traffic::write(&self.store, rows).await
    }

    async fn get_instance(
        &self,
        account: &Account,
        name: &str,
    ) -> Result<ServingInstance, AppError> {
        let stored = self.store.get(account.id, name).await?;
        self.with_recent(stored).await
    }
}

#[async_trait]
impl Serving for ServingService {
    async fn launch(&self, by: &Me, mut spec: ServingSpec) -> Result<ServingInstance, AppError> {
        spec.validate()?;
        self.backend.admits(&spec)?;
        let model = self.resolve(by, &spec).await?;
        spec.version = Some(model.version);
        let id = self
            .store
            .insert(
                by.account.id,
                &by.email,
                &model.model,
                model.version,
                &spec,
                &self.backend.name(),
            )
            .await?;
        let started = async {
            let stored = self.store.get(by.account.id, &spec.name).await?;
            if let Some(c) = spec.canary {
                self.check_ready(by, &stored, "canary.version", c.version)
                    .await?;
            }
            if let Some(s) = spec.shadow {
                self.check_ready(by, &stored, "shadow.version", s.version)
                    .await?;
            }
            let token = self.token_for(id).await?;
            let run = self.run_of(by, &stored, model.version, token).await?;
            self.backend.start(run, self.reporter()).await
        };
        if let Err(err) = started.await {
            let why = match &err {
                AppError::Internal => {
                    "The replicas could not be started; see the console's log.".to_owned()
                }
                other => other.to_string(),
            };
            self.store
                .set_state(id, ServingStatus::Failed, 0, &why)
                .await?;
            self.emit(by.account.id, &spec.name);
            return Err(err);
        }
        self.emit(by.account.id, &spec.name);
        Ok(self.store.get(by.account.id, &spec.name).await?.instance)
    }

    async fn list(&self, account: &Account) -> Result<ServingList, AppError> {
        // One query for every instance's last minute, not one per row.
        let now = crate::time::now_s();
        let mut recent = self
            .store
            .account_traffic(account.id, now - 60.0, now)
            .await?;
        let instances = self
            .store
            .list(account.id)
            .await?
            .into_iter()
            .map(|stored| {
                let mut instance = stored.instance;
                instance.recent = recent
                    .remove(&stored.id)
                    .and_then(|points| last_minute(&points));
                instance
            })
            .collect();
        Ok(ServingList {
            instances,
            now: now_ms(),
        })
    }

    async fn get(&self, account: &Account, name: &str) -> Result<ServingInstance, AppError> {
        self.get_instance(account, name).await
    }

    async fn release(
        &self,
        by: &Me,
        name: &str,
        release: Release,
    ) -> Result<ServingInstance, AppError> {
        self.carry_out(by, name, release).await
    }

    async fn shadow_calls(
        &self,
        account: &Account,
        name: &str,
        limit: usize,
    ) -> Result<Vec<ShadowCall>, AppError> {
        let stored = self.store.get(account.id, name).await?;
        self.store.shadow_calls(stored.id, limit.min(200)).await
    }

    async fn scale(
        &self,
        account: &Account,
        name: &str,
        scale: Scale,
    ) -> Result<ServingInstance, AppError> {
        let stored = self.store.get(account.id, name).await?;
        if !stored.instance.status.is_active() {
            return Err(AppError::conflict(
                "name",
                format!(
                    "“{name}” is {}: launch it again to serve it.",
                    stored.instance.status.label().to_lowercase()
                ),
            ));
        }
        let mut spec = stored.instance.spec.clone();
        scale.apply(&mut spec)?;
        self.store.set_spec(stored.id, &spec).await?;
        let model = ModelFiles {
            model: stored.instance.model.clone(),
            version: stored.instance.version,
            local: None,
        };
        self.backend
            .resize(ServingRun {
                id: stored.id,
                account: account.clone(),
                spec,
                model,
                token: None,
                side: Vec::new(),
                secrets: Default::default(),
            })
            .await?;
        tracing::info!(account = %account.name, serving = %name, ?scale, "serving scaled");
        self.emit(account.id, name);
        self.get(account, name).await
    }

    async fn stop(&self, account: &Account, name: &str) -> Result<ServingInstance, AppError> {
        let stored = self.store.get(account.id, name).await?;
        if stored.instance.status.is_active() {
            self.backend.stop(account, stored.id, name).await?;
            self.store
                .set_state(stored.id, ServingStatus::Stopped, 0, "Stopped.")
                .await?;
            tracing::info!(account = %account.name, serving = %name, "serving stopped");
            self.emit(account.id, name);
        }
        self.get(account, name).await
    }

    async fn delete(&self, account: &Account, name: &str) -> Result<(), AppError> {
        let stored = self.store.get(account.id, name).await?;
        if stored.instance.status.is_active() {
            self.backend.stop(account, stored.id, name).await?;
        }
        self.store.delete(stored.id).await?;
        self.emit(account.id, name);
        Ok(())
    }

    async fn traffic(
        &self,
        account: &Account,
        name: &str,
        from: Option<f64>,
        to: Option<f64>,
    ) -> Result<ServingTraffic, AppError> {
        let stored = self.store.get(account.id, name).await?;
        let id = stored.id;
        let instance = self.with_recent(stored).await?;
        let to = to.unwrap_or_else(crate::time::now_s);
        let from = from.unwrap_or(to - 3600.0);
        if from.partial_cmp(&to) != Some(std::cmp::Ordering::Less) {
            return Err(AppError::invalid(
                "from",
                "The range must start before it ends.",
            ));
        }
        let points = self.store.traffic(id, from, to).await?;
        let mut versions = self.store.version_traffic(id, from, to).await?;
        for v in &mut versions {
            v.points = merge_traffic(&v.points, RESOURCE_CHART_POINTS as usize);
        }
        Ok(ServingTraffic {
            instance,
            points: merge_traffic(&points, RESOURCE_CHART_POINTS as usize),
            from,
            to,
            versions,
        })
    }

    fn subscribe(&self) -> broadcast::Receiver<ServingEvent> {
        self.events.subscribe()
    }
}
