//! The account's secrets over REST (names and dates; values go one way).

use app::models::SecretInfo;

use super::{ApiClient, ClientError};

impl ApiClient {
    /// The account's secrets.
    pub fn secrets(&self) -> Result<Vec<SecretInfo>, ClientError> {
        self.json(self.get(&self.url(&["secrets"])).call())
    }

    /// Sets secret `name` to `value` (sent as text when it is UTF-8, else
    /// in base64), with what it is for.
    pub fn set_secret(
        &self,
        name: &str,
        value: &[u8],
        description: &str,
    ) -> Result<SecretInfo, ClientError> {
        use base64::Engine;
        let body = match std::str::from_utf8(value) {
            Ok(text) => serde_json::json!({ "value": text, "description": description }),
            Err(_) => serde_json::json!({
                "value_base64": base64::engine::general_purpose::STANDARD.encode(value),
                "description": description,
            }),
        };
        let url = self.url(&["secrets", name]);
        self.json(self.signed(self.agent.put(&url)).send_json(body))
    }

    /// Deletes secret `name`.
    pub fn delete_secret(&self, name: &str) -> Result<(), ClientError> {
        let url = self.url(&["secrets", name]);
        self.check(self.signed(self.agent.delete(&url)).call())
            .map(drop)
    }
}
