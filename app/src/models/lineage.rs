//! Lineage: what each dataset, job, model version and serving instance came
//! from and what came of it. A job read datasets and model versions and
//! registered model versions; a serving instance serves model versions (its
//! main track, a canary, a shadow). The graph around one of them, two steps
//! each way, is what its page draws and `GET /api/v1/lineage` returns; a
//! model version's answers "trained by job X from dataset Y, served by Z".

use serde::{Deserialize, Serialize};

use super::names::validate_job_name;
use crate::error::AppError;

/// What a node of the graph is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum NodeKind {
    /// A dataset.
    Dataset,
    /// A job.
    Job,
    /// One version of a model.
    Model,
    /// A serving instance.
    Serving,
}

impl NodeKind {
    /// Every kind.
    pub const ALL: [NodeKind; 4] = [
        NodeKind::Dataset,
        NodeKind::Job,
        NodeKind::Model,
        NodeKind::Serving,
    ];

    /// As links and keys spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeKind::Dataset => "dataset",
            NodeKind::Job => "job",
            NodeKind::Model => "model",
            NodeKind::Serving => "serving",
        }
    }
}

/// One dataset, job, model version or serving instance:
/// `dataset:owner/name`, `job:owner/name`, `model:owner/name:3`,
/// `serving:owner/name`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct NodeRef {
    /// What it is.
    pub kind: NodeKind,
    /// The account it belongs to.
    pub owner: String,
    /// Its name.
    pub name: String,
    /// A model's version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
}

impl NodeRef {
    /// A dataset.
    pub fn dataset(owner: &str, name: &str) -> Self {
        Self::of(NodeKind::Dataset, owner, name, None)
    }

    /// A job.
    pub fn job(owner: &str, name: &str) -> Self {
        Self::of(NodeKind::Job, owner, name, None)
    }

    /// A model version.
    pub fn model(owner: &str, name: &str, version: u32) -> Self {
        Self::of(NodeKind::Model, owner, name, Some(version))
    }

    /// A serving instance.
    pub fn serving(owner: &str, name: &str) -> Self {
        Self::of(NodeKind::Serving, owner, name, None)
    }

    fn of(kind: NodeKind, owner: &str, name: &str, version: Option<u32>) -> Self {
        Self {
            kind,
            owner: owner.to_owned(),
            name: name.to_owned(),
            version,
        }
    }

    /// Reads [`NodeRef::key`]'s spelling; the error names `node`.
    pub fn parse(text: &str) -> Result<Self, AppError> {
        let bad = || {
            AppError::invalid(
                "node",
                format!(
                    "“{text}” names nothing: write dataset:owner/name, job:owner/name, \
                     model:owner/name:version or serving:owner/name."
                ),
            )
        };
        let (kind, rest) = text.split_once(':').ok_or_else(bad)?;
        let kind = NodeKind::ALL
            .into_iter()
            .find(|k| k.as_str() == kind)
            .ok_or_else(bad)?;
        let (path, version) = match kind {
            NodeKind::Model => {
                let (path, v) = rest.rsplit_once(':').ok_or_else(bad)?;
                let v: u32 = v.parse().map_err(|_| bad())?;
                if v == 0 {
                    return Err(bad());
                }
                (path, Some(v))
            }
            _ => (rest, None),
        };
        let (owner, name) = path.split_once('/').ok_or_else(bad)?;
        let fine = |s: &str| {
            !s.is_empty()
                && s.len() <= 100
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        };
        if !fine(owner) || !fine(name) {
            return Err(bad());
        }
        if kind == NodeKind::Job || kind == NodeKind::Serving {
            validate_job_name(name).map_err(|_| bad())?;
        }
        Ok(Self::of(kind, owner, name, version))
    }

    /// `kind:owner/name[:version]`: what links and the API name it by.
    pub fn key(&self) -> String {
        match self.version {
            Some(v) => format!("{}:{}/{}:{v}", self.kind.as_str(), self.owner, self.name),
            None => format!("{}:{}/{}", self.kind.as_str(), self.owner, self.name),
        }
    }

    /// What the graph writes in its box.
    pub fn label(&self) -> String {
        match (self.kind, self.version) {
            (NodeKind::Model, Some(v)) => format!("{}/{} v{v}", self.owner, self.name),
            (NodeKind::Job | NodeKind::Serving, _) => self.name.clone(),
            _ => format!("{}/{}", self.owner, self.name),
        }
    }

