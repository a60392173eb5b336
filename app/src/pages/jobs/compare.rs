//! `/jobs/compare?jobs=a,b,c&diff=1&tag=loss`: runs side by side. Their
//! parameters and final metric values in one table (a column per run, with
//! "only differences"), the chosen tags' curves of every run overlaid in
//! charts drawn on the server with PaddleBoard's drawing code, and the
//! comparison as CSV. Every choice is in the URL and every control is a
//! link or a GET form, so the page works without JavaScript.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::api::compare::compare_runs;
use crate::components::chart::{css_color, format_value, frame, render};
use crate::components::markup::Markup;
use crate::components::resource::resource;
use crate::models::board::{BoardChart, BoardView, CHART_HEIGHT, CHART_WIDTH, MAX_BOARD_JOBS};
use crate::models::compare::{CompareView, Comparison};
use crate::models::time::format_utc;
use crate::models::XAxis;
use crate::pages::paddleboard::lines;

/// The page's view, from the URL.
fn view_from_url() -> CompareView {
    use_query_map()
        .with_untracked(|p| CompareView::from_params(|k| p.get_all(k).unwrap_or_default()))
}

/// The compare page.
#[component]
pub fn ComparePage() -> impl IntoView {
    let view = view_from_url();
    let checked = view.check();
    let query = view.query();
    let data = resource(
        move || query.clone(),
        move |query| {
            let checked = checked.clone();
            async move {
                checked?;
                compare_runs(query).await
            }
        },
    );
    let head = head(&view);
    view! {
        <Title text="Compare runs" />
        {head}
        <Transition fallback=|| view! { <p class="loading">"Comparing…"</p> }>
            {move || {
                let view = view.clone();
                Suspend::new(async move {
                    match data.await {
                        Err(err) => view! {
                            <p class="banner error" role="alert" data-testid="compare-error">{err.to_string()}</p>
                            <p>"Tick runs in the " <a href="/jobs">"job table"</a> " and press Compare, or name them: "
                               <code>"/jobs/compare?jobs=a,b"</code> "."</p>
                        }.into_any(),
                        Ok(c) => comparison(c, view).into_any(),
                    }
                })
            }}
        </Transition>
    }
}

/// The title and the page's links: the toggle, the CSV, PaddleBoard.
fn head(view: &CompareView) -> impl IntoView {
    let toggled = CompareView {
        only_differences: !view.only_differences,
        ..view.clone()
    };
    let toggle_label = if view.only_differences {
        "Show all rows"
    } else {
        "Only differences"
    };
    let has_runs = !view.jobs.is_empty();
    let board = (has_runs && view.jobs.len() <= MAX_BOARD_JOBS).then(|| {
        BoardView {
            jobs: view.jobs.clone(),
            ..BoardView::default()
        }
        .href()
    });
    view! {
        <div class="page-head">
            <h1>"Compare runs"</h1>
            {has_runs.then(|| view! {
                <span class="actions">
                    <a href=toggled.href() class="button" data-testid="only-differences"
                       aria-pressed=view.only_differences.to_string()>{toggle_label}</a>
                    <a href=view.csv_href() class="button" download="" data-testid="compare-csv">"CSV"</a>
                    {board.map(|href| view! { <a href=href class="button">"Open in PaddleBoard"</a> })}
                </span>
            })}
        </div>
    }
}

/// The table, the tag picker and the charts.
fn comparison(c: Comparison, view: CompareView) -> impl IntoView {
    let table = table_html(&c, view.only_differences);
    let chosen: Vec<String> = c.charts.iter().map(|ch| ch.tag.clone()).collect();
    let tags: Vec<String> = c.tags().map(str::to_owned).collect();
    let board = BoardView {
        jobs: view.jobs.clone(),
        smoothing: 0.0,
        ..BoardView::default()
    };
    let charts = c
        .charts
        .into_iter()
        .map(|chart| chart_card(chart, &board))
        .collect_view();
    let jobs = view.jobs.join(",");
    view! {
        <div class="compare-scroll">
            <table class="grid compare" data-testid="comparison" inner_html=table></table>
        </div>
        <h2>"Curves"</h2>
        {tags.is_empty().then(|| view! { <p class="empty">"None of these runs has logged metrics."</p> })}
        {(!tags.is_empty()).then(|| view! {
            <form method="GET" action="/jobs/compare" class="filters" data-testid="overlay-form">
                <input type="hidden" name="jobs" value=jobs />
                {view.only_differences.then(|| view! { <input type="hidden" name="diff" value="1" /> })}
                <fieldset>
                    <legend>"Overlay"</legend>
                    {tags.into_iter().map(|tag| {
                        let on = chosen.contains(&tag);
                        view! {
                            <label class="check">
                                <input type="checkbox" name="tag" value=tag.clone() checked=on />
                                {tag}
                            </label>
                        }
                    }).collect_view()}
                </fieldset>
                <button type="submit">"Show"</button>
            </form>
        })}
        <div class="chart-grid">{charts}</div>
    }
}

/// One tag's curves, every run's overlaid: PaddleBoard's lines, frame and
/// SVG, unsmoothed and without the pointer (a hundred runs' values under
/// it would be no help; "Open in PaddleBoard" has it for up to ten).
fn chart_card(chart: BoardChart, board: &BoardView) -> impl IntoView {
    let drawn = lines(&chart.series, board);
    let svg = frame(&drawn, None, false, false, (CHART_WIDTH, CHART_HEIGHT))
        .map(|f| render(&drawn, &f, XAxis::Step, false))
        .unwrap_or_default();
    let legend = chart
        .series
        .iter()
        .map(|s| {
            let color = board.jobs.iter().position(|j| j == &s.job).unwrap_or(0);
            view! {
                <span class="legend-item">
                    <span class="swatch" style=format!("background:{}", css_color(color))></span>
                    {s.job.clone()}
                </span>
            }
        })
        .collect_view();
    view! {
        <article class="chart-card" data-tag=chart.tag.clone() data-testid="compare-chart">
            <header><h3>{chart.tag.clone()}</h3></header>
            <div class="chart-box"><div class="chart-svg" inner_html=svg></div></div>
            <footer class="legend">{legend}</footer>
        </article>
    }
}

