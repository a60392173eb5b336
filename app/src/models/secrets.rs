//! An account's secrets: named values (a password, a token, a whole
//! credentials file) its owners set and its members' workloads use by name,
//! as environment variables or files. A value is written once and never
//! shown again: what the console gives back about a secret is its
//! [`SecretInfo`], and a spec holds only [`SecretUse`]s, names.

use serde::{Deserialize, Serialize};

use crate::error::AppError;

/// The most bytes a secret's value may hold (a credentials file fits).
pub const MAX_SECRET_BYTES: usize = 64 * 1024;

/// The most secrets one workload may use.
pub const MAX_SECRET_USES: usize = 20;

/// Where a workload finds the secrets it uses as files: this variable names
/// the folder, each file in it named as the use says.
pub const SECRETS_DIR_VARIABLE: &str = "PADDLECLOUD_SECRETS_DIR";

/// That folder in a Kubernetes pod (a Secret volume, read-only).
pub const POD_SECRETS_DIR: &str = "/var/run/secrets/paddlecloud";

/// What the console says about a secret: never its value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct SecretInfo {
    /// Its name in the account.
    pub name: String,
    /// What it is for, in the owner's words.
    #[serde(default)]
    pub description: String,
    /// How many bytes its value holds.
    pub size: u64,
    /// When it was first set (Unix ms).
    pub created_at: i64,
    /// When its value was last set (Unix ms).
    pub updated_at: i64,
    /// Who set it last.
    pub updated_by: String,
    /// When a workload last used it (Unix ms), if one has.
    #[serde(default)]
    pub last_used_at: Option<i64>,
}

/// A secret to set: its name, its value (text, or a file's bytes in
/// base64) and what it is for. Setting a name that exists replaces its
/// value; the old one is gone.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct SecretForm {
    /// Lower-case letters, digits and `-`, starting with a letter, e.g. `s3-key`.
    #[cfg_attr(
        feature = "ssr",
        schema(pattern = r"^[a-z]([a-z0-9-]{0,62}[a-z0-9])?$")
    )]
    pub name: String,
    /// The value as text.
    #[serde(default)]
    pub value: Option<String>,
    /// The value as base64, for a file that is not text.
    #[serde(default)]
    pub value_base64: Option<String>,
    /// What it is for (at most 200 characters).
    #[serde(default)]
    #[cfg_attr(feature = "ssr", schema(max_length = 200))]
    pub description: String,
}

impl SecretForm {
    /// The checked name, value bytes and description; errors name the field.
    pub fn validated(&self) -> Result<(String, Vec<u8>, String), AppError> {
        let name = validate_secret_name(&self.name)?;
        let value = match (&self.value, &self.value_base64) {
            (Some(_), Some(_)) => {
                return Err(AppError::invalid(
                    "value",
                    "Give the value as text or as base64, not both.",
                ))
            }
            (Some(text), None) => text.as_bytes().to_vec(),
            (None, Some(b64)) => decode_base64(b64).ok_or_else(|| {
                AppError::invalid(
                    "value_base64",
                    "The value is not valid base64 (standard alphabet, padded, no spaces).",
                )
            })?,
            (None, None) => Vec::new(),
        };
        if value.is_empty() {
            return Err(AppError::invalid("value", "Give the secret's value."));
        }
        if value.len() > MAX_SECRET_BYTES {
            return Err(AppError::invalid(
                "value",
                format!(
                    "A secret holds at most {} KiB; this one is {} bytes.",
                    MAX_SECRET_BYTES / 1024,
                    value.len()
                ),
            ));
        }
        // Checked before trimming, so what the REST schema refuses the
        // server refuses too.
        let description = self.description.trim().to_owned();
        if self.description.chars().count() > 200 || self.description.chars().any(char::is_control)
        {
            return Err(AppError::invalid(
                "description",
                "A description is one line of at most 200 characters.",
            ));
        }
        Ok((name, value, description))
    }
}

/// Checks a secret's name: lower-case letters, digits and `-`, starting
/// with a letter and not ending with `-`, at most 64 characters.
pub fn validate_secret_name(raw: &str) -> Result<String, AppError> {
    let name = raw.trim();
    let ok = (1..=64).contains(&name.len())
        && name.as_bytes()[0].is_ascii_lowercase()
        && !name.ends_with('-')
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if ok {
        Ok(name.to_owned())
    } else {
        Err(AppError::invalid(
            "name",
            format!(
                "“{name}” is not a secret name: use lower-case letters, digits and -, \
                 starting with a letter (at most 64), e.g. s3-key."
            ),
        ))
    }
}

