//! Notebooks and the versions of their files through
//! `/api/v1/notebooks/...`: what `paddlecloud notebook` calls.

use app::models::{Notebook, NotebookDiff, NotebookHistory, NotebookList, NotebookVersion};

use super::{ApiClient, ClientError};

impl ApiClient {
    /// The account's notebooks.
    pub fn notebooks(&self) -> Result<NotebookList, ClientError> {
        self.json(self.get(&self.url(&["notebooks"])).call())
    }

    /// Starts or stops notebook `name` (`action`: `start` or `stop`).
    pub fn notebook_action(&self, name: &str, action: &str) -> Result<Notebook, ClientError> {
        self.json(
            self.post(&self.url(&["notebooks", name, action]))
                .send_empty(),
        )
    }

    /// Its versioned files and the versions of `path` (the file changed
    /// last when `None`).
    pub fn notebook_history(
        &self,
        name: &str,
        path: Option<&str>,
    ) -> Result<NotebookHistory, ClientError> {
        let mut request = self.get(&self.url(&["notebooks", name, "history"]));
        if let Some(path) = path {
            request = request.query("path", path);
        }
        self.json(request.call())
    }

    /// Version `id`'s file (the notebook's JSON), or its page (`html`).
    pub fn notebook_version(
        &self,
        name: &str,
        id: i64,
        html: bool,
    ) -> Result<Vec<u8>, ClientError> {
        let id = id.to_string();
        let url = if html {
            self.url(&["notebooks", name, "versions", &id, "html"])
        } else {
            self.url(&["notebooks", name, "versions", &id])
        };
        self.check(self.get(&url).call())?
            .with_config()
            .limit(app::models::MAX_VERSION_BYTES as u64 * 4)
            .read_to_vec()
            .map_err(|err| self.connection(err))
    }

    /// Versions `from` and `to` compared cell by cell.
    pub fn notebook_diff(
        &self,
        name: &str,
        from: i64,
        to: i64,
    ) -> Result<NotebookDiff, ClientError> {
        self.json(
            self.get(&self.url(&["notebooks", name, "diff"]))
                .query("from", from.to_string())
                .query("to", to.to_string())
                .call(),
        )
    }

    /// Puts version `id` back into the running notebook's workspace.
    pub fn restore_notebook_version(
        &self,
        name: &str,
        id: i64,
    ) -> Result<NotebookVersion, ClientError> {
        let id = id.to_string();
        self.json(
            self.post(&self.url(&["notebooks", name, "versions", &id, "restore"]))
                .send_empty(),
        )
    }
}
