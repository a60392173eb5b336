//! TPE, the tree-structured Parzen estimator (Bergstra et al. 2011), as
//! Optuna's `TPESampler` does it (Optuna 5.0, its defaults): after
//! `n_startup_trials` random trials, the finished trials are split into the
//! best `min(⌈n/10⌉, 25)` (stopped trials ranked after completed ones, the
//! later stopped the better) and the rest. Each group's values make a
//! Parzen estimator: a mixture of one truncated normal per trial (centred
//! on its value, as wide as the larger gap to its neighbours, clipped to
//! between the range / min(100, kernels + 1) and the whole range: the
//! "magic clip"), plus a prior as wide as the range; older trials weigh
//! less once there are more than 25. Enums and bools get a categorical
//! kernel per trial. 24 candidates are drawn from the best group's
//! estimator `l` and the one with the highest `l(x) / g(x)` is taken.
//! Ints are discrete (a kernel's mass over [x − ½, x + ½]) and log-scale
//! parameters are modelled on the log of their values. Running trials,
//! when the constant liar is on, join the poor group, so that trials
//! started together spread out.
//!
//! Multivariate (one mixture over all parameters, a kernel per trial that
//! draws every parameter together) or independent (a mixture per
//! parameter) as the algorithm's setting says; Optuna 5 makes multivariate
//! its default for a single objective.
//!
//! Why not the `tpe` crate (sile/tpe 0.3.1, by an Optuna author): it fits
//! one parameter per optimiser, holds its trials as state rather than
//! taking a history, has no random start-up, no discrete ints or log
//! scale, no weights for older trials, no prior kernel as wide as the range
//! (its prior is one more point, with a neighbour's width), nothing for
//! running trials and no joint (multivariate) model; wrapping it would have
//! meant rewriting most of it, and its draws come from `rand`, whose
//! streams may change between versions (a restarted console must suggest
//! the same trial).

use app::models::experiments::{Direction, Domain, SearchSpace, TrialValues};

use super::params;
use super::rng::Rng;
use super::{Finished, Outcome};

/// The TPE settings.
pub(super) struct Settings {
    /// Random trials first.
    pub n_startup_trials: u32,
    /// Candidates per draw.
    pub n_ei_candidates: u32,
    /// Running trials count as poor ones.
    pub constant_liar: bool,
    /// One mixture over all parameters.
    pub multivariate: bool,
}

/// The next trial's values, or None while the random start-up lasts.
pub(super) fn sample(
    space: &SearchSpace,
    settings: &Settings,
    direction: Direction,
    rng: &mut Rng,
    history: &[Finished],
    pending: &[TrialValues],
) -> Option<TrialValues> {
    let loss = |v: f64| match direction {
        Direction::Minimize => v,
        Direction::Maximize => -v,
    };
    let mut complete: Vec<(f64, &Finished)> = Vec::new();
    let mut stopped: Vec<((i64, f64), &Finished)> = Vec::new();
    for t in history {
        match t.outcome {
            Outcome::Completed(v) if !v.is_nan() => complete.push((loss(v), t)),
            // A completed trial without a number ranks as the worst stopped one.
            Outcome::Completed(_) => stopped.push(((i64::MIN, f64::INFINITY), t)),
            Outcome::Stopped { step, value } => {
                let l = if value.is_nan() {
                    f64::INFINITY
                } else {
                    loss(value)
                };
                stopped.push(((step, l), t));
            }
            Outcome::Failed => {}
        }
    }
    let n = complete.len() + stopped.len();
    if n < settings.n_startup_trials as usize {
        return None;
    }
    let n_below = ((0.1 * n as f64).ceil() as usize).min(25);
    complete.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.number.cmp(&b.1.number)));
    // The later a trial was stopped, then the lower its loss, the better.
    stopped.sort_by(|a, b| {
        (b.0 .0.cmp(&a.0 .0))
            .then(a.0 .1.total_cmp(&b.0 .1))
            .then(a.1.number.cmp(&b.1.number))
    });
    let ranked: Vec<&Finished> = complete
        .iter()
        .map(|c| c.1)
        .chain(stopped.iter().map(|s| s.1))
        .collect();
    let (below, above) = ranked.split_at(n_below.min(ranked.len()));
    let below = by_number(below);
    let mut above = by_number(above);
    if settings.constant_liar {
        above.extend(pending);
    }
    let candidates = settings.n_ei_candidates.max(1) as usize;
    let mut out = TrialValues::new();
    if settings.multivariate {
        let domains: Vec<&Domain> = space.parameters.iter().map(|p| &p.domain).collect();
        let names: Vec<&str> = space.parameters.iter().map(|p| p.name.as_str()).collect();
        let x = best_candidate(&domains, &names, &below, &above, candidates, rng);
        for (p, x) in space.parameters.iter().zip(x) {
            out.insert(p.name.clone(), params::external(&p.domain, x));
        }
    } else {
        for p in &space.parameters {
            let x = best_candidate(
                &[&p.domain],
                &[p.name.as_str()],
                &below,
                &above,
                candidates,
                rng,
            );
            out.insert(p.name.clone(), params::external(&p.domain, x[0]));
        }
    }
    Some(out)
}

