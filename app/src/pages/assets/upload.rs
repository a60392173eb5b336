//! Uploading files and folders into the folder shown.
//!
//! The server renders a plain multipart form that works without JavaScript
//! (`POST /upload/...`). Hydrated, the same form sends each file on its own
//! with `PUT` to the REST route through `XMLHttpRequest`, whose upload
//! events give a progress bar per file and overall (fetch has none). A file
//! lands whole or not at all, so a failed one is simply sent again.

use leptos::prelude::*;

use crate::models::{format_bytes, AssetRef, FileBase};

/// Where one file's upload is. (The server only ever renders an empty
/// queue: the states are set in the browser.)
#[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
#[derive(Debug, Clone, PartialEq)]
pub enum UpState {
    /// Waiting for a free slot.
    Queued,
    /// Bytes are going out.
    Sending,
    /// Stored.
    Done,
    /// Refused or cut off, with why.
    Failed(String),
}

/// One file of the queue.
#[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
#[derive(Debug, Clone)]
pub struct UploadItem {
    /// Its number in the queue, which also keys its `File`.
    pub id: u64,
    /// Where it goes inside the asset.
    pub path: String,
    /// `PUT` URL.
    pub url: String,
    /// Its size, bytes.
    pub size: f64,
    /// Bytes sent so far.
    pub sent: RwSignal<f64>,
    /// Where it is.
    pub state: RwSignal<UpState>,
}

/// The uploader's queue of files: in flight, done and failed.
#[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
#[derive(Clone, Copy)]
pub struct UploadQueue {
    /// Every file queued since the page opened.
    pub items: RwSignal<Vec<UploadItem>>,
    /// Uploads running now.
    pub workers: RwSignal<usize>,
    /// Bumped when the queue drains (the island then refreshes the page's
    /// summary and listing).
    pub tick: RwSignal<u64>,
    /// The island's owner: the items' signals belong to it, not to the
    /// reactive scope of whichever row created them.
    #[cfg(feature = "hydrate")]
    owner: StoredValue<Owner>,
    /// The browser's `File` of each item (browser only).
    #[cfg(feature = "hydrate")]
    files: StoredValue<std::collections::HashMap<u64, web_sys::File>, LocalStorage>,
}

impl UploadQueue {
    /// An empty queue that bumps `tick` when it drains.
    pub fn new(tick: RwSignal<u64>) -> Self {
        Self {
            items: RwSignal::new(Vec::new()),
            workers: RwSignal::new(0),
            tick,
            #[cfg(feature = "hydrate")]
            files: StoredValue::new_local(Default::default()),
            #[cfg(feature = "hydrate")]
            owner: StoredValue::new(Owner::current().unwrap_or_default()),
        }
    }
}

/// Files sent at once: enough to hide per-request latency, few enough that
/// one file's progress still moves.
#[cfg(feature = "hydrate")]
const PARALLEL: usize = 3;

/// The ids of the page's parts that uploads change (its summary, its file
/// listing), brought up to date when the queue drains.
pub const SUMMARY_REGION: &str = "asset-summary";
/// See [`SUMMARY_REGION`].
pub const FILES_REGION: &str = "asset-files";

