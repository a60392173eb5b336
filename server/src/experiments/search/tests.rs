use std::collections::BTreeSet;

use app::models::experiments::{
    Algorithm, Direction, Domain, EarlyStopping, Objective, ObjectiveValue, SearchParam,
    SearchSpace, TrialValues,
};
use serde_json::{json, Value};

use super::*;

fn space(params: Value) -> SearchSpace {
    let s: SearchSpace = serde_json::from_value(json!({ "parameters": params })).unwrap();
    s.validate().unwrap();
    s
}

fn tpe() -> Algorithm {
    Algorithm::default()
}

fn tpe_independent() -> Algorithm {
    Algorithm::Tpe {
        n_startup_trials: 10,
        n_ei_candidates: 24,
        constant_liar: true,
        multivariate: false,
    }
}

fn num(values: &TrialValues, name: &str) -> f64 {
    values[name].as_f64().unwrap()
}

/// Runs `trials` trials one after another on `f` (lower is better); the
/// best value found.
fn run(
    space: &SearchSpace,
    algorithm: &Algorithm,
    seed: u64,
    trials: u32,
    f: impl Fn(&TrialValues) -> f64,
) -> f64 {
    let mut history = Vec::new();
    let mut best = f64::INFINITY;
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
        let v = f(&values);
        best = best.min(v);
        history.push(Finished {
            number,
            values,
            outcome: Outcome::Completed(v),
        });
    }
    best
}

#[test]
fn a_grid_covers_every_combination_once_and_then_ends() {
    let s = space(json!([
        {"name": "lr", "type": "float", "min": 0.001, "max": 0.1, "log": true},
        {"name": "layers", "type": "int", "min": 1, "max": 3},
        {"name": "optimizer", "type": "enum", "choices": ["sgd", "adam"]},
        {"name": "amp", "type": "bool"},
    ]));
    let grid = Algorithm::Grid { points: 3 };
    assert_eq!(grid_size(&s, 3), Some(3 * 3 * 2 * 2));
    let mut history = Vec::new();
    let mut seen = BTreeSet::new();
    for number in 0..36 {
        let values = suggest(&s, &grid, Direction::Minimize, 7, number, &history, &[]).unwrap();
        assert!(
            seen.insert(serde_json::to_string(&values).unwrap()),
            "{values:?} twice"
        );
        history.push(Finished {
            number,
            values,
            outcome: if number % 5 == 0 {
                Outcome::Failed
            } else {
                Outcome::Completed(1.0)
            },
        });
    }
    assert_eq!(
        suggest(&s, &grid, Direction::Minimize, 7, 36, &history, &[]),
        None
    );
    let lrs: BTreeSet<String> = history.iter().map(|t| t.values["lr"].to_string()).collect();
    assert_eq!(
        lrs,
        BTreeSet::from(["0.001".into(), "0.01".into(), "0.1".into()]),
        "log-spaced"
    );
    assert!(
        history[..6]
            .iter()
            .any(|t| t.values["layers"] != history[0].values["layers"]),
        "shuffled"
    );
}

#[test]
fn a_grid_cuts_a_range_into_its_points_and_keeps_a_short_int_range_whole() {
    let s = space(json!([
        {"name": "x", "type": "float", "min": 0.0, "max": 1.0},
        {"name": "n", "type": "int", "min": 1, "max": 4},
        {"name": "batch", "type": "int", "min": 16, "max": 256, "log": true},
    ]));
    let axes: Vec<Vec<Value>> = s
        .parameters
        .iter()
        .map(|p| params::grid(&p.domain, 5))
        .collect();
    assert_eq!(
        axes[0],
        vec![json!(0.0), json!(0.25), json!(0.5), json!(0.75), json!(1.0)]
    );
    assert_eq!(axes[1], vec![json!(1), json!(2), json!(3), json!(4)]);
    assert_eq!(
        axes[2],
        vec![json!(16), json!(32), json!(64), json!(128), json!(256)]
    );
}

