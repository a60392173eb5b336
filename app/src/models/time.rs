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

/// A time range of Unix milliseconds as a chart's range bar shows it: the
/// date once when both ends fall on the same day, and seconds when the range
/// is shorter than an hour (a zoomed-in run of a few minutes would otherwise
/// read `06:30 – 06:30`).
pub fn format_range(from_ms: i64, to_ms: i64) -> String {
    let at = |ms: i64| time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000);
    let (Ok(a), Ok(b)) = (at(from_ms), at(to_ms)) else {
        return "—".to_owned();
    };
    let seconds = (to_ms - from_ms).abs() < 3_600_000;
    let clock = |t: time::OffsetDateTime| {
        if seconds {
            format!("{:02}:{:02}:{:02}", t.hour(), t.minute(), t.second())
        } else {
            format!("{:02}:{:02}", t.hour(), t.minute())
        }
    };
    let date = |t: time::OffsetDateTime| {
        format!("{:04}-{:02}-{:02}", t.year(), u8::from(t.month()), t.day())
    };
    if a.date() == b.date() {
        format!("{} {} – {} UTC", date(a), clock(a), clock(b))
    } else {
        format!("{} {} – {} {} UTC", date(a), clock(a), date(b), clock(b))
    }
}

/// The UTC date of Unix milliseconds, `2026-11-22`.
pub fn format_date(ms: i64) -> String {
    let mut s = format_utc(ms);
    s.truncate(10);
    s
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
