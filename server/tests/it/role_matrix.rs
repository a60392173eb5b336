//! Every REST route and every server function, asked by each kind of
//! caller: an owner, a member and a viewer of one account, the owner of
//! another account, and a site admin. Readers read (2xx, or 404 for what
//! does not exist), a viewer's every change is a 403 that changes nothing,
//! owner-only and admin-only work is a 403 for the rest, another account's
//! things are 403/404, and nothing is ever a 5xx. A route or function the
//! tables below do not place fails the test, so a new one must be placed.

use http::{header, Method, Request, StatusCode};
use serde_json::{json, Value};
use server::access_keys::SqlAccessKeys;

use crate::common::rest::{call, key_and_cookie, spec, wait_for, Answer};
use crate::common::site::{text, Site};
use crate::common::smtp::SmtpServer;
use crate::members::{join, site_mailing};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Who {
    Owner,
    Member,
    Viewer,
    Outsider,
    Admin,
}

const EVERYONE: [Who; 5] = [
    Who::Owner,
    Who::Member,
    Who::Viewer,
    Who::Outsider,
    Who::Admin,
];

/// The account "team" with one of each, and what it holds: the job `j1`,
/// the dataset `team/data` (file `a.txt`) and the model `team/m` (version 1).
struct Team {
    site: Site,
    keys: Vec<(Who, String)>,
    cookies: Vec<(Who, String)>,
    owner_id: i64,
    pod: String,
}

impl Team {
    fn key(&self, who: Who) -> &str {
        &self.keys.iter().find(|(w, _)| *w == who).unwrap().1
    }

    fn cookie(&self, who: Who) -> &str {
        &self.cookies.iter().find(|(w, _)| *w == who).unwrap().1
    }
}

async fn team() -> (Team, SmtpServer) {
    let smtp = SmtpServer::start().await;
    let site = site_mailing(crate::common::sqlite().await, &smtp).await;
    let (owner, owner_cookie) = key_and_cookie(&site, "team").await;
    let member_cookie = join(&site, &smtp, &owner, "bob@example.com", "member").await;
    let viewer_cookie = join(&site, &smtp, &owner, "carol@example.com", "viewer").await;
    let keys = SqlAccessKeys::new(site.db.pool.clone());
    let member = keys
        .create_for("team", "bob@example.com", "k", Default::default())
        .await
        .unwrap()
        .key;
    let viewer = keys
        .create_for("team", "carol@example.com", "k", Default::default())
        .await
        .unwrap()
        .key;
    let (outsider, outsider_cookie) = key_and_cookie(&site, "other").await;
    let admin = site.admin_key().await;
    let admin_cookie = site.admin_cookie().await;

    let made = call(
        &site,
        Method::POST,
        "/api/v1/jobs",
        Some(&owner),
        Some(spec("j1", "sleep 600")),
    )
    .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    wait_for(&site, &owner, "j1", "running").await;
    let pods = call(
        &site,
        Method::GET,
        "/api/v1/jobs/j1/pods",
        Some(&owner),
        None,
    )
    .await;
    let pod = pods.json()[0]["name"].as_str().unwrap_or("none").to_owned();
    for (kind, name) in [("datasets", "data"), ("models", "m")] {
        let made = call(
            &site,
            Method::POST,
            &format!("/api/v1/{kind}"),
            Some(&owner),
            Some(json!({"name": name})),
        )
        .await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    }
    let v1 = call(
        &site,
        Method::POST,
        "/api/v1/models/team/m/versions",
        Some(&owner),
        Some(json!({})),
    )
    .await;
    assert_eq!(v1.status, StatusCode::CREATED, "{}", v1.body);
    let put = send(
        &site,
        Method::PUT,
        "/api/v1/datasets/team/data/files/a.txt",
        &owner,
        "hello",
    )
    .await;
    assert_eq!(put.status, StatusCode::CREATED, "{}", put.body);
    // The dataset's version 1, which the version routes name.
    let saved = call(
        &site,
        Method::POST,
        "/api/v1/datasets/team/data/versions",
        Some(&owner),
        Some(json!({})),
    )
    .await;
    assert_eq!(saved.status, StatusCode::CREATED, "{}", saved.body);

    let members = call(&site, Method::GET, "/api/v1/members", Some(&owner), None).await;
    let owner_id = members.json()["members"][0]["user_id"].as_i64().unwrap();
    let team = Team {
        site,
        keys: vec![
            (Who::Owner, owner),
            (Who::Member, member),
            (Who::Viewer, viewer),
            (Who::Outsider, outsider),
            (Who::Admin, admin),
        ],
        cookies: vec![
            (Who::Owner, owner_cookie),
            (Who::Member, member_cookie),
            (Who::Viewer, viewer_cookie),
            (Who::Outsider, outsider_cookie),
            (Who::Admin, admin_cookie),
        ],
        owner_id,
        pod,
    };
    (team, smtp)
}

