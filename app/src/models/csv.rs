//! CSV exports (usage hours, the audit log) quote fields one way.

/// `s` as one CSV field: quoted when it holds a comma, quote or line break.
pub fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}
