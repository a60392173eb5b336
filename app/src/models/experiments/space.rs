//! What an experiment searches: a domain per template parameter.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::AppError;
use crate::models::templates::{ParamType, TemplateParam, MAX_PARAMS};

/// The values one trial runs with: a value per searched parameter, as a
/// template run takes them (ints as JSON integers, floats as numbers, enum
/// choices as strings, bools as booleans).
pub type TrialValues = std::collections::BTreeMap<String, Value>;

/// The values a parameter is searched over.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum Domain {
    /// Whole numbers from `min` to `max`, both included.
    Int {
        /// The smallest value tried.
        min: i64,
        /// The largest value tried.
        max: i64,
        /// Searched on a log scale (each power of ten as likely as the
        /// next), for sizes such as a batch size; `min` must be at least 1.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        log: bool,
    },
    /// Numbers from `min` to `max`.
    Float {
        /// The smallest value tried.
        min: f64,
        /// The largest value tried.
        max: f64,
        /// Searched on a log scale, for rates such as a learning rate;
        /// `min` must be above 0.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        log: bool,
    },
    /// One of `choices`.
    Enum {
        /// What may be chosen, each once.
        choices: Vec<String>,
    },
    /// `true` or `false`.
    Bool,
}

/// One parameter an experiment searches: a parameter of its template.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct SearchParam {
    /// The template parameter's name.
    pub name: String,
    /// The values it is searched over.
    #[serde(flatten)]
    pub domain: Domain,
}

/// Every parameter an experiment searches; the template's others take
/// their defaults.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct SearchSpace {
    /// The parameters, in the order the search draws them.
    #[cfg_attr(feature = "ssr", schema(max_items = 50))]
    pub parameters: Vec<SearchParam>,
}

impl Domain {
    /// Whether `value` is one of this domain's values (of the right JSON
    /// type and within the bounds).
    pub fn contains(&self, value: &Value) -> bool {
        match (self, value) {
            (Domain::Int { min, max, .. }, Value::Number(n)) => {
                n.as_i64().is_some_and(|n| (*min..=*max).contains(&n))
            }
            (Domain::Float { min, max, .. }, Value::Number(n)) => n
                .as_f64()
                .is_some_and(|n| n.is_finite() && *min <= n && n <= *max),
            (Domain::Enum { choices }, Value::String(s)) => choices.contains(s),
            (Domain::Bool, Value::Bool(_)) => true,
            _ => false,
        }
    }

    /// Its problems, as a message and the field (below the parameter) at
    /// fault.
    fn problem(&self) -> Option<(&'static str, String)> {
        match self {
            Domain::Int { min, max, log } => {
                if min >= max {
                    Some(("min", format!("min ({min}) must be below max ({max}).")))
                } else if *log && *min < 1 {
                    Some(("min", "On a log scale, min must be at least 1.".into()))
                } else {
                    None
                }
            }
            Domain::Float { min, max, log } => {
                if !min.is_finite() || !max.is_finite() {
                    Some(("min", "min and max must be finite numbers.".into()))
                } else if min >= max {
                    Some(("min", format!("min ({min}) must be below max ({max}).")))
                } else if *log && *min <= 0.0 {
                    Some(("min", "On a log scale, min must be above 0.".into()))
                } else {
                    None
                }
            }
            Domain::Enum { choices } => {
                let mut seen = BTreeSet::new();
                if choices.is_empty() {
                    Some(("choices", "Give at least one choice.".into()))
                } else if let Some(twice) = choices.iter().find(|c| !seen.insert(c.as_str())) {
                    Some(("choices", format!("{twice} is a choice twice.")))
                } else {
                    None
                }
            }
            Domain::Bool => None,
        }
    }
}

impl SearchSpace {
    /// The values of the space's first corner (each range's min, the first
    /// choice, `false`): a trial's values to check a template run with
    /// before any is chosen.
    pub fn example(&self) -> TrialValues {
        self.parameters
            .iter()
            .map(|p| {
                let value = match &p.domain {
                    Domain::Int { min, .. } => Value::from(*min),
                    Domain::Float { min, .. } => Value::from(*min),
                    Domain::Enum { choices } => {
                        Value::from(choices.first().cloned().unwrap_or_default())
                    }
                    Domain::Bool => Value::Bool(false),
                };
                (p.name.clone(), value)
            })
            .collect()
    }

