//! A chart's lines and marks written as SVG text, exactly as plotters'
//! `LineSeries` and `Circle` drew them through its SVG backend, with the
//! classes [`super::themed`] gives them already in place.
//!
//! Why not plotters: a hundred overlaid runs are over a hundred thousand
//! points, and plotters takes each through its element and backend layers
//! and `write!` (then `themed` reads the whole text again); here a point
//! is two integers pushed onto one string. The pixels still come from the
//! chart plotters built (`to_px`), so lines and axes agree to the pixel.

use std::fmt::Write as _;

use super::{role, Frame, Line, Mark, PALETTE};

/// The colour of an alert's mark: outside the palette, so no line shares it.
const MARK: &str = "#B45309";

/// Writes `marks` as dashed lines across the plot (each with its label as
/// a `<title>`), those outside the x range left out.
pub(super) fn write_marks(
    out: &mut String,
    marks: &[Mark],
    frame: &Frame,
    to_px: impl Fn(f64, f64) -> (i32, i32),
) {
    let (x0, x1) = frame.x;
    for mark in marks.iter().filter(|m| m.x >= x0 && m.x <= x1) {
        let (x, top) = to_px(mark.x, frame.y.1);
        let (_, bottom) = to_px(mark.x, frame.y.0);
        let state = if mark.open { "open" } else { "resolved" };
        let opacity = if mark.open { 1.0 } else { 0.45 };
        let label = mark
            .label
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;");
        let _ = writeln!(
            out,
            "<line class=\"alert-mark {state}\" x1=\"{x}\" y1=\"{top}\" x2=\"{x}\" y2=\"{bottom}\" \
             stroke=\"{MARK}\" stroke-width=\"2\" stroke-dasharray=\"5 3\" opacity=\"{opacity}\">\
             <title>{label}</title></line>"
        );
    }
}

/// An element's drawing attributes, as plotters writes them.
struct Style {
    /// `#RRGGBB`, upper case.
    hex: String,
    /// `opacity`, as plotters formats the colour's alpha.
    opacity: f64,
    /// `stroke-width`.
    width: u32,
}

/// Writes `lines` (and their NaN and infinity marks) in `frame` onto `out`,
/// mapping data to pixels with `to_px`.
pub(super) fn write(
    out: &mut String,
    lines: &[Line],
    frame: &Frame,
    smoothing: bool,
    to_px: impl Fn(f64, f64) -> (i32, i32),
) {
    let (x0, x1) = frame.x;
    let (y0, y1) = frame.y;
    // A point is at most two 4-digit numbers and two separators.
    out.reserve(lines.iter().map(|l| l.xs.len() * 10 + 200).sum());
    for line in lines {
        let (r, g, b) = PALETTE[line.color % PALETTE.len()];
        let hex = format!("#{r:02X}{g:02X}{b:02X}");
        let passes: &[(&[f64], f64, u32)] = if smoothing {
            &[(&line.raw, 0.22, 1), (&line.smoothed, 1.0, 2)]
        } else {
            &[(&line.raw, 1.0, 2)]
        };
        for &(values, opacity, width) in passes {
            let style = Style {
                hex: hex.clone(),
                opacity,
                width,
            };
            // A line breaks at NaN and at points outside the view.
            let mut run: Vec<(i32, i32)> = Vec::new();
            for (&x, &v) in line.xs.iter().zip(values.iter()) {
                let drawable = v.is_finite() && (!frame.log_y || v > 0.0);
                if drawable && x >= x0 && x <= x1 {
                    run.push(to_px(x, v.clamp(y0, y1)));
                } else {
                    polyline(out, &run, &style);
                    run.clear();
                }
            }
            polyline(out, &run, &style);
        }
        // NaN and infinities are shown, not dropped: marks on the edges.
        for (&x, &v) in line.xs.iter().zip(line.raw.iter()) {
            if v.is_finite() || x < x0 || x > x1 {
                continue;
            }
            let at = if v == f64::NEG_INFINITY { y0 } else { y1 };
            let fill = if v.is_nan() {
                "#DC2626".to_owned()
            } else {
                hex.clone()
            };
            circle(out, to_px(x, at), &fill);
        }
    }
}

/// ` class="chart-<attr>-<role>"` for a colour the theme knows, as
/// `themed` adds it.
fn class(out: &mut String, attr: &str, hex: &str) {
    if let Some(role) = role(&hex[1..]) {
        let _ = write!(out, " class=\"chart-{attr}-{role}\"");
    }
}

/// One run of points as a `<polyline>` (plotters draws none of one point).
fn polyline(out: &mut String, run: &[(i32, i32)], style: &Style) {
    if run.len() < 2 {
        return;
    }
    out.push_str("<polyline");
    class(out, "stroke", &style.hex);
    let _ = write!(
        out,
        " fill=\"none\" opacity=\"{}\" stroke=\"{}\" stroke-width=\"{}\" points=\"",
        style.opacity, style.hex, style.width
    );
    for &(x, y) in run {
        push_int(out, x);
        out.push(',');
        push_int(out, y);
        out.push(' ');
    }
    out.push_str("\"/>\n");
}

/// A filled mark of radius 3 at `(cx, cy)`.
fn circle(out: &mut String, (cx, cy): (i32, i32), fill: &str) {
    out.push_str("<circle");
    class(out, "fill", fill);
    let _ = writeln!(
        out,
        " cx=\"{cx}\" cy=\"{cy}\" r=\"3\" opacity=\"1\" fill=\"{fill}\" stroke=\"none\" stroke-width=\"1\"/>"
    );
}

/// Appends `v` in decimal, as `write!` would, without its machinery: a
/// hundred overlaid curves are a quarter of a million numbers.
fn push_int(out: &mut String, v: i32) {
    let mut digits = [0u8; 11];
    let mut at = digits.len();
    let mut n = v.unsigned_abs();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if v < 0 {
        at -= 1;
        digits[at] = b'-';
    }
    for &d in &digits[at..] {
        out.push(char::from(d));
    }
}

#[cfg(test)]
mod tests {
    use super::push_int;

    #[test]
    fn integers_are_written_as_format_writes_them() {
        for v in [0, 7, -7, 10, 566, -1_000, i32::MAX, i32::MIN] {
            let mut s = String::from("x");
            push_int(&mut s, v);
            assert_eq!(s, format!("x{v}"));
        }
    }
}
