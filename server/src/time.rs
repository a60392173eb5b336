//! Wall-clock time as the database stores it.

/// Now, in Unix seconds (resource samples and traffic buckets).
pub fn now_s() -> f64 {
    now_ms() as f64 / 1000.0
}

/// Now, in Unix milliseconds.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
