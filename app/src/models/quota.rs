//! An account's quota (CPU, memory, GPU, running jobs), what its jobs use of
//! it, and the CPU/GPU hours they consumed.

use serde::{Deserialize, Serialize};

use super::jobs::ResourceTotals;
use super::quantity::{
    format_cpu, format_memory, memory_quantity, parse_cpu_millis, parse_memory_bytes,
};
use super::time::DAY_MS;
use super::workload::Workload;
use crate::error::AppError;

/// Limits on what an account's unfinished jobs may request at once; `None`
/// is no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Quota {
    /// Millicores.
    pub cpu_millis: Option<u64>,
    /// Bytes.
    pub memory_bytes: Option<u64>,
    /// GPUs.
    pub gpu: Option<u64>,
    /// Jobs pending or running at once.
    pub max_jobs: Option<u64>,
}

/// The quota form as typed: Kubernetes quantities, empty for no limit.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct QuotaForm {
    /// e.g. `16` or `500m`.
    #[serde(default)]
    #[cfg_attr(
        feature = "ssr",
        schema(pattern = r"^(([0-9]{1,9}m|[0-9]{1,6}(\.[0-9]{1,3})?))?$")
    )]
    pub cpu: String,
    /// e.g. `64Gi`.
    #[serde(default)]
    #[cfg_attr(
        feature = "ssr",
        schema(pattern = r"^([0-9]{1,5}(\.[0-9]{1,3})?(Ki|Mi|Gi|Ti|k|K|M|G|T)?)?$")
    )]
    pub memory: String,
    /// Whole GPUs.
    #[serde(default)]
    #[cfg_attr(feature = "ssr", schema(pattern = r"^([0-9]{1,19})?$"))]
    pub gpu: String,
    /// Jobs at once.
    #[serde(default)]
    #[cfg_attr(feature = "ssr", schema(pattern = r"^([0-9]{1,19})?$"))]
    pub max_jobs: String,
}

fn optional<T>(
    raw: &str,
    parse: impl FnOnce(&str) -> Result<T, AppError>,
) -> Result<Option<T>, AppError> {
    let raw = raw.trim();
    if raw.is_empty() {
        Ok(None)
    } else {
        parse(raw).map(Some)
    }
}

fn whole(field: &'static str, what: &'static str) -> impl FnOnce(&str) -> Result<u64, AppError> {
    move |raw| {
        raw.parse::<u64>().map_err(|_| {
            AppError::invalid(
                field,
                format!("{what} is a whole number, e.g. 4 (or empty for no limit)."),
            )
        })
    }
}

impl QuotaForm {
    /// The quota it sets; each bad field gets its own message.
    pub fn to_quota(&self) -> Result<Quota, AppError> {
        Ok(Quota {
            cpu_millis: optional(&self.cpu, |r| parse_cpu_millis("cpu", r))?,
            memory_bytes: optional(&self.memory, |r| parse_memory_bytes("memory", r))?,
            gpu: optional(&self.gpu, whole("gpu", "A GPU count"))?,
            max_jobs: optional(&self.max_jobs, whole("max_jobs", "A job count"))?,
        })
    }

    /// The quota in words, as the audit log records it.
    pub fn words(&self) -> String {
        let or_none = |s: &str| {
            if s.is_empty() {
                "no limit".to_owned()
            } else {
                s.to_owned()
            }
        };
        format!(
            "CPU {}, memory {}, GPU {}, jobs {}",
            or_none(&self.cpu),
            or_none(&self.memory),
            or_none(&self.gpu),
            or_none(&self.max_jobs)
        )
    }

    /// The form showing `quota`.
    pub fn of(quota: &Quota) -> Self {
        Self {
            cpu: quota.cpu_millis.map(format_cpu).unwrap_or_default(),
            memory: quota.memory_bytes.map(memory_quantity).unwrap_or_default(),
            gpu: quota.gpu.map(|g| g.to_string()).unwrap_or_default(),
            max_jobs: quota.max_jobs.map(|g| g.to_string()).unwrap_or_default(),
        }
    }
}

/// Where "used" was read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum UsedFrom {
    /// The console's own record of unfinished jobs.
    #[default]
    Console,
    /// The namespace's ResourceQuota on Kubernetes.
    Kubernetes,
}

/// The quota with what the account's unfinished jobs request of it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct QuotaUse {
    /// The limits.
    pub quota: Quota,
    /// Requested by jobs that are pending or running.
    pub used: ResourceTotals,
    /// Jobs pending or running.
    pub jobs: u64,
    /// Where `used` comes from.
    pub from: UsedFrom,
    /// Who last set the quota, and when (Unix ms).
    pub updated: Option<(String, i64)>,
}