    /// Its own page, for a viewer in account `viewer` (another account's
    /// job or instance has none they may open).
    pub fn href(&self, viewer: &str) -> Option<String> {
        match self.kind {
            NodeKind::Dataset => Some(format!("/datasets/{}/{}", self.owner, self.name)),
            NodeKind::Model => Some(format!(
                "/models/{}/{}?version={}",
                self.owner,
                self.name,
                self.version.unwrap_or(1)
            )),
            NodeKind::Job if self.owner == viewer => Some(format!("/jobs/{}", self.name)),
            NodeKind::Serving if self.owner == viewer => Some(format!("/serving/{}", self.name)),
            _ => None,
        }
    }

    /// The shareable link to its lineage.
    pub fn lineage_href(&self) -> String {
        format!("/lineage?node={}", crate::models::url::encode(&self.key()))
    }
}

/// How one node came of another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum Relation {
    /// A job read a dataset or model version.
    Read,
    /// A job registered a model version.
    Registered,
    /// A batch scoring job wrote a dataset's version (its predictions).
    Wrote,
    /// A serving instance's main track serves a model version.
    Serves,
    /// Its canary does.
    Canary,
    /// Its shadow gets copies of calls for it.
    Shadow,
}

impl Relation {
    /// How a serving instance's `track` relates it to the version it serves.
    pub fn of_track(track: super::serving_tracks::Track) -> Self {
        use super::serving_tracks::Track;
        match track {
            Track::Main => Relation::Serves,
            Track::Canary => Relation::Canary,
            Track::Shadow => Relation::Shadow,
        }
    }

    /// As the graph writes it on the edge.
    pub fn label(self) -> &'static str {
        match self {
            Relation::Read => "read by",
            Relation::Registered => "registered",
            Relation::Wrote => "wrote",
            Relation::Serves => "served by",
            Relation::Canary => "canary of",
            Relation::Shadow => "shadow of",
        }
    }
}

/// One node with what the graph says of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct LineageNode {
    /// Which.
    pub node: NodeRef,
    /// Steps from the one asked about: negative upstream, positive
    /// downstream, 0 for it.
    pub depth: i32,
    /// Its state in a word or two (`succeeded`, `ready`, `serving`).
    pub detail: String,
}

/// `from` came before `to`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct LineageEdge {
    /// Upstream node's key.
    pub from: String,
    /// Downstream node's key.
    pub to: String,
    /// How.
    pub relation: Relation,
}

/// The graph around one node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Lineage {
    /// The node asked about.
    pub root: NodeRef,
    /// It and what is up to [`LINEAGE_DEPTH`] steps upstream and downstream.
    pub nodes: Vec<LineageNode>,
    /// Between them.
    pub edges: Vec<LineageEdge>,
}

/// Steps the graph goes each way.
pub const LINEAGE_DEPTH: i32 = 2;

impl Lineage {
    /// The nodes one step from `key` the other side of an edge of
    /// `relations`, upstream (`up`) or downstream.
    fn next_to(&self, key: &str, up: bool, relations: &[Relation]) -> Vec<&NodeRef> {
        self.edges
            .iter()
            .filter(|e| relations.contains(&e.relation))
            .filter_map(|e| match up {
                true if e.to == key => Some(&e.from),
                false if e.from == key => Some(&e.to),
                _ => None,
            })
            .filter_map(|k| self.nodes.iter().find(|n| n.node.key() == *k))
            .map(|n| &n.node)
            .collect()
    }

