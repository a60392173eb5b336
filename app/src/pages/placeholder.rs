//! Sections that are not built yet say what they will hold; they show no
//! made-up data.

use leptos::prelude::*;
use leptos_meta::Title;

/// `(path segment, title, what it will hold)` for each section still to come.
const SECTIONS: &[(&str, &str, &str)] = &[
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
