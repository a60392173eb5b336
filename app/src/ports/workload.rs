//! What every long-running workload's port shares (serving instances,
//! notebooks, pipeline runs, and the experiments and schedules to come):
//! the event that tells live views one of them changed.

/// Something about a long-running workload changed (its state, its size,
/// its record): live views of its kind refresh. Each kind's port has its
/// own channel, so the event need not say which kind it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkloadEvent {
    /// The account that owns it.
    pub account_id: i64,
    /// Its name.
    pub name: String,
}

impl WorkloadEvent {
    /// Workload `name` of account `account_id` changed.
    pub fn new(account_id: i64, name: &str) -> Self {
        Self {
            account_id,
            name: name.to_owned(),
        }
    }
}
