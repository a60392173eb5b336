//! Checking one value against its parameter's type and limits.

use serde_json::Value;

use super::{ParamType, TemplateParam};
use crate::error::AppError;
use crate::models::job_origin::{FloatText, TemplateValue};

impl TemplateParam {
    /// The field a bad value of this parameter is reported against.
    pub(super) fn field(&self) -> String {
        format!("values.{}", self.name)
    }

    /// `raw` checked against the parameter's type. Form posts send text, so
    /// a number or a boolean may come as a string.
    pub fn check(&self, raw: &Value) -> Result<TemplateValue, AppError> {
        let bad = |msg: String| Err(AppError::invalid(self.field(), msg));
        let name = &self.name;
        let text = match raw {
            Value::String(s) => Some(s.trim()),
            _ => None,
        };
        match &self.kind {
            ParamType::Int { min, max } => {
                let n = match (raw, text) {
                    (Value::Number(n), _) => n.as_i64(),
                    (_, Some(t)) => t.parse::<i64>().ok(),
                    _ => None,
                };
                let Some(n) = n else {
                    return bad(format!("{name} takes a whole number, not {raw}."));
                };
                if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
                    return bad(format!("{name} is {n}; {}.", range_text(min, max)));
                }
                Ok(TemplateValue::Int(n))
            }
            ParamType::Float { min, max } => {
                let n = match (raw, text) {
                    (Value::Number(n), _) => n.as_f64(),
                    (_, Some(t)) => t.parse::<f64>().ok(),
                    _ => None,
                };
                let Some(n) = n.filter(|n| n.is_finite()) else {
                    return bad(format!("{name} takes a number, not {raw}."));
                };
                if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
                    return bad(format!("{name} is {n}; {}.", range_text(min, max)));
                }
                let number = serde_json::Number::from_f64(n).ok_or(AppError::invalid(
                    self.field(),
                    format!("{name} takes a number."),
                ))?;
                Ok(TemplateValue::Float(FloatText(number)))
            }
            ParamType::Bool => match (raw, text) {
                (Value::Bool(b), _) => Ok(TemplateValue::Bool(*b)),
                (_, Some("true" | "on" | "yes")) => Ok(TemplateValue::Bool(true)),
                (_, Some("false" | "off" | "no" | "")) => Ok(TemplateValue::Bool(false)),
                _ => bad(format!("{name} takes true or false, not {raw}.")),
            },
            ParamType::Enum { choices } => match text {
                Some(t) if choices.iter().any(|c| c == t) => Ok(TemplateValue::Text(t.to_owned())),
                _ => bad(format!(
                    "{name} takes one of {}, not {raw}.",
                    choices.join(", ")
                )),
            },
            ParamType::String { pattern } => {
                let Value::String(s) = raw else {
                    return bad(format!("{name} takes text, not {raw}."));
                };
                if let Some(pattern) = pattern {
                    if !matches_whole(pattern, s)? {
                        return bad(format!("{name} must match {pattern}."));
                    }
                }
                Ok(TemplateValue::Text(s.clone()))
            }
            ParamType::Environment => match text {
                Some(t) => crate::models::EnvironmentRef::parse(t, &self.field())
                    .map(|_| TemplateValue::Text(t.to_owned())),
                None => bad(format!("{name} takes the name of an environment.")),
            },
            ParamType::Model => match text {
                Some(t) => crate::models::ModelRef::parse(t, &self.field())
                    .map(|_| TemplateValue::Text(t.to_owned())),
                None => bad(format!(
                    "{name} takes a model: name or owner/name, either with :version."
                )),
            },
            ParamType::Dataset => match text {
                Some(t) if !t.is_empty() => Ok(TemplateValue::Text(t.to_owned())),
                _ => bad(format!(
                    "{name} takes the name of a dataset (or owner/name), with :N for a saved version."
                )),
            },
        }
    }
}

/// "between 1 and 8", "at least 1", "at most 8".
fn range_text<T: std::fmt::Display>(min: &Option<T>, max: &Option<T>) -> String {
    match (min, max) {
        (Some(a), Some(b)) => format!("it must be between {a} and {b}"),
        (Some(a), None) => format!("it must be at least {a}"),
        (None, Some(b)) => format!("it must be at most {b}"),
        (None, None) => String::new(),
    }
}

/// Whether all of `text` matches `pattern` (checked on the server only: the
/// browser bundle carries no regex engine; a form's pattern is checked
/// when it is sent).
#[cfg(feature = "ssr")]
pub(super) fn matches_whole(pattern: &str, text: &str) -> Result<bool, AppError> {
    let re = regex::Regex::new(&format!("^(?:{pattern})$"))
        .map_err(|e| AppError::invalid("parameters", format!("Bad pattern {pattern}: {e}")))?;
    Ok(re.is_match(text))
}

#[cfg(not(feature = "ssr"))]
pub(super) fn matches_whole(_pattern: &str, _text: &str) -> Result<bool, AppError> {
    Ok(true)
}
