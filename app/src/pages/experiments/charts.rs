//! An experiment's charts, drawn with plotters into SVG on the server and
//! themed like every chart (`components::chart::themed`): the best
//! objective over the trials, the parameters against the objective as
//! parallel coordinates, and one parameter's values against the objective.
//! Each counts the trials that ran to their end with a value.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde_json::Value;

use crate::components::chart::{format_value, themed, AXIS, BACKGROUND, GRID, PALETTE, TEXT};
use crate::models::board::y_range;
use crate::models::{best_over_time, Domain, Objective, SearchParam, Trial, TrialStatus};

/// Palette entries for the objective's quartiles, best first.
pub const QUARTILES: [usize; 4] = [2, 0, 6, 1];

fn color(i: usize) -> RGBColor {
    let (r, g, b) = PALETTE[i % PALETTE.len()];
    RGBColor(r, g, b)
}

fn font(size: f64) -> TextStyle<'static> {
    ("sans-serif", size).into_font().color(&TEXT)
}

/// The trials a chart shows: ended as they should, with a finite value.
fn finished(trials: &[Trial]) -> impl Iterator<Item = (&Trial, f64)> {
    trials
        .iter()
        .filter(|t| t.status == TrialStatus::Succeeded)
        .filter_map(|t| t.objective.filter(|v| v.is_finite()).map(|v| (t, v)))
}

/// How a parameter's values map onto an axis (0 at one end, 1 at the other).
#[derive(Debug, Clone, PartialEq)]
pub enum Scale {
    /// Evenly from `min` to `max`.
    Linear(f64, f64),
    /// Evenly in powers of ten from `min` to `max` (both above 0).
    Log(f64, f64),
    /// One place per category.
    Categories(Vec<String>),
}

impl Scale {
    /// The scale of a searched parameter, from its domain.
    pub fn of(param: &SearchParam) -> Self {
        match &param.domain {
            Domain::Int { min, max, log } => Self::range(*min as f64, *max as f64, *log),
            Domain::Float { min, max, log } => Self::range(*min, *max, *log),
            Domain::Enum { choices } => Self::Categories(choices.clone()),
            Domain::Bool => Self::Categories(vec!["false".into(), "true".into()]),
        }
    }

    fn range(min: f64, max: f64, log: bool) -> Self {
        if log && min > 0.0 {
            Self::Log(min, max)
        } else {
            Self::Linear(min, max)
        }
    }

    /// Where `value` sits, 0 to 1 (`None`: not a value of this axis).
    pub fn position(&self, value: &Value) -> Option<f64> {
        let t = match self {
            Self::Linear(lo, hi) => (value.as_f64()? - lo) / (hi - lo),
            Self::Log(lo, hi) => (value.as_f64()?.max(*lo).ln() - lo.ln()) / (hi.ln() - lo.ln()),
            Self::Categories(c) => {
                let text = match value {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let i = c.iter().position(|x| *x == text)?;
                (i as f64 + 0.5) / c.len() as f64
            }
        };
        t.is_finite().then(|| t.clamp(0.0, 1.0))
    }

    /// Labelled places on the axis: (position, text).
    pub fn ticks(&self) -> Vec<(f64, String)> {
        match self {
            Self::Linear(lo, hi) => [0.0, 0.5, 1.0]
                .iter()
                .map(|t| (*t, format_value(lo + t * (hi - lo))))
                .collect(),
            Self::Log(lo, hi) => {
                let mut ticks = vec![(0.0, format_value(*lo))];
                let (a, b) = (lo.log10().floor() as i32 + 1, hi.log10().ceil() as i32 - 1);
                let step = ((b - a) / 4 + 1).max(1) as usize;
                for e in (a..=b).step_by(step) {
                    let v = 10f64.powi(e);
                    let t = (v.ln() - lo.ln()) / (hi.ln() - lo.ln());
                    if (0.05..0.95).contains(&t) {
                        ticks.push((t, format_value(v)));
                    }
                }
                ticks.push((1.0, format_value(*hi)));
                ticks
            }
            Self::Categories(c) => c
                .iter()
                .enumerate()
                .map(|(i, s)| ((i as f64 + 0.5) / c.len() as f64, s.clone()))
                .collect(),
        }
    }
}

/// The quartile (0 best … 3 worst) of each value among `values`.
fn quartiles(objective: &Objective, values: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| {
        objective
            .loss(values[a])
            .total_cmp(&objective.loss(values[b]))
    });
    let mut out = vec![0; values.len()];
    for (rank, &i) in order.iter().enumerate() {
        out[i] = rank * 4 / values.len().max(1);
    }
    out
}

