//! Comparing runs: any jobs of the account side by side, their parameters
//! (template values, and what their programs recorded as local or MLflow
//! runs), final metric values and the chosen tags' curves. The compare page
//! and the CSV export both call [`compare_runs`].

use std::collections::BTreeMap;

use futures_util::future::try_join3;

use crate::error::AppError;
use crate::models::board::{BoardChart, BoardSeries, JsonF64, PLOT_WIDTH};
use crate::models::compare::{
    check_jobs, rows, CompareQuery, ComparedRun, Comparison, FinalValue, MAX_OVERLAID,
};
use crate::models::{origin_of, Account, ChartRange, RangeQuery};
use crate::ports::Services;

/// The runs `query` names, side by side, with the chosen tags' curves.
/// Every run must be a job of `account` (another account's is "not
/// found", named); `query.tags` are overlaid (those no run has are left
/// out), or, when none is asked for, the tag most of the runs have.
pub async fn compare_runs(
    services: &Services,
    account: &Account,
    query: &CompareQuery,
) -> Result<Comparison, AppError> {
    let mut comparison = side_by_side(services, account, &query.jobs).await?;
    for tag in overlaid(query, &comparison.metrics) {
        let having: Vec<String> = query
            .jobs
            .iter()
            .enumerate()
            .filter(|(i, _)| {
                comparison
                    .metrics
                    .iter()
                    .any(|m| m.name == tag && m.values[*i].is_some())
            })
            .map(|(_, name)| name.clone())
            .collect();
        // Every run's envelope at the plot area's width: a bucket a pixel
        // column, so no more points than the chart can show.
        let whole = ChartRange::Steps(RangeQuery {
            from: None,
            to: None,
            width: PLOT_WIDTH as usize,
        });
        let envelopes = services
            .metrics
            .envelopes(account, &having, &tag, whole)
            .await?;
        let series = having
            .into_iter()
            .zip(envelopes)
            .map(|(name, e)| BoardSeries::from_envelope(name, e))
            .collect();
        comparison.charts.push(BoardChart { tag, series });
    }
    Ok(comparison)
}

/// The runs `jobs` names side by side, without curves: what the CSV holds.
/// Every run must be a job of `account` (another account's is "not
/// found", named).
pub async fn side_by_side(
    services: &Services,
    account: &Account,
    jobs: &[String],
) -> Result<Comparison, AppError> {
    check_jobs(jobs)?;
    // Every run's record, tags and recorded parameters: a query per kind
    // for all the runs (a hundred runs were five hundred small queries,
    // which waited on the database far more than they worked).
    let (found, tags, mut params) = try_join3(
        services.cluster.jobs_named(account, jobs),
        services.metrics.tags_of(account, jobs),
        services.run_params.params(account, jobs),
    )
    .await?;
    let mut runs = Vec::with_capacity(jobs.len());
    let mut finals: Vec<BTreeMap<String, FinalValue>> = Vec::with_capacity(jobs.len());
    for ((job, tags), recorded) in found.into_iter().zip(tags).zip(params.iter_mut()) {
        runs.push(ComparedRun {
            origin: origin_of(&job),
            name: job.name,
            status: job.status,
            source: job.source,
            created_at: job.created_at,
        });
        // What a program recorded, then the template's values over it:
        // those the console checked and ran with.
        if let Some(t) = job.spec.template {
            recorded.extend(t.values.iter().map(|(k, v)| (k.clone(), v.to_text())));
        }
        finals.push(
            tags.into_iter()
                .filter_map(|t| {
                    let step = t.last_step?;
                    let value = JsonF64(t.last_value.unwrap_or(f64::NAN));
                    Some((t.tag, FinalValue { step, value }))
                })
                .collect(),
        );
    }
    Ok(Comparison {
        runs,
        params: rows(&params),
        metrics: rows(&finals),
        charts: Vec::new(),
    })
}

/// The tags to overlay: those asked for that some run has, else the one
/// most runs have (the first by name among equals).
fn overlaid(
    query: &CompareQuery,
    metrics: &[crate::models::compare::CompareRow<FinalValue>],
) -> Vec<String> {
    let has = |tag: &str| metrics.iter().any(|m| m.name == tag);
    let asked: Vec<String> = query
        .tags
        .iter()
        .filter(|t| has(t))
        .take(MAX_OVERLAID)
        .cloned()
        .collect();
    if !asked.is_empty() {
        return asked;
    }
    let mut best: Option<(&str, usize)> = None;
    for m in metrics {
        let n = m.values.iter().filter(|v| v.is_some()).count();
        if best.is_none_or(|(_, most)| n > most) {
            best = Some((&m.name, n));
        }
    }
    best.map(|(tag, _)| vec![tag.to_owned()])
        .unwrap_or_default()
}