/// The upload form for `dir` of a dataset or of a model version.
#[island]
pub fn Uploader(
    /// The asset.
    r: AssetRef,
    /// A model's version.
    version: Option<u32>,
    /// The folder shown: files go in here.
    dir: String,
    /// How many files the form without JavaScript stored (`uploaded`).
    uploaded: Option<String>,
    /// Why the form without JavaScript failed (`upload_error`).
    failed: Option<String>,
) -> impl IntoView {
    #[cfg(feature = "hydrate")]
    crate::island_hydrated();
    // Bumped when the queue drains: the listing shows the new files.
    let tick = RwSignal::new(0u64);
    let queue = UploadQueue::new(tick);
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        if tick.get() > 0 {
            crate::components::live::refresh_now(&[SUMMARY_REGION, FILES_REGION]);
        }
    });
    let base = FileBase::Asset {
        kind: r.kind,
        owner: r.owner.clone(),
        name: r.name.clone(),
    };
    let mut action = format!(
        "/upload{}?dir={}",
        r.href(),
        crate::models::url::encode(&dir)
    );
    if let Some(v) = version {
        action.push_str(&format!("&version={v}"));
    }
    let files_ref = NodeRef::<leptos::html::Input>::new();
    let folder_ref = NodeRef::<leptos::html::Input>::new();
    let where_to = if dir.is_empty() {
        "the top folder".to_owned()
    } else {
        format!("“{dir}”")
    };
    #[cfg(feature = "hydrate")]
    let on_submit = {
        let dir = dir.clone();
        move |ev: leptos::ev::SubmitEvent| {
            ev.prevent_default();
            let mut picked = Vec::new();
            for input in [files_ref.get_untracked(), folder_ref.get_untracked()]
                .into_iter()
                .flatten()
            {
                picked.extend(xhr::files_of(input.files()));
                input.set_value("");
            }
            xhr::enqueue(queue, &base, &dir, version, picked);
        }
    };
    #[cfg(not(feature = "hydrate"))]
    let on_submit = {
        let _ = &base;
        |_ev: leptos::ev::SubmitEvent| {}
    };
    #[cfg(feature = "hydrate")]
    let on_drop = {
        let base = FileBase::Asset {
            kind: r.kind,
            owner: r.owner.clone(),
            name: r.name.clone(),
        };
        let dir = dir.clone();
        move |ev: leptos::ev::DragEvent| {
            ev.prevent_default();
            let files = ev.data_transfer().and_then(|d| d.files());
            xhr::enqueue(queue, &base, &dir, version, xhr::files_of(files));
        }
    };
    #[cfg(not(feature = "hydrate"))]
    let on_drop = |_ev: leptos::ev::DragEvent| {};
    // `webkitdirectory` (a folder picker, in every current browser) is not
    // an attribute the view macro knows.
    let folder_input = {
        use leptos::tachys::html::attribute::custom::CustomAttribute;
        view! { <input type="file" name="folder" multiple node_ref=folder_ref data-testid="pick-folder" /> }
            .attr("webkitdirectory", "")
    };
    view! {
        <section class="uploader" data-testid="uploader">
            <h2>"Upload"</h2>
            {failed.map(|why| view! { <p class="banner error" role="alert">{format!("Upload failed: {why}")}</p> })}
            {uploaded.map(|n| view! { <p class="banner ok" role="status">{format!("Uploaded {n} files.")}</p> })}
            <form
                method="POST"
                action=action
                enctype="multipart/form-data"
                class="drop-zone"
                on:submit=on_submit
                on:dragover=|ev: leptos::ev::DragEvent| ev.prevent_default()
                on:drop=on_drop
            >
                <p>{format!("Files go into {where_to}. Drop files here, or choose:")}</p>
                <label>
                    "Files "
                    <input type="file" name="files" multiple node_ref=files_ref data-testid="pick-files" />
                </label>
                <label>
                    "A folder "
                    {folder_input}
                </label>
                <button type="submit" class="primary">"Upload"</button>
            </form>
            <UploadProgress queue />
        </section>
    }
}

/// Overall progress, then a bar per file with its state.
#[component]
fn UploadProgress(queue: UploadQueue) -> impl IntoView {
    let totals = move || {
        queue.items.with(|items| {
            let done = items
                .iter()
                .filter(|i| i.state.get() == UpState::Done)
                .count();
            let failed = items
                .iter()
                .filter(|i| matches!(i.state.get(), UpState::Failed(_)))
                .count();
            let sent: f64 = items.iter().map(|i| i.sent.get()).sum();
            let size: f64 = items.iter().map(|i| i.size).sum();
            (items.len(), done, failed, sent, size)
        })
    };
    move || {
        let (n, done, failed, sent, size) = totals();
        (n > 0).then(|| {
            let summary = format!(
                "{done} of {n} files uploaded · {} of {}{}",
                format_bytes(sent as u64),
                format_bytes(size as u64),
                if failed > 0 {
                    format!(" · {failed} failed")
                } else {
                    String::new()
                }
            );
            view! {
                <div class="upload-progress" data-testid="upload-progress">
                    <p class="overall">
                        <progress max=size.max(1.0) value=sent aria-label="All files"></progress>
                        <span data-testid="upload-summary">{summary}</span>
                    </p>
                    <ul class="upload-items">
                        <For each=move || queue.items.get() key=|i| i.id let:item>
                            <UploadRow item queue />
                        </For>
                    </ul>
                </div>
            }
        })
    }
}

#[component]
fn UploadRow(item: UploadItem, queue: UploadQueue) -> impl IntoView {
    let UploadItem {
        id,
        path,
        size,
        sent,
        state,
        ..
    } = item;
    let label = move || match state.get() {
        UpState::Queued => "waiting".to_owned(),
        UpState::Sending => format!(
            "{} of {}",
            format_bytes(sent.get() as u64),
            format_bytes(size as u64)
        ),
        UpState::Done => "done".to_owned(),
        UpState::Failed(why) => why,
    };
    let failed = move || matches!(state.get(), UpState::Failed(_));
    let _ = (id, queue);
    view! {
        <li class="upload-item" class:failed=failed class:done=move || state.get() == UpState::Done data-path=path.clone()>
            <span class="path">{path.clone()}</span>
            <progress max=size.max(1.0) value=move || sent.get() aria-label=path.clone()></progress>
            <span class="state">{label}</span>
            {move || failed().then(|| view! {
                <button type="button" class="small" on:click=move |_| {
                    #[cfg(feature = "hydrate")]
                    xhr::retry(queue, id);
                }>"Retry"</button>
            })}
        </li>
    }
}

#[cfg(feature = "hydrate")]
mod xhr {
    //! The browser side: `PUT` each file with `XMLHttpRequest`.

    use leptos::prelude::*;
    use wasm_bindgen::closure::Closure;
    use wasm_bindgen::JsCast;

    use super::{UpState, UploadItem, UploadQueue, PARALLEL};
    use crate::models::FileBase;

