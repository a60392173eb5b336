//! [`app::ports::Notebooks`]: a private JupyterLab per user. The record,
//! the notebook's key (`PADDLECLOUD_KEY`, which its kernels submit jobs
//! with, ended when it stops) and the idle clock live here ([`idle`]); a
//! [`NotebookBackend`] runs the servers: the local executor's processes
//! ([`crate::local::notebooks`]) or Kubernetes. The browser reaches a
//! server only through the console's proxy (`http::lab`), which asks
//! [`NotebookService::route`] where it is and with which token. The
//! versions of notebook files ([`versions`]) are read and written through
//! the server's contents API ([`contents`]) and shown as pages by nbconvert
//! ([`render`]).

mod contents;
pub mod idle;
mod render;
mod runs;
mod shares;
mod versions;

pub use render::Renderer;

use std::sync::Arc;

use app::error::AppError;
use app::models::{
    base_path, Account, AssetKind, Me, NewNotebookShare, Notebook, NotebookDiff, NotebookHistory,
    NotebookList, NotebookShare, NotebookShareSpec, NotebookSpec, NotebookStatus, NotebookVersion,
    Role, SharedNotebookFile,
};
use app::ports::{Assets, NotebookEvent, Notebooks, Principal, SharedVia, Slot};
use async_trait::async_trait;
use tokio::sync::broadcast;

use crate::assets::objects::Objects;
use crate::backend::notebooks::{NotebookBackend, NotebookReporter, NotebookRun, NotebookState};
use crate::storage::notebooks::{NotebookStore, StoredNotebook};
use crate::time::now_ms;

/// Notebooks on one backend, recorded in the console's database.
#[derive(Clone)]
pub struct NotebookService {
    store: NotebookStore,
    backend: Arc<dyn NotebookBackend>,
    assets: Arc<dyn Assets>,
    events: broadcast::Sender<NotebookEvent>,
    /// The console's URL as kernels reach it (`PADDLECLOUD_SERVER`).
    console_url: Option<String>,
    /// Where versions of notebook files are kept.
    objects: Objects,
    /// What shows a version as a page.
    renderer: Renderer,
    /// The account's secrets its servers get.
    secrets: Arc<crate::secrets::SqlSecrets>,
}

/// Where the proxy sends a request for a notebook, and what it sends along.
pub struct Route {
    /// The server's base URL (`http://host:port`).
    pub upstream: String,
    /// `Authorization: token …` for it.
    pub jupyter_token: String,
    /// What reaches it.
    pub client: crate::backend::lab_client::LabClient,
    /// The notebook's id.
    pub notebook_id: i64,
    /// The path its server runs under (`/notebooks/<account>/<name>/`).
    pub base_path: String,
}

impl NotebookService {
    /// On a migrated pool: notebooks run on `backend`, see the datasets
    /// `assets` lets their owner read, and reach the console at
    /// `console_url`; `default_idle` minutes apply to notebooks that set no
    /// idle timeout. Versions of their files go to `objects`, shown as
    /// pages by `renderer`.
    #[allow(clippy::too_many_arguments)] // the ports and settings it uses, each once
    pub fn new(
        pool: crate::storage::db::Pool,
        backend: Arc<dyn NotebookBackend>,
        assets: Arc<dyn Assets>,
        secrets: Arc<crate::secrets::SqlSecrets>,
        console_url: Option<String>,
        default_idle: Option<u32>,
        objects: Objects,
        renderer: Renderer,
    ) -> Self {
        let (events, _) = broadcast::channel(256);
        Self {
            store: NotebookStore::new(pool, default_idle),
            backend,
            assets,
            events,
            console_url,
            objects,
            renderer,
            secrets,
        }
    }

    fn reporter(&self) -> NotebookReporter {
        NotebookReporter::new(self.store.clone(), self.events.clone())
    }

    /// The owner as the notebook acts: what its datasets are read as.
    fn owner_of(stored: &StoredNotebook) -> Me {
        Me {
            user_id: stored.user_id,
            email: stored.notebook.owner.clone(),
            role: Role::Member,
            account: stored.account.clone(),
            email_confirmed: true,
            must_change_password: false,
            site_admin: false,
        }
    }

