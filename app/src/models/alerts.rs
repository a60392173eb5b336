//! Metric alerts: an account's rules on a PaddleBoard tag (a value that is
//! NaN or infinite, above or below a threshold, no new point for some
//! minutes), checked by the console's alert controller against every
//! running job (or one), and the alerts they raise: notified, listed, and
//! marked on the tag's chart.

use serde::{Deserialize, Serialize};

use crate::error::AppError;
use crate::models::metrics::json_float;
use crate::models::names::validate_job_name;
use crate::models::url::encode;
use crate::models::MAX_TAG_LEN;

/// The longest rule name.
pub const MAX_RULE_NAME: usize = 50;
/// The longest silence a rule may wait for (a week).
pub const MAX_SILENT_MINUTES: u32 = 7 * 24 * 60;
/// How many alerts the alerts page lists (the newest).
pub const ALERTS_SHOWN: usize = 100;

/// When a rule fires.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum AlertCondition {
    /// A point of the tag is NaN or ±infinite (anywhere in a batch).
    NotFinite,
    /// The tag's newest value is above `threshold`.
    Above {
        /// The limit.
        threshold: f64,
    },
    /// The tag's newest value is below `threshold`.
    Below {
        /// The limit.
        threshold: f64,
    },
    /// A running job wrote no point of the tag for `minutes` (counted from
    /// its start while it has written none).
    Silent {
        /// How long.
        minutes: u32,
    },
}

impl AlertCondition {
    /// In words, after the tag: "is NaN or infinite", "is above 2.5",
    /// "has no new point for 10 min".
    pub fn words(&self) -> String {
        match self {
            Self::NotFinite => "is NaN or infinite".to_owned(),
            Self::Above { threshold } => format!("is above {threshold}"),
            Self::Below { threshold } => format!("is below {threshold}"),
            Self::Silent { minutes } => format!("has no new point for {minutes} min"),
        }
    }

    /// Whether a newest value `value` crosses a threshold (the other
    /// conditions are judged from the series' record, not one value).
    pub fn crossed(&self, value: f64) -> bool {
        match self {
            Self::Above { threshold } => value > *threshold,
            Self::Below { threshold } => value < *threshold,
            Self::NotFinite | Self::Silent { .. } => false,
        }
    }
}

/// A rule as it is written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct AlertRuleSpec {
    /// Its name, unique in the account.
    pub name: String,
    /// The PaddleBoard tag it watches (`loss`, `train/acc`).
    pub tag: String,
    /// One job to watch; every running job of the account when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
    /// When it fires.
    pub condition: AlertCondition,
}

impl AlertRuleSpec {
    /// A 400 naming the field at fault.
    pub fn validate(&self) -> Result<(), AppError> {
        validate_job_name(&self.name).map_err(|err| match err {
            AppError::Invalid { message, .. } => AppError::Invalid {
                field: Some("name".into()),
                message,
            },
            other => other,
        })?;
        if self.name.len() > MAX_RULE_NAME {
            return Err(AppError::invalid(
                "name",
                format!("A rule's name is at most {MAX_RULE_NAME} characters."),
            ));
        }
        let tag = self.tag.trim();
        if tag.is_empty() || tag.len() > MAX_TAG_LEN || tag.chars().any(char::is_control) {
            return Err(AppError::invalid(
                "tag",
                format!(
                    "Name a tag of at most {MAX_TAG_LEN} characters, without control characters."
                ),
            ));
        }
        if let Some(job) = &self.job {
            validate_job_name(job)
                .map_err(|_| AppError::invalid("job", format!("“{job}” is not a job name.")))?;
        }
        match self.condition {
            AlertCondition::Above { threshold } | AlertCondition::Below { threshold }
                if !threshold.is_finite() =>
            {
                Err(AppError::invalid(
                    "condition.threshold",
                    "A threshold is a finite number.",
                ))
            }
            AlertCondition::Silent { minutes } if minutes == 0 || minutes > MAX_SILENT_MINUTES => {
                Err(AppError::invalid(
                    "condition.minutes",
                    format!("Between 1 and {MAX_SILENT_MINUTES} minutes."),
                ))
            }
            _ => Ok(()),
        }
    }

    /// "loss is above 2.5 (every running job)".
    pub fn summary(&self) -> String {
        let which = match &self.job {
            Some(job) => format!("job {job}"),
            None => "every running job".to_owned(),
        };
        format!("{} {} ({which})", self.tag, self.condition.words())
    }
}

/// A kept rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct AlertRule {
    /// What it is.
    #[serde(flatten)]
    pub spec: AlertRuleSpec,
    /// Who made it.
    pub created_by: String,
    /// When (ms since the epoch).
    pub created_at: i64,
    /// Its alerts still open.
    #[serde(default)]
    pub open: u32,
}

/// One firing of a rule for one job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Alert {
    /// Its id.
    pub id: i64,
    /// The rule's name.
    pub rule: String,
    /// The job.
    pub job: String,
    /// The tag.
    pub tag: String,
    /// The step it fired at (none for a job that wrote no point).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<i64>,
    /// The value that fired it (none for a silence).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "json_float::option"
    )]
    #[cfg_attr(feature = "ssr", schema(value_type = Option<f64>))]
    pub value: Option<f64>,
    /// What happened, in words: "loss is NaN or infinite at step 120".
    pub message: String,
    /// When it fired.
    pub raised_at: i64,
    /// When its condition stopped holding (a value back in range, a new
    /// point, the job ended); open while none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_at: Option<i64>,
}

impl Alert {
    /// Whether it still holds.
    pub fn is_open(&self) -> bool {
        self.resolved_at.is_none()
    }