    /// Checks the space on its own: at least one parameter, no name twice,
    /// and each domain's bounds (min below max, a log scale above 0, at
    /// least one choice, none twice). The error names
    /// `parameters[i].<field>`.
    pub fn validate(&self) -> Result<(), AppError> {
        if self.parameters.is_empty() {
            return Err(AppError::invalid(
                "parameters",
                "Give at least one parameter to search.",
            ));
        }
        if self.parameters.len() > MAX_PARAMS {
            return Err(AppError::invalid(
                "parameters",
                format!("At most {MAX_PARAMS} parameters."),
            ));
        }
        let mut seen = BTreeSet::new();
        for (i, p) in self.parameters.iter().enumerate() {
            if p.name.trim().is_empty() {
                return Err(AppError::invalid(
                    format!("parameters[{i}].name"),
                    "Name the template parameter to search.",
                ));
            }
            if !seen.insert(p.name.as_str()) {
                return Err(AppError::invalid(
                    format!("parameters[{i}].name"),
                    format!("{} is searched twice.", p.name),
                ));
            }
            if let Some((field, message)) = p.domain.problem() {
                return Err(AppError::invalid(
                    format!("parameters[{i}].{field}"),
                    format!("{}: {message}", p.name),
                ));
            }
        }
        Ok(())
    }

    /// Checks the space against the template's parameters: each searched
    /// parameter exists, has the same type (an int for an int, a float for
    /// a float, …) and stays within the template's limits and choices, so
    /// every trial's values make a valid run.
    pub fn check_against(&self, template: &[TemplateParam]) -> Result<(), AppError> {
        for (i, p) in self.parameters.iter().enumerate() {
            let Some(t) = template.iter().find(|t| t.name == p.name) else {
                return Err(AppError::invalid(
                    format!("parameters[{i}].name"),
                    format!("The template has no parameter {}.", p.name),
                ));
            };
            let bad = |field: &str, message: String| {
                Err(AppError::invalid(
                    format!("parameters[{i}].{field}"),
                    format!("{}: {message}", p.name),
                ))
            };
            match (&p.domain, &t.kind) {
                (
                    Domain::Int { min, max, .. },
                    ParamType::Int {
                        min: tmin,
                        max: tmax,
                    },
                ) => {
                    if let Some((field, why)) = beyond(*min, *max, *tmin, *tmax) {
                        return bad(field, why);
                    }
                }
                (
                    Domain::Float { min, max, .. },
                    ParamType::Float {
                        min: tmin,
                        max: tmax,
                    },
                ) => {
                    if let Some((field, why)) = beyond(*min, *max, *tmin, *tmax) {
                        return bad(field, why);
                    }
                }
                (Domain::Enum { choices }, ParamType::Enum { choices: allowed }) => {
                    if let Some(c) = choices.iter().find(|c| !allowed.contains(c)) {
                        return bad(
                            "choices",
                            format!("{c} is not one of the template's choices."),
                        );
                    }
                }
                (Domain::Bool, ParamType::Bool) => {}
                (domain, kind) => {
                    return bad(
                        "type",
                        format!(
                            "the template's parameter is {}, not {}.",
                            kind_name(kind),
                            domain_name(domain)
                        ),
                    );
                }
            }
        }
        Ok(())
    }
}

/// A domain's type as written in a spec.
fn domain_name(domain: &Domain) -> &'static str {
    match domain {
        Domain::Int { .. } => "an int",
        Domain::Float { .. } => "a float",
        Domain::Enum { .. } => "an enum",
        Domain::Bool => "a bool",
    }
}

/// A template parameter's type as written in a spec.
fn kind_name(kind: &ParamType) -> &'static str {
    match kind {
        ParamType::Int { .. } => "an int",
        ParamType::Float { .. } => "a float",
        ParamType::Enum { .. } => "an enum",
        ParamType::Bool => "a bool",
        ParamType::String { .. } => "a string",
        ParamType::Dataset => "a dataset",
        ParamType::Model => "a model",
        ParamType::Environment => "an environment",
    }
}

/// Where a searched range `min..=max` goes beyond the template's own
/// limits, if it does: the field and why.
fn beyond<T: PartialOrd + std::fmt::Display>(
    min: T,
    max: T,
    template_min: Option<T>,
    template_max: Option<T>,
) -> Option<(&'static str, String)> {
    if let Some(m) = template_min.filter(|m| min < *m) {
        return Some(("min", format!("the template takes at least {m}.")));
    }
    if let Some(m) = template_max.filter(|m| max > *m) {
        return Some(("max", format!("the template takes at most {m}.")));
    }
    None
}
