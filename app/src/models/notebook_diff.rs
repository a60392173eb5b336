//! Two versions of a notebook compared cell by cell, as nbdime shows them:
//! cells matched by their type and source (patience diff, `similar`), a
//! changed cell's source compared line by line, and its outputs said to
//! have changed (execution counts aside) with both sides' text.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use similar::{capture_diff_slices, Algorithm, ChangeTag, DiffOp, TextDiff};

use super::notebook_versions::NotebookVersion;

/// What happened to one cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum CellChange {
    /// The same source and outputs.
    Same,
    /// Only in the newer version.
    Added,
    /// Only in the older version.
    Removed,
    /// In both, its source or its outputs changed.
    Changed,
}

/// What happened to one line of a cell's source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum LineChange {
    /// In both.
    Same,
    /// Only in the newer version.
    Added,
    /// Only in the older version.
    Removed,
}

/// One line of a cell's source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct DiffLine {
    /// Where it is.
    pub change: LineChange,
    /// The line, without its end.
    pub text: String,
}

/// One cell of the comparison.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct CellDiff {
    /// What happened to it.
    pub change: CellChange,
    /// `code`, `markdown` or `raw`.
    pub cell_type: String,
    /// Its place in the older version (from 1), if it is there.
    pub old_number: Option<u32>,
    /// Its place in the newer version (from 1), if it is there.
    pub new_number: Option<u32>,
    /// Its source, line by line.
    pub lines: Vec<DiffLine>,
    /// Whether its outputs differ (execution counts aside).
    pub outputs_changed: bool,
    /// The older outputs as text, when they changed.
    pub old_outputs: Vec<String>,
    /// The newer outputs as text, when they changed.
    pub new_outputs: Vec<String>,
}

impl CellDiff {
    /// "Cell 3 · code · changed", "Cell 2 → 3 · markdown · unchanged".
    pub fn title(&self) -> String {
        let place = match (self.old_number, self.new_number) {
            (Some(o), Some(n)) if o == n => format!("Cell {n}"),
            (Some(o), Some(n)) => format!("Cell {o} → {n}"),
            (Some(o), None) => format!("Cell {o}"),
            (None, Some(n)) => format!("Cell {n}"),
            (None, None) => "Cell".to_owned(),
        };
        let only_outputs =
            self.outputs_changed && self.lines.iter().all(|l| l.change == LineChange::Same);
        let what = match self.change {
            CellChange::Same => "unchanged",
            CellChange::Added => "added",
            CellChange::Removed => "removed",
            CellChange::Changed if only_outputs => "outputs changed",
            CellChange::Changed => "changed",
        };
        format!("{place} · {} · {what}", self.cell_type)
    }
}

/// Two versions of one notebook file compared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct NotebookDiff {
    /// The notebook.
    pub notebook: String,
    /// The older version.
    pub from: NotebookVersion,
    /// The newer version.
    pub to: NotebookVersion,
    /// Every cell of both, in order.
    pub cells: Vec<CellDiff>,
}

impl NotebookDiff {
    /// How many cells had `change`.
    pub fn count(&self, change: CellChange) -> usize {
        self.cells.iter().filter(|c| c.change == change).count()
    }
}

/// A cell as the comparison reads it.
struct Cell<'a> {
    id: Option<&'a str>,
    cell_type: &'a str,
    source: String,
    outputs: Vec<Value>,
    raw_outputs: &'a [Value],
}

/// A notebook's `source` (a string or a list of lines) as one string.
fn text_of(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts.iter().filter_map(Value::as_str).collect(),
        _ => String::new(),
    }
}

fn cells_of(notebook: &Value) -> Vec<Cell<'_>> {
    let Some(cells) = notebook.get("cells").and_then(Value::as_array) else {
        return Vec::new();
    };
    cells
        .iter()
        .map(|cell| {
            let raw_outputs = cell
                .get("outputs")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            // Running a cell again changes its count, not what it said.
            let outputs = raw_outputs
                .iter()
                .map(|o| {
                    let mut o = o.clone();
                    if let Some(map) = o.as_object_mut() {
                        map.remove("execution_count");
                    }
                    o
                })
                .collect();
            Cell {
                id: cell.get("id").and_then(Value::as_str),
                cell_type: cell
                    .get("cell_type")
                    .and_then(Value::as_str)
                    .unwrap_or("code"),
                source: text_of(cell.get("source")),
                outputs,
                raw_outputs,
            }
        })
        .collect()
}

