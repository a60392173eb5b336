//! An environment on Kubernetes: its image runs the pod, and its pip
//! requirements that the image lacks are installed by an init container
//! into a volume the main container finds on `PYTHONPATH`, with the
//! programs they bring (`bin/`) first on `PATH`.

use app::models::EnvironmentUse;
use serde_json::{json, Value};

/// Where the init step installs what the image lacks.
pub const TARGET: &str = "/opt/paddlecloud/env";
/// The init container's and the volume's name.
const NAME: &str = "environment";

/// The init step: installs only the requirements the image does not
/// already satisfy (read with pip's own `packaging`), so an image built for
/// the environment starts at once. Requirements are arguments, never
/// shell: each was checked to be a package from an index.
const INSTALL: &str = r#"import subprocess, sys
from importlib import metadata
try:
    from packaging.requirements import Requirement
except ImportError:
    from pip._vendor.packaging.requirements import Requirement
missing = []
for line in sys.argv[2:]:
    try:
        r = Requirement(line)
        if r.marker is not None and not r.marker.evaluate():
            continue
        if r.specifier.contains(metadata.version(r.name), prereleases=True):
            print("in the image:", line, flush=True)
            continue
    except Exception:
        pass
    missing.append(line)
if missing:
    print("installing:", " ".join(missing), flush=True)
    subprocess.check_call([sys.executable, "-m", "pip", "install", "--no-input",
        "--disable-pip-version-check", "--target", sys.argv[1], *missing])
else:
    print("The image has every requirement.", flush=True)
"#;

/// Runs the container's command with the environment's `bin/` first on
/// `PATH`. A container's `env` can only replace the image's `PATH`, not
/// extend it, so a shell does it (an environment's image has `python3` for
/// its init step, and a shell beside it).
const ON_PATH: &str = "PATH=\"/opt/paddlecloud/env/bin:$PATH\"; export PATH; exec \"$@\"";

/// The image a pod runs: its environment's, else `own` (the spec's, or
/// the backend's default).
pub fn image<'a>(environment: Option<&'a EnvironmentUse>, own: &'a str) -> &'a str {
    environment
        .map(|e| e.image.trim())
        .filter(|i| !i.is_empty())
        .unwrap_or(own.trim())
}

/// Adds an environment to a pod spec whose first container runs in it:
/// the init step (installing its requirements and `extra` ones, such as
/// what a notebook's server needs, from `index` if given, else PyPI), the
/// shared volume, `PYTHONPATH` (ahead of one the container sets) and
/// `PATH` (through [`ON_PATH`], for a container with a command; one that
/// runs its image's entrypoint is left to it). Init containers, volumes and
/// mounts the pod has already are kept.
pub fn apply(
    environment: Option<&EnvironmentUse>,
    extra: &[&str],
    image: &str,
    index: Option<&str>,
    pod: &mut Value,
) {
    let Some(environment) = environment else {
        return;
    };
    let mut requirements: Vec<&str> = environment
        .requirements
        .iter()
        .map(String::as_str)
        .collect();
    requirements.extend(extra);
    if requirements.is_empty() {
        return;
    }
    let mut args = vec![json!("-c"), json!(INSTALL), json!(TARGET)];
    args.extend(requirements.iter().map(|r| json!(r)));
    let mount = json!({ "name": NAME, "mountPath": TARGET });
    push(
        pod,
        "initContainers",
        json!({
            "name": NAME,
            "image": image,
            "command": ["python3"],
            "args": args,
            "env": index_env(index),
            "volumeMounts": [mount],
            "terminationMessagePolicy": "FallbackToLogsOnError",
        }),
    );
    push(pod, "volumes", json!({ "name": NAME, "emptyDir": {} }));
    let container = &mut pod["containers"][0];
    push(container, "volumeMounts", mount);
    let env = container["env"]
        .as_array_mut()
        .expect("a container has env");
    add_to_pythonpath(env, TARGET, true);
    let command = container["command"].as_array().cloned().unwrap_or_default();
    if !command.is_empty() {
        let mut wrapped = vec![json!("sh"), json!("-c"), json!(ON_PATH), json!("sh")];
        wrapped.extend(command);
        if let Some(args) = container.as_object_mut().and_then(|c| c.remove("args")) {
            wrapped.extend(args.as_array().cloned().unwrap_or_default());
        }
        container["command"] = Value::Array(wrapped);
    }
}

