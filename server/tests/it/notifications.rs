//! Notifications end to end (issue 44 item 1): real jobs and a pipeline on
//! the local executor, mail through the real SMTP server the tests start,
//! webhooks to a real HTTP receiver that refuses the first tries, and
//! their signatures checked by the Standard Webhooks project's own Python
//! library (an implementation the console does not share). What each user
//! sees of the log, and what they may not touch.

use std::io::Write;
use std::net::SocketAddr;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use http::{HeaderMap, Method, StatusCode};
use serde_json::{json, Value};
use server::console::Config;
use server::mail::MailChoice;

use crate::common;
use crate::common::rest::{call, key_for, wait_for, Answer};
use crate::common::site::Site;
use crate::common::smtp::SmtpServer;

const ANN: &str = "ann@example.com";

/// One POST a receiver took.
#[derive(Clone, Debug)]
struct Hook {
    path: String,
    headers: HeaderMap,
    body: String,
}

/// An HTTP receiver on a free port: `/flaky` answers 500 to its first
/// `refuse` POSTs and 204 after; `/slack` answers 200 "ok"; every POST is
/// recorded.
#[derive(Clone)]
struct Receiver {
    addr: SocketAddr,
    hooks: Arc<Mutex<Vec<Hook>>>,
    refuse: Arc<Mutex<usize>>,
}