/// A raw body with a key, for file uploads.
async fn send(site: &Site, method: Method, path: &str, key: &str, body: &str) -> Answer {
    let res = site
        .send(
            Request::builder()
                .method(method)
                .uri(path)
                .header(header::AUTHORIZATION, format!("Bearer {key}"))
                .body(axum::body::Body::from(body.to_owned()))
                .unwrap(),
        )
        .await;
    let status = res.status();
    let headers = res.headers().clone();
    Answer {
        status,
        headers,
        body: text(res).await,
    }
}

/// Routes whose subject is in the query string, and the query that names
/// the team's things there.
fn query_of(template: &str) -> Option<&'static str> {
    match template {
        "/api/v1/jobs/compare.csv" => Some("?jobs=j1"),
        "/api/v1/lineage" => Some("?node=job:team/j1"),
        "/api/v1/notebooks/{name}/diff" => Some("?from=1&to=2"),
        "/api/v1/notebooks/{name}/parameters" => Some("?path=a.ipynb"),
        _ => None,
    }
}

/// The documented path with the team's things in its parameters.
fn concrete(template: &str, team: &Team) -> String {
    let query = query_of(template).unwrap_or_default();
    let in_models = template.starts_with("/api/v1/models/");
    let in_serving = template.starts_with("/api/v1/serving/");
    template
        .replace("{kind}/{owner}/{name}", "datasets/team/data")
        .replace("{kind}", "datasets")
        .replace("{owner}", "team")
        .replace(
            "{name}",
            if in_models {
                "m"
            } else if in_serving {
                "s1"
            } else {
                "j1"
            },
        )
        .replace("{pod}", &team.pod)
        .replace("{path}", "a.txt")
        .replace("{tag}", "loss")
        .replace("{file}", "vdl/vdlrecords.1.log")
        .replace("{version}", "1")
        .replace("{alias}", "production")
        .replace("{token}", "0123456789abcdef")
        .replace("{user_id}", &team.owner_id.to_string())
        .replace("{id}", "999999")
        + query
}

