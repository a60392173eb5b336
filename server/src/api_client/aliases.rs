//! Model aliases through `/api/v1/models/{owner}/{name}/aliases`: what
//! `paddlecloud alias` calls.

use app::models::{AliasChange, AliasForm, ModelAlias};

use super::{ApiClient, ClientError};

impl ApiClient {
    /// A model's aliases.
    pub fn aliases(&self, owner: &str, name: &str) -> Result<Vec<ModelAlias>, ClientError> {
        self.json(
            self.get(&self.url(&["models", owner, name, "aliases"]))
                .call(),
        )
    }

    /// Points `alias` at a version.
    pub fn set_alias(
        &self,
        owner: &str,
        name: &str,
        alias: &str,
        form: &AliasForm,
    ) -> Result<ModelAlias, ClientError> {
        let url = self.url(&["models", owner, name, "aliases", alias]);
        self.json(self.signed(self.agent.put(&url)).send_json(form))
    }

    /// Deletes `alias`.
    pub fn delete_alias(&self, owner: &str, name: &str, alias: &str) -> Result<(), ClientError> {
        let url = self.url(&["models", owner, name, "aliases", alias]);
        self.check(self.signed(self.agent.delete(&url)).call())
            .map(drop)
    }

    /// What happened to a model's aliases, newest first.
    pub fn alias_history(&self, owner: &str, name: &str) -> Result<Vec<AliasChange>, ClientError> {
        self.json(
            self.get(&self.url(&["models", owner, name, "alias-history"]))
                .call(),
        )
    }
}
