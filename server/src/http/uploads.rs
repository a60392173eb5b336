//! `POST /upload/{kind}/{owner}/{name}?dir=&version=`: the upload form of a
//! dataset or model page as a browser sends it without JavaScript
//! (multipart). Each file streams into the store as its part arrives; the
//! browser then goes back to the page, with `upload_error=` if one failed.
//! (Hydrated pages `PUT` each file to the REST route instead, for progress.)

use app::error::AppError;
use app::models::{validate_dir, AssetKind, AssetRef};
use app::ports::{ByteStream, Principal, Slot};
use axum::extract::{Multipart, Path, Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::api_error::ApiError;
use super::caller::Caller;
use super::AppState;

/// Where the files go.
#[derive(Debug, Deserialize)]
pub struct Target {
    /// The folder shown on the page.
    #[serde(default)]
    dir: String,
    /// A model's version.
    version: Option<u32>,
}

/// Streams every file of the form into the asset, then back to the page.
pub async fn upload(
    State(state): State<AppState>,
    caller: Option<Caller>,
    Path((kind, owner, name)): Path<(String, String, String)>,
    Query(target): Query<Target>,
    multipart: Multipart,
) -> Response {
    let kind = match kind.as_str() {
        "datasets" => AssetKind::Dataset,
        "models" => AssetKind::Model,
        _ => return ApiError(AppError::not_found("Page")).into_response(),
    };
    let r = AssetRef { kind, owner, name };
    let mut page = r.href();
    let mut query = Vec::new();
    if let Some(v) = target.version {
        query.push(format!("version={v}"));
    }
    if !target.dir.is_empty() {
        query.push(format!("dir={}", app::models::url::encode(&target.dir)));
    }
    let outcome = match caller {
        None => Err(AppError::Unauthenticated),
        Some(Caller(who)) => match who.require_change() {
            Ok(()) => store_parts(&state, &who, &r, &target, multipart).await,
            Err(err) => Err(err),
        },
    };
    match outcome {
        Ok(count) => query.push(format!("uploaded={count}")),
        Err(err) => query.push(format!(
            "upload_error={}",
            app::models::url::encode(&err.to_string())
        )),
    }
    if !query.is_empty() {
        page = format!("{page}?{}", query.join("&"));
    }
    Redirect::to(&page).into_response()
}

async fn store_parts(
    state: &AppState,
    who: &Principal,
    r: &AssetRef,
    target: &Target,
    mut multipart: Multipart,
) -> Result<usize, AppError> {
    let dir = validate_dir(&target.dir)?;
    let slot = Slot::of(r.kind, target.version)?;
    let bad_form = |err: axum::extract::multipart::MultipartError| {
        AppError::invalid(
            "files",
            format!("The upload was cut off or malformed: {}", err.body_text()),
        )
    };
    let mut count = 0;
    while let Some(field) = multipart.next_field().await.map_err(bad_form)? {
        // An empty file input still sends a part, with no file name.
        let Some(file_name) = field
            .file_name()
            .filter(|n| !n.is_empty())
            .map(str::to_owned)
        else {
            continue;
        };
        // A folder pick sends `folder/sub/file`; a file pick just `file`.
        let path = if dir.is_empty() {
            file_name
        } else {
            format!("{dir}/{file_name}")
        };
        // The part borrows the form, and the store wants a stream of its
        // own: a small channel hands the chunks over as they arrive.
        let (tx, rx) = tokio::sync::mpsc::channel::<std::io::Result<bytes::Bytes>>(4);
        let body: ByteStream = Box::pin(futures_util::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|chunk| (chunk, rx))
        }));
        let feed = async move {
            let mut field = field;
            loop {
                let next = field
                    .chunk()
                    .await
                    .map_err(std::io::Error::other)
                    .transpose();
                let Some(chunk) = next else { break };
                let failed = chunk.is_err();
                if tx.send(chunk).await.is_err() || failed {
                    break;
                }
            }
        };
        let (stored, ()) = tokio::join!(
            state
                .services
                .assets
                .put_file(&who.me, r, slot, &path, body),
            feed
        );
        stored?;
        count += 1;
    }
    if count == 0 {
        return Err(AppError::invalid("files", "Choose at least one file."));
    }
    Ok(count)
}
