//! Experiments' records on both databases: a trial's number is claimed
//! once (what keeps a restarted console or a second replica from running
//! a trial twice), trials read back with their experiment, and an ended
//! experiment or trial keeps its end.

use app::models::{ExperimentSpec, ExperimentStatus, TrialStatus, TrialValues};
use server::storage::experiments::{ExperimentStore, TrialUpdate};

use crate::common::TestDb;

fn spec(name: &str) -> ExperimentSpec {
    serde_json::from_value(serde_json::json!({
        "name": name,
        "template": "fit-a-line",
        "parameters": [{"name": "lr", "type": "float", "min": 0.001, "max": 0.1, "log": true}],
        "objective": {"metric": "loss", "direction": "minimise"},
        "seed": 7,
    }))
    .unwrap()
}

on_both_databases!(
    a_trial_is_claimed_once_and_reads_back_with_its_experiment,
    super::claims
);

async fn claims(db: TestDb) {
    let account = crate::common::account(&db.pool, "vision", "pc-vision").await;
    let me = crate::common::user_in(&db.pool, &account).await;
    let store = ExperimentStore::new(db.pool.clone());
    let id = store.insert(&me, &spec("lr-search")).await.unwrap();
    let taken = store.insert(&me, &spec("lr-search")).await.unwrap_err();
    assert_eq!(taken.field(), Some("name"), "{taken}");
    assert!(
        taken.to_string().starts_with("An experiment named"),
        "{taken}"
    );

    let values: TrialValues = [("lr".to_owned(), serde_json::json!(0.01))].into();
    assert!(store
        .claim_trial(id, 1, "lr-search-t1", &values)
        .await
        .unwrap());
    assert!(
        !store
            .claim_trial(id, 1, "lr-search-t1", &values)
            .await
            .unwrap(),
        "a number claimed twice"
    );
    assert!(store
        .claim_trial(id, 2, "lr-search-t2", &values)
        .await
        .unwrap());
    let running = TrialUpdate {
        status: Some(TrialStatus::Running),
        ..Default::default()
    };
    store.update_trial(id, 1, &running).await.unwrap();
    let done = TrialUpdate {
        status: Some(TrialStatus::Succeeded),
        objective: Some(0.25),
        step: Some(9),
        message: Some(String::new()),
    };
    store.update_trial(id, 1, &done).await.unwrap();
    // A late report of a trial that ended changes nothing.
    store.update_trial(id, 1, &running).await.unwrap();

    let stored = store.get(account.id, "lr-search").await.unwrap();
    let e = &stored.experiment;
    assert_eq!(e.status, ExperimentStatus::Running);
    assert_eq!(e.owner, me.email);
    assert_eq!(e.spec.seed, Some(7));
    let numbers: Vec<u32> = e.trials.iter().map(|t| t.number).collect();
    assert_eq!(numbers, [1, 2]);
    assert_eq!(e.trials[0].status, TrialStatus::Succeeded);
    assert_eq!(e.trials[0].objective, Some(0.25));
    assert_eq!(e.trials[0].step, Some(9));
    assert!(e.trials[0].ended_at.is_some());
    assert_eq!(e.trials[0].values, values);
    assert_eq!(e.trials[1].status, TrialStatus::Waiting);
    assert_eq!(e.best().map(|t| t.number), Some(1));

    assert_eq!(store.active().await.unwrap(), [id]);
    assert_eq!(
        store.creator(id).await.unwrap().unwrap().user_id,
        me.user_id
    );
    assert!(store
        .set_status(id, ExperimentStatus::Stopped, "Stopped.")
        .await
        .unwrap());
    assert!(
        !store
            .set_status(id, ExperimentStatus::Running, "")
            .await
            .unwrap(),
        "an ended experiment came back"
    );
    assert!(store.active().await.unwrap().is_empty());
    // Extending an ended experiment opens it again, with its new spec;
    // one still going is not reopened.
    let mut more = e.spec.clone();
    more.max_trials += 5;
    assert!(store.reopen(id, &more).await.unwrap());
    assert!(!store.reopen(id, &more).await.unwrap());
    let reopened = store.load(id).await.unwrap().experiment;
    assert_eq!(reopened.status, ExperimentStatus::Running);
    assert_eq!(reopened.spec.max_trials, e.spec.max_trials + 5);
    assert_eq!(reopened.ended_at, None);
    assert!(store
        .set_status(id, ExperimentStatus::Stopped, "Stopped.")
        .await
        .unwrap());
    let list = store.list(account.id).await.unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].experiment.trials.len(), 2);
    store.delete(id).await.unwrap();
    assert!(store.list(account.id).await.unwrap().is_empty());
}
