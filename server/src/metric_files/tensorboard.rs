//! TensorBoard `Event` protobufs and scalar extraction.
//!
//! Only the fields needed for scalars are declared; prost skips every other
//! field (images, histograms, graphs, ...) without decoding it. Field numbers
//! are those of tensorboard/compat/proto/{event,summary,tensor,tensor_shape,
//! types}.proto (identical in tensorboardX/proto/).

use std::collections::{HashMap, HashSet};

use prost::Message;

use super::ScalarPoint;

#[derive(Clone, PartialEq, Message)]
struct Event {
    #[prost(double, tag = "1")]
    wall_time: f64,
    #[prost(int64, tag = "2")]
    step: i64,
    /// Member of the `what` oneof (file_version = 3, graph_def = 4, ...).
    #[prost(message, optional, tag = "5")]
    summary: Option<Summary>,
}

#[derive(Clone, PartialEq, Message)]
struct Summary {
    #[prost(message, repeated, tag = "1")]
    value: Vec<SummaryValue>,
}

#[derive(Clone, PartialEq, Message)]
struct SummaryValue {
    #[prost(string, tag = "1")]
    tag: String,
    /// Member of the `value` oneof, so presence matters: `optional` keeps a
    /// written 0.0 apart from "another member (image, histo, ...) was set".
    #[prost(float, optional, tag = "2")]
    simple_value: Option<f32>,
    #[prost(message, optional, tag = "8")]
    tensor: Option<TensorProto>,
    #[prost(message, optional, tag = "9")]
    metadata: Option<SummaryMetadata>,
}

#[derive(Clone, PartialEq, Message)]
struct SummaryMetadata {
    #[prost(message, optional, tag = "1")]
    plugin_data: Option<PluginData>,
}

#[derive(Clone, PartialEq, Message)]
struct PluginData {
    #[prost(string, tag = "1")]
    plugin_name: String,
}

#[derive(Clone, PartialEq, Message)]
struct TensorProto {
    /// `DataType` enum, kept as a raw number so unknown types decode.
    #[prost(int32, tag = "1")]
    dtype: i32,
    #[prost(message, optional, tag = "2")]
    tensor_shape: Option<TensorShapeProto>,
    #[prost(bytes = "vec", tag = "4")]
    tensor_content: Vec<u8>,
    #[prost(float, repeated, tag = "5")]
    float_val: Vec<f32>,
    #[prost(double, repeated, tag = "6")]
    double_val: Vec<f64>,
    /// Also holds DT_INT16, DT_INT8, DT_UINT8 and DT_UINT16 values.
    #[prost(int32, repeated, tag = "7")]
    int_val: Vec<i32>,
    #[prost(int64, repeated, tag = "10")]
    int64_val: Vec<i64>,
    /// DT_HALF and DT_BFLOAT16 bit patterns in the low 16 bits.
    #[prost(int32, repeated, tag = "13")]
    half_val: Vec<i32>,
}

#[derive(Clone, PartialEq, Message)]
struct TensorShapeProto {
    #[prost(message, repeated, tag = "2")]
    dim: Vec<Dim>,
}

#[derive(Clone, PartialEq, Message)]
struct Dim {
    #[prost(int64, tag = "1")]
    size: i64,
}

// DataType numbers from types.proto.
const DT_FLOAT: i32 = 1;
const DT_DOUBLE: i32 = 2;
const DT_INT32: i32 = 3;
const DT_UINT8: i32 = 4;
const DT_INT16: i32 = 5;
const DT_INT8: i32 = 6;
const DT_INT64: i32 = 9;
const DT_BFLOAT16: i32 = 14;
const DT_UINT16: i32 = 17;
const DT_HALF: i32 = 19;

/// The plugin name that marks tensor summaries as scalars.
const SCALARS_PLUGIN: &str = "scalars";

/// Per-file decoding state.
#[derive(Debug, Default, Clone)]
pub(crate) struct Decoder {
    /// For every tag that came with plugin metadata: whether it is a scalar
    /// tag. Writers put the metadata on the first value of a tag in a file
    /// only, and TensorBoard lets that first metadata decide, so this must
    /// live as long as the file is being read.
    plugin_is_scalars: HashMap<String, bool>,
    /// Scalar tags whose tensor could not be read, warned about once each.
    warned_tags: HashSet<String>,
}