/// What a body-less or minimal request to a write route sends: the role
/// checks come before the body is read, so for the refused ones any body
/// does; for owner-only routes the body is one that would work.
fn body_for(method: &Method, template: &str) -> Option<Value> {
    match (method.as_str(), template) {
        ("POST", "/api/v1/invitations") => {
            Some(json!({"email": "dan@example.com", "role": "member"}))
        }
        ("PUT", "/api/v1/members/{user_id}/role") => Some(json!({"role": "viewer"})),
        ("PUT", "/api/v1/members/{user_id}/priority") => Some(json!({"high": true})),
        ("PUT", "/api/v1/members/{user_id}/caps") => {
            Some(json!({"cpu": "1", "memory": "", "gpu": "", "max_jobs": ""}))
        }
        ("POST", "/api/v1/templates/{name}/publish" | "/api/v1/environments/{name}/publish") => {
            Some(json!({"public": true}))
        }
        ("POST", "/api/v1/admin/reset-links") => {
            Some(json!({"account": "team", "email": "ann@example.com"}))
        }
        ("POST", "/api/v1/jobs/{name}/metrics") => {
            Some(json!([{"tag": "loss", "step": 1, "value": 1.0, "wall_time": 1.0}]))
        }
        ("PUT", "/api/v1/{kind}/{owner}/{name}/versions/{version}/tags") => {
            Some(json!({"tags": ["x"]}))
        }
        ("PUT", "/api/v1/models/{owner}/{name}/aliases/{alias}") => Some(json!({"version": 1})),
        ("PUT", "/api/v1/{kind}/{owner}/{name}/public") => Some(json!({"public": true})),
        ("POST", "/api/v1/{kind}/{owner}/{name}/shares") => Some(json!({"account": "other"})),
        ("POST", "/api/v1/serving") => Some(json!({"name": "s2", "model": "team/m"})),
        ("POST", "/api/v1/notebooks/{name}/runs") => Some(json!({"path": "a.ipynb"})),
        ("POST", "/api/v1/scorings") => {
            Some(json!({"model": "team/m", "dataset": "data:1", "output": "out"}))
        }
        ("POST", "/api/v1/schedules") => Some(json!({
            "name": "nightly", "cron": "0 3 * * *",
            "target": {"kind": "template", "name": "t1"},
        })),
        ("POST", "/api/v1/notebooks/{name}/shares") => {
            Some(json!({"path": "a.ipynb", "with": "members"}))
        }
        ("POST", "/api/v1/notebook-shares/{id}/copy" | "/api/v1/shared/notebooks/{token}/copy") => {
            Some(json!({"notebook": "n1"}))
        }
        ("POST", "/api/v1/serving/{name}/release") => Some(json!({"action": "rollback"})),
        ("POST", "/api/v1/jobs") => Some(spec("x1", "true")),
        ("POST", "/api/v1/experiments/{name}/extend") => Some(json!({"more": 1})),
        ("POST", "/api/v1/local-runs") => Some(json!({"client_id": "matrix"})),
        ("POST", "/api/v1/local-runs/{name}/end") => Some(json!({"outcome": "failed"})),
        ("POST", "/api/v1/local-runs/{name}/log") => Some(json!({"offset": 0, "text": "x\n"})),
        ("PUT", "/api/v1/quota") => {
            Some(json!({"cpu": "", "memory": "", "gpu": "", "max_jobs": ""}))
        }
        ("GET" | "DELETE", _) => None,
        _ => Some(json!({})),
    }
}

/// Routes anyone may call about themselves (or with no key at all): a
/// viewer follows what they can read, too.
fn personal(template: &str) -> bool {
    template.starts_with("/api/v1/me")
        || template.starts_with("/api/v1/notifications/")
        || template.starts_with("/api/v1/password-resets")
        || template.starts_with("/api/v1/email-confirmations")
        || template.starts_with("/api/v1/shared/")
}

/// Routes only a site admin may change with.
fn admin_only(method: &Method, template: &str) -> bool {
    template.starts_with("/api/v1/admin/")
        || template == "/metrics"
        || (method == Method::PUT && template == "/api/v1/quota")
        || template.ends_with("/publish")
}

/// Routes only the account's owners may use.
fn owner_only(method: &Method, template: &str) -> bool {
    template.starts_with("/api/v1/invitations")
        || (template.starts_with("/api/v1/members/") && method != Method::GET)
        || template.starts_with("/api/v1/audit")
        || (template.starts_with("/api/v1/secrets/") && method != Method::GET)
}

/// Whether the route is about the team's own things (so another account's
/// owner must not reach them).
fn teams(template: &str) -> bool {
    // A secret's name is one in the caller's own account: another account's
    // owner sets or deletes their own, never the team's.
    if template.starts_with("/api/v1/secrets/") {
        return false;
    }
    template.contains("{name}")
        || template.contains("{owner}")
        || template.contains("{user_id}")
        || query_of(template).is_some()
}

