//! PaddleBoard: the jobs that have metrics, and the charts of chosen jobs.

use leptos::prelude::*;

use crate::error::AppError;
use crate::models::board::{Board, BoardQuery};
use crate::models::BoardJob;

#[cfg(feature = "ssr")]
use super::context::{principal, services};

/// The caller's jobs that have metrics, newest first.
#[server(prefix = "/api", endpoint = "board_jobs")]
pub async fn board_jobs() -> Result<Vec<BoardJob>, AppError> {
    services()?.metrics.jobs(&principal()?.me.account).await
}

/// One chart per tag (matching the filter) with one series per chosen job,
/// each an envelope at the chart's width over the (zoomed) x range.
#[server(prefix = "/api", endpoint = "board_charts")]
pub async fn board_charts(query: BoardQuery) -> Result<Board, AppError> {
    use crate::models::board::{BoardChart, BoardSeries, XAxis, CHART_WIDTH, MAX_CHARTS};
    use crate::models::{ChartRange, RangeQuery};

    let account = principal()?.me.account;
    let metrics = services()?.metrics;
    let (filter, filter_error) = match query.tags.trim() {
        "" => (None, None),
        pattern => match regex::RegexBuilder::new(pattern)
            .size_limit(1 << 20)
            .build()
        {
            Ok(re) => (Some(re), None),
            Err(err) => (
                None,
                Some(format!(
                    "The tag filter is not a valid regular expression: {err}"
                )),
            ),
        },
    };
    // Tag → the chosen jobs that have it, in the order the jobs were chosen.
    let mut by_tag: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for job in &query.jobs {
        let tags = match metrics.tags(&account, job).await {
            Ok(tags) => tags,
            // A job deleted since the link was made: leave it out.
            Err(AppError::NotFound { .. }) => continue,
            Err(err) => return Err(err),
        };
        for t in tags {
            if filter.as_ref().is_none_or(|re| re.is_match(&t.tag)) {
                by_tag.entry(t.tag).or_default().push(job.clone());
            }
        }
    }
    let matching_tags = by_tag.len();
    let width = CHART_WIDTH as usize;
    let mut charts = Vec::new();
    for (tag, jobs) in by_tag.into_iter().take(MAX_CHARTS) {
        let mut series = Vec::new();
        for job in jobs {
            let whole = ChartRange::Steps(RangeQuery {
                from: None,
                to: None,
                width,
            });
            let range = match (query.x, query.xmin, query.xmax) {
                (XAxis::Step, Some(a), Some(b)) => ChartRange::Steps(RangeQuery {
                    from: Some(a.floor() as i64),
                    to: Some(b.ceil() as i64),
                    width,
                }),
                (XAxis::Wall, Some(a), Some(b)) => ChartRange::WallTime {
                    from: a,
                    to: b,
                    width,
                },
                (XAxis::Relative, Some(a), Some(b)) => {
                    // Relative to the series' own start: learn it first.
                    let origin = metrics
                        .envelope(
                            &account,
                            &job,
                            &tag,
                            ChartRange::Steps(RangeQuery {
                                from: Some(0),
                                to: Some(-1),
                                width: 1,
                            }),
                        )
                        .await?
                        .origin
                        .unwrap_or(0.0);
                    ChartRange::WallTime {
                        from: origin + a,
                        to: origin + b,
                        width,
                    }
                }
                _ => whole,
            };
            let e = metrics.envelope(&account, &job, &tag, range).await?;
            series.push(BoardSeries::from_envelope(job, e));
        }
        charts.push(BoardChart { tag, series });
    }
    // The alerts raised on what is charted, marked at their steps.
    let tags: Vec<String> = charts.iter().map(|c| c.tag.clone()).collect();
    let raised = services()?
        .alerts
        .chart_alerts(&account, &query.jobs, &tags)
        .await?;
    for chart in &mut charts {
        for series in &mut chart.series {
            series.alerts = raised
                .iter()
                .filter(|a| a.job == series.job && a.tag == chart.tag)
                .filter_map(|a| {
                    Some(crate::models::board::AlertMark {
                        step: a.step?,
                        message: a.message.clone(),
                        open: a.is_open(),
                    })
                })
                .collect();
        }
    }
    Ok(Board {
        charts,
        matching_tags,
        filter_error,
    })
}
