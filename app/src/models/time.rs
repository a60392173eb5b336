//! Showing Unix-millisecond timestamps the same way on server and browser.

/// Unix milliseconds as a UTC date-time (`None` out of range).
fn utc(ms: i64) -> Option<time::OffsetDateTime> {
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000).ok()
}

/// `2026-11-22`.
fn ymd(t: time::OffsetDateTime) -> String {
    format!("{:04}-{:02}-{:02}", t.year(), u8::from(t.month()), t.day())
}

/// `06:30`, or `06:30:05` with `seconds`.
fn clock(t: time::OffsetDateTime, seconds: bool) -> String {
    if seconds {
        format!("{:02}:{:02}:{:02}", t.hour(), t.minute(), t.second())
    } else {
        format!("{:02}:{:02}", t.hour(), t.minute())
    }
}

/// One day in milliseconds (a `to` date of a query includes its whole day).
pub const DAY_MS: i64 = 24 * 3600 * 1000;

/// Formats Unix milliseconds as `2026-11-22 06:30 UTC`; the same string on
/// server and browser, so hydration never disagrees about a time.
pub fn format_utc(ms: i64) -> String {
    // One format! (the job table writes one per row).
    utc(ms).map_or_else(
        || "—".to_owned(),
        |t| {
            format!(
                "{:04}-{:02}-{:02} {:02}:{:02} UTC",
                t.year(),
                u8::from(t.month()),
                t.day(),
                t.hour(),
                t.minute()
            )
        },
    )
}

/// Formats Unix milliseconds as `2026-11-22 06:30:05 UTC`: where the order
/// of events a second apart matters (the audit log).
pub fn format_utc_seconds(ms: i64) -> String {
    utc(ms).map_or_else(
        || "—".to_owned(),
        |t| format!("{} {} UTC", ymd(t), clock(t, true)),
    )
}

/// Unix milliseconds as RFC 3339 in UTC, `2026-11-22T06:30:05.123Z`: what
/// machines read (a webhook's `timestamp`).
pub fn format_rfc3339(ms: i64) -> String {
    utc(ms).map_or_else(String::new, |t| {
        format!("{}T{}.{:03}Z", ymd(t), clock(t, true), t.millisecond())
    })
}

/// A time range of Unix milliseconds as a chart's range bar shows it: the
/// date once when both ends fall on the same day, and seconds when the range
/// is shorter than an hour (a zoomed-in run of a few minutes would otherwise
/// read `06:30 – 06:30`).
pub fn format_range(from_ms: i64, to_ms: i64) -> String {
    let (Some(a), Some(b)) = (utc(from_ms), utc(to_ms)) else {
        return "—".to_owned();
    };
    let seconds = (to_ms - from_ms).abs() < 3_600_000;
    if a.date() == b.date() {
        format!(
            "{} {} – {} UTC",
            ymd(a),
            clock(a, seconds),
            clock(b, seconds)
        )
    } else {
        format!(
            "{} {} – {} {} UTC",
            ymd(a),
            clock(a, seconds),
            ymd(b),
            clock(b, seconds)
        )
    }
}

/// The UTC date of Unix milliseconds, `2026-11-22`.
pub fn format_date(ms: i64) -> String {
    utc(ms).map_or_else(|| "—".to_owned(), ymd)
}

/// A duration in milliseconds the way a job table shows age: `45s`, `17m`,
/// `3h12m`, `5d`.
pub fn format_age(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86400 => format!("{}h{}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d", s / 86400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_like_kubectl() {
        assert_eq!(format_age(45_000), "45s");
        assert_eq!(format_age(17 * 60_000), "17m");
        assert_eq!(format_age(3 * 3_600_000 + 12 * 60_000), "3h12m");
        assert_eq!(format_age(5 * 86_400_000), "5d");
        assert_eq!(format_age(-5), "0s");
    }

    #[test]
    fn formats_a_known_instant_in_utc() {
        assert_eq!(format_utc(1_795_300_200_000), "2026-11-21 22:30 UTC");
        assert_eq!(format_utc(0), "1970-01-01 00:00 UTC");
    }

    #[test]
    fn a_short_range_shows_seconds_and_its_date_once() {
        let t = 1_795_300_200_000; // 2026-11-21 22:30:00
        assert_eq!(
            format_range(t + 5_000, t + 95_000),
            "2026-11-21 22:30:05 – 22:31:35 UTC"
        );
        assert_eq!(
            format_range(t, t + 2 * 3_600_000),
            "2026-11-21 22:30 – 2026-11-22 00:30 UTC"
        );
        assert_eq!(
            format_range(t - 3_600_000, t),
            "2026-11-21 21:30 – 22:30 UTC"
        );
    }
}
