//! Kubernetes resource quantities (`500m`, `2`, `4Gi`), parsed the same way in
//! the submit dialog and on the server, so totals shown live match what is checked.
//!
//! Integer arithmetic only: exact, and it keeps float parsing and formatting
//! (tens of KB) out of the browser bundle.

/// `"1.25"` as the integer `125` scaled by `10^digits` (here 2), rounded half
/// up past `digits`; `None` if it is not a plain non-negative decimal.
fn parse_decimal(s: &str, digits: u32) -> Option<u128> {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    let is_digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    if (int.is_empty() && frac.is_empty()) || !is_digits(int) || !is_digits(frac) || int.len() > 20
    {
        return None;
    }
    let int: u128 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let mut value = int.checked_mul(10u128.pow(digits))?;
    let frac = frac.as_bytes();
    for (i, b) in frac.iter().take(digits as usize).enumerate() {
        value += u128::from(b - b'0') * 10u128.pow(digits - 1 - i as u32);
    }
    if frac.get(digits as usize).is_some_and(|b| *b >= b'5') {
        value += 1;
    }
    Some(value)
}

use crate::error::AppError;

/// The most CPU an amount may say: a million cores.
pub const MAX_CPU_MILLIS: u128 = 1_000_000_000;
/// The most memory an amount may say: 10^18 bytes (about 888 PiB).
pub const MAX_MEMORY_BYTES: u128 = 1_000_000_000_000_000_000;

/// CPU in millicores from `500m`, `2`, `0.5`.
pub fn parse_cpu_millis(field: &str, raw: &str) -> Result<u64, AppError> {
    let s = raw.trim();
    let bad = || {
        AppError::invalid(
            field,
            format!(
                "“{raw}” is not a CPU amount: use cores like 2 or 0.5, or millicores like 500m."
            ),
        )
    };
    let millis = match s.strip_suffix('m') {
        // Whole millicores: digits only (no sign, no fraction).
        Some(m) if !m.is_empty() && m.bytes().all(|b| b.is_ascii_digit()) => {
            parse_decimal(m, 0).ok_or_else(bad)?
        }
        Some(_) => return Err(bad()),
        // Cores to three decimals: millicores.
        None => parse_decimal(s, 3).ok_or_else(bad)?,
    };
    // A million cores, written either way: more is a typo, and would not
    // print back as an amount this reads.
    if millis > MAX_CPU_MILLIS {
        return Err(bad());
    }
    Ok(millis as u64)
}

/// Memory in bytes from `512Mi`, `4Gi`, `1G`, `1000000`.
pub fn parse_memory_bytes(field: &str, raw: &str) -> Result<u64, AppError> {
    const SUFFIXES: &[(&str, u64)] = &[
        ("Ki", 1 << 10),
        ("Mi", 1 << 20),
        ("Gi", 1 << 30),
        ("Ti", 1 << 40),
        ("k", 1_000),
        ("K", 1_000),
        ("M", 1_000_000),
        ("G", 1_000_000_000),
        ("T", 1_000_000_000_000),
    ];
    let s = raw.trim();
    let bad = || {
        AppError::invalid(
            field,
            format!(
                "“{raw}” is not a memory amount: use a number with Mi or Gi, like 512Mi or 4Gi."
            ),
        )
    };
    let (number, unit) = SUFFIXES
        .iter()
        .find_map(|(suffix, unit)| s.strip_suffix(suffix).map(|n| (n, *unit)))
        .unwrap_or((s, 1));
    // Nine decimals are more than any unit needs to come out in whole bytes.
    const SCALE: u128 = 1_000_000_000;
    let value = parse_decimal(number.trim(), 9).ok_or_else(bad)?;
    // Twenty digits of Ti overflow even a u128: far past the limit anyway.
    let bytes = value
        .checked_mul(u128::from(unit))
        .map(|v| (v + SCALE / 2) / SCALE)
        .filter(|&bytes| bytes <= MAX_MEMORY_BYTES)
        .ok_or_else(bad)?;
    Ok(bytes as u64)
}

/// Millicores as people read them: `500m`, `2`, `2.5`.
pub fn format_cpu(millis: u64) -> String {
    if millis.is_multiple_of(1000) {
        (millis / 1000).to_string()
    } else if millis < 1000 {
        format!("{millis}m")
    } else {
        let s = format!("{}.{:03}", millis / 1000, millis % 1000);
        s.trim_end_matches('0').to_owned()
    }
}

