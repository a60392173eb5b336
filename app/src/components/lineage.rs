//! A lineage graph drawn as SVG on the server: a column per step from the
//! node asked about (upstream on the left), a box per node linking to its
//! page, and an arrow per edge with how one came of the other. No script:
//! it is the same with JavaScript off.

use leptos::prelude::*;

use crate::api::lineage::lineage_graph;
use crate::components::resource::resource;
use crate::models::{Lineage, LineageNode, NodeKind, NodeRef};

const BOX_W: i32 = 170;
const BOX_H: i32 = 40;
const COL_W: i32 = 220;
const ROW_H: i32 = 56;

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn short(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        format!("{}…", s.chars().take(n - 1).collect::<String>())
    }
}

/// Where each node's box is: `(key, x, y)`, and the drawing's size.
fn layout(lineage: &Lineage) -> (Vec<(String, i32, i32)>, i32, i32) {
    let mut depths: Vec<i32> = lineage.nodes.iter().map(|n| n.depth).collect();
    depths.sort_unstable();
    depths.dedup();
    let mut rows = vec![0; depths.len()];
    let mut places = Vec::new();
    for n in &lineage.nodes {
        let col = depths.iter().position(|d| *d == n.depth).unwrap_or(0);
        places.push((
            n.node.key(),
            10 + col as i32 * COL_W,
            10 + rows[col] * ROW_H,
        ));
        rows[col] += 1;
    }
    let width = depths.len() as i32 * COL_W - (COL_W - BOX_W) + 20;
    let height = rows.iter().max().copied().unwrap_or(1) * ROW_H - (ROW_H - BOX_H) + 20;
    (places, width, height)
}

/// The graph as SVG text; boxes link to the node's page as `viewer` may
/// open it.
pub fn lineage_svg(lineage: &Lineage, viewer: &str) -> String {
    let (places, width, height) = layout(lineage);
    let at = |key: &str| {
        places
            .iter()
            .find(|(k, _, _)| k == key)
            .map(|(_, x, y)| (*x, *y))
    };
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"lineage-graph\" width=\"{width}\" \
         height=\"{height}\" viewBox=\"0 0 {width} {height}\" role=\"img\" \
         aria-label=\"Lineage of {}\">",
        escape(&lineage.root.label())
    );
    for e in &lineage.edges {
        let (Some((x1, y1)), Some((x2, y2))) = (at(&e.from), at(&e.to)) else {
            continue;
        };
        let (x1, y1, x2, y2) = (x1 + BOX_W, y1 + BOX_H / 2, x2, y2 + BOX_H / 2);
        let mid = (x1 + x2) / 2;
        svg += &format!(
            "<path class=\"edge {rel:?}\" d=\"M{x1} {y1} C{mid} {y1} {mid} {y2} {x2} {y2}\" \
             fill=\"none\" marker-end=\"url(#arrow)\"/><text class=\"edge-label\" x=\"{mid}\" \
             y=\"{}\" text-anchor=\"middle\">{}</text>",
            (y1 + y2) / 2 - 4,
            e.relation.label(),
            rel = e.relation,
        );
    }
    svg += "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" \
            markerWidth=\"6\" markerHeight=\"6\" orient=\"auto-start-reverse\">\
            <path d=\"M 0 0 L 10 5 L 0 10 z\"/></marker></defs>";
    for n in &lineage.nodes {
        let Some((x, y)) = at(&n.node.key()) else {
            continue;
        };
        svg += &node_box(n, x, y, viewer);
    }
    svg + "</svg>"
}

