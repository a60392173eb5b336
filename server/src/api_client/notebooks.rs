//! Notebooks and the versions of their files through
//! `/api/v1/notebooks/...`: what `paddlecloud notebook` calls.

use app::models::{
    CopyTarget, Job, NewNotebookShare, Notebook, NotebookDiff, NotebookHistory, NotebookList,
    NotebookParameters, NotebookRunSpec, NotebookShare, NotebookShareSpec, NotebookVersion,
    SharedNotebookFile,
};

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

    /// Shares a file of notebook `name`.
    pub fn share_notebook_file(
        &self,
        name: &str,
        spec: &NotebookShareSpec,
    ) -> Result<NewNotebookShare, ClientError> {
        self.json(
            self.post(&self.url(&["notebooks", name, "shares"]))
                .send_json(spec),
        )
    }

    /// Notebook `name`'s shares.
    pub fn notebook_shares(&self, name: &str) -> Result<Vec<NotebookShare>, ClientError> {
        self.json(self.get(&self.url(&["notebooks", name, "shares"])).call())
    }

    /// Ends share `id` of notebook `name`.
    pub fn revoke_notebook_share(&self, name: &str, id: i64) -> Result<(), ClientError> {
        let url = self.url(&["notebooks", name, "shares", &id.to_string()]);
        self.check(self.signed(self.agent.delete(&url)).call())
            .map(drop)
    }

    /// Files others shared with the caller.
    pub fn shared_notebook_files(&self) -> Result<Vec<SharedNotebookFile>, ClientError> {
        self.json(self.get(&self.url(&["notebook-shares"])).call())
    }

    /// Copies a shared file (share `id`, or a link's `token`) into the
    /// caller's running notebook `into`.
    pub fn copy_shared_notebook(
        &self,
        share: Result<i64, &str>,
        into: &str,
    ) -> Result<NotebookVersion, ClientError> {
        let url = match share {
            Ok(id) => self.url(&["notebook-shares", &id.to_string(), "copy"]),
            Err(token) => self.url(&["shared", "notebooks", token, "copy"]),
        };
        let target = CopyTarget {
            notebook: into.to_owned(),
        };
        self.json(self.post(&url).send_json(&target))
    }

    /// The parameters file `path` of notebook `name` declares (its newest
    /// version unless `version`).
    pub fn notebook_parameters(
        &self,
        name: &str,
        path: &str,
        version: Option<i64>,
    ) -> Result<NotebookParameters, ClientError> {
        let mut request = self
            .get(&self.url(&["notebooks", name, "parameters"]))
            .query("path", path);
        if let Some(v) = version {
            request = request.query("version", v.to_string());
        }
        self.json(request.call())
    }

    /// Runs a version of a file of notebook `name` as a job.
    pub fn run_notebook(&self, name: &str, run: &NotebookRunSpec) -> Result<Job, ClientError> {
        self.json(
            self.post(&self.url(&["notebooks", name, "runs"]))
                .send_json(run),
        )
    }

    /// Notebook run `job`'s executed notebook (or its page, `html`; or the
    /// notebook as the run took it, `input`).
    pub fn notebook_run_file(&self, job: &str, which: RunFile) -> Result<Vec<u8>, ClientError> {
        let url = match which {
            RunFile::Input => self.url(&["jobs", job, "notebook", "input"]),
            RunFile::Output => self.url(&["jobs", job, "notebook", "output"]),
            RunFile::Page => self.url(&["jobs", job, "notebook", "output", "html"]),
        };
        self.check(self.get(&url).call())?
            .with_config()
            .limit(app::models::MAX_VERSION_BYTES as u64 * 4)
            .read_to_vec()
            .map_err(|err| self.connection(err))
    }
}

/// Which file of a notebook run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunFile {
    /// The notebook as the run took it.
    Input,
    /// The executed notebook.
    Output,
    /// The executed notebook's page.
    Page,
}
