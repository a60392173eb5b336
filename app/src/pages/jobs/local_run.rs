//! What the job page shows of a local run: where and how it ran (host,
//! user, command, directory, Python and packages, git commit and its
//! uncommitted diff), its parameters, and "Run on the cluster".

use leptos::prelude::*;

use crate::api::jobs::get_local_run;
use crate::components::resource::resource;
use crate::models::time::format_utc;
use crate::models::url::encode as urlencode;
use crate::models::LocalRun;

/// The facts of local run `name`.
#[component]
pub fn LocalRunFacts(
    /// The run's job.
    name: String,
) -> impl IntoView {
    let run = resource(
        {
            let name = name.clone();
            move || name.clone()
        },
        get_local_run,
    );
    view! {
        <Transition fallback=|| ()>
            {move || Suspend::new(async move { run.await.ok().map(|run| view! { <Facts run /> }) })}
        </Transition>
    }
}

#[component]
fn Facts(run: LocalRun) -> impl IntoView {
    let f = run.facts.clone();
    let packages = f
        .packages
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join(", ");
    let params = run
        .params
        .iter()
        .map(|(k, v)| view! { <li><code>{format!("{k} = {v}")}</code></li> })
        .collect_view();
    let git = f.git.clone().map(|g| {
        let head = format!(
            "{}{}{}",
            g.commit.chars().take(12).collect::<String>(),
            if g.branch.is_empty() {
                String::new()
            } else {
                format!(" ({})", g.branch)
            },
            if g.dirty {
                " with uncommitted changes"
            } else {
                ""
            }
        );
        let diff = (!g.diff.is_empty()).then(|| {
            view! {
                <details>
                    <summary>"The uncommitted changes"</summary>
                    <pre class="diff" data-testid="run-diff">{g.diff.clone()}</pre>
                </details>
            }
        });
        view! { <dt>"Git"</dt><dd data-testid="run-git">{head}{diff}</dd> }
    });
    let to_cluster = format!("/jobs/{}/template", urlencode(&run.name));
    view! {
        <section class="local-run" data-testid="local-run">
            <h2>"Local run"</h2>
            <dl class="facts">
                <dt>"Ran on"</dt>
                <dd data-testid="run-host">{format!("{} as {}", f.host, f.user)}</dd>
                <dt>"Command"</dt>
                <dd><code data-testid="run-command">{f.command.join(" ")}</code></dd>
                <dt>"In"</dt>
                <dd><code>{f.working_dir.clone()}</code></dd>
                {(!f.python.is_empty()).then(|| view! { <dt>"Python"</dt><dd>{f.python.clone()}</dd> })}
                {(!packages.is_empty()).then(|| view! { <dt>"Packages"</dt><dd>{packages}</dd> })}
                {git}
                <dt>"Last heard of"</dt>
                <dd>{format_utc(run.heartbeat_at)}</dd>
            </dl>
            <h3>"Parameters"</h3>
            {if run.params.is_empty() {
                view! { <p class="muted">"None recorded."</p> }.into_any()
            } else {
                view! { <ul class="params" data-testid="run-params">{params}</ul> }.into_any()
            }}
            <p>
                <a class="button primary" href=to_cluster data-testid="run-on-cluster">"Run on the cluster"</a>
                " "
                <span class="hint">"A template of the same command, whose flags that carry the parameters can be changed; set its resources and run it."</span>
            </p>
        </section>
    }
}
