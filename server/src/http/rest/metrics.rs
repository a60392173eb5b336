//! `/api/v1/jobs/{name}/metrics`: write a batch of points, list a job's
//! tags, read a series' envelope (or all its points as CSV).

use app::error::AppError;
use app::models::{
    AppendSummary, ChartRange, MetricBatch, MetricFileAck, MetricPoint, PluginTag, RangeQuery,
    SeriesEnvelope, TagSummary, MAX_WIDTH,
};
use axum::body::{Body, Bytes};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use http::{header, HeaderMap, HeaderValue, StatusCode};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::http::api_error::{ApiError, ErrorBody};
use crate::http::caller::{Caller, Writer};
use crate::http::AppState;
use crate::metric_files::shipped::{self, PLUGIN_TAGS_HEADER};

/// Largest request body the batch route reads (10,000 points with long tags).
pub const MAX_BATCH_BYTES: usize = 16 * 1024 * 1024;

/// Python's `json.dumps` writes NaN and ±Infinity as bare `NaN`, `Infinity`
/// and `-Infinity`, which JSON does not allow. Writers should not have to
/// care: outside strings, those tokens are quoted before parsing, and the
/// points' values accept the quoted forms.
pub fn quote_bare_specials(body: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    const TOKENS: [&[u8]; 3] = [b"-Infinity", b"Infinity", b"NaN"];
    let mut out: Option<Vec<u8>> = None;
    let (mut i, mut in_string, mut escaped) = (0, false, false);
    while i < body.len() {
        let b = body[i];
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else if b == b'"' {
            in_string = true;
        } else if let Some(token) = TOKENS.iter().find(|t| body[i..].starts_with(t)) {
            let out = out.get_or_insert_with(|| body[..i].to_vec());
            out.push(b'"');
            out.extend_from_slice(token);
            out.push(b'"');
            i += token.len();
            continue;
        }
        if let Some(out) = out.as_mut() {
            out.push(b);
        }
        i += 1;
    }
    match out {
        Some(out) => std::borrow::Cow::Owned(out),
        None => std::borrow::Cow::Borrowed(body),
    }
}

/// The batch wrapped: `{"points": [...]}`.
#[derive(Deserialize)]
struct Wrapped {
    points: Vec<MetricPoint>,
}

/// The batch as sent: an array of points, or `{"points": [...]}`. Chosen by
/// the first byte rather than by `#[serde(untagged)]`, which would copy the
/// whole body into an intermediate tree first (a third of a batch's cost).
fn parse_batch(text: &[u8]) -> Result<Vec<MetricPoint>, serde_json::Error> {
    let wrapped = text
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|b| *b == b'{');
    if wrapped {
        serde_json::from_slice::<Wrapped>(text).map(|w| w.points)
    } else {
        serde_json::from_slice::<Vec<MetricPoint>>(text)
    }
}

/// Stores a batch of points (at most 10,000) in one transaction, durable
/// when answered. A bad point rejects the whole batch, naming its index.
/// A step that repeats or goes back (a resumed job) replaces the series'
/// points from that step on.
#[utoipa::path(
    post,
    path = "/api/v1/jobs/{name}/metrics",
    tag = "metrics",
    params(("name" = String, Path, description = "The job's name")),
    request_body(content = MetricBatch, description = "`[{tag, step, value, wall_time}]`, 1 to 10,000 points; \
        `value` may be `\"NaN\"`, `\"Infinity\"`, `\"-Infinity\"`; `wall_time` in seconds, \
        default now"),
    responses(
        (status = 200, description = "Stored", body = AppendSummary),
        (status = 400, description = "A bad point, named in `field` as `[index].key`", body = ErrorBody),
        (status = 401, description = "No or a wrong key", body = ErrorBody),
        (status = 404, description = "No such job in this account", body = ErrorBody),
    )
)]
pub async fn append(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<AppendSummary>, ApiError> {
    let text = quote_bare_specials(&body);
    let points = parse_batch(&text).map_err(|err| {
        ApiError(AppError::Invalid {
            field: None,
            message: format!(
                "The body is not a JSON array of {{tag, step, value, wall_time}}: {err}"
            ),
        })
    })?;
    let summary = state
        .services
        .metrics
        .append(&who.me.account, &name, points)
        .await?;
    Ok(Json(summary))
}

/// Query of the metric-file route.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PieceParams {
    /// Where in the file the body starts (default 0): the `offset` of the
    /// file's last answer.
    offset: Option<u64>,
}