    /// `PADDLE_DATASET_DIR_<NAME>` for every dataset the owner can read
    /// (their account's by name, others' as `owner/name`); a dataset whose
    /// folder cannot be had is left out, with a warning in the log.
    async fn dataset_env(&self, me: &Me) -> Vec<(String, String)> {
        let Ok(datasets) = self.assets.list(me, AssetKind::Dataset).await else {
            return Vec::new();
        };
        let mut env = Vec::new();
        for asset in datasets {
            let input = app::models::notebook_dataset(&me.account.name, asset.reference());
            match self.assets.local_dir(me, &input.asset, Slot::Dataset).await {
                Ok(dir) => env.push((input.variable, dir.display().to_string())),
                Err(err) => {
                    tracing::warn!(dataset = %asset.name, owner = %asset.owner, error = %err,
                        "a dataset left out of a notebook")
                }
            }
        }
        env
    }

    /// Every dataset the owner can read, for a server that fetches them
    /// (`PADDLE_DATASET_DIR_<NAME>` as in [`Self::dataset_env`]).
    async fn dataset_inputs(&self, me: &Me) -> Vec<app::models::Input> {
        let Ok(datasets) = self.assets.list(me, AssetKind::Dataset).await else {
            return Vec::new();
        };
        datasets
            .into_iter()
            .map(|asset| app::models::notebook_dataset(&me.account.name, asset.reference()))
            .collect()
    }

    /// Starts the server of a recorded notebook with a new key and token.
    async fn launch(&self, stored: &StoredNotebook) -> Result<(), AppError> {
        let (key, jupyter_token) = self.store.begin_start(stored.id).await?;
        let me = Self::owner_of(stored);
        let name = &stored.notebook.name;
        let mut env = vec![
            ("PADDLECLOUD_KEY".to_owned(), key),
            (
                "PADDLECLOUD_ACCOUNT".to_owned(),
                stored.account.name.clone(),
            ),
            ("PADDLECLOUD_NOTEBOOK".to_owned(), name.clone()),
        ];
        if let Some(url) = &self.console_url {
            env.push(("PADDLECLOUD_SERVER".to_owned(), url.clone()));
        }
        // Dataset folders are this machine's: of use only to servers here;
        // elsewhere the server fetches the datasets.
        let mut inputs = Vec::new();
        if self.backend.sees_local_files() {
            env.extend(self.dataset_env(&me).await);
        } else {
            inputs = self.dataset_inputs(&me).await;
        }
        self.reporter().announce(stored.account.id, name);
        let what = format!("notebook {name}");
        let started = match self
            .secrets
            .reveal(
                &stored.account,
                &stored.notebook.spec.secrets,
                &me.email,
                &what,
            )
            .await
        {
            Ok(secrets) => {
                let run = NotebookRun {
                    id: stored.id,
                    account: stored.account.clone(),
                    spec: stored.notebook.spec.clone(),
                    jupyter_token,
                    base_url: base_path(&stored.account.name, name),
                    env,
                    inputs,
                    secrets,
                };
                self.backend.start(run, self.reporter()).await
            }
            Err(err) => Err(err),
        };
        if let Err(err) = started {
            let why = match &err {
                AppError::Internal => {
                    "The server could not be started; see the console's log.".to_owned()
                }
                other => other.to_string(),
            };
            self.reporter()
                .report(
                    stored.account.id,
                    stored.id,
                    name,
                    NotebookState::new(NotebookStatus::Failed, &why),
                )
                .await;
            return Err(err);
        }
        Ok(())
    }

    /// Brings back the notebooks a previous console process left running:
    /// a server that still runs (a pod) is taken over as it is, kernels and
    /// all; one that went with the console starts again (kernels are lost,
    /// the workspace is kept).
    pub async fn recover(&self) -> Result<(), AppError> {
        for stored in self.store.active_on(&self.backend.name()).await? {
            let name = &stored.notebook.name;
            let run = NotebookRun {
                id: stored.id,
                account: stored.account.clone(),
                spec: stored.notebook.spec.clone(),
                jupyter_token: stored.jupyter_token.clone(),
                base_url: base_path(&stored.account.name, name),
                env: Vec::new(),
                inputs: Vec::new(),
                secrets: Default::default(),
            };
            match self.backend.adopt(run, self.reporter()).await {
                Ok(true) => {
                    tracing::info!(notebook = %name, account = %stored.account.name, "following a running notebook again");
                    continue;
                }
                Ok(false) => {}
                Err(err) => {
                    tracing::warn!(notebook = %name, error = %err, "could not look for a notebook's server");
                }
            }
            tracing::info!(notebook = %name, account = %stored.account.name, "restarting a notebook");
            if let Err(err) = self.launch(&stored).await {
                tracing::warn!(notebook = %stored.notebook.name, error = %err, "could not bring a notebook back");
            }
        }
        Ok(())
    }

