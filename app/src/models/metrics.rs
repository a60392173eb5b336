//! PaddleBoard's training metrics: scalar points per (job, tag), as written
//! by the REST API, the SDK's `draw_board`, TensorBoard/VisualDL log files and
//! MLflow clients, and as charts read them back (an envelope per range).

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::AppError;

/// Most points one REST call may carry.
pub const MAX_BATCH_POINTS: usize = 10_000;
/// Longest tag.
pub const MAX_TAG_LEN: usize = 256;
/// Widest envelope a chart may ask for (pixels).
pub const MAX_WIDTH: usize = 10_000;

/// `f64` in JSON, where NaN and ±Infinity (which JSON cannot write) travel as
/// the strings `"NaN"`, `"Infinity"` and `"-Infinity"`.
pub mod json_float {
    use super::*;

    /// Writes finite values as numbers and the others as strings.
    pub fn serialize<S: Serializer>(value: &f64, s: S) -> Result<S::Ok, S::Error> {
        if value.is_nan() {
            s.serialize_str("NaN")
        } else if *value == f64::INFINITY {
            s.serialize_str("Infinity")
        } else if *value == f64::NEG_INFINITY {
            s.serialize_str("-Infinity")
        } else {
            s.serialize_f64(*value)
        }
    }

    /// Reads a number, or one of the strings (any case; `inf`, `+inf`, `nan` too).
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        d.deserialize_any(FloatVisitor)
    }

    /// A visitor rather than an untagged enum: no buffering, which matters
    /// for batches of 10,000 points.
    struct FloatVisitor;

    impl serde::de::Visitor<'_> for FloatVisitor {
        type Value = f64;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a number, or \"NaN\", \"Infinity\" or \"-Infinity\"")
        }

        fn visit_f64<E>(self, v: f64) -> Result<f64, E> {
            Ok(v)
        }

        fn visit_i64<E>(self, v: i64) -> Result<f64, E> {
            Ok(v as f64)
        }

        fn visit_u64<E>(self, v: u64) -> Result<f64, E> {
            Ok(v as f64)
        }

        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<f64, E> {
            parse_special(v).ok_or_else(|| {
                E::custom(format!(
                    "“{v}” is not a number (NaN, Infinity and -Infinity may be strings)"
                ))
            })
        }
    }

    /// `"NaN"`, `"Infinity"`, `"-inf"`…
    pub fn parse_special(text: &str) -> Option<f64> {
        match text.trim().to_ascii_lowercase().as_str() {
            "nan" | "+nan" | "-nan" => Some(f64::NAN),
            "inf" | "+inf" | "infinity" | "+infinity" => Some(f64::INFINITY),
            "-inf" | "-infinity" => Some(f64::NEG_INFINITY),
            _ => None,
        }
    }

    /// The same for `Option<f64>`.
    pub mod option {
        use super::*;

        /// `None` as `null`.
        pub fn serialize<S: Serializer>(value: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
            match value {
                Some(v) => super::serialize(v, s),
                None => s.serialize_none(),
            }
        }

        /// `null` or absent as `None`.
        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
            #[derive(Deserialize)]
            struct Wrap(#[serde(with = "super")] f64);
            Ok(Option::<Wrap>::deserialize(d)?.map(|Wrap(v)| v))
        }
    }
}

/// One point as a writer sends it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct MetricPoint {
    /// The series, e.g. `train/loss`.
    #[cfg_attr(
        feature = "ssr",
        schema(
            pattern = r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$",
            max_length = 256
        )
    )]
    pub tag: String,
    /// Training step (the x axis).
    pub step: i64,
    /// The value; NaN and ±Infinity are kept (send them as strings in JSON).
    #[serde(with = "json_float")]
    #[cfg_attr(feature = "ssr", schema(value_type = f64))]
    pub value: f64,
    /// When it was measured, seconds since the Unix epoch (default: when received).
    #[serde(default, with = "json_float::option")]
    #[cfg_attr(feature = "ssr", schema(value_type = Option<f64>))]
    pub wall_time: Option<f64>,
}