async fn every_rest_route_checks_the_callers_role(team: &Team) {
    let site = &team.site;
    let doc = call(site, Method::GET, "/api/v1/openapi.json", None, None)
        .await
        .json();
    let mut checked = 0;
    for (template, ops) in doc["paths"].as_object().unwrap() {
        for method_name in ops.as_object().unwrap().keys() {
            let method: Method = method_name.to_uppercase().parse().unwrap();
            let path = concrete(template, team);
            let write = method != Method::GET;
            for who in EVERYONE {
                // The allowed callers' writes are tested where they are the
                // subject; here they would change what the matrix reads.
                let refused_kind = write
                    && !personal(template)
                    && (who == Who::Viewer
                        || who == Who::Outsider
                        || (who == Who::Member
                            && (owner_only(&method, template) || admin_only(&method, template))));
                if write && !refused_kind {
                    continue;
                }
                let got = call(
                    site,
                    method.clone(),
                    &path,
                    Some(team.key(who)),
                    body_for(&method, template),
                )
                .await;
                let what = format!("{who:?} {method} {path}: {} {}", got.status, got.body);
                assert!(got.status.as_u16() < 500, "{what}");
                checked += 1;
                if personal(template) {
                    continue;
                }
                if admin_only(&method, template) && who != Who::Admin {
                    assert_eq!(got.status, StatusCode::FORBIDDEN, "{what}");
                } else if who == Who::Outsider && teams(template) {
                    assert!(
                        matches!(got.status, StatusCode::FORBIDDEN | StatusCode::NOT_FOUND),
                        "{what}"
                    );
                } else if owner_only(&method, template) && matches!(who, Who::Member | Who::Viewer)
                {
                    assert_eq!(got.status, StatusCode::FORBIDDEN, "{what}");
                } else if write && who == Who::Viewer {
                    assert_eq!(got.status, StatusCode::FORBIDDEN, "{what}");
                    assert!(got.body.contains("Viewers can look"), "{what}");
                } else if matches!(who, Who::Owner | Who::Member | Who::Viewer) {
                    // Readers read: what exists answers 2xx, the fixture-less
                    // names (`s1`, the tag `loss`) 404; never a refusal.
                    assert!(
                        got.status.is_success() || got.status == StatusCode::NOT_FOUND,
                        "{what}"
                    );
                }
            }
        }
    }
    assert!(checked > 150, "only {checked} calls");
}

