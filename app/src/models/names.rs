//! The names workloads go by. A job's name (and a serving instance's, a
//! notebook's, a pipeline's, a template's, an environment's) becomes part of
//! pod, service and process names, so every one of them follows one rule;
//! it lives here, apart from the types, so that each of them can use it
//! without using the others.

use crate::error::AppError;

/// Longest job name: it becomes part of pod and service names on the cluster.
pub const MAX_JOB_NAME_LEN: usize = 50;

/// Job names appear in pod and service names, so they are DNS-1123 labels.
pub fn validate_job_name(name: &str) -> Result<(), AppError> {
    let bad = |msg: &str| Err(AppError::invalid("name", msg));
    if name.is_empty() {
        return bad("Give the job a name.");
    }
    if name.len() > MAX_JOB_NAME_LEN {
        return bad("A job name has at most 50 characters.");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return bad("A job name has only lower-case letters, digits and '-'.");
    }
    if !name.as_bytes()[0].is_ascii_lowercase() || name.ends_with('-') {
        return bad("A job name starts with a letter and does not end with '-'.");
    }
    Ok(())
}