    /// The files of a file input or a drop, with the path each goes to
    /// below the folder (a folder pick keeps its relative paths).
    pub fn files_of(list: Option<web_sys::FileList>) -> Vec<(String, web_sys::File)> {
        let Some(list) = list else { return Vec::new() };
        (0..list.length())
            .filter_map(|i| list.get(i))
            .map(|f| {
                let relative = js_sys::Reflect::get(&f, &"webkitRelativePath".into())
                    .ok()
                    .and_then(|v| v.as_string())
                    .filter(|p| !p.is_empty())
                    .unwrap_or_else(|| f.name());
                (relative, f)
            })
            .collect()
    }

    /// Queues files for `dir` and starts sending.
    pub fn enqueue(
        queue: UploadQueue,
        base: &FileBase,
        dir: &str,
        version: Option<u32>,
        files: Vec<(String, web_sys::File)>,
    ) {
        if files.is_empty() {
            return;
        }
        let first = queue.items.with_untracked(|i| i.len() as u64);
        let mut new = Vec::new();
        for (n, (relative, file)) in files.into_iter().enumerate() {
            let path = if dir.is_empty() {
                relative
            } else {
                format!("{dir}/{relative}")
            };
            let id = first + n as u64;
            let (sent, state) = queue.owner.with_value(|owner| {
                owner.with(|| (RwSignal::new(0.0), RwSignal::new(UpState::Queued)))
            });
            new.push(UploadItem {
                id,
                url: base.file_url(&path, version),
                path,
                size: file.size(),
                sent,
                state,
            });
            queue.files.update_value(|f| {
                f.insert(id, file);
            });
        }
        queue.items.update(|i| i.extend(new));
        start(queue);
    }

    /// Sends a failed file again (a retry replaces whatever was there).
    pub fn retry(queue: UploadQueue, id: u64) {
        let Some(item) = queue
            .items
            .with_untracked(|i| i.iter().find(|x| x.id == id).cloned())
        else {
            return;
        };
        item.sent.set(0.0);
        item.state.set(UpState::Queued);
        start(queue);
    }

    fn start(queue: UploadQueue) {
        while queue.workers.get_untracked() < PARALLEL {
            queue.workers.update(|w| *w += 1);
            leptos::task::spawn_local(async move {
                while let Some(item) = next(queue) {
                    let file = queue.files.with_value(|f| f.get(&item.id).cloned());
                    let outcome = match file {
                        Some(file) => send(&item, file).await,
                        None => Err("the file is no longer available; pick it again".to_owned()),
                    };
                    match outcome {
                        Ok(()) => {
                            item.sent.set(item.size);
                            item.state.set(UpState::Done);
                            queue.files.update_value(|f| {
                                f.remove(&item.id);
                            });
                        }
                        Err(why) => item.state.set(UpState::Failed(why)),
                    }
                }
                queue.workers.update(|w| *w -= 1);
                if queue.workers.get_untracked() == 0 {
                    queue.tick.update(|t| *t += 1);
                }
            });
        }
    }

    /// The next queued file, now marked as sending.
    fn next(queue: UploadQueue) -> Option<UploadItem> {
        let item = queue.items.with_untracked(|items| {
            items
                .iter()
                .find(|i| i.state.get_untracked() == UpState::Queued)
                .cloned()
        })?;
        item.state.set(UpState::Sending);
        Some(item)
    }

    /// One `PUT`; resolves when the server answered or the connection failed.
    async fn send(item: &UploadItem, file: web_sys::File) -> Result<(), String> {
        let xhr = web_sys::XmlHttpRequest::new().map_err(|_| "the browser refused".to_owned())?;
        xhr.open("PUT", &item.url)
            .map_err(|_| "the browser refused the request".to_owned())?;
        let _ = xhr.set_request_header("Content-Type", "application/octet-stream");
        let sent = item.sent;
        let progress =
            Closure::<dyn Fn(web_sys::ProgressEvent)>::new(move |ev: web_sys::ProgressEvent| {
                sent.set(ev.loaded());
            });
        if let Ok(upload) = xhr.upload() {
            upload.set_onprogress(Some(progress.as_ref().unchecked_ref()));
        }
        let done = js_sys::Promise::new(&mut |resolve, _reject| {
            xhr.set_onloadend(Some(&resolve));
        });
        xhr.send_with_opt_blob(Some(&file))
            .map_err(|_| "the browser could not read the file".to_owned())?;
        let _ = wasm_bindgen_futures::JsFuture::from(done).await;
        drop(progress);
        match xhr.status().unwrap_or(0) {
            200..=299 => Ok(()),
            0 => Err("the connection broke; retry".to_owned()),
            status => {
                let text = xhr.response_text().ok().flatten().unwrap_or_default();
                let message = serde_json::from_str::<serde_json::Value>(&text)
                    .ok()
                    .and_then(|v| v["error"]["message"].as_str().map(str::to_owned))
                    .unwrap_or_else(|| format!("the server answered {status}"));
                Err(message)
            }
        }
    }
}
