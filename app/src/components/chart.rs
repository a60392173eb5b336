//! Line charts drawn with plotters into SVG on the server (the browser gets
//! the SVG, never plotters). The plot area sits at fixed pixel offsets
//! ([`Frame`]), so the browser maps the pointer to data for tooltips and
//! drag-to-zoom from the frame alone.
//!
//! One SVG serves every theme: [`themed`] gives each colour drawn a class
//! (`chart-fill-bg`, `chart-stroke-grid`, `chart-stroke-3`…) whose colour the
//! stylesheet takes from the theme's custom properties (`--chart-*`,
//! `--series-*`). A class beats the presentation attribute plotters writes,
//! which stays as the colour where the stylesheet is not loaded. So "system"
//! follows the browser live, and a live region's refresh (the same SVG
//! from the server) needs nothing more.

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;

use crate::models::board::{y_range, XAxis};

/// Gap around the chart, px.
const MARGIN: u32 = 8;
/// Height of the x labels, px.
const X_LABELS: u32 = 26;
/// Width of the y labels, px.
const Y_LABELS: u32 = 58;

/// Line colours, by the job's place on the page (colour-blind friendly).
pub const PALETTE: [(u8, u8, u8); 10] = [
    (0x25, 0x63, 0xeb),
    (0xea, 0x58, 0x0c),
    (0x16, 0xa3, 0x4a),
    (0xdb, 0x27, 0x77),
    (0x93, 0x33, 0xea),
    (0x0d, 0x94, 0x88),
    (0xca, 0x8a, 0x04),
    (0x47, 0x55, 0x69),
    (0xdc, 0x26, 0x26),
    (0x08, 0x91, 0xb2),
];

/// The chart's background as drawn (`--chart-bg` in the stylesheet).
pub const BACKGROUND: RGBColor = RGBColor(255, 255, 255);
/// The grid lines as drawn (`--chart-grid`).
pub const GRID: RGBColor = RGBColor(232, 236, 242);
/// The axes and their ticks as drawn (`--chart-axis`).
pub const AXIS: RGBColor = RGBColor(160, 168, 180);
/// The axes' labels as drawn (`--chart-text`).
pub const TEXT: RGBColor = RGBColor(90, 98, 112);

/// The CSS colour of palette entry `i`: the theme's `--series-i`, with the
/// palette's own colour where the stylesheet has none.
pub fn css_color(i: usize) -> String {
    let i = i % PALETTE.len();
    let (r, g, b) = PALETTE[i];
    format!("var(--series-{i}, #{r:02x}{g:02x}{b:02x})")
}

/// What a colour plotters wrote stands for: `bg`, `grid`, `axis`, `text`,
/// or the palette entry's index.
fn role(hex: &str) -> Option<String> {
    let same =
        |(r, g, b): (u8, u8, u8)| hex.eq_ignore_ascii_case(&format!("{r:02x}{g:02x}{b:02x}"));
    let chrome = [
        (BACKGROUND, "bg"),
        (GRID, "grid"),
        (AXIS, "axis"),
        (TEXT, "text"),
    ];
    chrome
        .iter()
        .find(|(c, _)| same((c.0, c.1, c.2)))
        .map(|(_, name)| (*name).to_owned())
        .or_else(|| PALETTE.iter().position(|&c| same(c)).map(|i| i.to_string()))
}

/// `svg` (as plotters writes it) with a class on every element drawn in one
/// of the chart's colours: `chart-<fill|stroke>-<role>` (see the module's
/// docs), so the stylesheet colours it for the theme.
pub fn themed(svg: &str) -> String {
    let mut out = String::with_capacity(svg.len() + svg.len() / 8);
    // Each piece is text, then one tag up to its `>`.
    for piece in svg.split_inclusive('>') {
        let Some(start) = piece.rfind('<') else {
            out.push_str(piece);
            continue;
        };
        let tag = &piece[start..];
        let classes: Vec<String> = ["fill", "stroke"]
            .iter()
            .filter_map(|attr| {
                let at = tag.find(&format!(" {attr}=\"#"))? + attr.len() + 4;
                let hex = tag.get(at..at + 6)?;
                role(hex).map(|role| format!("chart-{attr}-{role}"))
            })
            .collect();
        match tag.find(' ') {
            Some(name_end) if !classes.is_empty() && !tag.contains(" class=") => {
                out.push_str(&piece[..start + name_end]);
                out.push_str(&format!(" class=\"{}\"", classes.join(" ")));
                out.push_str(&tag[name_end..]);
            }
            _ => out.push_str(piece),
        }
    }
    out
}

/// One job's line.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// Palette index.
    pub color: usize,
    /// x of each point, in the axis' units.
    pub xs: Vec<f64>,
    /// The values as logged (drawn faint when smoothing).
    pub raw: Vec<f64>,
    /// The smoothed values (drawn strong).
    pub smoothed: Vec<f64>,
}

