//! The charts' tests: what a chart draws, its classes, its frame, its labels.

use super::*;

fn line() -> Line {
    Line {
        color: 0,
        xs: vec![0.0, 1.0, 2.0, 3.0],
        raw: vec![1.0, f64::NAN, 3.0, f64::INFINITY],
        smoothed: vec![1.0, f64::NAN, 2.5, f64::INFINITY],
    }
}

#[test]
fn a_chart_is_an_svg_with_the_lines_axes_and_nan_marks() {
    let lines = [line()];
    let f = frame(&lines, None, false, false, (640, 300)).unwrap();
    assert_eq!(f.x, (0.0, 3.0));
    let svg = render(&lines, &f, XAxis::Step, true);
    assert!(svg.starts_with("<svg"), "{svg}");
    assert!(svg.contains("<polyline"), "a line is drawn");
    assert!(svg.contains("<circle"), "NaN and Inf are marked");
    let texts: Vec<String> = svg
        .split("<text")
        .skip(1)
        .filter_map(|t| t.split_once('>').map(|(_, rest)| rest))
        .filter_map(|t| {
            t.split_once("</text>")
                .map(|(text, _)| text.trim().to_owned())
        })
        .collect();
    assert!(
        texts.contains(&"0".to_owned()) && texts.contains(&"3".to_owned()),
        "{texts:?}"
    );
}

