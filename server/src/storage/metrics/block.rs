//! How a run of one series' points is stored: one database value (a
//! `metric_blocks` row) per batch written, instead of one row per point.
//!
//! A row per point made the database the bottleneck of ingestion: every point
//! was an index entry, and a batch of 10,000 points cost tens of milliseconds
//! inside the single SQLite writer. A block is written in one statement and
//! read back with one memory copy, so loading a 1M-point series for a chart
//! reads ~100 values instead of a million rows.
//!
//! The encoding is a format byte followed by fixed 24-byte little-endian
//! records (step `i64`, wall time `f64`, value `f64`), in strictly increasing
//! step order. NaN and infinities are kept bit for bit, which a SQL `REAL`
//! column could not do for NaN.

use super::batch::Row;

/// The only format so far: raw little-endian records.
const RAW: u8 = 1;
/// Bytes per point.
const RECORD: usize = 24;

/// `rows` as one block value.
pub fn encode(rows: &[Row]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + rows.len() * RECORD);
    out.push(RAW);
    for r in rows {
        out.extend_from_slice(&r.step.to_le_bytes());
        out.extend_from_slice(&r.wall_time.to_le_bytes());
        out.extend_from_slice(&r.value.to_le_bytes());
    }
    out
}

/// Appends the points of block value `bytes` to `out`. A value this code did
/// not write (an unknown format, a cut-off record) is an error, never a panic.
pub fn decode_into(bytes: &[u8], out: &mut Vec<Row>) -> Result<(), BadBlock> {
    let (&format, records) = bytes.split_first().ok_or(BadBlock("empty"))?;
    if format != RAW {
        return Err(BadBlock("unknown format"));
    }
    if records.len() % RECORD != 0 {
        return Err(BadBlock("cut-off record"));
    }
    out.reserve(records.len() / RECORD);
    for r in records.chunks_exact(RECORD) {
        let word = |at: usize| <[u8; 8]>::try_from(&r[at..at + 8]).expect("8 bytes");
        out.push(Row {
            step: i64::from_le_bytes(word(0)),
            wall_time: f64::from_le_bytes(word(8)),
            value: f64::from_le_bytes(word(16)),
        });
    }
    Ok(())
}

/// The points of block value `bytes`.
pub fn decode(bytes: &[u8]) -> Result<Vec<Row>, BadBlock> {
    let mut out = Vec::new();
    decode_into(bytes, &mut out)?;
    Ok(out)
}

/// A stored block that cannot be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadBlock(pub &'static str);

impl std::fmt::Display for BadBlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unreadable metric block: {}", self.0)
    }
}

impl std::error::Error for BadBlock {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_come_back_bit_for_bit_including_nan_and_infinities() {
        let rows = vec![
            Row {
                step: -3,
                wall_time: 1.5,
                value: f64::NAN,
            },
            Row {
                step: 0,
                wall_time: 2.25,
                value: f64::NEG_INFINITY,
            },
            Row {
                step: i64::MAX,
                wall_time: 1e9,
                value: -0.0,
            },
        ];
        let back = decode(&encode(&rows)).unwrap();
        assert_eq!(back.len(), 3);
        for (a, b) in rows.iter().zip(&back) {
            assert_eq!(a.step, b.step);
            assert_eq!(a.wall_time.to_bits(), b.wall_time.to_bits());
            assert_eq!(a.value.to_bits(), b.value.to_bits());
        }
        assert_eq!(decode(&encode(&[])).unwrap(), vec![]);
    }

    #[test]
    fn a_damaged_block_is_an_error_not_a_panic() {
        let mut bytes = encode(&[Row {
            step: 1,
            wall_time: 1.0,
            value: 1.0,
        }]);
        assert_eq!(decode(&[]), Err(BadBlock("empty")));
        assert_eq!(decode(&bytes[..10]), Err(BadBlock("cut-off record")));
        bytes[0] = 9;
        assert_eq!(decode(&bytes), Err(BadBlock("unknown format")));
    }
}