/// Stores the scalars of a piece of a TensorBoard (`*tfevents*`) or VisualDL
/// (`vdlrecords*`) file a replica writes where the console cannot read it
/// (inside a pod): the file's bytes from `offset`, decoded as the console
/// decodes a local job's files. The answer says where the next piece starts;
/// a record cut off at the end is sent again with the rest. The SDK's
/// `paddlecloud.ship` does this for every replica on Kubernetes.
#[utoipa::path(
    post,
    path = "/api/v1/jobs/{name}/metric-files/{file}",
    tag = "metrics",
    params(
        ("name" = String, Path, description = "The job's name"),
        ("file" = String, Path, description = "The file's path below the replica's directory; \
            may contain `/`, whose folders become the tags' run (`runs/train/loss`)"),
        PieceParams,
        ("paddlecloud-plugin-tags" = Option<String>, Header, description = "`plugin_tags` of \
            the file's last answer, as JSON"),
    ),
    request_body(content = Vec<u8>, content_type = "application/octet-stream"),
    responses(
        (status = 200, description = "Stored", body = MetricFileAck),
        (status = 400, description = "Not a metric file's path, a piece over 4 MiB, or bad plugin tags", body = ErrorBody),
        (status = 401, description = "No or a wrong key", body = ErrorBody),
        (status = 404, description = "No such job in this account", body = ErrorBody),
    )
)]
pub async fn ship_file(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path((name, file)): Path<(String, String)>,
    query: Result<Query<PieceParams>, QueryRejection>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<MetricFileAck>, ApiError> {
    let Query(query) = query?;
    let plugin_tags = plugin_tags(&headers)?;
    let ack = shipped::receive(
        &*state.services.metrics,
        &who.me.account,
        &name,
        &file,
        query.offset.unwrap_or(0),
        plugin_tags,
        &body,
    )
    .await?;
    Ok(Json(ack))
}

/// The `plugin_tags` a piece carries back from the file's last answer (none
/// on a file's first piece); a value that is not that JSON is refused.
fn plugin_tags(headers: &HeaderMap) -> Result<Vec<PluginTag>, AppError> {
    let Some(value) = headers.get(PLUGIN_TAGS_HEADER) else {
        return Ok(Vec::new());
    };
    let bad = |why: &dyn std::fmt::Display| {
        AppError::invalid(
            PLUGIN_TAGS_HEADER,
            format!("Send back the plugin_tags of the file's last answer, as JSON: {why}"),
        )
    };
    match value.to_str() {
        Err(err) => Err(bad(&err)),
        Ok(text) if text.trim().is_empty() => Ok(Vec::new()),
        Ok(text) => serde_json::from_str(text).map_err(|err| bad(&err)),
    }
}

/// The job's series: tag, number of points, last step.
#[utoipa::path(
    get,
    path = "/api/v1/jobs/{name}/metrics",
    tag = "metrics",
    params(("name" = String, Path, description = "The job's name")),
    responses(
        (status = 200, description = "The tags", body = Vec<TagSummary>),
        (status = 401, description = "No or a wrong key", body = ErrorBody),
        (status = 404, description = "No such job in this account", body = ErrorBody),
    )
)]
pub async fn tags(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path(name): Path<String>,
) -> Result<Json<Vec<TagSummary>>, ApiError> {
    Ok(Json(
        state.services.metrics.tags(&who.me.account, &name).await?,
    ))
}

