//! In-memory storage for one training-metric series that answers chart
//! queries with a min/max *envelope*.
//!
//! A chart that is `width` pixels wide cannot show more than about two values
//! per pixel column (the lowest and the highest), so [`Series::query`] splits
//! the requested step range into `width` buckets of equal step span and
//! returns, per bucket, the points holding the minimum and the maximum finite
//! value. Unlike reservoir sampling this keeps every spike and dip visible.
//!
//! To avoid scanning every point of a large range, the series keeps a min/max
//! pyramid: level 0 summarises blocks of 16 points, level 1 blocks of 16
//! level-0 blocks, and so on (six levels). A range aggregate visits at
//! most `2 * 15` items per level (about 15 on average), so a bucket of `m`
//! points costs O(15 · log16 m) instead of O(m). Non-finite values are rare,
//! so instead of counting them in every node their indices are kept in three
//! sorted lists and counted with two binary searches.

use std::ops::Range;

/// log2 of the pyramid fan-out. 16 balances the ragged ends a range visits
/// per level (~F-1) against the number of levels (log_F m); it also lets a
/// 100-point bucket (100k points at width 1,000) skip most of its points.
const SHIFT: u32 = 4;
/// Points per level-0 block, and blocks per block on every higher level.
const FAN: usize = 1 << SHIFT;
/// Number of pyramid levels. Six levels cover 16^6 ≈ 16.7M points per top
/// node; beyond that the top level is simply scanned linearly (≤ n / 16.7M
/// nodes per bucket), which stays cheap for any realistic series.
const LEVELS: usize = 6;
/// Marks "no finite value" in an `Agg` index.
const NONE: usize = usize::MAX;
/// Kinds of non-finite values, indexing `Series::non_finite`.
const NAN: usize = 0;
const POS_INF: usize = 1;
const NEG_INF: usize = 2;

/// One point of a series.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// Training step; unique and strictly increasing within a series.
    pub step: i64,
    /// Wall-clock time in seconds since the Unix epoch.
    pub wall_time: f64,
    /// Metric value; may be NaN or ±Inf.
    pub value: f64,
}

/// Summary of one bucket of a downsampled answer, so the UI can mark buckets
/// that contain non-finite values (those points are not necessarily among
/// [`Envelope::points`], which carries finite extremes).
#[derive(Debug, Clone, PartialEq)]
pub struct Bucket {
    /// Step of the first point in the bucket.
    pub first_step: i64,
    /// Step of the last point in the bucket.
    pub last_step: i64,
    /// Number of points in the bucket.
    pub count: usize,
    /// Number of NaN values in the bucket.
    pub nan: usize,
    /// Number of +Inf values in the bucket.
    pub pos_inf: usize,
    /// Number of -Inf values in the bucket.
    pub neg_inf: usize,
}

/// Answer to [`Series::query`].
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    /// Points to draw, in step order: every point of the range when
    /// `full_resolution`, otherwise per non-empty bucket the minimum and the
    /// maximum finite point (one point if they coincide, or one
    /// representative if the bucket holds only non-finite values).
    pub points: Vec<Point>,
    /// Smallest finite value in the range.
    pub min: Option<f64>,
    /// Largest finite value in the range.
    pub max: Option<f64>,
    /// Number of points in the range.
    pub total: usize,
    /// Number of NaN values in the range.
    pub nan: usize,
    /// Number of +Inf values in the range.
    pub pos_inf: usize,
    /// Number of -Inf values in the range.
    pub neg_inf: usize,
    /// `true` when `points` holds every point of the range.
    pub full_resolution: bool,
    /// One entry per non-empty bucket when downsampled; empty when
    /// `full_resolution` (each point then speaks for itself).
    pub buckets: Vec<Bucket>,
}

/// Finite minimum and maximum (index and value) over a contiguous run of
/// points. Values are cached next to the indices so merging nodes never
/// touches the point arrays.
#[derive(Debug, Clone, Copy)]
struct Agg {
    min_i: usize,
    max_i: usize,
    min_v: f64,
    max_v: f64,
}

