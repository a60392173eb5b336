//! CSV exports (usage hours, the audit log) quote fields one way.

/// `s` as one CSV field: quoted when it holds a comma, quote or line break.
pub fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

/// A float as a CSV field: NaN and ±Infinity spelled out as the JSON API
/// spells them, anything else as Rust writes it (the shortest text that
/// reads back the same).
pub fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v == f64::INFINITY {
        "Infinity".into()
    } else if v == f64::NEG_INFINITY {
        "-Infinity".into()
    } else {
        v.to_string()
    }
}