/// The metrics route's body as the OpenAPI document states it: 1 to
/// [`MAX_BATCH_POINTS`] points (what [`validate_batch`] takes; an empty
/// batch is a 400, as is one over the limit).
#[cfg(feature = "ssr")]
#[derive(utoipa::ToSchema)]
#[schema(min_items = 1, max_items = 10_000)]
#[allow(dead_code)] // only its schema is used
pub struct MetricBatch(Vec<MetricPoint>);

/// Checks a tag: 1–256 characters, no control characters.
pub fn validate_tag(tag: &str) -> Result<(), String> {
    if tag.trim().is_empty() {
        return Err("the tag is empty".into());
    }
    if tag.chars().count() > MAX_TAG_LEN {
        return Err(format!("the tag is longer than {MAX_TAG_LEN} characters"));
    }
    if tag.chars().any(char::is_control) {
        return Err("the tag contains a control character".into());
    }
    Ok(())
}

/// Checks a batch: size, and each point. The first bad point rejects the
/// whole batch, naming its index in `field` (`[17].wall_time`).
pub fn validate_batch(points: &[MetricPoint]) -> Result<(), AppError> {
    if points.is_empty() {
        return Err(AppError::Invalid {
            field: None,
            message: "The batch is empty: send a JSON array of {tag, step, value, wall_time}."
                .into(),
        });
    }
    if points.len() > MAX_BATCH_POINTS {
        return Err(AppError::Invalid {
            field: None,
            message: format!(
                "A batch holds at most {MAX_BATCH_POINTS} points; this one has {}. Split it.",
                points.len()
            ),
        });
    }
    for (i, p) in points.iter().enumerate() {
        if let Err((key, why)) = validate_point(p) {
            return Err(AppError::invalid(
                format!("[{i}].{key}"),
                format!("Point {i}: {why}"),
            ));
        }
    }
    Ok(())
}

/// Checks one point: its tag, and a wall time in seconds. On failure, the
/// key at fault (`tag`, `wall_time`) and why.
pub fn validate_point(p: &MetricPoint) -> Result<(), (&'static str, String)> {
    validate_tag(&p.tag).map_err(|why| ("tag", format!("{why}.")))?;
    if let Some(t) = p.wall_time {
        if !t.is_finite() || t < 0.0 {
            return Err((
                "wall_time",
                "wall_time must be seconds since the Unix epoch.".into(),
            ));
        }
        // Year 2286 in seconds is 1e10; anything larger is milliseconds.
        if t > 1.0e10 {
            return Err((
                "wall_time",
                format!(
                    "wall_time {t} looks like milliseconds; send seconds since the Unix epoch."
                ),
            ));
        }
    }
    Ok(())
}

/// What a batch did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct AppendSummary {
    /// Points stored.
    pub accepted: usize,
    /// Series the batch touched.
    pub tags: usize,
    /// Earlier points replaced because a step repeated (a resumed job).
    pub replaced: usize,
}

/// A TensorBoard tag whose plugin a metric file has named, and whether that
/// is the scalars plugin: the state a file's reader needs to go on from an
/// offset (see `POST /api/v1/jobs/{name}/metric-files/{file}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct PluginTag {
    /// The tag.
    pub tag: String,
    /// Whether its plugin is `scalars`.
    pub scalar: bool,
}

/// What the console made of a piece of a metric file shipped from a pod.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct MetricFileAck {
    /// Where the file's next piece starts: past the last complete record
    /// (a record cut off at the piece's end is sent again with the rest).
    pub offset: u64,
    /// Points stored from this piece.
    pub points: usize,
    /// Send these back with the next piece of this file.
    pub plugin_tags: Vec<PluginTag>,
    /// The size of the record at `offset` when the piece ended inside it:
    /// send at least this much next time (or skip a record too large to send).
    pub next_record: Option<u64>,
    /// Why reading cannot go past `offset` (damaged framing), if it cannot.
    pub stalled: Option<String>,
    /// Damaged records skipped and points refused, each saying why.
    pub warnings: Vec<String>,
}

