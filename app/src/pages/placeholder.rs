//! Sections that are not built yet say what they will hold; they show no
//! made-up data.

use leptos::prelude::*;
use leptos_meta::Title;

/// `(path segment, title, what it will hold)` for each section still to come.
const SECTIONS: &[(&str, &str, &str)] = &[
    (
        "jobs",
        "Jobs",
        "Distributed training jobs (parameter servers and trainers) you submit will be listed here, with their status, per-role readiness, logs and resource charts.",
    ),
    (
        "serving",
        "Serving",
        "Models you serve as HTTP inference services will be listed here, with replicas, QPS and latency, ready to scale or stop.",
    ),
    (
        "datasets",
        "Datasets",
        "Your datasets and public ones will be here to browse, upload, download and share.",
    ),
    (
        "models",
        "Models",
        "Models and their versions, produced by jobs or uploaded, will be here to download, share and serve.",
    ),
    (
        "notebooks",
        "Notebooks",
        "Your own notebook environment, with a private workspace that can submit jobs, will open from here.",
    ),
];

/// A section of the console that has no content yet.
#[component]
pub fn SectionPage(
    /// Path segment of the section, e.g. `jobs`.
    section: &'static str,
) -> impl IntoView {
    let (_, title, holds) = SECTIONS
        .iter()
        .find(|(key, _, _)| *key == section)
        .copied()
        .unwrap_or((section, section, ""));
    view! {
        <Title text=title />
        <h1>{title}</h1>
        <section class="empty-state">
            <p>{holds}</p>
            <p class="muted">"Nothing here yet."</p>
        </section>
    }
}
