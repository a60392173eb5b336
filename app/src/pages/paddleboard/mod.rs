//! `/paddleboard`: training metrics of one or more jobs, one chart per tag
//! with one line per job. Every choice lives in the URL, so a link shows the
//! same charts; the controls are a GET form, so the page works without
//! JavaScript. With JavaScript, a change of the controls applies at once,
//! the charts follow new points live (a [`LiveRegion`] swaps them in from
//! the server), and [`ChartPointer`] shows every line's value under the
//! pointer and zooms to a dragged range.

mod chart_card;
mod controls;
mod pointer;

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::api::paddleboard::{board_charts, board_jobs};
use crate::components::live::{beside_regions, LiveRegion, Region};
use crate::components::resource::resource;
use crate::models::board::{Board, BoardView};
use crate::models::url::encode;
pub use pointer::lines;
use pointer::ChartPointer;

/// The page's view, from the URL.
fn view_from_url() -> BoardView {
    use_query_map().with_untracked(|p| {
        BoardView::from_params(|k| p.get(k), |k| p.get_all(k).unwrap_or_default())
    })
}

/// The PaddleBoard page.
#[component]
pub fn PaddleBoardPage() -> impl IntoView {
    let view = view_from_url();
    // A live refresh of the charts renders them alone: not the controls,
    // whose job list is not even asked for.
    let controls = beside_regions(|| {
        let jobs = resource(|| (), |_| board_jobs());
        view! { <controls::Controls view=view.clone() jobs /> }
    });
    view! {
        {beside_regions(|| view! {
            <Title text="PaddleBoard" />
            <div class="page-head">
                <h1>"PaddleBoard"</h1>
                <nav class="page-links"><a href="/alerts" data-testid="alerts-link">"Alerts"</a></nav>
            </div>
        })}
        <div class="board">
            {controls}
            <BoardCharts view=view.clone() />
        </div>
    }
}

/// The charts of `view`'s jobs, one per tag, as a live region that follows
/// new points, with the pointer's read-out and drag-to-zoom: the board's
/// own, and a job page's.
#[component]
pub fn BoardCharts(
    /// The jobs, tags, axes and zoom.
    view: BoardView,
) -> impl IntoView {
    let query = view.query();
    let data = resource(
        move || query.clone(),
        |query| async move {
            if query.jobs.is_empty() {
                Ok(Board {
                    charts: Vec::new(),
                    matching_tags: 0,
                    filter_error: None,
                })
            } else {
                board_charts(query).await
            }
        },
    );
    let events = (!view.jobs.is_empty()).then(|| {
        let q: Vec<String> = view
            .jobs
            .iter()
            .map(|j| format!("job={}", encode(j)))
            .collect();
        format!("/events/metrics?{}", q.join("&"))
    });
    view! {
        <Region id="board-charts" class="charts" label="Charts">
            <Transition fallback=|| view! { <p class="loading">"Loading charts…"</p> }>
                {let view = view.clone(); move || {
                    let view = view.clone();
                    Suspend::new(async move {
                    match data.await {
                        Err(err) => view! { <p class="banner error" role="alert">{err.to_string()}</p> }.into_any(),
                        Ok(board) => charts(board, view).into_any(),
                    }
                })}}
            </Transition>
        </Region>
        {beside_regions(|| events.map(|events| view! {
            <LiveRegion target="board-charts".to_owned() events />
            <ChartPointer />
        }))}
    }
}

fn charts(board: Board, view: BoardView) -> impl IntoView {
    let shown = board.charts.len();
    let none_chosen = view.jobs.is_empty();
    let nothing = !none_chosen && shown == 0 && board.filter_error.is_none();
    view! {
        {board.filter_error.map(|e| view! { <p class="banner error" role="alert">{e}</p> })}
        {none_chosen.then(|| view! {
            <div class="empty-state">
                <p>"Pick one or more jobs to chart the metrics they log: costs, evaluators, your own scalars."</p>
                <p class="muted">
                    "Jobs log with " <code>"paddlecloud.draw_board(value, name)"</code>
                    ", the REST API, TensorBoard or VisualDL log files in their directory, or the MLflow client."
                </p>
            </div>
        })}
        {nothing.then(|| view! {
            <p class="empty">"No metrics match yet. New points appear here as the jobs log them."</p>
        })}
        {(board.matching_tags > shown).then(|| view! {
            <p class="hint">{format!("Showing {shown} of {} tags; narrow the tag filter to see the others.", board.matching_tags)}</p>
        })}
        <div class="chart-grid">
            {board
                .charts
                .into_iter()
                .map(|chart| view! { <chart_card::ChartCard chart view=view.clone() /> })
                .collect_view()}
        </div>
    }
}