/// Every server function, by what it does (a new one must be placed here).
const SERVER_FN_WRITES: &[(&str, &str)] = &[
    ("submit_job", "form[name]=v1&form[command]=true&form[num_ps]=0&form[num_trainers]=1&form[ps_cpu]=1&form[ps_memory]=1Gi&form[trainer_cpu]=1&form[trainer_memory]=1Gi"),
    ("stop_job", "name=j1"),
    ("stack_dump_job", "name=j1"),
    ("delete_job", "name=j1"),
    ("create_asset", "kind=dataset&form[name]=more&form[description]=&form[tags]="),
    ("change_asset", "asset[kind]=dataset&asset[owner]=team&asset[name]=data&change[op]=delete"),
    ("launch_serving", "form[name]=s2&form[model]=team/m&form[version]=1&form[file]=&form[replicas]=1&form[cpu]=1&form[memory]=1Gi"),
    ("scale_serving", "name=s1&replicas=2"),
    ("stop_serving", "name=s1"),
    ("delete_serving", "name=s1"),
    ("release_serving", "name=s1&change[action]=rollback"),
    ("create_notebook", "form[name]=n2&form[cpu]=1&form[memory]=1Gi"),
    ("start_notebook", "name=n1"),
    ("stop_notebook", "name=n1"),
    ("keep_notebook", "name=n1"),
    ("delete_notebook", "name=n1"),
    ("restore_notebook_version", "name=n1&id=1"),
    ("run_notebook", "name=n1&path=a.ipynb&version=1&job[name]=r1"),
    ("score_dataset", "form[model]=team/m&form[dataset]=data:1&form[output]=out&form[replicas]=1"),
    ("retry_scoring", "name=j1"),
    ("create_schedule", "form[name]=s9&form[cron]=0+3+*+*+*&form[template]=t1"),
    ("pause_schedule", "name=nope&paused=true"),
    ("delete_schedule", "name=nope"),
    ("create_alert_rule", "form[name]=r9&form[tag]=loss&form[kind]=not_finite"),
    ("delete_alert_rule", "name=nope"),
    ("share_notebook_file", "name=n1&form[path]=a.ipynb&form[with]=members"),
    ("revoke_notebook_share", "name=n1&id=1"),
    ("copy_shared_notebook", "share=1&token=&into=n1"),
    ("run_template", "name=t1&version=1&job_name=from-t1"),
    ("save_environment", "form[name]=e2"),
    ("stop_pipeline", "name=nope"),
    ("create_pipeline", "form[name]=p&form[nodes][0][name]=a&form[nodes][0][template]=team/t1"),
    ("retry_pipeline", "name=nope"),
    ("create_experiment_form", "form[name]=e&form[template]=team/t1&form[metric]=loss&form[max_trials]=2&form[parallel_trials]=1&form[max_failed_trials]=1"),
    ("pause_experiment", "name=nope"),
    ("resume_experiment", "name=nope"),
    ("stop_experiment", "name=nope"),
    ("extend_experiment", "name=nope&more=1"),
    ("retry_experiment", "name=nope"),
    ("save_template", "form[name]=t2&form[job]=%7B%22command%22%3A%5B%22true%22%5D%2C%22num_trainers%22%3A1%7D"),
];
const SERVER_FN_OWNERS: &[(&str, &str)] = &[
    ("invite_member", "email=dan%40example.com&role=member"),
    ("cancel_invitation", "id=999999"),
    ("change_role", "user_id=OWNER&role=viewer"),
    ("remove_member", "user_id=OWNER"),
    (
        "set_member_caps",
        "user_id=OWNER&caps[cpu]=1&caps[memory]=&caps[gpu]=&caps[max_jobs]=",
    ),
    ("account_audit", ""),
    ("set_member_priority", "user_id=OWNER&high=on"),
    ("set_secret", "form[name]=s9&form[value]=hunter2"),
    ("delete_secret", "name=nope"),
];
const SERVER_FN_ADMINS: &[(&str, &str)] = &[
    (
        "set_quota",
        "account=team&form[cpu]=&form[memory]=&form[gpu]=&form[max_jobs]=",
    ),
    ("site_accounts", ""),
    ("idle_gpu_jobs", ""),
    ("admin_reset_link", "account=team&email=ann%40example.com"),
];
/// Reads, and what a user does about themself (sessions, keys, password,
/// accounts): not a matter of role.
const SERVER_FN_OTHERS: &[(&str, &str)] = &[
    ("list_assets", "kind=dataset"),
    (
        "open_asset",
        "source[asset][kind]=dataset&source[asset][owner]=team&source[asset][name]=data&dir=",
    ),
    (
        "preview_file",
        "source[asset][kind]=dataset&source[asset][owner]=team&source[asset][name]=data&path=a.txt",
    ),
    ("cluster_health", ""),
    ("list_jobs", ""),
    ("log_console", "job=j1&lines=10"),
    ("list_serving", ""),
    ("serving_models", ""),
    ("serving_traffic_chart", "name=s1"),
    ("serving_release_data", "name=s1"),
    ("lineage_graph", "node=job%3Ateam%2Fj1"),
    ("list_notebooks", ""),
    ("read_notebook_history", "name=n1&path="),
    ("compare_notebook_versions", "name=n1&from=1&to=2"),
    ("read_notebook_run_form", "name=n1&path=a.ipynb"),
    ("list_schedules", ""),
    ("read_notifications", "query[status]=delivered"),
    ("read_alerts", ""),
    ("read_secrets", ""),
    (
        "subscribe",
        "form[kind]=account&form[channel]=email&form[on_failed]=on",
    ),
    ("test_subscription", "id=999999"),
    ("unsubscribe", "id=999999"),
    ("read_schedule", "name=nope"),
    ("notebook_file_shares", "name=n1"),
    ("shared_notebook_files", ""),
    ("notebook_link", "token=pcf_nope"),
    ("list_templates", ""),
    ("get_template", "name=t1"),
    ("job_as_template", "job=j1"),
    ("get_job", "name=j1"),
    ("job_overview", "name=j1"),
    ("get_local_run", "name=nope"),
    ("list_environments", ""),
    ("get_environment", "name=minimal&owner=paddlecloud"),
    ("list_pipelines", ""),
    ("get_pipeline", "name=nope"),
    ("list_experiments", ""),
    ("experiment_page", "name=nope"),
    ("new_experiment_form", "template=team%2Ft1"),
    ("resource_charts", "job=j1"),
    ("quota_view", ""),
    ("job_queue", ""),
    ("quota_left", ""),
    ("cluster_room", ""),
    ("board_jobs", ""),
    ("board_charts", ""),
    ("compare_runs", "query[jobs][0]=j1"),
    ("members", ""),
    ("my_accounts", ""),
    ("current_user", ""),
    ("sessions", ""),
    ("access_keys", ""),
    ("sign_up", ""),
    ("sign_in", ""),
    ("sign_in_options", ""),
    ("sign_in_directory", ""),
    ("sign_out", ""),
    ("revoke_session", ""),
    ("change_password", ""),
    ("request_password_reset", ""),
    ("reset_password", ""),
    ("confirm_email", ""),
    ("resend_confirmation", ""),
    ("create_access_key", ""),
    ("revoke_access_key", ""),
    ("switch_account", ""),
    ("invitation", ""),
    ("accept_invitation", ""),
];

