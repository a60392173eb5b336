//! Record framing of the two log formats.
//!
//! Both formats are a plain sequence of length-prefixed records:
//!
//! * TensorBoard (TFRecord): `u64 LE length`, `u32 LE masked CRC32C of the 8
//!   length bytes`, `length` bytes of data, `u32 LE masked CRC32C of the data`.
//! * VisualDL 2.x: `u64 LE length`, `length` bytes of data, and nothing else.
//!   VisualDL's `RecordWriter` has a `write_crc` method producing TFRecord
//!   framing, but its `_AsyncWriterThread` calls `write`, which does not
//!   checksum anything (visualdl/writer/record_writer.py), and its reader
//!   (visualdl/reader/record_reader.py) expects no checksum either.

use crc::{Crc, CRC_32_ISCSI};

/// Longest record accepted. Real records are small (a scalar event is ~30
/// bytes; images and histograms reach megabytes), so a longer length is
/// taken as corruption rather than waited for: otherwise one damaged length
/// would make the reader wait for gigabytes that never come.
pub const MAX_RECORD_LEN: u64 = 256 << 20;

/// TFRecord header: length + length CRC.
const TF_HEADER_LEN: usize = 12;
/// TFRecord footer: data CRC.
const TF_FOOTER_LEN: usize = 4;
/// VisualDL header: length only.
const VDL_HEADER_LEN: usize = 8;

/// CRC-32C (Castagnoli), the checksum TFRecord uses (the "iSCSI" polynomial).
const CRC32C: Crc<u32> = Crc::<u32>::new(&CRC_32_ISCSI);

/// What the bytes at the start of a buffer hold.
#[derive(Debug, PartialEq)]
pub enum Frame<'a> {
    /// A complete, intact record: its payload and the bytes it occupies.
    Record { payload: &'a [u8], len: usize },
    /// A complete record whose payload is damaged; skip `len` bytes.
    Corrupt { len: usize, reason: String },
    /// The record is not complete yet (the writer is still appending).
    Incomplete,
    /// The framing itself is damaged, so the start of the next record is
    /// unknown and nothing after this point can be read.
    Lost(String),
}

/// TFRecord's checksum: CRC32C rotated right by 15 bits plus a constant, so
/// that data which itself contains CRCs does not checksum to trivial values.
pub fn masked_crc32c(data: &[u8]) -> u32 {
    let crc = CRC32C.checksum(data);
    crc.rotate_right(15).wrapping_add(0xa282_ead8)
}

fn read_u64_le(data: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(data.get(..8)?.try_into().ok()?))
}

fn read_u32_le(data: &[u8]) -> Option<u32> {
    Some(u32::from_le_bytes(data.get(..4)?.try_into().ok()?))
}

/// Converts a record length to `usize`, or explains why it is impossible.
fn checked_len(len: u64) -> Result<usize, String> {
    if len > MAX_RECORD_LEN {
        return Err(format!(
            "record length {len} exceeds the {MAX_RECORD_LEN}-byte limit"
        ));
    }
    usize::try_from(len).map_err(|_| format!("record length {len} does not fit in memory"))
}

/// Parses the TFRecord at the start of `data`.
pub fn next_tfrecord(data: &[u8]) -> Frame<'_> {
    let (Some(len), Some(len_crc)) = (read_u64_le(data), data.get(8..).and_then(read_u32_le))
    else {
        return Frame::Incomplete;
    };
    if masked_crc32c(&data[..8]) != len_crc {
        return Frame::Lost("length checksum mismatch".to_owned());
    }
    let len = match checked_len(len) {
        Ok(len) => len,
        Err(reason) => return Frame::Lost(reason),
    };
    let total = TF_HEADER_LEN + len + TF_FOOTER_LEN;
    let Some(record) = data.get(..total) else {
        return Frame::Incomplete;
    };
    let payload = &record[TF_HEADER_LEN..TF_HEADER_LEN + len];
    let data_crc = read_u32_le(&record[TF_HEADER_LEN + len..]);
    if data_crc == Some(masked_crc32c(payload)) {
        Frame::Record {
            payload,
            len: total,
        }
    } else {
        Frame::Corrupt {
            len: total,
            reason: "data checksum mismatch".to_owned(),
        }
    }
}

/// Parses the VisualDL record at the start of `data`.
pub fn next_vdl_record(data: &[u8]) -> Frame<'_> {
    let Some(len) = read_u64_le(data) else {
        return Frame::Incomplete;
    };
    let len = match checked_len(len) {
        Ok(len) => len,
        Err(reason) => return Frame::Lost(reason),
    };
    match data.get(VDL_HEADER_LEN..VDL_HEADER_LEN + len) {
        Some(payload) => Frame::Record {
            payload,
            len: VDL_HEADER_LEN + len,
        },
        None => Frame::Incomplete,
    }
}

