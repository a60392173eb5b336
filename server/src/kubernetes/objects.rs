//! The Kubernetes objects a job becomes, built from its spec.
//!
//! One parent ConfigMap (`<job>`, holding the spec) owns everything else
//! through ownerReferences, so deleting it cascades: a Secret with the job's
//! token, a headless Service that gives every replica a stable DNS name
//! (`trainer-0.<job>`), and one batch/v1 Job per replica (`<job>-trainer-0`,
//! backoffLimit 0), whose pod runs the replica. Per-replica Jobs work on
//! Kubernetes 1.20 (no Indexed Jobs needed) and still give each replica a
//! controller that records how it ended.

use std::collections::BTreeMap;

use app::error::AppError;
use app::models::{JobRole, JobSpec};
use k8s_openapi::api::batch::v1::Job as KubeJob;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use serde_json::json;

use super::sdk::{sdk_data, sdk_items, sdk_mount, SDK_DIR};

/// `app.kubernetes.io/managed-by` on everything the console creates.
pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
/// Its value.
pub const CONSOLE: &str = "paddlecloud";
/// The job an object belongs to.
pub const JOB: &str = "paddlecloud.org/job";
/// The console's id of that job.
pub const JOB_ID: &str = "paddlecloud.org/job-id";
/// `pserver` or `trainer`.
pub const ROLE: &str = "paddlecloud.org/role";
/// The replica's index within its role.
pub const INDEX: &str = "paddlecloud.org/index";
/// The pipeline run a job is a node of (`kubectl get pods -l …=<run>`).
pub const PIPELINE_RUN: &str = "paddlecloud.org/pipeline-run";
/// That node's name.
pub const PIPELINE_NODE: &str = "paddlecloud.org/pipeline-node";
/// The experiment a job is a trial of (`kubectl get pods -l …=<name>`).
pub const EXPERIMENT: &str = "paddlecloud.org/experiment";
/// That trial's number.
pub const TRIAL: &str = "paddlecloud.org/trial";
/// The replica's name (`trainer-0`), which is its pod's name in the console.
pub const REPLICA: &str = "paddlecloud.org/replica";
/// The key of the job token in its Secret.
pub const TOKEN_KEY: &str = "token";
/// The one container of a replica's pod.
pub const CONTAINER: &str = "paddle";
/// The port parameter servers listen on.
pub const PS_PORT: u16 = 6174;
/// The port trainers listen on (collective training, endpoints).
pub const TRAINER_PORT: u16 = 6170;
/// Longest name a Kubernetes label value or DNS label may have.
const MAX_LABEL: usize = 63;

/// What a job needs beyond its spec.
pub struct JobContext<'a> {
    /// The console's id of the job.
    pub job_id: i64,
    /// The account's name.
    pub account: &'a str,
    /// The console's URL as the job reaches it (`PADDLECLOUD_SERVER`).
    pub console_url: Option<&'a str>,
    /// Seconds between SIGTERM and SIGKILL when a replica is stopped.
    pub grace_seconds: i64,
    /// What the console's init steps need (the inputs' cache, the index).
    pub support: &'a super::inputs::PodSupport,
    /// The PriorityClass its pods run in (see [`super::priority`]), where
    /// the classes exist.
    pub priority_class: Option<String>,
}

/// The spec's extra rules on Kubernetes: an image to run, and names that fit
/// in a DNS label once a replica's suffix is added.
pub fn validate_for_kubernetes(spec: &JobSpec) -> Result<(), AppError> {
    if job_image(spec).is_empty() {
        return Err(AppError::invalid(
            "image",
            "Kubernetes runs containers: give an image (e.g. paddlepaddle/paddle:2.6.1) or an environment that names one.",
        ));
    }
    let longest = spec
        .pod_names()
        .into_iter()
        .map(|(name, _, _)| name.len())
        .max()
        .unwrap_or(0);
    let room = MAX_LABEL.saturating_sub(longest + 1);
    if spec.name.len() > room {
        return Err(AppError::invalid(
            "name",
            format!("On Kubernetes a job's name has at most {room} characters here (its replicas' names are added to it)."),
        ));
    }
    Ok(())
}

/// The image a job's pods run: its environment's, else its own.
fn job_image(spec: &JobSpec) -> &str {
    super::environment::image(spec.environment_use.as_ref(), &spec.image)
}