/// The side-by-side table as HTML (see `components::markup`): a column per
/// run, a row per parameter and per final metric value.
fn table_html(c: &Comparison, only_differences: bool) -> String {
    let (params, metrics) = c.shown(only_differences);
    let mut m =
        Markup::with_capacity(256 * (c.runs.len() + 1) * (params.len() + metrics.len() + 4));
    m.open("thead", &[])
        .open("tr", &[])
        .element("th", &[], "Run");
    for run in &c.runs {
        m.open("th", &[("data-run", &run.name)]).text(&run.name);
        if !run.origin.is_empty() {
            m.element("small", &[("class", "origin")], &run.origin);
        }
        m.close("th");
    }
    m.close("tr").close("thead").open("tbody", &[]);
    m.open("tr", &[]).element("th", &[], "Status");
    for run in &c.runs {
        let class = format!("status {}", run.status.as_str());
        m.open("td", &[])
            .element("span", &[("class", &class)], run.status.label())
            .close("td");
    }
    m.close("tr")
        .open("tr", &[])
        .element("th", &[], "Submitted");
    for run in &c.runs {
        m.element("td", &[], &format_utc(run.created_at));
    }
    m.close("tr");
    section(
        &mut m,
        "Parameters",
        (params.len(), c.params.len()),
        c,
        only_differences,
    );
    for row in params {
        let class = if row.differs() { "differs" } else { "same" };
        m.open("tr", &[("class", class), ("data-param", &row.name)])
            .element("th", &[], &row.name);
        for v in &row.values {
            m.element("td", &[], v.as_deref().unwrap_or("—"));
        }
        m.close("tr");
    }
    section(
        &mut m,
        "Final metrics",
        (metrics.len(), c.metrics.len()),
        c,
        only_differences,
    );
    for row in metrics {
        let class = if row.values_differ() {
            "differs"
        } else {
            "same"
        };
        m.open("tr", &[("class", class), ("data-metric", &row.name)])
            .element("th", &[], &row.name);
        for v in &row.values {
            match v {
                Some(f) => {
                    let title = format!("{} at step {}", f.value.0, f.step);
                    m.element(
                        "td",
                        &[("class", "num"), ("title", &title)],
                        &format_value(f.value.0),
                    );
                }
                None => {
                    m.element("td", &[], "—");
                }
            }
        }
        m.close("tr");
    }
    m.close("tbody");
    m.into_string()
}

/// A section's heading row, saying how many rows "only differences" hides.
fn section(
    m: &mut Markup,
    title: &str,
    (shown, all): (usize, usize),
    c: &Comparison,
    only_differences: bool,
) {
    let colspan = (c.runs.len() + 1).to_string();
    m.open("tr", &[("class", "section")])
        .open("th", &[("colspan", &colspan)])
        .text(title);
    if all == 0 {
        m.element("small", &[("class", "muted")], " none recorded");
    } else if only_differences && shown < all {
        let note = format!(" {shown} of {all} differ");
        m.element("small", &[("class", "muted")], &note);
    }
    m.close("th").close("tr");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::board::JsonF64;
    use crate::models::compare::{rows, CompareRow, ComparedRun, FinalValue};
    use crate::models::{JobSource, JobStatus};
    use std::collections::BTreeMap;

    fn comparison() -> Comparison {
        let run = |name: &str| ComparedRun {
            name: name.into(),
            status: JobStatus::Succeeded,
            source: JobSource::Console,
            origin: "template fit v1".into(),
            created_at: 0,
        };
        let params = vec![
            BTreeMap::from([
                ("lr".to_owned(), "0.1".to_owned()),
                ("bs".to_owned(), "8".to_owned()),
            ]),
            BTreeMap::from([
                ("lr".to_owned(), "0.2".to_owned()),
                ("bs".to_owned(), "8".to_owned()),
            ]),
        ];
        let last = |v| {
            Some(FinalValue {
                step: 3,
                value: JsonF64(v),
            })
        };
        Comparison {
            runs: vec![run("a"), run("b<")],
            params: rows(&params),
            metrics: vec![CompareRow {
                name: "loss".into(),
                values: vec![last(0.5), None],
            }],
            charts: vec![],
        }
    }

    #[test]
    fn the_table_has_a_column_per_run_and_marks_the_rows_that_differ() {
        let html = table_html(&comparison(), false);
        for part in [
            "<th data-run=\"b&lt;\">b&lt;<small class=\"origin\">template fit v1</small></th>",
            "<tr class=\"same\" data-param=\"bs\"><th>bs</th><td>8</td><td>8</td></tr>",
            "<tr class=\"differs\" data-param=\"lr\"><th>lr</th><td>0.1</td><td>0.2</td></tr>",
            "<td class=\"num\" title=\"0.5 at step 3\">0.5</td><td>—</td>",
        ] {
            assert!(html.contains(part), "{part} not in {html}");
        }
    }

    #[test]
    fn only_differences_leaves_out_the_rows_every_run_shares_and_says_so() {
        let html = table_html(&comparison(), true);
        assert!(!html.contains("data-param=\"bs\""), "{html}");
        assert!(html.contains("data-param=\"lr\""), "{html}");
        assert!(html.contains("1 of 2 differ"), "{html}");
    }
}
