//! A dataset or model version as one zip, written while it downloads: files
//! are copied from the store into the archive chunk by chunk, never whole,
//! so a many-gigabyte dataset downloads in constant memory.

use std::sync::Arc;

use app::error::AppError;
use app::models::{AssetRef, FileEntry};
use app::ports::{Assets, Slot, Viewer};
use async_zip::base::write::ZipFileWriter;
use async_zip::{Compression, ZipEntryBuilder};
use axum::body::Body;
use axum::response::{IntoResponse, Response};
use futures_util::{AsyncWriteExt, StreamExt};
use http::{header, HeaderValue};

use crate::http::api_error::ApiError;

/// Room for this many bytes between the zip writer and the response.
const PIPE: usize = 256 * 1024;
/// A dataset's revision (`r<ms of its last change>`), sent with its zip.
const REVISION: &str = "x-paddlecloud-revision";

/// The zip of a slot's files, streamed.
pub async fn zip_response(
    assets: Arc<dyn Assets>,
    viewer: Viewer,
    r: AssetRef,
    slot: Slot,
) -> Result<Response, ApiError> {
    // A dataset's revision, read before its files: the zip holds at least
    // this revision (never older), so a copy kept under its name on a node
    // (`fetch_inputs.py`) is never staler than its name says.
    let revision = match slot {
        Slot::Dataset => Some(format!("r{}", assets.get(&viewer, &r).await?.updated_at)),
        Slot::Version(_) => None,
    };
    // Access is checked (and the list read) before anything is sent.
    let files = assets.all_files(&viewer, &r, slot).await?;
    let (reader, writer) = tokio::io::duplex(PIPE);
    let name = match slot {
        Slot::Version(v) => format!("{}-v{v}.zip", r.name),
        Slot::Dataset => format!("{}.zip", r.name),
    };
    // The writer's outcome, told after its last byte: a zip cut short by a
    // failing store ends the download with an error, never as a smaller
    // archive that looks whole.
    let (done, outcome) = tokio::sync::oneshot::channel::<Result<(), String>>();
    tokio::spawn(async move {
        let _ = done.send(write_zip(writer, assets, viewer, r, slot, files).await);
    });
    let tail = futures_util::stream::once(async move {
        match outcome.await {
            Ok(Ok(())) => None,
            Ok(Err(why)) => Some(Err(std::io::Error::other(why))),
            Err(_) => Some(Err(std::io::Error::other("the zip writer stopped"))),
        }
    })
    .filter_map(|end| async move { end });
    let body = tokio_util::io::ReaderStream::new(reader).chain(tail);
    let mut response = Body::from_stream(body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/zip"),
    );
    if let Ok(v) = HeaderValue::from_str(&format!("attachment; filename=\"{name}\"")) {
        headers.insert(header::CONTENT_DISPOSITION, v);
    }
    if let Some(v) = revision.and_then(|r| HeaderValue::from_str(&r).ok()) {
        headers.insert(REVISION, v);
    }
    Ok(response)
}

/// Writes the zip of `files` into `writer`; `Err` says why it stopped short.
async fn write_zip(
    writer: tokio::io::DuplexStream,
    assets: Arc<dyn Assets>,
    viewer: Viewer,
    r: AssetRef,
    slot: Slot,
    files: Vec<FileEntry>,
) -> Result<(), String> {
    let mut zip = ZipFileWriter::with_tokio(writer);
    for f in files {
        let mut file = match assets.open_file(&viewer, &r, slot, &f.path, None).await {
            Ok(file) => file,
            // Deleted since the listing: the archive is of what is there.
            Err(AppError::NotFound { .. }) => {
                tracing::info!(path = %f.path, "zip: file deleted while zipping");
                continue;
            }
            Err(err) => {
                tracing::warn!(error = %err, path = %f.path, "zip: cannot read a file");
                return Err(format!("cannot read {}: {err}", f.path));
            }
        };
        // Stored: datasets are mostly compressed formats already, and
        // deflating gigabytes would make the download CPU-bound.
        let entry = ZipEntryBuilder::new(f.path.clone().into(), Compression::Stored);
        // Errors writing are the client going away (or the zip library
        // refusing); either way there is no one to tell but the log.
        let mut out = zip
            .write_entry_stream(entry)
            .await
            .map_err(|e| e.to_string())?;
        while let Some(chunk) = file.body.next().await {
            let chunk = chunk.map_err(|e| {
                tracing::warn!(error = %e, path = %f.path, "zip: reading a file failed");
                format!("reading {} failed: {e}", f.path)
            })?;
            out.write_all(&chunk).await.map_err(|e| e.to_string())?;
        }
        out.close().await.map_err(|e| e.to_string())?;
    }
    zip.close().await.map_err(|e| e.to_string())?;
    Ok(())
}
