//! How an experiment searches: its objective, its algorithm and how it
//! stops poor trials early.

use serde::{Deserialize, Serialize};

use crate::error::AppError;

/// Whether a lower or a higher objective is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum Direction {
    /// Lower is better (a loss, an error rate).
    #[serde(rename = "minimize", alias = "minimise")]
    Minimize,
    /// Higher is better (an accuracy).
    #[serde(rename = "maximize", alias = "maximise")]
    Maximize,
}

/// Which of a trial's points is its objective.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum ObjectiveValue {
    /// The value at its last step.
    #[default]
    Last,
    /// Its best value at any step.
    Best,
}

/// What an experiment optimises: a PaddleBoard tag the trials report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Objective {
    /// The tag, e.g. `eval/loss`.
    pub metric: String,
    /// Lower or higher is better.
    pub direction: Direction,
    /// The last value or the best.
    #[serde(default)]
    pub value: ObjectiveValue,
    /// A value good enough to end the search when a trial reaches it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<f64>,
}

impl Objective {
    /// Checks the tag and the goal.
    pub fn validate(&self) -> Result<(), AppError> {
        if self.metric.trim().is_empty() {
            return Err(AppError::invalid(
                "objective.metric",
                "Name the tag the trials report, e.g. eval/loss.",
            ));
        }
        if self.goal.is_some_and(|g| !g.is_finite()) {
            return Err(AppError::invalid(
                "objective.goal",
                "The goal must be a finite number.",
            ));
        }
        Ok(())
    }

    /// `value` as a loss: lower is better whatever the direction.
    pub fn loss(&self, value: f64) -> f64 {
        match self.direction {
            Direction::Minimize => value,
            Direction::Maximize => -value,
        }
    }

    /// Whether `a` is better than `b` (a NaN is never better).
    pub fn better(&self, a: f64, b: f64) -> bool {
        self.loss(a) < self.loss(b) || (b.is_nan() && !a.is_nan())
    }

    /// Whether `value` reaches the goal (there is none: never).
    pub fn reached(&self, value: f64) -> bool {
        self.goal.is_some_and(|g| self.loss(value) <= self.loss(g))
    }

    /// A trial's objective from its curve of (step, value) points in step
    /// order: its last value or its best. None when it reported none (or
    /// its last value is NaN).
    pub fn value_of(&self, curve: &[(i64, f64)]) -> Option<f64> {
        match self.value {
            ObjectiveValue::Last => curve.last().map(|p| p.1).filter(|v| !v.is_nan()),
            ObjectiveValue::Best => curve
                .iter()
                .map(|p| p.1)
                .filter(|v| !v.is_nan())
                .reduce(|a, b| if self.better(b, a) { b } else { a }),
        }
    }
}

/// How the next trial's values are chosen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum Algorithm {
    /// Every combination once, in a shuffled order; an int or float range
    /// is cut into `points` values (evenly, or evenly on a log scale; an
    /// int range with fewer values keeps them all). The search ends when
    /// every combination has been tried.
    Grid {
        /// Values per int or float parameter, 2 to 100 (default 5).
        #[serde(default = "default_grid_points")]
        points: u32,
    },
    /// Each value drawn at random: uniformly, or log-uniformly on a log
    /// scale.
    Random,
    /// Tree-structured Parzen estimators (Optuna's default sampler, with
    /// its defaults): random for the first trials, then each value drawn
    /// where the best trials' values are dense and the others' sparse.
    Tpe {
        /// Random trials before the model is used (default 10).
        #[serde(default = "default_startup_trials")]
        n_startup_trials: u32,
        /// Candidates drawn per parameter and per trial, of which the most
        /// promising is taken (default 24).
        #[serde(default = "default_ei_candidates")]
        n_ei_candidates: u32,
        /// Running trials count as poor ones, so that trials at once do
        /// not all get the same values (default on).
        #[serde(default = "default_true")]
        constant_liar: bool,
        /// One model over all parameters together, so that values that
        /// do well together are drawn together (Optuna 5's default for a
        /// single objective); off, a model per parameter.
        #[serde(default = "default_true")]
        multivariate: bool,
    },
}

impl Default for Algorithm {
    fn default() -> Self {
        Algorithm::Tpe {
            n_startup_trials: default_startup_trials(),
            n_ei_candidates: default_ei_candidates(),
            constant_liar: true,
            multivariate: true,
        }
    }
}

fn default_grid_points() -> u32 {
    5
}
fn default_startup_trials() -> u32 {
    10
}
fn default_ei_candidates() -> u32 {
    24
}
fn default_true() -> bool {
    true
}