/// A job's series as the tag list shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct TagSummary {
    /// The tag.
    pub tag: String,
    /// How many points it has.
    pub points: u64,
    /// Its last step, if any.
    pub last_step: Option<i64>,
    /// The value at its last step (NaN/±Infinity as strings), if any: the
    /// run's final value, as a comparison of runs shows it.
    #[serde(default, with = "json_float::option")]
    #[cfg_attr(feature = "ssr", schema(value_type = Option<f64>))]
    pub last_value: Option<f64>,
}

/// One point of a chart.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ChartPoint {
    /// Training step.
    pub step: i64,
    /// Seconds since the Unix epoch.
    pub wall_time: f64,
    /// The value (NaN/±Infinity as strings in JSON).
    #[serde(with = "json_float")]
    #[cfg_attr(feature = "ssr", schema(value_type = f64))]
    pub value: f64,
}

/// A series over a step range at a width: every point when there are few,
/// else the minimum and maximum of each of `width` buckets, so no spike is lost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct SeriesEnvelope {
    /// The points to draw, by step.
    pub points: Vec<ChartPoint>,
    /// Smallest finite value in the range.
    #[serde(with = "json_float::option")]
    #[cfg_attr(feature = "ssr", schema(value_type = Option<f64>))]
    pub min: Option<f64>,
    /// Largest finite value in the range.
    #[serde(with = "json_float::option")]
    #[cfg_attr(feature = "ssr", schema(value_type = Option<f64>))]
    pub max: Option<f64>,
    /// Points in the range.
    pub total: u64,
    /// NaN points in the range.
    pub nan: u64,
    /// +Infinity points in the range.
    pub pos_inf: u64,
    /// -Infinity points in the range.
    pub neg_inf: u64,
    /// Whether `points` is every point of the range.
    pub full_resolution: bool,
    /// Wall time of the series' first point (origin of relative time).
    #[serde(default, with = "json_float::option")]
    #[cfg_attr(feature = "ssr", schema(value_type = Option<f64>))]
    pub origin: Option<f64>,
}

/// A step range and a width, as a chart asks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RangeQuery {
    /// First step (inclusive).
    pub from: Option<i64>,
    /// Last step (inclusive).
    pub to: Option<i64>,
    /// Pixels across: at most about twice as many points come back.
    pub width: usize,
}

/// The range a chart shows: steps, or wall times (seconds) for charts
/// against time, which the store turns into the steps logged then.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum ChartRange {
    /// A step range.
    Steps(RangeQuery),
    /// Points logged between two wall times, at a width.
    WallTime {
        /// From, seconds since the Unix epoch.
        from: f64,
        /// To.
        to: f64,
        /// Pixels across.
        width: usize,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_and_infinities_travel_as_strings_and_come_back() {
        for v in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1.5] {
            let p = ChartPoint {
                step: 1,
                wall_time: 2.0,
                value: v,
            };
            let json = serde_json::to_string(&p).unwrap();
            let back: ChartPoint = serde_json::from_str(&json).unwrap();
            assert!(
                back.value == v || (v.is_nan() && back.value.is_nan()),
                "{json}"
            );
        }
        let p: MetricPoint =
            serde_json::from_str(r#"{"tag":"loss","step":3,"value":"-inf"}"#).unwrap();
        assert_eq!(p.value, f64::NEG_INFINITY);
        assert_eq!(p.wall_time, None);
        assert!(
            serde_json::from_str::<MetricPoint>(r#"{"tag":"l","step":3,"value":"x"}"#).is_err()
        );
    }

    #[test]
    fn a_bad_point_names_its_index() {
        let ok = MetricPoint {
            tag: "loss".into(),
            step: 0,
            value: 1.0,
            wall_time: Some(1.7e9),
        };
        let mut batch = vec![ok.clone(); 3];
        batch[2].tag = " ".into();
        let err = validate_batch(&batch).unwrap_err();
        assert_eq!(err.field(), Some("[2].tag"));
        batch[2] = ok.clone();
        batch[1].wall_time = Some(1.7e12);
        let err = validate_batch(&batch).unwrap_err();
        assert_eq!(err.field(), Some("[1].wall_time"));
        assert!(err.to_string().contains("milliseconds"), "{err}");
        assert!(validate_batch(&vec![ok; MAX_BATCH_POINTS + 1]).is_err());
        assert!(validate_batch(&[]).is_err());
    }
}
