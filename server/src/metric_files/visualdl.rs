//! VisualDL 2.x `Record` protobufs and scalar extraction.
//!
//! Field numbers are those of VisualDL's record.proto (package `visualdl`,
//! shipped compiled as visualdl/proto/record_pb2.py). Only scalar fields are
//! declared; prost skips the other members of `Value.one_value` (image = 5,
//! audio = 6, embeddings = 7, histogram = 8, pr_curve = 9, meta_data = 10,
//! roc_curve = 11, text = 12, hparam = 13) without decoding them.

use prost::Message;

use super::ScalarPoint;

#[derive(Clone, PartialEq, Message)]
struct Record {
    #[prost(message, repeated, tag = "1")]
    values: Vec<Value>,
}

#[derive(Clone, PartialEq, Message)]
struct Value {
    /// The step.
    #[prost(int64, tag = "1")]
    id: i64,
    #[prost(string, tag = "2")]
    tag: String,
    /// Milliseconds since the Unix epoch (`LogWriter` writes
    /// `round(time.time() * 1000)` when no walltime is given).
    #[prost(int64, tag = "3")]
    timestamp: i64,
    /// `LogWriter.add_scalar`. A `one_value` member: `optional` tells a
    /// written 0.0 from an image or histogram record.
    #[prost(float, optional, tag = "4")]
    value: Option<f32>,
    /// `LogWriter.add_scalars`: one line of a multi-line chart.
    #[prost(message, optional, tag = "14")]
    tag_value: Option<TagValue>,
}

#[derive(Clone, PartialEq, Message)]
struct TagValue {
    #[prost(string, tag = "1")]
    tag: String,
    #[prost(float, tag = "2")]
    value: f32,
}

/// Decodes one record's payload, appending its scalars to `points`.
///
/// A scalar from `add_scalars(main_tag, {sub_tag: v})` is reported under the
/// tag `main_tag/sub_tag`, which keeps it apart from the other lines of its
/// chart and from a plain scalar named `main_tag`.
pub(crate) fn decode(
    payload: &[u8],
    points: &mut Vec<ScalarPoint>,
) -> Result<(), prost::DecodeError> {
    let record = Record::decode(payload)?;
    for value in record.values {
        let (tag, number) = match (value.value, value.tag_value) {
            (Some(v), _) => (value.tag, v),
            (None, Some(tv)) => (format!("{}/{}", value.tag, tv.tag), tv.value),
            (None, None) => continue,
        };
        points.push(ScalarPoint {
            tag,
            step: value.id,
            // i64 -> f64 is exact for any date before the year 285,000.
            wall_time: value.timestamp as f64 / 1000.0,
            value: f64::from(number),
        });
    }
    Ok(())
}
