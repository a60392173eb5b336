//! Where a run's graph draws its boxes: a layered layout (a node's column
//! is the longest chain of nodes it waits for), and many similar nodes (the
//! same dependencies and dependents, in one column) drawn as one box with
//! counts, so a 1,000-node fan-out is a handful of boxes.

use std::collections::BTreeMap;

use super::{NodeState, NodeStatus, PipelineSpec};

/// More nodes than this that look alike become one box.
pub const COLLAPSE_OVER: usize = 6;
/// A box's size and the gaps between them, in SVG units.
pub const BOX_W: u32 = 168;
/// A box's height.
pub const BOX_H: u32 = 44;
const GAP_X: u32 = 56;
const GAP_Y: u32 = 14;
const MARGIN: u32 = 8;

/// One box of the graph.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphBox {
    /// The node's name, or a group's "name … name" label.
    pub label: String,
    /// The nodes it stands for (indices into the spec).
    pub nodes: Vec<usize>,
    /// How many of them are in each status (a single node: one).
    pub counts: BTreeMap<&'static str, usize>,
    /// The status the box is coloured by: the worst of its nodes'.
    pub status: NodeStatus,
    /// Top-left corner.
    pub x: u32,
    /// Top-left corner.
    pub y: u32,
}

/// The graph: boxes, edges between them (indices), its size.
#[derive(Debug, Clone, PartialEq)]
pub struct Graph {
    /// The boxes.
    pub boxes: Vec<GraphBox>,
    /// From the box waited for to the box that waits.
    pub edges: Vec<(usize, usize)>,
    /// The drawing's width.
    pub width: u32,
    /// The drawing's height.
    pub height: u32,
}

/// How bad a status looks, for a group's colour: failed first.
fn severity(s: NodeStatus) -> u8 {
    match s {
        NodeStatus::Failed => 6,
        NodeStatus::Running => 5,
        NodeStatus::Pending => 4,
        NodeStatus::Stopped => 3,
        NodeStatus::Skipped => 2,
        NodeStatus::Succeeded => 1,
    }
}

/// Lays out `spec`'s nodes as they are (`nodes`, in the spec's order).
pub fn layout(spec: &PipelineSpec, nodes: &[NodeState]) -> Graph {
    let index = spec.index();
    let n = spec.nodes.len();
    let deps: Vec<Vec<usize>> = spec
        .nodes
        .iter()
        .map(|node| {
            let mut d: Vec<usize> = node
                .dependencies()
                .iter()
                .filter_map(|d| index.get(d.node.as_str()).copied())
                .collect();
            d.sort_unstable();
            d.dedup();
            d
        })
        .collect();
    let mut dependents = vec![Vec::new(); n];
    for (i, ds) in deps.iter().enumerate() {
        for &d in ds {
            dependents[d].push(i);
        }
    }
    // Columns by longest path, in an order where every dependency comes
    // first (the spec was checked for cycles).
    let mut column = vec![0usize; n];
    let mut waiting: Vec<usize> = deps.iter().map(Vec::len).collect();
    let mut ready: Vec<usize> = (0..n).filter(|&i| waiting[i] == 0).collect();
    while let Some(i) = ready.pop() {
        for &next in &dependents[i] {
            column[next] = column[next].max(column[i] + 1);
            waiting[next] -= 1;
            if waiting[next] == 0 {
                ready.push(next);
            }
        }
    }
    // Group alike nodes of a column.
    let mut groups: BTreeMap<(usize, Vec<usize>, Vec<usize>), Vec<usize>> = BTreeMap::new();
    for i in 0..n {
        let mut after = dependents[i].clone();
        after.sort_unstable();
        groups
            .entry((column[i], deps[i].clone(), after))
            .or_default()
            .push(i);
    }
    let mut members: Vec<(usize, Vec<usize>)> = Vec::new();
    for ((col, _, _), group) in groups {
        if group.len() > COLLAPSE_OVER {
            members.push((col, group));
        } else {
            members.extend(group.into_iter().map(|i| (col, vec![i])));
        }
    }
    // Spec order within a column reads best.
    members.sort_by_key(|(col, group)| (*col, group[0]));
    let mut box_of = vec![0usize; n];
    let mut rows: BTreeMap<usize, u32> = BTreeMap::new();
    let mut boxes = Vec::with_capacity(members.len());
    for (b, (col, group)) in members.into_iter().enumerate() {
        let row = rows.entry(col).or_insert(0);
        let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
        let mut status = NodeStatus::Succeeded;
        for &i in &group {
            box_of[i] = b;
            let s = nodes.get(i).map_or(NodeStatus::Pending, |n| n.status);
            *counts.entry(s.as_str()).or_insert(0) += 1;
            if severity(s) > severity(status) {
                status = s;
            }
        }
        let label = match group.as_slice() {
            [one] => spec.nodes[*one].name.clone(),
            [first, .., last] => format!(
                "{} … {} ({})",
                spec.nodes[*first].name,
                spec.nodes[*last].name,
                group.len()
            ),
            [] => String::new(),
        };
        boxes.push(GraphBox {
            label,
            nodes: group,
            counts,
            status,
            x: MARGIN + col as u32 * (BOX_W + GAP_X),
            y: MARGIN + *row * (BOX_H + GAP_Y),
        });
        *row += 1;
    }
    let mut edges: Vec<(usize, usize)> = (0..n)
        .flat_map(|i| deps[i].iter().map(move |&d| (d, i)))
        .map(|(d, i)| (box_of[d], box_of[i]))
        .collect();
    edges.sort_unstable();
    edges.dedup();
    let columns = rows.len() as u32;
    let tallest = rows.values().copied().max().unwrap_or(0);
    Graph {
        boxes,
        edges,
        width: 2 * MARGIN + columns * BOX_W + columns.saturating_sub(1) * GAP_X,
        height: 2 * MARGIN + tallest * BOX_H + tallest.saturating_sub(1) * GAP_Y,
    }
}
