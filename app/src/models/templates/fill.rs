//! Placeholders: finding `{{name}}` in a template's job and filling them
//! with the checked values (a whole-string placeholder keeps the value's
//! type; one inside a longer string takes its text).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::models::job_origin::TemplateValue;

/// The placeholders in `text`: the names between `{{` and `}}`, trimmed.
pub fn placeholders(text: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else { break };
        found.push(after[..end].trim());
        rest = &after[end + 2..];
    }
    found
}

/// Every placeholder in the strings of `value`.
pub(super) fn all_placeholders(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.extend(placeholders(s).into_iter().map(str::to_owned)),
        Value::Array(items) => items.iter().for_each(|v| all_placeholders(v, out)),
        Value::Object(map) => map.values().for_each(|v| all_placeholders(v, out)),
        _ => {}
    }
}

/// A string that is one placeholder and nothing else: its name.
fn whole_placeholder(text: &str) -> Option<&str> {
    let inner = text.trim().strip_prefix("{{")?.strip_suffix("}}")?;
    (!inner.contains("{{") && !inner.contains("}}")).then(|| inner.trim())
}

/// `value` with its placeholders filled from `values` (see the module's notes).
pub fn fill(value: &Value, values: &BTreeMap<String, TemplateValue>) -> Value {
    match value {
        Value::String(s) => {
            if let Some(v) = whole_placeholder(s).and_then(|n| values.get(n)) {
                return v.to_json();
            }
            let mut out = String::new();
            let mut rest = s.as_str();
            while let Some(start) = rest.find("{{") {
                let after = &rest[start + 2..];
                let Some(end) = after.find("}}") else { break };
                out.push_str(&rest[..start]);
                match values.get(after[..end].trim()) {
                    Some(v) => out.push_str(&v.to_text()),
                    None => out.push_str(&rest[start..start + 2 + end + 2]),
                }
                rest = &after[end + 2..];
            }
            out.push_str(rest);
            Value::String(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| fill(v, values)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), fill(v, values)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Turns numbers and booleans into text where the job takes text (a
/// placeholder for a number inside `args`, say), so that a typed value
/// fits every field.
pub(super) fn as_text_where_text(job: &mut Value) {
    fn text(v: &mut Value) {
        if v.is_number() || v.is_boolean() {
            *v = Value::String(v.to_string());
        }
    }
    let Some(map) = job.as_object_mut() else {
        return;
    };
    for key in ["name", "image", "working_dir", "environment"] {
        map.get_mut(key).map(text);
    }
    for key in ["command", "args", "datasets", "models"] {
        if let Some(Value::Array(items)) = map.get_mut(key) {
            items.iter_mut().for_each(text);
        }
    }
    if let Some(Value::Array(env)) = map.get_mut("env") {
        for var in env {
            var.get_mut("value").map(text);
        }
    }
    for role in ["ps", "trainer"] {
        if let Some(resources) = map.get_mut(role) {
            resources.get_mut("cpu").map(text);
            resources.get_mut("memory").map(text);
        }
    }
}