/// Where the plot area is and what it spans: pixels ↔ data.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Frame {
    /// Drawing size, px.
    pub width: u32,
    /// See `width`.
    pub height: u32,
    /// x range shown.
    pub x: (f64, f64),
    /// y range shown.
    pub y: (f64, f64),
    /// Whether y is logarithmic.
    pub log_y: bool,
}

impl Frame {
    /// The plot area: left, top, right, bottom, px.
    pub fn plot_area(&self) -> (f64, f64, f64, f64) {
        (
            f64::from(MARGIN + Y_LABELS),
            f64::from(MARGIN),
            f64::from(self.width - MARGIN),
            f64::from(self.height - MARGIN - X_LABELS),
        )
    }

    /// The x value at horizontal pixel `px` (clamped to the plot area).
    pub fn x_at(&self, px: f64) -> f64 {
        let (l, _, r, _) = self.plot_area();
        let t = ((px - l) / (r - l)).clamp(0.0, 1.0);
        self.x.0 + t * (self.x.1 - self.x.0)
    }

    /// The horizontal pixel of x value `x`.
    pub fn px_of_x(&self, x: f64) -> f64 {
        let (l, _, r, _) = self.plot_area();
        l + (x - self.x.0) / (self.x.1 - self.x.0) * (r - l)
    }

    /// The vertical pixel of y value `y`.
    pub fn px_of_y(&self, y: f64) -> f64 {
        let (_, t, _, b) = self.plot_area();
        let (lo, hi, v) = if self.log_y {
            (self.y.0.ln(), self.y.1.ln(), y.max(self.y.0).ln())
        } else {
            (self.y.0, self.y.1, y)
        };
        b - (v - lo) / (hi - lo) * (b - t)
    }
}

/// The frame for `lines`: the zoomed x range or all points', the y range of
/// what is visible (smoothed and raw), logarithmic if asked and possible.
pub fn frame(
    lines: &[Line],
    zoom: Option<(f64, f64)>,
    log_y: bool,
    ignore_outliers: bool,
    size: (u32, u32),
) -> Option<Frame> {
    let xs = lines.iter().flat_map(|l| l.xs.iter().copied());
    let (x0, x1) = match zoom {
        Some(z) => z,
        None => xs.fold(None, |acc: Option<(f64, f64)>, x| {
            Some(acc.map_or((x, x), |(a, b)| (a.min(x), b.max(x))))
        })?,
    };
    let (x0, x1) = if x1 > x0 {
        (x0, x1)
    } else {
        (x0 - 1.0, x1 + 1.0)
    };
    let visible = lines.iter().flat_map(|l| {
        l.xs.iter()
            .zip(l.raw.iter().chain(l.smoothed.iter()))
            .filter(move |(x, _)| **x >= x0 && **x <= x1)
            .map(|(_, v)| v)
            .chain(
                l.xs.iter()
                    .zip(l.smoothed.iter())
                    .filter(move |(x, _)| **x >= x0 && **x <= x1)
                    .map(|(_, v)| v),
            )
    });
    let positive: Vec<f64>;
    let (y0, y1) = if log_y {
        positive = visible.copied().filter(|v| *v > 0.0).collect();
        let (a, b) = y_range(positive.iter(), ignore_outliers)?;
        (
            a.max(positive.iter().copied().fold(f64::MAX, f64::min) * 0.9),
            b,
        )
    } else {
        y_range(visible, ignore_outliers)?
    };
    Some(Frame {
        width: size.0,
        height: size.1,
        x: (x0, x1),
        y: (y0, y1),
        log_y: log_y && y0 > 0.0,
    })
}

/// The frame of a quantity that is never below zero (CPU, memory, bytes,
/// requests a second): like [`frame`], but the y axis starts at 0 and ends
/// a little above the largest visible value, or at 1 when every visible
/// value is 0. Padding around an all-zero series would draw ticks at
/// -0.04 and a label like `6.94e-18` where 0 belongs.
pub fn zero_based_frame(
    lines: &[Line],
    zoom: Option<(f64, f64)>,
    size: (u32, u32),
) -> Option<Frame> {
    let mut f = frame(lines, zoom, false, false, size)?;
    let (x0, x1) = f.x;
    let top = lines
        .iter()
        .flat_map(|l| {
            l.xs.iter()
                .zip(l.raw.iter().chain(l.smoothed.iter()))
                .filter(move |(x, _)| **x >= x0 && **x <= x1)
                .map(|(_, v)| *v)
        })
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    f.y = (0.0, if top > 0.0 { top * 1.05 } else { 1.0 });
    Some(f)
}

