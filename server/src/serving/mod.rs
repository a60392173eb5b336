//! [`app::ports::Serving`]: a model version served over HTTP. The record,
//! the model's resolution and the traffic live here; a [`ServingBackend`]
//! runs the replicas: the local executor's processes
//! ([`crate::local::serving`]) or a Kubernetes Deployment
//! ([`crate::kubernetes::serving`]). Requests reach an instance through the
//! console's endpoint (`http::serve`), which balances between ready
//! replicas and counts every request here ([`ServingService::record`]).

mod models;
pub mod traffic;

use std::sync::Arc;

use app::error::AppError;
use app::models::{
    merge_traffic, Account, Me, Scale, ServingInstance, ServingList, ServingSpec, ServingStatus,
    ServingTraffic, TrafficPoint, RESOURCE_CHART_POINTS,
};
use app::ports::{Assets, Serving, ServingEvent};
use async_trait::async_trait;
use tokio::sync::broadcast;

use self::traffic::Traffic;
use crate::backend::serving::{
    ModelFiles, Reporter, ServingBackend, ServingRun, ServingState, Upstream,
};
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
}

impl ServingService {
    /// On a migrated pool; starts writing traffic (kept `keep`).
    pub fn new(
        pool: crate::storage::db::Pool,
        backend: Arc<dyn ServingBackend>,
        assets: Arc<dyn Assets>,
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
                let (owner, model) = stored
                    .instance
                    .model
                    .split_once('/')
                    .ok_or(AppError::Internal)?;
                // As the account that launched it: enough to read what it serves.
                let me = Me {
                    user_id: 0,
                    email: stored.instance.created_by.clone(),
                    role: app::models::Role::Member,
                    account: stored.account.clone(),
                    email_confirmed: true,
                    must_change_password: false,
                    site_admin: false,
                };
                let files = self
                    .locate(
                        &me,
                        owner,
                        model,
                        stored.instance.version,
                        &stored.instance.spec.file,
                    )
                    .await?;
                let run = ServingRun {
                    id: stored.id,
                    account: stored.account.clone(),
                    spec: stored.instance.spec.clone(),
                    model: files,
                    token: self.recovered_token(&stored).await?,
                };
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

    /// Counts one request forwarded to instance `id` (the endpoint calls this).
    pub fn record(&self, id: i64, latency: std::time::Duration, error: bool) {
        self.traffic.record(id, latency, error);
    }

    /// The instance's id and where its next request goes.
    pub async fn route(
        &self,
        account: &Account,
        name: &str,
    ) -> Result<(i64, Option<Upstream>), AppError> {
        let stored = self.store.get(account.id, name).await?;
        if !stored.instance.status.is_active() {
            return Ok((stored.id, None));
        }
        Ok((
            stored.id,
            self.backend.upstream(account, stored.id, name).await,
        ))
    }

    /// Writes every open traffic bucket now (tests, shutdown).
    pub async fn flush_traffic(&self) -> Result<(), AppError> {
        let rows = self.traffic.take_finished(true);
        self.store.add_traffic(&rows).await
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
            let run = ServingRun {
                id,
                account: by.account.clone(),
                spec: spec.clone(),
                model,
                token: self.token_for(id).await?,
            };
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
        let stored = self.store.get(account.id, name).await?;
        self.with_recent(stored).await
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
        Ok(ServingTraffic {
            instance,
            points: merge_traffic(&points, RESOURCE_CHART_POINTS as usize),
            from,
            to,
        })
    }

    fn subscribe(&self) -> broadcast::Receiver<ServingEvent> {
        self.events.subscribe()
    }
}
