//! Search quality: our grid, random and TPE samplers on Branin (2-d),
//! Hartmann-6 and a noisy mixed quadratic (floats, a log-scale float, a
//! log-scale int, an enum), 50 trials each, over many seeds; and early
//! stopping (ASHA, median) on synthetic learning curves. Prints one JSON
//! object on stdout: each run's best-found regret, and the early-stopping
//! figures. `scripts/bench_search.py` runs it beside Optuna and prints the
//! table (docs/search.md).
//!
//! `cargo bench -p server --bench search_quality -- [--seeds N] [--trials N]`

use std::collections::BTreeMap;

use app::models::experiments::{
    Algorithm, Direction, EarlyStopping, Objective, ObjectiveValue, SearchSpace, TrialValues,
};
use serde_json::{json, Value};
use server::experiments::search::{grid_size, should_stop, suggest, Curve, Finished, Outcome};

/// SplitMix64, the noise of the noisy function: `scripts/bench_search.py`
/// computes the same numbers for Optuna's runs.
fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A standard normal number fixed by (seed, trial).
fn noise(seed: u64, trial: u64) -> f64 {
    let mut state = (seed << 32) ^ trial;
    let a = splitmix(&mut state);
    let b = splitmix(&mut state);
    let u1 = ((a >> 11) + 1) as f64 / (1u64 << 53) as f64;
    let u2 = (b >> 11) as f64 / (1u64 << 53) as f64;
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

fn num(v: &TrialValues, name: &str) -> f64 {
    v[name].as_f64().unwrap()
}

/// A benchmark function: its space, its true value and its minimum.
struct Problem {
    name: &'static str,
    space: Value,
    truth: fn(&TrialValues) -> f64,
    noise: f64,
    minimum: f64,
}

fn branin(v: &TrialValues) -> f64 {
    let (x1, x2) = (num(v, "x1"), num(v, "x2"));
    let pi = std::f64::consts::PI;
    let b = 5.1 / (4.0 * pi * pi);
    let c = 5.0 / pi;
    let t = 1.0 / (8.0 * pi);
    (x2 - b * x1 * x1 + c * x1 - 6.0).powi(2) + 10.0 * (1.0 - t) * x1.cos() + 10.0
}

fn hartmann6(v: &TrialValues) -> f64 {
    const ALPHA: [f64; 4] = [1.0, 1.2, 3.0, 3.2];
    const A: [[f64; 6]; 4] = [
        [10.0, 3.0, 17.0, 3.5, 1.7, 8.0],
        [0.05, 10.0, 17.0, 0.1, 8.0, 14.0],
        [3.0, 3.5, 1.7, 10.0, 17.0, 8.0],
        [17.0, 8.0, 0.05, 10.0, 0.1, 14.0],
    ];
    const P: [[f64; 6]; 4] = [
        [0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886],
        [0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991],
        [0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650],
        [0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381],
    ];
    let x: Vec<f64> = (0..6).map(|i| num(v, &format!("x{i}"))).collect();
    -(0..4)
        .map(|i| {
            let inner: f64 = (0..6).map(|j| A[i][j] * (x[j] - P[i][j]).powi(2)).sum();
            ALPHA[i] * (-inner).exp()
        })
        .sum::<f64>()
}

fn quadratic(v: &TrialValues) -> f64 {
    let opt = match v["optimizer"].as_str().unwrap() {
        "adam" => 0.0,
        "rmsprop" => 0.5,
        _ => 1.0,
    };
    num(v, "x").powi(2)
        + num(v, "y").powi(2)
        + (num(v, "lr").log10() + 3.0).powi(2)
        + (num(v, "batch").log2() - 4.0).powi(2) / 4.0
        + opt
}

fn problems() -> Vec<Problem> {
    vec![
        Problem {
            name: "branin",
            space: json!([
                {"name": "x1", "type": "float", "min": -5.0, "max": 10.0},
                {"name": "x2", "type": "float", "min": 0.0, "max": 15.0},
            ]),
            truth: branin,
            noise: 0.0,
            minimum: 0.397_887_357_729_738,
        },
        Problem {
            name: "hartmann6",
            space: Value::Array(
                (0..6)
                    .map(|i| json!({"name": format!("x{i}"), "type": "float", "min": 0.0, "max": 1.0}))
                    .collect(),
            ),
            truth: hartmann6,
            noise: 0.0,
            minimum: -3.322_368_011_415_51,
        },
        Problem {
            name: "noisy_quadratic",
            space: json!([
                {"name": "x", "type": "float", "min": -5.0, "max": 5.0},
                {"name": "y", "type": "float", "min": -5.0, "max": 5.0},
                {"name": "lr", "type": "float", "min": 1e-5, "max": 0.1, "log": true},
                {"name": "batch", "type": "int", "min": 1, "max": 64, "log": true},
                {"name": "optimizer", "type": "enum", "choices": ["sgd", "adam", "rmsprop"]},
            ]),
            truth: quadratic,
            noise: 0.3,
            minimum: 0.0,
        },
    ]
}

/// One search of `trials` trials; the regret of the trial it would pick
/// (the best observed value; its true value minus the minimum).
fn search(
    problem: &Problem,
    space: &SearchSpace,
    algorithm: &Algorithm,
    seed: u64,
    trials: u32,
) -> f64 {
    let mut history: Vec<Finished> = Vec::new();
    let mut best: Option<(f64, f64)> = None; // (observed, true)
    for number in 0..trials {
        let Some(values) = suggest(
            space,
            algorithm,
            Direction::Minimize,
            seed,
            number,
            &history,
            &[],
        ) else {
            break;
        };
        let truth = (problem.truth)(&values);
        let observed = truth + problem.noise * noise(seed, u64::from(number));
        if best.is_none_or(|(o, _)| observed < o) {
            best = Some((observed, truth));
        }
        history.push(Finished {
            number,
            values,
            outcome: Outcome::Completed(observed),
        });
    }
    best.map_or(f64::NAN, |b| b.1 - problem.minimum)
}

/// The largest grid of at most `trials` combinations (at least 2 points).
fn grid_for(space: &SearchSpace, trials: u32) -> Algorithm {
    let points = (2..=100)
        .take_while(|p| grid_size(space, *p).is_some_and(|n| n <= u64::from(trials)))
        .last()
        .unwrap_or(2);
    Algorithm::Grid { points }
}

/// A synthetic training run: its loss at `step` (1-based), noisy, falling
/// towards a final value set by its parameters, faster with a larger
/// learning rate (so that early leaders are not always the final ones).
fn learning_curve(v: &TrialValues, step: i64, seed: u64, trial: u64) -> f64 {
    let final_loss = final_loss(v);
    let lr = num(v, "lr");
    let tau = 2.0 + 30.0 * (1.0 - (lr.log10() + 4.0) / 4.0); // lr 1e-4: 32 steps; 1: 2 steps
    let n = noise(seed ^ 0x5EED, (trial << 16) ^ step as u64);
    final_loss + 2.0 * (-(step as f64) / tau).exp() + 0.02 * n
}

fn final_loss(v: &TrialValues) -> f64 {
    let lr = num(v, "lr");
    (num(v, "x1") - 0.3).powi(2) + (num(v, "x2") - 0.7).powi(2) + 0.1 * (lr.log10() + 2.0).powi(2)
}

/// Early stopping on `n` random configurations of `max_step` steps each,
/// `workers` at once (a step each per tick); what it cost and what it found.
fn early_stopping(rule: &EarlyStopping, seed: u64, n: u32, max_step: i64, workers: usize) -> Value {
    let space: SearchSpace = serde_json::from_value(json!({"parameters": [
        {"name": "x1", "type": "float", "min": 0.0, "max": 1.0},
        {"name": "x2", "type": "float", "min": 0.0, "max": 1.0},
        {"name": "lr", "type": "float", "min": 1e-4, "max": 1.0, "log": true},
    ]}))
    .unwrap();
    let objective = Objective {
        metric: "loss".into(),
        direction: Direction::Minimize,
        value: ObjectiveValue::Last,
        goal: None,
    };
    let configs: Vec<TrialValues> = (0..n)
        .map(|i| {
            suggest(
                &space,
                &Algorithm::Random,
                Direction::Minimize,
                seed,
                i,
                &[],
                &[],
            )
            .unwrap()
        })
        .collect();
    // Per trial: its points, and its state (0 waiting, 1 running, 2 completed, 3 stopped).
    let mut curves: Vec<Vec<(i64, f64)>> = vec![Vec::new(); n as usize];
    let mut state = vec![0u8; n as usize];
    let mut next = 0usize;
    loop {
        while state.iter().filter(|s| **s == 1).count() < workers && next < n as usize {
            state[next] = 1;
            next += 1;
        }
        let running: Vec<usize> = (0..n as usize).filter(|i| state[*i] == 1).collect();
        if running.is_empty() {
            break;
        }
        for i in running {
            let step = curves[i].len() as i64 + 1;
            let value = learning_curve(&configs[i], step, seed, i as u64);
            curves[i].push((step, value));
            if step == max_step {
                state[i] = 2;
                continue;
            }
            let others: Vec<Curve> = (0..n as usize)
                .filter(|j| *j != i && state[*j] != 0)
                .map(|j| Curve {
                    points: &curves[j],
                    completed: state[j] == 2,
                })
                .collect();
            if should_stop(rule, &objective, &curves[i], &others).is_some() {
                state[i] = 3;
            }
        }
    }
    let spent: usize = curves.iter().map(Vec::len).sum();
    // The pick: the completed trial with the best last value.
    let pick = (0..n as usize)
        .filter(|i| state[*i] == 2)
        .min_by(|a, b| {
            curves[*a]
                .last()
                .unwrap()
                .1
                .total_cmp(&curves[*b].last().unwrap().1)
        })
        .unwrap();
    let mut finals: Vec<f64> = configs.iter().map(final_loss).collect();
    let picked = finals[pick];
    finals.sort_by(f64::total_cmp);
    let rank = finals.iter().position(|f| *f == picked).unwrap() + 1;
    json!({
        "steps_fraction": spent as f64 / (f64::from(n) * max_step as f64),
        "rank": rank,
        "top_fraction": rank as f64 / f64::from(n),
        "completed": state.iter().filter(|s| **s == 2).count(),
    })
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str, default: u32| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1)?.parse().ok())
            .unwrap_or(default)
    };
    let seeds = arg("--seeds", 30);
    let trials = arg("--trials", 50);
    let mut functions = BTreeMap::new();
    for problem in problems() {
        let space: SearchSpace =
            serde_json::from_value(json!({ "parameters": problem.space })).unwrap();
        space.validate().unwrap();
        let grid = grid_for(&space, trials);
        let tpe = |multivariate| Algorithm::Tpe {
            n_startup_trials: 10,
            n_ei_candidates: 24,
            constant_liar: true,
            multivariate,
        };
        let samplers = [
            ("ours_grid", grid.clone()),
            ("ours_random", Algorithm::Random),
            ("ours_tpe", tpe(true)),
            ("ours_tpe_independent", tpe(false)),
        ];
        let mut runs = BTreeMap::new();
        for (name, algorithm) in samplers {
            let regrets: Vec<f64> = (0..u64::from(seeds))
                .map(|seed| search(&problem, &space, &algorithm, seed, trials))
                .collect();
            runs.insert(name, json!(regrets));
        }
        functions.insert(
            problem.name,
            json!({"space": problem.space, "noise": problem.noise, "minimum": problem.minimum, "grid": grid, "regrets": runs}),
        );
    }
    let (n, max_step, workers) = (81, 81, 4);
    let mut stopping = BTreeMap::new();
    for (name, rule) in [
        ("asha", EarlyStopping::asha()),
        (
            "asha_min9",
            EarlyStopping::Asha {
                min_resource: 9,
                reduction_factor: 3,
                min_early_stopping_rate: 0,
            },
        ),
        ("median", EarlyStopping::median()),
        ("none", EarlyStopping::None),
    ] {
        let runs: Vec<Value> = (0..u64::from(seeds))
            .map(|seed| early_stopping(&rule, seed, n, max_step, workers))
            .collect();
        stopping.insert(name, json!(runs));
    }
    let out = json!({
        "trials": trials,
        "seeds": seeds,
        "functions": functions,
        "early_stopping": {
            "configurations": n,
            "max_step": max_step,
            "workers": workers,
            "runs": stopping,
        },
    });
    println!("{out}");
}