fn labels(spec: &JobSpec, job_id: i64) -> serde_json::Value {
    let mut labels = json!({ MANAGED_BY: CONSOLE, JOB: spec.name, JOB_ID: job_id.to_string() });
    // Run and node names are short slugs (checked at submit): valid values.
    if let Some(p) = &spec.pipeline {
        labels[PIPELINE_RUN] = json!(p.run);
        labels[PIPELINE_NODE] = json!(p.node);
    }
    // Experiment names are job-name slugs, trial numbers digits.
    if let Some(e) = &spec.experiment {
        labels[EXPERIMENT] = json!(e.name);
        labels[TRIAL] = json!(e.trial.to_string());
    }
    labels
}

/// The parent: holds the spec and the Python SDK its replicas import
/// (`import paddlecloud`: register a model, log metrics), as notebooks'
/// kernels do; owns everything else.
pub fn parent(spec: &JobSpec, job_id: i64) -> Result<ConfigMap, AppError> {
    let spec_json = serde_json::to_string(spec).map_err(|_| AppError::Internal)?;
    let mut data = sdk_data();
    data.insert("spec.json".into(), json!(spec_json));
    from_json(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": { "name": spec.name, "labels": labels(spec, job_id) },
        "data": data,
    }))
}

fn owner(parent: &ConfigMap) -> serde_json::Value {
    json!([{
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": parent.metadata.name,
        "uid": parent.metadata.uid,
        "blockOwnerDeletion": true,
    }])
}

/// The job token, for the SDK inside the job.
pub fn token_secret(
    spec: &JobSpec,
    job_id: i64,
    parent: &ConfigMap,
    token: &str,
) -> Result<Secret, AppError> {
    from_json(json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": format!("{}-token", spec.name),
            "labels": labels(spec, job_id),
            "ownerReferences": owner(parent),
        },
        "type": "Opaque",
        "stringData": { TOKEN_KEY: token },
    }))
}

/// The Secret of the account's secrets the job uses (see
/// [`super::secrets`]), if it uses any.
pub fn job_secrets(
    spec: &JobSpec,
    job_id: i64,
    parent: &ConfigMap,
    revealed: &crate::secrets::Revealed,
) -> Result<Option<Secret>, AppError> {
    if revealed.is_empty() {
        return Ok(None);
    }
    super::secrets::secret(&spec.name, &labels(spec, job_id), &owner(parent), revealed).map(Some)
}

/// The headless Service that names every replica in DNS.
pub fn service(spec: &JobSpec, job_id: i64, parent: &ConfigMap) -> Result<Service, AppError> {
    from_json(json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": spec.name,
            "labels": labels(spec, job_id),
            "ownerReferences": owner(parent),
        },
        "spec": {
            "clusterIP": "None",
            "selector": { JOB: spec.name, JOB_ID: job_id.to_string() },
            // Replicas find each other before they are ready.
            "publishNotReadyAddresses": true,
            "ports": [
                { "name": "pserver", "port": PS_PORT },
                { "name": "trainer", "port": TRAINER_PORT },
            ],
        },
    }))
}

/// A replica's DNS name and port, as the others reach it.
pub fn endpoint(job: &str, replica: &str, role: JobRole) -> String {
    let port = match role {
        JobRole::Pserver => PS_PORT,
        JobRole::Trainer => TRAINER_PORT,
    };
    format!("{replica}.{job}:{port}")
}

/// The batch/v1 Job of one replica; its pod is named this plus `-` and a
/// generated suffix.
pub fn replica_job_name(job: &str, replica: &str) -> String {
    format!("{job}-{replica}")
}

