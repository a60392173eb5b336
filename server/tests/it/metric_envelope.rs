use server::paddleboard::series::{Envelope, Point, Series};

/// SplitMix64: tiny deterministic PRNG so the tests need no dependencies.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Bitwise equality so NaN values compare equal to themselves.
fn same(p: &Point, q: &(i64, f64, f64)) -> bool {
    p.step == q.0 && p.wall_time.to_bits() == q.1.to_bits() && p.value.to_bits() == q.2.to_bits()
}

/// Reference model of the restart rule: drop every step >= the new one.
fn model_push(model: &mut Vec<(i64, f64, f64)>, p: (i64, f64, f64)) {
    while model.last().is_some_and(|q| q.0 >= p.0) {
        model.pop();
    }
    model.push(p);
}

fn walk(n: usize, seed: u64) -> Vec<(i64, f64, f64)> {
    let mut rng = Rng(seed);
    let mut v = 0.0;
    (0..n)
        .map(|i| {
            v += rng.unit() - 0.5;
            (i as i64, i as f64 * 0.1, v)
        })
        .collect()
}

/// Checks an answer against a naive computation over `model`.
fn check(
    model: &[(i64, f64, f64)],
    from: Option<i64>,
    to: Option<i64>,
    width: usize,
    env: &Envelope,
) {
    let range: Vec<_> = model
        .iter()
        .filter(|p| from.is_none_or(|f| p.0 >= f) && to.is_none_or(|t| p.0 <= t))
        .copied()
        .collect();
    let ctx = format!("from={from:?} to={to:?} width={width} n={}", range.len());
    let w = width.max(1);
    assert_eq!(env.total, range.len(), "{ctx}");
    let finite: Vec<f64> = range
        .iter()
        .map(|p| p.2)
        .filter(|v| v.is_finite())
        .collect();
    assert_eq!(env.min, finite.iter().copied().reduce(f64::min), "{ctx}");
    assert_eq!(env.max, finite.iter().copied().reduce(f64::max), "{ctx}");
    assert_eq!(
        env.nan,
        range.iter().filter(|p| p.2.is_nan()).count(),
        "{ctx}"
    );
    assert_eq!(
        env.pos_inf,
        range.iter().filter(|p| p.2 == f64::INFINITY).count(),
        "{ctx}"
    );
    assert_eq!(
        env.neg_inf,
        range.iter().filter(|p| p.2 == f64::NEG_INFINITY).count(),
        "{ctx}"
    );
    if range.len() <= 2 * w {
        assert!(env.full_resolution, "{ctx}");
        assert_eq!(env.points.len(), range.len(), "{ctx}");
        assert!(
            env.points.iter().zip(&range).all(|(p, q)| same(p, q)),
            "{ctx}"
        );
        return;
    }
    assert!(!env.full_resolution, "{ctx}");
    assert!(env.points.len() <= 2 * w, "{ctx}");
    assert!(
        env.points.windows(2).all(|p| p[0].step < p[1].step),
        "{ctx}"
    );
    // Every answer point is a real point of the range.
    for p in &env.points {
        let i = range
            .binary_search_by_key(&p.step, |q| q.0)
            .expect("answer point not in range");
        assert!(same(p, &range[i]), "{ctx}");
    }
    // Naive buckets: bucket b holds steps in [lo + b*span/w, lo + (b+1)*span/w).
    let lo = range[0].0 as i128;
    let span = range[range.len() - 1].0 as i128 - lo + 1;
    let bound = |b: usize| lo + (b as i128 * span) / w as i128;
    let mut buckets: Vec<Vec<(i64, f64, f64)>> = vec![Vec::new(); w];
    let mut b = 0;
    for p in &range {
        while p.0 as i128 >= bound(b + 1) {
            b += 1;
        }
        buckets[b].push(*p);
    }
    let buckets: Vec<_> = buckets.into_iter().filter(|b| !b.is_empty()).collect();
    assert_eq!(env.buckets.len(), buckets.len(), "{ctx}");
    for (meta, bucket) in env.buckets.iter().zip(&buckets) {
        assert_eq!(meta.first_step, bucket[0].0, "{ctx}");
        assert_eq!(meta.last_step, bucket[bucket.len() - 1].0, "{ctx}");
        assert_eq!(meta.count, bucket.len(), "{ctx}");
        let count = |f: fn(f64) -> bool| bucket.iter().filter(|p| f(p.2)).count();
        assert_eq!(meta.nan, count(f64::is_nan), "{ctx}");
        assert_eq!(meta.pos_inf, count(|v| v == f64::INFINITY), "{ctx}");
        assert_eq!(meta.neg_inf, count(|v| v == f64::NEG_INFINITY), "{ctx}");
        let (first, last) = (bucket[0].0, bucket[bucket.len() - 1].0);
        let answer: Vec<&Point> = env
            .points
            .iter()
            .filter(|p| p.step >= first && p.step <= last)
            .collect();
        assert!(!answer.is_empty() && answer.len() <= 2, "{ctx}");
        let vals: Vec<f64> = bucket
            .iter()
            .map(|p| p.2)
            .filter(|v| v.is_finite())
            .collect();
        match (
            vals.iter().copied().reduce(f64::min),
            vals.iter().copied().reduce(f64::max),
        ) {
            (Some(min), Some(max)) => {
                assert!(
                    answer.iter().any(|p| p.value == min),
                    "bucket min missing, {ctx}"
                );
                assert!(
                    answer.iter().any(|p| p.value == max),
                    "bucket max missing, {ctx}"
                );
            }
            _ => assert!(answer.len() == 1 && !answer[0].value.is_finite(), "{ctx}"),
        }
    }
}

