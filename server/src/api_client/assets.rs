//! Datasets and models through `/api/v1/{datasets,models}`: what
//! `paddlecloud upload` and `paddlecloud download` call.

use std::io::Read;

use app::models::{
    tag_list, Asset, AssetBody, AssetForm, AssetKind, FileEntry, ModelVersion, VersionBody,
    VersionForm,
};
use percent_encoding::utf8_percent_encode;

use super::{ApiClient, ClientError, SEGMENT};

/// A dataset or model by owner and name.
#[derive(Debug, Clone)]
pub struct Target<'a> {
    /// Dataset or model.
    pub kind: AssetKind,
    /// The owning account.
    pub owner: &'a str,
    /// Its name.
    pub name: &'a str,
}

impl ApiClient {
    fn asset_url(&self, t: &Target, rest: &[&str]) -> String {
        let mut segments = vec![t.kind.plural(), t.owner, t.name];
        segments.extend_from_slice(rest);
        self.url(&segments)
    }

    /// The URL of a file: each segment of `path` escaped, the slashes kept.
    fn file_url(&self, t: &Target, path: &str, version: Option<u32>) -> String {
        let mut url = self.asset_url(t, &["files"]);
        for segment in path.split('/') {
            url.push('/');
            url.extend(utf8_percent_encode(segment, SEGMENT));
        }
        if let Some(v) = version {
            url.push_str(&format!("?version={v}"));
        }
        url
    }

    /// One dataset or model; `Ok(None)` if there is none the key can read.
    pub fn asset(&self, t: &Target) -> Result<Option<Asset>, ClientError> {
        match self.json(self.get(&self.asset_url(t, &[])).call()) {
            Ok(asset) => Ok(Some(asset)),
            Err(ClientError::Api { status: 404, .. }) => Ok(None),
            Err(err) => Err(err),
        }
    }

    /// Creates a dataset or model in the key's account.
    pub fn create_asset(&self, kind: AssetKind, form: &AssetForm) -> Result<Asset, ClientError> {
        let body = AssetBody {
            name: form.name.clone(),
            description: form.description.clone(),
            tags: tag_list(&form.tags),
        };
        self.json(self.post(&self.url(&[kind.plural()])).send_json(&body))
    }

    /// One folder's files and subfolders.
    pub fn list_dir(
        &self,
        t: &Target,
        version: Option<u32>,
        dir: &str,
    ) -> Result<Vec<FileEntry>, ClientError> {
        let mut request = self.get(&self.asset_url(t, &["files"])).query("dir", dir);
        if let Some(v) = version {
            request = request.query("version", v.to_string());
        }
        self.json(request.call())
    }

    /// Sends a file; it streams from `body` and lands whole or not at all.
    pub fn put_file(
        &self,
        t: &Target,
        version: Option<u32>,
        path: &str,
        body: &mut dyn Read,
    ) -> Result<FileEntry, ClientError> {
        let request = self
            .signed(self.agent.put(&self.file_url(t, path, version)))
            .header("Content-Type", "application/octet-stream");
        self.json(request.send(ureq::SendBody::from_reader(body)))
    }

    /// A file's bytes from byte `from` on (a resumed download), and
    /// whether the answer starts there (`false`: the whole file came).
    pub fn get_file(
        &self,
        t: &Target,
        version: Option<u32>,
        path: &str,
        from: u64,
    ) -> Result<(bool, impl Read), ClientError> {
        let mut request = self.get(&self.file_url(t, path, version));
        if from > 0 {
            request = request.header("Range", &format!("bytes={from}-"));
        }
        let response = request.call().map_err(|err| self.connection(err))?;
        let partial = response.status().as_u16() == 206;
        Ok((partial, self.check(Ok(response))?.into_reader()))
    }

    /// A model's or dataset's versions, newest first.
    pub fn versions(&self, t: &Target) -> Result<Vec<ModelVersion>, ClientError> {
        self.json(self.get(&self.asset_url(t, &["versions"])).call())
    }

    /// Starts a model version, or saves a dataset's files as one.
    pub fn create_version(
        &self,
        t: &Target,
        form: &VersionForm,
    ) -> Result<ModelVersion, ClientError> {
        let body = VersionBody {
            description: form.description.clone(),
            tags: tag_list(&form.tags),
            job: form.job.clone(),
            empty: form.empty,
        };
        self.json(
            self.post(&self.asset_url(t, &["versions"]))
                .send_json(&body),
        )
    }

    /// Marks a model version's files complete.
    pub fn finish_version(&self, t: &Target, version: u32) -> Result<ModelVersion, ClientError> {
        let v = version.to_string();
        self.json(
            self.post(&self.asset_url(t, &["versions", &v, "finish"]))
                .send_empty(),
        )
    }
}
