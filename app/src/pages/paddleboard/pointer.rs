//! The pointer over PaddleBoard's charts: a crosshair, every line's value
//! under it, and drag to zoom. The charts are drawn on the server and the
//! live region swaps them as points arrive, so this is one island for the
//! page that listens on the document and reads the chart under the pointer
//! from its overlay's `data-pointer` (a [`PointerData`] as JSON).

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::components::chart::{Frame, Line};
use crate::models::board::{smooth, BoardSeries, BoardView, XAxis};

/// What the pointer needs of one chart: where its plot area is, the view
/// (for the zoom link and the lines' colours) and the series as drawn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointerData {
    /// The chart's frame.
    pub frame: Frame,
    /// The page's view.
    pub view: BoardView,
    /// The series drawn, one per job.
    pub series: Vec<BoardSeries>,
}

/// The lines for `series` in `view`: x on the view's axis, colour by the
/// job's place in the view, smoothed as the view says. The server draws
/// these and the pointer reads values off them, so both agree.
pub fn lines(series: &[BoardSeries], view: &BoardView) -> Vec<Line> {
    series
        .iter()
        .map(|ser| {
            let raw: Vec<f64> = ser.values.iter().map(|v| v.0).collect();
            Line {
                color: view.jobs.iter().position(|j| j == &ser.job).unwrap_or(0),
                xs: xs(ser, view.x),
                smoothed: smooth(&raw, view.smoothing),
                raw,
            }
        })
        .collect()
}

/// x of each point on `axis`.
fn xs(series: &BoardSeries, axis: XAxis) -> Vec<f64> {
    match axis {
        XAxis::Step => series.steps.iter().map(|s| *s as f64).collect(),
        XAxis::Relative => series.walls.iter().map(|w| w - series.origin).collect(),
        XAxis::Wall => series.walls.clone(),
    }
}

/// The index of the point nearest `x` (points sorted by x).
#[cfg(any(feature = "hydrate", test))]
pub fn nearest(xs: &[f64], x: f64) -> Option<usize> {
    if xs.is_empty() {
        return None;
    }
    let i = xs.partition_point(|v| *v < x);
    match i {
        0 => Some(0),
        i if i >= xs.len() => Some(xs.len() - 1),
        i => Some(if x - xs[i - 1] <= xs[i] - x { i - 1 } else { i }),
    }
}

/// The link that zooms `view` to what a drag from pixel `a` to `b` covers
/// in `frame`; `None` for a drag too short to mean a range (a click).
#[cfg(any(feature = "hydrate", test))]
pub fn zoom_href(frame: &Frame, view: &BoardView, a: f64, b: f64) -> Option<String> {
    if (a - b).abs() < 5.0 {
        return None;
    }
    let (x0, x1) = (frame.x_at(a.min(b)), frame.x_at(a.max(b)));
    // Whole steps, or milliseconds: the URL stays short and readable.
    let (x0, x1) = match view.x {
        XAxis::Step => (x0.floor(), x1.ceil()),
        _ => (
            (x0 * 1000.0).floor() / 1000.0,
            (x1 * 1000.0).ceil() / 1000.0,
        ),
    };
    let mut next = view.clone();
    next.xmin = Some(x0);
    next.xmax = Some(x1);
    Some(next.href())
}

/// Follows the pointer over every chart of the page (renders nothing itself).
#[island]
pub fn ChartPointer() -> impl IntoView {
    #[cfg(feature = "hydrate")]
    {
        crate::island_hydrated();
        client::listen();
    }
}

#[cfg(feature = "hydrate")]
mod client {
    use std::cell::RefCell;
    use std::rc::Rc;
    use std::sync::Arc;

    use leptos::prelude::*;
    use wasm_bindgen::closure::Closure;
    use wasm_bindgen::JsCast;
    use web_sys::{Element, MouseEvent};

    use super::{lines, nearest, zoom_href, PointerData};
    use crate::components::chart::{css_color, format_value, format_x, Line};
    use crate::models::board::{XAxis, CHART_HEIGHT, CHART_WIDTH};

    /// The chart under the pointer, with what is drawn over it.
    struct Active {
        overlay: Element,
        chart: Arc<(PointerData, Vec<Line>)>,
        /// The pointer's x, in drawing pixels.
        hover: ArcRwSignal<Option<f64>>,
        /// A drag's start and current x, in drawing pixels.
        drag: ArcRwSignal<Option<(f64, f64)>>,
        /// Unmounts the crosshair, selection and tooltip when dropped.
        _shown: Box<dyn std::any::Any>,
    }

