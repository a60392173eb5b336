//! How the queue says what a request lacks and what waits ahead of it.

use app::models::quantity::{format_cpu, format_memory};
use app::models::ResourceTotals;

pub(super) fn cpus(millis: u64) -> String {
    if millis <= 1000 {
        format!("{} CPU", format_cpu(millis))
    } else {
        format!("{} CPUs", format_cpu(millis))
    }
}

pub(super) fn gpus(n: u64) -> String {
    if n == 1 {
        "1 GPU".to_owned()
    } else {
        format!("{n} GPUs")
    }
}

/// What `need` lacks of `free`, in words: `2 GPUs: 1 free`.
pub(super) fn lacking(need: &ResourceTotals, free: &ResourceTotals) -> Vec<String> {
    let mut out = Vec::new();
    if need.cpu_millis > free.cpu_millis {
        out.push(format!(
            "{}: {} free",
            cpus(need.cpu_millis),
            format_cpu(free.cpu_millis)
        ));
    }
    if need.memory_bytes > free.memory_bytes {
        out.push(format!(
            "{} of memory: {} free",
            format_memory(need.memory_bytes),
            format_memory(free.memory_bytes)
        ));
    }
    if need.gpu > free.gpu {
        out.push(format!("{}: {} free", gpus(need.gpu), free.gpu));
    }
    out
}

/// `3 jobs ahead`, `1 job and 2 serving replicas ahead`: what waits ahead
/// by kind (jobs, serving replicas, notebooks, as [`super::Asker`] numbers them).
pub(super) fn ahead_text(ahead: [usize; 3]) -> String {
    const NOUNS: [(&str, &str); 3] = [
        ("job", "jobs"),
        ("serving replica", "serving replicas"),
        ("notebook", "notebooks"),
    ];
    let parts: Vec<String> = ahead
        .iter()
        .zip(NOUNS)
        .filter(|(n, _)| **n > 0)
        .map(|(&n, (one, many))| {
            if n == 1 {
                format!("1 {one}")
            } else {
                format!("{n} {many}")
            }
        })
        .collect();
    let list = match parts.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    };
    format!("{list} ahead")
}