#[test]
fn random_values_respect_their_bounds_and_a_log_scale() {
    let s = space(json!([
        {"name": "lr", "type": "float", "min": 1e-5, "max": 1.0, "log": true},
        {"name": "x", "type": "float", "min": -2.0, "max": 3.0},
        {"name": "n", "type": "int", "min": 1, "max": 1000, "log": true},
        {"name": "k", "type": "int", "min": -3, "max": 3},
    ]));
    let mut lr_decades = [0usize; 5];
    let mut n_small = 0;
    let mut ks = BTreeSet::new();
    for number in 0..2000 {
        let v = suggest(
            &s,
            &Algorithm::Random,
            Direction::Minimize,
            1,
            number,
            &[],
            &[],
        )
        .unwrap();
        for p in &s.parameters {
            assert!(
                p.domain.contains(&v[&p.name]),
                "{} = {}",
                p.name,
                v[&p.name]
            );
        }
        let lr = num(&v, "lr");
        lr_decades[((-lr.log10()).floor() as usize).min(4)] += 1;
        n_small += usize::from(v["n"].as_i64().unwrap() <= 31);
        ks.insert(v["k"].as_i64().unwrap());
    }
    // Each of the five decades of lr gets about a fifth.
    assert!(
        lr_decades.iter().all(|d| (300..500).contains(d)),
        "{lr_decades:?}"
    );
    // Half of a log range from 1 to 1000 lies below 31.6.
    assert!((850..1150).contains(&n_small), "{n_small}");
    assert_eq!(ks, (-3..=3).collect());
}

#[test]
fn suggestions_are_identical_for_the_same_inputs() {
    let s = space(json!([
        {"name": "x", "type": "float", "min": -5.0, "max": 5.0},
        {"name": "n", "type": "int", "min": 1, "max": 64, "log": true},
        {"name": "opt", "type": "enum", "choices": ["sgd", "adam", "rmsprop"]},
    ]));
    for algorithm in [
        tpe(),
        tpe_independent(),
        Algorithm::Random,
        Algorithm::Grid { points: 4 },
    ] {
        let mut history = Vec::new();
        for number in 0..25 {
            let a = suggest(
                &s,
                &algorithm,
                Direction::Minimize,
                42,
                number,
                &history,
                &[],
            )
            .unwrap();
            // A restarted console: the history read back in another order.
            let mut reversed = history.clone();
            reversed.reverse();
            let b = suggest(
                &s,
                &algorithm,
                Direction::Minimize,
                42,
                number,
                &reversed,
                &[],
            )
            .unwrap();
            assert_eq!(a, b, "{algorithm:?} trial {number}");
            let v = num(&a, "x").powi(2);
            history.push(Finished {
                number,
                values: a,
                outcome: Outcome::Completed(v),
            });
        }
        let other_seed = suggest(&s, &algorithm, Direction::Minimize, 43, 25, &history, &[]);
        let same_seed = suggest(&s, &algorithm, Direction::Minimize, 42, 25, &history, &[]);
        assert_ne!(other_seed, same_seed, "{algorithm:?}: the seed matters");
    }
}

#[test]
fn tpe_beats_random_on_a_simple_quadratic_over_a_fixed_seed_set() {
    let s = space(json!([
        {"name": "x", "type": "float", "min": -10.0, "max": 10.0},
        {"name": "y", "type": "float", "min": -10.0, "max": 10.0},
    ]));
    let f = |v: &TrialValues| (num(v, "x") - 3.0).powi(2) + (num(v, "y") + 1.0).powi(2);
    for algorithm in [tpe(), tpe_independent()] {
        let mut wins = 0;
        let (mut tpe_sum, mut random_sum) = (0.0, 0.0);
        for seed in 0..10 {
            let t = run(&s, &algorithm, seed, 40, f);
            let r = run(&s, &Algorithm::Random, seed, 40, f);
            wins += usize::from(t < r);
            tpe_sum += t;
            random_sum += r;
        }
        assert!(wins >= 8, "{algorithm:?} won {wins} of 10");
        assert!(
            tpe_sum * 2.0 < random_sum,
            "{algorithm:?}: {tpe_sum} vs {random_sum}"
        );
    }
}