    /// Listens for the pointer on the whole document, so charts the live
    /// region swaps in work without hydrating anything again.
    pub fn listen() {
        let active: Rc<RefCell<Option<Active>>> = Rc::default();
        let on = |kind: &str, f: Box<dyn Fn(MouseEvent)>| {
            let listener = Closure::<dyn Fn(MouseEvent)>::new(f);
            let _ = document()
                .add_event_listener_with_callback(kind, listener.as_ref().unchecked_ref());
            // The listeners live as long as the page.
            listener.forget();
        };
        let state = active.clone();
        on(
            "mousemove",
            Box::new(move |ev| {
                let overlay = overlay_under(&ev);
                let mut slot = state.borrow_mut();
                let dragging = slot
                    .as_ref()
                    .is_some_and(|a| a.drag.get_untracked().is_some());
                match overlay {
                    Some(o) if slot.as_ref().is_some_and(|a| a.overlay == o) => {}
                    Some(o) if !dragging => *slot = activate(o),
                    // A drag goes on beyond the chart's edge.
                    _ if dragging => {}
                    _ => {
                        *slot = None;
                        return;
                    }
                }
                let Some(a) = slot.as_ref() else { return };
                let px = pointer_px(&a.overlay, &ev);
                a.hover.set(Some(px));
                if let Some((start, _)) = a.drag.get_untracked() {
                    a.drag.set(Some((start, px)));
                }
            }),
        );
        let state = active.clone();
        on(
            "mousedown",
            Box::new(move |ev| {
                let slot = state.borrow();
                let Some(a) = slot.as_ref() else { return };
                if overlay_under(&ev).as_ref() == Some(&a.overlay) && ev.button() == 0 {
                    // No text selection while dragging across the page.
                    ev.prevent_default();
                    let px = pointer_px(&a.overlay, &ev);
                    a.drag.set(Some((px, px)));
                }
            }),
        );
        let state = active;
        on(
            "mouseup",
            Box::new(move |_| {
                let slot = state.borrow();
                let Some(a) = slot.as_ref() else { return };
                let Some((from, to)) = a.drag.get_untracked() else {
                    return;
                };
                a.drag.set(None);
                let (data, _) = &*a.chart;
                if let Some(href) = zoom_href(&data.frame, &data.view, from, to) {
                    // A page load: the chart's anchor brings it back into view.
                    let anchor = a
                        .overlay
                        .closest("article[id]")
                        .ok()
                        .flatten()
                        .map(|card| card.id());
                    let href = match anchor {
                        Some(id) => format!("{href}#{id}"),
                        None => href,
                    };
                    let _ = window().location().set_href(&href);
                }
            }),
        );
    }

    /// The chart overlay the event happened on, if any.
    fn overlay_under(ev: &MouseEvent) -> Option<Element> {
        ev.target()?
            .dyn_into::<Element>()
            .ok()?
            .closest(".chart-overlay")
            .ok()
            .flatten()
    }

    /// The pointer's x in the chart's drawing pixels (the SVG is scaled to
    /// the card's width), kept within the chart.
    fn pointer_px(overlay: &Element, ev: &MouseEvent) -> f64 {
        let rect = overlay.get_bounding_client_rect();
        if rect.width() <= 0.0 {
            return 0.0;
        }
        let px = (f64::from(ev.client_x()) - rect.left()) * f64::from(CHART_WIDTH) / rect.width();
        px.clamp(0.0, f64::from(CHART_WIDTH))
    }

    /// Reads the chart behind `overlay` and draws the pointer over it.
    fn activate(overlay: Element) -> Option<Active> {
        let json = overlay.get_attribute("data-pointer")?;
        let data: PointerData = serde_json::from_str(&json).ok()?;
        let drawn = lines(&data.series, &data.view);
        let chart = Arc::new((data, drawn));
        let hover = ArcRwSignal::new(None);
        let drag = ArcRwSignal::new(None);
        let shown = {
            let (chart, hover, drag) = (chart.clone(), hover.clone(), drag.clone());
            leptos::mount::mount_to_renderer(&overlay, move || pointer_view(chart, hover, drag))
        };
        Some(Active {
            overlay,
            chart,
            hover,
            drag,
            _shown: Box::new(shown),
        })
    }