#[test]
fn a_single_spike_and_dip_among_a_million_points_survive_a_width_1000_query() {
    let mut s = Series::new();
    s.extend(walk(1_000_000, 7));
    assert!(s.heap_bytes() < 30 * s.len(), "{} bytes", s.heap_bytes());
    let mut with_spikes = s.clone();
    with_spikes.push(400_000, 0.0, 0.0); // restart at 400,000 then replay with a spike
    with_spikes.extend(
        walk(1_000_000, 7)
            .into_iter()
            .skip(400_001)
            .map(|(st, w, v)| match st {
                654_321 => (st, w, 1e6),
                876_543 => (st, w, -1e6),
                _ => (st, w, v),
            }),
    );
    assert_eq!(with_spikes.len(), 1_000_000);
    let env = with_spikes.query(None, None, 1000);
    assert!(!env.full_resolution);
    assert!(env.points.len() <= 2000);
    assert!(env
        .points
        .iter()
        .any(|p| p.step == 654_321 && p.value == 1e6));
    assert!(env
        .points
        .iter()
        .any(|p| p.step == 876_543 && p.value == -1e6));
    assert_eq!(
        (env.max, env.min, env.total),
        (Some(1e6), Some(-1e6), 1_000_000)
    );
    // Same for a spike inside a zoomed range.
    let zoom = with_spikes.query(Some(650_000), Some(660_000), 1000);
    assert!(zoom.points.iter().any(|p| p.value == 1e6));
    assert!(zoom.points.len() <= 2000 && zoom.total == 10_001);
}

#[test]
fn random_series_keep_every_bucket_extreme_and_exact_totals() {
    let mut rng = Rng(42);
    for case in 0..200 {
        // A few large cases exercise levels 1 and 2 of the pyramid (4,096 and
        // 262,144 points per node) including deep truncations.
        let n = match case {
            0..3 => 300_000 + rng.below(300_000) as usize,
            _ => rng.below(3000) as usize,
        };
        let mut s = Series::new();
        let mut model = Vec::new();
        let (mut step, mut v) = (rng.below(100) as i64 - 50, 0.0);
        let max_gap = [1, 3, 1000][rng.below(3) as usize];
        for _ in 0..n {
            if rng.below(2000) == 0 && step > 0 {
                step -= rng.below(step as u64 * 2 / 3 + 1) as i64; // restart
            } else {
                step += 1 + rng.below(max_gap) as i64;
            }
            v += rng.unit() - 0.5;
            let value = match rng.below(100) {
                0 => f64::NAN,
                1 => f64::INFINITY,
                2 => f64::NEG_INFINITY,
                3 => v * 100.0, // spike
                _ => v,
            };
            let p = (step, rng.unit(), value);
            s.push(p.0, p.1, p.2);
            model_push(&mut model, p);
        }
        assert_eq!(s.len(), model.len());
        assert!(s.points(None, None).zip(&model).all(|(p, q)| same(&p, q)));
        let (first, last) = (
            model.first().map_or(0, |p| p.0),
            model.last().map_or(0, |p| p.0),
        );
        let queries = if n > 100_000 { 4 } else { 30 };
        for _ in 0..queries {
            let span = (last - first + 20) as u64;
            let pick = |r: &mut Rng| match r.below(5) {
                0 => None,
                _ => Some(first - 10 + r.below(span) as i64),
            };
            let (from, to) = (pick(&mut rng), pick(&mut rng));
            let width = [0, 1, 2, 7, 100, 1000][rng.below(6) as usize] + rng.below(50) as usize;
            check(&model, from, to, width, &s.query(from, to, width));
        }
    }
}