/// The trials' values, by trial number.
fn by_number<'a>(trials: &[&'a Finished]) -> Vec<&'a TrialValues> {
    let mut sorted = trials.to_vec();
    sorted.sort_by_key(|t| t.number);
    sorted.into_iter().map(|t| &t.values).collect()
}

/// Of `candidates` draws from the good trials' estimator, the one where it
/// is densest relative to the poor trials' estimator.
fn best_candidate(
    domains: &[&Domain],
    names: &[&str],
    below: &[&TrialValues],
    above: &[&TrialValues],
    candidates: usize,
    rng: &mut Rng,
) -> Vec<f64> {
    let l = Mixture::new(domains, &observations(domains, names, below));
    let g = Mixture::new(domains, &observations(domains, names, above));
    let mut best: Option<(f64, Vec<f64>)> = None;
    for _ in 0..candidates {
        let x = l.sample(rng);
        let score = l.log_pdf(&x) - g.log_pdf(&x);
        if best.as_ref().is_none_or(|(s, _)| score > *s) {
            best = Some((score, x));
        }
    }
    best.map(|b| b.1).unwrap_or_default()
}

/// Each trial's values of `names` as numbers, for trials that have them all.
fn observations(domains: &[&Domain], names: &[&str], trials: &[&TrialValues]) -> Vec<Vec<f64>> {
    trials
        .iter()
        .filter_map(|values| {
            domains
                .iter()
                .zip(names)
                .map(|(d, name)| params::internal(d, values.get(*name)?))
                .collect()
        })
        .collect()
}

/// Optuna's default weights: equal for up to 25 trials; beyond, the oldest
/// rise linearly from 1/n to 1 and the newest 25 weigh 1.
fn weights(n: usize) -> Vec<f64> {
    if n < 25 {
        return vec![1.0; n];
    }
    let ramp = n - 25;
    let mut w: Vec<f64> = (0..ramp)
        .map(|i| {
            let start = 1.0 / n as f64;
            if ramp == 1 {
                start
            } else {
                start + (1.0 - start) * i as f64 / (ramp - 1) as f64
            }
        })
        .collect();
    w.extend(std::iter::repeat_n(1.0, 25));
    w
}

/// One parameter's kernels.
enum Kernels {
    /// Truncated normals over `low..high` (the log of the value on a log
    /// scale; an int's range widened by ½ each side).
    Numeric {
        mus: Vec<f64>,
        sigmas: Vec<f64>,
        low: f64,
        high: f64,
        log: bool,
        /// An int's bounds: its values are whole and each has the mass of
        /// [x − ½, x + ½].
        int: Option<(i64, i64)>,
        /// Each kernel's log mass within `low..high`.
        log_z: Vec<f64>,
    },
    /// A distribution over the choices per kernel.
    Choice { probs: Vec<Vec<f64>> },
}