impl Agg {
    const EMPTY: Agg = Agg {
        min_i: NONE,
        max_i: NONE,
        min_v: f64::INFINITY,
        max_v: f64::NEG_INFINITY,
    };

    /// Adds a finite value. Ties go to the lower index so answers do not
    /// depend on the order in which the pyramid happens to be combined.
    #[inline]
    fn add(&mut self, i: usize, v: f64) {
        if v < self.min_v || (v == self.min_v && i < self.min_i) {
            self.min_v = v;
            self.min_i = i;
        }
        if v > self.max_v || (v == self.max_v && i < self.max_i) {
            self.max_v = v;
            self.max_i = i;
        }
    }

    #[inline]
    fn merge(&mut self, o: &Agg) {
        if o.min_i != NONE {
            self.add(o.min_i, o.min_v);
            self.add(o.max_i, o.max_v);
        }
    }
}

/// Which non-finite list a value belongs to, if any.
fn non_finite_kind(v: f64) -> Option<usize> {
    if v.is_finite() {
        None
    } else if v.is_nan() {
        Some(NAN)
    } else if v > 0.0 {
        Some(POS_INF)
    } else {
        Some(NEG_INF)
    }
}

/// One metric series: points sorted by step (struct of arrays, 24 bytes per
/// point) plus a min/max pyramid (~2.1 bytes per point).
#[derive(Debug, Clone)]
pub struct Series {
    steps: Vec<i64>,
    walls: Vec<f64>,
    values: Vec<f64>,
    /// `levels[k][j]` aggregates points `[j * 16^(k+1), (j+1) * 16^(k+1))`;
    /// the last node of a level may be partial (it is still growing).
    levels: [Vec<Agg>; LEVELS],
    /// Sorted indices of NaN, +Inf and -Inf values.
    non_finite: [Vec<usize>; 3],
}

impl Default for Series {
    fn default() -> Self {
        Self::new()
    }
}

impl Series {
    /// Creates an empty series.
    pub fn new() -> Self {
        Series {
            steps: Vec::new(),
            walls: Vec::new(),
            values: Vec::new(),
            levels: Default::default(),
            non_finite: Default::default(),
        }
    }

    /// Appends a point. If `step` is not after the last step (a job resumed
    /// from a checkpoint), every point with a step `>= step` is dropped first,
    /// so later points replace earlier ones and the line never zig-zags.
    pub fn push(&mut self, step: i64, wall_time: f64, value: f64) {
        if self.steps.last().is_some_and(|&last| step <= last) {
            let cut = self.steps.partition_point(|&s| s < step);
            self.truncate(cut);
        }
        let i = self.steps.len();
        self.steps.push(step);
        self.walls.push(wall_time);
        self.values.push(value);
        // O(LEVELS): the new point extends the last node on each level,
        // opening a new node when it starts a new block.
        for (k, level) in self.levels.iter_mut().enumerate() {
            let j = i >> (SHIFT * (k as u32 + 1));
            if j == level.len() {
                level.push(Agg::EMPTY);
            }
            if value.is_finite() {
                level[j].add(i, value);
            }
        }
        if let Some(kind) = non_finite_kind(value) {
            self.non_finite[kind].push(i);
        }
    }

    /// Pushes every point in order, with the same rules as [`Series::push`].
    pub fn extend(&mut self, points: impl IntoIterator<Item = (i64, f64, f64)>) {
        let points = points.into_iter();
        let extra = points.size_hint().0;
        self.steps.reserve(extra);
        self.walls.reserve(extra);
        self.values.reserve(extra);
        for (step, wall_time, value) in points {
            self.push(step, wall_time, value);
        }
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// `true` if the series has no points.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Step of the last point, if any.
    pub fn last_step(&self) -> Option<i64> {
        self.steps.last().copied()
    }

    /// Bytes currently reserved on the heap by this series.
    pub fn heap_bytes(&self) -> usize {
        let nodes: usize = self.levels.iter().map(Vec::capacity).sum();
        let marks: usize = self.non_finite.iter().map(Vec::capacity).sum();
        (self.steps.capacity() + self.walls.capacity() + self.values.capacity()) * 8
            + nodes * std::mem::size_of::<Agg>()
            + marks * std::mem::size_of::<usize>()
    }

    /// Releases spare capacity, e.g. once a finished run is loaded.
    pub fn shrink_to_fit(&mut self) {
        self.steps.shrink_to_fit();
        self.walls.shrink_to_fit();
        self.values.shrink_to_fit();
        self.levels.iter_mut().for_each(Vec::shrink_to_fit);
        self.non_finite.iter_mut().for_each(Vec::shrink_to_fit);
    }

    /// Iterates over every point with `from <= step <= to` (open ends when
    /// `None`), in step order.
    pub fn points(&self, from: Option<i64>, to: Option<i64>) -> impl Iterator<Item = Point> + '_ {
        self.index_range(from, to).map(|i| self.point(i))
    }

