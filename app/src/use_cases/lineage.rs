//! The graph around a dataset, job, model version or serving instance,
//! read from what the console records already: a job's inputs (its spec's
//! datasets and pinned model versions), the job a model version names as
//! its source, and the versions a serving instance's tracks serve. The
//! viewer sees their own account's jobs and instances and whatever assets
//! they may read; another account's jobs are left out.

use std::collections::{BTreeMap, VecDeque};

use crate::error::AppError;
use crate::models::{
    job_inputs, AssetKind, AssetRef, Job, JobQuery, Lineage, LineageEdge, LineageNode, Me,
    NodeKind, NodeRef, Relation, ScoringUse, LINEAGE_DEPTH,
};
use crate::ports::{Services, Viewer};

/// Jobs looked at for those that read a dataset or model version: the
/// account's newest.
pub const READERS_SCANNED: u32 = 2_000;

/// The graph around `root`, [`LINEAGE_DEPTH`] steps each way, as `me` may
/// see it; a root `me` may not see is "not found".
pub async fn lineage(services: &Services, me: &Me, root: NodeRef) -> Result<Lineage, AppError> {
    let mut walk = Walk {
        services,
        me,
        jobs: None,
    };
    let detail = walk.check(&root).await?;
    let mut nodes: BTreeMap<String, LineageNode> = BTreeMap::new();
    nodes.insert(
        root.key(),
        LineageNode {
            node: root.clone(),
            depth: 0,
            detail,
        },
    );
    let mut edges: Vec<LineageEdge> = Vec::new();
    for up in [true, false] {
        let mut queue = VecDeque::from([(root.clone(), 0)]);
        while let Some((node, depth)) = queue.pop_front() {
            if depth == LINEAGE_DEPTH {
                continue;
            }
            let next = if up {
                walk.upstream(&node).await?
            } else {
                walk.downstream(&node).await?
            };
            for (other, relation, detail) in next {
                let edge = if up {
                    (other.key(), node.key())
                } else {
                    (node.key(), other.key())
                };
                if !edges
                    .iter()
                    .any(|e| (e.from.as_str(), e.to.as_str()) == (&edge.0, &edge.1))
                {
                    edges.push(LineageEdge {
                        from: edge.0,
                        to: edge.1,
                        relation,
                    });
                }
                let d = if up { -(depth + 1) } else { depth + 1 };
                if let std::collections::btree_map::Entry::Vacant(slot) = nodes.entry(other.key()) {
                    slot.insert(LineageNode {
                        node: other.clone(),
                        depth: d,
                        detail,
                    });
                    queue.push_back((other, depth + 1));
                }
            }
        }
    }
    let mut nodes: Vec<LineageNode> = nodes.into_values().collect();
    nodes.sort_by(|a, b| (a.depth, &a.node).cmp(&(b.depth, &b.node)));
    Ok(Lineage { root, nodes, edges })
}

/// One walk over the graph, with the account's jobs read once.
struct Walk<'a> {
    services: &'a Services,
    me: &'a Me,
    jobs: Option<Vec<Job>>,
}

type Next = Vec<(NodeRef, Relation, String)>;

