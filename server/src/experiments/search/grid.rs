//! Grid search: every combination of the parameters' grid values once, in
//! an order shuffled by the seed (so that a search stopped early has still
//! spread over the space), never one already run or running.

use std::collections::BTreeSet;

use app::models::experiments::{SearchSpace, TrialValues};
use serde_json::Value;

use super::params;
use super::rng::Rng;

/// Each parameter's grid values.
fn axes(space: &SearchSpace, points: u32) -> Vec<Vec<Value>> {
    space
        .parameters
        .iter()
        .map(|p| params::grid(&p.domain, points))
        .collect()
}

/// The combinations a grid of `points` per range has; None when more than
/// fit in a `u64`.
pub fn size(space: &SearchSpace, points: u32) -> Option<u64> {
    axes(space, points)
        .iter()
        .try_fold(1u64, |n, axis| n.checked_mul(axis.len() as u64))
}

/// Where `value` is on `axis`: the same JSON value, or for a float the same
/// number within rounding.
fn position(axis: &[Value], value: &Value) -> Option<usize> {
    axis.iter().position(|v| match (v, value) {
        (Value::Number(a), Value::Number(b)) if a.is_f64() || b.is_f64() => {
            let (a, b) = (
                a.as_f64().unwrap_or(f64::NAN),
                b.as_f64().unwrap_or(f64::NAN),
            );
            (a - b).abs() <= 1e-12 * a.abs().max(b.abs())
        }
        _ => v == value,
    })
}

/// The next grid combination not among `taken`, or None when all are.
pub(super) fn next<'a>(
    space: &SearchSpace,
    points: u32,
    rng: &mut Rng,
    taken: impl Iterator<Item = &'a TrialValues>,
) -> Option<TrialValues> {
    let axes = axes(space, points);
    let names: Vec<&str> = space.parameters.iter().map(|p| p.name.as_str()).collect();
    // Each taken combination as its digits, one per parameter.
    let taken: BTreeSet<Vec<usize>> = taken
        .filter_map(|values| {
            names
                .iter()
                .zip(&axes)
                .map(|(name, axis)| position(axis, values.get(*name)?))
                .collect::<Option<Vec<usize>>>()
        })
        .collect();
    let digits = match size(space, points) {
        Some(n) => {
            // The k-th combination (in index order) that is not taken.
            let free = n.checked_sub(taken.len() as u64).filter(|f| *f > 0)?;
            let mut index = rng.below(free);
            let mut taken: Vec<u64> = taken.iter().map(|d| encode(&axes, d)).collect();
            taken.sort_unstable();
            for t in taken {
                if t <= index {
                    index += 1;
                } else {
                    break;
                }
            }
            decode(&axes, index)
        }
        // Too many to count: draw combinations until one is new.
        None => (0..1000)
            .map(|_| {
                axes.iter()
                    .map(|a| rng.below(a.len() as u64) as usize)
                    .collect::<Vec<_>>()
            })
            .find(|d| !taken.contains(d))?,
    };
    Some(
        names
            .iter()
            .zip(&axes)
            .zip(digits)
            .map(|((name, axis), d)| ((*name).to_owned(), axis[d].clone()))
            .collect(),
    )
}

/// A combination's index, the first parameter's digit the most significant.
fn encode(axes: &[Vec<Value>], digits: &[usize]) -> u64 {
    axes.iter()
        .zip(digits)
        .fold(0, |n, (axis, d)| n * axis.len() as u64 + *d as u64)
}

/// The combination at `index`.
fn decode(axes: &[Vec<Value>], mut index: u64) -> Vec<usize> {
    let mut digits = vec![0; axes.len()];
    for (i, axis) in axes.iter().enumerate().rev() {
        let n = axis.len() as u64;
        digits[i] = (index % n) as usize;
        index /= n;
    }
    digits
}
