//! A batch of points, grouped by tag in arrival order, with each tag's
//! repeated steps resolved: when a resumed job logs a step again (or goes
//! back), the later points replace everything from that step on, so a series
//! never zig-zags.

use std::collections::HashMap;

use app::models::MetricPoint;

/// One stored point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Row {
    /// Training step.
    pub step: i64,
    /// Seconds since the Unix epoch.
    pub wall_time: f64,
    /// The value (NaN and ±Infinity kept).
    pub value: f64,
}

/// A tag's points from one batch, in step order, strictly increasing.
#[derive(Debug, Clone, PartialEq)]
pub struct TagBatch {
    /// The series' tag.
    pub tag: String,
    /// Points to append once stored points from `restart_at` on are gone.
    pub rows: Vec<Row>,
    /// The smallest step that the batch logged while an earlier point (stored
    /// before or earlier in this batch) had that step or a later one.
    pub restart_from: Option<i64>,
}

impl TagBatch {
    /// The rows once appended after stored points ending at `stored_last`:
    /// which stored points must go first (`Some(step)`: all from `step` on).
    pub fn cut_for(&self, stored_last: Option<i64>) -> Option<i64> {
        let first = self.rows.first()?.step;
        let restart = self.restart_from.into_iter().chain(
            // The batch's first step may itself repeat a stored one.
            stored_last.filter(|last| *last >= first).map(|_| first),
        );
        restart
            .min()
            .filter(|step| stored_last.is_some_and(|last| last >= *step))
    }
}

/// Groups `points` by tag (first appearance order) and resolves each tag's
/// repeated steps; a point without a wall time gets `now`.
pub fn group(points: Vec<MetricPoint>, now: f64) -> Vec<TagBatch> {
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut out: Vec<TagBatch> = Vec::new();
    for p in points {
        // Look up before inserting: a batch is mostly one tag, and cloning
        // its name for every point would cost more than the rest.
        let i = match index.get(&p.tag) {
            Some(i) => *i,
            None => {
                out.push(TagBatch {
                    tag: p.tag.clone(),
                    rows: Vec::new(),
                    restart_from: None,
                });
                index.insert(p.tag.clone(), out.len() - 1);
                out.len() - 1
            }
        };
        let batch = &mut out[i];
        let row = Row {
            step: p.step,
            wall_time: p.wall_time.unwrap_or(now),
            value: p.value,
        };
        if batch.rows.last().is_some_and(|last| last.step >= row.step) {
            // Going back within the batch: drop this batch's later points;
            // the stored ones from this step on go too.
            let keep = batch.rows.partition_point(|r| r.step < row.step);
            batch.rows.truncate(keep);
            batch.restart_from = Some(batch.restart_from.map_or(row.step, |s| s.min(row.step)));
        }
        batch.rows.push(row);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(tag: &str, step: i64, value: f64) -> MetricPoint {
        MetricPoint {
            tag: tag.into(),
            step,
            value,
            wall_time: None,
        }
    }

    fn steps(b: &TagBatch) -> Vec<i64> {
        b.rows.iter().map(|r| r.step).collect()
    }

    #[test]
    fn tags_keep_their_order_and_points_get_the_wall_time_of_arrival() {
        let got = group(
            vec![
                point("loss", 0, 1.0),
                point("acc", 0, 0.1),
                point("loss", 1, 0.9),
            ],
            42.0,
        );
        assert_eq!(got.len(), 2);
        assert_eq!((got[0].tag.as_str(), steps(&got[0])), ("loss", vec![0, 1]));
        assert_eq!(got[1].rows[0].wall_time, 42.0);
        assert_eq!(got[0].restart_from, None);
    }

    #[test]
    fn a_step_that_goes_back_replaces_the_later_points_of_the_batch() {
        let points = [0, 1, 2, 3, 4, 2, 3, 1, 2]
            .iter()
            .enumerate()
            .map(|(i, s)| point("loss", *s, i as f64))
            .collect();
        let got = &group(points, 0.0)[0];
        assert_eq!(steps(got), vec![0, 1, 2]);
        // The latest values won.
        assert_eq!(got.rows[1].value, 7.0);
        assert_eq!(got.rows[2].value, 8.0);
        assert_eq!(got.restart_from, Some(1));
    }

    #[test]
    fn stored_points_are_cut_only_where_the_batch_repeats_them() {
        let batch = |s: &[i64]| group(s.iter().map(|s| point("l", *s, 0.0)).collect(), 0.0);
        // Appending after stored steps 0..=100.
        assert_eq!(batch(&[101, 102])[0].cut_for(Some(100)), None);
        // A resumed job starting again at 50.
        assert_eq!(batch(&[50, 51])[0].cut_for(Some(100)), Some(50));
        // Past the stored end, then back into it.
        assert_eq!(batch(&[150, 160, 40])[0].cut_for(Some(100)), Some(40));
        // Back only within the batch's own new points: nothing stored is cut.
        assert_eq!(batch(&[150, 160, 155])[0].cut_for(Some(100)), None);
        // Nothing stored yet.
        assert_eq!(batch(&[5, 3])[0].cut_for(None), None);
        // The same step again.
        assert_eq!(batch(&[100])[0].cut_for(Some(100)), Some(100));
    }
}