/// One secret a workload uses, and how: as an environment variable or as
/// a file in [`SECRETS_DIR_VARIABLE`]'s folder.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct SecretUse {
    /// The secret's name in the workload's account.
    pub secret: String,
    /// The environment variable that holds its value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<String>,
    /// The file (a plain name) that holds its value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

impl SecretUse {
    /// As a form's line writes it: `VARIABLE=secret` or `file:name=secret`.
    pub fn to_line(&self) -> String {
        match (&self.env, &self.file) {
            (Some(env), _) => format!("{env}={}", self.secret),
            (None, Some(file)) => format!("file:{file}={}", self.secret),
            (None, None) => self.secret.clone(),
        }
    }

    /// Where it goes, in words: `AWS_KEY` or `file creds.json`.
    pub fn target(&self) -> String {
        match (&self.env, &self.file) {
            (Some(env), _) => env.clone(),
            (None, Some(file)) => format!("file {file}"),
            (None, None) => String::new(),
        }
    }
}

/// Reads a form's secrets: one per line, `VARIABLE=secret` for a variable
/// or `file:name=secret` for a file; blank lines are skipped.
pub fn parse_secret_uses(text: &str) -> Result<Vec<SecretUse>, AppError> {
    let mut uses = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let Some((target, secret)) = line.rsplit_once('=') else {
            return Err(AppError::invalid(
                "secrets",
                format!(
                    "“{line}” does not say where the secret goes: write VARIABLE=secret \
                     or file:name=secret."
                ),
            ));
        };
        let (target, secret) = (target.trim(), secret.trim().to_owned());
        uses.push(match target.strip_prefix("file:") {
            Some(file) => SecretUse {
                secret,
                env: None,
                file: Some(file.trim().to_owned()),
            },
            None => SecretUse {
                secret,
                env: Some(target.to_owned()),
                file: None,
            },
        });
    }
    validate_secret_uses(&uses, |_| false)?;
    Ok(uses)
}

/// The lines [`parse_secret_uses`] reads back into `uses`.
pub fn secret_uses_text(uses: &[SecretUse]) -> String {
    uses.iter()
        .map(SecretUse::to_line)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Checks a spec's secrets: each names a secret and exactly one of a
/// variable (not one `reserved` for the console's own) or a plain file
/// name; no variable or file twice. Errors name the `secrets` field.
pub fn validate_secret_uses(
    uses: &[SecretUse],
    reserved: impl Fn(&str) -> bool,
) -> Result<(), AppError> {
    let bad = |message: String| Err(AppError::invalid("secrets", message));
    if uses.len() > MAX_SECRET_USES {
        return bad(format!(
            "A workload uses at most {MAX_SECRET_USES} secrets."
        ));
    }
    let mut seen = std::collections::HashSet::new();
    for u in uses {
        if validate_secret_name(&u.secret).is_err() {
            return bad(format!("“{}” is not a secret name.", u.secret));
        }
        match (&u.env, &u.file) {
            (Some(env), None) => {
                let ok = !env.is_empty()
                    && !env.as_bytes()[0].is_ascii_digit()
                    && env.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
                if !ok {
                    return bad(format!("“{env}” is not a valid environment variable name."));
                }
                if reserved(env) || env == SECRETS_DIR_VARIABLE {
                    return bad(format!("{env} is set by PaddleCloud itself."));
                }
            }
            (None, Some(file)) => {
                let ok = !file.is_empty()
                    && file.len() <= 128
                    && file != "."
                    && file != ".."
                    && file
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
                if !ok {
                    return bad(format!(
                        "“{file}” is not a file name: use letters, digits, ., _ and - \
                         (no folders)."
                    ));
                }
            }
            _ => {
                return bad(format!(
                    "Say whether secret “{}” is a variable or a file, not both.",
                    u.secret
                ))
            }
        }
        if !seen.insert(u.target()) {
            return bad(format!("{} is given two secrets.", u.target()));
        }
    }
    Ok(())
}

/// What logs must not show of `values`: each value whole and, for one of
/// several lines, each line (trimmed), since a program prints it that way;
/// longest first, so a value is masked whole before its lines. Pieces
/// shorter than 4 bytes are left out: masking `1` would hide every digit of
/// the log and protect nothing.
pub fn mask_pieces(values: &[String]) -> Vec<String> {
    let mut pieces: Vec<String> = values
        .iter()
        .flat_map(|v| std::iter::once(v.as_str()).chain(v.lines().map(str::trim)))
        .filter(|p| p.len() >= 4)
        .map(str::to_owned)
        .collect();
    pieces.sort_by_key(|p| std::cmp::Reverse(p.len()));
    pieces.dedup();
    pieces
}

/// `text` with every piece of `values` ([`mask_pieces`]) replaced by `***`,
/// as logs show it.
pub fn mask_secrets<'a>(text: &'a str, values: &[String]) -> std::borrow::Cow<'a, str> {
    let mut out = std::borrow::Cow::Borrowed(text);
    for piece in mask_pieces(values) {
        if out.contains(piece.as_str()) {
            out = std::borrow::Cow::Owned(out.replace(piece.as_str(), "***"));
        }
    }
    out
}

