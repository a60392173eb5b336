//! `/api/v1/jobs/compare.csv`: runs side by side as CSV, what the compare
//! page's "CSV" link downloads.

use app::models::compare::CompareView;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::response::Response;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::http::api_error::{ApiError, ErrorBody};
use crate::http::board::attachment;
use crate::http::caller::Caller;
use crate::http::AppState;

/// Which runs, and whether only the columns that differ.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CompareParams {
    /// The runs' job names, comma-separated (1 to 100). Required; kept an
    /// `Option` so that leaving it out gets the same clear 400 as an
    /// empty list, naming `jobs`, rather than the query parser's message.
    /// The schema says what the handler accepts: at least one name (a
    /// character other than a comma or a space) and no room for a 101st.
    #[param(required = true, min_length = 1, max_length = 200, pattern = r"[^\s,]")]
    jobs: Option<String>,
    /// `1`: leave out the parameters and metrics every run has the same
    /// value of.
    diff: Option<String>,
}

/// Runs side by side, a run a row: `job,status,source,origin,created_at_ms`,
/// then `params.<name>` (template values, and what the program recorded as
/// a local or MLflow run) and `metrics.<tag>` (the value at the last step).
#[utoipa::path(
    get,
    path = "/api/v1/jobs/compare.csv",
    tag = "jobs",
    params(CompareParams),
    responses(
        (status = 200, description = "job,status,source,origin,created_at_ms,params.…,metrics.…", content_type = "text/csv"),
        (status = 400, description = "No runs, or more than 100, named in `field`", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "A run that is not a job of yours, named", body = ErrorBody),
    )
)]
pub async fn compare_csv(
    State(state): State<AppState>,
    Caller(who): Caller,
    params: Result<Query<CompareParams>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(params) = params?;
    let view = CompareView::from_params(|k| match k {
        "jobs" => params.jobs.clone().into_iter().collect(),
        "diff" => params.diff.clone().into_iter().collect(),
        _ => Vec::new(),
    });
    let comparison =
        app::use_cases::compare::side_by_side(&state.services, &who.me.account, &view.jobs).await?;
    Ok(attachment(
        comparison.to_csv(view.only_differences),
        "text/csv; charset=utf-8",
        "runs.csv",
    ))
}
