//! The audit log: membership, role, quota, key and password events.

use serde::{Deserialize, Serialize};

use crate::error::AppError;

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

/// An account's audit log as its page shows it: one page of the events
/// that match the filters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct AuditLog {
    /// The account's name.
    pub account: String,
    /// Its events, newest first.
    pub events: Vec<AuditEvent>,
    /// Where the next page of older events starts (`before=`); none when
    /// these are the oldest that match.
    #[serde(default)]
    pub older: Option<String>,
    /// Where the page of newer events ends (`after=`); none when these are
    /// the newest that match.
    #[serde(default)]
    pub newer: Option<String>,
    /// Every action the account's log holds, for a filter.
    #[serde(default)]
    pub actions: Vec<String>,
}

/// Events a page of the audit log shows unless asked for another number.
pub const AUDIT_PAGE: u32 = 50;
/// The most events one page (or one CSV) of the audit log holds.
pub const AUDIT_MAX_PAGE: u32 = 1000;

/// What a reader of the audit log asks for, as the page's URL and
/// `GET /api/v1/audit` carry it: filters, and which page. Every field may
/// be missing; [`AuditQuery::parse`] checks them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::IntoParams))]
#[cfg_attr(feature = "ssr", into_params(parameter_in = Query))]
pub struct AuditQuery {
    /// Only events by an actor whose email contains this (any case).
    #[serde(default)]
    #[cfg_attr(
        feature = "ssr",
        param(pattern = r"^[^\x00-\x1f\x7f-\x9f]*$", max_length = 254)
    )]
    pub actor: Option<String>,
    /// Only events of this action (`key.created`) or kind (`key`: every
    /// `key.…` action).
    #[serde(default)]
    #[cfg_attr(
        feature = "ssr",
        param(pattern = r"^[^\x00-\x1f\x7f-\x9f]*$", max_length = 100)
    )]
    pub action: Option<String>,
    /// Only events on or after this day (`YYYY-MM-DD`, UTC).
    #[serde(default)]
    #[cfg_attr(feature = "ssr", param(format = Date))]
    pub from: Option<String>,
    /// Only events on or before this day (`YYYY-MM-DD`, UTC).
    #[serde(default)]
    #[cfg_attr(feature = "ssr", param(format = Date))]
    pub to: Option<String>,
    /// Only events older than this one (an answer's `older`: the next page).
    #[serde(default)]
    #[cfg_attr(feature = "ssr", param(pattern = r"^([0-9]{1,18}-[0-9]{1,18})?$"))]
    pub before: Option<String>,
    /// Only events newer than this one (an answer's `newer`: the page
    /// before); with `after` alone the page is the one just after it.
    #[serde(default)]
    #[cfg_attr(feature = "ssr", param(pattern = r"^([0-9]{1,18}-[0-9]{1,18})?$"))]
    pub after: Option<String>,
    /// Events a page (default 50).
    #[serde(default)]
    #[cfg_attr(feature = "ssr", param(minimum = 1, maximum = 1000))]
    pub limit: Option<u32>,
}

/// Where a page of the audit log starts: an event's time and id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditCursor {
    /// The event's time, Unix milliseconds.
    pub at: i64,
    /// The event's id.
    pub id: i64,
}

impl AuditCursor {
    /// The cursor of `event`.
    pub fn of(event: &AuditEvent) -> Self {
        Self {
            at: event.at,
            id: event.id,
        }
    }

    /// `<at>-<id>`, as `older` and `newer` carry it.
    pub fn to_param(self) -> String {
        format!("{}-{}", self.at, self.id)
    }

    fn parse(raw: &str) -> Option<Self> {
        let (at, id) = raw.split_once('-')?;
        Some(Self {
            at: at.parse().ok()?,
            id: id.parse().ok()?,
        })
    }
}

/// An [`AuditQuery`] checked: what the store is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditFilter {
    /// Part of the actor's email, lower case.
    pub actor: Option<String>,
    /// An action or a kind of actions.
    pub action: Option<String>,
    /// From this time on, Unix milliseconds.
    pub from_ms: Option<i64>,
    /// Before this time, Unix milliseconds.
    pub until_ms: Option<i64>,
    /// Only events older than this one.
    pub before: Option<AuditCursor>,
    /// Only events newer than this one.
    pub after: Option<AuditCursor>,
    /// Events a page.
    pub limit: u32,
}

impl Default for AuditFilter {
    fn default() -> Self {
        Self {
            actor: None,
            action: None,
            from_ms: None,
            until_ms: None,
            before: None,
            after: None,
            limit: AUDIT_PAGE,
        }
    }
}

impl AuditQuery {
    /// The query from a page's URL parameters; a blank one (a form's empty
    /// field) is no filter.
    pub fn from_params(get: impl Fn(&str) -> Option<String>) -> Self {
        let get = |k: &str| get(k).filter(|v| !v.trim().is_empty());
        Self {
            actor: get("actor"),
            action: get("action"),
            from: get("from"),
            to: get("to"),
            before: get("before"),
            after: get("after"),
            limit: get("limit").and_then(|l| l.parse().ok()),
        }
    }

