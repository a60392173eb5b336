//! The job table's filters, sort and page: one type for the URL, the server
//! function and the REST API, so a copied link shows the same view.

use serde::{Deserialize, Serialize};

use super::jobs::{Job, JobSource, JobStatus};
use super::time::DAY_MS;

/// Rows per page unless the URL says otherwise.
pub const DEFAULT_PER_PAGE: u32 = 25;
/// Most rows a page may ask for.
pub const MAX_PER_PAGE: u32 = 200;

/// Columns the table sorts by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum JobSort {
    /// Newest first (the default).
    #[default]
    Newest,
    /// Oldest first.
    Oldest,
    /// By name, A to Z.
    Name,
    /// By status.
    Status,
}

impl JobSort {
    /// Every option, in the order the filter form lists them.
    pub const ALL: [JobSort; 4] = [
        JobSort::Newest,
        JobSort::Oldest,
        JobSort::Name,
        JobSort::Status,
    ];

    /// URL form.
    pub fn as_str(self) -> &'static str {
        match self {
            JobSort::Newest => "newest",
            JobSort::Oldest => "oldest",
            JobSort::Name => "name",
            JobSort::Status => "status",
        }
    }

    /// Shown in the sort menu.
    pub fn label(self) -> &'static str {
        match self {
            JobSort::Newest => "Newest first",
            JobSort::Oldest => "Oldest first",
            JobSort::Name => "Name",
            JobSort::Status => "Status",
        }
    }

    /// Reads the URL form; anything else is the default.
    pub fn parse(s: &str) -> Self {
        Self::ALL
            .into_iter()
            .find(|x| x.as_str() == s)
            .unwrap_or_default()
    }
}

/// Which jobs to show.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobQuery {
    /// Only jobs in this status.
    #[serde(default)]
    pub status: Option<JobStatus>,
    /// Only jobs whose name contains this.
    #[serde(default)]
    pub name: Option<String>,
    /// Only jobs that ran there: the console's, local runs, MLflow runs.
    #[serde(default)]
    pub source: Option<JobSource>,
    /// Submitted at or after, Unix ms.
    #[serde(default)]
    pub from: Option<i64>,
    /// Submitted before, Unix ms.
    #[serde(default)]
    pub to: Option<i64>,
    /// Order.
    #[serde(default)]
    pub sort: JobSort,
    /// 1-based page.
    #[serde(default)]
    pub page: Option<u32>,
    /// Rows per page.
    #[serde(default)]
    pub per_page: Option<u32>,
}

impl JobQuery {
    /// The page, at least 1.
    pub fn page(&self) -> u32 {
        self.page.unwrap_or(1).max(1)
    }

    /// Rows per page within bounds.
    pub fn per_page(&self) -> u32 {
        self.per_page
            .unwrap_or(DEFAULT_PER_PAGE)
            .clamp(1, MAX_PER_PAGE)
    }

    /// The name filter, trimmed, if any.
    pub fn name_filter(&self) -> Option<&str> {
        self.name
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
    }
}

/// One page of the job table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct JobPage {
    /// The rows.
    pub jobs: Vec<Job>,
    /// How many jobs match the filters in all.
    pub total: u64,
    /// This page (1-based).
    pub page: u32,
    /// Rows per page.
    pub per_page: u32,
    /// The server's clock when it listed them, Unix ms: ages are computed
    /// from it, so server and browser render the same text.
    pub now: i64,
}

impl JobPage {
    /// How many pages the matches fill.
    pub fn pages(&self) -> u32 {
        (self.total.div_ceil(u64::from(self.per_page.max(1)))).max(1) as u32
    }
}

/// What part of a pod's log to read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogRequest {
    /// Last N lines (None: the whole log).
    pub tail: Option<usize>,
    /// Keep the stream open and send new lines until the pod ends.
    pub follow: bool,
    /// Keep each line's RFC 3339 timestamp.
    pub timestamps: bool,
}

/// `2026-11-22` → Unix ms at the start of that day, UTC.
pub fn date_to_ms(date: &str) -> Option<i64> {
    let mut parts = date.trim().splitn(3, '-');
    let year: i32 = parts.next()?.parse().ok()?;
    let month: u8 = parts.next()?.parse().ok()?;
    let day: u8 = parts.next()?.parse().ok()?;
    let month = time::Month::try_from(month).ok()?;
    let date = time::Date::from_calendar_date(year, month, day).ok()?;
    Some(date.midnight().assume_utc().unix_timestamp() * 1000)
}