/// One batch/v1 Job per replica.
pub fn replica_jobs(
    spec: &JobSpec,
    ctx: &JobContext,
    parent: &ConfigMap,
) -> Result<Vec<KubeJob>, AppError> {
    let replicas = spec.pod_names();
    let list = |want: JobRole| {
        replicas
            .iter()
            .filter(|(_, role, _)| *role == want)
            .map(|(name, role, _)| endpoint(&spec.name, name, *role))
            .collect::<Vec<_>>()
            .join(",")
    };
    let (ps_list, trainer_list) = (list(JobRole::Pserver), list(JobRole::Trainer));
    let inputs = app::models::job_inputs(ctx.account, &spec.datasets, &spec.models)?;
    replicas
        .iter()
        .map(|(replica, role, index)| {
            let resources = match role {
                JobRole::Pserver => &spec.ps,
                JobRole::Trainer => &spec.trainer,
            };
            let me = endpoint(&spec.name, replica, *role);
            let port = me.rsplit_once(':').map(|(_, p)| p.to_owned()).unwrap_or_default();
            let mut env: Vec<serde_json::Value> = spec
                .env
                .iter()
                .map(|v| json!({ "name": v.name, "value": v.value }))
                .collect();
            let mut set = |name: &str, value: String| env.push(json!({ "name": name, "value": value }));
            set("PADDLE_JOB_ID", spec.name.clone());
            set("TRAINING_ROLE", role.training_role().to_owned());
            set("PADDLE_TRAINERS_NUM", spec.num_trainers.to_string());
            set("PADDLE_PSERVERS_NUM", spec.num_ps.to_string());
            set("PADDLE_PSERVERS_IP_PORT_LIST", ps_list.clone());
            set("PADDLE_TRAINER_ENDPOINTS", trainer_list.clone());
            set("PADDLE_PORT", port.clone());
            set("PADDLE_CURRENT_ENDPOINT", me.clone());
            set("PYTHONUNBUFFERED", "1".to_owned());
            set("PADDLECLOUD_ACCOUNT", ctx.account.to_owned());
            set("PADDLECLOUD_POD", replica.clone());
            match role {
                JobRole::Trainer => set("PADDLE_TRAINER_ID", index.to_string()),
                JobRole::Pserver => set("PADDLE_PSERVER_ID", index.to_string()),
            }
            if let Some(url) = ctx.console_url {
                set("PADDLECLOUD_SERVER", url.to_owned());
            }
            // The SDK after the job's own PYTHONPATH: a program's own
            // `paddlecloud` module, if it ships one, wins.
            super::environment::add_to_pythonpath(&mut env, SDK_DIR, false);
            env.push(json!({ "name": "POD_IP", "valueFrom": { "fieldRef": { "fieldPath": "status.podIP" } } }));
            env.push(json!({
                "name": "PADDLECLOUD_JOB_TOKEN",
                "valueFrom": { "secretKeyRef": { "name": format!("{}-token", spec.name), "key": TOKEN_KEY } },
            }));
            // Requests and limits alike: a training replica's share is what it asked for.
            let amounts = super::workload_pod::amounts(resources, "")?;
            let mut pod_labels = labels(spec, ctx.job_id);
            pod_labels[ROLE] = json!(role.as_str());
            pod_labels[INDEX] = json!(index.to_string());
            pod_labels[REPLICA] = json!(replica);
            let (command, args) = shipping_metric_files(spec);
            let mut container = json!({
                "name": CONTAINER,
                "image": job_image(spec),
                "command": command,
                "args": args,
                "env": env,
                "ports": [{ "containerPort": port.parse::<u16>().unwrap_or(PS_PORT) }],
                "resources": super::workload_pod::requests_and_limits(&amounts),
                "volumeMounts": [
                    sdk_mount(),
                ],
            });
            if spec.working_dir.starts_with('/') {
                container["workingDir"] = json!(spec.working_dir);
            }
            let mut pod = json!({
                "restartPolicy": "Never",
                "hostname": replica,
                "subdomain": spec.name,
                "terminationGracePeriodSeconds": ctx.grace_seconds,
                "enableServiceLinks": false,
                "containers": [container],
                "volumes": [{ "name": "sdk", "configMap": { "name": spec.name, "items": sdk_items() } }],
            });
            if let Some(class) = &ctx.priority_class {
                pod["priorityClassName"] = json!(class);
            }
            let secrets = super::secrets::secret_name(&spec.name);
            super::secrets::apply(&secrets, &spec.secrets, &mut pod);
            let token = json!({ "secretKeyRef": { "name": format!("{}-token", spec.name), "key": TOKEN_KEY } });
            super::inputs::apply(
                &inputs,
                ctx.support,
                ctx.console_url,
                token,
                &super::workload_pod::requests_and_limits(&amounts),
                "datasets",
                &mut pod,
            )?;
            let environment = spec.environment_use.as_ref();
            let index = ctx.support.pip_index_url.as_deref();
            let extra = spec.extra_requirements();
            super::environment::apply(environment, extra, job_image(spec), index, &mut pod);
            let job_spec = json!({
                "backoffLimit": 0,
                "completions": 1,
                "parallelism": 1,
                "template": {
                    "metadata": { "labels": pod_labels },
                    "spec": pod,
                },
            });
            from_json(json!({
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {
                    "name": replica_job_name(&spec.name, replica),
                    "labels": pod_labels,
                    "ownerReferences": owner(parent),
                },
                "spec": job_spec,
            }))
        })
        .collect()
}

