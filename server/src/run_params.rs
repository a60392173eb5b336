//! [`SqlRunParams`]: the `RunParams` port over the tables local runs and
//! MLflow runs record their parameters in (`storage::run_params`).

use std::collections::{BTreeMap, HashMap};

use app::error::AppError;
use app::models::Account;
use app::ports::RunParams;
use async_trait::async_trait;
use serde_json::Value;

use crate::storage::db::Pool;
use crate::storage::run_params::{Recorded, RunParamTable};

/// Recorded parameters, from the database.
#[derive(Clone)]
pub struct SqlRunParams {
    table: RunParamTable,
}

impl SqlRunParams {
    /// Wraps a migrated pool.
    pub fn new(pool: Pool) -> Self {
        Self {
            table: RunParamTable::new(pool),
        }
    }
}

/// A local run's JSON value as text: a string as itself, anything else as
/// its JSON (`0.25`, `true`, `[1,2]`).
fn text(value: Value) -> String {
    match value {
        Value::String(s) => s,
        other => other.to_string(),
    }
}

/// The parameters `rows` record, later rows winning.
fn collect(rows: Vec<Recorded>) -> BTreeMap<String, String> {
    let mut params = BTreeMap::new();
    for row in rows {
        match row {
            Recorded::LocalRun(json) => {
                let map: BTreeMap<String, Value> = serde_json::from_str(&json).unwrap_or_default();
                params.extend(map.into_iter().map(|(k, v)| (k, text(v))));
            }
            Recorded::Mlflow { key, value } => {
                params.insert(key, value);
            }
        }
    }
    params
}

#[async_trait]
impl RunParams for SqlRunParams {
    async fn params(
        &self,
        account: &Account,
        jobs: &[String],
    ) -> Result<Vec<BTreeMap<String, String>>, AppError> {
        // One query for every run, grouped here by job.
        let mut by_job: HashMap<String, Vec<Recorded>> = HashMap::new();
        for (job, recorded) in self.table.of_jobs(account.id, jobs).await? {
            by_job.entry(job).or_default().push(recorded);
        }
        Ok(jobs
            .iter()
            .map(|job| collect(by_job.get(job).cloned().unwrap_or_default()))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_values_read_as_text_and_a_newer_mlflow_run_wins() {
        let params = collect(vec![
            Recorded::LocalRun(r#"{"lr": 0.25, "opt": "adam", "deep": true}"#.into()),
            Recorded::Mlflow {
                key: "lr".into(),
                value: "0.5".into(),
            },
            Recorded::Mlflow {
                key: "lr".into(),
                value: "0.75".into(),
            },
        ]);
        assert_eq!(params["lr"], "0.75");
        assert_eq!(params["opt"], "adam");
        assert_eq!(params["deep"], "true");
    }
}
