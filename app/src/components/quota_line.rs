//! The lines under a dialog's total (job, serving instance, notebook): what
//! the account's quota leaves, and a warning when what the dialog asks for
//! does not fit (the same check the server makes when it is sent); and the
//! cluster's room: free now, and whether the workload waits for room or can
//! never start.

use leptos::prelude::*;

use crate::error::AppError;
use crate::models::quantity::{format_cpu, format_memory};
use crate::models::{ClusterCapacity, Quota, QuotaUse, ResourceTotals, Room};

/// What `quota` leaves (only what it limits; "more jobs" when `jobs`), and
/// `fits`' refusal, if any. `None` when the quota could not be read.
pub fn quota_line(
    quota: Option<&QuotaUse>,
    jobs: bool,
    fits: impl FnOnce(&QuotaUse) -> Option<Result<(), AppError>>,
) -> Option<AnyView> {
    let q = quota?;
    if q.quota == Quota::default() {
        return Some(view! { <p class="hint" data-testid="quota-left">"Your account has no quota limits."</p> }.into_any());
    }
    let left = q.left();
    let part =
        |v: Option<u64>, f: fn(u64) -> String, what: &str| v.map(|v| format!("{} {what}", f(v)));
    let text = [
        part(left.cpu_millis, format_cpu, "CPU"),
        part(left.memory_bytes, format_memory, "memory"),
        part(left.gpu, |g| g.to_string(), "GPU"),
        jobs.then(|| part(left.max_jobs, |j| j.to_string(), "more jobs"))
            .flatten(),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(" · ");
    let refused = fits(q).and_then(Result::err);
    Some(view! {
        <p class="hint" data-testid="quota-left">"Left in the account's quota: " <strong>{text}</strong></p>
        {refused.map(|e| view! { <p class="banner warn" role="alert" data-testid="quota-over">{e.to_string()}</p> })}
    }.into_any())
}

/// What `room` has free now and in all, and where `ask` stands: fits, waits
/// for room, or more than the cluster has. `None` when the room is unknown.
pub fn room_line(room: Option<&ClusterCapacity>, ask: Option<ResourceTotals>) -> Option<AnyView> {
    let room = room?;
    let (total, free) = (room.total?, room.free()?);
    let words = |t: ResourceTotals| {
        let mut text = format!(
            "{} CPU · {} memory",
            format_cpu(t.cpu_millis),
            format_memory(t.memory_bytes)
        );
        if total.gpu > 0 {
            text += &format!(" · {} GPU", t.gpu);
        }
        text
    };
    let (free_words, total_words) = (words(free), words(total));
    let stands = ask.map(|a| room.room_for(a));
    let warning = match stands {
        Some(Room::Waits { .. }) => Some((
            "waits",
            "More than is free now: it waits for room.".to_owned(),
        )),
        Some(Room::Never { .. }) => Some((
            "never",
            format!(
                "More than {} has in all ({total_words}): it could never start.",
                room.cluster
            ),
        )),
        _ => None,
    };
    Some(view! {
        <p class="hint" data-testid="room-left">
            "Free on " {room.cluster.clone()} " now: " <strong>{free_words}</strong> " of " {total_words}
        </p>
        {warning.map(|(kind, text)| view! {
            <p class="banner warn" role="status" data-testid="room-warning" data-room=kind>{text}</p>
        })}
    }.into_any())
}