impl Algorithm {
    /// Checks the settings.
    pub fn validate(&self) -> Result<(), AppError> {
        match self {
            Algorithm::Grid { points } if !(2..=100).contains(points) => Err(AppError::invalid(
                "algorithm.points",
                "A grid cuts a range into 2 to 100 values.",
            )),
            Algorithm::Tpe {
                n_startup_trials, ..
            } if *n_startup_trials > 1000 => Err(AppError::invalid(
                "algorithm.n_startup_trials",
                "At most 1000 random trials first.",
            )),
            Algorithm::Tpe {
                n_ei_candidates, ..
            } if !(1..=1000).contains(n_ei_candidates) => Err(AppError::invalid(
                "algorithm.n_ei_candidates",
                "From 1 to 1000 candidates.",
            )),
            _ => Ok(()),
        }
    }
}

/// When a running trial is stopped because its points so far are poor.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum EarlyStopping {
    /// Every trial runs to its end.
    #[default]
    None,
    /// Stop a trial whose best value so far is worse than the median of
    /// the finished trials' values at the same step (Optuna's
    /// `MedianPruner`).
    Median {
        /// Finished trials needed before any trial is stopped (default 5).
        #[serde(default = "default_median_startup")]
        n_startup_trials: u32,
        /// Steps a trial runs before it may be stopped (default 0).
        #[serde(default)]
        n_warmup_steps: i64,
        /// Checked at the first point in each interval of this many steps
        /// after the warm-up (default 1: at every point).
        #[serde(default = "default_one")]
        interval_steps: i64,
        /// Finished trials with a value at the step needed to compare
        /// (default 1).
        #[serde(default = "default_one_u32")]
        n_min_trials: u32,
    },
    /// Asynchronous successive halving: at steps `min_resource`, ×
    /// `reduction_factor`, × `reduction_factor`² … (the rungs), a trial
    /// goes on only if its value is in the best 1/`reduction_factor` of
    /// the values all trials had at that rung (Optuna's
    /// `SuccessiveHalvingPruner`).
    Asha {
        /// The first rung's step (default 1).
        #[serde(default = "default_one")]
        min_resource: i64,
        /// The factor between rungs, and the share kept (default 3).
        #[serde(default = "default_reduction_factor")]
        reduction_factor: u32,
        /// Rungs skipped at the start: the first is at `min_resource` ×
        /// `reduction_factor`^this (default 0).
        #[serde(default)]
        min_early_stopping_rate: u32,
    },
}

fn default_median_startup() -> u32 {
    5
}
fn default_one() -> i64 {
    1
}
fn default_one_u32() -> u32 {
    1
}
fn default_reduction_factor() -> u32 {
    3
}

impl EarlyStopping {
    /// Median stopping with Optuna's defaults.
    pub fn median() -> Self {
        EarlyStopping::Median {
            n_startup_trials: default_median_startup(),
            n_warmup_steps: 0,
            interval_steps: 1,
            n_min_trials: 1,
        }
    }

    /// ASHA with rungs at steps 1, 3, 9, 27, …
    pub fn asha() -> Self {
        EarlyStopping::Asha {
            min_resource: 1,
            reduction_factor: default_reduction_factor(),
            min_early_stopping_rate: 0,
        }
    }

    /// Checks the settings.
    pub fn validate(&self) -> Result<(), AppError> {
        let bad = |field: &str, message: &str| {
            Err(AppError::invalid(
                format!("early_stopping.{field}"),
                message,
            ))
        };
        match self {
            EarlyStopping::None => Ok(()),
            EarlyStopping::Median {
                n_warmup_steps,
                interval_steps,
                ..
            } => {
                if *n_warmup_steps < 0 {
                    bad("n_warmup_steps", "The warm-up cannot be negative.")
                } else if *interval_steps < 1 {
                    bad("interval_steps", "The interval is at least 1 step.")
                } else {
                    Ok(())
                }
            }
            EarlyStopping::Asha {
                min_resource,
                reduction_factor,
                min_early_stopping_rate,
            } => {
                if *min_resource < 1 {
                    bad("min_resource", "The first rung is at step 1 or later.")
                } else if !(2..=100).contains(reduction_factor) {
                    bad("reduction_factor", "The reduction factor is 2 to 100.")
                } else if *min_early_stopping_rate > 30 {
                    bad("min_early_stopping_rate", "At most 30 rungs skipped.")
                } else {
                    Ok(())
                }
            }
        }
    }
}