/// Unix ms → `2026-11-22` (UTC), the inverse of [`date_to_ms`].
pub fn ms_to_date(ms: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(ms.div_euclid(1000))
        .map(|t| format!("{:04}-{:02}-{:02}", t.year(), u8::from(t.month()), t.day()))
        .unwrap_or_default()
}

impl JobQuery {
    /// Reads the URL's parameters (`status`, `q`, `from`, `to` as dates with
    /// `to` inclusive, `sort`, `page`); unknown or malformed values are ignored.
    pub fn from_params(get: impl Fn(&str) -> Option<String>) -> Self {
        let nonempty = |k: &str| get(k).filter(|v| !v.trim().is_empty());
        Self {
            status: nonempty("status").and_then(|s| JobStatus::parse(&s)),
            name: nonempty("q"),
            source: nonempty("source")
                .and_then(|s| JobSource::ALL.into_iter().find(|x| x.as_str() == s)),
            from: nonempty("from").and_then(|d| date_to_ms(&d)),
            to: nonempty("to")
                .and_then(|d| date_to_ms(&d))
                .map(|ms| ms + DAY_MS),
            sort: nonempty("sort")
                .map(|s| JobSort::parse(&s))
                .unwrap_or_default(),
            page: nonempty("page").and_then(|p| p.parse().ok()),
            per_page: nonempty("per_page").and_then(|p| p.parse().ok()),
        }
    }

    /// The URL parameters that reproduce this query (defaults left out).
    pub fn to_params(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if let Some(status) = self.status {
            out.push(("status", status.as_str().to_owned()));
        }
        if let Some(name) = self.name_filter() {
            out.push(("q", name.to_owned()));
        }
        if let Some(source) = self.source {
            out.push(("source", source.as_str().to_owned()));
        }
        if let Some(from) = self.from {
            out.push(("from", ms_to_date(from)));
        }
        if let Some(to) = self.to {
            // Any number may come in a server function's query.
            out.push(("to", ms_to_date(to.saturating_sub(DAY_MS))));
        }
        if self.sort != JobSort::default() {
            out.push(("sort", self.sort.as_str().to_owned()));
        }
        if let Some(per_page) = self.per_page {
            out.push(("per_page", per_page.to_string()));
        }
        if self.page() > 1 {
            out.push(("page", self.page().to_string()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_round_trips_every_filter() {
        let params = [
            ("status", "failed"),
            ("q", "mnist"),
            ("from", "2026-11-01"),
            ("to", "2026-11-22"),
            ("sort", "name"),
            ("page", "3"),
        ];
        let get = |k: &str| {
            params
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        };
        let q = JobQuery::from_params(get);
        assert_eq!(q.status, Some(JobStatus::Failed));
        assert_eq!(
            q.to.unwrap() - q.from.unwrap(),
            22 * DAY_MS,
            "to is inclusive"
        );
        let back: Vec<(&str, String)> = q.to_params();
        assert_eq!(
            back,
            params
                .iter()
                .map(|(k, v)| (*k, v.to_string()))
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn malformed_url_values_are_ignored() {
        let q = JobQuery::from_params(|k| match k {
            "status" => Some("exploded".into()),
            "from" => Some("yesterday".into()),
            "page" => Some("-1".into()),
            _ => None,
        });
        assert_eq!(q, JobQuery::default());
    }

    #[test]
    fn pages_and_sizes_stay_in_bounds() {
        let q = JobQuery {
            page: Some(0),
            per_page: Some(10_000),
            ..Default::default()
        };
        assert_eq!((q.page(), q.per_page()), (1, MAX_PER_PAGE));
        let page = JobPage {
            jobs: vec![],
            total: 51,
            page: 1,
            per_page: 25,
            now: 0,
        };
        assert_eq!(page.pages(), 3);
    }

    #[test]
    fn a_query_from_any_numbers_writes_its_url() {
        // Found by fuzzing: fuzz/regressions/job_query/to-at-the-minimum.json.
        let q = JobQuery {
            from: Some(i64::MIN),
            to: Some(i64::MIN),
            ..Default::default()
        };
        assert_eq!(
            q.to_params(),
            [("from", String::new()), ("to", String::new())]
        );
    }

    #[test]
    fn a_blank_name_filter_is_no_filter() {
        let q = JobQuery {
            name: Some("  ".into()),
            ..Default::default()
        };
        assert_eq!(q.name_filter(), None);
    }
}
