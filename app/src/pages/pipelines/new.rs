//! The "New pipeline" dialog on `/pipelines?new=1`: a pipeline made from
//! templates, one row per node (`&rows=N` for more rows). It posts without
//! JavaScript too; a refused row shows the error under it. "Preview the
//! graph" sends the form as a GET to this page, which draws the graph (or
//! says what is wrong with it) and keeps what was typed.

use leptos::prelude::*;
use leptos_router::components::A;
use leptos_router::hooks::use_query_map;

use crate::api::pipelines::CreatePipeline;
use crate::api::templates::list_templates;
use crate::components::dialog::Dialog;
use crate::components::form::{last_error, FieldError, FormError};
use crate::components::resource::resource;
use crate::models::pipeline_form::{PipelineForm, FORM_ROWS, MAX_FORM_ROWS};
use crate::models::pipelines::layout::layout;
use crate::models::NodeState;

/// The dialog.
#[component]
pub fn NewPipelineDialog() -> impl IntoView {
    let action = ServerAction::<CreatePipeline>::new();
    let error = Signal::derive(last_error(action));
    let query = use_query_map();
    let rows = query
        .with_untracked(|q| q.get("rows"))
        .and_then(|r| r.parse::<usize>().ok())
        .unwrap_or(FORM_ROWS)
        .clamp(1, MAX_FORM_ROWS);
    let templates = resource(|| (), |_| list_templates());
    let draft = query.with_untracked(|q| PipelineForm::from_query(|k| q.get(k), rows));
    let preview = query
        .with_untracked(|q| q.get("preview").is_some())
        .then(|| view! { <Preview form=draft.clone() /> });
    let checked = draft.fail_fast == "on";
    let draft = StoredValue::new(draft);
    view! {
        <Dialog id="new-pipeline-title" title="New pipeline from templates" close="/pipelines" wide=true>
            <p class="hint">
                "One row per node: its template, its values (" <code>"NAME=VALUE"</code> " per line; "
                <code>"{{nodes.fit.model}}"</code> " is the model version node fit registered), and what it waits for ("
                <code>"fit"</code> ", " <code>"fit.failed"</code> ", " <code>"fit.finished"</code> "). Rows without a name are left out."
            </p>
            {preview}
            <ActionForm action>
                <FormError error />
                // For "Preview the graph" (a GET to this page); a post ignores them.
                <input type="hidden" name="new" value="1" />
                <input type="hidden" name="rows" value=rows.to_string() />
                <div class="form-grid">
                    <label for="pipeline-name">"Pipeline name"</label>
                    <input id="pipeline-name" name="form[name]" required value=draft.with_value(|d| d.name.clone()) />
                    <label for="pipeline-run">"Run name (optional)"</label>
                    <input id="pipeline-run" name="form[run]" value=draft.with_value(|d| d.run.clone()) />
                </div>
                <FieldError error field="name" />
                <label class="check">
                    <input type="checkbox" name="form[fail_fast]" value="on" checked=checked />
                    " Fail fast: start no other node after one fails"
                </label>
                <Transition fallback=|| view! { <p class="loading">"Loading templates…"</p> }>
                    {move || Suspend::new(async move {
                        let choices: Vec<String> = templates
                            .await
                            .map(|l| l.templates.iter().map(|t| format!("{}/{}", t.owner, t.spec.name)).collect())
                            .unwrap_or_default();
                        (0..rows).map(|i| {
                            let choices = choices.clone();
                            let field = move |f: &str| format!("form[nodes][{i}][{f}]");
                            let row = draft.with_value(|d| d.nodes[i].clone());
                            let picked = row.template.clone();
                            view! {
                                <fieldset class="node-row" data-testid="node-row">
                                    <legend>{format!("Node {}", i + 1)}</legend>
                                    <div class="form-grid">
                                        <label for=format!("node-{i}-name")>"Name"</label>
                                        <input id=format!("node-{i}-name") name=field("name") value=row.name />
                                        <label for=format!("node-{i}-template")>"Template"</label>
                                        <select id=format!("node-{i}-template") name=field("template")>
                                            <option value="">"—"</option>
                                            {choices.into_iter().map(|c| view! { <option value=c.clone() selected=c == picked>{c.clone()}</option> }).collect_view()}
                                        </select>
                                        <label for=format!("node-{i}-after")>"Waits for"</label>
                                        <input id=format!("node-{i}-after") name=field("after") value=row.after />
                                        <label for=format!("node-{i}-retries")>"Retries"</label>
                                        <input id=format!("node-{i}-retries") name=field("retries") type="number" min="0" max="9" value=row.retries />
                                    </div>
                                    <label for=format!("node-{i}-values")>"Values (NAME=VALUE per line)"</label>
                                    <textarea id=format!("node-{i}-values") name=field("values") rows="2">{row.values}</textarea>
                                    <FieldError error field=format!("nodes[{i}]") />
                                </fieldset>
                            }
                        }).collect_view()
                    })}
                </Transition>
                <FieldError error field="nodes" />
                <p>
                    <A href=format!("/pipelines?new=1&rows={}", (rows + 2).min(MAX_FORM_ROWS))>"More rows"</A>
                </p>
                <footer>
                    <A href="/pipelines" attr:class="button">"Cancel"</A>
                    <button type="submit" name="preview" value="1" formmethod="get" formaction="/pipelines" formnovalidate=true data-testid="preview">
                        "Preview the graph"
                    </button>
                    <button type="submit" class="primary">"Run the pipeline"</button>
                </footer>
            </ActionForm>
        </Dialog>
    }
}

/// The graph the form describes, every node pending, or what is wrong
/// with it (checked as a submit checks the graph; templates and values
/// are checked when it runs).
#[component]
fn Preview(form: PipelineForm) -> impl IntoView {
    let checked = form.to_submit().and_then(|s| {
        s.pipeline.validate()?;
        Ok(s.pipeline)
    });
    match checked {
        Err(err) => view! {
            <p class="banner error" role="alert" data-testid="preview-error">{format!("The graph: {err}")}</p>
        }
        .into_any(),
        Ok(spec) if spec.nodes.is_empty() => view! {
            <p class="banner" data-testid="preview-error">"No node yet: give a row a name and a template."</p>
        }
        .into_any(),
        Ok(spec) => {
            let nodes: Vec<NodeState> = spec.nodes.iter().map(|n| NodeState::pending(&n.name)).collect();
            let graph = layout(&spec, &nodes);
            let about = format!("{} nodes; the graph as it will run:", nodes.len());
            view! {
                <section class="preview" data-testid="preview-graph">
                    <p class="hint">{about}</p>
                    <super::run::GraphView graph nodes base="/pipelines?new=1".to_owned() filter=None />
                </section>
            }
            .into_any()
        }
    }
}
