//! Kubernetes resource quantities (`500m`, `2`, `4Gi`), parsed the same way in
//! the submit dialog and on the server, so totals shown live match what is checked.

use crate::error::AppError;

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
    let millis = if let Some(m) = s.strip_suffix('m') {
        m.parse::<u64>().map_err(|_| bad())?
    } else {
        let cores: f64 = s.parse().map_err(|_| bad())?;
        if !cores.is_finite() || !(0.0..=1.0e6).contains(&cores) {
            return Err(bad());
        }
        (cores * 1000.0).round() as u64
    };
    Ok(millis)
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
    let value: f64 = number.trim().parse().map_err(|_| bad())?;
    if !value.is_finite() || value < 0.0 {
        return Err(bad());
    }
    let bytes = value * unit as f64;
    if bytes > 1.0e18 {
        return Err(bad());
    }
    Ok(bytes.round() as u64)
}

/// Millicores as people read them: `500m`, `2`, `2.5`.
pub fn format_cpu(millis: u64) -> String {
    if millis.is_multiple_of(1000) {
        (millis / 1000).to_string()
    } else if millis < 1000 {
        format!("{millis}m")
    } else {
        let s = format!("{:.3}", millis as f64 / 1000.0);
        s.trim_end_matches('0').to_owned()
    }
}

/// Bytes in binary units: `512 MiB`, `4 GiB`, `1.5 GiB`.
pub fn format_memory(bytes: u64) -> String {
    const UNITS: &[&str] = &["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if (value - value.round()).abs() < 0.05 {
        format!("{} {}", value.round() as u64, UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
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
        for bad in ["", "two", "-1", "1.5m", "NaN", "inf"] {
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
        for bad in ["", "4GB", "lots", "-1Gi"] {
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
    }
}
