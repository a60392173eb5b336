//! `cargo bench` — plain timing loop, no external harness.

use server::paddleboard::series::Series;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// SplitMix64 (no dependencies).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Random walk with a rare spike (1 in 100k), built with `push`.
fn build(n: usize, seed: u64) -> (Series, Duration) {
    let mut rng = Rng(seed);
    let mut s = Series::new();
    let mut v = 0.0;
    let t = Instant::now();
    for i in 0..n {
        v += rng.unit() - 0.5;
        let spike = if rng.next().is_multiple_of(100_000) {
            1000.0
        } else {
            0.0
        };
        s.push(i as i64, 1.7e9 + i as f64 * 0.05, v + spike);
    }
    (s, t.elapsed())
}

fn percentiles(mut d: Vec<Duration>) -> String {
    d.sort();
    let at = |q: f64| d[((d.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e6;
    format!("p50 {:8.1} µs   p90 {:8.1} µs", at(0.5), at(0.9))
}

fn time<R>(runs: usize, mut f: impl FnMut(usize) -> R) -> Vec<Duration> {
    (0..runs)
        .map(|i| {
            let t = Instant::now();
            black_box(f(i));
            t.elapsed()
        })
        .collect()
}

/// What the pyramid saves us from: a linear min/max scan per bucket.
fn naive(s: &Series, width: usize) -> usize {
    let pts: Vec<_> = s.points(None, None).collect();
    let per = pts.len().div_ceil(width);
    pts.chunks(per)
        .map(|c| {
            let mn = c.iter().map(|p| p.value).fold(f64::INFINITY, f64::min);
            let mx = c.iter().map(|p| p.value).fold(f64::NEG_INFINITY, f64::max);
            (mn + mx) as usize
        })
        .sum()
}

fn main() {
    let (big, t_big) = build(1_000_000, 1);
    println!(
        "build 1 x 1M points       {:6.1} ms  ({:.1} M points/s)",
        t_big.as_secs_f64() * 1e3,
        1.0 / t_big.as_secs_f64()
    );
    let t = Instant::now();
    let small: Vec<Series> = (0..100).map(|i| build(100_000, 100 + i).0).collect();
    let t_small = t.elapsed();
    println!(
        "build 100 x 100k points   {:6.1} ms  ({:.1} M points/s)",
        t_small.as_secs_f64() * 1e3,
        10.0 / t_small.as_secs_f64()
    );

    let bytes = |s: &Series| s.heap_bytes() as f64 / s.len() as f64;
    let mut shrunk = big.clone();
    shrunk.shrink_to_fit();
    let small_total: usize = small.iter().map(Series::heap_bytes).sum();
    println!(
        "memory: 1M series {:.1} B/point ({:.1} MB, {:.1} B/point after shrink_to_fit); 100 x 100k {:.1} B/point ({:.0} MB)",
        bytes(&big),
        big.heap_bytes() as f64 / 1e6,
        bytes(&shrunk),
        small_total as f64 / 10e6,
        small_total as f64 / 1e6
    );

    let full = time(200, |_| big.query(None, None, 1000));
    println!(
        "1M   whole range, width 1000:  {}  ({} points)",
        percentiles(full),
        big.query(None, None, 1000).points.len()
    );
    let mut rng = Rng(9);
    let zoom = time(200, |_| {
        let from = (rng.unit() * 990_000.0) as i64;
        big.query(Some(from), Some(from + 9_999), 1000)
    });
    println!(
        "1M   1% zoom,      width 1000:  {}  (10k points -> <= 2000)",
        percentiles(zoom)
    );
    let full = time(200, |i| small[i % 100].query(None, None, 1000));
    println!("100k whole range, width 1000:  {}", percentiles(full));
    let warm = time(200, |_| small[0].query(None, None, 1000));
    println!(
        "100k whole range, width 1000, same series (cache-warm):  {}",
        percentiles(warm)
    );
    let zoom = time(200, |i| {
        let from = (rng.unit() * 99_000.0) as i64;
        small[i % 100].query(Some(from), Some(from + 999), 1000)
    });
    println!(
        "100k 1% zoom,      width 1000:  {}  (1k points, full resolution)",
        percentiles(zoom)
    );
    let dash = time(20, |_| {
        small
            .iter()
            .map(|s| s.query(None, None, 1000).points.len())
            .sum::<usize>()
    });
    println!(
        "dashboard: 100 x 100k series, width 1000 each: {}",
        percentiles(dash)
    );
    let lin = time(20, |_| naive(&big, 1000));
    println!(
        "reference: naive linear scan of 1M (copying points): {}",
        percentiles(lin)
    );
}
