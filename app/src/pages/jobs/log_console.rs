//! The log console docked at the bottom of the Jobs page: the job's pods on
//! the left, the selected pod's log on the right, following live.
//!
//! Its state is the URL (`log`, `pod`, `find`, `only`, `ts`, `wrap`), so a
//! link reopens the same view, and the toolbar is a GET form that works
//! without JavaScript. Following and pausing need the page hydrated.

use leptos::prelude::*;
use leptos_router::components::A;
use leptos_router::hooks::use_query_map;

use crate::api::jobs::log_console;
use crate::components::links::page_href;
use crate::components::resource::resource;
use crate::components::sse::use_event_source;
use crate::models::url::encode as urlencode;
use crate::models::LogView;
use crate::models::Pod;

/// Lines shown at first and kept while following.
const TAIL_LINES: usize = 500;
const KEEP_LINES: usize = 5000;

/// Splits `<timestamp> <text>` as the executor writes log lines.
fn split_stamp(line: &str) -> (Option<&str>, &str) {
    match line.split_once(' ') {
        Some((stamp, rest))
            if stamp.len() >= 20 && stamp.ends_with('Z') && stamp.as_bytes()[4] == b'-' =>
        {
            (Some(stamp), rest)
        }
        _ => (None, line),
    }
}

/// The console for `job`, docked on `page` (its links keep that page's
/// other query parameters).
#[component]
pub fn LogConsole(
    /// The job whose pods are listed.
    job: String,
    /// The page's path (`/jobs`, `/pipelines/<run>`).
    page: String,
    /// Whether it has a close button and docks at the bottom of the page
    /// (a job's own page shows it in place, always open).
    #[prop(default = true)]
    closable: bool,
) -> impl IntoView {
    let page = StoredValue::new(page);
    let href = move |p: &leptos_router::params::ParamsMap,
                     changes: &[(&'static str, Option<String>)]| {
        page.with_value(|page| page_href(page, p, changes))
    };
    let params = use_query_map();
    let param = move |k: &str| params.with(|p| p.get(k)).filter(|v| !v.is_empty());
    let job = StoredValue::new(job);
    let data = resource(
        move || (job.get_value(), param("pod")),
        |(job, pod)| log_console(job, pod, TAIL_LINES),
    );
    view! {
        <section class=if closable { "log-console" } else { "log-console inline" } id="log" aria-label="Log console" data-testid="log-console">
            <header>
                <strong>{move || format!("Logs · {}", job.get_value())}</strong>
                {closable.then(|| view! {
                    <A href=move || params.with(|p| href(p, &[("log", None), ("pod", None), ("find", None), ("only", None), ("ts", None), ("wrap", None)]))
                        attr:class="close" attr:aria-label="Close the log console">"×"</A>
                })}
            </header>
            <Transition fallback=|| view! { <p class="loading">"Loading pods…"</p> }>
                {move || Suspend::new(async move {
                    match data.await {
                        Err(err) => view! { <p class="banner error" role="alert">{err.to_string()}</p> }.into_any(),
                        Ok(LogView { pods, pod, tail }) => {
                            view! {
                                <div class="log-body">
                                    <PodList pods selected=pod.clone() page=page.get_value() />
                                    {pod.map(|pod| {
                                        let flag = |k: &str| param(k).is_some_and(|v| v == "1" || v == "on");
                                        view! {
                                            <LogPane
                                                job=job.get_value()
                                                pod
                                                tail
                                                find=param("find").unwrap_or_default()
                                                only=flag("only")
                                                stamps=flag("ts")
                                                wrap=flag("wrap")
                                                link=params.with_untracked(|p| href(p, &[]))
                                                action=page.get_value()
                                            />
                                        }
                                    })}
                                </div>
                            }
                                .into_any()
                        }
                    }
                })}
            </Transition>
        </section>
    }
}

#[component]
fn PodList(pods: Vec<Pod>, selected: Option<String>, page: String) -> impl IntoView {
    let params = use_query_map();
    view! {
        <nav class="pods" aria-label="Pods">
            <ul>
                {pods
                    .into_iter()
                    .map(|pod| {
                        let href = params.with_untracked(|p| page_href(&page, p, &[("pod", Some(pod.name.clone()))]));
                        let (name, label) = (pod.name.clone(), pod.name.clone());
                        let class = if selected.as_deref() == Some(pod.name.as_str()) { "pod current" } else { "pod" };
                        view! {
                            <li>
                                <A href=href attr:class=class attr:data-pod=name>
                                    <span class="pod-name">{label}</span>
                                    <span class=format!("phase {}", pod.phase.as_str())>{pod.phase.as_str()}</span>
                                    {(!pod.gpus.is_empty())
                                        .then(|| {
                                            let ids = pod.gpus.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
                                            view! { <span class="pod-gpus" data-testid="pod-gpus" title="Its GPUs (CUDA_VISIBLE_DEVICES)">{format!("GPU {ids}")}</span> }
                                        })}
                                </A>
                            </li>
                        }
                    })
                    .collect_view()}
            </ul>
        </nav>
    }
}

/// The selected pod's log: its tail as the server read it, then followed
/// live; the search, filter and display flags come from the URL.
#[island]
fn LogPane(
    /// The job.
    job: String,
    /// The pod shown.
    pod: String,
    /// The log's last lines as the server read them.
    tail: String,
    /// Text to highlight (`find`).
    find: String,
    /// Show only lines that match (`only`).
    only: bool,
    /// Show timestamps (`ts`).
    stamps: bool,
    /// Wrap long lines (`wrap`).
    wrap: bool,
    /// This view's link.
    link: String,
    /// The page the toolbar's form goes to.
    action: String,
) -> impl IntoView {
    #[cfg(feature = "hydrate")]
    crate::island_hydrated();
    let search = find;
    let following = RwSignal::new(true);

    // The first paint is the tail the server read; once the live stream
    // speaks, its lines (first message: a fresh tail) replace it.
    let live: RwSignal<Option<Vec<String>>> = RwSignal::new(None);
    let first: Vec<String> = tail.lines().map(str::to_owned).collect();

    let stream_url = {
        let (job, pod) = (job.clone(), pod.clone());
        move || {
            following.get().then(|| {
                format!(
                    "/events/log?job={}&pod={}&tail={TAIL_LINES}",
                    urlencode(&job),
                    urlencode(&pod)
                )
            })
        }
    };
    let fresh = StoredValue::new(true);
    Effect::new(move |_| {
        if following.get() {
            fresh.set_value(true);
        }
    });
    use_event_source(stream_url, move |text| {
        live.update(|all| {
            let all = all.get_or_insert_with(Vec::new);
            if fresh.get_value() {
                all.clear();
                fresh.set_value(false);
            }
            all.extend(text.lines().map(str::to_owned));
            let excess = all.len().saturating_sub(KEEP_LINES);
            all.drain(..excess);
        })
    });

    let download = format!(
        "/api/v1/jobs/{}/pods/{}/log?timestamps=true&download=true",
        urlencode(&job),
        urlencode(&pod)
    );
    let pod_for_form = pod.clone();
    let job_for_form = job.clone();
    view! {
        <div class="log-pane">
            <form method="GET" action=action class="log-toolbar">
                <input type="hidden" name="log" value=job_for_form />
                <input type="hidden" name="pod" value=pod_for_form />
                <input type="search" name="find" placeholder="Search the log" value=search.clone() aria-label="Search the log" />
                <label><input type="checkbox" name="only" value="1" checked=only />"Only matching lines"</label>
                <label><input type="checkbox" name="ts" value="1" checked=stamps />"Timestamps"</label>
                <label><input type="checkbox" name="wrap" value="1" checked=wrap />"Wrap"</label>
                <button type="submit" class="small">"Apply"</button>
                <button type="button" class="small" data-testid="follow"
                    on:click=move |_| following.update(|f| *f = !*f)
                    aria-pressed=move || following.get().to_string()>
                    {move || if following.get() { "Pause" } else { "Follow" }}
                </button>
                <a class="button small" href=download download="">"Download"</a>
                <a href=link class="permalink">"Link to this view"</a>
            </form>
            <pre class=if wrap { "log wrap" } else { "log" } data-testid="log">
                {move || {
                    let needle = search.to_ascii_lowercase();
                    let show_stamps = stamps;
                    let render = |all: &[String]| {
                        all.iter()
                            .filter(|line| !only || needle.is_empty() || line.to_ascii_lowercase().contains(&needle))
                            .map(|line| {
                                let (stamp, text) = split_stamp(line);
                                let stamp = stamp.filter(|_| show_stamps).map(|s| view! { <span class="ts">{s.to_owned()}" "</span> });
                                view! { <div class="line">{stamp}{highlight(text, &needle)}</div> }
                            })
                            .collect_view()
                    };
                    live.with(|live| match live {
                        Some(lines) => render(lines),
                        None => render(&first),
                    })
                }}
            </pre>
        </div>
    }
}

/// The text with every match of `needle` in a `<mark>`, ignoring ASCII case
/// (Unicode case tables would cost the bundle tens of KB; log words that
/// matter are ASCII, and other text still matches as typed).
/// Plain pieces are `<span>`s, never bare neighbouring text nodes, which the
/// server's HTML would merge and hydration would then not find.
fn highlight(text: &str, needle: &str) -> Vec<AnyView> {
    let plain = |piece: &str| view! { <span>{piece.to_owned()}</span> }.into_any();
    let lower = text.to_ascii_lowercase();
    if needle.is_empty() {
        return vec![plain(text)];
    }
    let mut parts = Vec::new();
    let mut at = 0;
    while let Some(found) = lower[at..].find(needle) {
        let start = at + found;
        let end = start + needle.len();
        if start > at {
            parts.push(plain(&text[at..start]));
        }
        parts.push(view! { <mark>{text[start..end].to_owned()}</mark> }.into_any());
        at = end;
    }
    if at < text.len() || parts.is_empty() {
        parts.push(plain(&text[at..]));
    }
    parts
}