#[test]
fn a_restart_replaces_later_steps_so_the_line_never_zig_zags() {
    let mut s = Series::new();
    s.extend((0..100).map(|i| (i, i as f64, i as f64)));
    s.extend((50..80).map(|i| (i, 1000.0 + i as f64, -(i as f64))));
    let pts: Vec<Point> = s.points(None, None).collect();
    assert_eq!(pts.len(), 80);
    assert!(pts.iter().enumerate().all(|(i, p)| p.step == i as i64));
    assert!(pts[..50].iter().all(|p| p.value == p.step as f64));
    assert!(pts[50..]
        .iter()
        .all(|p| p.value == -(p.step as f64) && p.wall_time >= 1050.0));
    assert_eq!(s.last_step(), Some(79));

    // Repeated restarts across pyramid block boundaries match the model.
    let mut model = Vec::new();
    let mut s = Series::new();
    for (start, end) in [
        (0, 10_000),
        (5_000, 9_000),
        (4_096, 4_200),
        (0, 70),
        (63, 300_000),
        (262_144, 262_145),
    ] {
        for i in start..end {
            let p = (i, i as f64, (i as f64 * 0.37).sin() * (start + 1) as f64);
            s.push(p.0, p.1, p.2);
            model_push(&mut model, p);
        }
        check(&model, None, None, 100, &s.query(None, None, 100));
        check(
            &model,
            Some(start - 1000),
            Some(end),
            33,
            &s.query(Some(start - 1000), Some(end), 33),
        );
    }
    assert_eq!(s.len(), 262_145);
}

#[test]
fn nan_and_infinities_are_kept_counted_and_never_poison_min_max() {
    let mut s = Series::new();
    s.extend((0..10_000).map(|i| (i, 0.0, (i as f64 / 100.0).sin())));
    s.push(10_000, 0.0, f64::NAN);
    s.push(10_001, 0.0, f64::INFINITY);
    s.push(10_002, 0.0, f64::NEG_INFINITY);
    s.extend((10_003..10_500).map(|i| (i, 0.0, f64::NAN))); // a NaN-only tail
    let env = s.query(None, None, 50);
    assert!(!env.full_resolution);
    assert_eq!((env.nan, env.pos_inf, env.neg_inf), (498, 1, 1));
    assert!(env.min.unwrap() >= -1.0 && env.max.unwrap() <= 1.0);
    assert!(env.points.iter().filter(|p| p.value.is_infinite()).count() == 0);
    let flagged = env
        .buckets
        .iter()
        .find(|b| b.first_step <= 10_001 && b.last_step >= 10_001)
        .unwrap();
    assert!(flagged.pos_inf == 1 && flagged.count > 1);
    // The NaN-only bucket is represented by one NaN point.
    let last = env.buckets.last().unwrap();
    assert_eq!(last.nan, last.count);
    assert!(env.points.last().unwrap().value.is_nan());

    // Full resolution returns the non-finite points themselves.
    let near = s.query(Some(9_999), Some(10_003), 10);
    assert!(near.full_resolution);
    assert_eq!(near.points.len(), 5);
    assert_eq!(near.points[2].value, f64::INFINITY);
    assert_eq!(
        (near.min, near.max),
        (Some((99.99f64).sin()), Some((99.99f64).sin()))
    );

    // Only non-finite values: no min/max, one representative per bucket.
    let mut s = Series::new();
    s.extend((0..1000).map(|i| {
        (
            i,
            0.0,
            [f64::NAN, f64::INFINITY, f64::NEG_INFINITY][i as usize % 3],
        )
    }));
    let env = s.query(None, None, 10);
    assert_eq!((env.min, env.max, env.points.len()), (None, None, 10));
    assert_eq!(env.nan + env.pos_inf + env.neg_inf, 1000);
}