impl Walk<'_> {
    fn viewer(&self) -> Viewer {
        Viewer::User(self.me.clone())
    }

    fn mine(&self, node: &NodeRef) -> bool {
        node.owner == self.me.account.name
    }

    /// Whether `me` may see `node`, and its detail; else "not found".
    async fn check(&mut self, node: &NodeRef) -> Result<String, AppError> {
        let services = self.services;
        match node.kind {
            NodeKind::Dataset => {
                services.assets.get(&self.viewer(), &asset(node)).await?;
                Ok(String::new())
            }
            NodeKind::Model => {
                let version = node.version.unwrap_or(0);
                let versions = services
                    .assets
                    .versions(&self.viewer(), &asset(node))
                    .await?;
                let v = versions
                    .into_iter()
                    .find(|v| v.version == version)
                    .ok_or_else(|| {
                        AppError::not_found(format!("Version {version} of “{}”", node.name))
                    })?;
                Ok(v.state)
            }
            NodeKind::Job if self.mine(node) => {
                let job = services.cluster.job(&self.me.account, &node.name).await?;
                Ok(job.status.as_str().to_owned())
            }
            NodeKind::Serving if self.mine(node) => {
                let s = services.serving.get(&self.me.account, &node.name).await?;
                Ok(s.status.as_str().to_owned())
            }
            NodeKind::Job => Err(AppError::not_found(format!("Job “{}”", node.name))),
            NodeKind::Serving => Err(AppError::not_found(format!(
                "Serving instance “{}”",
                node.name
            ))),
        }
    }

    /// What `node` came from.
    async fn upstream(&mut self, node: &NodeRef) -> Result<Next, AppError> {
        let services = self.services;
        let mut out = Vec::new();
        match node.kind {
            NodeKind::Dataset => {
                // The batch scorings that wrote its versions (each try).
                let account = self.me.account.name.clone();
                for job in self.jobs().await? {
                    if let Some(s) = job.spec.scoring.as_ref().filter(|s| writes(s, node)) {
                        out.push((
                            NodeRef::job(&account, &job.name),
                            Relation::Wrote,
                            format!("version {}", s.version),
                        ));
                    }
                }
            }
            NodeKind::Job => {
                if !self.mine(node) {
                    return Ok(out);
                }
                let job = services.cluster.job(&self.me.account, &node.name).await?;
                out.extend(inputs_of(&self.me.account.name, &job));
            }
            NodeKind::Model => {
                let version = node.version.unwrap_or(0);
                let versions = match services.assets.versions(&self.viewer(), &asset(node)).await {
                    Ok(v) => v,
                    Err(AppError::NotFound { .. } | AppError::Forbidden { .. }) => return Ok(out),
                    Err(err) => return Err(err),
                };
                let job = versions
                    .into_iter()
                    .find(|v| v.version == version)
                    .and_then(|v| v.job);
                // Another account's job is theirs to see.
                if let Some(job) = job.filter(|_| self.mine(node)) {
                    let status = match services.cluster.job(&self.me.account, &job).await {
                        Ok(j) => j.status.as_str().to_owned(),
                        Err(AppError::NotFound { .. }) => "deleted".to_owned(),
                        Err(err) => return Err(err),
                    };
                    out.push((
                        NodeRef::job(&node.owner, &job),
                        Relation::Registered,
                        status,
                    ));
                }
            }
            NodeKind::Serving => {
                if !self.mine(node) {
                    return Ok(out);
                }
                let s = services.serving.get(&self.me.account, &node.name).await?;
                let (owner, model) = s.model.split_once('/').unwrap_or((&node.owner, &s.model));
                for t in &s.tracks {
                    let relation = Relation::of_track(t.track);
                    out.push((
                        NodeRef::model(owner, model, t.version),
                        relation,
                        String::new(),
                    ));
                }
            }
        }
        Ok(out)
    }

    /// What came of `node`.
    async fn downstream(&mut self, node: &NodeRef) -> Result<Next, AppError> {
        let services = self.services;
        let mut out = Vec::new();
        match node.kind {
            NodeKind::Serving => {}
            NodeKind::Job => {
                if !self.mine(node) {
                    return Ok(out);
                }
                let job = services.cluster.job(&self.me.account, &node.name).await?;
                if let Some(s) = &job.spec.scoring {
                    let (owner, name) = s.output.split_once('/').unwrap_or(("", &s.output));
                    out.push((
                        NodeRef::dataset(owner, name),
                        Relation::Wrote,
                        format!("version {}", s.version),
                    ));
                }
                for v in services
                    .assets
                    .registered_by(&self.me.account, &node.name)
                    .await?
                {
                    out.push((
                        NodeRef::model(&v.owner, &v.name, v.version),
                        Relation::Registered,
                        v.state,
                    ));
                }
            }
            NodeKind::Dataset | NodeKind::Model => {
                let account = self.me.account.name.clone();
                for job in self.jobs().await? {
                    if inputs_of(&account, job).iter().any(|(n, _, _)| n == node) {
                        out.push((
                            NodeRef::job(&account, &job.name),
                            Relation::Read,
                            job.status.as_str().to_owned(),
                        ));
                    }
                }
                if node.kind == NodeKind::Model {
                    let list = services.serving.list(&self.me.account).await?;
                    for s in list.instances {
                        if s.model != format!("{}/{}", node.owner, node.name) {
                            continue;
                        }
                        for t in s.tracks.iter().filter(|t| Some(t.version) == node.version) {
                            let relation = Relation::of_track(t.track);
                            out.push((
                                NodeRef::serving(&account, &s.name),
                                relation,
                                s.status.as_str().to_owned(),
                            ));
                        }
                    }
                }
            }
        }
        Ok(out)
    }

    /// The account's newest jobs, read once per walk.
    async fn jobs(&mut self) -> Result<&[Job], AppError> {
        if self.jobs.is_none() {
            let mut jobs = Vec::new();
            let per_page = crate::models::MAX_PER_PAGE;
            for page in 1..=READERS_SCANNED.div_ceil(per_page) {
                let query = JobQuery {
                    page: Some(page),
                    per_page: Some(per_page),
                    ..JobQuery::default()
                };
                let got = self
                    .services
                    .cluster
                    .list_jobs(&self.me.account, &query)
                    .await?;
                let done = got.jobs.len() < per_page as usize;
                jobs.extend(got.jobs);
                if done {
                    break;
                }
            }
            self.jobs = Some(jobs);
        }
        Ok(self.jobs.as_deref().unwrap_or_default())
    }
}

fn asset(node: &NodeRef) -> AssetRef {
    AssetRef {
        kind: match node.kind {
            NodeKind::Dataset => AssetKind::Dataset,
            _ => AssetKind::Model,
        },
        owner: node.owner.clone(),
        name: node.name.clone(),
    }
}

/// Whether scoring `s` writes a version of dataset `node`.
fn writes(s: &ScoringUse, node: &NodeRef) -> bool {
    s.output.split_once('/') == Some((node.owner.as_str(), node.name.as_str()))
}

/// What a job read: its datasets and pinned model versions.
fn inputs_of(account: &str, job: &Job) -> Next {
    let Ok(inputs) = job_inputs(account, &job.spec.datasets, &job.spec.models) else {
        return Vec::new();
    };
    inputs
        .into_iter()
        .map(|i| match (i.asset.kind, i.version) {
            (AssetKind::Model, Some(v)) => (
                NodeRef::model(&i.asset.owner, &i.asset.name, v),
                Relation::Read,
                String::new(),
            ),
            // A dataset's saved version is said on the edge.
            (_, version) => (
                NodeRef::dataset(&i.asset.owner, &i.asset.name),
                Relation::Read,
                version.map(|v| format!("version {v}")).unwrap_or_default(),
            ),
        })
        .collect()
}