/// A Parzen estimator: kernels per parameter, a weight per kernel.
struct Mixture {
    weights: Vec<f64>,
    log_weights: Vec<f64>,
    kernels: Vec<Kernels>,
}

impl Mixture {
    fn new(domains: &[&Domain], obs: &[Vec<f64>]) -> Mixture {
        let n = obs.len();
        let mut weights = if n == 0 {
            vec![1.0]
        } else {
            let mut w = weights(n);
            w.push(1.0); // the prior
            w
        };
        let total: f64 = weights.iter().sum();
        weights.iter_mut().for_each(|w| *w /= total);
        let kernels = domains
            .iter()
            .enumerate()
            .map(|(i, d)| kernels(d, &obs.iter().map(|o| o[i]).collect::<Vec<_>>()))
            .collect();
        Mixture {
            log_weights: weights.iter().map(|w| w.ln()).collect(),
            weights,
            kernels,
        }
    }

    /// A draw: a kernel by weight, then each parameter from it.
    fn sample(&self, rng: &mut Rng) -> Vec<f64> {
        let k = rng.weighted(&self.weights);
        self.kernels
            .iter()
            .map(|kernels| match kernels {
                Kernels::Numeric {
                    mus,
                    sigmas,
                    low,
                    high,
                    log,
                    int,
                    ..
                } => {
                    let mut x = truncated_normal(mus[k], sigmas[k], *low, *high, rng);
                    if *log {
                        x = x.exp();
                    }
                    match int {
                        Some((min, max)) => (x.round() as i64).clamp(*min, *max) as f64,
                        None => x,
                    }
                }
                Kernels::Choice { probs } => rng.weighted(&probs[k]) as f64,
            })
            .collect()
    }

    /// The log density (or mass) at `x`.
    fn log_pdf(&self, x: &[f64]) -> f64 {
        let mut terms = self.log_weights.clone();
        for (kernels, x) in self.kernels.iter().zip(x) {
            match kernels {
                Kernels::Numeric {
                    mus,
                    sigmas,
                    log,
                    int,
                    log_z,
                    ..
                } => {
                    let t = |v: f64| if *log { v.ln() } else { v };
                    for (k, term) in terms.iter_mut().enumerate() {
                        let (mu, sigma) = (mus[k], sigmas[k]);
                        *term += if int.is_some() {
                            log_gauss_mass((t(x - 0.5) - mu) / sigma, (t(x + 0.5) - mu) / sigma)
                        } else {
                            let z = (t(*x) - mu) / sigma;
                            -0.5 * z * z - LN_SQRT_2PI - sigma.ln()
                        } - log_z[k];
                    }
                }
                Kernels::Choice { probs } => {
                    for (k, term) in terms.iter_mut().enumerate() {
                        *term += probs[k][*x as usize].ln();
                    }
                }
            }
        }
        log_sum_exp(&terms)
    }
}

const LN_SQRT_2PI: f64 = 0.918_938_533_204_672_8;

/// A parameter's kernels from its observed values (plus the prior).
fn kernels(domain: &Domain, obs: &[f64]) -> Kernels {
    if let Some(n_choices) = params::choices(domain) {
        if obs.is_empty() {
            return Kernels::Choice {
                probs: vec![vec![1.0 / n_choices as f64; n_choices]],
            };
        }
        let n_kernels = obs.len() + 1;
        let mut probs = vec![vec![1.0 / n_kernels as f64; n_choices]; n_kernels];
        for (row, x) in probs.iter_mut().zip(obs) {
            row[*x as usize] += 1.0;
        }
        for row in &mut probs {
            let sum: f64 = row.iter().sum();
            row.iter_mut().for_each(|p| *p /= sum);
        }
        return Kernels::Choice { probs };
    }
    let (min, max, log, int) = match domain {
        Domain::Int { min, max, log } => (*min as f64, *max as f64, *log, Some((*min, *max))),
        Domain::Float { min, max, log } => (*min, *max, *log, None),
        _ => unreachable!("choices are handled above"),
    };
    let (mut low, mut high) = (min, max);
    if int.is_some() {
        low -= 0.5;
        high += 0.5;
    }
    let t = |v: f64| if log { v.ln() } else { v };
    let (low, high) = (t(low), t(high));
    let mut mus: Vec<f64> = obs.iter().map(|x| t(*x)).collect();
    let mut sigmas = bandwidths(&mus, low, high);
    mus.push(0.5 * (low + high));
    sigmas.push(high - low);
    let log_z = mus
        .iter()
        .zip(&sigmas)
        .map(|(mu, sigma)| log_gauss_mass((low - mu) / sigma, (high - mu) / sigma))
        .collect();
    Kernels::Numeric {
        mus,
        sigmas,
        low,
        high,
        log,
        int,
        log_z,
    }
}