#[test]
fn every_colour_of_a_chart_has_a_class_the_theme_colours() {
    let steady = Line {
        color: 3,
        xs: vec![0.0, 1.0, 2.0],
        raw: vec![1.0, 2.0, 3.0],
        smoothed: vec![1.0, 1.5, 2.0],
    };
    let lines = [line(), steady];
    let f = frame(&lines, None, false, false, (640, 300)).unwrap();
    let svg = render(&lines, &f, XAxis::Step, true);
    assert!(svg.contains(r#"<rect class="chart-fill-bg" "#), "{svg}");
    assert!(svg.contains(r#"<line class="chart-stroke-grid" "#), "{svg}");
    assert!(
        svg.contains(r#"<polyline class="chart-stroke-axis" "#),
        "{svg}"
    );
    assert!(svg.contains(r#"<text class="chart-fill-text" "#), "{svg}");
    assert!(
        svg.contains(r#"<polyline class="chart-stroke-3" "#),
        "{svg}"
    );
    // The NaN mark is red (palette entry 8), filled.
    assert!(svg.contains(r#"<circle class="chart-fill-8" "#), "{svg}");
    for tag in svg.split('<').skip(1) {
        let tag = tag.split('>').next().unwrap_or_default();
        assert!(tag.matches(" class=").count() <= 1, "{tag}");
        let coloured = tag.contains("fill=\"#") || tag.contains("stroke=\"#");
        assert!(
            !coloured || tag.contains(" class=\"chart-"),
            "a colour the theme does not know: {tag}"
        );
    }
}

#[test]
fn a_colour_that_is_not_the_charts_is_left_as_drawn() {
    let svg =
        r##"<svg width="2"><rect fill="#123456" x="0"/><text fill="#5A6270">1 > 0</text></svg>"##;
    assert_eq!(
        themed(svg),
        r##"<svg width="2"><rect fill="#123456" x="0"/><text class="chart-fill-text" fill="#5A6270">1 > 0</text></svg>"##
    );
}

#[test]
fn a_series_colour_is_the_themes_with_the_palette_as_fallback() {
    assert_eq!(css_color(0), "var(--series-0, #2563eb)");
    assert_eq!(css_color(11), "var(--series-1, #ea580c)");
}

#[test]
fn pixels_map_back_to_data() {
    let f = Frame {
        width: 640,
        height: 300,
        x: (0.0, 100.0),
        y: (0.0, 1.0),
        log_y: false,
    };
    let (l, _, r, _) = f.plot_area();
    assert_eq!(f.x_at(l), 0.0);
    assert_eq!(f.x_at(r), 100.0);
    assert!((f.x_at(f.px_of_x(37.5)) - 37.5).abs() < 1e-9);
    assert!(f.px_of_y(1.0) < f.px_of_y(0.0));
}

#[test]
fn log_charts_use_positive_values_only() {
    let lines = [Line {
        color: 1,
        xs: vec![0.0, 1.0, 2.0],
        raw: vec![-1.0, 0.01, 100.0],
        smoothed: vec![-1.0, 0.01, 100.0],
    }];
    let f = frame(&lines, None, true, false, (640, 300)).unwrap();
    assert!(f.log_y && f.y.0 > 0.0, "{f:?}");
    assert!(render(&lines, &f, XAxis::Step, false).contains("<polyline"));
}

/// The text of every `<text>` element of an SVG.
pub(crate) fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| t.split_once('>').map(|(_, rest)| rest))
        .filter_map(|t| {
            t.split_once("</text>")
                .map(|(text, _)| text.trim().to_owned())
        })
        .collect()
}

#[test]
fn an_all_zero_series_is_drawn_from_0_up_without_negative_or_tiny_labels() {
    let lines = [Line {
        color: 0,
        xs: vec![0.0, 1.0, 2.0, 3.0],
        raw: vec![0.0; 4],
        smoothed: vec![0.0; 4],
    }];
    let f = zero_based_frame(&lines, None, (560, 220)).unwrap();
    assert_eq!(f.y, (0.0, 1.0));
    let svg = render(&lines, &f, XAxis::Step, false);
    let labels = texts(&svg);
    assert!(labels.contains(&"0".to_owned()), "{labels:?}");
    assert!(labels.contains(&"1".to_owned()), "{labels:?}");
    for label in &labels {
        assert!(!label.starts_with('-'), "a negative tick: {labels:?}");
        assert!(!label.contains('e'), "a label in e-notation: {labels:?}");
    }
    assert!(svg.contains("<polyline"), "the zero line is drawn");
}

#[test]
fn a_quantity_that_is_never_negative_starts_at_0() {
    let lines = [Line {
        color: 0,
        xs: vec![0.0, 1.0, 2.0],
        raw: vec![0.5, 0.75, 1.0],
        smoothed: vec![0.5, 0.75, 1.0],
    }];
    let f = zero_based_frame(&lines, None, (560, 220)).unwrap();
    assert_eq!(f.y, (0.0, 1.05));
    let labels = texts(&render(&lines, &f, XAxis::Step, false));
    assert!(labels.contains(&"0".to_owned()), "{labels:?}");
    assert!(labels.iter().all(|l| !l.starts_with('-')), "{labels:?}");
}

#[test]
fn a_tick_a_rounding_error_away_from_0_is_labelled_0() {
    let f = Frame {
        width: 560,
        height: 220,
        x: (0.0, 1.0),
        y: (-0.05, 0.05),
        log_y: false,
    };
    assert_eq!(format_value(tick_value(6.938_893_903_907_228e-18, &f)), "0");
    assert_eq!(format_value(tick_value(0.02, &f)), "0.02");
}

#[test]
fn axis_labels_read_naturally() {
    assert_eq!(format_value(0.12345), "0.1235");
    assert_eq!(format_value(12.5), "12.5");
    assert_eq!(format_value(2.0e7), "2.00e7");
    assert_eq!(format_x(XAxis::Step, 25_000.0), "25k");
    assert_eq!(format_x(XAxis::Relative, 3725.0), "1h02m");
    assert_eq!(format_x(XAxis::Wall, 1_700_000_000.0), "11-14 22:13");
}

/// The chart as plotters drew it before its lines were written as text:
/// the axes as `render` draws them without lines, then the lines as
/// plotters' `LineSeries` and `Circle` drew them on the same plot area.
fn drawn_by_plotters(lines: &[Line], frame: &Frame, smoothing: bool) -> String {
    let axes = render(&[], frame, XAxis::Step, smoothing);
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (frame.width, frame.height)).into_drawing_area();
        let mut builder = ChartBuilder::on(&root);
        builder
            .margin(MARGIN)
            .x_label_area_size(X_LABELS)
            .y_label_area_size(Y_LABELS);
        let x = frame.x.0..frame.x.1;
        let y = frame.y.0..frame.y.1;
        if frame.log_y {
            plotters_lines(builder, x, y.log_scale(), lines, frame, smoothing);
        } else {
            plotters_lines(builder, x, y, lines, frame, smoothing);
        }
        root.present().unwrap();
    }
    let svg = themed(&svg);
    let (_, drawn) = svg.split_once(">\n").unwrap();
    let drawn = drawn.strip_suffix("</svg>\n").unwrap();
    let end = axes.rfind("</svg>").unwrap();
    format!("{}{drawn}{}", &axes[..end], &axes[end..])
}

fn plotters_lines<'a, DB, Y>(
    mut builder: ChartBuilder<'a, 'a, DB>,
    x: std::ops::Range<f64>,
    y: Y,
    lines: &[Line],
    frame: &Frame,
    smoothing: bool,
) where
    DB: DrawingBackend + 'a,
    Y: AsRangedCoord<Value = f64>,
{
    let mut chart = builder.build_cartesian_2d(x, y).unwrap();
    let (x0, x1) = frame.x;
    let (y0, y1) = frame.y;
    for line in lines {
        let (r, g, b) = PALETTE[line.color % PALETTE.len()];
        let strong = RGBColor(r, g, b);
        let passes: &[(&[f64], ShapeStyle)] = if smoothing {
            &[
                (&line.raw, strong.mix(0.22).stroke_width(1)),
                (&line.smoothed, strong.stroke_width(2)),
            ]
        } else {
            &[(&line.raw, strong.stroke_width(2))]
        };
        for (values, style) in passes {
            let mut run: Vec<(f64, f64)> = Vec::new();
            let mut flush = |run: &mut Vec<(f64, f64)>| {
                if run.len() > 1 {
                    chart
                        .draw_series(LineSeries::new(run.drain(..), *style))
                        .unwrap();
                }
                run.clear();
            };
            for (&x, &v) in line.xs.iter().zip(values.iter()) {
                let drawable = v.is_finite() && (!frame.log_y || v > 0.0);
                if drawable && x >= x0 && x <= x1 {
                    run.push((x, v.clamp(y0, y1)));
                } else {
                    flush(&mut run);
                }
            }
            flush(&mut run);
        }
        let marks = line
            .xs
            .iter()
            .zip(line.raw.iter())
            .filter(|(x, v)| !v.is_finite() && **x >= x0 && **x <= x1)
            .map(|(&x, &v)| {
                let at = if v == f64::NEG_INFINITY { y0 } else { y1 };
                let fill = if v.is_nan() {
                    RGBColor(220, 38, 38)
                } else {
                    strong
                };
                Circle::new((x, at), 3, fill.filled())
            });
        chart.draw_series(marks).unwrap();
    }
}

#[test]
fn the_lines_written_as_text_are_what_plotters_drew() {
    // Ten runs of 500 noisy points (a gap of NaN, an infinity, a point or
    // two alone between gaps), every palette colour, zoomed and not,
    // smoothed and not, linear and logarithmic.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let lines: Vec<Line> = (0..10)
        .map(|color| {
            let xs: Vec<f64> = (0..500).map(|i| f64::from(i) * 3.0).collect();
            let raw: Vec<f64> = (0..500)
                .map(|i| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    match i {
                        100..=110 | 113 | 115 => f64::NAN,
                        200 => f64::INFINITY,
                        300 => f64::NEG_INFINITY,
                        _ => 0.5 + (state % 1_000) as f64 / 997.0 + f64::from(color),
                    }
                })
                .collect();
            Line {
                color: color as usize,
                smoothed: crate::models::board::smooth(&raw, 0.6),
                xs,
                raw,
            }
        })
        .collect();
    for (zoom, log_y, smoothing) in [
        (None, false, false),
        (None, false, true),
        (Some((200.0, 900.0)), false, true),
        (None, true, false),
        (Some((10.0, 1_200.0)), true, true),
    ] {
        let f = frame(&lines, zoom, log_y, false, (640, 300)).unwrap();
        assert_eq!(f.log_y, log_y);
        let ours = render(&lines, &f, XAxis::Step, smoothing);
        let theirs = drawn_by_plotters(&lines, &f, smoothing);
        assert!(ours.matches("<polyline").count() > 20, "{ours}");
        assert!(ours.contains("<circle"), "{ours}");
        if ours != theirs {
            let at = ours
                .bytes()
                .zip(theirs.bytes())
                .position(|(a, b)| a != b)
                .unwrap_or(ours.len().min(theirs.len()));
            panic!(
                "{zoom:?} {log_y} {smoothing}: differs at {at}: ours …{}… plotters' …{}…",
                &ours[at.saturating_sub(80)..(at + 80).min(ours.len())],
                &theirs[at.saturating_sub(80)..(at + 80).min(theirs.len())]
            );
        }
    }
}

#[test]
fn the_plot_area_is_as_wide_as_the_envelopes_are_bucketed() {
    use crate::models::board::{CHART_HEIGHT, CHART_WIDTH, PLOT_WIDTH};
    let f = Frame {
        width: CHART_WIDTH,
        height: CHART_HEIGHT,
        x: (0.0, 1.0),
        y: (0.0, 1.0),
        log_y: false,
    };
    let (l, _, r, _) = f.plot_area();
    assert_eq!(r - l, f64::from(PLOT_WIDTH));
}