/// One account as a site admin sees it: who runs it and what it uses of
/// its quota.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct AccountQuota {
    /// The account.
    pub account: super::Account,
    /// How many members it has.
    pub members: u64,
    /// Its owners' addresses.
    pub owners: Vec<String>,
    /// Its quota and what its unfinished work uses of it.
    pub quota: QuotaUse,
}

/// One line of a refusal: a resource, what the job asks, what is left.
fn over(
    what: &str,
    noun: &str,
    asked: u64,
    used: u64,
    limit: Option<u64>,
    fmt: impl Fn(u64) -> String,
) -> Option<String> {
    let limit = limit?;
    let left = limit.saturating_sub(used);
    (asked > left).then(|| {
        format!(
            "{what}: the {noun} asks for {}, {} of {} is left ({} over)",
            fmt(asked),
            fmt(left),
            fmt(limit),
            fmt(asked - left)
        )
    })
}

impl QuotaUse {
    /// Whether `what`, asking for `asked`, fits in the account's quota; if
    /// not, a message that says what is over and by how much.
    pub fn admit(&self, what: Workload, asked: ResourceTotals) -> Result<(), AppError> {
        self.admit_as(what, asked, "Over the account's quota.")
    }

    /// Like [`QuotaUse::admit`], for a member's own caps.
    pub fn admit_member(&self, what: Workload, asked: ResourceTotals) -> Result<(), AppError> {
        self.admit_as(
            what,
            asked,
            "Over your cap in this account (its owners set it).",
        )
    }

    fn admit_as(
        &self,
        what: Workload,
        asked: ResourceTotals,
        over_what: &str,
    ) -> Result<(), AppError> {
        let noun = what.noun();
        let q = &self.quota;
        let count = |n: u64| n.to_string();
        let lines: Vec<String> = [
            over(
                "CPU",
                noun,
                asked.cpu_millis,
                self.used.cpu_millis,
                q.cpu_millis,
                format_cpu,
            ),
            over(
                "Memory",
                noun,
                asked.memory_bytes,
                self.used.memory_bytes,
                q.memory_bytes,
                format_memory,
            ),
            over("GPU", noun, asked.gpu, self.used.gpu, q.gpu, count),
            (what == Workload::Job)
                .then(|| over("Jobs", noun, 1, self.jobs, q.max_jobs, count))
                .flatten(),
        ]
        .into_iter()
        .flatten()
        .collect();
        if lines.is_empty() {
            Ok(())
        } else {
            Err(AppError::forbidden(format!(
                "{over_what} {}.",
                lines.join("; ")
            )))
        }
    }

    /// What is left: `None` where there is no limit.
    pub fn left(&self) -> Quota {
        let q = &self.quota;
        Quota {
            cpu_millis: q.cpu_millis.map(|l| l.saturating_sub(self.used.cpu_millis)),
            memory_bytes: q
                .memory_bytes
                .map(|l| l.saturating_sub(self.used.memory_bytes)),
            gpu: q.gpu.map(|l| l.saturating_sub(self.used.gpu)),
            max_jobs: q.max_jobs.map(|l| l.saturating_sub(self.jobs)),
        }
    }
}

/// What usage hours are computed from: one job's run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRun {
    /// Who submitted it (email), or empty when unknown.
    pub user: String,
    /// When it started, Unix ms.
    pub started_at: i64,
    /// When it ended, Unix ms; `None` while it runs.
    pub finished_at: Option<i64>,
    /// What it requested.
    pub requested: ResourceTotals,
}

impl JobRun {
    /// CPU-hours and GPU-hours of this run inside `[from, to)` (Unix ms); a
    /// running job counts up to `to`.
    pub fn hours_in(&self, from: i64, to: i64) -> (f64, f64) {
        let start = self.started_at.max(from);
        let end = self.finished_at.unwrap_or(to).min(to);
        if end <= start {
            return (0.0, 0.0);
        }
        let hours = (end - start) as f64 / 3_600_000.0;
        (
            hours * self.requested.cpu_millis as f64 / 1000.0,
            hours * self.requested.gpu as f64,
        )
    }
}

/// Hours over one window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Hours {
    /// Core-hours requested.
    pub cpu: f64,
    /// GPU-hours requested.
    pub gpu: f64,
}

impl Hours {
    /// Sums `runs` inside `[from, to)`.
    pub fn of<'a>(runs: impl IntoIterator<Item = &'a JobRun>, from: i64, to: i64) -> Self {
        runs.into_iter().fold(Hours::default(), |acc, r| {
            let (cpu, gpu) = r.hours_in(from, to);
            Hours {
                cpu: acc.cpu + cpu,
                gpu: acc.gpu + gpu,
            }
        })
    }
}

