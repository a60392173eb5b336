//! How a backend tells the console what a long-running workload does now:
//! it saves the state in the workload's record and announces the change
//! to live views, in that order, so a view that refreshes on the event
//! reads the new state. One [`Reporter`] for every kind; each kind's store
//! says what its state holds ([`StateRecord`]).

use app::error::AppError;
use app::ports::WorkloadEvent;
use async_trait::async_trait;
use tokio::sync::broadcast;

/// A kind of workload's records, as far as a backend writes them: its
/// state, saved by id.
#[async_trait]
pub trait StateRecord: Clone + Send + Sync + 'static {
    /// What a backend reports of one workload (its status and message, and
    /// what else the kind shows, such as ready replicas).
    type State: Send + Sync;
    /// What the console's log calls the kind ("serving", "notebook").
    const KIND: &'static str;
    /// Saves workload `id`'s state.
    async fn set_state(&self, id: i64, state: &Self::State) -> Result<(), AppError>;
}

/// Records what a workload's backend sees and tells live views.
pub struct Reporter<S> {
    store: S,
    events: broadcast::Sender<WorkloadEvent>,
}

impl<S: Clone> Clone for Reporter<S> {
    fn clone(&self) -> Self {
        Self {
            store: self.store.clone(),
            events: self.events.clone(),
        }
    }
}

impl<S: StateRecord> Reporter<S> {
    /// Writes to `store` and announces on `events`.
    pub fn new(store: S, events: broadcast::Sender<WorkloadEvent>) -> Self {
        Self { store, events }
    }

    /// Saves the state of workload `id`, `name` of account `account_id`,
    /// and announces it. A state that cannot be saved is logged: the
    /// backend goes on, and the next report tries again.
    pub async fn report(&self, account_id: i64, id: i64, name: &str, state: S::State) {
        if let Err(err) = self.store.set_state(id, &state).await {
            tracing::warn!(kind = S::KIND, name = %name, error = %err, "recording a workload's state");
        }
        self.announce(account_id, name);
    }

    /// Tells live views that workload `name` changed.
    pub fn announce(&self, account_id: i64, name: &str) {
        let _ = self.events.send(WorkloadEvent::new(account_id, name));
    }

    /// The records, for what a kind reports besides its state.
    pub fn store(&self) -> &S {
        &self.store
    }
}
