use super::*;

fn rule(condition: AlertCondition) -> AlertRuleSpec {
    AlertRuleSpec {
        name: "loss-watch".into(),
        tag: "loss".into(),
        job: None,
        condition,
    }
}

fn field(spec: &AlertRuleSpec) -> Option<String> {
    match spec.validate() {
        Err(AppError::Invalid { field, .. }) => field,
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_threshold_is_crossed_only_strictly_past_it() {
    let above = AlertCondition::Above { threshold: 2.5 };
    assert!(above.crossed(2.6));
    assert!(!above.crossed(2.5));
    assert!(!above.crossed(f64::NAN));
    let below = AlertCondition::Below { threshold: 0.1 };
    assert!(below.crossed(0.05));
    assert!(!below.crossed(0.1));
    assert!(!AlertCondition::NotFinite.crossed(f64::NAN));
}

#[test]
fn a_rule_names_the_field_at_fault() {
    let mut spec = rule(AlertCondition::Above {
        threshold: f64::INFINITY,
    });
    assert_eq!(field(&spec).as_deref(), Some("condition.threshold"));
    spec.condition = AlertCondition::Silent { minutes: 0 };
    assert_eq!(field(&spec).as_deref(), Some("condition.minutes"));
    spec.condition = AlertCondition::NotFinite;
    spec.tag = " ".into();
    assert_eq!(field(&spec).as_deref(), Some("tag"));
    spec.tag = "loss".into();
    spec.name = "Bad Name".into();
    assert_eq!(field(&spec).as_deref(), Some("name"));
    spec.name = "ok".into();
    spec.job = Some("no spaces allowed".into());
    assert_eq!(field(&spec).as_deref(), Some("job"));
    spec.job = Some("train-1".into());
    assert!(spec.validate().is_ok());
}

#[test]
fn messages_say_what_fired_where() {
    let nan = rule(AlertCondition::NotFinite);
    assert_eq!(
        alert_message(&nan, Some(120), None),
        "loss is NaN or infinite at step 120"
    );
    assert_eq!(
        alert_message(&nan, Some(120), Some(f64::NEG_INFINITY)),
        "loss is NaN or infinite at step 120: −∞"
    );
    let above = rule(AlertCondition::Above { threshold: 2.5 });
    assert_eq!(
        alert_message(&above, Some(7), Some(3.25)),
        "loss is above 2.5 at step 7: 3.25"
    );
    let silent = rule(AlertCondition::Silent { minutes: 10 });
    assert_eq!(
        alert_message(&silent, Some(40), None),
        "loss has no new point for 10 min (last at step 40)"
    );
    assert_eq!(
        alert_message(&silent, None, None),
        "loss has had no point in 10 min"
    );
}

#[test]
fn the_form_makes_each_condition_and_refuses_a_bad_amount() {
    let form = |kind: &str, amount: &str| AlertRuleForm {
        name: "w".into(),
        tag: "loss".into(),
        job: String::new(),
        kind: kind.into(),
        amount: amount.into(),
    };
    assert_eq!(
        form("above", "2.5").to_spec().unwrap().condition,
        AlertCondition::Above { threshold: 2.5 }
    );
    assert_eq!(
        form("silent", "15").to_spec().unwrap().condition,
        AlertCondition::Silent { minutes: 15 }
    );
    assert_eq!(
        form("not_finite", "").to_spec().unwrap().condition,
        AlertCondition::NotFinite
    );
    assert!(matches!(
        form("below", "low").to_spec(),
        Err(AppError::Invalid { field: Some(f), .. }) if f == "condition.threshold"
    ));
    assert!(matches!(
        form("silent", "1.5").to_spec(),
        Err(AppError::Invalid { field: Some(f), .. }) if f == "condition.minutes"
    ));
}

#[test]
fn a_rule_reads_from_the_json_the_api_takes() {
    let spec: AlertRuleSpec = serde_json::from_value(serde_json::json!({
        "name": "diverged", "tag": "loss", "job": "train-1",
        "condition": {"kind": "above", "threshold": 10}
    }))
    .unwrap();
    assert_eq!(spec.condition, AlertCondition::Above { threshold: 10.0 });
    assert_eq!(spec.summary(), "loss is above 10 (job train-1)");
}

fn series(last_step: Option<i64>, last_value: Option<f64>, bad_step: Option<i64>) -> SeriesNow {
    SeriesNow {
        running: true,
        started_at: 0,
        last_step,
        last_value,
        updated_at: Some(1_000),
        bad_step,
    }
}

#[test]
fn a_threshold_fires_on_the_newest_value_and_clears_when_it_is_back() {
    let above = AlertCondition::Above { threshold: 2.0 };
    assert_eq!(
        judge(above, &series(Some(5), Some(3.0), None), 0, None, None),
        Verdict::Fire {
            step: Some(5),
            value: Some(3.0)
        }
    );
    assert_eq!(
        judge(
            above,
            &series(Some(6), Some(1.0), None),
            0,
            Some(Some(5)),
            Some(5)
        ),
        Verdict::Clear
    );
    assert_eq!(
        judge(above, &series(None, None, None), 0, None, None),
        Verdict::Clear
    );
}

#[test]
fn a_nan_anywhere_fires_once_and_clears_after_a_finite_point_past_it() {
    let c = AlertCondition::NotFinite;
    // A NaN mid-batch, the newest value finite again: told once.
    let mid = series(Some(10), Some(0.5), Some(7));
    assert_eq!(
        judge(c, &mid, 0, None, None),
        Verdict::Fire {
            step: Some(7),
            value: None
        }
    );
    assert_eq!(judge(c, &mid, 0, Some(Some(7)), Some(7)), Verdict::Clear);
    assert_eq!(judge(c, &mid, 0, None, Some(7)), Verdict::Keep);
    // Still NaN at the newest point: the open alert stays.
    let stuck = series(Some(12), Some(f64::NAN), Some(12));
    assert_eq!(judge(c, &stuck, 0, Some(Some(12)), Some(12)), Verdict::Keep);
    // A new NaN later is a new alert.
    assert_eq!(
        judge(c, &series(Some(20), Some(1.0), Some(18)), 0, None, Some(7)),
        Verdict::Fire {
            step: Some(18),
            value: None
        }
    );
}

#[test]
fn a_silence_counts_from_the_last_point_or_the_start_while_the_job_runs() {
    let c = AlertCondition::Silent { minutes: 2 };
    let s = series(Some(3), Some(1.0), None);
    assert_eq!(judge(c, &s, 1_000 + 119_999, None, None), Verdict::Clear);
    assert_eq!(
        judge(c, &s, 1_000 + 120_000, None, None),
        Verdict::Fire {
            step: Some(3),
            value: None
        }
    );
    let never = SeriesNow {
        updated_at: None,
        last_step: None,
        ..s
    };
    assert!(matches!(
        judge(c, &never, 120_000, None, None),
        Verdict::Fire { step: None, .. }
    ));
    let ended = SeriesNow {
        running: false,
        ..s
    };
    assert_eq!(
        judge(c, &ended, 10_000_000, Some(Some(3)), Some(3)),
        Verdict::Clear
    );
}

#[test]
fn an_alert_links_paddleboard_with_its_job_and_tag() {
    let a = Alert {
        id: 1,
        rule: "r".into(),
        job: "train 1".into(),
        tag: "train/loss".into(),
        step: Some(3),
        value: None,
        message: String::new(),
        raised_at: 0,
        resolved_at: None,
    };
    // `job` is the parameter PaddleBoard reads (repeated for more jobs).
    assert_eq!(
        a.board_href(),
        "/paddleboard?job=train%201&tags=train%2Floss"
    );
}
