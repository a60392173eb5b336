use super::*;

fn job(name: &str) -> NotifySubject {
    NotifySubject::Job { name: name.into() }
}

fn subscription(subject: NotifySubject, events: Vec<NotifyEvent>) -> Subscription {
    Subscription {
        id: 1,
        spec: SubscriptionSpec {
            subject,
            events,
            channel: Channel::Email,
        },
        secret: None,
        created_at: 1_000,
    }
}

fn notice(subject: NotifySubject, event: NotifyEvent, at: i64) -> Notice {
    Notice {
        account: "ann".into(),
        subject,
        event,
        message: "exit code 1".into(),
        at,
    }
}

#[test]
fn a_subscription_wants_only_its_subjects_chosen_events_after_it_was_made() {
    let s = subscription(job("train"), vec![NotifyEvent::Failed]);
    assert!(s.wants(&notice(job("train"), NotifyEvent::Failed, 2_000)));
    assert!(!s.wants(&notice(job("train"), NotifyEvent::Succeeded, 2_000)));
    assert!(!s.wants(&notice(job("other"), NotifyEvent::Failed, 2_000)));
    assert!(!s.wants(&notice(job("train"), NotifyEvent::Failed, 999)));
    let pipeline = NotifySubject::Pipeline {
        name: "train".into(),
    };
    assert!(!s.wants(&notice(pipeline.clone(), NotifyEvent::Failed, 2_000)));
    let all = subscription(NotifySubject::Account, vec![NotifyEvent::Failed]);
    assert!(all.wants(&notice(pipeline, NotifyEvent::Failed, 2_000)));
    assert!(all.wants(&notice(job("any"), NotifyEvent::Failed, 2_000)));
}

#[test]
fn a_spec_without_events_or_with_one_its_subject_cannot_have_is_refused() {
    let mut spec = subscription(job("train"), vec![]).spec;
    let field = |r: Result<(), AppError>| match r {
        Err(AppError::Invalid { field, .. }) => field,
        other => panic!("{other:?}"),
    };
    assert_eq!(field(spec.validate()).as_deref(), Some("events"));
    spec.events = vec![NotifyEvent::OverQuota];
    assert_eq!(field(spec.validate()).as_deref(), Some("events"));
    spec.subject = NotifySubject::Serving { name: "svc".into() };
    spec.events = vec![NotifyEvent::Succeeded];
    assert_eq!(field(spec.validate()).as_deref(), Some("events"));
    spec.events = vec![NotifyEvent::Failed];
    assert!(spec.validate().is_ok());
}

#[test]
fn a_webhook_url_must_be_absolute_http_with_a_host() {
    let check = |url: &str| {
        Channel::Webhook {
            url: url.into(),
            format: WebhookFormat::Json,
        }
        .validate()
        .is_ok()
    };
    assert!(check("https://hooks.example.com/T1/B2"));
    assert!(check("http://127.0.0.1:8080/hook"));
    assert!(!check("ftp://example.com/"));
    assert!(!check("https:///path"));
    assert!(!check("http://:80/"));
    assert!(!check("https://exa mple.com/"));
    assert!(!check("https://example.com/\n"));
    assert!(!check(&format!(
        "https://example.com/{}",
        "a".repeat(MAX_URL)
    )));
}

#[test]
fn retries_back_off_four_times_longer_and_stop_after_the_last_attempt() {
    assert_eq!(retry_at(0, 1, 30_000), Some(30_000));
    assert_eq!(retry_at(0, 2, 30_000), Some(120_000));
    assert_eq!(retry_at(0, 5, 30_000), Some(7_680_000));
    assert_eq!(retry_at(0, MAX_ATTEMPTS, 30_000), None);
}

#[test]
fn a_webhook_body_names_the_event_and_links_the_subjects_page() {
    let n = notice(job("train 1"), NotifyEvent::Failed, 1_764_000_000_000);
    let body = n.webhook_json("http://console.test/");
    assert_eq!(body["type"], "job.failed");
    assert_eq!(body["timestamp"], "2025-11-24T16:00:00.000Z");
    assert_eq!(body["data"]["url"], "http://console.test/jobs/train%201");
    assert_eq!(body["data"]["message"], "exit code 1");
    let slack = n.slack_json("http://console.test");
    assert_eq!(
        slack["text"],
        "PaddleCloud: <http://console.test/jobs/train%201|job train 1> in ann failed: exit code 1"
    );
}

#[test]
fn slack_text_escapes_what_its_markup_reserves() {
    let mut n = notice(job("x"), NotifyEvent::Failed, 0);
    n.message = "a <b> & c".into();
    let text = n.slack_json("http://c")["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(text.ends_with("a &lt;b&gt; &amp; c"), "{text}");
}

#[test]
fn the_form_makes_a_spec_from_ticked_events_and_the_chosen_channel() {
    let form = SubscriptionForm {
        kind: "pipeline".into(),
        name: " nightly ".into(),
        on_failed: Some("on".into()),
        on_over_quota: Some("on".into()),
        channel: "slack".into(),
        url: "https://hooks.slack.test/x".into(),
        ..Default::default()
    };
    let spec = form.to_spec().unwrap();
    assert_eq!(
        spec.subject,
        NotifySubject::Pipeline {
            name: "nightly".into()
        }
    );
    assert_eq!(
        spec.events,
        vec![NotifyEvent::Failed, NotifyEvent::OverQuota]
    );
    assert_eq!(
        spec.channel,
        Channel::Webhook {
            url: "https://hooks.slack.test/x".into(),
            format: WebhookFormat::Slack
        }
    );
    let unnamed = SubscriptionForm {
        kind: "job".into(),
        channel: "email".into(),
        on_failed: Some("on".into()),
        ..Default::default()
    };
    assert!(matches!(
        unnamed.to_spec(),
        Err(AppError::Invalid { field: Some(f), .. }) if f == "subject.name"
    ));
}

#[test]
fn a_subscription_reads_back_from_the_json_the_api_takes() {
    let json = serde_json::json!({
        "subject": {"kind": "account"},
        "events": ["failed", "over_quota"],
        "channel": {"kind": "webhook", "url": "https://x.test/h"}
    });
    let spec: SubscriptionSpec = serde_json::from_value(json).unwrap();
    assert_eq!(spec.subject, NotifySubject::Account);
    assert_eq!(
        spec.channel,
        Channel::Webhook {
            url: "https://x.test/h".into(),
            format: WebhookFormat::Json
        }
    );
    assert!(spec.validate().is_ok());
}

#[test]
fn a_test_notice_says_it_is_a_test_of_what_is_followed() {
    let mut n = notice(NotifySubject::Account, NotifyEvent::Test, 0);
    n.message = "a test ann asked for".into();
    assert_eq!(
        n.headline(),
        "A test of following everything in the account in ann (a test ann asked for)"
    );
    assert_eq!(n.kind(), "account.test");
}

#[test]
fn an_empty_or_overlong_name_is_refused_on_the_subjects_name() {
    let mut spec = subscription(job(" "), vec![NotifyEvent::Failed]).spec;
    let field = |s: &SubscriptionSpec| match s.validate() {
        Err(AppError::Invalid { field, .. }) => field,
        other => panic!("{other:?}"),
    };
    assert_eq!(field(&spec).as_deref(), Some("subject.name"));
    spec.subject = job(&"x".repeat(MAX_SUBJECT_NAME + 1));
    assert_eq!(field(&spec).as_deref(), Some("subject.name"));
    spec.subject = job("a\u{7}b");
    assert_eq!(field(&spec).as_deref(), Some("subject.name"));
}
