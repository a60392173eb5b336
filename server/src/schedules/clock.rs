//! When a schedule's ticks fall: its cron pattern (croner: 5 fields, or 6
//! with seconds first; `L`, `W`, `#`; `@daily` and the like) read in its
//! IANA timezone (jiff, with the tz database built in), so `0 3 * * *` in
//! `Europe/Berlin` is 03:00 there in winter and in summer.

use std::str::FromStr;

use app::error::AppError;
use croner::Cron;
use jiff::tz::TimeZone;
use jiff::{Timestamp, Zoned};

/// The most ticks looked at between two times: the newest (a schedule
/// every second that was down for a day has 86,400; catch-up runs at most
/// ten, and older ones need no record each).
pub const MAX_TICKS: usize = 100;

/// A schedule's clock.
#[derive(Debug, Clone)]
pub struct Clock {
    cron: Cron,
    zone: TimeZone,
}

impl Clock {
    /// `cron` read in `timezone`; a 400 on the field at fault.
    pub fn new(cron: &str, timezone: &str) -> Result<Self, AppError> {
        let zone = TimeZone::get(timezone.trim()).map_err(|_| {
            AppError::invalid(
                "timezone",
                format!(
                    "“{timezone}” is no IANA timezone (e.g. UTC, Europe/Berlin, Asia/Shanghai)."
                ),
            )
        })?;
        let cron = Cron::from_str(cron.trim())
            .map_err(|e| AppError::invalid("cron", format!("Not a cron pattern: {e}.")))?;
        let clock = Self { cron, zone };
        // A pattern that never fires (30 February) is no schedule.
        if clock.next_after(0).is_none() {
            return Err(AppError::invalid("cron", "This pattern never fires."));
        }
        Ok(clock)
    }

    fn zoned(&self, ms: i64) -> Option<Zoned> {
        Some(
            Timestamp::from_millisecond(ms)
                .ok()?
                .to_zoned(self.zone.clone()),
        )
    }

    /// The first tick strictly after `ms` (Unix ms), if any.
    pub fn next_after(&self, ms: i64) -> Option<i64> {
        let from = self.zoned(ms)?;
        let next = self.cron.find_next_occurrence(&from, false).ok()?;
        Some(next.timestamp().as_millisecond())
    }

    /// The ticks after `from` up to `to` (both Unix ms), oldest first; at
    /// most the newest [`MAX_TICKS`], found walking back from `to`, so a
    /// long gap costs no more than a short one.
    pub fn ticks_between(&self, from: i64, to: i64) -> Vec<i64> {
        let mut ticks = vec![];
        let Some(mut at) = self.zoned(to) else {
            return ticks;
        };
        let mut inclusive = true;
        while ticks.len() < MAX_TICKS {
            let Ok(previous) = self.cron.find_previous_occurrence(&at, inclusive) else {
                break;
            };
            let ms = previous.timestamp().as_millisecond();
            if ms <= from {
                break;
            }
            ticks.push(ms);
            at = previous;
            inclusive = false;
        }
        ticks.reverse();
        ticks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(text: &str) -> i64 {
        text.parse::<Timestamp>().unwrap().as_millisecond()
    }

    #[test]
    fn three_in_the_morning_in_berlin_stays_three_across_daylight_saving() {
        let clock = Clock::new("0 3 * * *", "Europe/Berlin").unwrap();
        // Winter: UTC+1; summer: UTC+2.
        assert_eq!(
            clock.next_after(ms("2026-01-10T12:00:00Z")),
            Some(ms("2026-01-11T02:00:00Z"))
        );
        assert_eq!(
            clock.next_after(ms("2026-07-10T12:00:00Z")),
            Some(ms("2026-07-11T01:00:00Z"))
        );
    }

    #[test]
    fn the_ticks_between_two_times_are_listed_oldest_first_with_seconds_allowed() {
        let clock = Clock::new("*/20 * * * * *", "UTC").unwrap();
        let from = ms("2026-11-30T03:00:00Z");
        assert_eq!(
            clock.ticks_between(from, from + 60_000),
            vec![from + 20_000, from + 40_000, from + 60_000]
        );
        let daily = Clock::new("@daily", "UTC").unwrap();
        assert_eq!(
            daily.ticks_between(from, from + 3_600_000),
            Vec::<i64>::new()
        );
        let every = Clock::new("* * * * * *", "UTC").unwrap();
        // A year of seconds: the newest hundred, at once.
        let many = every.ticks_between(from - 365 * 86_400_000, from);
        assert_eq!(many.len(), MAX_TICKS);
        assert_eq!(*many.last().unwrap(), from);
        assert_eq!(many[0], from - (MAX_TICKS as i64 - 1) * 1000);
    }

    #[test]
    fn a_bad_pattern_or_timezone_is_refused_naming_the_field() {
        let field = |e: AppError| match e {
            AppError::Invalid { field, .. } => field.unwrap_or_default(),
            other => panic!("{other:?}"),
        };
        assert_eq!(field(Clock::new("61 * * * *", "UTC").unwrap_err()), "cron");
        assert_eq!(
            field(Clock::new("0 3 * * *", "Mars/Olympus").unwrap_err()),
            "timezone"
        );
        assert_eq!(field(Clock::new("0 0 30 2 *", "UTC").unwrap_err()), "cron");
    }
}
