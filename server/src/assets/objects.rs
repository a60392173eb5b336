//! The files of datasets and models in an object store (`object_store`): a
//! local folder by default, or S3-compatible storage (`--storage
//! s3://bucket/prefix` with the usual `AWS_*` variables).
//!
//! Writes stream through a multipart upload, so a file of any size passes
//! through in chunks, and it appears only when complete: an interrupted
//! upload is aborted and leaves nothing behind.

use std::path::PathBuf;
use std::sync::Arc;

use app::error::AppError;
use app::ports::{ByteRange, ByteStream};
use futures_util::{StreamExt, TryStreamExt};
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt, WriteMultipart};

/// Upload chunk: S3 parts must be at least 5 MiB.
const CHUNK: usize = 8 * 1024 * 1024;

/// Where the files are.
#[derive(Clone)]
pub struct Objects {
    store: Arc<dyn ObjectStore>,
    /// The folder behind a local store (jobs read datasets straight from it).
    local_root: Option<PathBuf>,
    /// Biggest file accepted, bytes.
    pub max_file_bytes: u64,
}

fn store_err(context: &'static str) -> impl FnOnce(object_store::Error) -> AppError {
    move |err| match err {
        object_store::Error::NotFound { .. } => AppError::not_found("File"),
        err => {
            tracing::error!(error = %err, "{context}");
            AppError::Unavailable {
                message: "The file storage did not answer; try again.".into(),
            }
        }
    }
}

/// The field of the error a file over the size limit gets (REST answers it 413).
pub const TOO_LARGE_FIELD: &str = "size";

/// A file over the size limit.
pub fn too_large(max_file_bytes: u64) -> AppError {
    AppError::invalid(
        TOO_LARGE_FIELD,
        format!("The file is larger than the {max_file_bytes} bytes this console accepts."),
    )
}

impl Objects {
    /// A local folder.
    pub fn local(root: PathBuf, max_file_bytes: u64) -> anyhow::Result<Self> {
        std::fs::create_dir_all(&root)?;
        let root = root.canonicalize()?;
        Ok(Self {
            store: Arc::new(LocalFileSystem::new_with_prefix(&root)?),
            local_root: Some(root),
            max_file_bytes,
        })
    }

