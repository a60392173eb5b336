//! One parameter's values as the samplers see them: a number (an int's or
//! a float's value) or a choice's index, drawn at random or cut into a grid.

use app::models::experiments::Domain;
use serde_json::{Number, Value};

use super::rng::Rng;

/// The number standing for `value`: an int's or a float's value, or the
/// index of a choice (`false` 0, `true` 1). None for a value outside the
/// domain (a trial of an earlier, wider space).
pub(super) fn internal(domain: &Domain, value: &Value) -> Option<f64> {
    if !domain.contains(value) {
        return None;
    }
    match (domain, value) {
        (Domain::Int { .. } | Domain::Float { .. }, Value::Number(n)) => n.as_f64(),
        (Domain::Enum { choices }, Value::String(s)) => {
            choices.iter().position(|c| c == s).map(|i| i as f64)
        }
        (Domain::Bool, Value::Bool(b)) => Some(f64::from(u8::from(*b))),
        _ => None,
    }
}

/// The value `x` stands for (see [`internal`]): an int rounded, any number
/// kept within the bounds.
pub(super) fn external(domain: &Domain, x: f64) -> Value {
    match domain {
        Domain::Int { min, max, .. } => Value::from((x.round() as i64).clamp(*min, *max)),
        Domain::Float { min, max, .. } => float(x.clamp(*min, *max)),
        Domain::Enum { choices } => {
            Value::String(choices[(x.max(0.0) as usize).min(choices.len() - 1)].clone())
        }
        Domain::Bool => Value::Bool(x >= 0.5),
    }
}

/// A finite float as JSON.
fn float(x: f64) -> Value {
    Number::from_f64(x).map_or(Value::Null, Value::Number)
}

/// The number of choices of an enum or a bool; None for a number.
pub(super) fn choices(domain: &Domain) -> Option<usize> {
    match domain {
        Domain::Enum { choices } => Some(choices.len()),
        Domain::Bool => Some(2),
        Domain::Int { .. } | Domain::Float { .. } => None,
    }
}

/// A value drawn at random: uniform, or log-uniform on a log scale (an int
/// on a log scale is drawn from min − ½ to max + ½ and rounded, as Optuna's
/// `RandomSampler` does, so that the ends are as likely as their
/// neighbours).
pub(super) fn random(domain: &Domain, rng: &mut Rng) -> Value {
    match domain {
        Domain::Int { min, max, log } => {
            if *log {
                let low = (*min as f64 - 0.5).ln();
                let high = (*max as f64 + 0.5).ln();
                external(domain, rng.uniform(low, high).exp())
            } else {
                let span = max.abs_diff(*min).saturating_add(1);
                Value::from(min.wrapping_add_unsigned(rng.below(span)))
            }
        }
        Domain::Float { min, max, log } => {
            if *log {
                external(domain, rng.uniform(min.ln(), max.ln()).exp())
            } else {
                external(domain, rng.uniform(*min, *max))
            }
        }
        Domain::Enum { choices } => {
            Value::String(choices[rng.below(choices.len() as u64) as usize].clone())
        }
        Domain::Bool => Value::Bool(rng.below(2) == 1),
    }
}

/// The values a grid tries: every choice; a range cut into `points` values
/// from min to max, evenly or evenly on a log scale (an int range keeps
/// each whole number once, all of them when it has at most `points`).
pub(super) fn grid(domain: &Domain, points: u32) -> Vec<Value> {
    let points = points.max(2) as usize;
    let cut = |min: f64, max: f64, log: bool| -> Vec<f64> {
        let (low, high) = if log {
            (min.ln(), max.ln())
        } else {
            (min, max)
        };
        (0..points)
            .map(|i| {
                if i == 0 {
                    return min;
                }
                if i == points - 1 {
                    return max;
                }
                let x = low + (high - low) * i as f64 / (points - 1) as f64;
                if log {
                    x.exp().clamp(min, max)
                } else {
                    x
                }
            })
            .collect()
    };
    match domain {
        Domain::Int { min, max, log } => {
            let mut values: Vec<i64> = if max.abs_diff(*min) < points as u64 {
                (*min..=*max).collect()
            } else {
                cut(*min as f64, *max as f64, *log)
                    .into_iter()
                    .map(|x| (x.round() as i64).clamp(*min, *max))
                    .collect()
            };
            values.dedup();
            values.into_iter().map(Value::from).collect()
        }
        // Rounded to 12 significant digits: 0.01, not 0.010000000000000002.
        Domain::Float { min, max, log } => cut(*min, *max, *log)
            .into_iter()
            .map(|x| {
                float(
                    format!("{x:.11e}")
                        .parse::<f64>()
                        .unwrap_or(x)
                        .clamp(*min, *max),
                )
            })
            .collect(),
        Domain::Enum { choices } => choices.iter().cloned().map(Value::String).collect(),
        Domain::Bool => vec![Value::Bool(false), Value::Bool(true)],
    }
}