    /// Envelope of the points with `from <= step <= to` for a chart `width`
    /// buckets wide (0 is treated as 1).
    ///
    /// Buckets have equal *step* span over the steps actually present in the
    /// range, so they line up with pixel columns on a chart whose x-axis is
    /// the step, and a dense stretch cannot hide inside a bucket that an
    /// equal-count split would have stretched over a sparse one.
    /// Cost: O(width · (log m + 15 · log16 m)) for m points per bucket.
    pub fn query(&self, from: Option<i64>, to: Option<i64>, width: usize) -> Envelope {
        let width = width.max(1);
        let range = self.index_range(from, to);
        let (l, r) = (range.start, range.end);
        let total = r - l;
        let counts = self.count_non_finite(l, r);
        if total <= width.saturating_mul(2) {
            let points = range.map(|i| self.point(i)).collect();
            return envelope(self.range_agg(l, r), counts, points, total, Vec::new());
        }
        // total > 2 * width, so the span (≥ total) exceeds width and every
        // bucket spans at least one step. i128 keeps i64 extremes exact.
        let lo = self.steps[l] as i128;
        let span = self.steps[r - 1] as i128 - lo + 1;
        let mut points = Vec::with_capacity(2 * width);
        let mut buckets = Vec::with_capacity(width);
        let mut all = Agg::EMPTY;
        let mut start = l;
        for b in 1..=width {
            if start >= r {
                break;
            }
            let bound = lo + (b as i128 * span) / width as i128; // exclusive
            let end = self.seek(start, r, bound);
            if end == start {
                continue;
            }
            let agg = self.range_agg(start, end);
            match (agg.min_i, agg.max_i) {
                (NONE, _) => points.push(self.point(start)), // only non-finite
                (a, b) if a == b => points.push(self.point(a)),
                (a, b) => {
                    points.push(self.point(a.min(b)));
                    points.push(self.point(a.max(b)));
                }
            }
            let [nan, pos_inf, neg_inf] = self.count_non_finite(start, end);
            buckets.push(Bucket {
                first_step: self.steps[start],
                last_step: self.steps[end - 1],
                count: end - start,
                nan,
                pos_inf,
                neg_inf,
            });
            all.merge(&agg);
            start = end;
        }
        envelope(all, counts, points, total, buckets)
    }

    fn point(&self, i: usize) -> Point {
        Point {
            step: self.steps[i],
            wall_time: self.walls[i],
            value: self.values[i],
        }
    }

    /// Indices of the points with `from <= step <= to`; empty if from > to.
    fn index_range(&self, from: Option<i64>, to: Option<i64>) -> Range<usize> {
        let l = from.map_or(0, |f| self.steps.partition_point(|&s| s < f));
        let r = to.map_or(self.steps.len(), |t| {
            self.steps.partition_point(|&s| s <= t)
        });
        l..r.max(l)
    }