/// The windows the quota page reports, in days.
pub const WINDOWS: [(u32, &str); 3] = [(1, "Last day"), (7, "Last week"), (30, "Last month")];

/// One member's hours per window (in [`WINDOWS`]' order).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct UserHours {
    /// The member's email (empty: jobs whose submitter is gone).
    pub user: String,
    /// Per window.
    pub windows: Vec<Hours>,
}

/// One UTC day's hours, for the chart by day.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct DayHours {
    /// The day's start, Unix ms (UTC midnight).
    pub day: i64,
    /// That day's hours.
    pub hours: Hours,
}

/// The account's CPU/GPU hours: per window, per member, per day.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct UsageReport {
    /// When it was computed (the windows end here), Unix ms.
    pub now: i64,
    /// The whole account per window (in [`WINDOWS`]' order).
    pub windows: Vec<Hours>,
    /// Per member, most CPU-hours in the month first.
    pub users: Vec<UserHours>,
    /// The last 30 UTC days, oldest first (today so far last).
    pub days: Vec<DayHours>,
}

impl UsageReport {
    /// The report of `runs` at `now`.
    pub fn compute(runs: &[JobRun], now: i64) -> Self {
        let windows = |runs: &[&JobRun]| {
            WINDOWS
                .iter()
                .map(|(days, _)| {
                    Hours::of(runs.iter().copied(), now - i64::from(*days) * DAY_MS, now)
                })
                .collect::<Vec<_>>()
        };
        let all: Vec<&JobRun> = runs.iter().collect();
        let mut emails: Vec<&str> = runs.iter().map(|r| r.user.as_str()).collect();
        emails.sort_unstable();
        emails.dedup();
        let mut users: Vec<UserHours> = emails
            .into_iter()
            .map(|user| {
                let mine: Vec<&JobRun> = runs.iter().filter(|r| r.user == user).collect();
                UserHours {
                    user: user.to_owned(),
                    windows: windows(&mine),
                }
            })
            .collect();
        users.sort_by(|a, b| {
            let month = |u: &UserHours| u.windows.last().map_or(0.0, |h| h.cpu);
            month(b)
                .total_cmp(&month(a))
                .then_with(|| a.user.cmp(&b.user))
        });
        let today = now - now.rem_euclid(DAY_MS);
        let days = (0..30)
            .rev()
            .map(|back| {
                let day = today - back * DAY_MS;
                DayHours {
                    day,
                    hours: Hours::of(runs, day, (day + DAY_MS).min(now)),
                }
            })
            .collect();
        UsageReport {
            now,
            windows: windows(&all),
            users,
            days,
        }
    }