/// A y tick's value as its label shows it: plotters places ticks by adding
/// steps, so the one meant to be 0 can come out as 6.94e-18; anything
/// closer to 0 than a billionth of the axis' span is 0.
fn tick_value(y: f64, frame: &Frame) -> f64 {
    let span = (frame.y.1 - frame.y.0).abs();
    if !frame.log_y && y.abs() < span * 1e-9 {
        0.0
    } else {
        y
    }
}

/// A number on an axis: short, no needless digits.
pub fn format_value(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    if !(1e-3..1e6).contains(&a) {
        return format!("{v:.2e}");
    }
    let digits = if a >= 100.0 {
        0
    } else if a >= 1.0 {
        2
    } else {
        4
    };
    let s = format!("{v:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
}

/// An x tick's text for the axis in use.
pub fn format_x(axis: XAxis, x: f64) -> String {
    match axis {
        XAxis::Step => {
            if x.abs() >= 1e6 {
                format!("{:.1}M", x / 1e6)
            } else if x.abs() >= 1e4 {
                format!("{:.0}k", x / 1e3)
            } else {
                format!("{}", x.round() as i64)
            }
        }
        XAxis::Relative => {
            let s = x.max(0.0).round() as i64;
            match s {
                0..60 => format!("{s}s"),
                60..3600 => format!("{}m{:02}s", s / 60, s % 60),
                _ => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
            }
        }
        XAxis::Wall => {
            let t = time::OffsetDateTime::from_unix_timestamp(x as i64)
                .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
            format!(
                "{:02}-{:02} {:02}:{:02}",
                u8::from(t.month()),
                t.day(),
                t.hour(),
                t.minute()
            )
        }
    }
}

/// Draws `lines` in `frame` as an SVG document.
pub fn render(lines: &[Line], frame: &Frame, axis: XAxis, smoothing: bool) -> String {
    let mut svg = String::new();
    let drawn = {
        let root =
            SVGBackend::with_string(&mut svg, (frame.width, frame.height)).into_drawing_area();
        let built = root.fill(&BACKGROUND).ok().and_then(|_| {
            let mut builder = ChartBuilder::on(&root);
            builder
                .margin(MARGIN)
                .x_label_area_size(X_LABELS)
                .y_label_area_size(Y_LABELS);
            let x = frame.x.0..frame.x.1;
            let y = frame.y.0..frame.y.1;
            if frame.log_y {
                draw(builder, x, y.log_scale(), lines, frame, axis, smoothing)
            } else {
                draw(builder, x, y, lines, frame, axis, smoothing)
            }
        });
        built.is_some() && root.present().is_ok()
    };
    if drawn {
        themed(&svg)
    } else {
        String::new()
    }
}

fn draw<'a, DB, Y>(
    mut builder: ChartBuilder<'a, 'a, DB>,
    x: std::ops::Range<f64>,
    y: Y,
    lines: &[Line],
    frame: &Frame,
    axis: XAxis,
    smoothing: bool,
) -> Option<()>
where
    DB: DrawingBackend + 'a,
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let mut chart = builder.build_cartesian_2d(x, y).ok()?;
    chart
        .configure_mesh()
        .x_labels(6)
        .y_labels(5)
        .x_label_formatter(&|x| format_x(axis, *x))
        .y_label_formatter(&|y| format_value(tick_value(*y, frame)))
        .max_light_lines(0)
        .bold_line_style(GRID)
        .axis_style(AXIS)
        // plotters draws text at size / 1.24: this is 11 px.
        .label_style(("sans-serif", 13.6).into_font().color(&TEXT))
        .draw()
        .ok()?;
    let (x0, x1) = frame.x;
    let (y0, y1) = frame.y;
    let clip = |v: f64| v.clamp(y0, y1);
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
            // A line breaks at NaN and at points outside the view.
            let mut run: Vec<(f64, f64)> = Vec::new();
            let mut flush = |run: &mut Vec<(f64, f64)>| {
                if run.len() > 1 {
                    let _ = chart.draw_series(LineSeries::new(run.drain(..), *style));
                }
                run.clear();
            };
            for (&x, &v) in line.xs.iter().zip(values.iter()) {
                let drawable = v.is_finite() && (!frame.log_y || v > 0.0);
                if drawable && x >= x0 && x <= x1 {
                    run.push((x, clip(v)));
                } else {
                    flush(&mut run);
                }
            }
            flush(&mut run);
        }
        // NaN and infinities are shown, not dropped: marks on the edges.
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
        let _ = chart.draw_series(marks);
    }
    Some(())
}

#[cfg(test)]
pub(crate) mod tests {
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
        let svg = r##"<svg width="2"><rect fill="#123456" x="0"/><text fill="#5A6270">1 > 0</text></svg>"##;
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
}
