//! The account's secrets in pods: one Kubernetes Secret per workload (in
//! the account's namespace, owned by the workload, so it goes with it)
//! holds the values the workload uses; its pods refer to it by key, so the
//! values are in no pod spec, Job or Deployment.

use app::error::AppError;
use app::models::{SecretUse, POD_SECRETS_DIR, SECRETS_DIR_VARIABLE};
use base64::Engine;
use k8s_openapi::api::core::v1::Secret;
use serde_json::{json, Value};

use crate::secrets::Revealed;

/// The name of a workload's Secret of secrets.
pub fn secret_name(workload: &str) -> String {
    format!("{workload}-secrets")
}

fn env_key(variable: &str) -> String {
    format!("env.{variable}")
}

fn file_key(file: &str) -> String {
    format!("file.{file}")
}

/// `revealed`'s values as a Secret's `data`, each under the key
/// [`apply`] refers to.
pub fn data(revealed: &Revealed) -> serde_json::Map<String, Value> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut data = serde_json::Map::new();
    for (variable, value) in &revealed.env {
        data.insert(env_key(variable), json!(b64.encode(value)));
    }
    for (file, bytes) in &revealed.files {
        data.insert(file_key(file), json!(b64.encode(bytes)));
    }
    data
}

/// The Secret holding `revealed`'s values for the workload `workload`
/// ([`secret_name`]), with these labels and owners.
pub fn secret(
    workload: &str,
    labels: &Value,
    owners: &Value,
    revealed: &Revealed,
) -> Result<Secret, AppError> {
    let data = data(revealed);
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": secret_name(workload),
            "labels": labels,
            "ownerReferences": owners,
        },
        "type": "Opaque",
        "data": data,
    }))
    .map_err(|err| {
        tracing::error!(error = %err, "making a workload's Secret of secrets");
        AppError::Internal
    })
}

/// Gives every container of `pod` (a pod spec) the secrets `uses` names,
/// from the Secret `secret` (holding [`data`]): variables by
/// `secretKeyRef`, files in a read-only volume at [`POD_SECRETS_DIR`],
/// named by [`SECRETS_DIR_VARIABLE`].
pub fn apply(secret: &str, uses: &[SecretUse], pod: &mut Value) {
    if uses.is_empty() {
        return;
    }
    let name = secret;
    let mut env: Vec<Value> = Vec::new();
    let mut items: Vec<Value> = Vec::new();
    for u in uses {
        match (&u.env, &u.file) {
            (Some(variable), _) => env.push(json!({
                "name": variable,
                "valueFrom": { "secretKeyRef": { "name": name, "key": env_key(variable) } },
            })),
            (None, Some(file)) => items.push(json!({ "key": file_key(file), "path": file })),
            (None, None) => {}
        }
    }
    if !items.is_empty() {
        env.push(json!({ "name": SECRETS_DIR_VARIABLE, "value": POD_SECRETS_DIR }));
        let volumes = pod["volumes"].as_array_mut();
        let volume = json!({
            "name": "paddlecloud-secrets",
            "secret": { "secretName": name, "items": items, "defaultMode": 0o400 },
        });
        match volumes {
            Some(v) => v.push(volume),
            None => pod["volumes"] = json!([volume]),
        }
    }
    if let Some(containers) = pod["containers"].as_array_mut() {
        for container in containers {
            match container["env"].as_array_mut() {
                Some(e) => e.extend(env.iter().cloned()),
                None => container["env"] = json!(env),
            }
            if !items.is_empty() {
                let mount = json!({
                    "name": "paddlecloud-secrets",
                    "mountPath": POD_SECRETS_DIR,
                    "readOnly": true,
                });
                match container["volumeMounts"].as_array_mut() {
                    Some(m) => m.push(mount),
                    None => container["volumeMounts"] = json!([mount]),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uses() -> Vec<SecretUse> {
        app::models::parse_secret_uses("AWS_KEY=s3\nfile:gcp.json=gcp").unwrap()
    }

    #[test]
    fn pods_refer_to_the_workloads_secret_and_hold_no_value() {
        let mut pod = json!({ "containers": [{ "name": "paddle", "env": [] }] });
        apply(&secret_name("fit"), &uses(), &mut pod);
        let text = pod.to_string();
        assert!(
            text.contains(r#""secretKeyRef":{"key":"env.AWS_KEY","name":"fit-secrets"}"#),
            "{text}"
        );
        assert_eq!(pod["volumes"][0]["secret"]["items"][0]["path"], "gcp.json");
        assert_eq!(
            pod["containers"][0]["volumeMounts"][0]["mountPath"],
            POD_SECRETS_DIR
        );
        assert_eq!(pod["containers"][0]["env"][1]["value"], POD_SECRETS_DIR);
    }

    #[test]
    fn the_secret_holds_each_value_under_its_use() {
        let revealed = Revealed {
            env: vec![("AWS_KEY".into(), "hunter2".into())],
            files: vec![("gcp.json".into(), b"{}".to_vec())],
        };
        let s = secret("fit", &json!({}), &json!([]), &revealed).unwrap();
        let data = s.data.unwrap();
        assert_eq!(data["env.AWS_KEY"].0, b"hunter2");
        assert_eq!(data["file.gcp.json"].0, b"{}");
        assert_eq!(s.metadata.name.as_deref(), Some("fit-secrets"));
    }
}