/// Each kernel's width: the larger gap to its sorted neighbours (the range's
/// ends counting as neighbours, except for the outermost kernels: Optuna's
/// `consider_endpoints=False`), clipped by the magic clip.
fn bandwidths(mus: &[f64], low: f64, high: f64) -> Vec<f64> {
    let n = mus.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|a, b| mus[*a].total_cmp(&mus[*b]));
    let mut ends = Vec::with_capacity(n + 2);
    ends.push(low);
    ends.extend(order.iter().map(|i| mus[*i]));
    ends.push(high);
    let mut sorted: Vec<f64> = (1..=n)
        .map(|i| (ends[i] - ends[i - 1]).max(ends[i + 1] - ends[i]))
        .collect();
    if ends.len() >= 4 {
        sorted[0] = ends[2] - ends[1];
        sorted[n - 1] = ends[n] - ends[n - 1];
    }
    let max_sigma = high - low;
    let min_sigma = (high - low) / 100f64.min(1.0 + (n + 1) as f64);
    let mut sigmas = vec![0.0; n];
    for (rank, i) in order.iter().enumerate() {
        sigmas[*i] = sorted[rank].clamp(min_sigma, max_sigma);
    }
    sigmas
}

/// A normal draw within `low..high` (by rejection: every kernel's centre is
/// in the range and no kernel is wider than it, so most draws land).
fn truncated_normal(mu: f64, sigma: f64, low: f64, high: f64, rng: &mut Rng) -> f64 {
    for _ in 0..1000 {
        let x = mu + sigma * rng.normal();
        if (low..=high).contains(&x) {
            return x;
        }
    }
    mu.clamp(low, high)
}

/// ln(Φ(b) − Φ(a)) for a < b, accurate in either tail.
fn log_gauss_mass(a: f64, b: f64) -> f64 {
    let s = std::f64::consts::FRAC_1_SQRT_2;
    let mass = if a >= 0.0 {
        0.5 * (erfc(a * s) - erfc(b * s))
    } else if b <= 0.0 {
        0.5 * (erfc(-b * s) - erfc(-a * s))
    } else {
        1.0 - 0.5 * erfc(-a * s) - 0.5 * erfc(b * s)
    };
    mass.max(1e-300).ln()
}

