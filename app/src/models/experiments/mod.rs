//! Experiments: a search over a template's typed parameters for an
//! objective. These are the search's settings as a user writes them (the
//! space, the objective, the algorithm, early stopping) and the values a
//! trial runs with; the search itself runs on the server
//! (`server::experiments::search`).

mod form;
mod record;
mod settings;
mod space;
mod view;

pub use form::{ExperimentForm, ParamForm};
pub use record::{
    best_of, counted, ending, trial_job_name, was_retried, Experiment, ExperimentSpec,
    ExperimentStatus, ExperimentSummary, Trial, TrialCounts, TrialStatus, MAX_PARALLEL_TRIALS,
    MAX_TRIALS,
};
pub use settings::{Algorithm, Direction, EarlyStopping, Objective, ObjectiveValue};
pub use space::{Domain, SearchParam, SearchSpace, TrialValues};
pub use view::{
    best_over_time, table_rows, value_text, TrialColumn, TrialQuery, TrialTags, TRIALS_PER_PAGE,
    TRIAL_TAGS_SHOWN,
};

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::error::AppError;
    use crate::models::templates::TemplateParam;

    fn space(parameters: serde_json::Value) -> SearchSpace {
        serde_json::from_value(json!({ "parameters": parameters })).unwrap()
    }

    fn field_of(result: Result<(), AppError>) -> String {
        match result {
            Err(AppError::Invalid { field, .. }) => field.unwrap_or_default(),
            other => panic!("not a 400: {other:?}"),
        }
    }

    #[test]
    fn a_space_reads_as_written_with_each_kind_of_parameter() {
        let s = space(json!([
            {"name": "lr", "type": "float", "min": 1e-5, "max": 0.1, "log": true},
            {"name": "batch_size", "type": "int", "min": 16, "max": 256, "log": true},
            {"name": "layers", "type": "int", "min": 1, "max": 4},
            {"name": "optimizer", "type": "enum", "choices": ["sgd", "adam"]},
            {"name": "amp", "type": "bool"},
        ]));
        s.validate().unwrap();
        assert_eq!(
            s.parameters[2].domain,
            Domain::Int {
                min: 1,
                max: 4,
                log: false
            }
        );
        let back: SearchSpace = serde_json::from_value(serde_json::to_value(&s).unwrap()).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn bad_bounds_are_refused_naming_the_field() {
        let cases = [
            (
                json!([{"name": "a", "type": "int", "min": 4, "max": 4}]),
                "parameters[0].min",
            ),
            (
                json!([{"name": "a", "type": "float", "min": 1.0, "max": 0.5}]),
                "parameters[0].min",
            ),
            (
                json!([{"name": "a", "type": "float", "min": 0.0, "max": 1.0, "log": true}]),
                "parameters[0].min",
            ),
            (
                json!([{"name": "a", "type": "int", "min": 0, "max": 8, "log": true}]),
                "parameters[0].min",
            ),
            (
                json!([{"name": "a", "type": "enum", "choices": []}]),
                "parameters[0].choices",
            ),
            (
                json!([{"name": "a", "type": "enum", "choices": ["x", "x"]}]),
                "parameters[0].choices",
            ),
            (
                json!([{"name": "a", "type": "bool"}, {"name": "a", "type": "bool"}]),
                "parameters[1].name",
            ),
            (json!([]), "parameters"),
        ];
        for (params, field) in cases {
            assert_eq!(
                field_of(space(params.clone()).validate()),
                field,
                "{params}"
            );
        }
    }

    #[test]
    fn a_space_must_fit_the_templates_parameters() {
        let template: Vec<TemplateParam> = serde_json::from_value(json!([
            {"name": "lr", "type": "float", "min": 0.0, "max": 1.0},
            {"name": "trainers", "type": "int", "min": 1, "max": 8},
            {"name": "optimizer", "type": "enum", "choices": ["sgd", "adam"]},
            {"name": "amp", "type": "bool"},
        ]))
        .unwrap();
        let fits = space(json!([
            {"name": "lr", "type": "float", "min": 1e-4, "max": 1.0, "log": true},
            {"name": "trainers", "type": "int", "min": 1, "max": 8},
            {"name": "optimizer", "type": "enum", "choices": ["adam"]},
            {"name": "amp", "type": "bool"},
        ]));
        fits.check_against(&template).unwrap();
        let cases = [
            (
                json!([{"name": "nope", "type": "bool"}]),
                "parameters[0].name",
            ),
            (
                json!([{"name": "lr", "type": "int", "min": 0, "max": 1}]),
                "parameters[0].type",
            ),
            (
                json!([{"name": "trainers", "type": "int", "min": 1, "max": 9}]),
                "parameters[0].max",
            ),
            (
                json!([{"name": "lr", "type": "float", "min": -1.0, "max": 1.0}]),
                "parameters[0].min",
            ),
            (
                json!([{"name": "optimizer", "type": "enum", "choices": ["rmsprop"]}]),
                "parameters[0].choices",
            ),
        ];
        for (params, field) in cases {
            assert_eq!(
                field_of(space(params.clone()).check_against(&template)),
                field,
                "{params}"
            );
        }
    }

    #[test]
    fn a_domain_contains_only_values_of_its_type_within_its_bounds() {
        let int = Domain::Int {
            min: 1,
            max: 8,
            log: false,
        };
        assert!(int.contains(&json!(8)));
        assert!(!int.contains(&json!(9)));
        assert!(!int.contains(&json!(2.5)));
        let float = Domain::Float {
            min: 0.0,
            max: 1.0,
            log: false,
        };
        assert!(float.contains(&json!(0.5)));
        assert!(!float.contains(&json!("0.5")));
        let choice = Domain::Enum {
            choices: vec!["sgd".into()],
        };
        assert!(choice.contains(&json!("sgd")));
        assert!(!choice.contains(&json!("adam")));
        assert!(Domain::Bool.contains(&json!(false)));
        assert!(!Domain::Bool.contains(&json!(0)));
    }

    #[test]
    fn the_objective_is_the_last_or_the_best_value_in_its_direction() {
        let curve = [(1, 3.0), (2, 1.0), (3, 2.0)];
        let mut o: Objective =
            serde_json::from_value(json!({"metric": "loss", "direction": "minimise"})).unwrap();
        assert_eq!(o.direction, Direction::Minimize);
        assert_eq!(o.value_of(&curve), Some(2.0));
        o.value = ObjectiveValue::Best;
        assert_eq!(o.value_of(&curve), Some(1.0));
        o.direction = Direction::Maximize;
        assert_eq!(o.value_of(&curve), Some(3.0));
        assert_eq!(o.value_of(&[]), None);
        assert!(o.better(2.0, 1.0));
        assert!(o.better(0.0, f64::NAN));
        assert!(!o.reached(0.9));
        o.goal = Some(0.9);
        assert!(o.reached(0.95));
        assert!(!o.reached(0.5));
        o.validate().unwrap();
        o.metric = " ".into();
        assert_eq!(field_of(o.validate()), "objective.metric");
    }

    #[test]
    fn algorithms_and_early_stopping_take_sensible_defaults() {
        let grid: Algorithm = serde_json::from_value(json!({"type": "grid"})).unwrap();
        assert_eq!(grid, Algorithm::Grid { points: 5 });
        let tpe: Algorithm = serde_json::from_value(json!({"type": "tpe"})).unwrap();
        assert_eq!(tpe, Algorithm::default());
        let asha: EarlyStopping = serde_json::from_value(json!({"type": "asha"})).unwrap();
        assert_eq!(asha, EarlyStopping::asha());
        let median: EarlyStopping = serde_json::from_value(json!({"type": "median"})).unwrap();
        assert_eq!(median, EarlyStopping::median());
        assert_eq!(
            field_of(Algorithm::Grid { points: 1 }.validate()),
            "algorithm.points"
        );
        assert_eq!(
            field_of(
                EarlyStopping::Asha {
                    min_resource: 1,
                    reduction_factor: 1,
                    min_early_stopping_rate: 0
                }
                .validate()
            ),
            "early_stopping.reduction_factor"
        );
    }
}