/// The best objective so far against the trial's number (a step line), with
/// each finished trial's own value as a dot. Empty before any finished.
pub fn best_chart(objective: &Objective, trials: &[Trial]) -> String {
    let points = best_over_time(objective, trials);
    let Some((y0, y1)) = y_range(points.iter().map(|p| &p.1), false) else {
        return String::new();
    };
    let x1 = points.iter().map(|p| p.0).max().unwrap_or(1) as f64;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (560, 240)).into_drawing_area();
        let _ = root.fill(&BACKGROUND);
        let built = ChartBuilder::on(&root)
            .margin(8)
            .x_label_area_size(30)
            .y_label_area_size(58)
            .build_cartesian_2d(0.5..x1 + 0.5, y0..y1);
        if let Ok(mut chart) = built {
            let _ = chart
                .configure_mesh()
                .x_labels(8)
                .y_labels(5)
                .x_desc("trial")
                .x_label_formatter(&|x| format!("{}", x.round() as i64))
                .y_label_formatter(&|y| format_value(*y))
                .max_light_lines(0)
                .bold_line_style(GRID)
                .axis_style(AXIS)
                .label_style(font(13.6))
                .axis_desc_style(font(13.6))
                .draw();
            let dots = points
                .iter()
                .map(|&(n, v, _)| Circle::new((f64::from(n), v), 2, color(0).mix(0.5).filled()));
            let _ = chart.draw_series(dots);
            let mut step: Vec<(f64, f64)> = Vec::with_capacity(points.len() * 2 + 1);
            for &(n, _, best) in &points {
                if let Some(&(_, before)) = step.last() {
                    step.push((f64::from(n), before));
                }
                step.push((f64::from(n), best));
            }
            if let Some(&(_, last)) = step.last() {
                step.push((x1 + 0.5, last));
            }
            let _ = chart.draw_series(LineSeries::new(step, color(2).stroke_width(2)));
        }
        let _ = root.present();
    }
    themed(&svg)
}