/// Bytes as an exact Kubernetes quantity (`16Gi`, `1536Mi`, `1000`), for a
/// form field that is read back with [`parse_memory_bytes`].
pub fn memory_quantity(bytes: u64) -> String {
    for (shift, suffix) in [(40, "Ti"), (30, "Gi"), (20, "Mi"), (10, "Ki")] {
        if bytes != 0 && bytes.trailing_zeros() >= shift {
            return format!("{}{suffix}", bytes >> shift);
        }
    }
    bytes.to_string()
}

/// Bytes in binary units: `512 MiB`, `4 GiB`, `1.5 GiB`.
pub fn format_memory(bytes: u64) -> String {
    const UNITS: &[&str] = &["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut unit = 0;
    while bytes >> (10 * (unit + 1)) > 0 && unit + 1 < UNITS.len() {
        unit += 1;
    }
    // Tenths of the unit, rounded half up; rounding may reach the next unit.
    let tenths_in = |unit: usize| {
        let size = 1u128 << (10 * unit);
        (u128::from(bytes) * 10 + size / 2) / size
    };
    let mut tenths = tenths_in(unit);
    if tenths >= 10240 && unit + 1 < UNITS.len() {
        unit += 1;
        tenths = tenths_in(unit);
    }
    if tenths % 10 == 0 {
        format!("{} {}", tenths / 10, UNITS[unit])
    } else {
        format!("{}.{} {}", tenths / 10, tenths % 10, UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_accepts_cores_and_millicores() {
        assert_eq!(parse_cpu_millis("cpu", "500m").unwrap(), 500);
        assert_eq!(parse_cpu_millis("cpu", "2").unwrap(), 2000);
        assert_eq!(parse_cpu_millis("cpu", "0.25").unwrap(), 250);
        assert_eq!(parse_cpu_millis("cpu", ".5").unwrap(), 500);
        assert_eq!(parse_cpu_millis("cpu", "1.0005").unwrap(), 1001);
        assert_eq!(parse_cpu_millis("cpu", "3.").unwrap(), 3000);
        assert_eq!(
            parse_cpu_millis("cpu", "1000000000m").unwrap(),
            1_000_000_000
        );
        assert_eq!(parse_cpu_millis("cpu", "1000000").unwrap(), 1_000_000_000);
        for bad in [
            "",
            ".",
            "two",
            "-1",
            "1.5m",
            "NaN",
            "inf",
            "1e3",
            "1.2.3",
            "9".repeat(30).as_str(),
            "+500m",
            "m",
            "1000000001m",
            "18446744073709551616m",
        ] {
            assert_eq!(
                parse_cpu_millis("cpu", bad).unwrap_err().field(),
                Some("cpu"),
                "{bad}"
            );
        }
    }

    #[test]
    fn memory_accepts_binary_and_decimal_units() {
        assert_eq!(parse_memory_bytes("m", "512Mi").unwrap(), 512 << 20);
        assert_eq!(parse_memory_bytes("m", "4Gi").unwrap(), 4 << 30);
        assert_eq!(parse_memory_bytes("m", "1G").unwrap(), 1_000_000_000);
        assert_eq!(parse_memory_bytes("m", "1.5Gi").unwrap(), 3 << 29);
        assert_eq!(parse_memory_bytes("m", "1000").unwrap(), 1000);
        assert_eq!(parse_memory_bytes("m", "0.5Ki").unwrap(), 512);
        assert_eq!(parse_memory_bytes("m", "0.1").unwrap(), 0);
        for bad in [
            "",
            "4GB",
            "lots",
            "-1Gi",
            "1e9",
            "2000000Ti",
            // Overflowed the arithmetic (found by fuzzing: fuzz/regressions/quantity).
            "999999999999999999Ti",
            "99999999999999999999.999999999Ti",
        ] {
            assert!(parse_memory_bytes("m", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn amounts_are_shown_the_way_people_write_them() {
        assert_eq!(format_cpu(500), "500m");
        assert_eq!(format_cpu(4000), "4");
        assert_eq!(format_cpu(2500), "2.5");
        assert_eq!(format_memory(512 << 20), "512 MiB");
        assert_eq!(format_memory(3 << 29), "1.5 GiB");
        assert_eq!(format_memory(0), "0 B");
        assert_eq!(format_memory(1023), "1023 B");
        assert_eq!(format_memory(1024), "1 KiB");
        assert_eq!(format_memory((1 << 30) - 1), "1 GiB");
        assert_eq!(format_memory(1_000_000_000), "953.7 MiB");
        assert_eq!(format_cpu(1250), "1.25");
        assert_eq!(format_cpu(1001), "1.001");
    }
}
