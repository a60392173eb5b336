//! Early stopping: whether a running trial's points so far are poor enough
//! to stop it, judged against the other trials' points.

use app::models::experiments::{EarlyStopping, Objective};

/// Another trial's points, (step, value) in step order, and whether it ran
/// to its end (not stopped early, not failed, not still running).
#[derive(Debug, Clone, Copy)]
pub struct Curve<'a> {
    /// Its points so far.
    pub points: &'a [(i64, f64)],
    /// It completed.
    pub completed: bool,
}

/// Whether to stop the trial whose objective points so far are `curve`
/// ((step, value) in step order, the newest last), and why, by `rule`,
/// given the other trials' curves. Call it after each new point (for
/// ASHA, once per new point: a rung is judged at the first point at or past
/// it, as the point arrives).
pub fn should_stop(
    rule: &EarlyStopping,
    objective: &Objective,
    curve: &[(i64, f64)],
    others: &[Curve<'_>],
) -> Option<String> {
    match rule {
        EarlyStopping::None => None,
        EarlyStopping::Median {
            n_startup_trials,
            n_warmup_steps,
            interval_steps,
            n_min_trials,
        } => median(
            objective,
            curve,
            others,
            *n_startup_trials as usize,
            *n_warmup_steps,
            (*interval_steps).max(1),
            *n_min_trials as usize,
        ),
        EarlyStopping::Asha {
            min_resource,
            reduction_factor,
            min_early_stopping_rate,
        } => asha(
            objective,
            curve,
            others,
            (*min_resource).max(1),
            (*reduction_factor).max(2),
            *min_early_stopping_rate,
        ),
    }
}

/// The value at exactly `step` (the last one there, if repeated).
fn value_at(points: &[(i64, f64)], step: i64) -> Option<f64> {
    let end = points.partition_point(|p| p.0 <= step);
    points[..end].last().filter(|p| p.0 == step).map(|p| p.1)
}

/// The value at the first point at or past `step`.
fn value_from(points: &[(i64, f64)], step: i64) -> Option<f64> {
    points
        .get(points.partition_point(|p| p.0 < step))
        .map(|p| p.1)
}

/// Optuna's `MedianPruner`: once `n_startup_trials` trials have completed,
/// past the warm-up and at the first point of each interval, stop the trial
/// if its best value so far is worse than the median of the completed
/// trials' values at its newest step (when at least `n_min_trials` have
/// one there).
fn median(
    objective: &Objective,
    curve: &[(i64, f64)],
    others: &[Curve<'_>],
    n_startup_trials: usize,
    n_warmup_steps: i64,
    interval_steps: i64,
    n_min_trials: usize,
) -> Option<String> {
    let completed: Vec<&Curve<'_>> = others.iter().filter(|c| c.completed).collect();
    if completed.is_empty() || completed.len() < n_startup_trials {
        return None;
    }
    let &(step, _) = curve.last()?;
    if step < n_warmup_steps {
        return None;
    }
    let nearest_lower =
        (step - n_warmup_steps).div_euclid(interval_steps) * interval_steps + n_warmup_steps;
    let second_last = curve
        .iter()
        .map(|p| p.0)
        .filter(|s| *s != step)
        .max()
        .unwrap_or(-1);
    if second_last >= nearest_lower {
        return None;
    }
    let metric = &objective.metric;
    let best = curve
        .iter()
        .map(|p| p.1)
        .filter(|v| !v.is_nan())
        .reduce(|a, b| if objective.better(b, a) { b } else { a });
    let Some(best) = best else {
        return Some(format!("It reported no number for {metric}, only NaN."));
    };
    let mut values: Vec<f64> = completed
        .iter()
        .filter_map(|c| value_at(c.points, step))
        .collect();
    if values.len() < n_min_trials {
        return None;
    }
    values.retain(|v| !v.is_nan());
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    let median = if values.len() % 2 == 1 {
        values[mid]
    } else {
        0.5 * (values[mid - 1] + values[mid])
    };
    (objective.loss(best) > objective.loss(median)).then(|| {
        format!(
            "At step {step} its best {metric} so far, {best}, is worse than the median of the {} completed trials there, {median}.",
            values.len()
        )
    })
}

/// Optuna's `SuccessiveHalvingPruner` (asynchronous successive halving):
/// rung r is at step `min_resource × reduction_factor^(rate + r)`. At the
/// first point at or past a rung, the trial goes on only if its value is in
/// the best 1/`reduction_factor` of the values the trials that reached the
/// rung had there, itself included (while fewer than `reduction_factor`
/// have, only if it is the best of them).
fn asha(
    objective: &Objective,
    curve: &[(i64, f64)],
    others: &[Curve<'_>],
    min_resource: i64,
    reduction_factor: u32,
    rate: u32,
) -> Option<String> {
    let &(step, value) = curve.last()?;
    let previous = curve.len().checked_sub(2).map_or(i64::MIN, |i| curve[i].0);
    let metric = &objective.metric;
    for rung in 0u32.. {
        let rung_step = i64::from(reduction_factor)
            .checked_pow(rate + rung)
            .and_then(|f| f.checked_mul(min_resource))?;
        if rung_step > step {
            return None;
        }
        if rung_step <= previous {
            continue; // judged when the earlier point came
        }
        if value.is_nan() {
            return Some(format!("At step {step} its {metric} is NaN."));
        }
        let mut losses: Vec<f64> = others
            .iter()
            .filter_map(|c| value_from(c.points, rung_step))
            .filter(|v| !v.is_nan())
            .map(|v| objective.loss(v))
            .collect();
        losses.push(objective.loss(value));
        losses.sort_by(f64::total_cmp);
        let keep = (losses.len() / reduction_factor as usize).max(1);
        if objective.loss(value) > losses[keep - 1] {
            return Some(format!(
                "At step {step} (rung {rung}, step {rung_step}) its {metric}, {value}, is not in the best {keep} of the {} trials that reached the rung.",
                losses.len()
            ));
        }
    }
    None
}