/// Parallel coordinates: an axis per searched parameter (log ones in
/// powers of ten, enums and bools as categories) and the objective's last,
/// a line per finished trial through its values, coloured by the
/// objective's quartile (best drawn on top).
pub fn parallel_chart(params: &[SearchParam], objective: &Objective, trials: &[Trial]) -> String {
    let rows: Vec<(&Trial, f64)> = finished(trials).collect();
    let values: Vec<f64> = rows.iter().map(|r| r.1).collect();
    let Some((y0, y1)) = y_range(values.iter(), false) else {
        return String::new();
    };
    let mut scales: Vec<(String, Scale)> = params
        .iter()
        .map(|p| (p.name.clone(), Scale::of(p)))
        .collect();
    scales.push((objective.metric.clone(), Scale::Linear(y0, y1)));
    let (width, height) = (760_i32, 320_i32);
    let (left, right, top, bottom) = (60, width - 70, 36, height - 16);
    let x_of = |i: usize| left + (right - left) * i as i32 / (scales.len() as i32 - 1).max(1);
    let y_of = |t: f64| bottom - ((bottom - top) as f64 * t).round() as i32;
    let quartile = quartiles(objective, &values);
    let mut order: Vec<usize> = (0..rows.len()).collect();
    // Worst first, so the best lines are drawn over the others.
    order.sort_by(|&a, &b| {
        objective
            .loss(values[b])
            .total_cmp(&objective.loss(values[a]))
    });
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (width as u32, height as u32)).into_drawing_area();
        let _ = root.fill(&BACKGROUND);
        for i in order {
            let (trial, value) = rows[i];
            let points: Vec<(i32, i32)> = scales
                .iter()
                .enumerate()
                .filter_map(|(a, (name, scale))| {
                    let t = if a == scales.len() - 1 {
                        scale.position(&Value::from(value))
                    } else {
                        scale.position(trial.values.get(name)?)
                    }?;
                    Some((x_of(a), y_of(t)))
                })
                .collect();
            let style = color(QUARTILES[quartile[i]]).mix(0.55).stroke_width(1);
            let _ = root.draw(&PathElement::new(points, style));
        }
        for (a, (name, scale)) in scales.iter().enumerate() {
            let x = x_of(a);
            let _ = root.draw(&PathElement::new(
                vec![(x, top), (x, bottom)],
                AXIS.stroke_width(1),
            ));
            let head = font(13.6).pos(Pos::new(HPos::Center, VPos::Top));
            let _ = root.draw(&Text::new(name.clone(), (x, 6), head));
            let label = font(12.0).pos(Pos::new(HPos::Left, VPos::Center));
            for (t, text) in scale.ticks() {
                let y = y_of(t);
                let _ = root.draw(&PathElement::new(
                    vec![(x - 3, y), (x, y)],
                    AXIS.stroke_width(1),
                ));
                let _ = root.draw(&Text::new(text, (x + 4, y), label.clone()));
            }
        }
        let _ = root.present();
    }
    themed(&svg)
}

