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

mod paths;

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

/// A mark across the plot at `x` (a metric alert), with its words as the
/// line's tooltip.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    /// Where, in the axis' units.
    pub x: f64,
    /// What it says.
    pub label: String,
    /// Still holding (drawn strong) or resolved (faint).
    pub open: bool,
}

/// Draws `lines` in `frame` as an SVG document.
pub fn render(lines: &[Line], frame: &Frame, axis: XAxis, smoothing: bool) -> String {
    render_marked(lines, frame, axis, smoothing, &[])
}

/// [`render`] with `marks` across the plot.
pub fn render_marked(
    lines: &[Line],
    frame: &Frame,
    axis: XAxis,
    smoothing: bool,
    marks: &[Mark],
) -> String {
    let mut svg = String::new();
    // The lines and marks, written as text (see `paths`) with the chart's
    // own mapping of data to pixels, go in after the axes plotters draws.
    let mut drawn_lines = String::new();
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
            let out = &mut drawn_lines;
            if frame.log_y {
                draw(
                    builder,
                    x,
                    y.log_scale(),
                    (lines, marks),
                    frame,
                    axis,
                    smoothing,
                    out,
                )
            } else {
                draw(builder, x, y, (lines, marks), frame, axis, smoothing, out)
            }
        });
        built.is_some() && root.present().is_ok()
    };
    if !drawn {
        return String::new();
    }
    let mut out = themed(&svg);
    let end = out.rfind("</svg>").unwrap_or(out.len());
    let tail = out.split_off(end);
    out.reserve(drawn_lines.len() + tail.len());
    out.push_str(&drawn_lines);
    out.push_str(&tail);
    out
}

/// The axes, grid and labels through plotters; then the lines and marks
/// into `out` as [`paths`] writes them, mapped by the chart built here.
#[allow(clippy::too_many_arguments)]
fn draw<'a, DB, Y>(
    mut builder: ChartBuilder<'a, 'a, DB>,
    x: std::ops::Range<f64>,
    y: Y,
    (lines, marks): (&[Line], &[Mark]),
    frame: &Frame,
    axis: XAxis,
    smoothing: bool,
    out: &mut String,
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
    let to_px = |x, y| chart.backend_coord(&(x, y));
    paths::write(out, lines, frame, smoothing, to_px);
    paths::write_marks(out, marks, frame, to_px);
    Some(())
}

#[cfg(test)]
pub(crate) mod tests;
