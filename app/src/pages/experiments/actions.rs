//! An experiment's actions: pause, resume, stop, more trials, failed trials
//! again. Each is a plain form posting to its server function (which sends
//! the browser back to the page); hydrated, the island sends it itself and
//! refreshes the page's region, showing a refusal beside the buttons.

use leptos::prelude::*;
use leptos::server_fn::ServerFn;

use crate::api::experiments::{
    ExtendExperiment, PauseExperiment, ResumeExperiment, RetryExperiment, StopExperiment,
};
use crate::components::form::last_error;
use crate::error::AppError;
use crate::models::ExperimentStatus;

/// The id of the experiment page's live region.
pub const REGION: &str = "experiment";

/// Trials "More trials" offers to add.
const MORE_TRIALS: u32 = 10;

/// The buttons that fit experiment `name` in `status` (its name), with
/// `failed` failed trials.
#[island]
pub fn ExperimentActions(name: String, status: String, failed: u32) -> impl IntoView {
    #[cfg(feature = "hydrate")]
    crate::island_hydrated();
    let pause = ServerAction::<PauseExperiment>::new();
    let resume = ServerAction::<ResumeExperiment>::new();
    let stop = ServerAction::<StopExperiment>::new();
    let extend = ServerAction::<ExtendExperiment>::new();
    let retry = ServerAction::<RetryExperiment>::new();
    let errors = [
        sent_error(pause),
        sent_error(resume),
        sent_error(stop),
        sent_error(extend),
        sent_error(retry),
    ];
    let error: Signal<Option<AppError>> =
        Signal::derive(move || errors.iter().find_map(|e| e.get()));
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        let done = [
            pause.version(),
            resume.version(),
            stop.version(),
            extend.version(),
            retry.version(),
        ]
        .iter()
        .map(|v| v.get())
        .sum::<usize>();
        if done > 0 {
            crate::components::live::refresh_now(&[REGION]);
        }
    });
    let status = ExperimentStatus::parse(&status).unwrap_or(ExperimentStatus::Failed);
    let more = RwSignal::new(MORE_TRIALS.to_string());
    let simple = |label: &'static str,
                  testid: &'static str,
                  class: &'static str,
                  url: &'static str,
                  go: Box<dyn Fn() + Send + Sync>| {
        let name = name.clone();
        view! {
            <form method="post" action=url class="inline" on:submit=move |ev: leptos::ev::SubmitEvent| { ev.prevent_default(); go(); }>
                <input type="hidden" name="name" value=name />
                <button type="submit" class=class data-testid=testid>{label}</button>
            </form>
        }
    };
    let n = name.clone();
    let paused = (status == ExperimentStatus::Running).then(|| {
        simple(
            "Pause",
            "pause-experiment",
            "",
            PauseExperiment::url(),
            Box::new(move || {
                pause.dispatch(PauseExperiment { name: n.clone() });
            }),
        )
    });
    let n = name.clone();
    let resumed = (status == ExperimentStatus::Paused).then(|| {
        simple(
            "Resume",
            "resume-experiment",
            "primary",
            ResumeExperiment::url(),
            Box::new(move || {
                resume.dispatch(ResumeExperiment { name: n.clone() });
            }),
        )
    });
    let n = name.clone();
    let stopped = status.is_active().then(|| {
        simple(
            "Stop",
            "stop-experiment",
            "danger",
            StopExperiment::url(),
            Box::new(move || {
                stop.dispatch(StopExperiment { name: n.clone() });
            }),
        )
    });
    let n = name.clone();
    let retried = (failed > 0).then(|| {
        simple(
            "Run the failed trials again",
            "retry-experiment",
            "",
            RetryExperiment::url(),
            Box::new(move || {
                retry.dispatch(RetryExperiment { name: n.clone() });
            }),
        )
    });
    let n = name.clone();
    let extended = (status != ExperimentStatus::Failed).then(|| {
        let on_submit = move |ev: leptos::ev::SubmitEvent| {
            ev.prevent_default();
            let Ok(count) = more.get_untracked().trim().parse::<u32>() else {
                return;
            };
            extend.dispatch(ExtendExperiment { name: n.clone(), more: count });
        };
        view! {
            <form method="post" action=ExtendExperiment::url() class="inline" on:submit=on_submit>
                <input type="hidden" name="name" value=name.clone() />
                <label class="inline">
                    <input type="number" name="more" min="1" max="1000" required class="short" aria-label="Trials to add"
                        value=MORE_TRIALS.to_string() prop:value=move || more.get() on:input=move |ev| more.set(event_target_value(&ev)) />
                </label>
                <button type="submit" data-testid="extend-experiment">"More trials"</button>
            </form>
        }
    });
    view! {
        <div class="actions experiment-actions">
            {paused}{resumed}{stopped}{extended}{retried}
        </div>
        <RefusalBanner error />
    }
}

/// The refusal of `action` once this island has sent it (a refusal of a
/// form posted without JavaScript is the page's to show: see
/// `detail::NoScriptErrors`).
fn sent_error<A, S>(action: ServerAction<A>) -> Signal<Option<AppError>>
where
    A: leptos::server_fn::ServerFn<Output = S, Error = AppError> + Clone + Send + Sync + 'static,
    S: Clone + Send + Sync + 'static,
{
    let last = last_error(action);
    Signal::derive(move || (action.version().get() > 0).then(last).flatten())
}

/// An action's refusal, whatever field it names (the forms' only fields
/// are the experiment's name and the number of trials).
#[component]
pub fn RefusalBanner(
    /// The refusal, if any.
    error: Signal<Option<AppError>>,
) -> impl IntoView {
    move || {
        error.get().map(|e| {
            view! { <p class="banner error" role="alert" data-testid="action-error">{e.to_string()}</p> }
        })
    }
}