/// Parameter `param`'s values against the objective, a dot per finished
/// trial (the best larger); categories spread a little so that dots on the
/// same choice show.
pub fn scatter_chart(param: &SearchParam, objective: &Objective, trials: &[Trial]) -> String {
    let scale = Scale::of(param);
    let rows: Vec<(f64, f64, u32)> = finished(trials)
        .filter_map(|(t, v)| {
            let at = scale.position(t.values.get(&param.name)?)?;
            let jitter = match scale {
                Scale::Categories(ref c) => {
                    (f64::from(t.number.wrapping_mul(37) % 100) / 100.0 - 0.5) * 0.6
                        / c.len() as f64
                }
                _ => 0.0,
            };
            Some((at + jitter, v, t.number))
        })
        .collect();
    let Some((y0, y1)) = y_range(rows.iter().map(|r| &r.1), false) else {
        return String::new();
    };
    let best = crate::models::best_of(objective, trials).map(|t| t.number);
    let ticks = scale.ticks();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (560, 260)).into_drawing_area();
        let _ = root.fill(&BACKGROUND);
        let built = ChartBuilder::on(&root)
            .margin(8)
            .x_label_area_size(30)
            .y_label_area_size(58)
            .build_cartesian_2d(-0.02..1.02, y0..y1);
        if let Ok(mut chart) = built {
            let _ = chart
                .configure_mesh()
                .disable_x_mesh()
                .x_labels(2)
                .x_label_formatter(&|_| String::new())
                .y_labels(5)
                .x_desc(param.name.as_str())
                .y_label_formatter(&|y| format_value(*y))
                .max_light_lines(0)
                .bold_line_style(GRID)
                .axis_style(AXIS)
                .label_style(font(13.6))
                .axis_desc_style(font(13.6))
                .draw();
            let labels = ticks.iter().map(|(t, text)| {
                Text::new(
                    text.clone(),
                    (*t, y0),
                    font(12.0).pos(Pos::new(HPos::Center, VPos::Top)),
                )
            });
            let _ = chart.draw_series(labels);
            let dots = rows.iter().map(|&(x, y, n)| {
                if Some(n) == best {
                    Circle::new((x, y), 5, color(2).filled())
                } else {
                    Circle::new((x, y), 3, color(0).mix(0.6).filled())
                }
            });
            let _ = chart.draw_series(dots);
        }
        let _ = root.present();
    }
    themed(&svg)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::components::chart::tests::texts;
    use crate::models::{trial_job_name, ExperimentSpec};

    fn spec() -> ExperimentSpec {
        serde_json::from_value(json!({
            "name": "e", "template": "t",
            "parameters": [
                {"name": "lr", "type": "float", "min": 0.0001, "max": 1.0, "log": true},
                {"name": "opt", "type": "enum", "choices": ["adam", "sgd"]},
                {"name": "amp", "type": "bool"},
            ],
            "objective": {"metric": "loss", "direction": "minimize"},
        }))
        .unwrap()
    }

    fn trials(n: u32) -> Vec<Trial> {
        (1..=n)
            .map(|i| Trial {
                number: i,
                job: trial_job_name("e", i),
                values: serde_json::from_value(json!({
                    "lr": 10f64.powf(-(f64::from(i % 4))),
                    "opt": if i % 2 == 0 { "adam" } else { "sgd" },
                    "amp": i % 3 == 0,
                }))
                .unwrap(),
                status: if i % 5 == 0 {
                    TrialStatus::Failed
                } else {
                    TrialStatus::Succeeded
                },
                objective: Some(f64::from(i % 7) / 10.0),
                step: None,
                message: String::new(),
                created_at: 0,
                ended_at: None,
            })
            .collect()
    }

    #[test]
    fn a_log_axis_is_labelled_in_powers_of_ten_and_categories_each_by_name() {
        let s = spec();
        let lr = Scale::of(&s.space.parameters[0]);
        let labels: Vec<String> = lr.ticks().into_iter().map(|t| t.1).collect();
        assert_eq!(labels, ["1.00e-4", "0.001", "0.01", "0.1", "1"]);
        assert!((lr.position(&json!(0.01)).unwrap() - 0.5).abs() < 1e-9);
        let opt = Scale::of(&s.space.parameters[1]);
        assert_eq!(opt.position(&json!("sgd")), Some(0.75));
        assert_eq!(opt.position(&json!("rmsprop")), None);
        assert_eq!(
            Scale::of(&s.space.parameters[2]).position(&json!(true)),
            Some(0.75)
        );
    }

    #[test]
    fn the_charts_draw_a_line_per_finished_trial_and_an_axis_per_parameter() {
        let s = spec();
        let all = trials(40);
        let finished = all
            .iter()
            .filter(|t| t.status == TrialStatus::Succeeded)
            .count();
        let parallel = parallel_chart(&s.space.parameters, &s.objective, &all);
        assert!(parallel.starts_with("<svg"), "{parallel}");
        // A polyline per trial and one per axis (ticks are two-point paths too).
        let lines = parallel.matches("<polyline").count();
        assert!(lines >= finished + 4, "{lines} lines");
        let labels = texts(&parallel);
        for name in ["lr", "opt", "amp", "loss", "adam", "true"] {
            assert!(labels.contains(&name.to_owned()), "{name}: {labels:?}");
        }
        let best = best_chart(&s.objective, &all);
        assert!(
            best.contains("<polyline") && best.contains("<circle"),
            "{best}"
        );
        let scatter = scatter_chart(&s.space.parameters[1], &s.objective, &all);
        assert_eq!(scatter.matches("<circle").count(), finished, "{scatter}");
        assert!(texts(&scatter).contains(&"sgd".to_owned()));
        // Every colour is the theme's.
        for svg in [&parallel, &best, &scatter] {
            assert!(svg.contains("chart-stroke-2") || svg.contains("chart-fill-2"));
        }
        assert_eq!(best_chart(&s.objective, &[]), "");
        assert_eq!(parallel_chart(&s.space.parameters, &s.objective, &[]), "");
    }

    #[test]
    fn the_best_quartile_is_the_lowest_loss_or_the_highest_score() {
        let mut s = spec();
        assert_eq!(quartiles(&s.objective, &[0.4, 0.1, 0.3, 0.2]), [3, 0, 2, 1]);
        s.objective.direction = crate::models::Direction::Maximize;
        assert_eq!(quartiles(&s.objective, &[0.4, 0.1, 0.3, 0.2]), [0, 3, 1, 2]);
    }
}
