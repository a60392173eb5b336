//! `paddlecloud lineage NODE`: what a dataset, job, model version or
//! serving instance came from and what came of it, as its page's graph
//! shows it (`--json`: the API's answer as it is).

use app::models::{Lineage, NodeRef};
use clap::Args;

use super::remote::RemoteArgs;

/// `paddlecloud lineage`.
#[derive(Debug, Clone, Args)]
pub struct LineageArgs {
    /// `model:owner/name:3`, `job:owner/name`, `dataset:owner/name` or
    /// `serving:owner/name`.
    pub node: String,
    /// Print it as JSON, as the API returns it.
    #[arg(long)]
    pub json: bool,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// Prints the graph around the node.
pub fn lineage(args: LineageArgs) -> anyhow::Result<()> {
    // Checked here first: a typo gets the format, not a round trip.
    NodeRef::parse(&args.node)?;
    let graph = args.remote.client()?.lineage(&args.node)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&graph)?);
    } else {
        print!("{}", render(&graph));
    }
    Ok(())
}

/// The graph as lines: its sentence, then each edge upstream to
/// downstream, the node asked about marked.
pub fn render(graph: &Lineage) -> String {
    let mut out = String::new();
    if let Some(s) = graph.sentence() {
        out += &format!("{s}\n");
    }
    let root = graph.root.key();
    let mark = |key: &str| if key == root { " *" } else { "" };
    let detail = |key: &str| {
        graph
            .nodes
            .iter()
            .find(|n| n.node.key() == key)
            .map(|n| n.detail.clone())
            .filter(|d| !d.is_empty())
            .map(|d| format!(" ({d})"))
            .unwrap_or_default()
    };
    if graph.edges.is_empty() {
        out += &format!("{root}: nothing recorded came before or after it.\n");
    }
    for e in &graph.edges {
        out += &format!(
            "{}{}{} --{}--> {}{}{}\n",
            e.from,
            detail(&e.from),
            mark(&e.from),
            e.relation.label(),
            e.to,
            detail(&e.to),
            mark(&e.to)
        );
    }
    out
}
