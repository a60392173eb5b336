//! What a backend (the local executor, Kubernetes) provides besides the
//! [`app::ports::Cluster`] port, as the small traits the services that use
//! it need: serving replicas ([`serving::ServingBackend`]), notebook servers
//! ([`notebooks::NotebookBackend`]) and a quota the cluster enforces itself
//! ([`quota::ClusterQuota`]). Services hold these
//! traits, never a concrete backend.

pub mod lab_client;
pub mod notebooks;
pub mod quota;
pub mod reporter;
pub mod serving;
pub mod supervised;

/// The last `n` of `lines` as one line, at most `chars` characters: why a
/// process ended, in its own words.
pub fn last_lines(lines: &[String], n: usize, chars: usize) -> String {
    let last = lines[lines.len().saturating_sub(n)..].join(" · ");
    let mut out: String = last.chars().take(chars).collect();
    if out.len() < last.len() {
        out.push('…');
    }
    out
}
