//! Files in and out: the `Range` a download asks for and the answer to it
//! (200, 206 or 416), a file's headers and content type, and a request body
//! as a stream.

use app::error::AppError;
use app::models::AssetRef;
use app::ports::{ByteRange, ByteStream, Slot, Viewer};
use axum::body::Body;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use futures_util::TryStreamExt;
use http::{header, HeaderMap, HeaderValue, StatusCode};

use crate::http::api_error::ApiError;

/// What part of a file a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wanted {
    /// All of it.
    All,
    /// `bytes=a-b` or `bytes=a-`.
    From(ByteRange),
    /// `bytes=-n`: the last `n` bytes.
    Last(u64),
}

/// The `Range` header: one range, as download managers resume. Anything
/// else (several ranges, another unit, nonsense) is ignored and the whole
/// file sent, as HTTP allows.
fn range_of(headers: &HeaderMap) -> Wanted {
    let Some(spec) = headers
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().strip_prefix("bytes="))
    else {
        return Wanted::All;
    };
    let Some((a, b)) = spec.split_once('-') else {
        return Wanted::All;
    };
    let (a, b) = (a.trim(), b.trim());
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
    match (a.is_empty(), b.is_empty()) {
        (true, false) if digits(b) => b.parse().map_or(Wanted::All, Wanted::Last),
        (false, true) if digits(a) => a.parse().map_or(Wanted::All, |start| {
            Wanted::From(ByteRange { start, end: None })
        }),
        (false, false) if digits(a) && digits(b) => match (a.parse::<u64>(), b.parse::<u64>()) {
            (Ok(start), Ok(end)) if start <= end => Wanted::From(ByteRange {
                start,
                end: Some(end),
            }),
            _ => Wanted::All,
        },
        _ => Wanted::All,
    }
}

/// 416: the range asked for is outside the file's `size` bytes.
fn unsatisfiable(size: u64) -> Response {
    let err = AppError::invalid(
        "range",
        format!("The file has {size} bytes; that range is outside it."),
    );
    let mut response = ApiError(err).into_response();
    *response.status_mut() = StatusCode::RANGE_NOT_SATISFIABLE;
    if let Ok(v) = HeaderValue::from_str(&format!("bytes */{size}")) {
        response.headers_mut().insert(header::CONTENT_RANGE, v);
    }
    response
}

/// A file as the request's `Range` asks for it: whole (200), part (206), or
/// 416 when the range is outside it.
pub(super) async fn answer_file(
    assets: &std::sync::Arc<dyn app::ports::Assets>,
    viewer: &Viewer,
    r: &AssetRef,
    slot: Slot,
    path: &str,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    let size_of = || async {
        Ok::<_, ApiError>(
            assets
                .open_file(viewer, r, slot, path, None)
                .await?
                .entry
                .size,
        )
    };
    let range = match range_of(headers) {
        Wanted::All => None,
        Wanted::From(range) => Some(range),
        Wanted::Last(n) => {
            let size = size_of().await?;
            if n == 0 || size == 0 {
                return Ok(unsatisfiable(size));
            }
            Some(ByteRange {
                start: size.saturating_sub(n),
                end: None,
            })
        }
    };
    match assets.open_file(viewer, r, slot, path, range).await {
        Ok(file) => {
            let total = Some(file.entry.size);
            Ok(file_response(file, total, true))
        }
        Err(AppError::Invalid {
            field: Some(field), ..
        }) if field == "range" => Ok(unsatisfiable(size_of().await?)),
        Err(err) => Err(err.into()),
    }
}

/// A file's answer: streamed, with its length, type and (for a range) 206.
fn file_response(file: app::ports::OpenFile, total: Option<u64>, attachment: bool) -> Response {
    let name = file.entry.name().to_owned();
    let mime = mime_of(&name);
    let mut response = Body::from_stream(file.body).into_response();
    let size = file.entry.size;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(mime));
    headers.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-cache"),
    );
    // Users' files: the type is from the name, never guessed from the bytes.
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    match file.range {
        Some((a, b)) => {
            *response.status_mut() = StatusCode::PARTIAL_CONTENT;
            let headers = response.headers_mut();
            if let Ok(v) =
                HeaderValue::from_str(&format!("bytes {a}-{b}/{}", total.unwrap_or(size)))
            {
                headers.insert(header::CONTENT_RANGE, v);
            }
            headers.insert(header::CONTENT_LENGTH, HeaderValue::from(b - a + 1));
        }
        None => {
            headers.insert(header::CONTENT_LENGTH, HeaderValue::from(size));
        }
    }
    if attachment {
        let ascii: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_graphic() && c != '"' && c != '\\' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let encoded: String = form_urlencoded::byte_serialize(name.as_bytes()).collect();
        if let Ok(v) = HeaderValue::from_str(&format!(
            "attachment; filename=\"{ascii}\"; filename*=UTF-8''{}",
            encoded.replace('+', "%20")
        )) {
            response
                .headers_mut()
                .insert(header::CONTENT_DISPOSITION, v);
        }
    }
    response
}

/// The content type a browser needs to show a preview (images, text).
fn mime_of(name: &str) -> &'static str {
    let ext = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "txt" | "md" | "log" | "py" | "yaml" | "yml" | "toml" | "cfg" | "ini" => {
            "text/plain; charset=utf-8"
        }
        "csv" | "tsv" => "text/csv; charset=utf-8",
        "json" | "jsonl" => "application/json",
        "zip" => "application/zip",
        "gz" | "tgz" => "application/gzip",
        _ => "application/octet-stream",
    }
}

/// The request body as a stream of chunks (never collected whole).
pub(super) fn body_stream(request: Request) -> ByteStream {
    Box::pin(
        request
            .into_body()
            .into_data_stream()
            .map_err(std::io::Error::other),
    )
}