/// Runs `paddlecloud.ship` (from the mounted SDK) with the replica's command
/// as its child, where the image has `python3`: it sends the TensorBoard and
/// VisualDL files the command writes to PaddleBoard, as the console reads a
/// local job's directory. Elsewhere the command runs as it is. A program
/// that is not there is named in the container's termination message
/// ("Could not start …", which [`super::watch`] shows as the job's reason),
/// as the runtime names it when it starts the program itself.
const SHIP: &str = concat!(
    "if command -v python3 >/dev/null 2>&1; then exec python3 -c '",
    "import sys; sys.path.insert(0, \"/opt/paddlecloud/python\"); ",
    "from paddlecloud.ship import main; main()' -- \"$@\"; fi; ",
    "if ! command -v \"$1\" >/dev/null 2>&1; then ",
    "m=\"Could not start $1: no such program in the image\"; echo \"$m\" >&2; ",
    "{ echo \"$m\" >/dev/termination-log; } 2>/dev/null; exit 127; fi; exec \"$@\"",
);

/// The container's command and args: the spec's behind [`SHIP`], or the
/// image's entrypoint (no command given), which is left alone.
fn shipping_metric_files(spec: &JobSpec) -> (Vec<String>, Vec<String>) {
    if spec.command.is_empty() {
        return (Vec::new(), spec.args.clone());
    }
    let mut command = vec![
        "/bin/sh".to_owned(),
        "-c".to_owned(),
        SHIP.to_owned(),
        "paddlecloud-ship".to_owned(),
    ];
    command.extend(spec.command.iter().cloned());
    command.extend(spec.args.iter().cloned());
    (command, Vec::new())
}

/// A typed object from its JSON; a shape k8s-openapi refuses is a bug here.
pub(crate) fn from_json<T: serde::de::DeserializeOwned>(
    value: serde_json::Value,
) -> Result<T, AppError> {
    serde_json::from_value(value).map_err(|err| {
        tracing::error!(error = %err, "building a Kubernetes object");
        AppError::Internal
    })
}

