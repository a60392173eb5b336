//! Who gets into a notebook's JupyterLab, and with what, on the local
//! executor (a real `jupyter lab` behind the console on a real socket):
//! the owner's access key opens it as Jupyter's own clients send a token
//! (a real Jupyter client library drives a kernel over its WebSocket),
//! nobody else's key does; the notebook's Jupyter token is in no page or
//! answer of the proxy, nor anywhere another process could read it (the
//! server's argv and environment, its kernels', its runtime file, its log),
//! and JupyterLab's own port refuses everything that did not come through
//! the console. Skipped without a Python that has jupyterlab, unless
//! `PADDLECLOUD_REQUIRE_JUPYTER=1` (as `make test` sets).

use std::path::Path;

use http::{Method, StatusCode};
use serde_json::{json, Value};
use server::console::Config;

use crate::common;
use crate::common::rest::{call, key_and_cookie};
use crate::common::site::Site;
use crate::notebooks::{http, jupyter_python, member_of, running_notebook, start_kernel};

async fn socket_site(python: &Path) -> (Site, String) {
    common::site::on_socket(|config, _, _| Config {
        notebook_python: Some(python.display().to_string()),
        notebook_probe_secs: 3600,
        ..config
    })
    .await
}

/// Runs `code` in a new kernel of the notebook at `server` (its URL up to
/// the notebook's base path) with `jupyter_kernel_client`, authenticated
/// by `key` as that library sends a server token (`Authorization: Bearer`
/// over HTTP, `?token=` on the kernel's WebSocket); the reply it returns.
fn jupyter_client_runs(python: &Path, server: &str, key: &str, code: &str) -> Value {
    let script = r#"
import json, sys
from jupyter_kernel_client import JupyterKernelClient
server, key, code = sys.argv[1:4]
with JupyterKernelClient(server_url=server, token=key) as kernel:
    reply = kernel.execute(code, timeout=60)
print("REPLY " + json.dumps(reply, default=str))
"#;
    let out = std::process::Command::new(python)
        .args(["-c", script, server, key, code])
        .output()
        .expect("the test venv's Python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the Jupyter client failed: {stdout}\n{stderr}"
    );
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("REPLY "))
        .unwrap_or_else(|| panic!("no reply: {stdout}\n{stderr}"));
    serde_json::from_str(line).unwrap()
}

