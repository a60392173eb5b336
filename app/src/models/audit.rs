//! The audit log: membership, role, quota, key and password events.

use serde::{Deserialize, Serialize};

/// One event of an account's audit log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct AuditEvent {
    /// Database id (events of the same millisecond keep their order).
    pub id: i64,
    /// When it happened, Unix milliseconds.
    pub at: i64,
    /// Who did it: an email, or `console` for what the console did itself.
    pub actor: String,
    /// What happened: `password.changed`, `password.reset`,
    /// `password.reset_link_sent`, `email.confirmed`, `key.created`,
    /// `key.revoked`, `quota.set`, `template.published`,
    /// `template.unpublished`, `environment.published`,
    /// `environment.unpublished`.
    pub action: String,
    /// What it happened to, in words.
    pub detail: String,
}

/// An account's audit log as its page shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct AuditLog {
    /// The account's name.
    pub account: String,
    /// Its events, newest first.
    pub events: Vec<AuditEvent>,
}

impl AuditLog {
    /// The log as CSV, one event per row, times in UTC.
    pub fn to_csv(&self) -> String {
        let mut out = String::from("time_utc,actor,action,detail\n");
        for e in &self.events {
            out.push_str(&format!(
                "{},{},{},{}\n",
                super::time::format_utc_seconds(e.at),
                super::csv::field(&e.actor),
                super::csv::field(&e.action),
                super::csv::field(&e.detail)
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_csv_has_one_row_per_event_with_awkward_text_quoted() {
        let log = AuditLog {
            account: "acme".into(),
            events: vec![AuditEvent {
                id: 1,
                at: 0,
                actor: "ann@example.com".into(),
                action: "key.created".into(),
                detail: "access key “ci, nightly” (pc_1234…)".into(),
            }],
        };
        let csv = log.to_csv();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], "time_utc,actor,action,detail");
        assert_eq!(
            lines[1],
            "1970-01-01 00:00:00 UTC,ann@example.com,key.created,\"access key “ci, nightly” (pc_1234…)\""
        );
    }
}