impl Receiver {
    async fn start(refuse: usize) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let receiver = Self {
            addr: listener.local_addr().unwrap(),
            hooks: Arc::default(),
            refuse: Arc::new(Mutex::new(refuse)),
        };
        let app = axum::Router::new()
            .route("/{*path}", post(take))
            .with_state(receiver.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        receiver
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}/{path}", self.addr)
    }

    fn taken(&self, path: &str) -> Vec<Hook> {
        let hooks = self.hooks.lock().unwrap();
        hooks.iter().filter(|h| h.path == path).cloned().collect()
    }

    /// Waits (up to 60 s) for `count` POSTs to `path` whose body has `type`
    /// (JSON) or text containing `needle`.
    async fn wait_for(&self, path: &str, needle: &str, count: usize) -> Vec<Hook> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let got: Vec<Hook> = self
                .taken(path)
                .into_iter()
                .filter(|h| h.body.contains(needle))
                .collect();
            if got.len() >= count {
                return got;
            }
            assert!(
                Instant::now() < deadline,
                "/{path} took {} of {count} POSTs with {needle}: {:?}",
                got.len(),
                self.taken(path)
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

async fn take(
    State(receiver): State<Receiver>,
    axum::extract::Path(path): axum::extract::Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, &'static str) {
    receiver.hooks.lock().unwrap().push(Hook {
        path: path.clone(),
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    });
    if path == "slack" {
        return (StatusCode::OK, "ok");
    }
    let mut refuse = receiver.refuse.lock().unwrap();
    if *refuse > 0 {
        *refuse -= 1;
        return (StatusCode::INTERNAL_SERVER_ERROR, "receiver is warming up");
    }
    (StatusCode::NO_CONTENT, "")
}

/// Checks each hook's signature under `secret` with the `standardwebhooks`
/// Python package; `false` (after saying so) without the tests' venv.
fn verified_by_python(secret: &str, hooks: &[Hook]) -> bool {
    let Some(python) = common::metric_logs::python() else {
        let required = std::env::var(common::metric_logs::REQUIRE_ENV)
            .is_ok_and(|v| !v.is_empty() && v != "0");
        assert!(!required, "no Python venv with standardwebhooks");
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: no Python venv; signatures not checked by standardwebhooks"
        );
        return false;
    };
    let cases: Vec<Value> = hooks
        .iter()
        .map(|h| {
            let headers: serde_json::Map<String, Value> = h
                .headers
                .iter()
                .map(|(k, v)| (k.to_string(), json!(v.to_str().unwrap())))
                .collect();
            json!({"headers": headers, "body": h.body})
        })
        .collect();
    let script = r#"
import json, sys
from standardwebhooks import Webhook
given = json.load(sys.stdin)
hook = Webhook(given["secret"])
for case in given["cases"]:
    hook.verify(case["body"], case["headers"])
    try:
        hook.verify(case["body"] + " ", case["headers"])
    except Exception:
        pass
    else:
        sys.exit("a changed body verified")
print("ok")
"#;
    let mut command = Command::new(python);
    command.args(["-c", script]);
    let input = json!({"secret": secret, "cases": cases}).to_string();
    let out = common::cli::piped(command, &input);
    assert!(
        out.status.success(),
        "standardwebhooks refused a signature: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    true
}

async fn api(site: &Site, key: &str, method: Method, path: &str, body: Option<Value>) -> Answer {
    call(site, method, path, Some(key), body).await
}

async fn subscribe(site: &Site, key: &str, spec: Value) -> Value {
    let made = api(
        site,
        key,
        Method::POST,
        "/api/v1/notifications/subscriptions",
        Some(spec),
    )
    .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    made.json()
}

/// The caller's deliveries (`query` appended to the path).
async fn deliveries(site: &Site, key: &str, query: &str) -> Vec<Value> {
    let got = api(
        site,
        key,
        Method::GET,
        &format!("/api/v1/notifications/deliveries{query}"),
        None,
    )
    .await;
    assert_eq!(got.status, StatusCode::OK, "{}", got.body);
    got.json().as_array().unwrap().clone()
}

/// Polls the caller's deliveries through `subscription` until `done`.
async fn deliveries_until(
    site: &Site,
    key: &str,
    subscription: i64,
    done: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let got = deliveries(site, key, &format!("?subscription={subscription}")).await;
        if done(&got) {
            return got;
        }
        assert!(Instant::now() < deadline, "{subscription}: {got:#?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn job(name: &str, script: &str) -> Value {
    json!({"name": name, "command": ["sh", "-c", script], "num_trainers": 1,
           "trainer": {"cpu": "100m", "memory": "64Mi"}})
}

async fn submit(site: &Site, key: &str, spec: Value) {
    let made = api(site, key, Method::POST, "/api/v1/jobs", Some(spec)).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
}

/// A console mailing to `smtp`, linking to `http://console.test`, trying a
/// failed delivery again after 20 ms (then 80 ms, 320 ms, …).
async fn notifying_site(db: common::TestDb, smtp: &SmtpServer) -> Site {
    let config = Config {
        mail: MailChoice::Smtp(smtp.url.clone()),
        public_url: Some("http://console.test".to_owned()),
        notify_retry_base: Duration::from_millis(20),
        ..common::site::config(&db)
    };
    common::site::site_from(db, config).await
}

on_both_databases!(
    a_failed_job_is_mailed_and_posted_to_signed_webhooks_retried_until_taken,
    super::failed_job_is_told
);
async fn failed_job_is_told(db: common::TestDb) {
    let smtp = SmtpServer::start().await;
    let receiver = Receiver::start(2).await;
    let site = notifying_site(db, &smtp).await;
    let key = key_for(&site, "told").await;
    submit(&site, &key, job("doomed", "sleep 1; echo bye; exit 3")).await;

    // Refused, naming the field: a job the account does not have, an event
    // a serving instance cannot have, a URL that is not http, no event.
    let refusals = [
        (
            json!({"subject": {"kind": "job", "name": "nope"}, "events": ["failed"],
                   "channel": {"kind": "email"}}),
            "subject.name",
        ),
        (
            json!({"subject": {"kind": "serving", "name": "svc"}, "events": ["succeeded"],
                   "channel": {"kind": "email"}}),
            "events",
        ),
        (
            json!({"subject": {"kind": "account"}, "events": ["failed"],
                   "channel": {"kind": "webhook", "url": "file:///etc/passwd"}}),
            "channel.url",
        ),
        (
            json!({"subject": {"kind": "account"}, "events": [],
                   "channel": {"kind": "email"}}),
            "events",
        ),
    ];
    for (spec, field) in refusals {
        let refused = api(
            &site,
            &key,
            Method::POST,
            "/api/v1/notifications/subscriptions",
            Some(spec),
        )
        .await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.body);
        assert_eq!(
            refused.error().1.as_deref(),
            Some(field),
            "{}",
            refused.body
        );
    }

    let by_mail = subscribe(
        &site,
        &key,
        json!({"subject": {"kind": "job", "name": "doomed"}, "events": ["failed"],
               "channel": {"kind": "email"}}),
    )
    .await;
    assert!(by_mail.get("secret").is_none(), "{by_mail}");
    let hooked = subscribe(
        &site,
        &key,
        json!({"subject": {"kind": "account"}, "events": ["failed", "succeeded"],
               "channel": {"kind": "webhook", "url": receiver.url("flaky")}}),
    )
    .await;
    let secret = hooked["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_"), "{hooked}");
    // Its owner reads it; the database holds it sealed.
    let stored: Vec<(String,)> =
        sqlx::query_as("SELECT secret FROM notify_subscriptions WHERE secret IS NOT NULL")
            .fetch_all(&site.db.pool)
            .await
            .unwrap();
    assert!(!stored.is_empty());
    assert!(
        stored
            .iter()
            .all(|(s,)| s.starts_with("sealed:") && !s.contains(&secret[6..])),
        "{stored:?}"
    );
    let slack = subscribe(
        &site,
        &key,
        json!({"subject": {"kind": "job", "name": "doomed"}, "events": ["failed"],
               "channel": {"kind": "webhook", "url": receiver.url("slack"), "format": "slack"}}),
    )
    .await;
    let only_success = subscribe(
        &site,
        &key,
        json!({"subject": {"kind": "job", "name": "doomed"}, "events": ["succeeded"],
               "channel": {"kind": "email"}}),
    )
    .await;
    // Nothing listens here: every try is refused.
    let nowhere = subscribe(
        &site,
        &key,
        json!({"subject": {"kind": "job", "name": "doomed"}, "events": ["failed"],
               "channel": {"kind": "webhook", "url": "http://127.0.0.1:9/hook"}}),
    )
    .await;

    wait_for(&site, &key, "doomed", "failed").await;

    // The mail: one (beside sign-up's), to ann, naming the job and
    // linking its page.
    let told = |smtp: &SmtpServer| {
        let mut mails = smtp.mail_to(ANN);
        mails.retain(|m| {
            m.header("subject")
                .is_some_and(|s| s.contains("job doomed"))
        });
        mails
    };
    smtp.wait_for(ANN, 2).await;
    let mails = told(&smtp);
    assert_eq!(mails.len(), 1);
    assert_eq!(
        mails[0].header("subject").unwrap(),
        "PaddleCloud: job doomed failed"
    );
    let mail = &mails[0].readable();
    assert!(mail.contains("job doomed in told failed"), "{mail}");
    assert!(mail.contains("http://console.test/jobs/doomed"), "{mail}");

    // The webhook: refused twice, taken the third time, the same
    // webhook-id each time, signed under the subscription's secret.
    let posts = receiver.wait_for("flaky", "job.failed", 3).await;
    let ids: Vec<&str> = posts
        .iter()
        .map(|h| h.headers["webhook-id"].to_str().unwrap())
        .collect();
    assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
    let body: Value = serde_json::from_str(&posts[2].body).unwrap();
    assert_eq!(body["type"], "job.failed");
    assert_eq!(body["data"]["account"], "told");
    assert_eq!(body["data"]["name"], "doomed");
    assert_eq!(body["data"]["url"], "http://console.test/jobs/doomed");
    assert!(
        body["data"]["message"].as_str().unwrap().contains('3'),
        "the reason names the exit code: {body}"
    );
    verified_by_python(&secret, &posts);
    let slack_post = receiver.wait_for("slack", "doomed", 1).await;
    let text: Value = serde_json::from_str(&slack_post[0].body).unwrap();
    assert!(
        text["text"].as_str().unwrap().starts_with(
            "PaddleCloud: <http://console.test/jobs/doomed|job doomed> in told failed"
        ),
        "{text}"
    );

    // The log: the webhook's delivery says three tries and the refusal it
    // saw before; the mail's one try.
    let hooked_id = hooked["id"].as_i64().unwrap();
    let log = deliveries_until(&site, &key, hooked_id, |d| {
        d.iter().any(|d| d["status"] == "delivered")
    })
    .await;
    assert_eq!(log.len(), 1, "{log:#?}");
    assert_eq!(log[0]["attempts"], 3, "{log:#?}");
    assert_eq!(log[0]["notice"]["event"], "failed");
    let mail_log = deliveries_until(&site, &key, by_mail["id"].as_i64().unwrap(), |d| {
        d.iter().any(|d| d["status"] == "delivered")
    })
    .await;
    assert_eq!(mail_log[0]["attempts"], 1, "{mail_log:#?}");
    assert_eq!(mail_log[0]["channel"], "email");
    deliveries_until(&site, &key, slack["id"].as_i64().unwrap(), |d| {
        d.iter().any(|d| d["status"] == "delivered")
    })
    .await;

    // Six tries to nowhere, then it is marked failed, saying why.
    let dead = deliveries_until(&site, &key, nowhere["id"].as_i64().unwrap(), |d| {
        d.iter().any(|d| d["status"] == "failed")
    })
    .await;
    assert_eq!(dead[0]["attempts"], 6, "{dead:#?}");
    assert!(
        dead[0]["last_error"]
            .as_str()
            .unwrap()
            .contains("could not be reached"),
        "{dead:#?}"
    );
    let failed = deliveries(&site, &key, "?status=failed").await;
    assert_eq!(failed.len(), 1, "{failed:#?}");
    let bad = api(
        &site,
        &key,
        Method::GET,
        "/api/v1/notifications/deliveries?status=lost",
        None,
    )
    .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{}", bad.body);

    // A job that succeeds: the account's webhook hears of it; the
    // success-only subscription to "doomed" never heard a thing.
    submit(&site, &key, job("fine", "true")).await;
    receiver.wait_for("flaky", "job.succeeded", 1).await;
    let quiet = deliveries(
        &site,
        &key,
        &format!("?subscription={}", only_success["id"]),
    )
    .await;
    assert!(quiet.is_empty(), "{quiet:#?}");
    assert_eq!(told(&smtp).len(), 1, "no second mail");

    // Another account's member sees none of it and touches none of it.
    let other = key_for(&site, "elsewhere").await;
    assert!(deliveries(&site, &other, "").await.is_empty());
    let theirs = api(
        &site,
        &other,
        Method::DELETE,
        &format!("/api/v1/notifications/subscriptions/{hooked_id}"),
        None,
    )
    .await;
    assert_eq!(theirs.status, StatusCode::NOT_FOUND, "{}", theirs.body);
    let test_theirs = api(
        &site,
        &other,
        Method::POST,
        &format!("/api/v1/notifications/subscriptions/{hooked_id}/test"),
        None,
    )
    .await;
    assert_eq!(test_theirs.status, StatusCode::NOT_FOUND);

    // A test goes out at once, through the owner's own subscription.
    let tested = api(
        &site,
        &key,
        Method::POST,
        &format!("/api/v1/notifications/subscriptions/{hooked_id}/test"),
        None,
    )
    .await;
    assert_eq!(tested.status, StatusCode::ACCEPTED, "{}", tested.body);
    assert_eq!(tested.json()["status"], "pending");
    receiver.wait_for("flaky", "account.test", 1).await;

    // Unsubscribed: gone from the list with its log.
    let gone = api(
        &site,
        &key,
        Method::DELETE,
        &format!("/api/v1/notifications/subscriptions/{hooked_id}"),
        None,
    )
    .await;
    assert_eq!(gone.status, StatusCode::NO_CONTENT, "{}", gone.body);
    let listed = api(
        &site,
        &key,
        Method::GET,
        "/api/v1/notifications/subscriptions",
        None,
    )
    .await
    .json();
    let ids: Vec<i64> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids.len(), 4, "{listed:#}");
    assert!(!ids.contains(&hooked_id));
    assert!(
        deliveries(&site, &key, &format!("?subscription={hooked_id}"))
            .await
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pipeline_waiting_for_quota_is_told_once_then_its_success() {
    let smtp = SmtpServer::start().await;
    let receiver = Receiver::start(0).await;
    let site = notifying_site(common::sqlite().await, &smtp).await;
    let key = key_for(&site, "tight").await;
    // The site admin allows the account one job at a time.
    let admin = site.admin_key().await;
    let quota = json!({"cpu": "", "memory": "", "gpu": "", "max_jobs": "1"});
    let set = api(
        &site,
        &admin,
        Method::PUT,
        "/api/v1/quota?account=tight",
        Some(quota),
    )
    .await;
    assert!(set.status.is_success(), "{}", set.body);
    let all = subscribe(
        &site,
        &key,
        json!({"subject": {"kind": "account"}, "events": ["over_quota", "succeeded"],
               "channel": {"kind": "webhook", "url": receiver.url("all")}}),
    )
    .await;
    // The one job the quota allows holds it while the pipeline's node waits.
    submit(&site, &key, job("holder", "sleep 5")).await;
    wait_for(&site, &key, "holder", "running").await;
    let run = json!({"name": "nightly", "pipeline": {"name": "nightly", "nodes": [
        {"name": "only", "job": {"command": ["true"], "num_trainers": 1,
                                 "trainer": {"cpu": "100m", "memory": "64Mi"}}}]}});
    let made = api(&site, &key, Method::POST, "/api/v1/pipelines", Some(run)).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);

    let waits = receiver.wait_for("all", "pipeline.over_quota", 1).await;
    let body: Value = serde_json::from_str(&waits[0].body).unwrap();
    assert_eq!(body["data"]["name"], "nightly");
    assert!(
        body["data"]["message"]
            .as_str()
            .unwrap()
            .contains("Waiting for quota"),
        "{body}"
    );
    receiver.wait_for("all", "pipeline.succeeded", 1).await;
    // The wait was retried every few seconds by the scheduler, but told once.
    assert_eq!(
        receiver
            .taken("all")
            .iter()
            .filter(|h| h.body.contains("pipeline.over_quota"))
            .count(),
        1
    );
    let log = deliveries(&site, &key, &format!("?subscription={}", all["id"])).await;
    let events: Vec<&str> = log
        .iter()
        .map(|d| d["notice"]["event"].as_str().unwrap())
        .collect();
    assert!(
        events.contains(&"over_quota") && events.contains(&"succeeded"),
        "{log:#?}"
    );
}