/// An output as a line of text: a stream's text, an error's name and
/// value, a result's `text/plain`, or what kind of data it holds.
pub fn output_text(output: &Value) -> String {
    let kind = output
        .get("output_type")
        .and_then(Value::as_str)
        .unwrap_or("");
    match kind {
        "stream" => text_of(output.get("text")),
        "error" => format!(
            "{}: {}",
            output
                .get("ename")
                .and_then(Value::as_str)
                .unwrap_or("Error"),
            output.get("evalue").and_then(Value::as_str).unwrap_or("")
        ),
        _ => {
            let data = output.get("data");
            match data.and_then(|d| d.get("text/plain")) {
                Some(plain) => text_of(Some(plain)),
                None => {
                    let kinds: Vec<&str> = data
                        .and_then(Value::as_object)
                        .map(|d| d.keys().map(String::as_str).collect())
                        .unwrap_or_default();
                    format!("[{}]", kinds.join(", "))
                }
            }
        }
    }
}

fn lines(source: &str, change: LineChange) -> Vec<DiffLine> {
    source
        .lines()
        .map(|text| DiffLine {
            change,
            text: text.to_owned(),
        })
        .collect()
}

fn number(index: usize) -> Option<u32> {
    u32::try_from(index + 1).ok()
}

fn one_side(cell: &Cell<'_>, index: usize, change: CellChange) -> CellDiff {
    let (line, old_number, new_number) = match change {
        CellChange::Removed => (LineChange::Removed, number(index), None),
        _ => (LineChange::Added, None, number(index)),
    };
    CellDiff {
        change,
        cell_type: cell.cell_type.to_owned(),
        old_number,
        new_number,
        lines: lines(&cell.source, line),
        outputs_changed: false,
        old_outputs: Vec::new(),
        new_outputs: Vec::new(),
    }
}

/// The cells of `range` of one version, each only there.
fn one_sided(
    cells: &[Cell<'_>],
    range: std::ops::Range<usize>,
    change: CellChange,
    out: &mut Vec<CellDiff>,
) {
    let (skip, take) = (range.start, range.len());
    for (i, cell) in cells.iter().enumerate().skip(skip).take(take) {
        out.push(one_side(cell, i, change));
    }
}

fn both_sides(old: &Cell<'_>, o: usize, new: &Cell<'_>, n: usize) -> CellDiff {
    let outputs_changed = old.outputs != new.outputs;
    let lines = if old.source == new.source {
        lines(&new.source, LineChange::Same)
    } else {
        TextDiff::from_lines(old.source.as_str(), new.source.as_str())
            .iter_all_changes()
            .map(|c| DiffLine {
                change: match c.tag() {
                    ChangeTag::Equal => LineChange::Same,
                    ChangeTag::Insert => LineChange::Added,
                    ChangeTag::Delete => LineChange::Removed,
                },
                text: c.value().trim_end_matches(['\n', '\r']).to_owned(),
            })
            .collect()
    };
    let texts = |cell: &Cell<'_>| -> Vec<String> {
        if outputs_changed {
            cell.raw_outputs.iter().map(output_text).collect()
        } else {
            Vec::new()
        }
    };
    CellDiff {
        change: if outputs_changed || old.source != new.source || old.cell_type != new.cell_type {
            CellChange::Changed
        } else {
            CellChange::Same
        },
        cell_type: new.cell_type.to_owned(),
        old_number: number(o),
        new_number: number(n),
        lines,
        outputs_changed,
        old_outputs: texts(old),
        new_outputs: texts(new),
    }
}

/// Compares notebook `old` with `new` (their JSON), cell by cell.
pub fn diff_cells(old: &Value, new: &Value) -> Vec<CellDiff> {
    let (old, new) = (cells_of(old), cells_of(new));
    let key = |c: &Cell<'_>| (c.cell_type.to_owned(), c.source.clone());
    let old_keys: Vec<_> = old.iter().map(key).collect();
    let new_keys: Vec<_> = new.iter().map(key).collect();
    let mut out = Vec::with_capacity(old.len().max(new.len()));
    for op in capture_diff_slices(Algorithm::Patience, &old_keys, &new_keys) {
        match op {
            DiffOp::Equal {
                old_index,
                new_index,
                len,
            } => {
                for i in 0..len {
                    let (o, n) = (old_index + i, new_index + i);
                    out.push(both_sides(&old[o], o, &new[n], n));
                }
            }
            DiffOp::Delete {
                old_index, old_len, ..
            } => {
                one_sided(
                    &old,
                    old_index..old_index + old_len,
                    CellChange::Removed,
                    &mut out,
                );
            }
            DiffOp::Insert {
                new_index, new_len, ..
            } => {
                one_sided(
                    &new,
                    new_index..new_index + new_len,
                    CellChange::Added,
                    &mut out,
                );
            }
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => replace(
                &old,
                old_index..old_index + old_len,
                &new,
                new_index..new_index + new_len,
                &mut out,
            ),
        }
    }
    out
}