async fn every_server_function_checks_the_callers_role(team: &Team) {
    let site = &team.site;
    let placed: Vec<&str> = [
        SERVER_FN_WRITES,
        SERVER_FN_OWNERS,
        SERVER_FN_ADMINS,
        SERVER_FN_OTHERS,
    ]
    .concat()
    .iter()
    .map(|(name, _)| *name)
    .collect();
    let mut registered: Vec<String> = leptos::server_fn::axum::server_fn_paths()
        .map(|(path, _)| path.trim_start_matches("/api/").to_owned())
        .collect();
    registered.sort();
    for name in &registered {
        assert!(
            placed.contains(&name.as_str()),
            "server function {name} is not in the role matrix"
        );
    }
    assert!(registered.len() >= 40, "{registered:?}");

    let post = |name: &str, body: &str, who: Who| {
        let body = body.replace("OWNER", &team.owner_id.to_string());
        let path = format!("/api/{name}");
        let cookie = team.cookie(who).to_owned();
        async move {
            let res = site.fetch_post(&path, &body, Some(&cookie)).await;
            (res.status(), text(res).await)
        }
    };
    for (name, body) in SERVER_FN_WRITES {
        for who in [Who::Viewer] {
            let (status, text) = post(name, body, who).await;
            assert_eq!(status, StatusCode::FORBIDDEN, "{who:?} {name}: {text}");
            assert!(text.contains("Viewers can look"), "{who:?} {name}: {text}");
        }
    }
    for (name, body) in SERVER_FN_OWNERS {
        for who in [Who::Member, Who::Viewer] {
            let (status, text) = post(name, body, who).await;
            assert_eq!(status, StatusCode::FORBIDDEN, "{who:?} {name}: {text}");
        }
    }
    for (name, body) in SERVER_FN_ADMINS {
        for who in [Who::Owner, Who::Member, Who::Viewer, Who::Outsider] {
            let (status, text) = post(name, body, who).await;
            // Another account's is not there, as far as outsiders know.
            let hidden = who == Who::Outsider && status == StatusCode::NOT_FOUND;
            assert!(
                status == StatusCode::FORBIDDEN || hidden,
                "{who:?} {name}: {status} {text}"
            );
        }
    }
    // Reads answer everyone in the account (a bad or missing argument is a
    // 400, a missing thing a 404, never a refusal); nothing is ever a 5xx.
    for (name, body) in SERVER_FN_OTHERS {
        if [
            "sign_out",
            "revoke_session",
            "change_password",
            "switch_account",
        ]
        .contains(name)
        {
            continue; // would end or move the session the rest uses
        }
        for who in EVERYONE {
            let (status, text) = post(name, body, who).await;
            assert!(status.as_u16() < 500, "{who:?} {name}: {status} {text}");
            if matches!(who, Who::Owner | Who::Member | Who::Viewer) && !body.is_empty() {
                assert!(
                    status.is_success()
                        || status.is_redirection()
                        || status == StatusCode::NOT_FOUND,
                    "{who:?} {name}: {status} {text}"
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_route_and_server_function_checks_the_callers_role() {
    let (team, _smtp) = team().await;
    every_rest_route_checks_the_callers_role(&team).await;
    every_server_function_checks_the_callers_role(&team).await;

    // What the refused callers tried changed nothing.
    let owner = team.key(Who::Owner);
    let job = call(
        &team.site,
        Method::GET,
        "/api/v1/jobs/j1",
        Some(owner),
        None,
    )
    .await;
    assert_eq!(job.json()["status"], "running", "{}", job.body);
    let file = call(
        &team.site,
        Method::GET,
        "/api/v1/datasets/team/data/files/a.txt",
        Some(owner),
        None,
    )
    .await;
    assert_eq!(file.body, "hello");
    let members = call(
        &team.site,
        Method::GET,
        "/api/v1/members",
        Some(owner),
        None,
    )
    .await
    .json();
    let roles: Vec<&str> = members["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["owner", "member", "viewer"]);
    assert_eq!(members["invitations"], json!([]));

    // The site admin sees every account, its people and its use.
    let listed = call(
        &team.site,
        Method::GET,
        "/api/v1/admin/accounts",
        Some(team.key(Who::Admin)),
        None,
    )
    .await;
    let listed = listed.json();
    let row = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["account"]["name"] == "team")
        .unwrap();
    assert_eq!(row["members"], 3);
    assert_eq!(row["owners"], json!(["ann@example.com"]));
    assert_eq!(row["quota"]["jobs"], 1, "j1 runs");
    let page = text(team.site.get("/admin", Some(team.cookie(Who::Admin))).await).await;
    assert!(page.contains("data-testid=\"site-accounts\""), "{page}");
    assert!(page.contains(">other<"), "{page}");
    assert!(page.contains("/api/v1/audit.csv?account=team"), "{page}");
    let csv = call(
        &team.site,
        Method::GET,
        "/api/v1/audit.csv?account=team",
        Some(team.key(Who::Admin)),
        None,
    )
    .await;
    assert!(csv.body.contains("member.joined"), "{}", csv.body);
    let page = text(team.site.get("/admin", Some(team.cookie(Who::Owner))).await).await;
    assert!(
        page.contains("Only site admins see every account."),
        "{page}"
    );

    // A member does what members do: submits, and stops others' jobs.
    let member = team.key(Who::Member);
    let made = call(
        &team.site,
        Method::POST,
        "/api/v1/jobs",
        Some(member),
        Some(spec("m1", "sleep 30")),
    )
    .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    let started_by_owner = call(
        &team.site,
        Method::POST,
        "/api/v1/jobs",
        Some(owner),
        Some(spec("o1", "sleep 30")),
    )
    .await;
    assert_eq!(started_by_owner.status, StatusCode::CREATED);
    let stopped = call(
        &team.site,
        Method::POST,
        "/api/v1/jobs/o1/stop",
        Some(member),
        None,
    )
    .await;
    assert!(stopped.status.is_success(), "{}", stopped.body);
    for job in ["m1", "j1"] {
        let stopped = call(
            &team.site,
            Method::POST,
            &format!("/api/v1/jobs/{job}/stop"),
            Some(member),
            None,
        )
        .await;
        assert!(stopped.status.is_success(), "{}", stopped.body);
    }
}