    /// The crosshair, the dragged range and the values under the pointer.
    fn pointer_view(
        chart: Arc<(PointerData, Vec<Line>)>,
        hover: ArcRwSignal<Option<f64>>,
        drag: ArcRwSignal<Option<(f64, f64)>>,
    ) -> impl IntoView {
        let pct = |v: f64, of: u32| v / f64::from(of) * 100.0;
        let crosshair = {
            let (chart, hover) = (chart.clone(), hover.clone());
            move || {
                let px = hover.get()?;
                let (l, t, r, b) = chart.0.frame.plot_area();
                (px >= l && px <= r).then(|| {
                    view! {
                        <div class="chart-cross" style=format!(
                            "left:{:.2}%;top:{:.2}%;height:{:.2}%",
                            pct(px, CHART_WIDTH), pct(t, CHART_HEIGHT), pct(b - t, CHART_HEIGHT)
                        )></div>
                    }
                })
            }
        };
        let selection = {
            let drag = drag.clone();
            move || {
                let (a, b) = drag.get()?;
                Some(view! {
                    <div class="chart-selection" style=format!(
                        "left:{:.2}%;width:{:.2}%", pct(a.min(b), CHART_WIDTH), pct((a - b).abs(), CHART_WIDTH)
                    )></div>
                })
            }
        };
        let tooltip = move || {
            let px = hover.get()?;
            drag.get().is_none().then_some(())?;
            let (data, lines) = &*chart;
            let x = data.frame.x_at(px);
            let rows = lines
                .iter()
                .zip(&data.series)
                .filter_map(|(line, ser)| {
                    let i = nearest(&line.xs, x)?;
                    Some(view! {
                        <tr>
                            <td>
                                <span class="swatch" style=format!("background:{}", css_color(line.color))></span>
                                {ser.job.clone()}
                            </td>
                            <td class="num">{format_value(line.smoothed[i])}</td>
                            <td class="num muted">{format_value(line.raw[i])}</td>
                            <td class="num">{ser.steps[i]}</td>
                            <td class="num muted">{format_x(XAxis::Wall, ser.walls[i])}</td>
                        </tr>
                    })
                })
                .collect_view();
            let left = pct(px, CHART_WIDTH);
            let side = if left > 60.0 {
                "right:calc(100% - "
            } else {
                "left:calc("
            };
            Some(view! {
                <div class="chart-tip" style=format!("{side}{left:.1}% + 12px)") role="status">
                    <table>
                        <thead><tr><th>"Job"</th><th>"Smoothed"</th><th>"Value"</th><th>"Step"</th><th>"Time"</th></tr></thead>
                        <tbody>{rows}</tbody>
                    </table>
                    <p class="muted">{format!("{} {}", data.view.x.label(), format_x(data.view.x, x))}</p>
                </div>
            })
        };
        view! { {crosshair} {selection} {tooltip} }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame() -> Frame {
        Frame {
            width: 640,
            height: 300,
            x: (0.0, 100.0),
            y: (0.0, 1.0),
            log_y: false,
        }
    }

    #[test]
    fn the_nearest_point_is_found_on_either_side_and_past_the_ends() {
        let xs = [0.0, 10.0, 20.0];
        assert_eq!(nearest(&xs, -5.0), Some(0));
        assert_eq!(nearest(&xs, 4.0), Some(0));
        assert_eq!(nearest(&xs, 6.0), Some(1));
        assert_eq!(nearest(&xs, 99.0), Some(2));
        assert_eq!(nearest(&[], 1.0), None);
    }

    #[test]
    fn a_drag_zooms_to_whole_steps_and_a_click_does_not_zoom() {
        let f = frame();
        let view = BoardView::from_params(
            |k| (k == "smooth").then(|| "0.5".to_owned()),
            |k| {
                if k == "job" {
                    vec!["a".to_owned()]
                } else {
                    vec![]
                }
            },
        );
        let (l, _, r, _) = f.plot_area();
        let at = |x: f64| l + x / 100.0 * (r - l);
        let href = zoom_href(&f, &view, at(40.3), at(20.6)).unwrap();
        assert!(href.ends_with("xmin=20&xmax=41"), "{href}");
        assert!(
            href.contains("job=a") && href.contains("smooth=0.5"),
            "{href}"
        );
        assert_eq!(zoom_href(&f, &view, at(40.0), at(40.0) + 2.0), None);
    }

    #[test]
    fn the_pointer_reads_the_lines_the_server_drew() {
        let view = BoardView::from_params(
            |k| (k == "smooth").then(|| "0".to_owned()),
            |k| {
                if k == "job" {
                    vec!["b".to_owned(), "a".to_owned()]
                } else {
                    vec![]
                }
            },
        );
        let series = BoardSeries {
            job: "a".into(),
            steps: vec![1, 2],
            walls: vec![100.0, 101.5],
            values: vec![
                crate::models::board::JsonF64(0.5),
                crate::models::board::JsonF64(f64::NAN),
            ],
            total: 2,
            full_resolution: true,
            origin: 100.0,
            alerts: Vec::new(),
        };
        let data = PointerData {
            frame: frame(),
            view: view.clone(),
            series: vec![series],
        };
        let back: PointerData =
            serde_json::from_str(&serde_json::to_string(&data).unwrap()).unwrap();
        let drawn = lines(&back.series, &back.view);
        assert_eq!(drawn[0].color, 1, "colour by the job's place in the view");
        assert_eq!(drawn[0].xs, vec![1.0, 2.0]);
        assert_eq!(drawn[0].raw[0], 0.5);
        assert!(drawn[0].raw[1].is_nan(), "NaN survives the page");
    }
}