/// A run of old cells replaced by a run of new ones: cells that keep their
/// id (JupyterLab keeps a cell's id as it is edited), or failing ids the
/// ones at the same place, changed; the rest removed or added.
fn replace(
    old: &[Cell<'_>],
    olds: std::ops::Range<usize>,
    new: &[Cell<'_>],
    news: std::ops::Range<usize>,
    out: &mut Vec<CellDiff>,
) {
    let mut o = olds.start;
    for n in news.clone() {
        let same_id = |i: usize| old[i].id.is_some() && old[i].id == new[n].id;
        let matched = (o..olds.end).find(|&i| same_id(i)).or_else(|| {
            let no_ids = old.get(o).is_some_and(|c| c.id.is_none()) || new[n].id.is_none();
            (o < olds.end && no_ids).then_some(o)
        });
        match matched {
            Some(m) => {
                one_sided(old, o..m, CellChange::Removed, out);
                out.push(both_sides(&old[m], m, &new[n], n));
                o = m + 1;
            }
            None => out.push(one_side(&new[n], n, CellChange::Added)),
        }
    }
    one_sided(old, o..olds.end, CellChange::Removed, out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn code(id: &str, source: &str, out: &str, count: u32) -> Value {
        json!({"cell_type": "code", "id": id, "source": source, "metadata": {},
               "execution_count": count,
               "outputs": [{"output_type": "stream", "name": "stdout", "text": out}]})
    }

    fn md(id: &str, source: &str) -> Value {
        json!({"cell_type": "markdown", "id": id, "source": source, "metadata": {}})
    }

    fn nb(cells: Vec<Value>) -> Value {
        json!({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    }

    #[test]
    fn an_edited_cell_is_changed_line_by_line_and_the_rest_is_the_same() {
        let old = nb(vec![
            md("a", "# MNIST"),
            code("b", "lr = 0.1\nepochs = 2\n", "", 1),
            code("c", "print(lr)", "0.1\n", 2),
        ]);
        let new = nb(vec![
            md("a", "# MNIST"),
            code("b", "lr = 0.01\nepochs = 2\n", "", 1),
            code("c", "print(lr)", "0.01\n", 2),
            md("d", "Done."),
        ]);
        let cells = diff_cells(&old, &new);
        let changes: Vec<_> = cells.iter().map(|c| c.change).collect();
        assert_eq!(
            changes,
            [
                CellChange::Same,
                CellChange::Changed,
                CellChange::Changed,
                CellChange::Added
            ]
        );
        let edited = &cells[1];
        assert_eq!(
            edited
                .lines
                .iter()
                .map(|l| (l.change, l.text.as_str()))
                .collect::<Vec<_>>(),
            [
                (LineChange::Removed, "lr = 0.1"),
                (LineChange::Added, "lr = 0.01"),
                (LineChange::Same, "epochs = 2"),
            ]
        );
        assert!(!edited.outputs_changed);
        let rerun = &cells[2];
        assert!(rerun.outputs_changed);
        assert_eq!(rerun.old_outputs, ["0.1\n"]);
        assert_eq!(rerun.new_outputs, ["0.01\n"]);
        assert_eq!((cells[3].old_number, cells[3].new_number), (None, Some(4)));
    }

    #[test]
    fn running_a_cell_again_with_the_same_output_is_no_change() {
        let old = nb(vec![code("a", "1+1", "2", 1)]);
        let mut new = nb(vec![code("a", "1+1", "2", 7)]);
        new["cells"][0]["outputs"][0]["execution_count"] = json!(7);
        let cells = diff_cells(&old, &new);
        assert_eq!(cells[0].change, CellChange::Same);
    }

    #[test]
    fn a_deleted_cell_is_removed_and_a_moved_one_is_not_changed() {
        let old = nb(vec![md("a", "one"), md("b", "two"), md("c", "three")]);
        let new = nb(vec![md("c", "three"), md("a", "one")]);
        let cells = diff_cells(&old, &new);
        let same = cells
            .iter()
            .filter(|c| c.change == CellChange::Same)
            .count();
        let removed: Vec<_> = cells
            .iter()
            .filter(|c| c.change == CellChange::Removed)
            .map(|c| c.lines[0].text.clone())
            .collect();
        assert!(same >= 1);
        assert!(removed.contains(&"two".to_owned()));
        assert_eq!(
            cells
                .iter()
                .filter(|c| c.change == CellChange::Changed)
                .count(),
            0
        );
    }

    #[test]
    fn an_output_is_read_as_its_text() {
        assert_eq!(
            output_text(
                &json!({"output_type": "error", "ename": "ZeroDivisionError", "evalue": "division by zero"})
            ),
            "ZeroDivisionError: division by zero"
        );
        assert_eq!(
            output_text(&json!({"output_type": "display_data", "data": {"image/png": "iVBOR"}})),
            "[image/png]"
        );
        assert_eq!(
            output_text(&json!({"output_type": "execute_result", "data": {"text/plain": ["4"]}})),
            "4"
        );
    }
}
