//! Access keys: how the CLI, the SDK and scripts authenticate to `/api/v1`.

use serde::{Deserialize, Serialize};

use crate::error::AppError;
use crate::models::Me;

/// Every key starts with this, so a leaked one is easy to recognise (and to
/// search for in code and logs).
pub const ACCESS_KEY_PREFIX: &str = "pck_";
/// How many leading characters of a key are stored in the clear, to tell keys apart.
pub const SHOWN_PREFIX_LEN: usize = 12;
/// Longest key name.
pub const MAX_KEY_NAME_LEN: usize = 64;

/// An access key as the Account page lists it; the secret itself is never stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessKeyInfo {
    /// Database id, used to revoke it.
    pub id: i64,
    /// What the user called it (`laptop`, `ci`).
    pub name: String,
    /// The key's first characters, e.g. `pck_3fa9c01b`.
    pub prefix: String,
    /// When it was created, Unix milliseconds.
    pub created_at: i64,
    /// When it last authenticated a request (updated at most once a minute).
    pub last_used_at: Option<i64>,
}

/// A key just created: the only time its secret is shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewAccessKey {
    /// The secret, for the `Authorization: Bearer` header.
    pub key: String,
    /// What the list shows from now on.
    pub info: AccessKeyInfo,
}

/// The credentials file the CLI and the SDK read
/// (`~/.config/paddlecloud/credentials.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credentials {
    /// The console's URL, e.g. `http://127.0.0.1:3000`.
    pub server: String,
    /// The account the key acts in.
    pub account: String,
    /// The user the key belongs to.
    pub user: String,
    /// The access key.
    pub key: String,
}

/// The file name the console offers the credentials under.
pub const CREDENTIALS_FILE: &str = "credentials.json";

impl Credentials {
    /// The credentials of `key`, which belongs to `me`, for the console at `server`.
    pub fn new(server: String, me: &Me, key: String) -> Self {
        Self {
            server,
            account: me.account.name.clone(),
            user: me.email.clone(),
            key,
        }
    }

    /// The file's text: pretty JSON, so a user can read what it holds.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }

    /// The file as a `data:` URL, for a download link that needs no second
    /// request (the secret exists only in this one answer).
    pub fn data_url(&self) -> String {
        let mut url = String::from("data:application/json;charset=utf-8,");
        for byte in self.to_json().bytes() {
            if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
                url.push(char::from(byte));
            } else {
                url.push_str(&format!("%{byte:02X}"));
            }
        }
        url
    }
}

/// Trims a key name and checks it is 1 to 64 printable characters.
pub fn validate_key_name(name: &str) -> Result<String, AppError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(AppError::invalid(
            "name",
            "Give the key a name, e.g. the machine or script that will use it.",
        ));
    }
    if name.chars().count() > MAX_KEY_NAME_LEN {
        return Err(AppError::invalid(
            "name",
            format!("A key name is at most {MAX_KEY_NAME_LEN} characters."),
        ));
    }
    if name.chars().any(char::is_control) {
        return Err(AppError::invalid(
            "name",
            "A key name cannot contain control characters.",
        ));
    }
    Ok(name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_names_are_trimmed_and_bounded() {
        assert_eq!(validate_key_name("  laptop ").unwrap(), "laptop");
        assert_eq!(validate_key_name("   ").unwrap_err().field(), Some("name"));
        assert!(validate_key_name(&"k".repeat(65)).is_err());
        assert!(validate_key_name("a\nb").is_err());
    }

    #[test]
    fn credentials_files_are_json_with_the_four_keys() {
        let c = Credentials {
            server: "http://127.0.0.1:3000".into(),
            account: "acme".into(),
            user: "ada@example.com".into(),
            key: "pck_x".into(),
        };
        let back: Credentials = serde_json::from_str(&c.to_json()).unwrap();
        assert_eq!(back, c);
        let url = c.data_url();
        assert!(
            url.starts_with("data:application/json;charset=utf-8,%7B%0A"),
            "{url}"
        );
        assert!(url.contains("pck_x") && !url.contains('"') && !url.contains(' '));
    }
}