/// The text a kernel's reply printed on stdout.
fn printed(reply: &Value) -> String {
    reply["outputs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|o| o["output_type"] == "stream")
        .filter_map(|o| o["text"].as_str())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_owners_key_opens_a_notebook_and_a_jupyter_client_runs_code_over_the_kernel_websocket()
{
    let Some(python) = jupyter_python() else {
        return;
    };
    let (site, url) = socket_site(python).await;
    let (key, _) = key_and_cookie(&site, "keyed").await;
    let (stranger_key, _) = key_and_cookie(&site, "elsewhere").await;
    running_notebook(&site, &key, "scripted", json!({})).await;
    let base = format!("{url}/notebooks/keyed/scripted");
    let client = http();
    let status = |auth: Option<String>, path: &'static str| {
        let (client, base) = (client.clone(), base.clone());
        async move {
            let mut req = client.get(format!("{base}{path}"));
            if let Some(auth) = auth {
                req = req.header("authorization", auth);
            }
            req.send().await.unwrap().status()
        }
    };

    // The owner's key, each way Jupyter's clients send a token.
    assert_eq!(
        status(Some(format!("Bearer {key}")), "/api/status").await,
        StatusCode::OK
    );
    assert_eq!(
        status(Some(format!("token {key}")), "/api/status").await,
        StatusCode::OK
    );
    let in_query = client
        .get(format!("{base}/api/status?token={key}"))
        .send()
        .await
        .unwrap();
    assert_eq!(in_query.status(), StatusCode::OK);
    // JupyterLab's page too: a program is not sent to sign in.
    assert_eq!(
        status(Some(format!("Bearer {key}")), "/lab").await,
        StatusCode::OK
    );

    // A real Jupyter client library: a kernel started over HTTP, code run
    // over the kernel's WebSocket, all through the console.
    let reply = jupyter_client_runs(
        python,
        &base,
        &key,
        "import os\nprint('ANSWER', 6 * 7)\n\
         print('SECRETS', sorted(k for k in os.environ if k.startswith(('JUPYTER_TOKEN', 'PADDLECLOUD_LAB'))))",
    );
    assert_eq!(reply["status"], "ok", "{reply}");
    let out = printed(&reply);
    assert!(out.contains("ANSWER 42"), "{reply}");
    // The kernel inherited no token of its server.
    assert!(out.contains("SECRETS []"), "{reply}");

    // Anyone else's key: the notebook is its owner's alone.
    let account = site.owner("keyed").await.account;
    let member_key = member_of(&site, &account).await;
    for (who, auth) in [
        ("another member", format!("Bearer {member_key}")),
        ("another account", format!("Bearer {stranger_key}")),
        ("another member, as a token", format!("token {member_key}")),
    ] {
        assert_eq!(
            status(Some(auth), "/api/status").await,
            StatusCode::NOT_FOUND,
            "{who}"
        );
    }
    let member_query = client
        .get(format!("{base}/api/status?token={member_key}"))
        .send()
        .await
        .unwrap();
    assert_eq!(member_query.status(), StatusCode::NOT_FOUND);
    // A key that is no key is told so.
    assert_eq!(
        status(Some("Bearer pck_nonsense".to_owned()), "/api/status").await,
        StatusCode::UNAUTHORIZED
    );
    // The owner's key never reached JupyterLab (its log has every request).
    let log = std::fs::read_to_string(site.db.dir().join("notebooks/keyed/scripted/jupyter.log"))
        .unwrap();
    assert!(!log.contains(&key), "the console's key reached JupyterLab");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_page_or_file_holds_the_jupyter_token_and_jupyterlabs_own_port_refuses_what_skips_the_console(
) {
    let Some(python) = jupyter_python() else {
        return;
    };
    let (site, url) = socket_site(python).await;
    let (key, cookie) = key_and_cookie(&site, "sealed").await;
    running_notebook(&site, &key, "quiet", json!({})).await;
    let (token,): (String,) =
        sqlx::query_as("SELECT jupyter_token FROM notebooks WHERE name = 'quiet'")
            .fetch_one(&site.db.pool)
            .await
            .unwrap();
    assert!(token.len() >= 20, "{token}");
    let lab = "/notebooks/sealed/quiet/";
    let client = http();

    // Every kind of answer the proxy serves: pages, their settings, the
    // REST API, the user's identity; none carries the token, in its body
    // or its headers.
    let kernel = start_kernel(&url, lab, &cookie).await;
    for path in [
        "lab",
        "lab/tree",
        "api/status",
        "api/me",
        "api/kernels",
        "api/sessions",
        "api/contents",
        "lab/api/settings",
        "lab/api/workspaces",
    ] {
        let answer = client
            .get(format!("{url}{lab}{path}"))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap();
        let status = answer.status();
        let headers = format!("{:?}", answer.headers());
        let body = answer.text().await.unwrap();
        assert!(status.is_success(), "{path}: {status} {body}");
        assert!(!body.contains(&token), "{path} carries the token");
        assert!(!headers.contains(&token), "{path}'s headers carry it");
        if path == "lab" {
            // JupyterLab's page configuration: an empty token.
            assert!(body.contains(r#""token": """#), "{body}");
        }
    }

    // Nothing another process can read holds it: the server's and its
    // kernel's argv and environment, its runtime file, its log.
    let dir = site.db.dir().join("notebooks/sealed/quiet");
    let server: i32 = std::fs::read_to_string(dir.join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let family = descendants(server);
    let seen = family.len();
    for pid in family {
        for file in ["cmdline", "environ"] {
            let bytes = std::fs::read(format!("/proc/{pid}/{file}")).unwrap_or_default();
            assert!(
                !String::from_utf8_lossy(&bytes).contains(&token),
                "process {pid}'s {file} holds the token"
            );
        }
    }
    assert!(seen >= 2, "the server and its kernel: {seen} processes");
    for file in walk(&dir.join("runtime"))
        .into_iter()
        .chain([dir.join("jupyter.log")])
    {
        let text = std::fs::read(&file).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&text).contains(&token),
            "{} holds the token",
            file.display()
        );
    }

    // JupyterLab's own port, straight: nothing gets in without the token,
    // which only the console holds; not even the console's own cookie.
    let info = walk(&dir.join("runtime"))
        .into_iter()
        .find(|f| {
            f.extension().is_some_and(|e| e == "json") && f.to_string_lossy().contains("jpserver-")
        })
        .expect("JupyterLab's runtime file");
    let info: Value = serde_json::from_slice(&std::fs::read(info).unwrap()).unwrap();
    assert_eq!(info["token"], "", "{info}");
    let direct = format!("http://127.0.0.1:{}{lab}", info["port"]);
    for (what, request) in [
        ("nothing", client.get(format!("{direct}api/status"))),
        (
            "the console's cookie",
            client
                .get(format!("{direct}api/status"))
                .header("cookie", &cookie),
        ),
        (
            "the owner's key",
            client.get(format!("{direct}api/status")).bearer_auth(&key),
        ),
        (
            "a kernel request",
            client.get(format!("{direct}api/kernels/{kernel}")),
        ),
        (
            "the token in the query",
            client.get(format!("{direct}api/status?token={token}")),
        ),
    ] {
        let answer = request.send().await.unwrap();
        assert_eq!(answer.status(), StatusCode::FORBIDDEN, "{what}");
    }
    let page = client.get(format!("{direct}lab")).send().await.unwrap();
    assert!(
        !page.status().is_success(),
        "the lab page opened without the console: {}",
        page.status()
    );
    // Through the console, the same request works.
    let via = call(
        &site,
        Method::GET,
        "/api/v1/notebooks/quiet",
        Some(&key),
        None,
    )
    .await;
    assert_eq!(via.json()["status"], "running");
    let through = client
        .get(format!("{url}{lab}api/kernels/{kernel}"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(through.status(), StatusCode::OK);
}

/// `root` and every process under it (kernels start sessions of their own,
/// so the process group would miss them).
fn descendants(root: i32) -> Vec<i32> {
    let parents: Vec<(i32, i32)> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_string_lossy().parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // After the command's closing parenthesis: state, then ppid.
            let (_, rest) = stat.rsplit_once(')')?;
            Some((pid, rest.split_whitespace().nth(1)?.parse().ok()?))
        })
        .collect();
    let mut family = vec![root];
    let mut i = 0;
    while i < family.len() {
        let parent = family[i];
        family.extend(
            parents
                .iter()
                .filter(|(_, pp)| *pp == parent)
                .map(|(p, _)| *p),
        );
        i += 1;
    }
    family
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}
