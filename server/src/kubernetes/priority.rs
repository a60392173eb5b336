//! A job's priority on Kubernetes: its pods carry one of three
//! PriorityClasses the console makes once (`paddlecloud-low`, `-normal`,
//! `-high`), so the scheduler takes a higher one's pending pods first.
//! They never preempt (`preemptionPolicy: Never`): the cluster's preemption
//! crosses namespaces; the console's own, opt-in, stays inside an account
//! ([`super::preemption`]). Values sit above the default 0 of pods without
//! a class and far below the system's own (`system-cluster-critical` is two
//! billion).

use app::models::Priority;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::{Api, PostParams};
use kube::Client;
use serde_json::json;

use super::errors::is_conflict;
use super::objects::{CONSOLE, MANAGED_BY};

/// The class a job of `priority` runs its pods in.
pub fn class_name(priority: Priority) -> String {
    format!("paddlecloud-{}", priority.as_str())
}

/// The class's value: what the scheduler orders pending pods by.
pub fn value(priority: Priority) -> i32 {
    match priority {
        Priority::Low => 100,
        Priority::Normal => 1_000,
        Priority::High => 10_000,
    }
}

/// The class of `priority`, as the console makes it.
pub fn class(priority: Priority) -> PriorityClass {
    let object = json!({
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {
            "name": class_name(priority),
            "labels": { MANAGED_BY: CONSOLE },
        },
        "value": value(priority),
        "globalDefault": false,
        "preemptionPolicy": "Never",
        "description": format!(
            "PaddleCloud jobs of {} priority: their pending pods go before lower ones'; they evict no one.",
            priority.as_str()
        ),
    });
    serde_json::from_value(object).expect("a PriorityClass")
}

/// Makes the three classes where they are missing (a class another console
/// made is left as it is).
pub async fn ensure(client: &Client) -> Result<(), kube::Error> {
    let api: Api<PriorityClass> = Api::all(client.clone());
    for priority in Priority::ALL {
        match api.create(&PostParams::default(), &class(priority)).await {
            Ok(_) => {}
            Err(e) if is_conflict(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_classes_order_high_above_normal_above_low_and_preempt_no_one() {
        let values: Vec<i32> = Priority::ALL.into_iter().map(value).collect();
        assert!(values.windows(2).all(|w| w[0] < w[1]), "{values:?}");
        let high = class(Priority::High);
        assert_eq!(high.metadata.name.as_deref(), Some("paddlecloud-high"));
        assert_eq!(high.value, 10_000);
        assert_eq!(high.preemption_policy.as_deref(), Some("Never"));
        assert_eq!(high.global_default, Some(false));
    }
}
