//! Showing Unix-millisecond timestamps the same way on server and browser.

/// Formats Unix milliseconds as `2026-11-22 06:30 UTC`; the same string on
/// server and browser, so hydration never disagrees about a time.
pub fn format_utc(ms: i64) -> String {
    match time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000) {
        Ok(t) => format!(
            "{:04}-{:02}-{:02} {:02}:{:02} UTC",
            t.year(),
            u8::from(t.month()),
            t.day(),
            t.hour(),
            t.minute()
        ),
        Err(_) => "—".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_a_known_instant_in_utc() {
        assert_eq!(format_utc(1_795_300_200_000), "2026-11-21 22:30 UTC");
        assert_eq!(format_utc(0), "1970-01-01 00:00 UTC");
    }
}