    /// Checks every field; a bad one is a 400 naming it. Empty fields (a
    /// form's blank inputs) are no filter; a range that ends before it
    /// starts matches nothing.
    pub fn parse(&self) -> Result<AuditFilter, AppError> {
        let longer =
            |v: &Option<String>, max: usize| v.as_deref().is_some_and(|v| v.chars().count() > max);
        if longer(&self.actor, 254) {
            return Err(AppError::invalid(
                "actor",
                "An actor is at most 254 characters.",
            ));
        }
        if longer(&self.action, 100) {
            return Err(AppError::invalid(
                "action",
                "An action is at most 100 characters.",
            ));
        }
        for (field, v) in [("actor", &self.actor), ("action", &self.action)] {
            if v.as_deref()
                .is_some_and(|v| v.chars().any(char::is_control))
            {
                return Err(AppError::invalid(
                    field,
                    "A filter has no control characters.",
                ));
            }
        }
        let given = |v: &Option<String>| {
            v.as_deref()
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        };
        // A day is `format: date` as sent: a blank one is refused too (the
        // page's form leaves blanks out of the query it asks with).
        let day = |field: &'static str, v: &Option<String>| {
            v.as_deref()
                .map(|d| {
                    parse_date(d).ok_or_else(|| {
                        AppError::invalid(
                            field,
                            "A day is written YYYY-MM-DD (UTC), like 2026-11-28.",
                        )
                    })
                })
                .transpose()
        };
        let cursor = |field: &'static str, v: &Option<String>| {
            given(v)
                .map(|c| {
                    AuditCursor::parse(&c).ok_or_else(|| {
                        AppError::invalid(field, "Not a place in the log: follow the page links.")
                    })
                })
                .transpose()
        };
        let limit = self.limit.unwrap_or(AUDIT_PAGE);
        if !(1..=AUDIT_MAX_PAGE).contains(&limit) {
            return Err(AppError::invalid(
                "limit",
                format!("A page holds 1 to {AUDIT_MAX_PAGE} events."),
            ));
        }
        Ok(AuditFilter {
            actor: given(&self.actor).map(|a| a.to_lowercase()),
            action: given(&self.action),
            from_ms: day("from", &self.from)?.map(|(start, _)| start),
            until_ms: day("to", &self.to)?.map(|(_, end)| end),
            before: cursor("before", &self.before)?,
            after: cursor("after", &self.after)?,
            limit,
        })
    }
}

/// A UTC day, `2026-11-28`, as Unix milliseconds: its first and the one
/// after its last.
pub fn parse_date(raw: &str) -> Option<(i64, i64)> {
    let mut ymd = raw.splitn(3, '-');
    let year: i32 = ymd.next()?.parse().ok()?;
    let month: u8 = ymd.next()?.parse().ok()?;
    let day: u8 = ymd.next()?.parse().ok()?;
    let date =
        time::Date::from_calendar_date(year, time::Month::try_from(month).ok()?, day).ok()?;
    let start =
        i64::try_from(date.midnight().assume_utc().unix_timestamp_nanos() / 1_000_000).ok()?;
    Some((start, start + super::time::DAY_MS))
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
            older: None,
            newer: None,
            actions: Vec::new(),
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

    fn query(pairs: &[(&str, &str)]) -> AuditQuery {
        AuditQuery::from_params(|k| {
            pairs
                .iter()
                .find(|(key, _)| *key == k)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn a_day_is_its_whole_utc_day() {
        let day = parse_date("2026-11-28").unwrap();
        assert_eq!(day, (1_795_824_000_000, 1_795_824_000_000 + 86_400_000));
        assert!(
            parse_date("0001-01-01").is_some(),
            "any date a calendar has"
        );
        for bad in [
            "",
            "28/11/2026",
            "2026-13-01",
            "2026-02-30",
            "2026-11",
            "x-1-1",
        ] {
            assert_eq!(parse_date(bad), None, "{bad}");
        }
    }

    #[test]
    fn filters_and_pages_are_read_from_the_url_and_blank_fields_are_no_filter() {
        let f = query(&[
            ("actor", " Ann@Example.com "),
            ("action", "key"),
            ("from", "2026-11-28"),
            ("to", "2026-11-28"),
            ("before", "1795824000000-42"),
            ("limit", "10"),
        ])
        .parse()
        .unwrap();
        assert_eq!(f.actor.as_deref(), Some("ann@example.com"));
        assert_eq!(f.action.as_deref(), Some("key"));
        assert_eq!(f.until_ms.unwrap() - f.from_ms.unwrap(), 86_400_000);
        assert_eq!(
            f.before,
            Some(AuditCursor {
                at: 1_795_824_000_000,
                id: 42
            })
        );
        assert_eq!(f.limit, 10);
        let blank = query(&[("actor", ""), ("action", " "), ("from", ""), ("to", "")]);
        assert_eq!(blank.parse().unwrap(), AuditFilter::default());
        let sent = AuditQuery {
            to: Some(String::new()),
            ..AuditQuery::default()
        };
        assert!(
            sent.parse().is_err(),
            "a blank day sent to the API is not a date"
        );
    }

    #[test]
    fn a_bad_filter_or_page_is_refused_naming_its_field() {
        for (pairs, field) in [
            (vec![("from", "yesterday")], "from"),
            (vec![("to", "2026-11-31")], "to"),
            (vec![("before", "42")], "before"),
            (vec![("after", "99999999999999999999-1")], "after"),
            (vec![("actor", "ann\u{0}")], "actor"),
            (vec![("limit", "0")], "limit"),
            (vec![("limit", "1001")], "limit"),
        ] {
            match query(&pairs).parse() {
                Err(AppError::Invalid { field: Some(f), .. }) => assert_eq!(f, field, "{pairs:?}"),
                other => panic!("{pairs:?}: {other:?}"),
            }
        }
    }
}