    /// PaddleBoard with its job and tag.
    pub fn board_href(&self) -> String {
        format!(
            "/paddleboard?job={}&tags={}",
            encode(&self.job),
            encode(&self.tag)
        )
    }
}

/// What a rule says of one series now (the controller's verdict).
pub fn alert_message(rule: &AlertRuleSpec, step: Option<i64>, value: Option<f64>) -> String {
    let value_words = |v: f64| {
        if v.is_nan() {
            "NaN".to_owned()
        } else if v.is_infinite() {
            if v > 0.0 { "+∞" } else { "−∞" }.to_owned()
        } else {
            format!("{v}")
        }
    };
    match (rule.condition, step, value) {
        (AlertCondition::Silent { minutes }, Some(step), _) => format!(
            "{} has no new point for {minutes} min (last at step {step})",
            rule.tag
        ),
        (AlertCondition::Silent { minutes }, None, _) => {
            format!("{} has had no point in {minutes} min", rule.tag)
        }
        (_, Some(step), Some(v)) => format!(
            "{} {} at step {step}: {}",
            rule.tag,
            rule.condition.words(),
            value_words(v)
        ),
        (_, Some(step), None) => {
            format!("{} {} at step {step}", rule.tag, rule.condition.words())
        }
        _ => format!("{} {}", rule.tag, rule.condition.words()),
    }
}

/// One watched job's series of a rule's tag, as the controller reads it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SeriesNow {
    /// Whether the job runs.
    pub running: bool,
    /// When it started (ms).
    pub started_at: i64,
    /// The newest step (none: no point yet).
    pub last_step: Option<i64>,
    /// The newest value (NaN when that point is NaN).
    pub last_value: Option<f64>,
    /// When the newest point arrived (ms, the console's clock).
    pub updated_at: Option<i64>,
    /// The newest step whose value was NaN or infinite.
    pub bad_step: Option<i64>,
}

/// What a rule says of one series now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict {
    /// It fires: at this step (none: no point yet), with this value.
    Fire {
        /// The step.
        step: Option<i64>,
        /// The value (none for a silence or a NaN).
        value: Option<f64>,
    },
    /// It does not hold: an open alert resolves.
    Clear,
    /// No change: an open alert stays open, none is raised.
    Keep,
}

/// Judges `series` at `now` by `condition`. `open_step` is the step of the
/// rule's open alert for this job (if one is open); `last_alert_step` of
/// its newest alert for the job, open or not: a NaN already told of is
/// not told again, a new one is.
pub fn judge(
    condition: AlertCondition,
    series: &SeriesNow,
    now: i64,
    open_step: Option<Option<i64>>,
    last_alert_step: Option<i64>,
) -> Verdict {
    match condition {
        AlertCondition::Above { .. } | AlertCondition::Below { .. } => {
            match (series.last_step, series.last_value) {
                (Some(step), Some(v)) if v.is_finite() && condition.crossed(v) => Verdict::Fire {
                    step: Some(step),
                    value: Some(v),
                },
                _ => Verdict::Clear,
            }
        }
        AlertCondition::Silent { minutes } => {
            if !series.running {
                return Verdict::Clear;
            }
            let since = series.updated_at.unwrap_or(series.started_at);
            if now - since >= i64::from(minutes) * 60_000 {
                Verdict::Fire {
                    step: series.last_step,
                    value: None,
                }
            } else {
                Verdict::Clear
            }
        }
        AlertCondition::NotFinite => {
            let newest_finite = series.last_value.is_some_and(f64::is_finite);
            if let Some(bad) = series.bad_step {
                let told = last_alert_step.is_some_and(|s| s >= bad);
                if !told && open_step.is_none() {
                    return Verdict::Fire {
                        step: Some(bad),
                        value: None,
                    };
                }
            }
            match open_step {
                Some(open) if newest_finite && series.last_step > open => Verdict::Clear,
                _ => Verdict::Keep,
            }
        }
    }
}

/// The flat "New rule" form.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlertRuleForm {
    /// Its name.
    pub name: String,
    /// The tag.
    pub tag: String,
    /// One job, or empty for every running job.
    #[serde(default)]
    pub job: String,
    /// `not_finite`, `above`, `below` or `silent`.
    pub kind: String,
    /// The threshold (above, below) or minutes (silent).
    #[serde(default)]
    pub amount: String,
}

impl AlertRuleForm {
    /// The rule the form asks for, checked.
    pub fn to_spec(&self) -> Result<AlertRuleSpec, AppError> {
        let amount = self.amount.trim();
        let threshold = || {
            amount.parse::<f64>().map_err(|_| {
                AppError::invalid("condition.threshold", "A threshold is a number, e.g. 2.5.")
            })
        };
        let condition = match self.kind.as_str() {
            "not_finite" => AlertCondition::NotFinite,
            "above" => AlertCondition::Above {
                threshold: threshold()?,
            },
            "below" => AlertCondition::Below {
                threshold: threshold()?,
            },
            "silent" => AlertCondition::Silent {
                minutes: amount.parse().map_err(|_| {
                    AppError::invalid("condition.minutes", "Minutes are a whole number, e.g. 10.")
                })?,
            },
            other => {
                return Err(AppError::invalid(
                    "condition",
                    format!("“{other}” is not a condition: not_finite, above, below or silent."),
                ))
            }
        };
        let job = self.job.trim();
        let spec = AlertRuleSpec {
            name: self.name.trim().to_owned(),
            tag: self.tag.trim().to_owned(),
            job: (!job.is_empty()).then(|| job.to_owned()),
            condition,
        };
        spec.validate()?;
        Ok(spec)
    }
}

#[cfg(test)]
mod tests;