/// Labels as a selector string: `a=b,c=d`.
pub fn selector(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// A label's value from an object's labels.
pub fn label<'a>(labels: &'a Option<BTreeMap<String, String>>, key: &str) -> Option<&'a str> {
    labels.as_ref()?.get(key).map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::notebooks::SDK_FILES;
    use app::models::{EnvVar, ReplicaResources};

    /// The context the tests build replicas in: job 7 of account vision.
    fn ctx<'a>(support: &'a super::super::inputs::PodSupport) -> JobContext<'a> {
        JobContext {
            job_id: 7,
            account: "vision",
            console_url: None,
            grace_seconds: 5,
            support,
            priority_class: None,
        }
    }

    fn spec() -> JobSpec {
        JobSpec {
            priority: Default::default(),
            max_runtime: None,
            secrets: vec![],
            notebook: None,
            template: None,
            pipeline: None,
            experiment: None,
            notebook_run: None,
            scoring: None,
            environment: None,
            environment_use: None,
            name: "mnist".into(),
            image: "paddlepaddle/paddle:2.6.1".into(),
            command: vec!["python".into(), "train.py".into()],
            args: vec![],
            working_dir: "/workspace".into(),
            env: vec![EnvVar {
                name: "GREETING".into(),
                value: "hi".into(),
            }],
            num_ps: 1,
            num_trainers: 2,
            ps: ReplicaResources {
                cpu: "500m".into(),
                memory: "1Gi".into(),
                gpu: 0,
            },
            trainer: ReplicaResources {
                cpu: "2".into(),
                memory: "4Gi".into(),
                gpu: 1,
            },
            datasets: vec![],
            models: vec![],
        }
    }

    #[test]
    fn every_replica_gets_a_job_with_dns_endpoints_resources_and_an_owner() {
        let mut parent = parent(&spec(), 7).unwrap();
        parent.metadata.uid = Some("uid-1".into());
        let ctx = JobContext {
            job_id: 7,
            account: "vision",
            console_url: Some("http://console"),
            grace_seconds: 5,
            support: &Default::default(),
            priority_class: Some("paddlecloud-high".into()),
        };
        let jobs = replica_jobs(&spec(), &ctx, &parent).unwrap();
        let names: Vec<_> = jobs
            .iter()
            .map(|j| j.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(names, ["mnist-ps-0", "mnist-trainer-0", "mnist-trainer-1"]);
        let t1 = serde_json::to_value(&jobs[2]).unwrap();
        assert_eq!(t1["metadata"]["ownerReferences"][0]["uid"], "uid-1");
        assert_eq!(t1["spec"]["backoffLimit"], 0);
        assert_eq!(
            t1["spec"]["template"]["spec"]["priorityClassName"],
            "paddlecloud-high"
        );
        let pod = &t1["spec"]["template"]["spec"];
        assert_eq!(pod["hostname"], "trainer-1");
        assert_eq!(pod["subdomain"], "mnist");
        let c = &pod["containers"][0];
        assert_eq!(c["resources"]["limits"]["nvidia.com/gpu"], "1");
        assert_eq!(c["resources"]["requests"]["cpu"], "2000m");
        assert_eq!(c["workingDir"], "/workspace");
        let env = |name: &str| {
            c["env"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["name"] == name)
                .cloned()
                .unwrap()
        };
        assert_eq!(
            env("PADDLE_PSERVERS_IP_PORT_LIST")["value"],
            "ps-0.mnist:6174"
        );
        assert_eq!(
            env("PADDLE_TRAINER_ENDPOINTS")["value"],
            "trainer-0.mnist:6170,trainer-1.mnist:6170"
        );
        assert_eq!(
            env("PADDLE_CURRENT_ENDPOINT")["value"],
            "trainer-1.mnist:6170"
        );
        assert_eq!(env("PADDLE_TRAINER_ID")["value"], "1");
        assert_eq!(env("GREETING")["value"], "hi");
        assert_eq!(
            env("PADDLECLOUD_JOB_TOKEN")["valueFrom"]["secretKeyRef"]["name"],
            "mnist-token"
        );
    }

    /// The console keeps time limits (`super::time_limits`): a Job's
    /// deadline would count the time it waits for room.
    #[test]
    fn a_time_limit_is_not_a_replica_jobs_active_deadline() {
        let mut s = spec();
        s.max_runtime = Some("90m".into());
        let support = Default::default();
        let ctx = ctx(&support);
        let jobs = replica_jobs(&s, &ctx, &parent(&s, 7).unwrap()).unwrap();
        for job in &jobs {
            assert_eq!(job.spec.as_ref().unwrap().active_deadline_seconds, None);
        }
    }

    #[test]
    fn a_replicas_command_runs_behind_the_metric_file_shipper_and_an_entrypoint_is_left_alone() {
        let mut s = spec();
        s.args = vec!["--epochs".into(), "3".into()];
        let (command, args) = shipping_metric_files(&s);
        assert_eq!(command[..2], ["/bin/sh", "-c"]);
        assert!(command[2].contains(SDK_DIR), "{}", command[2]);
        assert_eq!(command[4..], ["python", "train.py", "--epochs", "3"]);
        assert!(args.is_empty());
        s.command.clear();
        assert_eq!(
            shipping_metric_files(&s),
            (vec![], vec!["--epochs".to_owned(), "3".to_owned()])
        );
    }

    #[test]
    fn replicas_import_the_sdk_from_their_parent_after_their_own_pythonpath() {
        let mut s = spec();
        let parent_map = parent(&s, 7).unwrap();
        let data = parent_map.data.clone().unwrap();
        assert!(data["sdk.client.py"].contains("class"));
        assert!(data.contains_key("spec.json"));
        let support = Default::default();
        let ctx = ctx(&support);
        let pod_of = |s: &JobSpec| {
            let jobs = replica_jobs(s, &ctx, &parent_map).unwrap();
            serde_json::to_value(&jobs[1]).unwrap()["spec"]["template"]["spec"].clone()
        };
        let pythonpath = |pod: &serde_json::Value| {
            let env = pod["containers"][0]["env"].as_array().unwrap().clone();
            let found: Vec<_> = env.iter().filter(|e| e["name"] == "PYTHONPATH").collect();
            assert_eq!(found.len(), 1, "{env:?}");
            found[0]["value"].as_str().unwrap().to_owned()
        };
        let pod = pod_of(&s);
        assert_eq!(pythonpath(&pod), SDK_DIR);
        let volume = &pod["volumes"][0];
        assert_eq!(volume["configMap"]["name"], "mnist");
        let items = volume["configMap"]["items"].as_array().unwrap();
        assert_eq!(items.len(), SDK_FILES.len());
        assert!(items
            .iter()
            .any(|i| i["key"] == "sdk.__init__.py" && i["path"] == "__init__.py"));
        let mount = &pod["containers"][0]["volumeMounts"][0];
        assert_eq!(mount["mountPath"], format!("{SDK_DIR}/paddlecloud"));
        assert_eq!(mount["readOnly"], true);
        s.env.push(EnvVar {
            name: "PYTHONPATH".into(),
            value: "/workspace/lib".into(),
        });
        assert_eq!(pythonpath(&pod_of(&s)), format!("/workspace/lib:{SDK_DIR}"));
    }

    #[test]
    fn kubernetes_needs_an_image_and_names_that_fit_a_dns_label() {
        let mut s = spec();
        s.image = " ".into();
        assert_eq!(
            validate_for_kubernetes(&s).unwrap_err().field(),
            Some("image")
        );
        let mut s = spec();
        s.name = "x".repeat(60);
        assert_eq!(
            validate_for_kubernetes(&s).unwrap_err().field(),
            Some("name")
        );
        assert!(validate_for_kubernetes(&spec()).is_ok());
        // An environment with an image stands in for the job's.
        let mut s = spec();
        s.image = String::new();
        s.environment_use = Some(app::models::EnvironmentUse {
            reference: "paddlecloud/paddle-cpu:1".into(),
            image: "paddlepaddle/paddle:3.3.1".into(),
            requirements: vec![],
        });
        assert!(validate_for_kubernetes(&s).is_ok());
    }

    #[test]
    fn an_environment_runs_its_image_with_what_it_lacks_installed_by_an_init_step() {
        let mut s = spec();
        s.env.push(EnvVar {
            name: "PYTHONPATH".into(),
            value: "/workspace/lib".into(),
        });
        s.environment_use = Some(app::models::EnvironmentUse {
            reference: "team/vision:3".into(),
            image: "paddlepaddle/paddle:3.3.1".into(),
            requirements: vec!["visualdl==2.5.3".into(), "tomli-w>=1".into()],
        });
        let support = Default::default();
        let ctx = ctx(&support);
        let jobs = replica_jobs(&s, &ctx, &parent(&s, 7).unwrap()).unwrap();
        let pod = &serde_json::to_value(&jobs[1]).unwrap()["spec"]["template"]["spec"];
        let init = &pod["initContainers"][0];
        assert_eq!(init["image"], "paddlepaddle/paddle:3.3.1");
        let args: Vec<&str> = init["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(
            args[2..],
            ["/opt/paddlecloud/env", "visualdl==2.5.3", "tomli-w>=1"]
        );
        assert_eq!(pod["volumes"][1]["emptyDir"], serde_json::json!({}));
        let c = &pod["containers"][0];
        assert_eq!(c["image"], "paddlepaddle/paddle:3.3.1");
        assert_eq!(c["volumeMounts"][1]["mountPath"], "/opt/paddlecloud/env");
        let path = c["env"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == "PYTHONPATH")
            .unwrap();
        assert_eq!(
            path["value"],
            format!("/opt/paddlecloud/env:/workspace/lib:{SDK_DIR}")
        );
        // Without requirements: the image alone, no init step.
        s.environment_use.as_mut().unwrap().requirements.clear();
        let jobs = replica_jobs(&s, &ctx, &parent(&s, 7).unwrap()).unwrap();
        let pod = &serde_json::to_value(&jobs[1]).unwrap()["spec"]["template"]["spec"];
        assert!(pod["initContainers"].is_null(), "{pod}");
    }
}
