//! Batch scoring: `/scorings/new` (a model version over a dataset version,
//! its predictions as a new version of an output dataset), and the section
//! of a scoring job's page: what it scores, how many files are done, the
//! output version, and "Retry what is left" after a failed try.

use leptos::prelude::*;
use leptos::server_fn::ServerFn;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::api::scoring::{RetryScoring, ScoreDataset};
use crate::components::form::{last_error, FieldError, FormError};
use crate::models::url::encode;
use crate::models::{ScoringProgress, DEFAULT_SCORING_ENVIRONMENT};

/// The "Score a dataset" page; `?model=` and `?dataset=` fill its fields.
#[component]
pub fn ScoringPage() -> impl IntoView {
    let query = use_query_map();
    let given = |key: &str| query.with_untracked(|q| q.get(key).unwrap_or_default());
    let (model, dataset) = (given("model"), given("dataset"));
    let action = ServerAction::<ScoreDataset>::new();
    let error = Signal::derive(last_error(action));
    let field = move |id: &'static str, key: &'static str, label: &'static str, value: String| {
        view! {
            <label for=id>{label}</label>
            <input id=id type="text" name=format!("form[{key}]") value=value />
            <FieldError error field=key />
        }
    };
    view! {
        <Title text="Score a dataset" />
        <div class="page-head">
            <h1>"Score a dataset"</h1>
        </div>
        <p class="hint">
            "A model version scores every .jsonl and .csv file of a saved dataset version, the files shared among the replicas. "
            "For each input F its predictions go to F.predictions.jsonl in a new version of the output dataset, "
            "complete once every file is scored; after a failure, a retry redoes only the files not done."
        </p>
        <ActionForm action attr:class="run-template" attr:data-testid="scoring-form">
            <FormError error />
            <div class="form-grid">
                {field("scoring-model", "model", "Model (name, owner/name; :N for a version or @alias; none: its newest)", model)}
                {field("scoring-dataset", "dataset", "Dataset version (name:N; without :N its newest saved version)", dataset)}
                {field("scoring-output", "output", "Output dataset (made if it does not exist)", String::new())}
                <label for="scoring-replicas">"Replicas"</label>
                <input id="scoring-replicas" type="number" min="1" step="1" name="form[replicas]" value="1" />
                <FieldError error field="replicas" />
                {field("scoring-cpu", "cpu", "CPU per replica", "1".to_owned())}
                <FieldError error field="trainer.cpu" />
                {field("scoring-memory", "memory", "Memory per replica", "2Gi".to_owned())}
                <FieldError error field="trainer.memory" />
                {field("scoring-environment", "environment", "Environment (PaddlePaddle and the SDK)", DEFAULT_SCORING_ENVIRONMENT.to_owned())}
                {field("scoring-name", "name", "Job name (empty: score- and the model's name)", String::new())}
                <label for="scoring-script">"Hooks (optional Python, as serving takes them: load(model_dir) and predict(state, inputs); then the model need not be a PaddlePaddle inference model, and .jsonl requests name their inputs)"</label>
                <textarea id="scoring-script" name="form[script]" rows="6" spellcheck="false"></textarea>
                <FieldError error field="script" />
            </div>
            <footer>
                <a href="/models" class="button">"Cancel"</a>
                <button type="submit" class="primary" data-testid="start-scoring">"Score"</button>
            </footer>
        </ActionForm>
    }
}

/// The section of a scoring job's page.
#[component]
pub fn ScoringSection(progress: Option<ScoringProgress>) -> impl IntoView {
    let Some(p) = progress else {
        return ().into_any();
    };
    let used = &p.used;
    let (owner, name) = used.output.split_once('/').unwrap_or(("", &used.output));
    let output_href = format!(
        "/datasets/{}/{}?version={}",
        encode(owner),
        encode(name),
        used.version
    );
    let input_href = match used.dataset.rsplit_once(':') {
        Some((path, v)) => format!("/datasets/{path}?version={v}"),
        None => format!("/datasets/{}", used.dataset),
    };
    let state = if p.is_done() {
        "complete".to_owned()
    } else if p.output_state == "deleted" {
        "deleted".to_owned()
    } else {
        "open (uploading)".to_owned()
    };
    let skipped = (p.skipped > 0).then(|| {
        format!(
            " · {} other file(s) left alone (not .jsonl or .csv)",
            p.skipped
        )
    });
    let attempt = (used.attempt > 1).then(|| {
        view! {
            <p data-testid="scoring-attempt">
                {format!("Try {} of this scoring; the first was ", used.attempt)}
                <a href=format!("/jobs/{}", encode(&used.first))>{used.first.clone()}</a>
                ". Files scored by earlier tries were skipped."
            </p>
        }
    });
    let retry = p.may_retry().then(|| {
        view! {
            <form action=RetryScoring::url() method="post" class="inline">
                <input type="hidden" name="name" value=p.job.clone() />
                <button type="submit" class="small primary" data-testid="scoring-retry">"Retry what is left"</button>
            </form>
        }
    });
    view! {
        <section class="job-section" aria-labelledby="job-scoring" data-testid="scoring">
            <h2 id="job-scoring">"Batch scoring"</h2>
            <p>
                "Model " <code>{p.model.clone()}</code>
                " over " <a href=input_href><code>{used.dataset.clone()}</code></a>
                " → " <a href=output_href data-testid="scoring-output"><code>{used.output_version()}</code></a>
                " (" <span data-testid="scoring-output-state">{state}</span> ")"
            </p>
            {attempt}
            <p data-testid="scoring-progress">
                <progress value=p.scored max=p.inputs.max(1)></progress>
                " " <strong>{p.headline()}</strong> {skipped}
            </p>
            {retry}
        </section>
    }
    .into_any()
}
