//! Errors from the Kubernetes API as users read them: the API server's own
//! message for what it refused, "unreachable" when it does not answer.

use app::error::AppError;

/// Maps a kube-rs error; `doing` says what the console was doing.
pub fn from_kube(doing: &str, err: kube::Error) -> AppError {
    match err {
        kube::Error::Api(status) => {
            let message = format!("Kubernetes refused to {doing}: {}", status.message);
            match status.code {
                400 | 422 => AppError::Invalid {
                    field: None,
                    message,
                },
                401 | 403 => AppError::forbidden(format!(
                    "{message} (the console's Kubernetes credentials lack the permission)."
                )),
                404 => AppError::not_found(format!("The Kubernetes object to {doing}")),
                409 => AppError::Conflict {
                    field: None,
                    message,
                },
                code if code >= 500 => {
                    tracing::warn!(code, message = %status.message, "Kubernetes API error");
                    AppError::Unavailable {
                        message: format!(
                            "The Kubernetes API failed to {doing}: {}",
                            status.message
                        ),
                    }
                }
                _ => AppError::Invalid {
                    field: None,
                    message,
                },
            }
        }
        other => {
            tracing::warn!(error = %other, doing, "Kubernetes API unreachable");
            AppError::Unavailable {
                message: format!(
                    "The Kubernetes cluster is unreachable, so the console could not {doing}: {other}."
                ),
            }
        }
    }
}

/// Whether the error is the API server saying "no such object".
pub fn is_not_found(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == 404)
}

/// Whether the error is the API server saying "it exists already".
pub fn is_conflict(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == 409)
}
