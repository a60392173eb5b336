//! The search itself, pure: which values the next trial runs with
//! ([`suggest`]) and whether a running trial is stopped early
//! ([`should_stop`]). No database, no clock: everything comes in as
//! arguments, and the same arguments give the same answer, so a console
//! restarted mid-experiment suggests the trial it would have suggested.
//!
//! - **Grid** ([`grid`]): every combination once, in an order shuffled by
//!   the seed; ranges cut into `points` values.
//! - **Random**: each value uniform (log-uniform on a log scale).
//! - **TPE** ([`tpe`]): Optuna's sampler and defaults, written here (its
//!   module says why not the `tpe` crate).
//! - **Early stopping** ([`should_stop`]): Optuna's median pruner and
//!   asynchronous successive halving.
//!
//! Random numbers come from a generator written here and seeded by (seed,
//! trial number), never from the clock.

use app::models::experiments::{Algorithm, Direction, SearchSpace, TrialValues};

pub mod grid;
mod params;
mod rng;
mod stopping;
pub mod tpe;

#[cfg(test)]
mod tests;

pub use grid::size as grid_size;
pub use stopping::{should_stop, Curve};

use rng::Rng;

/// A trial that ended, as the search learns from it.
#[derive(Debug, Clone, PartialEq)]
pub struct Finished {
    /// Its number in the experiment (history is ordered by it).
    pub number: u32,
    /// The values it ran with.
    pub values: TrialValues,
    /// How it ended.
    pub outcome: Outcome,
}

/// How a trial ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Outcome {
    /// It ran to its end; its objective (in the objective's own direction:
    /// the search flips a maximised one).
    Completed(f64),
    /// Stopped early at `step`, where its objective's value was `value`.
    Stopped {
        /// Its last step.
        step: i64,
        /// The objective's value there.
        value: f64,
    },
    /// It failed, or ended without an objective: TPE leaves it out, a grid
    /// does not try its values again.
    Failed,
}

/// Draws a value set until it is one no trial has run or is running: at
/// most 16 draws, then (the sampler keeps choosing a value set it has; in
/// a small discrete space TPE may) up to 64 random ones. Failing that, the
/// first draw that is not running, else the first draw.
fn fresh(
    space: &SearchSpace,
    history: &[Finished],
    pending: &[TrialValues],
    rng: &mut Rng,
    mut draw: impl FnMut(&mut Rng) -> TrialValues,
) -> TrialValues {
    let seen = |v: &TrialValues| history.iter().any(|t| t.values == *v);
    let mut first = None;
    let mut not_running = None;
    for i in 0..16 + 64 {
        let values = if i < 16 {
            draw(rng)
        } else {
            random(space, rng)
        };
        if !pending.contains(&values) {
            if !seen(&values) {
                return values;
            }
            if not_running.is_none() {
                not_running = Some(values.clone());
            }
        }
        first.get_or_insert(values);
    }
    not_running.or(first).unwrap_or_default()
}

/// Each parameter drawn at random.
fn random(space: &SearchSpace, rng: &mut Rng) -> TrialValues {
    space
        .parameters
        .iter()
        .map(|p| (p.name.clone(), params::random(&p.domain, rng)))
        .collect()
}

/// The values trial `trial_number` of the search over `space` should run
/// with, given the trials that ended (`history`, in any order) and the
/// values of those still running (`pending`, in trial order). None when a
/// grid has been run through. The same arguments give the same values.
///
/// `space` is validated ([`SearchSpace::validate`]); values in the history
/// outside it (an earlier, wider space) are ignored for that parameter.
pub fn suggest(
    space: &SearchSpace,
    algorithm: &Algorithm,
    direction: Direction,
    seed: u64,
    trial_number: u32,
    history: &[Finished],
    pending: &[TrialValues],
) -> Option<TrialValues> {
    let mut rng = Rng::new(seed, u64::from(trial_number));
    match algorithm {
        Algorithm::Grid { points } => grid::next(
            space,
            *points,
            &mut rng,
            history.iter().map(|t| &t.values).chain(pending),
        ),
        Algorithm::Random => Some(fresh(space, history, pending, &mut rng, |rng| {
            random(space, rng)
        })),
        Algorithm::Tpe {
            n_startup_trials,
            n_ei_candidates,
            constant_liar,
            multivariate,
        } => {
            let settings = tpe::Settings {
                n_startup_trials: *n_startup_trials,
                n_ei_candidates: *n_ei_candidates,
                constant_liar: *constant_liar,
                multivariate: *multivariate,
            };
            Some(fresh(space, history, pending, &mut rng, |rng| {
                tpe::sample(space, &settings, direction, rng, history, pending)
                    .unwrap_or_else(|| random(space, rng))
            }))
        }
    }
}