#[test]
fn tpe_learns_the_best_enum_choice_and_bool() {
    let s = space(json!([
        {"name": "opt", "type": "enum", "choices": ["sgd", "adam", "rmsprop", "adagrad"]},
        {"name": "amp", "type": "bool"},
        {"name": "x", "type": "float", "min": 0.0, "max": 1.0},
    ]));
    let f = |v: &TrialValues| {
        let opt = match v["opt"].as_str().unwrap() {
            "adam" => 0.0,
            "rmsprop" => 0.5,
            _ => 1.0,
        };
        opt + if v["amp"].as_bool().unwrap() {
            0.0
        } else {
            0.7
        } + num(v, "x")
    };
    for algorithm in [tpe(), tpe_independent()] {
        let mut history = Vec::new();
        for number in 0..60 {
            let values = suggest(
                &s,
                &algorithm,
                Direction::Minimize,
                3,
                number,
                &history,
                &[],
            )
            .unwrap();
            for p in &s.parameters {
                assert!(p.domain.contains(&values[&p.name]));
            }
            let v = f(&values);
            history.push(Finished {
                number,
                values,
                outcome: Outcome::Completed(v),
            });
        }
        let last = &history[40..];
        let adam_amp = last
            .iter()
            .filter(|t| t.values["opt"] == json!("adam") && t.values["amp"] == json!(true))
            .count();
        // Random picks adam with amp one time in eight: 2.5 of 20.
        assert!(
            adam_amp >= 8,
            "{algorithm:?}: adam with amp in {adam_amp} of the last 20"
        );
    }
}

#[test]
fn tpe_maximises_when_the_objective_says_so() {
    let s = space(json!([{"name": "x", "type": "float", "min": 0.0, "max": 1.0}]));
    let mut history = Vec::new();
    for number in 0..40 {
        let values = suggest(&s, &tpe(), Direction::Maximize, 5, number, &history, &[]).unwrap();
        let v = num(&values, "x");
        history.push(Finished {
            number,
            values,
            outcome: Outcome::Completed(v),
        });
    }
    let late: f64 = history[30..]
        .iter()
        .map(|t| num(&t.values, "x"))
        .sum::<f64>()
        / 10.0;
    assert!(late > 0.75, "mean x of the last 10: {late}");
}

#[test]
fn a_running_trial_is_not_suggested_again() {
    // A small discrete space: repeats would be likely without the check.
    let s = space(json!([
        {"name": "opt", "type": "enum", "choices": ["sgd", "adam", "rmsprop"]},
        {"name": "amp", "type": "bool"},
    ]));
    for algorithm in [
        tpe(),
        tpe_independent(),
        Algorithm::Random,
        Algorithm::Grid { points: 5 },
    ] {
        let history: Vec<Finished> = (0..12)
            .map(|number| Finished {
                number,
                values: suggest(
                    &s,
                    &Algorithm::Random,
                    Direction::Minimize,
                    9,
                    number,
                    &[],
                    &[],
                )
                .unwrap(),
                outcome: Outcome::Completed(f64::from(number)),
            })
            .collect();
        let history = if matches!(algorithm, Algorithm::Grid { .. }) {
            Vec::new()
        } else {
            history
        };
        let mut pending: Vec<TrialValues> = Vec::new();
        for number in 12..17 {
            let values = suggest(
                &s,
                &algorithm,
                Direction::Minimize,
                9,
                number,
                &history,
                &pending,
            )
            .unwrap();
            assert!(
                !pending.contains(&values),
                "{algorithm:?}: {values:?} is running"
            );
            pending.push(values);
        }
    }
    // Continuous: parallel TPE trials spread out rather than pile up.
    let s = space(json!([{"name": "x", "type": "float", "min": 0.0, "max": 1.0}]));
    let history: Vec<Finished> = (0..20)
        .map(|number| {
            let x = f64::from(number) / 20.0;
            Finished {
                number,
                values: TrialValues::from([("x".into(), json!(x))]),
                outcome: Outcome::Completed((x - 0.3).abs()),
            }
        })
        .collect();
    let mut pending = Vec::new();
    for number in 20..28 {
        let values = suggest(
            &s,
            &tpe(),
            Direction::Minimize,
            1,
            number,
            &history,
            &pending,
        )
        .unwrap();
        assert!(!pending.contains(&values));
        pending.push(values);
    }
    let xs: BTreeSet<String> = pending.iter().map(|v| v["x"].to_string()).collect();
    assert_eq!(xs.len(), 8);
}