    /// First index in `[start, r)` whose step is `>= bound` (or `r`).
    ///
    /// Runs once per bucket, so it avoids binary-searching the whole
    /// (cache-cold) step array: it first interpolates, which is exact for
    /// evenly spaced steps (the usual logging pattern) and touches one cache
    /// line, then falls back to galloping outwards from `start`, which only
    /// touches memory near the bucket.
    fn seek(&self, start: usize, r: usize, bound: i128) -> usize {
        let s = &self.steps[start..r];
        let (first, last) = (s[0] as i128, s[s.len() - 1] as i128);
        if bound <= first {
            return start;
        }
        if bound > last {
            return r;
        }
        // Here first < bound <= last, so s.len() >= 2 and g is in 1..len.
        let g = ((bound - first) as u128 * (s.len() - 1) as u128).div_ceil((last - first) as u128)
            as usize;
        if (s[g - 1] as i128) < bound && (s[g] as i128) >= bound {
            return start + g;
        }
        let mut n = 1;
        while n < s.len() && (s[n] as i128) < bound {
            n *= 2;
        }
        let lo = n / 2;
        let hi = n.min(s.len()); // s[n] >= bound when n < len
        start + lo + s[lo..hi].partition_point(|&x| (x as i128) < bound)
    }

    /// Counts of NaN, +Inf and -Inf among points `[a, b)`.
    fn count_non_finite(&self, a: usize, b: usize) -> [usize; 3] {
        self.non_finite
            .each_ref()
            .map(|idx| idx.partition_point(|&i| i < b) - idx.partition_point(|&i| i < a))
    }

    fn scan_points(&self, acc: &mut Agg, a: usize, b: usize) {
        for (i, &v) in (a..b).zip(&self.values[a..b]) {
            if v.is_finite() {
                acc.add(i, v);
            }
        }
    }

    /// Min/max of points `[a, b)`. Walks up the pyramid: at each level only
    /// the ragged ends (< 16 items each) are visited, the aligned middle is
    /// handed to the next level. Only complete nodes are ever read, so the
    /// growing last node of each level never leaks into an answer.
    fn range_agg(&self, a: usize, b: usize) -> Agg {
        let mut acc = Agg::EMPTY;
        if a >= b {
            return acc;
        }
        let (mut lo, mut hi) = (a.div_ceil(FAN), b / FAN);
        if lo >= hi {
            self.scan_points(&mut acc, a, b);
            return acc;
        }
        self.scan_points(&mut acc, a, lo * FAN);
        self.scan_points(&mut acc, hi * FAN, b);
        for (k, nodes) in self.levels.iter().enumerate() {
            let (up_lo, up_hi) = (lo.div_ceil(FAN), hi / FAN);
            if k + 1 == LEVELS || up_lo >= up_hi {
                nodes[lo..hi].iter().for_each(|n| acc.merge(n));
                break;
            }
            nodes[lo..up_lo * FAN].iter().for_each(|n| acc.merge(n));
            nodes[up_hi * FAN..hi].iter().for_each(|n| acc.merge(n));
            (lo, hi) = (up_lo, up_hi);
        }
        acc
    }

    /// Keeps the first `len` points and repairs the pyramid tail: nodes past
    /// the cut are dropped and the (now partial) last node of each level is
    /// recomputed from complete lower-level nodes. O(log n + 15 · LEVELS²):
    /// a restart never rebuilds more than one node per level.
    fn truncate(&mut self, len: usize) {
        self.steps.truncate(len);
        self.walls.truncate(len);
        self.values.truncate(len);
        for idx in &mut self.non_finite {
            idx.truncate(idx.partition_point(|&i| i < len));
        }
        for k in 0..LEVELS {
            let size = FAN << (SHIFT * k as u32);
            self.levels[k].truncate(len.div_ceil(size));
            if !len.is_multiple_of(size) {
                // range_agg only reads complete nodes below `len` on levels
                // < k (level k's partial node is never used), all of which are
                // unaffected by the cut.
                let j = len / size;
                self.levels[k][j] = self.range_agg(j * size, len);
            }
        }
    }
}

fn envelope(
    agg: Agg,
    counts: [usize; 3],
    points: Vec<Point>,
    total: usize,
    buckets: Vec<Bucket>,
) -> Envelope {
    let finite = agg.min_i != NONE;
    Envelope {
        // A downsampled answer always has at least one bucket.
        full_resolution: buckets.is_empty(),
        points,
        min: finite.then_some(agg.min_v),
        max: finite.then_some(agg.max_v),
        total,
        nan: counts[NAN],
        pos_inf: counts[POS_INF],
        neg_inf: counts[NEG_INF],
        buckets,
    }
}