/// A webhook secret stored in the clear (before secrets were sealed) is
/// sealed when the console starts, and its owner still reads the same one.
#[tokio::test(flavor = "multi_thread")]
async fn webhook_secrets_stored_in_the_clear_are_sealed_when_the_console_starts() {
    let db = common::sqlite().await;
    let settings = common::site::config(&db);
    let site = common::site::site_from(db, settings).await;
    let key = common::rest::key_for(&site, "legacy").await;
    let hooked = subscribe(
        &site,
        &key,
        json!({"subject": {"kind": "account"}, "events": ["failed"],
               "channel": {"kind": "webhook", "url": "http://127.0.0.1:9/hook"}}),
    )
    .await;
    let secret = hooked["secret"].as_str().unwrap().to_owned();
    // As a console from before sealing left it.
    sqlx::query("UPDATE notify_subscriptions SET secret = $1")
        .bind(&secret)
        .execute(&site.db.pool)
        .await
        .unwrap();
    server::console::Console::build(common::site::config(&site.db))
        .await
        .unwrap();
    let (stored,): (String,) = sqlx::query_as("SELECT secret FROM notify_subscriptions")
        .fetch_one(&site.db.pool)
        .await
        .unwrap();
    assert!(
        stored.starts_with("sealed:") && !stored.contains(&secret[6..]),
        "{stored}"
    );
    let listed = api(
        &site,
        &key,
        Method::GET,
        "/api/v1/notifications/subscriptions",
        None,
    )
    .await
    .json();
    assert_eq!(listed[0]["secret"], secret.as_str(), "{listed}");
}