#[test]
fn failed_trials_are_left_out_by_tpe_and_values_outside_the_space_are_ignored() {
    let s = space(json!([{"name": "x", "type": "float", "min": 0.0, "max": 1.0}]));
    let mut history: Vec<Finished> = (0..30)
        .map(|number| Finished {
            number,
            values: TrialValues::from([("x".into(), json!(f64::from(number) / 30.0))]),
            outcome: Outcome::Failed,
        })
        .collect();
    // An earlier, wider space's trial, and one with the wrong type.
    history.push(Finished {
        number: 30,
        values: TrialValues::from([("x".into(), json!(7.5))]),
        outcome: Outcome::Completed(0.0),
    });
    history.push(Finished {
        number: 31,
        values: TrialValues::from([("x".into(), json!("0.5"))]),
        outcome: Outcome::Completed(0.0),
    });
    let v = suggest(&s, &tpe(), Direction::Minimize, 1, 32, &history, &[]).unwrap();
    assert!(s.parameters[0].domain.contains(&v["x"]));
}

#[test]
fn a_huge_grid_still_suggests_new_combinations() {
    let params: Vec<SearchParam> = (0..40)
        .map(|i| SearchParam {
            name: format!("p{i}"),
            domain: Domain::Float {
                min: 0.0,
                max: 1.0,
                log: false,
            },
        })
        .collect();
    let s = SearchSpace { parameters: params };
    assert_eq!(grid_size(&s, 10), None);
    let a = suggest(
        &s,
        &Algorithm::Grid { points: 10 },
        Direction::Minimize,
        1,
        0,
        &[],
        &[],
    )
    .unwrap();
    let b = suggest(
        &s,
        &Algorithm::Grid { points: 10 },
        Direction::Minimize,
        1,
        1,
        &[],
        std::slice::from_ref(&a),
    )
    .unwrap();
    assert_ne!(a, b);
}

fn loss() -> Objective {
    Objective {
        metric: "loss".into(),
        direction: Direction::Minimize,
        value: ObjectiveValue::Last,
        goal: None,
    }
}

/// A falling curve: `end` + 1/step, at steps 1..=n.
fn curve(end: f64, n: i64) -> Vec<(i64, f64)> {
    (1..=n).map(|s| (s, end + 1.0 / s as f64)).collect()
}