/// Standard, padded base64 without spaces: exactly what
/// [`BASE64_PATTERN`] says, so the REST schema and the server agree.
fn decode_base64(text: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

/// What [`decode_base64`] takes and yields at least one byte from, as a
/// JSON Schema pattern: whole groups of four, the last one padded, its
/// unused bits zero (the decoder refuses them otherwise).
pub const BASE64_PATTERN: &str = "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{4}|[A-Za-z0-9+/][AQgw]==|[A-Za-z0-9+/]{2}[AEIMQUYcgkosw048]=)$";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_line_says_a_variable_or_a_file_and_reads_back_the_same() {
        let uses = parse_secret_uses("AWS_SECRET=s3-key\n\n file:gcp.json = gcp \n").unwrap();
        assert_eq!(uses[0].env.as_deref(), Some("AWS_SECRET"));
        assert_eq!(uses[1].file.as_deref(), Some("gcp.json"));
        assert_eq!(uses[1].secret, "gcp");
        assert_eq!(parse_secret_uses(&secret_uses_text(&uses)).unwrap(), uses);
    }

    #[test]
    fn bad_uses_are_refused_with_what_is_wrong() {
        for (text, says) in [
            ("s3-key", "does not say where"),
            ("A=B=Bad_Name", "not a secret name"),
            ("1X=s3", "not a valid environment variable"),
            ("file:../x=s3", "not a file name"),
            ("A=s3\nA=gcp", "given two secrets"),
            ("PADDLECLOUD_SECRETS_DIR=s3", "set by PaddleCloud"),
        ] {
            let err = parse_secret_uses(text).unwrap_err().to_string();
            assert!(err.contains(says), "{text}: {err}");
        }
    }

    #[test]
    fn a_value_is_text_or_base64_and_never_empty_or_too_big() {
        let form = |value: Option<&str>, b64: Option<&str>| SecretForm {
            name: "s3-key".into(),
            value: value.map(Into::into),
            value_base64: b64.map(Into::into),
            description: String::new(),
        };
        assert_eq!(form(Some("abc"), None).validated().unwrap().1, b"abc");
        assert_eq!(
            form(None, Some("AAEC/w==")).validated().unwrap().1,
            vec![0, 1, 2, 255]
        );
        assert!(form(None, Some("AAE")).validated().is_err());
        assert!(form(None, Some("AAEC /w==")).validated().is_err());
        assert!(form(None, None).validated().is_err());
        let big = "x".repeat(MAX_SECRET_BYTES + 1);
        assert!(form(Some(&big), None).validated().is_err());
        assert!(validate_secret_name("S3").is_err());
        assert!(validate_secret_name("s3-").is_err());
    }

    #[cfg(feature = "ssr")]
    #[test]
    fn the_schemas_base64_pattern_takes_exactly_what_the_server_decodes() {
        let pattern = regex::Regex::new(BASE64_PATTERN).unwrap();
        // Every string of up to 5 characters over letters that cover each
        // case: data, the zero-bit finals (A, Q, g, E), non-zero-bit finals
        // (B, R), padding and a space.
        let alphabet = ['A', 'Q', 'g', 'E', 'B', 'R', '/', '=', ' '];
        let mut strings = vec![String::new()];
        for len in 1..=5 {
            let mut next = Vec::new();
            for s in strings.iter().filter(|s| s.len() == len - 1) {
                for c in alphabet {
                    next.push(format!("{s}{c}"));
                }
            }
            strings.extend(next);
        }
        for s in &strings {
            let decodes = decode_base64(s).is_some_and(|bytes| !bytes.is_empty());
            assert_eq!(pattern.is_match(s), decodes, "{s:?}");
        }
    }

    #[test]
    fn logs_show_stars_where_a_secret_value_was() {
        let values = vec!["hunter2-long".to_owned(), "line one\nline two".to_owned()];
        assert_eq!(
            mask_secrets("key=hunter2-long; a=1", &values),
            "key=***; a=1"
        );
        assert_eq!(mask_secrets("got line two", &values), "got ***");
        assert_eq!(mask_secrets("1 2 3", &["1".to_owned()]), "1 2 3");
    }
}