#[test]
fn edge_cases_never_panic_and_give_sensible_answers() {
    let empty = Series::new();
    assert!(empty.is_empty() && empty.last_step().is_none());
    let env = empty.query(None, None, 0);
    assert!(env.points.is_empty() && env.total == 0 && env.min.is_none() && env.full_resolution);
    assert_eq!(empty.points(Some(1), Some(0)).count(), 0);

    let mut one = Series::new();
    one.push(5, 1.0, 2.5);
    assert_eq!(
        one.query(None, None, 1).points,
        vec![Point {
            step: 5,
            wall_time: 1.0,
            value: 2.5
        }]
    );
    assert_eq!(one.query(Some(6), None, 1).total, 0);
    assert_eq!(one.query(None, Some(4), 1).total, 0);
    assert_eq!(one.query(Some(5), Some(5), 1).total, 1);

    let mut s = Series::new();
    s.extend(walk(10_000, 3));
    assert_eq!(
        s.query(Some(10), Some(5), 100),
        s.query(Some(20_000), None, 100)
    );
    assert_eq!(s.query(Some(10), Some(5), 100).total, 0);
    assert_eq!(
        s.query(Some(-1_000), Some(1_000_000), 100),
        s.query(None, None, 100)
    );
    // Width 0 behaves as width 1: the global min and max, nothing else.
    let w0 = s.query(None, None, 0);
    assert_eq!(w0, s.query(None, None, 1));
    assert_eq!(w0.points.len(), 2);
    assert!(
        w0.points.iter().any(|p| Some(p.value) == w0.min)
            && w0.points.iter().any(|p| Some(p.value) == w0.max)
    );
    assert!(s.query(None, None, usize::MAX).full_resolution);

    // i64 extremes: spans of 2^64 steps must neither overflow nor panic.
    let mut x = Series::new();
    x.extend((0..1000).map(|i| (i64::MIN + i, 0.0, i as f64)));
    x.extend((0..1000).map(|i| (i64::MAX - 999 + i, 0.0, -(i as f64))));
    for w in [0, 1, 2, 3, 999, 1000] {
        let model: Vec<_> = x
            .points(None, None)
            .map(|p| (p.step, p.wall_time, p.value))
            .collect();
        check(&model, None, None, w, &x.query(None, None, w));
        check(
            &model,
            Some(i64::MIN),
            Some(i64::MAX),
            w,
            &x.query(Some(i64::MIN), Some(i64::MAX), w),
        );
        check(
            &model,
            Some(-1),
            Some(i64::MAX),
            w,
            &x.query(Some(-1), Some(i64::MAX), w),
        );
    }
    x.push(i64::MIN, 1.0, 7.0); // a restart from the very first step
    assert_eq!(x.len(), 1);
    assert_eq!(x.query(None, None, 5).points[0].value, 7.0);
}

/// Exercises the top pyramid level (ranges spanning whole 16.7M-point nodes).
/// Needs ~1 GB and a release build: `cargo test --release -- --ignored`.
#[test]
#[ignore]
fn ranges_spanning_whole_top_level_nodes_are_exact() {
    let n = 35_000_000usize;
    let mut s = Series::new();
    s.extend((0..n as i64).map(|i| (i, 0.0, ((i * 7919) % 1_000_003) as f64)));
    s.push(33_554_431, 0.0, -5.0);
    s.push(33_554_432, 0.0, 2e6);
    let env = s.query(None, None, 1);
    assert_eq!(
        (env.min, env.max, env.total),
        (Some(-5.0), Some(2e6), 33_554_433)
    );
    let model: Vec<_> = s
        .points(Some(1), Some(33_554_430))
        .map(|p| (p.step, p.wall_time, p.value))
        .collect();
    check(
        &model,
        None,
        None,
        3,
        &s.query(Some(1), Some(33_554_430), 3),
    );
}