/// pip's settings for an index: `PIP_INDEX_URL`, and `PIP_TRUSTED_HOST`
/// for one served over plain HTTP (an index inside the cluster).
fn index_env(index: Option<&str>) -> Value {
    let Some(url) = index else {
        return json!([]);
    };
    let mut env = vec![json!({ "name": "PIP_INDEX_URL", "value": url })];
    if let Some(rest) = url.strip_prefix("http://") {
        let host = rest.split(['/', ':']).next().unwrap_or_default();
        env.push(json!({ "name": "PIP_TRUSTED_HOST", "value": host }));
    }
    Value::Array(env)
}

/// Puts `dir` on the `PYTHONPATH` of a container's `env` list, ahead of
/// what is there (`first`) or after it, or as the whole of it if unset.
pub fn add_to_pythonpath(env: &mut Vec<Value>, dir: &str, first: bool) {
    match env.iter_mut().find(|e| e["name"] == "PYTHONPATH") {
        Some(theirs) => {
            let value = theirs["value"].as_str().unwrap_or_default();
            let joined = if first {
                format!("{dir}:{value}")
            } else {
                format!("{value}:{dir}")
            };
            theirs["value"] = json!(joined);
        }
        None => env.push(json!({ "name": "PYTHONPATH", "value": dir })),
    }
}

/// Appends `item` to the list at `key`, making the list if there is none.
pub(crate) fn push(object: &mut Value, key: &str, item: Value) {
    match object[key].as_array_mut() {
        Some(list) => list.push(item),
        None => object[key] = json!([item]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_init_step_installs_from_the_consoles_index_trusting_a_plain_http_one() {
        let env = index_env(Some("http://10.0.0.5:3141/simple/"));
        assert_eq!(
            env[0],
            json!({ "name": "PIP_INDEX_URL", "value": "http://10.0.0.5:3141/simple/" })
        );
        assert_eq!(
            env[1],
            json!({ "name": "PIP_TRUSTED_HOST", "value": "10.0.0.5" })
        );
        let env = index_env(Some("https://mirror.example.com/simple"));
        assert_eq!(env.as_array().unwrap().len(), 1, "{env}");
        assert_eq!(index_env(None), json!([]));
    }

    fn environment() -> EnvironmentUse {
        EnvironmentUse {
            reference: "acme/demo:1".into(),
            image: "python:3.11-slim".into(),
            requirements: vec!["pcdemo==1.0".into()],
        }
    }

    /// `pod` with [`environment`] applied.
    fn in_environment(pod: &mut Value) -> &Value {
        apply(Some(&environment()), &[], "python:3.11-slim", None, pod);
        pod
    }

    #[test]
    fn the_environments_programs_are_first_on_the_path_of_the_containers_command() {
        let mut pod = json!({ "containers": [{
            "name": "serving", "env": [],
            "command": ["python3", "serve.py"], "args": ["--port", "8080"],
        }] });
        let container = &in_environment(&mut pod)["containers"][0];
        assert!(ON_PATH.starts_with(&format!("PATH=\"{TARGET}/bin:$PATH\"")));
        assert_eq!(
            container["command"],
            json!(["sh", "-c", ON_PATH, "sh", "python3", "serve.py", "--port", "8080"])
        );
        assert_eq!(container["args"], Value::Null);
        // The kubelet expands `$(NAME)` in commands: the wrapper has none.
        assert!(!ON_PATH.contains("$("));
    }

    #[test]
    fn a_container_that_runs_its_images_entrypoint_is_left_to_it() {
        let mut pod = json!({ "containers": [{ "name": "paddle", "env": [], "args": ["x"] }] });
        let container = &in_environment(&mut pod)["containers"][0];
        assert_eq!(container["command"], Value::Null);
        assert_eq!(container["args"], json!(["x"]));
    }
}
