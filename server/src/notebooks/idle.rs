//! Idle culling. Every so often each running notebook's server is asked for
//! its kernels and terminals (`?no_track_activity=1`, so that asking is not
//! activity): a busy kernel is activity now, else the newest
//! `last_activity` of any kernel or terminal counts. A notebook whose idle
//! timeout (its own, else the site's) has passed since then, or since it
//! started, is stopped, never deleted, and says why. A probe that fails
//! never culls: the failure is shown instead. Starting again clears the
//! clock ([`crate::storage::notebooks::NotebookStore::begin_start`]).

use std::time::Duration;

use app::error::AppError;
use app::models::time::format_utc;
use app::models::{base_path, NotebookStatus};
use serde::Deserialize;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use super::NotebookService;
use crate::backend::lab_client::{get, LabClient};
use crate::storage::notebooks::StoredNotebook;
use crate::time::now_ms;

/// A kernel or terminal as Jupyter's REST API lists it.
#[derive(Debug, Deserialize)]
struct Session {
    /// ISO 8601, UTC.
    #[serde(default)]
    last_activity: Option<String>,
    /// Kernels only: `busy`, `idle`, `starting`…
    #[serde(default)]
    execution_state: Option<String>,
}

/// The newest activity (Unix ms) among `sessions` as of `now`: `now` while
/// a kernel is busy; `None` when there are none.
fn newest(sessions: &[Session], now: i64) -> Option<i64> {
    if sessions
        .iter()
        .any(|s| s.execution_state.as_deref() == Some("busy"))
    {
        return Some(now);
    }
    sessions
        .iter()
        .filter_map(|s| s.last_activity.as_deref())
        .filter_map(|t| OffsetDateTime::parse(t, &Rfc3339).ok())
        .map(|t| (t.unix_timestamp_nanos() / 1_000_000) as i64)
        .max()
}

impl NotebookService {
    /// Probes and culls every `every`, for as long as the console runs.
    pub async fn cull_forever(self, every: Duration) {
        loop {
            tokio::time::sleep(every).await;
            if let Err(err) = self.cull_idle().await {
                tracing::warn!(error = %err, "checking notebooks for activity");
            }
        }
    }

    /// One round: each running notebook's activity recorded, and those
    /// idle past their timeout stopped.
    pub async fn cull_idle(&self) -> Result<(), AppError> {
        let client = self.backend.client();
        for stored in self.store.active_on(&self.backend.name()).await? {
            if stored.notebook.status != NotebookStatus::Running {
                continue;
            }
            let probed = self.activity(&client, &stored).await;
            let (seen, error) = match probed {
                Ok(seen) => (seen, String::new()),
                Err(why) => (None, why),
            };
            let newest = seen.max(stored.notebook.last_activity);
            if newest != stored.notebook.last_activity || error != stored.notebook.probe_error {
                self.store.set_activity(stored.id, newest, &error).await?;
                self.reporter()
                    .announce(stored.account.id, &stored.notebook.name);
            }
            if !error.is_empty() {
                continue;
            }
            // Read again: the owner may have pressed "keep running" meanwhile.
            let now = self
                .store
                .get(stored.account.id, &stored.notebook.name)
                .await?;
            if let (NotebookStatus::Running, Some(stops_at)) =
                (now.notebook.status, now.notebook.stops_at)
            {
                if stops_at <= now_ms() {
                    let since = now
                        .notebook
                        .last_activity
                        .or(now.notebook.started_at)
                        .unwrap_or(stops_at);
                    let minutes = (stops_at - since) / 60_000;
                    let why = format!(
                        "Stopped after {minutes} min without kernel or terminal activity \
                         (idle since {}).",
                        format_utc(since)
                    );
                    self.halt(&now, &why, "idle culling").await?;
                }
            }
        }
        Ok(())
    }

    /// The newest kernel or terminal activity of a notebook's server.
    async fn activity(
        &self,
        client: &LabClient,
        stored: &StoredNotebook,
    ) -> Result<Option<i64>, String> {
        let Some(upstream) = self
            .backend
            .upstream(&stored.account, stored.id, &stored.notebook.name)
            .await
        else {
            return Err("Its server does not answer.".to_owned());
        };
        let base = base_path(&stored.account.name, &stored.notebook.name);
        let mut sessions = Vec::new();
        for what in ["kernels", "terminals"] {
            let url = format!("{upstream}{base}api/{what}?no_track_activity=1");
            let (status, body) = get(client, &url, &stored.jupyter_token, Duration::from_secs(10))
                .await
                .map_err(|e| format!("Asking its server for its {what} failed: {e}"))?;
            if !(200..300).contains(&status) {
                return Err(format!(
                    "Its server answered {status} when asked for its {what}."
                ));
            }
            let listed: Vec<Session> = serde_json::from_slice(&body)
                .map_err(|e| format!("Its {what} could not be read: {e}"))?;
            sessions.extend(listed);
        }
        Ok(newest(&sessions, now_ms()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(at: Option<&str>, state: Option<&str>) -> Session {
        Session {
            last_activity: at.map(str::to_owned),
            execution_state: state.map(str::to_owned),
        }
    }

    #[test]
    fn a_busy_kernel_is_activity_now_else_the_newest_last_activity_counts() {
        let idle = [
            session(Some("2026-11-25T10:00:00.000000Z"), Some("idle")),
            session(Some("2026-11-25T10:05:00.500Z"), None),
        ];
        assert_eq!(newest(&idle, 9), Some(1_795_601_100_500));
        let busy = [
            session(Some("2026-11-25T10:00:00Z"), Some("busy")),
            session(None, None),
        ];
        assert_eq!(newest(&busy, 42), Some(42));
        assert_eq!(newest(&[], 42), None);
        assert_eq!(newest(&[session(Some("yesterday"), None)], 42), None);
    }
}
