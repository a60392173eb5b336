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

/// The name "Run again" suggests for a new job like `name`: `fit` →
/// `fit-2`, `fit-2` → `fit-3`, shortened to stay a valid job name.
pub fn again_name(name: &str) -> String {
    let (stem, n) = match name.rsplit_once('-') {
        Some((stem, n)) if !stem.is_empty() && !n.starts_with('0') => match n.parse::<u32>() {
            Ok(n) if n < u32::MAX => (stem, n + 1),
            _ => (name, 2),
        },
        _ => (name, 2),
    };
    let suffix = format!("-{n}");
    let keep = MAX_JOB_NAME_LEN.saturating_sub(suffix.len());
    let stem: String = stem.chars().take(keep).collect();
    format!("{}{suffix}", stem.trim_end_matches('-'))
}

/// `<template>-<6 characters>`: a job name for a run that names none,
/// within the 50 characters a job name has. The suffix comes from the
/// clock's nanoseconds (a clash is a 409 like any taken name).
pub fn default_job_name(template: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    // Mixed so that runs a microsecond apart differ in every character.
    let mut x = (nanos as u64) ^ ((nanos >> 64) as u64);
    x = (x ^ (x >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let suffix: String = (0..6)
        .map(|i| DIGITS[((x >> (i * 6)) % 36) as usize] as char)
        .collect();
    let stem: String = template.chars().take(50 - 7).collect();
    format!("{}-{suffix}", stem.trim_end_matches('-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_a_job_again_suggests_the_next_number_within_the_name_limit() {
        assert_eq!(again_name("fit"), "fit-2");
        assert_eq!(again_name("fit-2"), "fit-3");
        assert_eq!(again_name("fit-09"), "fit-09-2");
        assert_eq!(again_name("run-2026"), "run-2027");
        let long = format!("a{}", "b".repeat(49));
        let again = again_name(&long);
        assert_eq!(again.len(), MAX_JOB_NAME_LEN);
        assert!(again.ends_with("-2"));
        assert!(validate_job_name(&again).is_ok());
        assert!(validate_job_name(&again_name(&format!("{}-x", "a".repeat(47)))).is_ok());
    }

    #[test]
    fn a_default_job_name_is_a_valid_job_name_even_for_the_longest_template() {
        for template in ["curve", &"a".repeat(50)] {
            let name = default_job_name(template);
            validate_job_name(&name).unwrap();
            assert!(
                name.starts_with(&template[..template.len().min(43)]),
                "{name}"
            );
        }
        assert_ne!(default_job_name("x"), default_job_name("x"));
    }
}
