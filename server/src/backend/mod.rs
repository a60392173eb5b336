//! What a backend (the local executor, Kubernetes) provides besides the
//! [`app::ports::Cluster`] port, as the small traits the services that use
//! it need: serving replicas ([`serving::ServingBackend`]), notebook servers
//! ([`notebooks::NotebookBackend`]) and a quota the cluster enforces itself
//! ([`quota::ClusterQuota`]). Services hold these
//! traits, never a concrete backend.

pub mod notebooks;
pub mod quota;
pub mod serving;