#[test]
fn median_stopping_stops_a_clearly_bad_curve_and_keeps_a_good_one() {
    let rule = EarlyStopping::median();
    let done: Vec<Vec<(i64, f64)>> = (0..6)
        .map(|i| curve(1.0 + 0.1 * f64::from(i), 20))
        .collect();
    let others: Vec<Curve> = done
        .iter()
        .map(|c| Curve {
            points: c,
            completed: true,
        })
        .collect();
    let bad = curve(3.0, 5);
    let reason = should_stop(&rule, &loss(), &bad, &others).expect("a bad curve is stopped");
    assert!(reason.contains("median"), "{reason}");
    assert_eq!(should_stop(&rule, &loss(), &curve(0.5, 5), &others), None);
    // Maximising, the same bad curve is the best.
    let acc = Objective {
        direction: Direction::Maximize,
        ..loss()
    };
    assert_eq!(should_stop(&rule, &acc, &bad, &others), None);
    // Too few completed trials yet (5 by default): nothing is stopped.
    let few: Vec<Curve> = others[..4].to_vec();
    assert_eq!(should_stop(&rule, &loss(), &bad, &few), None);
    // Running trials do not count.
    let running: Vec<Curve> = others
        .iter()
        .map(|c| Curve {
            completed: false,
            ..*c
        })
        .collect();
    assert_eq!(should_stop(&rule, &loss(), &bad, &running), None);
    // Nor before the warm-up ends.
    let warm = EarlyStopping::Median {
        n_startup_trials: 5,
        n_warmup_steps: 10,
        interval_steps: 1,
        n_min_trials: 1,
    };
    assert_eq!(should_stop(&warm, &loss(), &bad, &others), None);
    assert!(should_stop(&warm, &loss(), &curve(3.0, 10), &others).is_some());
    // A NaN-only curve is stopped.
    assert!(should_stop(&rule, &loss(), &[(1, f64::NAN)], &others).is_some());
}

#[test]
fn median_stopping_checks_once_per_interval() {
    let rule = EarlyStopping::Median {
        n_startup_trials: 1,
        n_warmup_steps: 0,
        interval_steps: 5,
        n_min_trials: 1,
    };
    let done = curve(1.0, 20);
    let others = [Curve {
        points: &done,
        completed: true,
    }];
    let bad = curve(3.0, 20);
    // Steps 5, 10, … are each the first of their interval; 6 to 9 are not.
    assert!(should_stop(&rule, &loss(), &bad[..5], &others).is_some());
    assert_eq!(should_stop(&rule, &loss(), &bad[..7], &others), None);
    assert!(should_stop(&rule, &loss(), &bad[..10], &others).is_some());
}

#[test]
fn asha_keeps_the_best_third_at_each_rung_and_stops_the_rest() {
    let rule = EarlyStopping::asha();
    // Six trials that reached the rungs at steps 1, 3 and 9.
    let done: Vec<Vec<(i64, f64)>> = (0..6).map(|i| curve(1.0 + 0.1 * f64::from(i), 9)).collect();
    let others: Vec<Curve> = done
        .iter()
        .map(|c| Curve {
            points: c,
            completed: false,
        })
        .collect();
    // At rung 0 (step 1) a value of 1.5 would be the best of 7: goes on;
    // 2.05 is fourth of seven: the best 2 go on, so it stops.
    assert_eq!(should_stop(&rule, &loss(), &[(1, 1.5)], &others), None);
    let reason = should_stop(&rule, &loss(), &[(1, 2.15)], &others).expect("stopped at rung 0");
    assert!(reason.contains("rung 0"), "{reason}");
    // Between rungs nothing is judged, however bad.
    assert_eq!(
        should_stop(&rule, &loss(), &[(1, 1.5), (2, 9.0)], &others),
        None
    );
    // At step 3 (rung 1) 9.0 is the worst: stopped.
    assert!(should_stop(&rule, &loss(), &[(1, 1.5), (2, 9.0), (3, 9.0)], &others).is_some());
    // The first trials to reach a rung go on only while they are the best.
    assert!(should_stop(&rule, &loss(), &[(1, 5.0)], &others[..1]).is_some());
    assert_eq!(should_stop(&rule, &loss(), &[(1, 0.5)], &others[..1]), None);
    // No rule, no stopping.
    assert_eq!(
        should_stop(&EarlyStopping::None, &loss(), &[(1, 99.0)], &others),
        None
    );
}