impl Decoder {
    /// Starts with the tags whose plugin is already known, and whether it
    /// is the scalars plugin (see [`super::LogReader::resume`]).
    pub(crate) fn with_plugin_tags(tags: impl IntoIterator<Item = (String, bool)>) -> Self {
        Self {
            plugin_is_scalars: tags.into_iter().collect(),
            warned_tags: HashSet::new(),
        }
    }

    /// Every tag whose plugin is known, and whether it is the scalars plugin.
    pub(crate) fn plugin_tags(&self) -> impl Iterator<Item = (&str, bool)> {
        self.plugin_is_scalars
            .iter()
            .map(|(tag, &is_scalar)| (tag.as_str(), is_scalar))
    }

    /// Decodes one record's payload, appending its scalars to `points`.
    pub(crate) fn decode(
        &mut self,
        payload: &[u8],
        points: &mut Vec<ScalarPoint>,
        warnings: &mut Vec<String>,
    ) -> Result<(), prost::DecodeError> {
        let event = Event::decode(payload)?;
        let Some(summary) = event.summary else {
            return Ok(());
        };
        for value in summary.value {
            if let Some(meta) = &value.metadata {
                let plugin = meta.plugin_data.as_ref().map(|p| p.plugin_name.as_str());
                self.plugin_is_scalars
                    .entry(value.tag.clone())
                    .or_insert(plugin == Some(SCALARS_PLUGIN));
            }
            let number = if let Some(v) = value.simple_value {
                // Legacy scalars: TensorBoard treats every simple_value as a
                // scalar, whatever metadata says.
                f64::from(v)
            } else if let Some(tensor) = &value.tensor {
                if self.plugin_is_scalars.get(&value.tag) != Some(&true) {
                    continue;
                }
                match tensor_scalar(tensor) {
                    Ok(v) => v,
                    Err(why) => {
                        if self.warned_tags.insert(value.tag.clone()) {
                            warnings.push(format!(
                                "scalar tag {:?} at step {}: {why} (further values of this tag skipped silently)",
                                value.tag, event.step
                            ));
                        }
                        continue;
                    }
                }
            } else {
                continue;
            };
            points.push(ScalarPoint {
                tag: value.tag,
                step: event.step,
                wall_time: event.wall_time,
                value: number,
            });
        }
        Ok(())
    }
}

/// The single number in a one-element tensor, as TensorBoard's scalar plugin
/// reads it (`tensor_util.make_ndarray(t).item()`).
fn tensor_scalar(t: &TensorProto) -> Result<f64, String> {
    let mut elements: i64 = 1;
    for dim in t.tensor_shape.iter().flat_map(|s| &s.dim) {
        elements = elements
            .checked_mul(dim.size)
            .filter(|n| *n >= 0)
            .ok_or("invalid tensor shape")?;
    }
    if elements != 1 {
        return Err(format!("tensor has {elements} elements, expected 1"));
    }
    // Serialised tensors hold either raw little-endian bytes or a typed list.
    let value = match t.dtype {
        DT_FLOAT => raw(t)
            .map(f32::from_le_bytes)
            .map(f64::from)
            .or(t.float_val.first().map(|&v| f64::from(v))),
        DT_DOUBLE => raw(t)
            .map(f64::from_le_bytes)
            .or(t.double_val.first().copied()),
        DT_INT32 => raw(t)
            .map(i32::from_le_bytes)
            .map(f64::from)
            .or(first_int(t)),
        DT_INT16 => raw(t)
            .map(i16::from_le_bytes)
            .map(f64::from)
            .or(first_int(t)),
        DT_INT8 => raw(t)
            .map(i8::from_le_bytes)
            .map(f64::from)
            .or(first_int(t)),
        DT_UINT8 => raw(t)
            .map(u8::from_le_bytes)
            .map(f64::from)
            .or(first_int(t)),
        DT_UINT16 => raw(t)
            .map(u16::from_le_bytes)
            .map(f64::from)
            .or(first_int(t)),
        // i64 -> f64 may round, as it does in TensorBoard's charts.
        DT_INT64 => raw(t)
            .map(i64::from_le_bytes)
            .or(t.int64_val.first().copied())
            .map(|v| v as f64),
        DT_HALF => raw(t)
            .map(u16::from_le_bytes)
            .or(first_half(t))
            .map(half_to_f64),
        DT_BFLOAT16 => raw(t)
            .map(u16::from_le_bytes)
            .or(first_half(t))
            .map(bfloat16_to_f64),
        other => return Err(format!("unsupported tensor dtype {other}")),
    };
    value.ok_or_else(|| "tensor holds no value".to_owned())
}