    /// Where the proxy sends `who`'s request for notebook `name` of the
    /// account named `account`. Another account's notebook, or another
    /// user's, is "not found": a notebook is its owner's alone.
    pub async fn route(
        &self,
        who: &Principal,
        account: &str,
        name: &str,
    ) -> Result<Route, AppError> {
        let not_found = || AppError::not_found(format!("Notebook “{name}”"));
        if who.me.account.name != account {
            return Err(not_found());
        }
        let stored = self.store.get(who.me.account.id, name).await?;
        if stored.user_id != who.me.user_id {
            return Err(not_found());
        }
        let unavailable = |state: &str| AppError::Unavailable {
            message: format!("Notebook “{name}” is {state}: start it on the Notebooks page."),
        };
        match stored.notebook.status {
            NotebookStatus::Running => {}
            NotebookStatus::Pending => return Err(unavailable("still starting")),
            NotebookStatus::Stopped => return Err(unavailable("stopped")),
            NotebookStatus::Failed => return Err(unavailable("not running (it failed)")),
        }
        self.route_of(&stored)
            .await
            .ok_or_else(|| unavailable("not answering yet"))
    }

    /// Where `stored`'s server answers, if it does.
    async fn route_of(&self, stored: &StoredNotebook) -> Option<Route> {
        let name = &stored.notebook.name;
        let upstream = self
            .backend
            .upstream(&stored.account, stored.id, name)
            .await?;
        Some(Route {
            upstream,
            jupyter_token: stored.jupyter_token.clone(),
            client: self.backend.client(),
            notebook_id: stored.id,
            base_path: base_path(&stored.account.name, name),
        })
    }

    /// Whether `by` may stop or delete `stored`: its owner, or an owner of
    /// the account.
    fn may_end(by: &Me, stored: &StoredNotebook) -> Result<(), AppError> {
        by.role.require_change()?;
        if stored.user_id == by.user_id || by.role == Role::Owner {
            Ok(())
        } else {
            Err(AppError::forbidden(
                "Only the notebook's owner or an owner of the account stops or deletes it.",
            ))
        }
    }

    /// Whether `by` is `stored`'s owner (who alone starts and keeps it).
    fn owns(by: &Me, stored: &StoredNotebook) -> Result<(), AppError> {
        by.role.require_change()?;
        if stored.user_id == by.user_id {
            Ok(())
        } else {
            Err(AppError::forbidden(format!(
                "Only its owner, {}, starts or keeps “{}” running.",
                stored.notebook.owner, stored.notebook.name
            )))
        }
    }

    /// Stops notebook `stored`'s server and records `why`; its notebook
    /// files are kept as versions first, by `author`.
    async fn halt(&self, stored: &StoredNotebook, why: &str, author: &str) -> Result<(), AppError> {
        let name = &stored.notebook.name;
        self.snapshot(stored, author).await;
        self.backend.stop(&stored.account, stored.id, name).await?;
        self.reporter()
            .report(
                stored.account.id,
                stored.id,
                name,
                NotebookState::new(NotebookStatus::Stopped, why),
            )
            .await;
        tracing::info!(account = %stored.account.name, notebook = %name, reason = %why, "notebook stopped");
        Ok(())
    }
}

#[async_trait]
impl Notebooks for NotebookService {
    async fn create(&self, by: &Me, spec: NotebookSpec) -> Result<Notebook, AppError> {
        by.role.require_change()?;
        spec.validate()?;
        self.backend.admits(&spec)?;
        self.store
            .insert(by.account.id, by.user_id, &spec, &self.backend.name())
            .await?;
        let stored = self.store.get(by.account.id, &spec.name).await?;
        tracing::info!(account = %by.account.name, notebook = %spec.name, user = %by.email, "notebook created");
        self.launch(&stored).await?;
        Ok(self.store.get(by.account.id, &spec.name).await?.notebook)
    }

    async fn list(&self, account: &Account) -> Result<NotebookList, AppError> {
        Ok(NotebookList {
            notebooks: self
                .store
                .list(account.id)
                .await?
                .into_iter()
                .map(|s| s.notebook)
                .collect(),
            now: now_ms(),
        })
    }