/// The bytes the record at the start of `data` occupies in all, once its
/// header is there and sound: how much a reader that stopped at an
/// incomplete record needs before it can go on.
pub(crate) fn record_len(format: super::LogFormat, data: &[u8]) -> Option<usize> {
    let len = read_u64_le(data)?;
    let (header, footer) = match format {
        super::LogFormat::TensorBoard => {
            if masked_crc32c(&data[..8]) != read_u32_le(data.get(8..)?)? {
                return None;
            }
            (TF_HEADER_LEN, TF_FOOTER_LEN)
        }
        super::LogFormat::VisualDl => (VDL_HEADER_LEN, 0),
    };
    Some(header + checked_len(len).ok()? + footer)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tfrecord(payload: &[u8]) -> Vec<u8> {
        let len = (payload.len() as u64).to_le_bytes();
        let mut out = len.to_vec();
        out.extend(masked_crc32c(&len).to_le_bytes());
        out.extend(payload);
        out.extend(masked_crc32c(payload).to_le_bytes());
        out
    }

    #[test]
    fn crc32c_matches_the_published_check_value() {
        // The CRC-32C catalogue check value for "123456789".
        assert_eq!(CRC32C.checksum(b"123456789"), 0xe306_9283);
    }

    #[test]
    fn masked_crc_of_an_empty_buffer_is_the_mask_constant() {
        assert_eq!(masked_crc32c(b""), 0xa282_ead8);
    }

    #[test]
    fn an_intact_tfrecord_is_returned_whole() {
        let rec = tfrecord(b"hello");
        assert_eq!(
            next_tfrecord(&rec),
            Frame::Record {
                payload: b"hello",
                len: 21
            }
        );
    }

    #[test]
    fn every_proper_prefix_of_a_tfrecord_is_incomplete() {
        let rec = tfrecord(b"hello");
        for cut in 0..rec.len() {
            assert_eq!(next_tfrecord(&rec[..cut]), Frame::Incomplete, "cut {cut}");
        }
    }

    #[test]
    fn a_damaged_tfrecord_payload_is_corrupt_but_skippable() {
        let mut rec = tfrecord(b"hello");
        rec[13] ^= 1;
        assert!(matches!(
            next_tfrecord(&rec),
            Frame::Corrupt { len: 21, .. }
        ));
    }

    #[test]
    fn a_damaged_tfrecord_length_loses_the_framing() {
        let mut rec = tfrecord(b"hello");
        rec[0] ^= 1;
        assert!(matches!(next_tfrecord(&rec), Frame::Lost(_)));
    }

    #[test]
    fn a_tfrecord_longer_than_the_limit_loses_the_framing() {
        let len = (MAX_RECORD_LEN + 1).to_le_bytes();
        let mut rec = len.to_vec();
        rec.extend(masked_crc32c(&len).to_le_bytes());
        assert!(matches!(next_tfrecord(&rec), Frame::Lost(_)));
    }

    #[test]
    fn a_visualdl_record_is_a_bare_length_and_payload() {
        let mut rec = 3u64.to_le_bytes().to_vec();
        rec.extend(b"abc");
        assert_eq!(
            next_vdl_record(&rec),
            Frame::Record {
                payload: b"abc",
                len: 11
            }
        );
        for cut in 0..rec.len() {
            assert_eq!(next_vdl_record(&rec[..cut]), Frame::Incomplete);
        }
    }

    #[test]
    fn a_huge_visualdl_length_loses_the_framing() {
        let rec = u64::MAX.to_le_bytes();
        assert!(matches!(next_vdl_record(&rec), Frame::Lost(_)));
    }

    #[test]
    fn an_incomplete_records_length_is_known_from_its_header() {
        use super::super::LogFormat;
        let record = tfrecord(&[7; 100]);
        assert_eq!(record_len(LogFormat::TensorBoard, &record[..12]), Some(116));
        assert_eq!(record_len(LogFormat::TensorBoard, &record[..11]), None);
        let mut damaged = record.clone();
        damaged[9] ^= 1;
        assert_eq!(record_len(LogFormat::TensorBoard, &damaged), None);
        let mut vdl = 100u64.to_le_bytes().to_vec();
        vdl.extend([1, 2, 3]);
        assert_eq!(record_len(LogFormat::VisualDl, &vdl), Some(108));
    }
}