/// The complementary error function (Numerical Recipes' `erfcc`: relative
/// error below 1.2e-7 everywhere).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// ln Σ exp(terms), without overflow.
fn log_sum_exp(terms: &[f64]) -> f64 {
    let max = terms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if max == f64::NEG_INFINITY {
        return max;
    }
    max + terms.iter().map(|t| (t - max).exp()).sum::<f64>().ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erfc_matches_known_values() {
        for (x, want) in [
            (0.0, 1.0),
            (0.5, 0.479_500_122_186_953_5),
            (1.0, 0.157_299_207_050_285_13),
            (2.0, 0.004_677_734_981_047_266),
            (-1.0, 1.842_700_792_949_715),
        ] {
            assert!((erfc(x) - want).abs() <= 2e-7 * want, "erfc({x})");
        }
    }

    #[test]
    fn optunas_weights_ramp_up_the_oldest_trials_past_25() {
        assert_eq!(weights(3), vec![1.0; 3]);
        let w = weights(30);
        assert_eq!(w.len(), 30);
        assert!((w[0] - 1.0 / 30.0).abs() < 1e-12);
        assert!((w[4] - 1.0).abs() < 1e-12);
        assert!(w[25..].iter().all(|x| *x == 1.0));
    }

    #[test]
    fn bandwidths_follow_the_neighbours_and_the_magic_clip() {
        // Sorted 0.1, 0.2, 0.9 in 0..1: the middle kernel takes the larger
        // gap (0.7), the outer ones their inner gap (0.1 and 0.7), and
        // the clip raises 0.1 to 1/5.
        let s = bandwidths(&[0.9, 0.1, 0.2], 0.0, 1.0);
        assert_eq!(s, vec![0.7, 0.2, 0.7]);
    }

    #[test]
    fn parzen_densities_match_optunas() {
        // Optuna 5.0.0's _ParzenEstimator(...).log_pdf at the same
        // observations and points (scripts: docs/search.md).
        let int_log = Domain::Int {
            min: 1,
            max: 64,
            log: true,
        };
        let int = Domain::Int {
            min: -3,
            max: 10,
            log: false,
        };
        let float_log = Domain::Float {
            min: 1e-5,
            max: 0.1,
            log: true,
        };
        let float = Domain::Float {
            min: -5.0,
            max: 5.0,
            log: false,
        };
        let choice = Domain::Enum {
            choices: vec!["a".into(), "b".into(), "c".into()],
        };
        let ramp: Vec<f64> = (0..30).map(|i| (f64::from(i) / 29.0).powi(2)).collect();
        let unit = Domain::Float {
            min: 0.0,
            max: 1.0,
            log: false,
        };
        // (domain, observations, points, Optuna's log densities there)
        type Case<'a> = (&'a Domain, Vec<f64>, Vec<f64>, Vec<f64>);
        let cases: [Case; 6] = [
            (
                &int_log,
                vec![2.0, 8.0, 16.0, 16.0, 40.0],
                vec![1.0, 3.0, 16.0, 17.0, 64.0],
                vec![
                    -2.2477116379200974,
                    -2.968265605803168,
                    -3.8557160348211443,
                    -3.912578309094856,
                    -5.87242160135643,
                ],
            ),
            (
                &int,
                vec![0.0, 1.0, 1.0, 7.0],
                vec![-3.0, 0.0, 2.0, 10.0],
                vec![
                    -2.8575313125573576,
                    -2.1997760047074815,
                    -2.2626961872980615,
                    -3.306056554406166,
                ],
            ),
            (
                &float_log,
                vec![1e-3, 2e-3, 5e-2],
                vec![1e-5, 1e-3, 3e-3, 0.1],
                vec![
                    -3.2567325791358575,
                    -1.933063666598374,
                    -1.9170530983419178,
                    -2.3317711439192683,
                ],
            ),
            (
                &float,
                vec![-1.0, 0.5, 0.6, 4.0],
                vec![-5.0, 0.0, 0.55, 3.0],
                vec![
                    -3.5216102905432347,
                    -1.8745788198721296,
                    -1.8929196829599788,
                    -2.338853296114368,
                ],
            ),
            (
                &choice,
                vec![0.0, 0.0, 2.0],
                vec![0.0, 1.0, 2.0],
                vec![
                    -0.7419373447293773,
                    -1.6582280766035324,
                    -1.0986122886681098,
                ],
            ),
            (
                &unit,
                ramp,
                vec![0.0, 0.3, 0.9],
                vec![0.8596571270074813, -0.04067093147175427, -0.415332582827332],
            ),
        ];
        for (domain, obs, xs, want) in cases {
            let rows: Vec<Vec<f64>> = obs.iter().map(|o| vec![*o]).collect();
            let m = Mixture::new(&[domain], &rows);
            for (x, want) in xs.iter().zip(want) {
                let got = m.log_pdf(&[*x]);
                assert!(
                    (got - want).abs() < 1e-5,
                    "{domain:?} at {x}: {got} vs Optuna's {want}"
                );
            }
        }
    }
}
