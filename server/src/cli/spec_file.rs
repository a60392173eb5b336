//! Files a user writes for the CLI (`pipeline run -f`, `experiment create
//! -f`): YAML by the file's extension (`.yaml`, `.yml`), else JSON.

use std::path::Path;

use anyhow::Context;
use serde::de::DeserializeOwned;

/// Reads `file` as a `what` (named in errors, e.g. "a pipeline").
pub fn read<T: DeserializeOwned>(file: &Path, what: &str) -> anyhow::Result<T> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let yaml = matches!(
        file.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml")
    );
    parse(&text, yaml, &file.display().to_string(), what)
}

/// `text` (YAML or JSON) as a `what`; `shown` names the file in errors.
pub fn parse<T: DeserializeOwned>(
    text: &str,
    yaml: bool,
    shown: &str,
    what: &str,
) -> anyhow::Result<T> {
    let value: serde_json::Value = if yaml {
        serde_norway::from_str(text).with_context(|| format!("{shown} is not YAML"))?
    } else {
        serde_json::from_str(text).with_context(|| format!("{shown} is not JSON"))?
    };
    serde_json::from_value(value).with_context(|| format!("{shown} is not {what}"))
}