    async fn get(&self, account: &Account, name: &str) -> Result<Notebook, AppError> {
        Ok(self.store.get(account.id, name).await?.notebook)
    }

    async fn start(&self, by: &Me, name: &str) -> Result<Notebook, AppError> {
        let stored = self.store.get(by.account.id, name).await?;
        Self::owns(by, &stored)?;
        if !stored.notebook.status.is_active() {
            self.launch(&stored).await?;
        }
        self.get(&by.account, name).await
    }

    async fn stop(&self, by: &Me, name: &str) -> Result<Notebook, AppError> {
        let stored = self.store.get(by.account.id, name).await?;
        Self::may_end(by, &stored)?;
        if stored.notebook.status.is_active() {
            self.halt(&stored, &format!("Stopped by {}.", by.email), &by.email)
                .await?;
        }
        self.get(&by.account, name).await
    }

    async fn delete(&self, by: &Me, name: &str) -> Result<(), AppError> {
        let stored = self.store.get(by.account.id, name).await?;
        Self::may_end(by, &stored)?;
        self.backend
            .remove(&stored.account, stored.id, name)
            .await?;
        self.forget_versions(&stored).await?;
        self.store.delete(stored.id).await?;
        self.reporter().announce(by.account.id, name);
        tracing::info!(account = %by.account.name, notebook = %name, user = %by.email, "notebook deleted");
        Ok(())
    }

    async fn keep_running(&self, by: &Me, name: &str) -> Result<Notebook, AppError> {
        let stored = self.store.get(by.account.id, name).await?;
        Self::owns(by, &stored)?;
        if stored.notebook.status == NotebookStatus::Running {
            self.store
                .set_activity(stored.id, Some(now_ms()), &stored.notebook.probe_error)
                .await?;
            self.reporter().announce(by.account.id, name);
        }
        self.get(&by.account, name).await
    }

    async fn history(
        &self,
        by: &Me,
        name: &str,
        path: Option<&str>,
    ) -> Result<NotebookHistory, AppError> {
        self.history_of(by, name, path).await
    }

    async fn version(
        &self,
        by: &Me,
        name: &str,
        id: i64,
    ) -> Result<(NotebookVersion, Vec<u8>), AppError> {
        self.version_file(by, name, id).await
    }

    async fn version_html(&self, by: &Me, name: &str, id: i64) -> Result<Vec<u8>, AppError> {
        self.version_page(by, name, id).await
    }

    async fn diff(
        &self,
        by: &Me,
        name: &str,
        from: i64,
        to: i64,
    ) -> Result<NotebookDiff, AppError> {
        self.diff_of(by, name, from, to).await
    }

    async fn restore(&self, by: &Me, name: &str, id: i64) -> Result<NotebookVersion, AppError> {
        self.restore_version(by, name, id).await
    }

    async fn share_file(
        &self,
        by: &Me,
        name: &str,
        spec: &NotebookShareSpec,
    ) -> Result<NewNotebookShare, AppError> {
        self.share_file_of(by, name, spec).await
    }

    async fn file_shares(&self, by: &Me, name: &str) -> Result<Vec<NotebookShare>, AppError> {
        self.shares_of(by, name).await
    }

    async fn revoke_share(&self, by: &Me, name: &str, id: i64) -> Result<(), AppError> {
        self.revoke_file_share(by, name, id).await
    }

    async fn shared_with_me(&self, by: &Me) -> Result<Vec<SharedNotebookFile>, AppError> {
        self.shared_with(by).await
    }

    async fn shared(
        &self,
        by: Option<&Me>,
        via: &SharedVia,
    ) -> Result<(SharedNotebookFile, Vec<u8>), AppError> {
        self.shared_file(by, via).await
    }

    async fn shared_html(&self, by: Option<&Me>, via: &SharedVia) -> Result<Vec<u8>, AppError> {
        self.shared_page(by, via).await
    }

    async fn copy_shared(
        &self,
        by: &Me,
        via: &SharedVia,
        into: &str,
    ) -> Result<NotebookVersion, AppError> {
        self.copy_shared_file(by, via, into).await
    }

    fn subscribe(&self) -> broadcast::Receiver<NotebookEvent> {
        self.events.subscribe()
    }
}