fn node_box(n: &LineageNode, x: i32, y: i32, viewer: &str) -> String {
    let kind = n.node.kind.as_str();
    let root = if n.depth == 0 { " root" } else { "" };
    let title = match n.node.kind {
        NodeKind::Dataset => "dataset",
        NodeKind::Job => "job",
        NodeKind::Model => "model version",
        NodeKind::Serving => "serving",
    };
    let detail = if n.detail.is_empty() {
        title.to_owned()
    } else {
        format!("{title} · {}", n.detail)
    };
    let body = format!(
        "<g class=\"node {kind}{root}\" data-node=\"{key}\"><rect x=\"{x}\" y=\"{y}\" \
         width=\"{BOX_W}\" height=\"{BOX_H}\" rx=\"6\"/><text x=\"{}\" y=\"{}\">{}</text>\
         <text class=\"detail\" x=\"{}\" y=\"{}\">{}</text><title>{}</title></g>",
        x + 8,
        y + 17,
        escape(&short(&n.node.label(), 24)),
        x + 8,
        y + 32,
        escape(&short(&detail, 30)),
        escape(&n.node.key()),
        key = escape(&n.node.key()),
    );
    match n.node.href(viewer) {
        Some(href) => format!("<a href=\"{}\">{body}</a>", escape(&href)),
        None => body,
    }
}

/// The graph with its sentence and a link to share it.
#[component]
pub fn LineageGraph(
    /// The graph.
    lineage: Lineage,
    /// The viewer's account (whose jobs and instances link to their pages).
    viewer: String,
) -> impl IntoView {
    let svg = lineage_svg(&lineage, &viewer);
    let sentence = lineage.sentence();
    let share = lineage.root.lineage_href();
    let alone = lineage.nodes.len() <= 1;
    view! {
        <section class="lineage" data-testid="lineage" aria-labelledby="lineage-title">
            <div class="section-head">
                <h2 id="lineage-title">"Lineage"</h2>
                <a href=share class="small" data-testid="lineage-link">"Link to this graph"</a>
            </div>
            {sentence.map(|s| view! { <p data-testid="lineage-sentence">{s}</p> })}
            {if alone {
                view! { <p class="muted">"Nothing recorded came before or after it yet."</p> }.into_any()
            } else {
                view! { <div class="lineage-svg" inner_html=svg></div> }.into_any()
            }}
        </section>
    }
}

/// The lineage section of a page about `node`: loads the graph and draws it.
#[component]
pub fn LineageSection(
    /// What the page is about.
    node: NodeRef,
) -> impl IntoView {
    let key = node.key();
    let graph = resource(move || key.clone(), lineage_graph);
    view! {
        <Suspense fallback=|| view! { <p class="loading">"Loading the lineage…"</p> }>
            {move || Suspend::new(async move {
                graph.await.map(|g| view! { <LineageGraph lineage=g.lineage viewer=g.viewer /> })
            })}
        </Suspense>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::{LineageEdge, NodeRef, Relation};

    #[test]
    fn each_node_is_a_box_linking_to_its_page_and_each_edge_an_arrow() {
        let (data, job, model) = (
            NodeRef::dataset("acme", "mnist"),
            NodeRef::job("acme", "fit"),
            NodeRef::model("acme", "lenet", 3),
        );
        let node = |n: &NodeRef, depth| LineageNode {
            node: n.clone(),
            depth,
            detail: "ready".into(),
        };
        let lineage = Lineage {
            root: model.clone(),
            nodes: vec![node(&data, -2), node(&job, -1), node(&model, 0)],
            edges: vec![
                LineageEdge {
                    from: data.key(),
                    to: job.key(),
                    relation: Relation::Read,
                },
                LineageEdge {
                    from: job.key(),
                    to: model.key(),
                    relation: Relation::Registered,
                },
            ],
        };
        let svg = lineage_svg(&lineage, "acme");
        assert!(svg.contains("<a href=\"/jobs/fit\">"), "{svg}");
        assert!(svg.contains("<a href=\"/datasets/acme/mnist\">"));
        assert!(svg.contains("class=\"node model root\""));
        assert_eq!(svg.matches("<path class=\"edge").count(), 2);
        assert!(svg.contains(">registered</text>"));
        // Another account sees the job without a link to a page it cannot open.
        assert!(!lineage_svg(&lineage, "other").contains("/jobs/fit"));
    }
}
