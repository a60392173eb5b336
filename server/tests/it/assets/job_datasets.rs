//! Jobs read datasets: their own and shared ones, refused when unreadable.

use super::*;

/// A job names datasets (its own, and one shared with it) and reads their
/// files; a dataset it cannot read is refused at submission.
pub(super) async fn a_job_reads_its_datasets(site: &Site) {
    let ann = key_for(site, "jobs-ann").await;
    let bob = key_for(site, "jobs-bob").await;
    create(site, Some(&ann), "datasets", "digits").await;
    upload(
        site,
        Some(&ann),
        "/api/v1/datasets/jobs-ann/digits",
        "train.txt",
        b"line one\nline two\n",
    )
    .await;
    upload(
        site,
        Some(&ann),
        "/api/v1/datasets/jobs-ann/digits",
        "odd [1]~.txt",
        b"odd name\n",
    )
    .await;
    create(site, Some(&bob), "datasets", "corpus").await;
    upload(
        site,
        Some(&bob),
        "/api/v1/datasets/jobs-bob/corpus",
        "words/a.txt",
        b"shared words\n",
    )
    .await;
    create(site, Some(&bob), "datasets", "secret").await;
    let share = call(
        site,
        Method::POST,
        "/api/v1/datasets/jobs-bob/corpus/shares",
        Some(&bob),
        Some(json!({"account": "jobs-ann"})),
    )
    .await;
    assert_eq!(share.status, StatusCode::CREATED);

    let script = "cat \"$PADDLE_DATASET_DIR/train.txt\" \"$PADDLE_DATASET_DIR/odd [1]~.txt\" \
                  \"$PADDLE_DATASET_DIR_CORPUS/words/a.txt\"";
    let made = call(
        site,
        Method::POST,
        "/api/v1/jobs",
        Some(&ann),
        Some(job_spec("reader", script, &["digits", "jobs-bob/corpus"])),
    )
    .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());
    wait_for_job(site, &ann, "reader", "succeeded").await;
    let log = get(site, "/api/v1/jobs/reader/pods/trainer-0/log", Some(&ann)).await;
    assert_eq!(log.text(), "line one\nline two\nodd name\nshared words\n");

    for (datasets, shown) in [
        (&["jobs-bob/secret"][..], "jobs-bob/secret"),
        (&["nope"][..], "nope"),
        (&["digits", "jobs-x/y"][..], "jobs-x/y"),
    ] {
        let refused = call(
            site,
            Method::POST,
            "/api/v1/jobs",
            Some(&ann),
            Some(job_spec("refused", "true", datasets)),
        )
        .await;
        assert_eq!(
            refused.status,
            StatusCode::BAD_REQUEST,
            "{datasets:?}: {}",
            refused.text()
        );
        let (_, field, message) = refused.error();
        assert_eq!(field.as_deref(), Some("datasets"));
        assert!(message.contains(shown), "{message}");
        assert_eq!(
            get(site, "/api/v1/jobs/refused", Some(&ann)).await.status,
            StatusCode::NOT_FOUND
        );
    }
    let bad = call(
        site,
        Method::POST,
        "/api/v1/jobs",
        Some(&ann),
        Some(job_spec("refused", "true", &["../etc"])),
    )
    .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
}

async fn a_job_reads_datasets_from_local_storage(db: TestDb) {
    let site = local_site(db, 1 << 30).await;
    a_job_reads_its_datasets(&site).await;
}
on_both_databases!(
    a_job_reads_datasets_from_local_storage,
    super::a_job_reads_datasets_from_local_storage
);