/// Query of the series route.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SeriesParams {
    /// First step (inclusive).
    from: Option<i64>,
    /// Last step (inclusive).
    to: Option<i64>,
    /// Pixels across the chart (default 1,000): at most about twice as many
    /// points come back, keeping every bucket's minimum and maximum.
    #[param(minimum = 1, maximum = 10_000)]
    width: Option<usize>,
    /// `csv`: every point of the range as `step,wall_time,value` instead.
    format: Option<SeriesFormat>,
}

/// How a series comes back.
#[derive(Debug, Clone, Copy, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SeriesFormat {
    /// The chart's envelope (the default).
    Json,
    /// Every point, as `step,wall_time,value` lines.
    Csv,
}

/// One series over a step range: an envelope of at most ~2 × `width`
/// points that keeps every local minimum and maximum (all points when there
/// are few), or, with `format=csv`, every point.
#[utoipa::path(
    get,
    path = "/api/v1/jobs/{name}/metrics/{tag}",
    tag = "metrics",
    params(
        ("name" = String, Path, description = "The job's name"),
        ("tag" = String, Path, description = "The tag; may contain `/`"),
        SeriesParams,
    ),
    responses(
        (status = 200, description = "The envelope, or with `format=csv` every point as `step,wall_time,value` lines",
         content((SeriesEnvelope = "application/json"), (String = "text/csv"))),
        (status = 400, description = "A malformed parameter", body = ErrorBody),
        (status = 401, description = "No or a wrong key", body = ErrorBody),
        (status = 404, description = "No such job or tag in this account", body = ErrorBody),
    )
)]
pub async fn series(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path((name, tag)): Path<(String, String)>,
    query: Result<Query<SeriesParams>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(query) = query?;
    let metrics = &state.services.metrics;
    match query.format.unwrap_or(SeriesFormat::Json) {
        SeriesFormat::Json => {
            let width = query.width.unwrap_or(1000);
            if width == 0 || width > MAX_WIDTH {
                return Err(ApiError(AppError::invalid(
                    "width",
                    format!("width is the chart's pixels across: 1 to {MAX_WIDTH}."),
                )));
            }
            let range = RangeQuery {
                from: query.from,
                to: query.to,
                width,
            };
            let envelope = metrics
                .envelope(&who.me.account, &name, &tag, ChartRange::Steps(range))
                .await?;
            Ok(Json(envelope).into_response())
        }
        SeriesFormat::Csv => {
            let points = metrics
                .points(&who.me.account, &name, &tag, query.from, query.to)
                .await?;
            let mut csv = String::with_capacity(points.len() * 32 + 32);
            csv.push_str("step,wall_time,value\n");
            for p in points {
                csv.push_str(&format!(
                    "{},{},{}\n",
                    p.step,
                    p.wall_time,
                    csv_value(p.value)
                ));
            }
            let file = format!(
                "attachment; filename=\"{}-{}.csv\"",
                name,
                tag.replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "_")
            );
            let mut response = (StatusCode::OK, Body::from(csv)).into_response();
            let headers = response.headers_mut();
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/csv; charset=utf-8"),
            );
            if let Ok(value) = HeaderValue::from_str(&file) {
                headers.insert(header::CONTENT_DISPOSITION, value);
            }
            Ok(response)
        }
    }
}

/// A value as spreadsheets read it: `NaN`, `inf`, `-inf` spelled out.
pub use app::models::csv::number as csv_value;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_nan_and_infinity_from_python_are_quoted_outside_strings_only() {
        let body = br#"[{"tag":"NaN Infinity","step":1,"value":NaN},{"tag":"x\"NaN","step":2,"value":-Infinity},{"tag":"y","step":3,"value":Infinity}]"#;
        let fixed = quote_bare_specials(body);
        let text = std::str::from_utf8(&fixed).unwrap();
        assert_eq!(
            text,
            r#"[{"tag":"NaN Infinity","step":1,"value":"NaN"},{"tag":"x\"NaN","step":2,"value":"-Infinity"},{"tag":"y","step":3,"value":"Infinity"}]"#
        );
        let plain = br#"[{"tag":"a","step":1,"value":1.5}]"#;
        assert!(matches!(
            quote_bare_specials(plain),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
