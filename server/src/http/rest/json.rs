//! JSON in and errors out the way the OpenAPI document says.
//!
//! [`JsonBody`] reads a request body as JSON Schema reads it: `3.0` is an
//! integer there (a whole number, whatever its spelling), and clients that
//! compute numbers as floats (JavaScript, Python's `json` with a float, a
//! schema-driven client) send it. serde refuses `3.0` for a `u32`, so a body
//! serde refuses is read again with whole floats made integers.
//!
//! [`json_errors`] turns the plain-text refusals axum writes itself (a path
//! segment that is not a number, a body over the limit, a wrong method) into
//! the `{"error": …}` body every other error has.

use app::error::AppError;
use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, Request};
use axum::response::{IntoResponse, Response};
use http::{header, HeaderMap, StatusCode};
use serde::de::DeserializeOwned;
use serde_json::{Number, Value};

use crate::http::api_error::ApiError;

/// A JSON request body, read into `T`; a refusal is an [`ApiError`] naming the field.
pub struct JsonBody<T>(pub T);

impl<S, T> FromRequest<S> for JsonBody<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        if !is_json(req.headers()) {
            return Err(ApiError(AppError::Invalid {
                field: None,
                message: "Send the body as JSON, with `Content-Type: application/json`.".into(),
            }));
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
            let message = rejection.body_text();
            ApiError(if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                AppError::TooLarge {
                    message: format!("The body is too large: {message}"),
                }
            } else {
                AppError::Invalid {
                    field: None,
                    message: format!("The body could not be read: {message}"),
                }
            })
        })?;
        parse(&bytes).map(JsonBody).map_err(ApiError)
    }
}

/// `T` from JSON text, taking whole floats where integers are wanted.
pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, AppError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let first = match serde_path_to_error::deserialize::<_, T>(&mut de) {
        Ok(value) => match de.end() {
            Ok(()) => return Ok(value),
            Err(trailing) => return Err(refusal(".", &trailing)),
        },
        Err(err) => err,
    };
    // Only a body that is valid JSON can be read again; a syntax error is
    // reported as the first reading found it.
    let Ok(value) = serde_json::from_slice::<Value>(bytes) else {
        return Err(refusal(&first.path().to_string(), first.inner()));
    };
    serde_path_to_error::deserialize::<_, T>(whole_numbers(value))
        .map_err(|err| refusal(&err.path().to_string(), err.inner()))
}

fn refusal(path: &str, err: &serde_json::Error) -> AppError {
    let detail = err.to_string();
    // serde names a missing key in its message, not in the path.
    let field = detail
        .split_once("missing field `")
        .and_then(|(_, rest)| rest.split_once('`'))
        .map(|(key, _)| {
            if matches!(path, "." | "?" | "") {
                key.to_owned()
            } else {
                format!("{path}.{key}")
            }
        })
        // `?` is serde_path_to_error's "before any key" (a syntax error).
        .or_else(|| (!matches!(path, "." | "?" | "")).then(|| path.to_owned()));
    let message = match &field {
        Some(field) if !detail.contains("missing field") => {
            format!("The JSON body could not be read: {field}: {detail}")
        }
        _ => format!("The JSON body could not be read: {detail}"),
    };
    AppError::Invalid { field, message }
}

/// Every float with no fraction that fits an integer, made that integer.
fn whole_numbers(value: Value) -> Value {
    match value {
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or(f64::NAN);
            // Past 2^53 a float no longer tells which integer was meant.
            let whole = if f.fract() != 0.0 || !f.is_finite() || f.abs() > 9_007_199_254_740_992.0 {
                None
            } else if f >= 0.0 {
                Some(Number::from(f as u64))
            } else {
                Some(Number::from(f as i64))
            };
            Value::Number(whole.unwrap_or(n))
        }
        Value::Array(items) => Value::Array(items.into_iter().map(whole_numbers).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, whole_numbers(v)))
                .collect(),
        ),
        other => other,
    }
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|mime| {
            let mime = mime.trim().to_ascii_lowercase();
            mime == "application/json"
                || (mime.starts_with("application/") && mime.ends_with("+json"))
        })
        .unwrap_or(false)
}

/// A client error axum answered in plain text, answered as JSON instead
/// (headers such as `Allow` kept).
pub async fn json_errors(response: Response) -> Response {
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !status.is_client_error() || is_json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    // axum's own refusals are a line or two; a larger body is not one of them.
    let text = axum::body::to_bytes(body, 4096)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_owned())
        .unwrap_or_default();
    let err = match status {
        StatusCode::NOT_FOUND => AppError::not_found("API route"),
        StatusCode::PAYLOAD_TOO_LARGE => AppError::TooLarge {
            message: format!("The body is too large: {text}"),
        },
        StatusCode::METHOD_NOT_ALLOWED => AppError::Invalid {
            field: None,
            message: "This route does not take that method; `Allow` lists those it takes.".into(),
        },
        _ => AppError::Invalid {
            field: None,
            message: if text.is_empty() {
                "The request could not be read.".into()
            } else {
                text
            },
        },
    };
    let fresh = ApiError(err).into_response();
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    let (_, body) = fresh.into_parts();
    Response::from_parts(parts, Body::new(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize, PartialEq)]
    struct Scale {
        replicas: u32,
        offset: i64,
        value: f64,
    }

    #[test]
    fn whole_floats_are_read_as_integers_and_fractions_are_refused() {
        let scale: Scale =
            parse(br#"{"replicas": 3.0, "offset": -2.0, "value": 1}"#).expect("whole floats");
        assert_eq!(
            scale,
            Scale {
                replicas: 3,
                offset: -2,
                value: 1.0
            }
        );
        let err = parse::<Scale>(br#"{"replicas": 2.5, "offset": 0, "value": 1}"#).unwrap_err();
        assert_eq!(err.field(), Some("replicas"));
    }

    #[test]
    fn an_integer_past_the_type_is_refused_not_clamped() {
        let err = parse::<Scale>(br#"{"replicas": 1, "offset": -9223372036854775809, "value": 1}"#)
            .unwrap_err();
        assert_eq!(err.field(), Some("offset"));
    }

    #[test]
    fn a_missing_key_and_a_syntax_error_are_named() {
        let err = parse::<Scale>(br#"{"replicas": 1, "value": 1}"#).unwrap_err();
        assert_eq!(err.field(), Some("offset"));
        let err = parse::<Scale>(br#"{"replicas": 1,"#).unwrap_err();
        assert_eq!(err.field(), None);
        assert!(err.to_string().contains("could not be read"), "{err}");
    }
}