    /// From the `--storage` setting: `s3://bucket[/prefix]`, or a folder.
    /// S3 settings come from the usual `AWS_*` variables of the process.
    pub fn from_setting(setting: &str, max_file_bytes: u64) -> anyhow::Result<Self> {
        // (`vars()` would panic on a variable that is not UTF-8.)
        let vars = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)));
        Self::from_setting_in(setting, max_file_bytes, vars)
    }

    /// [`Objects::from_setting`] with the `AWS_*` variables given: the
    /// credentials, `AWS_REGION`, and `AWS_ENDPOINT_URL` (or `AWS_ENDPOINT`)
    /// naming a server other than AWS, plain `http://` allowed.
    pub fn from_setting_in(
        setting: &str,
        max_file_bytes: u64,
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> anyhow::Result<Self> {
        let Some(rest) = setting.strip_prefix("s3://") else {
            return Self::local(PathBuf::from(setting), max_file_bytes);
        };
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        anyhow::ensure!(
            !bucket.is_empty(),
            "--storage s3:// needs a bucket: s3://bucket/prefix"
        );
        // As AmazonS3Builder::from_env reads them, from the variables given.
        let mut builder = object_store::aws::AmazonS3Builder::new();
        let mut endpoint = None;
        for (key, value) in vars {
            if !key.starts_with("AWS_") {
                continue;
            }
            if key == "AWS_ENDPOINT_URL" || key == "AWS_ENDPOINT" {
                endpoint = endpoint.or(Some(value));
                continue;
            }
            if let Ok(config) = key.to_ascii_lowercase().parse() {
                builder = builder.with_config(config, value);
            }
        }
        Self::s3(builder, bucket, prefix, endpoint, max_file_bytes)
    }

    /// S3-compatible storage: `builder` carries credentials and region;
    /// `endpoint` names a server other than AWS (MinIO, moto), plain HTTP allowed.
    pub fn s3(
        builder: object_store::aws::AmazonS3Builder,
        bucket: &str,
        prefix: &str,
        endpoint: Option<String>,
        max_file_bytes: u64,
    ) -> anyhow::Result<Self> {
        let mut builder = builder.with_bucket_name(bucket);
        if let Some(endpoint) = endpoint {
            builder = builder
                .with_allow_http(endpoint.starts_with("http://"))
                .with_endpoint(endpoint);
        }
        let s3: Arc<dyn ObjectStore> = Arc::new(builder.build()?);
        let store: Arc<dyn ObjectStore> = match prefix.trim_matches('/') {
            "" => s3,
            p => Arc::new(object_store::prefix::PrefixStore::new(s3, p)),
        };
        Ok(Self {
            store,
            local_root: None,
            max_file_bytes,
        })
    }

    /// The local folder of `prefix`, when the files are local.
    pub fn local_path(&self, prefix: &Path) -> Option<PathBuf> {
        let root = self.local_root.as_ref()?;
        Some(
            prefix
                .parts()
                .fold(root.clone(), |p, part| p.join(part.as_ref())),
        )
    }

    /// Writes `key` from `body`; returns its size.
    pub async fn put(&self, key: &Path, mut body: ByteStream) -> Result<u64, AppError> {
        let upload = self
            .store
            .put_multipart(key)
            .await
            .map_err(store_err("start upload"))?;
        let mut writer = WriteMultipart::new_with_chunk_size(upload, CHUNK);
        let mut size = 0u64;
        while let Some(chunk) = body.next().await {
            let chunk = match chunk {
                Ok(chunk) => chunk,
                Err(err) => {
                    let _ = writer.abort().await;
                    tracing::info!(error = %err, key = %key, "upload interrupted; nothing kept");
                    return Err(AppError::Invalid {
                        field: None,
                        message:
                            "The upload was interrupted; nothing was kept. Send the file again."
                                .into(),
                    });
                }
            };
            size += chunk.len() as u64;
            if size > self.max_file_bytes {
                let _ = writer.abort().await;
                return Err(too_large(self.max_file_bytes));
            }
            if let Err(err) = writer.wait_for_capacity(4).await {
                let _ = writer.abort().await;
                return Err(store_err("upload part")(err));
            }
            writer.write(&chunk);
        }
        writer.finish().await.map_err(store_err("finish upload"))?;
        Ok(size)
    }

    /// Reads `key`, or part of it: its stream, the byte range served, its size.
    pub async fn get(
        &self,
        key: &Path,
        range: Option<ByteRange>,
    ) -> Result<(ByteStream, Option<(u64, u64)>, u64), AppError> {
        let size = self
            .store
            .head(key)
            .await
            .map_err(store_err("look at file"))?
            .size;
        let wanted = match range {
            None => None,
            Some(r) => {
                let end = r
                    .end
                    .unwrap_or(size.saturating_sub(1))
                    .min(size.saturating_sub(1));
                if r.start > end || r.start >= size {
                    return Err(AppError::invalid(
                        "range",
                        format!("The file has {size} bytes; that range is outside it."),
                    ));
                }
                Some((r.start, end))
            }
        };
        let options = GetOptions {
            range: wanted.map(|(a, b)| GetRange::Bounded(a..b + 1)),
            ..Default::default()
        };
        let got = self
            .store
            .get_opts(key, options)
            .await
            .map_err(store_err("read file"))?;
        let stream = got
            .into_stream()
            .map_err(|err| std::io::Error::other(err.to_string()));
        Ok((Box::pin(stream), wanted, size))
    }

    /// Writes `key` from bytes held in memory.
    pub async fn put_bytes(&self, key: &Path, bytes: Vec<u8>) -> Result<u64, AppError> {
        let chunk = futures_util::stream::once(async move { Ok(bytes::Bytes::from(bytes)) });
        self.put(key, Box::pin(chunk)).await
    }

    /// Reads all of `key` into memory.
    pub async fn get_bytes(&self, key: &Path) -> Result<Vec<u8>, AppError> {
        let (mut stream, _, size) = self.get(key, None).await?;
        let mut out = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        while let Some(chunk) = stream.next().await {
            out.extend_from_slice(&chunk.map_err(|err| {
                tracing::error!(error = %err, key = %key, "reading a stored file");
                AppError::Unavailable {
                    message: "The file storage did not answer; try again.".into(),
                }
            })?);
        }
        Ok(out)
    }

    /// Copies `from` to `to` inside the store: a hard link on a local
    /// folder (no bytes copied; the console only ever replaces a file whole,
    /// so the two never change together), a server-side copy on S3.
    pub async fn copy(&self, from: &Path, to: &Path) -> Result<(), AppError> {
        self.store
            .copy(from, to)
            .await
            .map_err(store_err("copy file"))
    }

    /// Deletes `keys` (missing ones are fine).
    pub async fn delete(&self, keys: Vec<Path>) -> Result<(), AppError> {
        for key in keys {
            match self.store.delete(&key).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(err) => return Err(store_err("delete file")(err)),
            }
        }
        Ok(())
    }
}