/// The bytes of the one element in `tensor_content`, if it holds exactly
/// one; serialised tensors carry either these raw little-endian bytes or a
/// typed list such as `float_val`.
fn raw<const N: usize>(t: &TensorProto) -> Option<[u8; N]> {
    t.tensor_content.as_slice().try_into().ok()
}

fn first_int(t: &TensorProto) -> Option<f64> {
    t.int_val.first().map(|&v| f64::from(v))
}

/// DT_HALF / DT_BFLOAT16 lists keep each 16-bit pattern in an int32.
fn first_half(t: &TensorProto) -> Option<u16> {
    t.half_val.first().map(|&v| v as u16)
}

/// IEEE 754 binary16 to f64.
fn half_to_f64(bits: u16) -> f64 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exponent = i32::from((bits >> 10) & 0x1f);
    let mantissa = f64::from(bits & 0x3ff);
    sign * match exponent {
        0 => mantissa * 2f64.powi(-24),
        0x1f if mantissa == 0.0 => f64::INFINITY,
        0x1f => f64::NAN,
        _ => (1.0 + mantissa / 1024.0) * 2f64.powi(exponent - 15),
    }
}

/// bfloat16 is the top half of an f32.
fn bfloat16_to_f64(bits: u16) -> f64 {
    f64::from(f32::from_bits(u32::from(bits) << 16))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scalar_tensor(dtype: i32) -> TensorProto {
        TensorProto {
            dtype,
            tensor_shape: Some(TensorShapeProto::default()),
            ..TensorProto::default()
        }
    }

    #[test]
    fn half_precision_values_convert_exactly() {
        assert_eq!(half_to_f64(0x3c00), 1.0);
        assert_eq!(half_to_f64(0xc000), -2.0);
        assert_eq!(half_to_f64(0x0001), 2f64.powi(-24));
        assert_eq!(half_to_f64(0x7c00), f64::INFINITY);
        assert!(half_to_f64(0x7e00).is_nan());
        assert_eq!(bfloat16_to_f64(0x3f80), 1.0);
    }

    #[test]
    fn tensor_content_takes_precedence_over_typed_lists() {
        let mut t = scalar_tensor(DT_FLOAT);
        t.tensor_content = 2.5f32.to_le_bytes().to_vec();
        t.float_val = vec![9.0];
        assert_eq!(tensor_scalar(&t), Ok(2.5));
    }

    #[test]
    fn integer_tensors_are_read_as_numbers() {
        let mut t = scalar_tensor(DT_INT64);
        t.int64_val = vec![-7];
        assert_eq!(tensor_scalar(&t), Ok(-7.0));
        let mut t = scalar_tensor(DT_UINT8);
        t.tensor_content = vec![200];
        assert_eq!(tensor_scalar(&t), Ok(200.0));
    }

    #[test]
    fn tensors_with_more_than_one_element_are_rejected() {
        let mut t = scalar_tensor(DT_FLOAT);
        t.tensor_shape = Some(TensorShapeProto {
            dim: vec![Dim { size: 2 }],
        });
        t.float_val = vec![1.0, 2.0];
        assert!(tensor_scalar(&t).is_err());
    }

    #[test]
    fn overflowing_or_negative_shapes_are_rejected() {
        let mut t = scalar_tensor(DT_FLOAT);
        t.tensor_shape = Some(TensorShapeProto {
            dim: vec![Dim { size: i64::MAX }, Dim { size: 3 }],
        });
        assert!(tensor_scalar(&t).is_err());
        t.tensor_shape = Some(TensorShapeProto {
            dim: vec![Dim { size: -1 }],
        });
        assert!(tensor_scalar(&t).is_err());
    }

    #[test]
    fn string_tensors_are_not_numbers() {
        assert!(tensor_scalar(&scalar_tensor(7)).is_err());
    }
}