    /// What a model version's page says in one sentence: "Trained by job
    /// fit from dataset acme/mnist; served by api; scored into acme/scores
    /// by job score; read by job tune."
    /// `None` for any other node, or one with nothing around it.
    pub fn sentence(&self) -> Option<String> {
        if self.root.kind != NodeKind::Model {
            return None;
        }
        let key = self.root.key();
        let names = |nodes: Vec<&NodeRef>| {
            nodes
                .into_iter()
                .map(|n| n.label())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut parts = Vec::new();
        let jobs = self.next_to(&key, true, &[Relation::Registered]);
        if let Some(job) = jobs.first() {
            let read = self.next_to(&job.key(), true, &[Relation::Read]);
            let from = if read.is_empty() {
                String::new()
            } else {
                format!(" from {}", names(read))
            };
            parts.push(format!("Trained by job {}{from}", job.label()));
        }
        let served = self.next_to(
            &key,
            false,
            &[Relation::Serves, Relation::Canary, Relation::Shadow],
        );
        if !served.is_empty() {
            parts.push(format!("served by {}", names(served)));
        }
        // A reader that wrote a dataset's version scored it: said apart.
        let (scorers, readers): (Vec<&NodeRef>, Vec<&NodeRef>) = self
            .next_to(&key, false, &[Relation::Read])
            .into_iter()
            .partition(|job| {
                !self
                    .next_to(&job.key(), false, &[Relation::Wrote])
                    .is_empty()
            });
        // Tries of one scoring (or several into one dataset) said once.
        let mut scored: Vec<(String, Vec<String>)> = Vec::new();
        for job in scorers {
            let wrote = names(self.next_to(&job.key(), false, &[Relation::Wrote]));
            match scored.iter_mut().find(|(w, _)| *w == wrote) {
                Some((_, jobs)) => jobs.push(job.label()),
                None => scored.push((wrote, vec![job.label()])),
            }
        }
        for (wrote, jobs) in scored {
            parts.push(format!("scored into {wrote} by job {}", jobs.join(", ")));
        }
        if !readers.is_empty() {
            parts.push(format!("read by job {}", names(readers)));
        }
        if parts.is_empty() {
            return None;
        }
        let mut text = parts.join("; ");
        if let Some(first) = text.get(..1) {
            text = first.to_uppercase() + &text[1..];
        }
        Some(format!("{text}."))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_reads_back_from_its_key_and_bad_ones_name_the_field() {
        for node in [
            NodeRef::dataset("acme", "mnist"),
            NodeRef::job("acme", "fit-2"),
            NodeRef::model("acme", "lenet", 3),
            NodeRef::serving("acme", "api"),
        ] {
            assert_eq!(NodeRef::parse(&node.key()).unwrap(), node);
        }
        for bad in [
            "",
            "model:acme/lenet",
            "model:acme/lenet:0",
            "cat:acme/x",
            "job:acme",
            "job:acme/Bad Name",
            "dataset:/x",
        ] {
            assert_eq!(
                NodeRef::parse(bad).unwrap_err().field(),
                Some("node"),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_model_versions_sentence_says_what_trained_it_and_what_serves_it() {
        let node = |n: NodeRef, depth| LineageNode {
            node: n,
            depth,
            detail: String::new(),
        };
        let (data, job, model, api) = (
            NodeRef::dataset("acme", "mnist"),
            NodeRef::job("acme", "fit"),
            NodeRef::model("acme", "lenet", 3),
            NodeRef::serving("acme", "api"),
        );
        let edge = |a: &NodeRef, b: &NodeRef, relation| LineageEdge {
            from: a.key(),
            to: b.key(),
            relation,
        };
        let lineage = Lineage {
            root: model.clone(),
            nodes: vec![
                node(data.clone(), -2),
                node(job.clone(), -1),
                node(model.clone(), 0),
                node(api.clone(), 1),
            ],
            edges: vec![
                edge(&data, &job, Relation::Read),
                edge(&job, &model, Relation::Registered),
                edge(&model, &api, Relation::Serves),
            ],
        };
        assert_eq!(
            lineage.sentence().as_deref(),
            Some("Trained by job fit from acme/mnist; served by api.")
        );
        let alone = Lineage {
            root: model.clone(),
            nodes: vec![node(model.clone(), 0)],
            edges: vec![],
        };
        assert_eq!(alone.sentence(), None);
        let (score, scores) = (
            NodeRef::job("acme", "score"),
            NodeRef::dataset("acme", "scores"),
        );
        let mut scored = lineage.clone();
        scored
            .nodes
            .extend([node(score.clone(), 1), node(scores.clone(), 2)]);
        scored.edges.extend([
            edge(&model, &score, Relation::Read),
            edge(&score, &scores, Relation::Wrote),
        ]);
        assert_eq!(
            scored.sentence().as_deref(),
            Some("Trained by job fit from acme/mnist; served by api; scored into acme/scores by job score.")
        );
        assert_eq!(job.href("acme").as_deref(), Some("/jobs/fit"));
        assert_eq!(job.href("other"), None);
    }
}
