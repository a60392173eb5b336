//! PaddleBoard's routes beside its page: live updates of the charted jobs
//! (server-sent events) and exports, a chart as CSV and every chart as a zip.

use std::io::Write;

use app::error::AppError;
use app::models::board::BoardView;
use app::ports::Principal;
use axum::extract::{RawQuery, State};
use axum::response::Response;
use http::{header, HeaderValue};

use super::api_error::ApiError;
use super::caller::Caller;
use super::rest::metrics::csv_value;
use super::AppState;
use crate::storage::changes::Kind;

/// The query string's pairs, decoded, repeated keys kept.
fn pairs(query: Option<String>) -> Vec<(String, String)> {
    form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .into_owned()
        .collect()
}

fn all(pairs: &[(String, String)], key: &str) -> Vec<String> {
    pairs
        .iter()
        .filter(|(k, _)| k == key)
        .map(|(_, v)| v.clone())
        .collect()
}

/// `GET /events/metrics?job=a&job=b`: a message (the job's name) whenever
/// one of these jobs of the caller gets new points.
pub async fn events(
    State(state): State<AppState>,
    Caller(who): Caller,
    RawQuery(query): RawQuery,
) -> Response {
    let jobs = all(&pairs(query), "job");
    let local = state.services.metrics.subscribe();
    let account = who.me.account.id;
    let events = super::events::names_of(&state, Kind::Metrics, local, account, Some(jobs), |ev| {
        (ev.account_id, ev.job)
    });
    super::events::sse(events)
}

/// Rows `job,step,wall_time,value` of one tag of each job.
async fn csv_of(
    state: &AppState,
    who: &Principal,
    jobs: &[String],
    tag: &str,
) -> Result<String, ApiError> {
    let mut csv = String::from("job,step,wall_time,value\n");
    for job in jobs {
        let points = match state
            .services
            .metrics
            .points(&who.me.account, job, tag, None, None)
            .await
        {
            Ok(points) => points,
            Err(AppError::NotFound { .. }) => continue,
            Err(err) => return Err(err.into()),
        };
        for p in points {
            csv.push_str(&format!(
                "{job},{},{},{}\n",
                p.step,
                p.wall_time,
                csv_value(p.value)
            ));
        }
    }
    Ok(csv)
}

/// `body` as a download named `file`, of `content_type`.
pub(crate) fn attachment(
    body: impl Into<axum::body::Body>,
    content_type: &'static str,
    file: &str,
) -> Response {
    let mut response = Response::new(body.into());
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if let Ok(value) = HeaderValue::from_str(&format!("attachment; filename=\"{file}\"")) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    response
}

/// A file name without anything a file system or a header would mind.
fn file_safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `GET /paddleboard/export.csv?job=a&job=b&tag=loss`: one chart's points.
pub async fn export_csv(
    State(state): State<AppState>,
    Caller(who): Caller,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let pairs = pairs(query);
    let tag = all(&pairs, "tag").into_iter().next().ok_or_else(|| {
        ApiError(AppError::invalid(
            "tag",
            "Say which chart: ?tag=… (and the jobs: &job=…).",
        ))
    })?;
    let csv = csv_of(&state, &who, &all(&pairs, "job"), &tag).await?;
    Ok(attachment(
        csv,
        "text/csv; charset=utf-8",
        &format!("{}.csv", file_safe(&tag)),
    ))
}

/// `GET /paddleboard/export.zip?…`: every chart the page shows (its jobs,
/// its tag filter), one CSV per tag.
pub async fn export_zip(
    State(state): State<AppState>,
    Caller(who): Caller,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let pairs = pairs(query);
    let view = BoardView::from_params(
        |k| pairs.iter().find(|(a, _)| a == k).map(|(_, v)| v.clone()),
        |k| all(&pairs, k),
    );
    let filter = match view.tags.trim() {
        "" => None,
        p => Some(regex::Regex::new(p).map_err(|e| {
            ApiError(AppError::invalid(
                "tags",
                format!("The tag filter is not valid: {e}"),
            ))
        })?),
    };
    let mut tags = std::collections::BTreeSet::new();
    for job in &view.jobs {
        match state.services.metrics.tags(&who.me.account, job).await {
            Ok(list) => tags.extend(
                list.into_iter()
                    .map(|t| t.tag)
                    .filter(|t| filter.as_ref().is_none_or(|re| re.is_match(t))),
            ),
            Err(AppError::NotFound { .. }) => {}
            Err(err) => return Err(err.into()),
        }
    }
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    let zip_err = |err: zip::result::ZipError| {
        tracing::error!(error = %err, "writing a PaddleBoard export");
        ApiError(AppError::Internal)
    };
    for tag in &tags {
        let csv = csv_of(&state, &who, &view.jobs, tag).await?;
        zip.start_file(format!("{}.csv", file_safe(tag)), options)
            .map_err(zip_err)?;
        zip.write_all(csv.as_bytes())
            .map_err(|e| zip_err(zip::result::ZipError::Io(e)))?;
    }
    let bytes = zip.finish().map_err(zip_err)?.into_inner();
    Ok(attachment(bytes, "application/zip", "paddleboard.zip"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_keep_letters_digits_dots_and_dashes() {
        assert_eq!(file_safe("train/loss 1.5"), "train_loss_1.5");
    }
}