    /// The report as CSV: one row per member and window, then one per day.
    pub fn to_csv(&self) -> String {
        let mut out = String::from("scope,who,window,cpu_hours,gpu_hours\n");
        for (i, (days, _)) in WINDOWS.iter().enumerate() {
            let h = self.windows.get(i).copied().unwrap_or_default();
            out.push_str(&format!("account,,{days}d,{:.4},{:.4}\n", h.cpu, h.gpu));
        }
        for u in &self.users {
            for (i, (days, _)) in WINDOWS.iter().enumerate() {
                let h = u.windows.get(i).copied().unwrap_or_default();
                out.push_str(&format!(
                    "user,{},{days}d,{:.4},{:.4}\n",
                    super::csv::field(&u.user),
                    h.cpu,
                    h.gpu
                ));
            }
        }
        for d in &self.days {
            out.push_str(&format!(
                "day,,{},{:.4},{:.4}\n",
                super::time::format_date(d.day),
                d.hours.cpu,
                d.hours.gpu
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: i64 = 3_600_000;

    fn run(user: &str, start: i64, end: Option<i64>, cpu_millis: u64, gpu: u64) -> JobRun {
        JobRun {
            user: user.into(),
            started_at: start,
            finished_at: end,
            requested: ResourceTotals {
                cpu_millis,
                memory_bytes: 0,
                gpu,
            },
        }
    }

    fn quota_use(quota: Quota, used: ResourceTotals, jobs: u64) -> QuotaUse {
        QuotaUse {
            quota,
            used,
            jobs,
            ..QuotaUse::default()
        }
    }

    #[test]
    fn a_run_crossing_the_window_start_counts_only_its_part_inside() {
        let r = run("a", 10 * H, Some(14 * H), 2000, 1);
        assert_eq!(r.hours_in(12 * H, 20 * H), (4.0, 2.0));
        assert_eq!(r.hours_in(0, 11 * H), (2.0, 1.0));
        assert_eq!(r.hours_in(14 * H, 20 * H), (0.0, 0.0));
    }

    #[test]
    fn a_running_job_counts_up_to_now() {
        let r = run("a", 10 * H, None, 500, 0);
        assert_eq!(r.hours_in(0, 13 * H), (1.5, 0.0));
    }

    #[test]
    fn the_report_splits_windows_users_and_days_at_utc_midnight() {
        let day = 86_400_000;
        let now = 40 * day + 6 * H; // 06:00 on day 40
        let runs = [
            // 22:00 yesterday to 02:00 today: 2 h yesterday, 2 h today.
            run("ann@x", 40 * day - 2 * H, Some(40 * day + 2 * H), 1000, 1),
            // Eight days ago: in the month, not the week.
            run("bob@x", 32 * day, Some(32 * day + 3 * H), 4000, 0),
            // Still running since 05:00.
            run("bob@x", 40 * day + 5 * H, None, 1000, 0),
        ];
        let r = UsageReport::compute(&runs, now);
        assert_eq!(r.windows[0], Hours { cpu: 5.0, gpu: 4.0 });
        assert_eq!(r.windows[1], Hours { cpu: 5.0, gpu: 4.0 });
        assert_eq!(
            r.windows[2],
            Hours {
                cpu: 17.0,
                gpu: 4.0
            }
        );
        assert_eq!(r.users[0].user, "bob@x");
        assert_eq!(r.users[0].windows[2].cpu, 13.0);
        assert_eq!(r.days.len(), 30);
        let today = r.days[29];
        assert_eq!(today.day, 40 * day);
        assert_eq!(today.hours, Hours { cpu: 3.0, gpu: 2.0 });
        assert_eq!(r.days[28].hours, Hours { cpu: 2.0, gpu: 2.0 });
        assert_eq!(r.days[21].hours.cpu, 12.0);
        let csv = r.to_csv();
        assert!(csv.contains("account,,1d,5.0000,4.0000\n"), "{csv}");
        assert!(csv.contains("user,bob@x,30d,13.0000,0.0000\n"), "{csv}");
    }

    #[test]
    fn a_job_that_fits_exactly_is_admitted_and_one_more_core_is_refused_with_by_how_much() {
        let quota = Quota {
            cpu_millis: Some(4000),
            memory_bytes: Some(8 << 30),
            gpu: Some(1),
            max_jobs: Some(3),
        };
        let used = ResourceTotals {
            cpu_millis: 1000,
            memory_bytes: 2 << 30,
            gpu: 0,
        };
        let q = quota_use(quota, used, 1);
        let fits = ResourceTotals {
            cpu_millis: 3000,
            memory_bytes: 6 << 30,
            gpu: 1,
        };
        assert!(q.admit(Workload::Job, fits).is_ok());
        let err = q
            .admit(
                Workload::Job,
                ResourceTotals {
                    cpu_millis: 4000,
                    ..fits
                },
            )
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("CPU: the job asks for 4, 3 of 4 is left (1 over)"),
            "{err}"
        );
        assert!(!err.contains("Memory"), "{err}");
    }

    #[test]
    fn the_job_count_limit_refuses_one_job_too_many() {
        let q = quota_use(
            Quota {
                max_jobs: Some(2),
                ..Quota::default()
            },
            ResourceTotals::default(),
            2,
        );
        let err = q
            .admit(Workload::Job, ResourceTotals::default())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("Jobs: the job asks for 1, 0 of 2 is left (1 over)"),
            "{err}"
        );
    }

    #[test]
    fn no_quota_admits_anything() {
        let q = QuotaUse::default();
        assert!(q
            .admit(
                Workload::Job,
                ResourceTotals {
                    cpu_millis: u64::MAX / 2,
                    memory_bytes: u64::MAX / 2,
                    gpu: 1000
                }
            )
            .is_ok());
    }

    #[test]
    fn the_form_reads_quantities_and_empty_fields_as_no_limit() {
        let form = QuotaForm {
            cpu: "8".into(),
            memory: "16Gi".into(),
            gpu: "".into(),
            max_jobs: " 5 ".into(),
        };
        let q = form.to_quota().unwrap();
        assert_eq!(q.cpu_millis, Some(8000));
        assert_eq!(q.memory_bytes, Some(16 << 30));
        assert_eq!(q.gpu, None);
        assert_eq!(q.max_jobs, Some(5));
        assert_eq!(QuotaForm::of(&q).to_quota().unwrap(), q);
        let bad = QuotaForm {
            gpu: "two".into(),
            ..QuotaForm::default()
        };
        assert_eq!(bad.to_quota().unwrap_err().field(), Some("gpu"));
    }
}
